/* enginelog: read an SGLang or vLLM start-up log's memory lines and compare them with a plan.
 * The lines and where the engines print them:
 *   SGLang model_runner.py: "Init torch distributed ends. mem usage=X GB", "Load weight begin.
 *     avail mem=X GB", "Load weight end. ... mem usage=X GB"; model_runner_kv_cache_mixin.py /
 *     memory_pool.py: "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB" (or "KV size");
 *     scheduler.py: "max_total_num_tokens=N". Its GB is 2^30 bytes (utils get_available_gpu_memory).
 *   vLLM gpu_worker.py determine_available_memory: "Available KV cache memory: X GiB";
 *     gpu_model_runner.py: "Model loading took X GiB"; kv_cache_utils.py: "GPU KV cache size: N
 *     tokens", "# GPU blocks: N"; V0 worker.py: "non_torch_memory takes XGiB; PyTorch activation
 *     peak memory takes YGiB", "total_gpu_memory (XGiB)"; the refusal "...maximum number of tokens
 *     that can be stored in KV cache (N)" / "...available KV cache memory (X GiB)". */
#include "plan/enginelog.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0
/* Longer lines are cut to this for matching: a memory line is short; a 1 GB line is an attack. */
#define LINE_MAX_MATCH 65536

/* The number right after `marker` in line (spaces skipped; thousands commas allowed), within
 * [0, 1e15]. */
static bool num_after(const char *line, const char *marker, double *out)
{
	const char *p = strstr(line, marker);
	if (!p)
		return false;
	p += strlen(marker);
	while (*p == ' ' || *p == '\t')
		p++;
	char buf[48];
	size_t n = 0;
	bool digit = false, dot = false;
	for (; *p && n + 1 < sizeof buf; p++) {
		if (*p >= '0' && *p <= '9') {
			buf[n++] = *p;
			digit = true;
		} else if (*p == ',' && digit && !dot && p[1] >= '0' && p[1] <= '9') {
			continue;
		} else if (*p == '.' && !dot && p[1] >= '0' && p[1] <= '9') {
			buf[n++] = *p;
			dot = true;
		} else {
			break;
		}
	}
	buf[n] = '\0';
	if (!digit)
		return false;
	double v = strtod(buf, NULL);
	if (!isfinite(v) || v < 0 || v > 1e15)
		return false;
	*out = v;
	return true;
}

static void set_once(bool *has, double *dst, double v)
{
	if (!*has) {
		*dst = v;
		*has = true;
	}
}

static void parse_line(const char *s, struct engine_log *lg, bool *sg, bool *vl)
{
	double v, w;
	int before = lg->lines;
	/* SGLang */
	if (strstr(s, "KV Cache is allocated")) {
		*sg = true;
		if (num_after(s, "#tokens:", &v) && !lg->has_tokens) {
			lg->tokens = (uint64_t)v;
			lg->has_tokens = true;
		}
		if (num_after(s, "K size:", &v) && num_after(s, "V size:", &w))
			set_once(&lg->has_kv_bytes, &lg->kv_bytes, (v + w) * GIB);
		else if (num_after(s, "KV size:", &v))
			set_once(&lg->has_kv_bytes, &lg->kv_bytes, v * GIB);
		lg->lines++;
	}
	/* SGLang's SWA pool prints its full pool's tokens (the scheduler's max_total_num_tokens) here;
	 * its first "KV Cache is allocated" line is the SWA pool's. */
	if (num_after(s, "full_layer_tokens=", &v)) {
		*sg = true;
		lg->tokens = (uint64_t)v;
		lg->has_tokens = true;
		if (num_after(s, "swa_layer_tokens=", &w) && !lg->has_swa_tokens) {
			lg->swa_tokens = (uint64_t)w;
			lg->has_swa_tokens = true;
		}
		lg->lines++;
	}
	if (num_after(s, "Maximum concurrency for", &v) && num_after(s, "tokens per request:", &w)) {
		*vl = true;
		if (!lg->has_concurrency) {
			lg->concurrency_len = v;
			lg->concurrency = w;
			lg->has_concurrency = true;
		}
		lg->lines++;
	}
	if (num_after(s, "max_total_num_tokens=", &v)) {
		*sg = true;
		if (!lg->has_tokens) {
			lg->tokens = (uint64_t)v;
			lg->has_tokens = true;
		}
		lg->lines++;
	}
	if (strstr(s, "Load weight end") && num_after(s, "mem usage=", &v)) {
		*sg = true;
		set_once(&lg->has_weights, &lg->weights, v * GIB);
		lg->lines++;
	}
	if (strstr(s, "Load weight begin") && num_after(s, "avail mem=", &v)) {
		*sg = true;
		set_once(&lg->has_free_before, &lg->free_before, v * GIB);
		lg->lines++;
	}
	if (strstr(s, "Init torch distributed ends") && num_after(s, "mem usage=", &v)) {
		*sg = true;
		set_once(&lg->has_comm, &lg->comm, v * GIB);
		lg->lines++;
	}
	/* vLLM */
	if (num_after(s, "GPU KV cache size:", &v)) {
		*vl = true;
		if (!lg->has_tokens || lg->tokens_from_blocks) {
			lg->tokens = (uint64_t)v;
			lg->has_tokens = true;
			lg->tokens_from_blocks = false;
		}
		lg->lines++;
	}
	if (num_after(s, "# GPU blocks:", &v)) {
		*vl = true;
		if (!lg->has_tokens) {
			lg->tokens = (uint64_t)v * 16;   /* the default --block-size; the caller rescales */
			lg->has_tokens = true;
			lg->tokens_from_blocks = true;
		}
		lg->lines++;
	}
	if (num_after(s, "Available KV cache memory:", &v)) {
		*vl = true;
		set_once(&lg->has_kv_bytes, &lg->kv_bytes, v * GIB);
		lg->lines++;
	}
	if ((num_after(s, "Model loading took", &v) || num_after(s, "Loading model weights took", &v))) {
		*vl = true;
		set_once(&lg->has_weights, &lg->weights, v * GIB);
		lg->lines++;
	}
	if (num_after(s, "non_torch_memory takes", &v)) {
		*vl = true;
		set_once(&lg->has_non_torch, &lg->non_torch, v * GIB);
		lg->lines++;
	}
	if (num_after(s, "activation peak memory takes", &v)) {
		*vl = true;
		set_once(&lg->has_activation, &lg->activation, v * GIB);
		lg->lines++;
	}
	if (num_after(s, "Estimated CUDA graph memory:", &v)) {
		*vl = true;
		set_once(&lg->has_cudagraph, &lg->cudagraph, v * GIB);
		lg->lines++;
	}
	if (strstr(s, "CUDA graph memory profiling is disabled")) {
		*vl = true;
		lg->cudagraph_off = true;
		lg->lines++;
	}
	/* "vLLM API server version 0.8.1", "vLLM version 0.21.0", "Initializing a V1 LLM engine (v0.10.0)",
	 * SGLang's "sglang version: 0.5.4" / "sglang==0.5.4". */
	static const char *const vmarks[] = {"server version ", "vLLM version ", "LLM engine (v", "sglang version: ",
					     "sglang==", "vllm==", "SGLang version: "};
	for (size_t k = 0; k < sizeof vmarks / sizeof vmarks[0] && !lg->version; k++) {
		const char *p = strstr(s, vmarks[k]);
		int ver;
		if (p && plan_parse_version(p + strlen(vmarks[k]), &ver))
			lg->version = ver;
	}
	if (num_after(s, "total_gpu_memory (", &v)) {
		*vl = true;
		set_once(&lg->has_total, &lg->total, v * GIB);
		lg->lines++;
	}
	if (num_after(s, "maximum number of tokens that can be stored in KV cache (", &v)) {
		*vl = true;
		lg->refused = true;
		if (!lg->has_tokens || lg->tokens_from_blocks) {
			lg->tokens = (uint64_t)v;
			lg->has_tokens = true;
			lg->tokens_from_blocks = false;
		}
		lg->lines++;
	}
	if (num_after(s, "larger than the available KV cache memory (", &v)) {
		*vl = true;
		lg->refused = true;
		set_once(&lg->has_kv_bytes, &lg->kv_bytes, v * GIB);
		lg->lines++;
	}
	(void)before;
}

int engine_log_parse(const char *text, size_t len, struct engine_log *lg, char **err)
{
	memset(lg, 0, sizeof *lg);
	*err = NULL;
	bool sg = false, vl = false;
	char *line = xmalloc(LINE_MAX_MATCH + 1);
	size_t i = 0;
	while (i < len) {
		size_t n = 0;
		/* Copy one line (up to LINE_MAX_MATCH bytes of it), NULs made spaces so that string
		 * functions see all of it. */
		while (i < len && text[i] != '\n') {
			if (n < LINE_MAX_MATCH)
				line[n++] = text[i] ? text[i] : ' ';
			i++;
		}
		i++;   /* past the newline */
		line[n] = '\0';
		parse_line(line, lg, &sg, &vl);
	}
	free(line);
	lg->engine = sg && !vl ? LAUNCH_SGLANG : vl && !sg ? LAUNCH_VLLM : sg ? LAUNCH_SGLANG : LAUNCH_UNKNOWN;
	if (!lg->has_tokens && !lg->has_kv_bytes) {
		*err = xstrdup("no SGLang or vLLM KV-cache line found (\"KV Cache is allocated. #tokens: N\", "
			       "\"max_total_num_tokens=N\", \"GPU KV cache size: N tokens\", \"Available KV cache memory: X GiB\")");
		return -EINVAL;
	}
	return 0;
}

static struct log_row *row(struct log_compare *c, const char *key, const char *what)
{
	if (c->nrows >= (int)(sizeof c->rows / sizeof c->rows[0]))
		return NULL;
	struct log_row *r = &c->rows[c->nrows++];
	memset(r, 0, sizeof *r);
	r->key = key;
	r->what = what;
	return r;
}

static void fill(struct log_row *w, bool hp, double p, bool hl, double l)
{
	if (!w)
		return;
	w->has_predicted = hp;
	w->predicted = p;
	w->has_logged = hl;
	w->logged = l;
	if (hp && hl && l > 0)
		w->error = (p - l) / l;
}

void engine_log_compare(const struct engine_log *lg, const struct plan_result *r, struct log_compare *c)
{
	memset(c, 0, sizeof *c);
	/* vLLM's hybrid pool: after 0.19 its "GPU KV cache size" is max concurrency × max_model_len
	 * (it then equals the printed concurrency line's product); before, blocks // groups × block. */
	double predicted = (double)r->tokens;
	const char *what = "KV tokens per rank";
	if (r->pool_kind == PLAN_POOL_VLLM_HYBRID && lg->has_concurrency && lg->has_tokens && r->hy_capacity &&
	    fabs((double)lg->tokens - lg->concurrency * lg->concurrency_len) <= 0.006 * lg->concurrency_len + 1) {
		predicted = (double)r->hy_capacity;
		what = "KV tokens per rank (max concurrency × max_model_len)";
	} else if (r->pool_kind == PLAN_POOL_SGLANG_SWA) {
		what = "KV tokens per rank (full-attention pool)";
	}
	fill(row(c, "tokens", what), r->has_tokens, predicted, lg->has_tokens, (double)lg->tokens);
	/* A log that prints only the token count still states the pool: tokens × bytes a token. */
	bool derived = !lg->has_kv_bytes && lg->has_tokens && r->has_cell;
	fill(row(c, "kv_pool", derived ? "KV pool (from the tokens)" : "KV pool per GPU"), r->has_kv_pool,
	     r->kv_pool, lg->has_kv_bytes || derived, lg->has_kv_bytes ? lg->kv_bytes : (double)lg->tokens * r->cell_bytes);
	fill(row(c, "weights", "weights per GPU"), r->has_weights, r->weights_per_gpu, lg->has_weights, lg->weights);
	if (lg->has_swa_tokens)
		fill(row(c, "swa_tokens", "SWA pool tokens per rank"), r->pool_kind == PLAN_POOL_SGLANG_SWA, (double)r->swa_tokens,
		     true, (double)lg->swa_tokens);
	if (lg->has_concurrency && r->pool_kind == PLAN_POOL_VLLM_HYBRID && r->hy_blocks_per_req &&
	    (double)r->max_model_len == lg->concurrency_len)
		fill(row(c, "concurrency", "max concurrency at max_model_len"), true, r->hy_max_concurrency, true, lg->concurrency);
	if (lg->engine == LAUNCH_VLLM || (lg->engine == LAUNCH_UNKNOWN && r->activation > 0)) {
		if (lg->has_total)
			fill(row(c, "cuda_total", "GPU total (CUDA)"), r->has_gpu_total, r->cuda_total, true, lg->total);
		if (lg->has_activation)
			fill(row(c, "activation", "activation peak"), true, r->activation, true, lg->activation);
		if (lg->has_non_torch)
			fill(row(c, "non_torch", "non-torch memory"), true, r->comm, true, lg->non_torch);
		if (lg->has_cudagraph)
			fill(row(c, "cudagraph", "CUDA graphs (profiled)"), true, r->cudagraph, true, lg->cudagraph);
	} else {
		if (lg->has_free_before)
			fill(row(c, "free_at_start", "free at start (SGLang base)"), r->has_gpu_total,
			     r->cuda_total - r->context - r->comm, true, lg->free_before);
		if (lg->has_comm)
			fill(row(c, "comm", "NCCL / all-reduce at start"), true, r->comm, true, lg->comm);
	}
	const struct log_row *t = &c->rows[0];
	c->has_error = t->has_predicted && t->has_logged && t->logged > 0;
	c->error = t->error;
	/* Which known term moves the pool most: each byte of a term is a byte of pool (SGLang's
	 * pre-measure terms count × the fraction). */
	const struct log_row *worst = NULL;
	double wpool = 0;   /* what the worst term's difference does to the pool */
	for (int i = 1; i < c->nrows; i++) {
		const struct log_row *w = &c->rows[i];
		if (!w->has_predicted || !w->has_logged || !strcmp(w->key, "kv_pool") || !strcmp(w->key, "swa_tokens") ||
		    !strcmp(w->key, "concurrency"))
			continue;
		double d = w->predicted - w->logged;
		/* More memory free at start means more pool (× the fraction for SGLang); more of any
		 * other term means less. */
		double pool = !strcmp(w->key, "free_at_start") || !strcmp(w->key, "cuda_total") ? d * r->fraction : -d;
		if (fabs(pool) > fabs(wpool)) {
			wpool = pool;
			worst = w;
		}
	}
	const struct log_row *k = &c->rows[1];
	if (worst && k->has_predicted && k->has_logged)
		c->summary = xasprintf("the pool is %+.2f GiB off; the largest term difference is %s, predicted %.2f GiB %s "
				       "than printed (%+.2f GiB of pool)", (k->predicted - k->logged) / GIB, worst->what,
				       fabs(worst->predicted - worst->logged) / GIB,
				       worst->predicted > worst->logged ? "higher" : "lower", wpool / GIB);
	else if (k->has_predicted && k->has_logged)
		c->summary = xasprintf("the pool is %+.2f GiB off; the log states no term that explains it",
				       (k->predicted - k->logged) / GIB);
	else
		c->summary = xstrdup("the log gives no pool size to compare");
}

void log_compare_free(struct log_compare *c)
{
	if (!c)
		return;
	free(c->summary);
	memset(c, 0, sizeof *c);
}
