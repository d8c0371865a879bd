/* plan: the pure arithmetic of `gpuwho plan`: from a parsed launch, a model's shape and weights,
 * and the GPU and host memory, compute per-rank and per-node memory, KV tokens, concurrency and a
 * verdict per resource, with the largest value that would fit. Formulas and sources: docs/plan.md. */
#include "plan/plan.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
		/* SGLang's fp4 KV and vLLM's nvfp4 keep one fp8 scale per 16 values: 0.5 + 1/16 bytes. */
		{"fp4_e2m1", 0.5625}, {"nvfp4", 0.5625},
		/* vLLM's DeepSeek MLA fp8 layout: an element is a byte; the per-token size is its own
		 * (656 bytes a layer, see plan_kv_cell). */
		{"fp8_ds_mla", 1},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(n, t[i].name))
			return t[i].bytes;
	return -1;
}

int plan_parse_version(const char *s, int *out)
{
	const char *p = s;
	if (*p == 'v' || *p == 'V')
		p++;
	long part[3] = {0, 0, 0};
	for (int k = 0; k < 3; k++) {
		if (!isdigit((unsigned char)*p)) {
			if (k == 2)
				break;   /* no patch: 0 */
			return 0;
		}
		long v = 0;
		int digits = 0;
		while (isdigit((unsigned char)*p) && digits < 4)
			v = v * 10 + (*p++ - '0'), digits++;
		if (isdigit((unsigned char)*p) || v > (k == 0 ? 99 : 999))
			return 0;
		part[k] = v;
		if (k < 2 && *p == '.' && isdigit((unsigned char)p[1]))
			p++;
		else if (k == 0)
			return 0;
		else
			break;
	}
	while (*p == '.' || *p == '+' || isalnum((unsigned char)*p))   /* rc1, .post1, .dev8+g4b7f5ea */
		p++;
	*out = (int)(part[0] * 1000000 + part[1] * 1000 + part[2]);
	return (int)(p - s);
}

static void add_note(struct plan_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct plan_result *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(&r->notes, &r->nnotes, xvasprintf(fmt, ap));
	va_end(ap);
}

/* How many prefill CUDA graphs SGLang captures up to max_bs tokens (cuda_graph_hook.py
 * generate_prefill_cuda_graph_batch_sizes): 4..32 by 4, 48..256 by 16, 288..512 by 32, 576..1024
 * by 64, 1280..4096 by 256, then by 512. */
static int sglang_prefill_graphs(long max_bs)
{
	static const struct { long from, to, step; } runs[] = {
		{4, 32, 4}, {48, 256, 16}, {288, 512, 32}, {576, 1024, 64}, {1280, 4096, 256}, {4608, LONG_MAX, 512},
	};
	int n = 0;
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
		for (long s = runs[i].from; s <= runs[i].to && s <= max_bs; s += runs[i].step)
			n++;
	return n;
}

/* SGLang's default --mem-fraction-static, as its current source computes it (arg_groups/memory_hook.py
 * handle_gpu_memory_settings, reserve_for_graph_mb, adjust_mem_fraction_for_vlm), with the GPU's
 * memory in MB:
 *   reserved = 512 + 1.5 × max(chunked prefill, 2048) + tp × pp / 8 × 1024
 *              + CUDA graphs: 2 × decode max_bs (+ DP attention's 3 × bs × dp, + 1.5 × bs × dp above
 *                bs 300) + prefill graphs (8 MB each; 1.5 GiB flat for MLA)
 *   at least 10 GiB on GPUs above 60 GB; + 2 GiB for an EAGLE-style draft (6 GiB STANDALONE)
 *   fraction = round((MB − reserved) / MB, 3), × the vision tower's factor for multimodal models.
 * The chunked prefill size and decode max_bs default by the GPU's memory as there. *why says how. */
static double sglang_default_fraction(const struct launch *l, const struct model_config *m, double gpu_bytes,
				      bool has_gpu, char **why)
{
	if (!has_gpu) {
		*why = xstrdup("SGLang's default without a known GPU size (0.95 less a vision tower's share)");
		return 0.95;
	}
	double mb = gpu_bytes / 1048576.0;
	long chunk = l->chunked_prefill;
	int bs = l->cuda_graph_max_bs;
	long cdef;
	int bdef;
	if (mb < 20 * 1024)
		cdef = 2048, bdef = 8;
	else if (mb < 35 * 1024)
		cdef = 4096, bdef = l->tp < 4 ? 48 : 160;
	else if (mb < 60 * 1024)
		cdef = 4096, bdef = l->tp < 4 ? 32 : 160;
	else if (mb < 160 * 1024)
		cdef = 8192, bdef = l->tp < 4 ? 256 : 512;
	else
		cdef = 16384, bdef = 512;
	if (!chunk)
		chunk = cdef;
	if (!bs)
		bs = bdef;
	double reserved = 512;
	if (chunk > 0)
		reserved += fmax((double)chunk, 2048) * 1.5;
	else
		reserved += fmax((double)(l->max_prefill ? l->max_prefill : 16384), 2048) * 1.5;
	reserved += (double)l->tp * l->pp / 8 * 1024;
	double graphs = 0;
	bool mla = m && m->mla;
	if (!l->no_cuda_graph) {
		graphs += bs * 2.0;
		if (mla) {
			graphs += 1.5 * 1024;   /* "MLA backend overhead is much higher than expected" */
		} else {
			/* Prefill graphs go up to the chunked prefill size, capped by
			 * --max-total-tokens. */
			long pmax = chunk > 0 ? chunk : 0;
			if (l->max_total_tokens && l->max_total_tokens < pmax)
				pmax = l->max_total_tokens;
			graphs += sglang_prefill_graphs(pmax) * 8.0;
		}
	}
	if (l->dp_attention) {
		graphs += (double)bs * l->dp * 3;
		if (bs > 300)
			graphs += (double)bs * l->dp * 1.5;
	}
	reserved += graphs;
	if (mb > 60 * 1024)
		reserved = fmax(reserved, 10 * 1024);
	if (l->spec_algo && !strcasecmp(l->spec_algo, "STANDALONE"))
		reserved += 6 * 1024;
	else if (l->speculative && !(l->spec_algo && !strcasecmp(l->spec_algo, "NGRAM")))
		reserved += 2 * 1024;
	double f = round((mb - reserved) / mb * 1000) / 1000;
	if (f < 0.05)
		f = 0.05;   /* a GPU smaller than SGLang's reserve: keep the arithmetic meaningful */
	char vit[160] = "";
	if (m && m->vision_params > 0) {
		/* A ViT's size against ViT-L/14's 24 × 1024²: each doubling takes 10% more, within
		 * [0.8, 1.05], on top of a flat 0.95. */
		double ratio = (double)m->vit_layers * m->vit_hidden * m->vit_hidden / (24.0 * 1024 * 1024);
		double adj = fmin(1.05, fmax(0.8, 1.0 - 0.1 * (ratio - 1.0)));
		f *= 0.95 * adj;
		snprintf(vit, sizeof vit, ", × %.4f for the vision tower (%d layers of %d)", 0.95 * adj, m->vit_layers,
			 m->vit_hidden);
	}
	*why = xasprintf("SGLang's default: (%.0f MB − %.0f MB reserved for chunked prefill %ld, CUDA graphs up to "
			 "batch %d%s%s) / %.0f MB%s", mb, reserved, chunk, bs, l->no_cuda_graph ? " (disabled)" : "",
			 l->speculative ? ", the draft" : "", mb, vit);
	return f;
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

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return b ? (a + b - 1) / b : 0;
}

/* vLLM's max_num_batched_tokens: the flag, else `vllm serve`'s default (engine/arg_utils.py: 8192
 * on GPUs of 70 GiB or more other than A100, else 2048). */
/* A release is before `at` (both as plan_parse_version encodes them); an unknown release (0) is
 * the current one, after everything. */
static bool before(int version, int at)
{
	return version && version < at;
}

/* vLLM's batch defaults (engine/arg_utils.py get_batch_defaults, `vllm serve`): GPUs of 70 GiB or
 * more other than an A100 (taken as 80.0 GiB exactly) get 8,192 tokens and 1,024 sequences. */
static bool vllm_big_gpu(const struct plan_input *in)
{
	double g = in->has_gpu_total ? in->gpu_total_bytes : 0;
	return g >= 70 * PLAN_GIB && !(g > 79.9 * PLAN_GIB && g < 80.1 * PLAN_GIB);
}

/* max_num_batched_tokens: the flag, else 8,192 on big GPUs, 2,048 elsewhere. */
static double vllm_batched_tokens(const struct launch *l, const struct plan_input *in)
{
	return l->max_batched ? (double)l->max_batched : vllm_big_gpu(in) ? 8192 : 2048;
}

/* max_num_seqs: the flag, else 1,024 on big GPUs, 256 elsewhere; V1 in 0.7 took 1,024 everywhere. */
static double vllm_max_seqs(const struct plan_input *in)
{
	const struct launch *l = in->launch;
	if (l->max_running)
		return (double)l->max_running;
	return vllm_big_gpu(in) || before(in->engine_version, 8000) ? 1024 : 256;
}

/* Blocks one request of `len` tokens reserves in vLLM's hybrid pool, over every group
 * (v1/kv_cache_interface.py max_memory_usage_bytes): a full-attention group cdiv(len, block); a
 * sliding-window group cdiv(min(window − 1 + max_num_batched_tokens, len), block) + 1 (the window
 * need not start at a block boundary); a chunked-local group cdiv(min(chunk + batched, len), block). */
static uint64_t vllm_blocks_per_request(const struct plan_result *r, int full_groups, int swa_groups, int chunk_groups,
					uint64_t len, double batched, int block)
{
	uint64_t b = (uint64_t)block, w = (uint64_t)r->hy_window;
	uint64_t full = cdiv(len, b);
	uint64_t swa = cdiv((uint64_t)fmin((double)(w ? w - 1 : 0) + batched, (double)len), b) + 1;
	uint64_t chunk = cdiv((uint64_t)fmin((double)w + batched, (double)len), b);
	return full_groups * full + swa_groups * swa + chunk_groups * chunk;
}

/* How many layers' worth of KV a token costs in the pool, and how the engine splits the pool
 * between sliding-window, chunked and full-attention layers. Sets r->pool_kind, the hy_* counts
 * and r->hy_formula; returns the layer count the bytes a token are reckoned over (padded groups
 * for vLLM's hybrid manager, every attention layer otherwise). `layers` are this pipeline stage's,
 * `draft` the speculative draft's (full attention).
 *   vLLM (v1/core/kv_cache_utils.py get_kv_cache_groups, _get_kv_cache_groups_uniform_page_size):
 *     the hybrid KV cache manager groups layers by kind into groups of the smallest kind's count
 *     (the largest's when it is under 1.5 times the smallest), the last group of a kind padded;
 *     all groups share one block pool, num_blocks = pool // (page × group size)
 *     (get_kv_cache_config_from_groups, get_num_blocks). The manager is off with
 *     --disable-hybrid-kv-cache-manager, with a KV connector (--kv-transfer-config; newer vLLM keeps
 *     it for connectors that support it), and for chunked local attention (Llama 4) unless
 *     VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (config/vllm.py); then every layer is
 *     full attention (unify_hybrid_kv_cache_specs).
 *   SGLang (model_runner_kv_cache_mixin.py profile_max_num_token, set_num_tokens_hybrid_swa): the
 *     profile divides the pool by every layer's bytes; the SWA pool then splits it into full tokens
 *     = T × (F + S) / (F + r × S) and SWA tokens = r × full, r = --swa-full-tokens-ratio (0.8). On
 *     for GPT-OSS except with the trtllm_mha backend (the default on Blackwell), off for Gemma 2/3
 *     and with --disable-hybrid-swa-memory (server_args.py _handle_model_specific_adjustments). */
static int plan_kv_layers(const struct plan_input *in, struct plan_result *r, int layers, int draft)
{
	const struct launch *l = in->launch;
	const struct model_config *m = in->model;
	r->pool_kind = PLAN_POOL_FULL;
	int typed = m->full_layers + m->swa_layers + m->chunked_layers + m->linear_layers;
	if (!m->layer_source || !typed)
		return layers + draft;
	/* The stage's share of each kind (layers alternate, so PP splits each evenly). */
	int pp = l->pp;
	r->hy_full = (m->full_layers + pp - 1) / pp + draft;
	r->hy_swa = (m->swa_layers + pp - 1) / pp;
	r->hy_chunked = (m->chunked_layers + pp - 1) / pp;
	r->hy_linear = (m->linear_layers + pp - 1) / pp;
	r->hy_window = r->hy_chunked ? m->attn_chunk : m->sliding_window;
	int attn = r->hy_full + r->hy_swa + r->hy_chunked;
	bool sg = l->engine == LAUNCH_SGLANG;
	if (r->hy_linear)
		add_note(r, "%d of %d layers are linear-attention / Mamba layers: they keep a fixed state per request, which "
			    "the engines carve out of the pool (SGLang --mamba-full-memory-ratio, vLLM's Mamba groups); not "
			    "modelled: KV is counted for the %d attention layers only, so the tokens shown are an upper bound",
			 m->linear_layers, m->layers, m->full_layers + m->swa_layers + m->chunked_layers);
	if (!r->hy_swa && !r->hy_chunked) {
		if (r->hy_linear)
			r->hy_formula = xasprintf("%d full-attention layers hold KV; %d linear / Mamba layers hold state (not "
						  "modelled)", r->hy_full, r->hy_linear);
		return attn ? attn : 1;
	}
	if (!r->hy_full) {
		/* Every layer slides (Mistral-style): one uniform group, the same tokens as full attention. */
		r->hy_formula = xasprintf("all %d attention layers use a %d-token window: one group, counted like full attention",
					  attn, r->hy_window);
		return attn;
	}
	const char *kind = r->hy_chunked ? "chunked-local" : "sliding";
	if (!sg) {
		const char *off = NULL;
		if (l->hybrid_kv_manager < 0)
			off = "--disable-hybrid-kv-cache-manager";
		else if (l->kv_transfer && l->hybrid_kv_manager == 0)
			off = "--kv-transfer-config (a KV connector turns it off unless it supports it)";
		else if (r->hy_chunked && l->hybrid_kv_manager == 0)
			off = "chunked local attention (off unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1)";
		if (off) {
			r->hy_formula = xasprintf("%d full + %d %s layers (window %d), vLLM's hybrid KV cache manager off by %s: "
						  "every layer holds every token", r->hy_full, r->hy_swa + r->hy_chunked, kind,
						  r->hy_window, off);
			return attn;
		}
		r->pool_kind = PLAN_POOL_VLLM_HYBRID;
		int n_other = r->hy_swa + r->hy_chunked;
		int mn = r->hy_full < n_other ? r->hy_full : n_other, mx = r->hy_full < n_other ? n_other : r->hy_full;
		int g = mx < 1.5 * mn ? mx : mn;
		int fg = (r->hy_full + g - 1) / g, og = (n_other + g - 1) / g;
		r->hy_group_size = g;
		r->hy_groups = fg + og;
		r->hy_formula = xasprintf("%d full + %d %s layers (window %d): vLLM's hybrid KV cache manager makes %d + %d groups of "
					  "%d layers%s sharing one block pool; a block costs %d layers' page",
					  r->hy_full, n_other, kind, r->hy_window, fg, og, g,
					  fg * g + og * g > attn ? " (the last padded)" : "", g);
		/* "GPU KV cache size" (through 0.19) is blocks // groups × block size: as if every group
		 * needed a block per token, so a token costs groups × group size layers. */
		return r->hy_groups * g;
	}
	bool gpt_oss = m->model_type && !strcmp(m->model_type, "gpt_oss");
	bool blackwell = in->has_gpu_total && in->gpu_total_bytes > 150 * PLAN_GIB;
	const char *be = l->attention_backend;
	const char *off = NULL;
	if (l->disable_hybrid_swa)
		off = "--disable-hybrid-swa-memory";
	else if (!gpt_oss)
		off = m->model_type && !strncmp(m->model_type, "gemma", 5) ? "SGLang for Gemma 2/3" : r->hy_chunked
			    ? "SGLang here (its Llama 4 chunked pool is not modelled)" : "SGLang for this architecture";
	else if (be ? !strcmp(be, "trtllm_mha") : blackwell)
		off = be ? "the trtllm_mha attention backend" : "the trtllm_mha backend SGLang picks on Blackwell";
	if (off) {
		r->hy_formula = xasprintf("%d full + %d %s layers (window %d), SGLang's SWA pool off (%s): every layer holds "
					  "every token", r->hy_full, r->hy_swa + r->hy_chunked, kind, r->hy_window, off);
		return attn;
	}
	r->pool_kind = PLAN_POOL_SGLANG_SWA;
	r->swa_ratio = l->has_swa_full_ratio ? l->swa_full_ratio : 0.8;
	r->hy_formula = xasprintf("%d full + %d sliding layers (window %d): SGLang's SWA pool, full tokens = profiled × %d / "
				  "(%d + %.2f × %d), SWA tokens = %.2f × full", r->hy_full, r->hy_swa, r->hy_window, attn,
				  r->hy_full, r->swa_ratio, r->hy_swa, r->swa_ratio);
	return attn;   /* the profile divides by every layer; the split comes after */
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
	/* A rank holds the KV of its pipeline stage's layers only; the fullest stage decides. Speculative
	 * decoding's draft (MTP / NextN / EAGLE) keeps its own layers' KV for the same tokens. */
	int layers = (m->layers + l->pp - 1) / l->pp;
	int draft = l->speculative && !(l->spec_algo && !strcasecmp(l->spec_algo, "ngram"))
			    ? (m->nextn_layers ? m->nextn_layers : 1) : 0;
	r->stage_layers = layers + draft;
	char stage[96] = "";
	if (l->pp > 1 || draft)
		snprintf(stage, sizeof stage, " (%d of %d layers in this pipeline stage%s)", layers, m->layers,
			 draft ? ", + the draft's" : "");
	if (m->mla) {
		/* MLA caches one compressed latent (kv_lora_rank) plus the rotary key per token and layer;
		 * every TP rank holds all of it. vLLM's fp8_ds_mla packs 512 fp8 values, 4 float scales and
		 * the 64 rotary values in bf16: 656 bytes. */
		bool ds = l->kv_dtype && !strcmp(l->kv_dtype, "fp8_ds_mla");
		/* DeepSeek-V3.2 keeps its fp8 MLA cache in that layout in both engines (vLLM maps fp8 to
		 * fp8_ds_mla; SGLang's NSA pool stores 512 fp8 + 4 scales + 64 bf16 rope), and SGLang picks
		 * fp8 by itself on Blackwell (server_args.py, NSA models on SM100). The GPU's size stands in
		 * for its architecture here: above 150 GiB is a B200/B300-class part. */
		bool auto_kv = !l->kv_dtype || !strcmp(l->kv_dtype, "auto");
		if (m->index_head_dim && l->kv_dtype && !strncmp(l->kv_dtype, "fp8", 3))
			ds = true;
		if (m->index_head_dim && auto_kv && l->engine == LAUNCH_SGLANG && in->has_gpu_total &&
		    in->gpu_total_bytes > 150 * PLAN_GIB) {
			ds = true;
			free(r->kv_dtype);
			r->kv_dtype = xstrdup("fp8_e4m3");
			r->kv_dtype_bytes = 1;
			add_note(r, "DeepSeek-V3.2 on a Blackwell-sized GPU: SGLang stores its KV cache in fp8 by default "
				    "(656 bytes a layer); pass --kv-cache-dtype to be exact");
		}
		double per_layer = ds ? 656 : (double)(m->kv_lora_rank + m->qk_rope_head_dim) * r->kv_dtype_bytes;
		/* DeepSeek-V3.2's indexer caches an fp8 key of index_head_dim and a float scale per 128. */
		double idx = m->index_head_dim ? m->index_head_dim + m->index_head_dim / 128.0 * 4 : 0;
		r->cell_bytes = (per_layer + idx) * r->stage_layers;
		if (ds)
			r->cell_formula = xasprintf("MLA fp8_ds_mla: 656 bytes%s × %d layers%s, the same on every rank",
						    idx ? " + indexer" : "", r->stage_layers, stage);
		else
			r->cell_formula = xasprintf("MLA: (kv_lora_rank %d + qk_rope_head_dim %d%s) × %d layers × %s bytes "
						    "(%s)%s, the same on every rank",
						    m->kv_lora_rank, m->qk_rope_head_dim, idx ? " + the indexer's key" : "",
						    r->stage_layers, b1, r->kv_dtype, stage);
	} else {
		int heads = m->kv_heads / r->attn_tp;
		if (heads < 1)
			heads = 1;   /* fewer KV heads than ranks: each rank keeps a replica of one */
		r->layer_bytes = (double)heads * (m->head_dim + m->v_head_dim) * r->kv_dtype_bytes;
		int counted = plan_kv_layers(in, r, layers, draft);
		r->cell_bytes = r->layer_bytes * counted;
		r->cell_formula = xasprintf("%s: max(1, %d KV heads / TP %d) = %d × (head_dim %d + v_head_dim %d) × "
					    "%d layers × %s bytes (%s)%s",
					    m->kv_heads == m->heads ? "MHA" : "GQA", m->kv_heads, r->attn_tp, heads, m->head_dim,
					    m->v_head_dim, counted, b1, r->kv_dtype, r->hy_formula ? "" : stage);
	}
	r->has_cell = true;
	return 0;
}

static void add_term(struct plan_result *r, const char *key, double bytes, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_term(struct plan_result *r, const char *key, double bytes, const char *fmt, ...)
{
	if (r->nterms >= (int)(sizeof r->terms / sizeof r->terms[0]))
		return;
	va_list ap;
	va_start(ap, fmt);
	struct plan_term *t = &r->terms[r->nterms++];
	t->key = key;
	t->bytes = bytes;
	t->how = xvasprintf(fmt, ap);
	va_end(ap);
}

/* Weights one rank holds. Both engines split most of a model across tensor-parallel ranks, but
 * every rank keeps some tensors whole: MLA's q_a / kv_a projections (ReplicatedLinear in
 * deepseek_v2.py of both), the MoE router, a vision tower; experts split over the expert-parallel
 * group instead (SGLang --ep; vLLM --enable-expert-parallel: DP × TP ranks, vllm/config parallel
 * `expert_parallel`); MTP layers are loaded only with speculative decoding. The checkpoint's total
 * is shared out over these parts in proportion to their parameter counts from config.json, with
 * quantized experts taking what the 16-bit rest leaves. Falls back to total / (tp × pp) when the
 * config lacks the shapes. */
static void plan_weights(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	const struct model_config *m = in->model;
	double W = in->weights_bytes;
	double simple = W / ((double)l->tp * l->pp);
	r->weights_per_gpu = simple;
	if (!m || !m->hidden || !m->vocab || (!m->mla && !m->heads)) {
		add_term(r, "weights", -simple, "weights: %.1f GB total / (tp %d × pp %d)", W / PLAN_GB, l->tp, l->pp);
		return;
	}
	double H = m->hidden, L = m->layers, V = m->vocab;
	double rep_attn = 0, split_attn;
	if (m->mla) {
		double heads = m->heads ? m->heads : 128, ql = m->q_lora_rank, nope = m->qk_nope_head_dim ? m->qk_nope_head_dim : 128;
		double rope = m->qk_rope_head_dim, v = m->v_head_dim ? m->v_head_dim : 128, kvl = m->kv_lora_rank;
		rep_attn = H * ql + H * (kvl + rope);
		split_attn = (ql ? ql : H) * heads * (nope + rope) + kvl * heads * (nope + v) + heads * v * H;
	} else {
		split_attn = H * m->heads * m->head_dim + 2 * H * m->kv_heads * m->head_dim + (double)m->heads * m->v_head_dim * H;
	}
	double moe_layers = m->experts ? L - m->first_dense : 0, dense_layers = L - moe_layers;
	double inter = m->intermediate ? m->intermediate : 4 * H;
	double moe_i = m->moe_intermediate ? m->moe_intermediate : inter;
	double p_dense = dense_layers * 3 * H * inter;
	double p_shared = moe_layers * 3 * H * (m->shared_intermediate ? m->shared_intermediate : m->shared_experts * moe_i);
	double p_exp = moe_layers * m->experts * 3 * H * moe_i;
	double p_router = moe_layers * m->experts * H;
	double p_rep_attn = L * rep_attn, p_split_attn = L * split_attn;
	double p_embed = V * H * (m->tie_embeddings ? 1 : 2);
	double p_vision = m->vision_params;
	/* One MTP layer: a decoder layer (MoE) plus its 2H × H projection. */
	double p_mtp = m->nextn_layers * (rep_attn + split_attn + (m->experts ? (p_exp + p_shared + p_router) / fmax(1, moe_layers)
									       : 3 * H * inter) + 2 * H * H);
	const char *qm = m->quant_method;
	bool fp8 = qm && !strcmp(qm, "fp8");
	bool low = qm && !fp8;   /* int4 / fp4 / AWQ / GPTQ / compressed-tensors */
	double bl = fp8 ? 1 : 2;   /* bytes a linear-layer parameter takes in the checkpoint */
	double nonexp = (p_rep_attn + p_split_attn + p_dense + p_shared) * bl + (p_router + p_embed + p_vision) * 2;
	double b_exp;
	if (m->experts && low) {
		b_exp = p_exp > 0 ? fmax(0, W - nonexp - p_mtp * bl) / (p_exp + p_mtp) : 0;   /* what is left: quantized experts */
	} else {
		double est = nonexp + (p_exp + p_mtp) * bl;
		double k = est > 0 ? W / est : 1;   /* scale every part so that they sum to the checkpoint */
		bl *= k;
		nonexp *= k;
		b_exp = bl;
	}
	/* Bytes a parameter of the non-expert parts now takes: 16-bit ones (router, embeddings, vision)
	 * and linear layers (a byte for fp8), both scaled by what the checkpoint's total implied. */
	double scale_nonexp = nonexp / fmax(1, (p_rep_attn + p_split_attn + p_dense + p_shared) * (fp8 ? 1 : 2) +
						     (p_router + p_embed + p_vision) * 2);
	double b16 = 2 * scale_nonexp, blin = (fp8 ? 1 : 2) * scale_nonexp;
	bool sg = l->engine == LAUNCH_SGLANG;
	double attn_tp = r->attn_tp;
	/* vLLM: each DP replica is its own TP group; experts spread over DP × TP with expert parallel. */
	double moe_group = sg ? (l->ep > 1 ? l->ep : l->tp) : (l->expert_parallel ? (double)l->tp * l->dp : l->tp);
	double stage = ((double)((m->layers + l->pp - 1) / l->pp)) / L;   /* the fullest stage's share of layers */
	double rep = p_rep_attn * stage * blin + p_router * stage * b16 + p_vision * b16;
	/* The input embedding is vocab-parallel over TP, but whole on every rank under SGLang's DP
	 * attention (deepseek_v2.py: VocabParallelEmbedding(enable_tp=not dp attention)); the LM head
	 * stays split over the whole TP group unless --enable-dp-lm-head. With PP the first stage has
	 * the one and the last the other: the fuller stage holds the larger. */
	double in_embed = V * H * b16 / (sg && l->dp_attention ? 1 : l->tp);
	double out_embed = m->tie_embeddings ? 0 : V * H * b16 / l->tp;
	double embeds = l->pp > 1 ? fmax(in_embed, out_embed) : in_embed + out_embed;
	double split = p_split_attn * stage * blin / attn_tp + (p_dense + p_shared) * stage * blin / l->tp + embeds;
	if (sg && l->dp_attention && l->pp == 1) {
		/* The whole input embedding is a replicated part: report it with them. */
		rep += in_embed;
		split -= in_embed;
	}
	double exp = p_exp * stage * b_exp / moe_group;
	double mtp = l->speculative ? p_mtp * b_exp / moe_group : 0;
	r->replicated = rep;
	r->weights_per_gpu = rep + split + exp + mtp;
	r->weights_estimated = true;
	add_term(r, "weights", -(split + exp + mtp), "weights split across ranks: attention / %g, dense MLP and embeddings / "
		 "%d, experts / %g%s%s", attn_tp, l->tp, moe_group, l->pp > 1 ? ", this stage's layers" : "",
		 mtp ? ", with the MTP layer" : "");
	add_term(r, "replicated", -rep, "weights every rank holds whole: %s%s%s%s",
		 p_rep_attn ? "MLA q_a/kv_a projections, " : "", p_router ? "MoE routers, " : "",
		 sg && l->dp_attention && l->pp == 1 ? "the input embedding (DP attention), " : "",
		 p_vision ? "the vision tower" : rep > 0 ? "no vision tower" : "(none)");
	if (m->nextn_layers && !l->speculative)
		add_note(r, "the checkpoint's %d MTP layer%s (%.1f GB) load%s only with speculative decoding: not counted",
			 m->nextn_layers, m->nextn_layers == 1 ? "" : "s", p_mtp * b_exp / PLAN_GB, m->nextn_layers == 1 ? "s" : "");
	if (low && m->experts)
		add_note(r, "%s checkpoint: non-expert weights taken as 16-bit, experts as the rest (%.2f bytes a parameter)",
			 qm, b_exp);
}

/* What the driver keeps back of a GPU's memory, which CUDA (and so both engines) never sees: NVML's
 * memory.reserved when plan reads the GPU live, else this estimate. Measured: 616 MiB on an H200
 * with driver 580 (tests/gpu/cuda_total.cu: CUDA's total 143,156 MiB against nvidia-smi's 143,771);
 * as engine logs print CUDA's total, about 440 MiB on an H100 80GB (79.22 GiB of 81,559 MiB), 512 on
 * an A100 40GB (39.50 GiB) and 420 on an RTX 4090 (23.58 GiB). */
#define DRIVER_RESERVE_BYTES (0.5 * PLAN_GIB)

/* The CUDA context and the communication buffers a rank holds before SGLang measures its memory
 * (model_runner.py init_torch_distributed: "Init torch distributed ends. mem usage"): about 0.4 GiB
 * of context (an SGLang TP-1 log: 94.69 GB free at "Load weight begin" of an RTX PRO 6000 that
 * nvidia-smi shows as 95.59 GiB, less the driver's reserve; the TP-8 H200 log of sglang#11716 leaves
 * 0.5 of its 140.40 GiB after the measured 0.60 reserve and 1.96 GB of buffers) and, across ranks,
 * NCCL plus custom all-reduce buffers growing with the group (TP 8 on H200: 1.8–2.0 GB). */
#define CONTEXT_BYTES (0.4 * PLAN_GIB)

/* Communication buffers (NCCL, custom all-reduce) a rank holds once tp × pp > 1: about 2 GiB on
 * data-center GPUs whatever the group's size (SGLang's "Init torch distributed ends. mem usage":
 * 1.77–2.01 GB at TP 8 on H200, sglang#11716; vLLM's non-torch memory measured before its baseline
 * moved: 2.04 GiB at TP 4 on H200, PR 21429, and 1.79 GiB more at TP 2 than at TP 1 on H100, PR
 * 10511), 0.25 GiB on consumer cards over PCIe (0.25 GiB of non-torch memory in all at TP 2 on
 * RTX 4090s, vllm#13061). plan takes GPUs of 70 GiB or more as the first kind. */
static double nccl_bytes(const struct launch *l, double gpu_bytes)
{
	if ((long long)l->tp * l->pp <= 1)
		return 0;
	return (gpu_bytes >= 70 * PLAN_GIB ? 2.0 : 0.25) * PLAN_GIB;
}

/* SGLang: the buffers above, which it measures before sizing the pool. vLLM: the non-torch memory
 * its profile keeps out of the pool, which depends on where the release takes its baseline
 * (gpu_worker.py init_device / determine_available_memory):
 *   - before 0.9.2 (PR 19312) V1 counted everything on the device that torch did not allocate, the
 *     CUDA context included;
 *   - before 0.11 (PR 25359) the baseline was taken before NCCL started, so its buffers count;
 *   - since, only what grows during the profile: cuBLAS workspaces and the like, 0.15 GiB, 0.5 GiB
 *     with TP > 1. */
static double comm_bytes(const struct plan_input *in)
{
	const struct launch *l = in->launch;
	int v = in->engine_version;
	if (l->engine != LAUNCH_VLLM)
		return nccl_bytes(l, in->gpu_total_bytes);
	double b = 0.15 * PLAN_GIB;
	if (before(v, 11000))
		b += nccl_bytes(l, in->gpu_total_bytes);
	else if ((long long)l->tp * l->pp > 1)
		b = 0.5 * PLAN_GIB;
	if (before(v, 9002))
		b += CONTEXT_BYTES;
	return b;
}


/* vLLM's profile run (v1/worker/gpu_model_runner.py profile_run) pushes max_num_batched_tokens
 * through the model and then, since 0.8 (PR 13594), max_num_seqs rows of logits through the sampler
 * (_dummy_sampler_run, with top-k and top-p set); the torch peak above the weights is kept out of the
 * pool (batch defaults: vllm_big_gpu). Estimated from the shapes: the forward's
 * largest live tensors (hidden states, q/k/v, the MLP or fused-MoE intermediates), or the sampler's
 * bytes per logit (row × vocabulary):
 *   - 0.7 ran no sampler: compute_logits in the model's dtype over every token of the dummy batch
 *     (0.7.0, 0.7.1) or one row a request (0.7.2 on): 2 bytes;
 *   - 0.8 to 0.16 sorted them (topk_topp_sampler.py apply_top_k_top_p_pytorch): bf16 logits 2 and
 *     their TP gather 2, the float32 copy 4, sorted values 4, int64 indices 8, the radix sort's
 *     double buffers 12, softmax 4, two masks 2 = 38 (PR 21429 measured 5.62 GiB for 1,024 rows of
 *     151,936: 38 × 155.6 M = 5.51 GiB);
 *   - Triton's top-k/top-p without a sort (PR 33538, February 2026, taken as 0.17): bf16 and float32
 *     logits, probabilities and the exponential draw = 14. */
static double vllm_activation(const struct plan_input *in, char **how)
{
	const struct launch *l = in->launch;
	const struct model_config *m = in->model;
	int v = in->engine_version;
	double n = vllm_batched_tokens(l, in);
	double seqs = vllm_max_seqs(in);
	if (!m || !m->hidden) {
		*how = xstrdup("activation peak: model shapes unknown, 0.5 GiB assumed");
		return 0.5 * PLAN_GIB;
	}
	double H = m->hidden, tp = l->tp, V = m->vocab ? m->vocab : 32000;
	double hidden = n * H * 2 * 4;
	double qkv = m->mla ? n * (m->heads ? m->heads : 128) / tp * 192 * 2 * 2
			    : n * (m->heads + 2.0 * m->kv_heads) / tp * m->head_dim * 2;
	double mlp = n * 3 * (m->intermediate ? m->intermediate : 4 * H) / tp * 2;
	if (m->experts)
		mlp = fmax(mlp * (m->first_dense ? 1 : 0),
			   n * (m->experts_per_tok ? m->experts_per_tok : 8) * (3 * (m->moe_intermediate ? m->moe_intermediate : H) / tp + H) * 2);
	double fwd = hidden + fmax(qkv, mlp);
	double rows = fmin(seqs, n), per = 14;
	const char *what = "sampler over";
	if (before(v, 8000)) {
		per = 2, what = "logits of";
		if (before(v, 7002))
			rows = n;
	} else if (before(v, 17000)) {
		per = 38;
	}
	double sampler = rows * V * per;
	*how = xasprintf("activation peak (estimate): max(forward of %.0f tokens %.2f GiB, %s %.0f rows %.2f GiB)", n,
			 fwd / PLAN_GIB, what, rows, sampler / PLAN_GIB);
	return fmax(fwd, sampler + n * H * 2);
}

/* vLLM's capture sizes (config/compilation.py): 1, 2, 4, then by 8 below 256, then by 16 up to
 * max_cudagraph_capture_size = min(2 × max_num_seqs, 512). Counts those up to `limit`. */
static int vllm_capture_sizes(long cap, long limit)
{
	int n = 0;
	for (long s = 1; s <= cap && s <= limit; s = s < 4 ? s * 2 : s < 8 ? 8 : s < 256 ? s + 8 : s + 16)
		n++;
	return n;
}

/* vLLM 0.20.0 (PR 38284, "[Startup][UX] Enable CUDAGraph memory profiling by default") turned the
 * CUDA-graph estimate on and raised the default --gpu-memory-utilization from 0.9 to 0.92 to make
 * room for it (vllm/config/cache.py: gpu_memory_utilization Field(default=0.92)). Logs show where:
 * 0.19.1 leaves 0.9 out of its "non-default args", 0.20.0, 0.20.1 and 0.21.0 list an explicit 0.9
 * there, and 0.31.0 unflagged prints "Desired GPU memory utilization is (0.92, ...)". */
#define VLLM_DEFAULTS_0_20 20000
static double vllm_default_utilization(int version)
{
	return before(version, VLLM_DEFAULTS_0_20) ? 0.9 : 0.92;
}

/* Since vLLM 0.20 its memory profile also counts the CUDA graphs it will capture
 * (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default since PR 38284, which shipped in 0.20.0
 * although its log line says "default since v0.21.0": 0.19.1 logs "In v0.19, CUDA graph memory
 * profiling will be enabled by default ... To try it now, set ...", the 0.20.0 image logs
 * "Estimated CUDA graph memory" and "is enabled" with the variable unset; gpu_model_runner.py
 * profile_cudagraph_memory): it captures the largest and the smallest graph and takes the first's
 * cost plus (graphs − 1) × the second's. Graphs: PIECEWISE at every capture size and, in the default
 * FULL_AND_PIECEWISE mode, FULL decode graphs up to max_num_seqs; none with --enforce-eager. Those
 * costs are the model's and the driver's, measured there; plan takes the first graph at 0.25 GiB
 * and each other at 8 MiB, what published logs show (86 graphs: 0.73 to 1.58 GiB). Returns the
 * bytes, 0 when vLLM does not count them, with *how set. */
static double vllm_cudagraph(const struct plan_input *in, double seqs, char **how)
{
	const struct launch *l = in->launch;
	bool env_on = l->has_cg_profile_env && l->cg_profile_env;
	int v = in->engine_version;
	if (l->no_cuda_graph) {
		*how = xstrdup("no CUDA graphs (--enforce-eager)");
		return 0;
	}
	if (l->has_cg_profile_env && !l->cg_profile_env) {
		*how = xstrdup("CUDA graph memory not counted (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)");
		return 0;
	}
	if (before(v, VLLM_DEFAULTS_0_20) && !(env_on && !before(v, 15000))) {   /* opt-in from PR 30515, taken as 0.15 */
		*how = xasprintf("CUDA graph memory not counted (vLLM %d.%d: counted since 0.20)", v / 1000000, v / 1000 % 1000);
		return 0;
	}
	long cap = (long)fmin(2 * seqs, 512);
	int piecewise = vllm_capture_sizes(cap, cap), full = vllm_capture_sizes(cap, (long)seqs);
	int n = piecewise + full;
	*how = xasprintf("CUDA graphs (estimate): %d PIECEWISE up to %ld tokens and %d FULL, 0.25 GiB + %d × 8 MiB", piecewise,
			 cap, full, n - 1);
	return 0.25 * PLAN_GIB + (n - 1) * 8.0 * 1048576;
}

static void plan_gpu_memory(const struct plan_input *in, struct plan_result *r)
{
	const struct launch *l = in->launch;
	bool sg = l->engine == LAUNCH_SGLANG;
	char b1[40], b2[40], b3[40];
	r->fraction_flag = sg ? "--mem-fraction-static" : "--gpu-memory-utilization";
	r->fraction = l->has_mem_fraction ? l->mem_fraction : vllm_default_utilization(in->engine_version);
	r->fraction_assumed = !l->has_mem_fraction;
	if (r->fraction_assumed && sg) {
		char *why = NULL;
		r->fraction = sglang_default_fraction(l, in->model, in->gpu_total_bytes, in->has_gpu_total, &why);
		add_note(r, "--mem-fraction-static not given: %.3f, %s", r->fraction, why);
		free(why);
	} else if (r->fraction_assumed) {
		add_note(r, "--gpu-memory-utilization not given: %.2f, vLLM's default%s", r->fraction,
			 before(in->engine_version, VLLM_DEFAULTS_0_20) ? " before 0.20" : " since 0.20 (0.9 before)");
	}
	r->overhead = in->overhead_bytes;
	if (in->has_weights) {
		r->has_weights = true;
		plan_weights(in, r);
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
	/* --overhead replaces every estimate with one number, this one too. */
	double driver = in->has_driver_reserve ? in->driver_reserve_bytes : in->estimate_overhead ? DRIVER_RESERVE_BYTES : 0;
	r->cuda_total = r->gpu_total - driver;
	add_term(r, "gpu_total", r->gpu_total, "GPU total as NVML and nvidia-smi show it");
	if (driver)
		add_term(r, "driver_reserve", -driver, "the driver's reserve, which CUDA never sees (NVML memory.reserved%s)",
			 in->has_driver_reserve ? "" : "; estimated");
	double used_by_others = in->has_gpu_used ? in->gpu_used_bytes : 0;
	if (in->estimate_overhead) {
		/* vLLM measures from a baseline taken after its CUDA context: only SGLang loses it. */
		r->context = sg ? CONTEXT_BYTES : 0;
		r->comm = comm_bytes(in);
	}
	/* SGLang: total_gpu_memory = free memory after the context and NCCL start, the minimum across
	 * ranks (model_runner.py init_torch_distributed); the pool is what is free after loading minus
	 * total_gpu_memory × (1 − fraction) (profile_max_num_token). So the fraction applies to the
	 * memory free at start, not to the GPU's total. vLLM: requested = total × utilization
	 * (gpu_worker.py init_device) and the pool = requested − weights − activation peak − non-torch
	 * memory (determine_available_memory). */
	double base = sg ? r->cuda_total - used_by_others - r->context - r->comm : r->cuda_total;
	r->budget = base * r->fraction;
	r->reserve = base - r->budget;
	if (sg && in->estimate_overhead) {
		add_term(r, "context", -r->context * r->fraction, "CUDA context %.1f GiB, × the fraction (SGLang measures after it)",
			 r->context / PLAN_GIB);
		if (r->comm)
			add_term(r, "comm", -r->comm * r->fraction, "NCCL and all-reduce buffers %.2f GiB for %d ranks, × the fraction",
				 r->comm / PLAN_GIB, l->tp * l->pp);
	}
	if (used_by_others)
		add_term(r, "others", -used_by_others * (sg ? r->fraction : 0), "memory other processes hold (live NVML)");
	/* With SGLang's context, buffers and others' memory counted × the fraction above, what the
	 * fraction keeps back is the GPU total × (1 − fraction) in both engines. */
	add_term(r, "reserve", -r->cuda_total * (1 - r->fraction), "%s %.3f keeps 1 − %.3f of the total back",
		 r->fraction_flag, r->fraction, r->fraction);
	if (!r->has_weights) {
		r->gpu_verdict = PLAN_UNKNOWN;
		r->gpu_message = xasprintf("budget %s GiB per GPU; weights unknown: pass --weights-gb or a model folder "
					   "with safetensors", plan_fmt(b1, r->budget / PLAN_GIB, 1));
		return;
	}
	double other;   /* what the engine keeps out of the pool besides the weights */
	if (!in->estimate_overhead) {
		other = r->overhead;
		add_term(r, "overhead", -other, "--overhead as given");
	} else if (sg) {
		other = 0;
	} else {
		char *how = NULL;
		r->activation = vllm_activation(in, &how);
		add_term(r, "activation", -r->activation, "%s", how);
		free(how);
		add_term(r, "comm", -r->comm, "non-torch memory (NCCL, cuBLAS workspaces) the profile sees, estimated");
		r->cudagraph = vllm_cudagraph(in, vllm_max_seqs(in), &how);
		if (r->cudagraph)
			add_term(r, "cudagraph", -r->cudagraph, "%s", how);
		else
			add_note(r, "%s", how);
		free(how);
		other = r->activation + r->comm + r->cudagraph;
		if (used_by_others)
			add_note(r, "vLLM V1 counts only its own memory, but refuses to start when less than total × "
				    "utilization is free: other processes hold %s GiB", plan_fmt(b1, used_by_others / PLAN_GIB, 1));
	}
	r->overhead = sg ? r->context + r->comm : other;
	double used = r->weights_per_gpu + other;
	r->kv_pool = r->budget - used;
	r->has_kv_pool = true;
	if (!sg && l->has_kv_cache_memory) {
		/* vLLM --kv-cache-memory: the pool is that many bytes; the fraction is not used. */
		r->kv_fixed = true;
		r->kv_pool = l->kv_cache_memory;
		double need = r->weights_per_gpu + other + l->kv_cache_memory;
		if (need > r->cuda_total)
			add_note(r, "--kv-cache-memory: weights, activations and the %s GiB pool need %s GiB, more than the GPU's %s GiB",
				 plan_fmt(b1, l->kv_cache_memory / PLAN_GIB, 1), plan_fmt(b2, need / PLAN_GIB, 1),
				 plan_fmt(b3, r->cuda_total / PLAN_GIB, 1));
		add_term(r, "kv_cache_memory", 0, "--kv-cache-memory %s GiB sets the pool", plan_fmt(b1, l->kv_cache_memory / PLAN_GIB, 2));
	}
	if (!sg && used_by_others > r->cuda_total - r->budget) {
		/* vLLM V1 refuses to start when less than total × utilization is free (gpu_worker.py
		 * init_device: "Free memory on device ... is less than desired GPU memory utilization"). */
		r->gpu_verdict = PLAN_NO_FIT;
		r->start_refused = true;
		r->gpu_message = xasprintf("vLLM refuses to start: other processes hold %s GiB, so less than %s × %.2f = "
					   "%s GiB is free; at most --gpu-memory-utilization %.2f",
					   plan_fmt(b1, used_by_others / PLAN_GIB, 1), plan_fmt(b2, r->cuda_total / PLAN_GIB, 1),
					   r->fraction, plan_fmt(b3, r->budget / PLAN_GIB, 1),
					   floor((r->cuda_total - used_by_others) / r->cuda_total * 100) / 100);
		return;
	}
	if (r->kv_pool > 0) {
		r->gpu_verdict = PLAN_FITS;
		r->gpu_message = xasprintf("weights %s GiB + %s %s GiB leave %s GiB of the %s GiB budget for the KV cache",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1),
					   !in->estimate_overhead ? "overhead" : sg ? "context and buffers" : "activations and buffers",
					   plan_fmt(b2, (sg && in->estimate_overhead ? (r->context + r->comm) * r->fraction : other) / PLAN_GIB, 1),
					   plan_fmt(b3, r->kv_pool / PLAN_GIB, 1), plan_fmt((char[40]){0}, (sg ? r->budget + (r->context + r->comm) * r->fraction : r->budget) / PLAN_GIB, 1));
		return;
	}
	r->gpu_verdict = PLAN_NO_FIT;
	/* The smallest fraction that leaves room for one page of KV, else how many GPUs it needs. */
	double need_frac = (used + (r->has_cell ? r->cell_bytes * 4096 : 0)) / fmax(1, base);
	double per_gpu_room = r->budget - other;
	if (need_frac < 0.99) {
		r->gpu_message = xasprintf("weights %s GiB + overhead %s GiB exceed the %s GiB budget (%s %.2f); "
					   "at least %.2f leaves room for the KV cache",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, other / PLAN_GIB, 1),
					   plan_fmt(b3, r->budget / PLAN_GIB, 1), r->fraction_flag, r->fraction,
					   ceil(need_frac * 100) / 100);
	} else if (per_gpu_room > 0) {
		double need = ceil(in->weights_bytes / per_gpu_room);
		r->gpu_message = xasprintf("weights %s GiB per GPU exceed the %s GiB budget: the model needs at least %.0f GPUs "
					   "of this size",
					   plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, r->budget / PLAN_GIB, 1), need);
	} else {
		r->gpu_message = xasprintf("the overhead %s GiB alone exceeds the %s GiB budget",
					   plan_fmt(b1, other / PLAN_GIB, 1), plan_fmt(b2, r->budget / PLAN_GIB, 1));
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
	if (l->engine == LAUNCH_SGLANG && l->max_total_tokens && t > (double)l->max_total_tokens) {
		/* SGLang caps the pool at --max-total-tokens (model_runner init_memory_pool). */
		t = (double)l->max_total_tokens;
		add_note(r, "--max-total-tokens %ld caps the pool below what the memory allows", l->max_total_tokens);
	}
	r->max_model_len = l->context_len ? l->context_len : in->model ? in->model->max_position : 0;
	uint64_t bpr_avg = 0;   /* vLLM hybrid: blocks a request of avg_tokens reserves */
	if (r->pool_kind == PLAN_POOL_VLLM_HYBRID) {
		/* num_blocks = pool // (page × group size); "GPU KV cache size" = num_blocks // groups ×
		 * block size through vLLM 0.19 (_report_kv_cache_config), max concurrency × max_model_len
		 * since (PR #40694, report_kv_cache_config). */
		int g = r->hy_group_size, ng = r->hy_groups;
		int fg = (r->hy_full + g - 1) / g, sg_ = r->hy_swa ? ng - fg : 0, cg = r->hy_chunked ? ng - fg : 0;
		double batched = vllm_batched_tokens(l, in);
		r->hy_blocks = r->kv_pool > 0 ? (uint64_t)floor(r->kv_pool / (r->layer_bytes * page * g)) : 0;
		t = (double)(r->hy_blocks / (uint64_t)ng * (uint64_t)page);
		if (r->max_model_len > 0) {
			r->hy_blocks_per_req = vllm_blocks_per_request(r, fg, sg_, cg, (uint64_t)r->max_model_len, batched, page);
			r->hy_max_concurrency = r->hy_blocks_per_req ? (double)r->hy_blocks / r->hy_blocks_per_req : 0;
			r->hy_capacity = (uint64_t)(r->hy_max_concurrency * r->max_model_len);
		}
		if (in->avg_tokens > 0)
			bpr_avg = vllm_blocks_per_request(r, fg, sg_, cg, (uint64_t)in->avg_tokens, batched, page);
	} else if (r->pool_kind == PLAN_POOL_SGLANG_SWA) {
		/* set_num_tokens_hybrid_swa: the profiled tokens T (every layer counted) become
		 * T × (F + S) / (F + r × S) full tokens and r × that SWA tokens, each page-aligned. */
		double full = floor(t * (r->hy_full + r->hy_swa) / (r->hy_full + r->swa_ratio * r->hy_swa));
		full = floor(full / page) * page;
		r->swa_tokens = (uint64_t)(floor(floor(full * r->swa_ratio) / page) * page);
		t = full;
	}
	r->tokens = (uint64_t)t;
	r->has_tokens = true;
	r->concurrency = in->avg_tokens > 0 ? r->tokens / (uint64_t)in->avg_tokens : 0;
	if (bpr_avg)
		r->concurrency = r->hy_blocks / bpr_avg;
	if (r->pool_kind == PLAN_POOL_SGLANG_SWA && in->avg_tokens > 0) {
		/* A request keeps SWA slots for its last window tokens only. */
		uint64_t per = (uint64_t)(in->avg_tokens < r->hy_window ? in->avg_tokens : r->hy_window);
		if (per && r->swa_tokens / per < r->concurrency)
			r->concurrency = r->swa_tokens / per;
	}
	if (l->max_running > 0 && r->concurrency > (uint64_t)l->max_running) {
		r->concurrency = (uint64_t)l->max_running;
		r->concurrency_capped = true;
	}
	r->concurrency_total = r->concurrency * (uint64_t)l->dp;
	/* What a configuration buys: the fraction's every hundredth moves total × 0.01 bytes into the pool. */
	r->tokens_per_point = (uint64_t)floor(r->gpu_total * 0.01 / r->cell_bytes);
	/* vLLM refuses to start when one request of max_model_len does not fit (kv_cache_utils.py
	 * check_enough_kv_cache_memory); max_model_len defaults to the model's. SGLang clamps instead. */
	bool refused = r->pool_kind == PLAN_POOL_VLLM_HYBRID ? r->hy_blocks_per_req && r->hy_blocks < r->hy_blocks_per_req
							     : r->tokens && r->tokens < (uint64_t)r->max_model_len;
	if (l->engine == LAUNCH_VLLM && r->max_model_len && r->tokens && refused) {
		r->kv_verdict = PLAN_NO_FIT;
		r->kv_message = xasprintf("%s tokens: vLLM refuses to start, one request of max_model_len %s (%s) does not "
					  "fit; lower --max-model-len to at most %s or raise --gpu-memory-utilization",
					  plan_fmt(b1, (double)r->tokens, 0), plan_fmt(b2, (double)r->max_model_len, 0),
					  l->context_len ? "--max-model-len" : "the model's max_position_embeddings",
					  plan_fmt(b3, (double)r->tokens, 0));
		return;
	}
	if (l->engine == LAUNCH_SGLANG && !l->context_len && r->max_model_len && r->tokens &&
	    r->tokens < (uint64_t)r->max_model_len)
		add_note(r, "SGLang starts anyway: a request longer than the %s-token pool is refused at run time",
			 plan_fmt(b1, (double)r->tokens, 0));
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
		/* V1 (the default since 0.8, the only engine since 0.11) allocates no swap space: it
		 * recomputes preempted requests; V0 pinned this many GiB per GPU. */
		struct plan_host_item *it = add_item(r, "--swap-space", l->swap_space_gib, "per GPU",
						     "KV swap space (allocated by the legacy V0 engine only)", ranks);
		it->known = true;
		it->each_bytes = 0;
		it->max_unit = "GiB per GPU";
		add_note(r, "--swap-space %g is GiB per GPU, but vLLM's V1 engine allocates none of it (counted as 0); "
			    "the legacy V0 engine pinned %g GiB on this node", l->swap_space_gib, l->swap_space_gib * ranks);
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
		add_note(r, "--kv-offloading-size is GiB in total for the engine, %g GiB for each of its tp × pp = %lld "
			    "ranks: the opposite of SGLang's per-rank --hicache-size", l->kv_offload_gib / (double)tp_pp, tp_pp);
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
	if (r->start_refused && r->kv_verdict != PLAN_UNKNOWN) {
		/* Tokens a pool would hold are no comfort when the engine will not start. */
		char *m = xasprintf("vLLM will not start while other processes hold the memory (see GPU memory); with "
				    "it free: %s", r->kv_message);
		free(r->kv_message);
		r->kv_message = m;
		r->kv_verdict = PLAN_NO_FIT;
	}
	plan_host(in, r);
	if (l->engine == LAUNCH_SGLANG && r->has_gpu_total)
		add_note(r, "SGLang's 1 − --mem-fraction-static reserve (%.1f GiB per GPU here) holds activations and "
			    "CUDA graphs", r->reserve / PLAN_GIB);
	if (in->estimate_overhead && r->has_gpu_total)
		add_note(r, "the CUDA context, communication buffers%s are estimates; `gpuwho plan --log` compares with "
			    "what an engine printed", l->engine == LAUNCH_VLLM ? ", the activation peak and CUDA graphs" : "");
	if (in->engine_version)
		add_note(r, "modelled as %s %d.%d.%d", launch_engine_name(l->engine), in->engine_version / 1000000,
			 in->engine_version / 1000 % 1000, in->engine_version % 1000);
	/* vLLM's V1 engine became the default in 0.8 (VLLM_USE_V1=1 chose it before, =0 kept V0 until
	 * 0.11 removed it). V0 profiled differently (worker/worker.py determine_num_available_blocks). */
	if (l->engine == LAUNCH_VLLM && in->engine_version && in->engine_version < 11000 &&
	    (l->has_use_v1 ? !l->use_v1 : in->engine_version < 8000))
		add_note(r, "vLLM 0.%d runs its V0 engine here (V1 is the default from 0.8, VLLM_USE_V1=1 before): plan "
			    "models V1's memory profile, V0's differs", in->engine_version / 1000 % 1000);
	if (!in->has_gpu_used && in->estimate_overhead && r->has_gpu_total)
		add_note(r, "memory held by other processes on these GPUs is unknown (no live NVML): assumed none");
	if (l->speculative && !(in->model && in->model->nextn_layers))
		add_note(r, "speculative decoding: a separate draft model's weights are not counted");
	if (l->quantization)
		add_note(r, "--quantization: weights counted as stored on disk; quantizing at load time changes them");
	if (r->pool_kind == PLAN_POOL_VLLM_HYBRID && r->hy_capacity)
		add_note(r, "vLLM's hybrid pool: %s blocks of %d tokens; a %s-token request reserves %s of them over the %d "
			    "groups, so %.2f such requests fit; vLLM after 0.19 prints that × max_model_len, %s tokens, as its "
			    "\"GPU KV cache size\" (earlier versions print the tokens shown)",
			 plan_fmt((char[40]){0}, (double)r->hy_blocks, 0), l->page_size ? l->page_size : 16,
			 plan_fmt((char[40]){0}, (double)r->max_model_len, 0), plan_fmt((char[40]){0}, (double)r->hy_blocks_per_req, 0),
			 r->hy_groups, r->hy_max_concurrency, plan_fmt((char[40]){0}, (double)r->hy_capacity, 0));
	if (r->pool_kind == PLAN_POOL_SGLANG_SWA)
		add_note(r, "SGLang's SWA pool: %s full-attention tokens (max_total_num_tokens) and %s sliding-window tokens; "
			    "its first \"KV Cache is allocated. #tokens\" line is the SWA pool's", plan_fmt((char[40]){0}, (double)r->tokens, 0),
			 plan_fmt((char[40]){0}, (double)r->swa_tokens, 0));
	if (in->model && in->model->sliding_window && !in->model->layer_source && in->model->model_type &&
	    (!strncmp(in->model->model_type, "mistral", 7) || !strncmp(in->model->model_type, "gemma", 5)))
		add_note(r, "sliding_window %d with no layer types: every layer counted as holding every token",
			 in->model->sliding_window);
	if (in->model && in->model->index_head_dim)
		add_note(r, "DeepSeek-V3.2's indexer keeps %d + %d bytes a token and layer of its own (counted)",
			 in->model->index_head_dim, in->model->index_head_dim / 32);
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
	free(r->hy_formula);
	free(r->kv_message);
	for (size_t i = 0; i < r->nhost; i++) {
		free(r->host[i].value);
		free(r->host[i].message);
	}
	free(r->host);
	free(r->host_message);
	for (int i = 0; i < r->nterms; i++)
		free(r->terms[i].how);
	for (size_t i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	memset(r, 0, sizeof *r);
}
