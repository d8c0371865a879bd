/* plan: the pure arithmetic of `gpuwho plan`: from a parsed launch, a model's shape and weights,
 * and the GPU and host memory, compute per-rank and per-node memory, KV tokens, concurrency and a
 * verdict per resource, with the largest value that would fit. Formulas and sources: docs/plan.md. */
#include "plan/plan.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SGLang's hierarchical cache leaves this much host memory alone when it checks its request
 * (python/sglang/srt/mem_cache/memory_pool_host.py: available − 10 GiB). */
#define SGLANG_HOST_RESERVE (10 * PLAN_GIB)
/* Host headroom under this share of MemAvailable is "tight": page cache, the engine's own
 * process memory and the tokenizer all live there too. */
#define HOST_TIGHT_SHARE 0.10
/* Fewer requests than this at once is "tight": batching is what buys throughput. */
#define KV_TIGHT_REQUESTS 4

const char *plan_verdict_text(enum plan_verdict v)
{
	switch (v) {
	case PLAN_FITS: return "fits";
	case PLAN_TIGHT: return "tight";
	case PLAN_NO_FIT: return "does not fit";
	default: return "unknown";
	}
}

const char *plan_verdict_key(enum plan_verdict v)
{
	return v == PLAN_NO_FIT ? "does_not_fit" : plan_verdict_text(v);
}

static enum plan_verdict worse(enum plan_verdict a, enum plan_verdict b)
{
	/* unknown < fits < tight < does not fit: an unknown never hides a known verdict. */
	return a > b ? a : b;
}

char *plan_fmt(char *buf, double v, int decimals)
{
	char raw[64];
	if (!isfinite(v) || fabs(v) >= 1e18) {
		snprintf(buf, 40, "%g", v);
		return buf;
	}
	snprintf(raw, sizeof raw, "%.*f", decimals, fabs(v));
	const char *dot = strchr(raw, '.');
	size_t intlen = dot ? (size_t)(dot - raw) : strlen(raw);
	char *o = buf;
	/* "-0" reads oddly: only a value that prints non-zero keeps its sign. */
	if (v < 0 && strspn(raw, "0.") != strlen(raw))
		*o++ = '-';
	for (size_t i = 0; i < intlen; i++) {
		*o++ = raw[i];
		size_t left = intlen - i - 1;
		if (left && left % 3 == 0)
			*o++ = ',';
	}
	strcpy(o, raw + intlen);
	return buf;
}

double plan_dtype_bytes(const char *n)
{
	if (!n || !strcmp(n, "auto"))
		return 0;
	static const struct { const char *name; double bytes; } t[] = {
		{"bf16", 2}, {"bfloat16", 2}, {"fp16", 2}, {"float16", 2}, {"half", 2},
		{"float", 4}, {"float32", 4}, {"fp32", 4},
		{"fp8", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"fp8_inc", 1}, {"int8", 1},
		/* SGLang's fp4 KV keeps one scale byte per 16 values: 0.5 + 1/16 bytes an element. */
		{"fp4_e2m1", 0.5625},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(n, t[i].name))
			return t[i].bytes;
	return -1;
}

static void add_note(struct plan_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct plan_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(&r->notes, &r->nnotes, xvasprintf(fmt, ap));
	va_end(ap);
}

/* SGLang's default --mem-fraction-static by TP size (server_args.py, before it began to derive
 * the value from the GPU's memory size); vLLM's --gpu-memory-utilization defaults to 0.9. */
static double default_fraction(const struct launch *l)
{
	if (l->engine == LAUNCH_VLLM)
		return 0.9;
	return l->tp >= 16 ? 0.79 : l->tp >= 8 ? 0.81 : l->tp >= 4 ? 0.85 : l->tp >= 2 ? 0.87 : 0.88;
}

static void plan_gpus(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	bool sg = l->engine == LAUNCH_SGLANG;
	/* SGLang's DP attention splits one TP group's attention into DP ranks: no extra GPUs. */
	int dp_gpus = sg && l->dp_attention ? 1 : l->dp;
	long long gpus = (long long)l->tp * l->pp * dp_gpus;
	long long local = gpus;
	if (sg && l->nnodes > 1)
		local = gpus / l->nnodes;
	if (!sg && l->dp_local)
		local = (long long)l->dp_local * l->tp * l->pp;
	if (gpus > 1 << 20)
		gpus = 1 << 20;
	if (local > gpus)
		local = gpus;
	r->gpus = (int)gpus;
	r->local_gpus = (int)local;
	r->attn_tp = sg && l->dp_attention ? l->tp / l->dp : l->tp;
	if (r->attn_tp < 1)
		r->attn_tp = 1;   /* more DP ranks than TP (launch_parse refuses it): never divide by 0 */

	/* Which GPUs: rank k takes visible device base + k × step (SGLang) or k (vLLM). */
	char **vis = NULL;
	int nvis = -1;
	const char *cvd = in->cuda_visible;
	if (cvd) {
		nvis = 0;
		char *copy = xstrdup(cvd), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			while (*t == ' ')
				t++;
			size_t n = strlen(t);
			while (n && t[n - 1] == ' ')
				t[--n] = '\0';
			/* CUDA stops at the first invalid entry; "-1" hides everything after it. */
			if (!*t || !strcmp(t, "-1"))
				break;
			vis = xrealloc(vis, (size_t)(nvis + 1) * sizeof *vis);
			vis[nvis++] = xstrdup(t);
		}
		free(copy);
	} else if (in->host_gpus >= 0) {
		nvis = in->host_gpus;
	}
	long long base = sg ? l->base_gpu_id : 0, step = sg ? l->gpu_id_step : 1;
	long long last = base + (local - 1) * step;
	int show = local > 64 ? 64 : (int)local;
	r->gpu_ids = xcalloc((size_t)show + 1, sizeof *r->gpu_ids);
	for (int k = 0; k < show; k++) {
		long long idx = base + k * step;
		if (vis && idx < nvis)
			r->gpu_ids[r->ngpu_ids++] = xstrdup(vis[idx]);
		else if (!vis && (nvis < 0 || idx < nvis))
			r->gpu_ids[r->ngpu_ids++] = xasprintf("%lld", idx);
	}
	r->gpu_ids_assumed = nvis < 0;
	const char *where = cvd ? "CUDA_VISIBLE_DEVICES makes" : "this host has";
	if (nvis < 0) {
		r->gpus_verdict = PLAN_UNKNOWN;
		r->gpus_message = xasprintf("needs %d GPU%s on this node; how many this host has is unknown "
					    "(no /proc/driver/nvidia/gpus)", r->local_gpus, r->local_gpus == 1 ? "" : "s");
	} else if (last >= nvis) {
		r->gpus_verdict = PLAN_NO_FIT;
		r->gpus_message = xasprintf("needs %d GPU%s on this node%s but %s %d visible", r->local_gpus,
					    r->local_gpus == 1 ? "" : "s", base || step > 1 ? " (from --base-gpu-id/--gpu-id-step)" : "",
					    where, nvis);
	} else {
		r->gpus_verdict = PLAN_FITS;
		r->gpus_message = xasprintf("needs %d GPU%s on this node; %s %d visible", r->local_gpus,
					    r->local_gpus == 1 ? "" : "s", where, nvis);
	}
	for (int i = 0; i < (vis ? nvis : 0); i++)
		free(vis[i]);
	free(vis);
}

static int plan_kv_cell(const struct plan_input *in, struct plan_result *r, char **err)
{
	const struct launch *l = in->launch;
	double b = plan_dtype_bytes(l->kv_dtype);
	if (b < 0) {
		*err = xasprintf("--kv-cache-dtype %s: not a dtype plan knows (auto, bf16, fp16, float32, fp8, fp8_e4m3, "
				 "fp8_e5m2, fp4_e2m1)", l->kv_dtype);
		return -EINVAL;
	}
	double mb = plan_dtype_bytes(l->dtype);
	if (mb < 0) {
		*err = xasprintf("--dtype %s: not a dtype plan knows (auto, half, float16, bfloat16, float, float32)", l->dtype);
		return -EINVAL;
	}
	if (b > 0) {
		r->kv_dtype = xstrdup(l->kv_dtype);
		r->kv_dtype_bytes = b;
	} else if (mb > 0) {
		r->kv_dtype = xstrdup(l->dtype);
		r->kv_dtype_bytes = mb;
	} else {
		/* "auto" follows the model's dtype, but both engines serve float32 checkpoints in float16. */
		const char *t = in->model ? in->model->torch_dtype : NULL;
		r->kv_dtype = xstrdup(t && plan_dtype_bytes(t) == 2 ? t : "float16");
		r->kv_dtype_bytes = 2;
		if (!t)
			add_note(r, "the model's dtype is unknown: KV assumed 16-bit (pass --kv-cache-dtype to be exact)");
	}
	const struct model_config *m = in->model;
	if (!m)
		return 0;
	char b1[40];
	plan_fmt(b1, r->kv_dtype_bytes, r->kv_dtype_bytes == floor(r->kv_dtype_bytes) ? 0 : 4);
	if (m->mla) {
		/* MLA caches one compressed latent (kv_lora_rank) plus the rotary key per token and layer;
		 * every TP rank holds all of it. */
		r->cell_bytes = (double)(m->kv_lora_rank + m->qk_rope_head_dim) * m->layers * r->kv_dtype_bytes;
		r->cell_formula = xasprintf("MLA: (kv_lora_rank %d + qk_rope_head_dim %d) × %d layers × %s bytes (%s), "
					    "the same on every rank",
					    m->kv_lora_rank, m->qk_rope_head_dim, m->layers, b1, r->kv_dtype);
	} else {
		int heads = m->kv_heads / r->attn_tp;
		if (heads < 1)
			heads = 1;   /* fewer KV heads than ranks: each rank keeps a replica of one */
		r->cell_bytes = (double)heads * (m->head_dim + m->v_head_dim) * m->layers * r->kv_dtype_bytes;
		r->cell_formula = xasprintf("%s: max(1, %d KV heads / TP %d) = %d × (head_dim %d + v_head_dim %d) × "
					    "%d layers × %s bytes (%s)",
					    m->kv_heads == m->heads ? "MHA" : "GQA", m->kv_heads, r->attn_tp, heads, m->head_dim,
					    m->v_head_dim, m->layers, b1, r->kv_dtype);
	}
	r->has_cell = true;
	return 0;
}

static void plan_gpu_memory(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	char b1[40], b2[40], b3[40];
	r->fraction_flag = l->engine == LAUNCH_SGLANG ? "--mem-fraction-static" : "--gpu-memory-utilization";
	r->fraction = l->has_mem_fraction ? l->mem_fraction : default_fraction(l);
	r->fraction_assumed = !l->has_mem_fraction;
	if (r->fraction_assumed)
		add_note(r, "%s not given: assumed %.2f, %s", r->fraction_flag, r->fraction,
			 l->engine == LAUNCH_SGLANG ? "SGLang's old default for this TP size (newer SGLang derives it from "
						      "the GPU's memory; pass the flag to be exact)"
						    : "vLLM's default");
	r->overhead = in->overhead_bytes;
	if (in->has_weights) {
		r->has_weights = true;
		r->weights_per_gpu = in->weights_bytes / ((double)l->tp * l->pp);
		if (l->has_cpu_offload)
			r->weights_per_gpu = fmax(0, r->weights_per_gpu - l->cpu_offload_gib * PLAN_GIB);
	}
	if (!in->has_gpu_total) {
		r->gpu_verdict = PLAN_UNKNOWN;
		r->gpu_message = xstrdup("GPU memory unknown: pass --gpu-mem GiB");
		return;
	}
	r->has_gpu_total = true;
	r->gpu_total = in->gpu_total_bytes;
	r->budget = r->gpu_total * r->fraction;
	r->reserve = r->gpu_total - r->budget;
	if (!r->has_weights) {
		r->gpu_verdict = PLAN_UNKNOWN;
		r->gpu_message = xasprintf("budget %s GiB per GPU; weights unknown: pass --weights-gb or a model folder "
					   "with safetensors", plan_fmt(b1, r->budget / PLAN_GIB, 1));
		return;
	}
	double used = r->weights_per_gpu + r->overhead;
	r->kv_pool = r->budget - used;
	r->has_kv_pool = true;
	if (r->kv_pool > 0) {
		r->gpu_verdict = PLAN_FITS;
		r->gpu_message = xasprintf("weights %s GiB + overhead %s GiB leave %s GiB of the %s GiB budget for the KV cache",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, r->overhead / PLAN_GIB, 1),
					   plan_fmt(b3, r->kv_pool / PLAN_GIB, 1), plan_fmt((char[40]){0}, r->budget / PLAN_GIB, 1));
		return;
	}
	r->gpu_verdict = PLAN_NO_FIT;
	/* The smallest fraction that leaves room for one page of KV, else how many GPUs it needs. */
	double need_frac = (used + (r->has_cell ? r->cell_bytes * 4096 : 0)) / r->gpu_total;
	double per_gpu_room = r->budget - r->overhead;
	if (need_frac < 0.99) {
		r->gpu_message = xasprintf("weights %s GiB + overhead %s GiB exceed the %s GiB budget (%s %.2f); "
					   "at least %.2f leaves room for the KV cache",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, r->overhead / PLAN_GIB, 1),
					   plan_fmt(b3, r->budget / PLAN_GIB, 1), r->fraction_flag, r->fraction,
					   ceil(need_frac * 100) / 100);
	} else if (per_gpu_room > 0) {
		double need = ceil(in->weights_bytes / per_gpu_room);
		r->gpu_message = xasprintf("weights %s GiB per GPU exceed the %s GiB budget: the model needs at least %.0f GPUs "
					   "(tp × pp) of this size",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, r->budget / PLAN_GIB, 1), need);
	} else {
		r->gpu_message = xasprintf("the overhead %s GiB alone exceeds the %s GiB budget",
					   plan_fmt(b1, r->overhead / PLAN_GIB, 1), plan_fmt(b2, r->budget / PLAN_GIB, 1));
	}
}

static void plan_kv_tokens(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	char b1[40], b2[40], b3[40];
	r->avg_tokens = in->avg_tokens;
	if (!r->has_cell) {
		r->kv_verdict = PLAN_UNKNOWN;
		r->kv_message = xstrdup("model shape unknown: pass --model-config FILE (the model's config.json)");
		return;
	}
	if (!r->has_kv_pool) {
		r->kv_verdict = PLAN_UNKNOWN;
		r->kv_message = xasprintf("%s bytes a token per rank; the pool size needs the GPU memory and the weights",
					  plan_fmt(b1, r->cell_bytes, 0));
		return;
	}
	double t = r->kv_pool > 0 ? floor(r->kv_pool / r->cell_bytes) : 0;
	/* Both engines allocate whole pages (SGLang --page-size, vLLM --block-size, default 16). */
	int page = l->page_size ? l->page_size : l->engine == LAUNCH_VLLM ? 16 : 1;
	t = floor(t / page) * page;
	r->tokens = (uint64_t)t;
	r->has_tokens = true;
	r->concurrency = in->avg_tokens > 0 ? r->tokens / (uint64_t)in->avg_tokens : 0;
	if (l->max_running > 0 && r->concurrency > (uint64_t)l->max_running) {
		r->concurrency = (uint64_t)l->max_running;
		r->concurrency_capped = true;
	}
	r->concurrency_total = r->concurrency * (uint64_t)l->dp;
	/* What a configuration buys: the fraction's every hundredth moves total × 0.01 bytes into the pool. */
	r->tokens_per_point = (uint64_t)floor(r->gpu_total * 0.01 / r->cell_bytes);
	if (r->tokens == 0 || (l->context_len && r->tokens < (uint64_t)l->context_len)) {
		r->kv_verdict = PLAN_NO_FIT;
		if (r->tokens == 0)
			r->kv_message = xstrdup("no KV cache left at all");
		else
			r->kv_message = xasprintf("%s tokens per rank: not even one request of the %s-token context fits",
						  plan_fmt(b1, (double)r->tokens, 0), plan_fmt(b2, (double)l->context_len, 0));
		return;
	}
	r->kv_verdict = r->concurrency < KV_TIGHT_REQUESTS ? PLAN_TIGHT : PLAN_FITS;
	r->kv_message = xasprintf("%s tokens per rank: %s request%s at once at %s tokens each%s",
				  plan_fmt(b1, (double)r->tokens, 0), plan_fmt(b2, (double)r->concurrency, 0),
				  r->concurrency == 1 ? "" : "s", plan_fmt(b3, (double)in->avg_tokens, 0),
				  r->concurrency_capped ? " (capped by the max running requests flag)" : "");
}

static struct plan_host_item *add_item(struct plan_result *r, const char *flag, double value, const char *scope,
				       const char *what, int count)
{
	r->host = xrealloc(r->host, (r->nhost + 1) * sizeof *r->host);
	struct plan_host_item *it = &r->host[r->nhost++];
	memset(it, 0, sizeof *it);
	it->flag = flag;
	it->value = xasprintf("%g", value);
	it->scope = scope;
	it->what = what;
	it->count = count;
	return it;
}

/* What an item's count counts, for "8 ranks × 300 GB". */
static const char *unit_name(const struct plan_host_item *it)
{
	bool one = it->count == 1;
	if (!strcmp(it->scope, "per GPU"))
		return one ? "GPU" : "GPUs";
	if (!strcmp(it->scope, "per rank"))
		return one ? "rank" : "ranks";
	return one ? "engine" : "engines";
}

static void plan_host(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	bool sg = l->engine == LAUNCH_SGLANG;
	int ranks = r->local_gpus;
	char b1[40], b2[40], b3[40];

	/* Collect the asks first: each one's largest fitting value leaves room for the others. */
	if (sg && l->hicache) {
		if (l->has_hicache_size && l->hicache_size_gb > 0) {
			struct plan_host_item *it = add_item(r, "--hicache-size", l->hicache_size_gb, "per rank",
							     "hierarchical KV cache (pinned host memory)", ranks);
			it->known = true;
			it->each_bytes = l->hicache_size_gb * PLAN_GB;
			it->max_unit = "GB per rank";
		} else {
			double ratio = l->has_hicache_ratio ? l->hicache_ratio : 2.0;
			struct plan_host_item *it = add_item(r, "--hicache-ratio", ratio, "per rank",
							     "hierarchical KV cache (pinned host memory)", ranks);
			it->max_unit = "× the device pool";
			if (r->has_kv_pool && r->kv_pool > 0) {
				it->known = true;
				it->each_bytes = ratio * r->kv_pool;
			}
			if (!l->has_hicache_ratio)
				add_note(r, "--enable-hierarchical-cache without --hicache-size: SGLang sizes the host pool "
					    "as --hicache-ratio (default 2) × each rank's device pool");
		}
		add_note(r, "--hicache-size is GB (10^9 bytes) per rank; older SGLang checked each rank against the "
			    "whole host's free memory, so TP 8 could ask for 8× what it has; newer SGLang splits "
			    "(available − 10 GiB) across the node's ranks");
	}
	if (l->has_cpu_offload && l->cpu_offload_gib > 0) {
		struct plan_host_item *it = add_item(r, "--cpu-offload-gb", l->cpu_offload_gib, "per GPU",
						     "weights offloaded to host memory", ranks);
		it->known = true;
		it->each_bytes = l->cpu_offload_gib * PLAN_GIB;
		it->max_unit = "GiB per GPU";
	}
	if (!sg && l->has_swap_space && l->swap_space_gib > 0) {
		struct plan_host_item *it = add_item(r, "--swap-space", l->swap_space_gib, "per GPU",
						     "KV swap space (legacy V0 engine)", ranks);
		it->known = true;
		it->each_bytes = l->swap_space_gib * PLAN_GIB;
		it->max_unit = "GiB per GPU";
		add_note(r, "--swap-space is GiB per GPU and only the legacy V0 engine allocates it; vLLM's V1 engine "
			    "recomputes preempted requests instead");
	}
	if (!sg && l->has_kv_offload && l->kv_offload_gib > 0) {
		/* One buffer per engine instance, shared out across its TP ranks. */
		long long tp_pp = (long long)l->tp * l->pp;   /* an int product overflowed to 0 at 65536 × 65536 */
		int instances = tp_pp > 0 ? (int)(r->local_gpus / tp_pp) : 1;
		if (instances < 1)
			instances = 1;
		struct plan_host_item *it = add_item(r, "--kv-offloading-size", l->kv_offload_gib,
						     "the total across TP ranks", "KV offloading buffer", instances);
		it->known = true;
		it->each_bytes = l->kv_offload_gib * PLAN_GIB;
		it->max_unit = "GiB in total";
		add_note(r, "--kv-offloading-size is GiB in total across the TP ranks (%g GiB each at TP %d): the "
			    "opposite of SGLang's per-rank --hicache-size", l->kv_offload_gib / l->tp, l->tp);
	}

	double total = 0;
	bool any_unknown = false;
	for (size_t i = 0; i < r->nhost; i++) {
		struct plan_host_item *it = &r->host[i];
		if (it->known) {
			it->total_bytes = it->each_bytes * it->count;
			total += it->total_bytes;
		} else {
			any_unknown = true;
		}
	}
	r->host_total = total;
	r->has_host_avail = in->has_host_avail;
	r->host_avail = in->host_avail_bytes;
	if (!r->nhost) {
		r->host_verdict = PLAN_FITS;
		r->host_message = xstrdup("no host-memory flags: nothing pinned beyond the processes themselves");
		return;
	}
	if (!in->has_host_avail) {
		r->host_verdict = PLAN_UNKNOWN;
		r->host_message = xasprintf("asks %s GB of host memory; available memory unknown: pass --host-mem",
					    plan_fmt(b1, total / PLAN_GB, 0));
		for (size_t i = 0; i < r->nhost; i++)
			r->host[i].verdict = PLAN_UNKNOWN;
		return;
	}
	double avail = in->host_avail_bytes;
	double headroom = avail - total;
	enum plan_verdict worst = PLAN_UNKNOWN;
	for (size_t i = 0; i < r->nhost; i++) {
		struct plan_host_item *it = &r->host[i];
		if (!it->known) {
			it->verdict = PLAN_UNKNOWN;
			it->message = xasprintf("%s %s: the size depends on the device pool, which needs --gpu-mem and the weights",
						it->flag, it->value);
			continue;
		}
		bool hicache = !strncmp(it->flag, "--hicache", 9);
		double reserve = hicache ? SGLANG_HOST_RESERVE : 0;
		double room = avail - reserve - (total - it->total_bytes);   /* what is left for this ask */
		double per = it->count ? room / it->count : room;
		char av[40];
		plan_fmt(av, avail / PLAN_GB, 0);
		if (it->total_bytes > avail - reserve) {
			it->verdict = PLAN_NO_FIT;
			double mx;
			if (!strcmp(it->flag, "--hicache-size"))
				mx = floor(per / PLAN_GB);
			else if (!strcmp(it->flag, "--hicache-ratio"))
				mx = floor(per / r->kv_pool * 10) / 10;
			else
				mx = floor(per / PLAN_GIB);
			it->has_max = true;
			it->max_value = mx > 0 ? mx : 0;
			char mxs[40];
			plan_fmt(mxs, it->max_value, !strcmp(it->flag, "--hicache-ratio") ? 1 : 0);
			const char *why = hicache ? " (SGLang keeps 10 GiB back)" : "";
			if (it->count > 1 || strcmp(it->scope, "the total across TP ranks"))
				it->message = xasprintf("%s %s is %s: %d %s × %s GB = %s GB > %s GB available; at most %s %s%s",
							it->flag, it->value, it->scope, it->count,
							unit_name(it),
							plan_fmt(b1, it->each_bytes / PLAN_GB, it->each_bytes < 100 * PLAN_GB ? 1 : 0),
							plan_fmt(b2, it->total_bytes / PLAN_GB, 0), av, mxs,
							strchr(it->max_unit, ' ') ? strchr(it->max_unit, ' ') + 1 : it->max_unit, why);
			else
				it->message = xasprintf("%s %s is %s: %s GB > %s GB available; at most %s %s", it->flag, it->value,
							it->scope, plan_fmt(b2, it->total_bytes / PLAN_GB, 0), av, mxs, it->max_unit);
		} else {
			it->verdict = headroom < HOST_TIGHT_SHARE * avail ? PLAN_TIGHT : PLAN_FITS;
			it->message = xasprintf("%s %s is %s: %d %s × %s GB = %s GB of %s GB available", it->flag, it->value,
						it->scope, it->count, unit_name(it), plan_fmt(b1, it->each_bytes / PLAN_GB, it->each_bytes < 100 * PLAN_GB ? 1 : 0),
						plan_fmt(b2, it->total_bytes / PLAN_GB, 0), av);
		}
		worst = worse(worst, it->verdict);
	}
	if (headroom < 0)
		worst = PLAN_NO_FIT;
	else if (headroom < HOST_TIGHT_SHARE * avail)
		worst = worse(worst, PLAN_TIGHT);
	else
		worst = worse(worst, PLAN_FITS);
	r->host_verdict = worst;
	r->host_message = xasprintf("asks %s GB of %s GB available%s; headroom %s GB", plan_fmt(b1, total / PLAN_GB, 0),
				    plan_fmt(b2, avail / PLAN_GB, 0), any_unknown ? " (plus what could not be sized)" : "",
				    plan_fmt(b3, headroom / PLAN_GB, 0));
	/* SGLang refuses a host pool no larger than the device pool (memory_pool_host.py). */
	for (size_t i = 0; i < r->nhost; i++) {
		struct plan_host_item *it = &r->host[i];
		if (!strcmp(it->flag, "--hicache-size") && r->has_kv_pool && r->kv_pool > 0 && it->each_bytes <= r->kv_pool)
			add_note(r, "SGLang needs the host pool larger than the device pool: --hicache-size must be above "
				    "%s GB per rank here", plan_fmt(b1, ceil(r->kv_pool / PLAN_GB), 0));
	}
}

int plan_compute(const struct plan_input *in, struct plan_result *r, char **err)
{
	memset(r, 0, sizeof *r);
	*err = NULL;
	const struct launch *l = in->launch;
	plan_gpus(in, r);
	int rc = plan_kv_cell(in, r, err);
	if (rc)
		return rc;
	plan_gpu_memory(in, r);
	plan_kv_tokens(in, r);
	plan_host(in, r);
	if (l->engine == LAUNCH_VLLM)
		add_note(r, "vLLM also keeps its measured activation peak out of --gpu-memory-utilization; the real KV "
			    "pool is smaller by that (raise --overhead to account for it). Older vLLM counted other "
			    "processes' GPU memory against the fraction too");
	else
		add_note(r, "SGLang's 1 − --mem-fraction-static reserve (%.1f GiB per GPU here) holds activations and "
			    "CUDA graphs", r->has_gpu_total ? r->reserve / PLAN_GIB : 0);
	if (l->speculative)
		add_note(r, "speculative decoding: the draft model's weights and KV cache also take GPU memory (not counted)");
	if (l->quantization)
		add_note(r, "--quantization: weights counted as stored on disk; quantizing at load time changes them");
	if (l->engine == LAUNCH_VLLM && l->expert_parallel)
		add_note(r, "--enable-expert-parallel spreads experts over DP × TP ranks: weights per GPU may be lower "
			    "than weights / (tp × pp)");
	r->verdict = worse(worse(r->gpus_verdict, r->gpu_verdict), worse(r->kv_verdict, r->host_verdict));
	return 0;
}

void plan_result_free(struct plan_result *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->ngpu_ids; i++)
		free(r->gpu_ids[i]);
	free(r->gpu_ids);
	free(r->gpus_message);
	free(r->gpu_message);
	free(r->kv_dtype);
	free(r->cell_formula);
	free(r->kv_message);
	for (size_t i = 0; i < r->nhost; i++) {
		free(r->host[i].value);
		free(r->host[i].message);
	}
	free(r->host);
	free(r->host_message);
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	memset(r, 0, sizeof *r);
}
