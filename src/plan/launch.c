/* launch: parse an SGLang or vLLM launch command line (without running it) into the facts that
 * decide its memory use: parallelism, memory fraction, KV dtype, host-memory flags. */
#include "plan/launch.h"
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

enum { SG = 1, VL = 2, BOTH = 3 };

/* How a flag's value is read. */
enum fkind {
	F_STR,      /* any text */
	F_INT,      /* a whole number within the field's range */
	F_LEN,      /* a token count; vLLM also takes 32k (×1000) and 32K (×1024) */
	F_FRAC,     /* a fraction in (0, 1] */
	F_SIZE,     /* a non-negative amount (GB or GiB, see the field) */
	F_RATIO,    /* a positive ratio */
	F_BOOL,     /* no value; --no-NAME clears it (vLLM's BooleanOptionalAction) */
	F_SKIP,     /* known, irrelevant to memory, takes a value */
	F_SKIPB,    /* known, irrelevant to memory, takes no value */
};

enum field {
	X_NONE, X_MODEL, X_REVISION, X_TP, X_DP, X_PP, X_EP, X_NNODES, X_DP_LOCAL, X_DP_ATTN, X_EXPERT_PAR,
	X_BASE_GPU, X_GPU_STEP, X_MEMFRAC, X_KV_DTYPE, X_DTYPE, X_PAGE, X_CTX, X_MAXRUN, X_HICACHE,
	X_HICACHE_SIZE, X_HICACHE_RATIO, X_SWAP, X_CPU_OFFLOAD, X_KV_OFFLOAD, X_SPEC, X_QUANT,
	X_SPEC_ALGO, X_SPEC_CONFIG, X_MAX_TOTAL, X_KV_MEM, X_CHUNKED, X_MAX_PREFILL, X_MAX_BATCHED, X_GRAPH_BS,
	X_NO_GRAPH, X_CONFIG, X_HYBRID_KV, X_KV_TRANSFER, X_NO_HYBRID_SWA, X_SWA_RATIO, X_ATTN_BACKEND,
	X_NFIELDS
};

struct flagdef {
	const char *name;
	unsigned engines;
	enum fkind kind;
	enum field field;
};

/* Names from `python -m sglang.launch_server --help` (server_args.py) and `vllm serve --help`
 * (engine/arg_utils.py). Aliases are separate rows. */
static const struct flagdef flags[] = {
	{"--model-path", SG, F_STR, X_MODEL},
	{"--model", BOTH, F_STR, X_MODEL},
	{"--revision", BOTH, F_STR, X_REVISION},
	{"--tp-size", SG, F_INT, X_TP},
	{"--tp", SG, F_INT, X_TP},
	{"--tensor-parallel-size", BOTH, F_INT, X_TP},
	{"-tp", VL, F_INT, X_TP},
	{"--dp-size", SG, F_INT, X_DP},
	{"--dp", SG, F_INT, X_DP},
	{"--data-parallel-size", BOTH, F_INT, X_DP},
	{"-dp", VL, F_INT, X_DP},
	{"--pp-size", SG, F_INT, X_PP},
	{"--pp", SG, F_INT, X_PP},
	{"--pipeline-parallel-size", BOTH, F_INT, X_PP},
	{"-pp", VL, F_INT, X_PP},
	{"--ep-size", SG, F_INT, X_EP},
	{"--ep", SG, F_INT, X_EP},
	{"--expert-parallel-size", SG, F_INT, X_EP},
	{"--nnodes", SG, F_INT, X_NNODES},
	{"--data-parallel-size-local", VL, F_INT, X_DP_LOCAL},
	{"-dpl", VL, F_INT, X_DP_LOCAL},
	{"--enable-dp-attention", SG, F_BOOL, X_DP_ATTN},
	{"--enable-expert-parallel", VL, F_BOOL, X_EXPERT_PAR},
	{"--base-gpu-id", SG, F_INT, X_BASE_GPU},
	{"--gpu-id-step", SG, F_INT, X_GPU_STEP},
	{"--mem-fraction-static", SG, F_FRAC, X_MEMFRAC},
	{"--gpu-memory-utilization", VL, F_FRAC, X_MEMFRAC},
	{"--kv-cache-dtype", BOTH, F_STR, X_KV_DTYPE},
	{"--dtype", BOTH, F_STR, X_DTYPE},
	{"--page-size", SG, F_INT, X_PAGE},
	{"--block-size", VL, F_INT, X_PAGE},
	{"--context-length", SG, F_LEN, X_CTX},
	{"--max-model-len", VL, F_LEN, X_CTX},
	{"--max-running-requests", SG, F_INT, X_MAXRUN},
	{"--max-num-seqs", VL, F_INT, X_MAXRUN},
	{"--enable-hierarchical-cache", SG, F_BOOL, X_HICACHE},
	{"--hicache-size", SG, F_SIZE, X_HICACHE_SIZE},
	{"--hicache-ratio", SG, F_RATIO, X_HICACHE_RATIO},
	{"--swap-space", VL, F_SIZE, X_SWAP},
	{"--cpu-offload-gb", BOTH, F_SIZE, X_CPU_OFFLOAD},
	{"--kv-offloading-size", VL, F_SIZE, X_KV_OFFLOAD},
	{"--speculative-algorithm", SG, F_STR, X_SPEC_ALGO},
	{"--speculative-algo", SG, F_STR, X_SPEC_ALGO},
	{"--speculative-draft-model-path", SG, F_STR, X_SPEC},
	{"--speculative-draft-model", SG, F_STR, X_SPEC},
	{"--speculative-num-steps", SG, F_SKIP, X_NONE},
	{"--speculative-eagle-topk", SG, F_SKIP, X_NONE},
	{"--speculative-num-draft-tokens", SG, F_SKIP, X_NONE},
	{"--speculative-config", VL, F_STR, X_SPEC_CONFIG},
	{"-sc", VL, F_STR, X_SPEC_CONFIG},
	{"--max-total-tokens", SG, F_INT, X_MAX_TOTAL},
	{"--kv-cache-memory", VL, F_STR, X_KV_MEM},
	{"--kv-cache-memory-bytes", VL, F_STR, X_KV_MEM},
	{"--chunked-prefill-size", SG, F_STR, X_CHUNKED},
	{"--max-prefill-tokens", SG, F_INT, X_MAX_PREFILL},
	{"--max-num-batched-tokens", VL, F_LEN, X_MAX_BATCHED},
	{"--cuda-graph-max-bs", SG, F_INT, X_GRAPH_BS},
	{"--disable-cuda-graph", SG, F_BOOL, X_NO_GRAPH},
	{"--enforce-eager", VL, F_BOOL, X_NO_GRAPH},
	{"--config", BOTH, F_STR, X_CONFIG},
	{"--speculative-model", VL, F_STR, X_SPEC},
	{"--quantization", BOTH, F_STR, X_QUANT},
	{"-q", VL, F_STR, X_QUANT},
	/* Known and irrelevant to memory: accepted silently so the notes stay about what matters. */
	{"--host", BOTH, F_SKIP, X_NONE},
	{"--port", BOTH, F_SKIP, X_NONE},
	{"--served-model-name", BOTH, F_SKIP, X_NONE},
	{"--tokenizer", VL, F_SKIP, X_NONE},
	{"--tokenizer-path", SG, F_SKIP, X_NONE},
	{"--tokenizer-mode", BOTH, F_SKIP, X_NONE},
	{"--chat-template", BOTH, F_SKIP, X_NONE},
	{"--api-key", BOTH, F_SKIP, X_NONE},
	{"--log-level", SG, F_SKIP, X_NONE},
	{"--uvicorn-log-level", VL, F_SKIP, X_NONE},
	{"--reasoning-parser", BOTH, F_SKIP, X_NONE},
	{"--tool-call-parser", BOTH, F_SKIP, X_NONE},
	{"--load-format", BOTH, F_SKIP, X_NONE},
	{"--download-dir", BOTH, F_SKIP, X_NONE},
	{"--attention-backend", SG, F_STR, X_ATTN_BACKEND},
	{"--disable-hybrid-swa-memory", SG, F_BOOL, X_NO_HYBRID_SWA},
	{"--swa-full-tokens-ratio", SG, F_FRAC, X_SWA_RATIO},
	{"--seed", BOTH, F_SKIP, X_NONE},
	{"--dist-init-addr", SG, F_SKIP, X_NONE},
	{"--node-rank", SG, F_SKIP, X_NONE},
	{"--hicache-write-policy", SG, F_SKIP, X_NONE},
	{"--hicache-io-backend", SG, F_SKIP, X_NONE},
	{"--hicache-mem-layout", SG, F_SKIP, X_NONE},
	{"--hicache-storage-backend", SG, F_SKIP, X_NONE},
	{"--kv-offloading-backend", VL, F_SKIP, X_NONE},
	{"--schedule-policy", SG, F_SKIP, X_NONE},
	{"--trust-remote-code", BOTH, F_SKIPB, X_NONE},
	{"--disable-radix-cache", SG, F_SKIPB, X_NONE},
	{"--enable-prefix-caching", VL, F_SKIPB, X_NONE},
	{"--no-enable-prefix-caching", VL, F_SKIPB, X_NONE},
	{"--enable-chunked-prefill", VL, F_SKIPB, X_NONE},
	{"--disable-log-requests", VL, F_SKIPB, X_NONE},
	{"--disable-log-stats", VL, F_SKIPB, X_NONE},
	{"--enable-metrics", SG, F_SKIPB, X_NONE},
	{"--skip-tokenizer-init", BOTH, F_SKIPB, X_NONE},
	{"--enable-torch-compile", SG, F_SKIPB, X_NONE},
	{"--enable-mixed-chunk", SG, F_SKIPB, X_NONE},
	{"--disable-custom-all-reduce", BOTH, F_SKIPB, X_NONE},
	{"--enable-auto-tool-choice", VL, F_SKIPB, X_NONE},
	{"--enable-lora", BOTH, F_SKIPB, X_NONE},
	{"--disable-hybrid-kv-cache-manager", VL, F_BOOL, X_HYBRID_KV},
	{"--enable-cache-report", SG, F_SKIPB, X_NONE},
	{"--enable-p2p-check", SG, F_SKIPB, X_NONE},
	/* More that people paste, none of which moves memory plan models. */
	{"--max-log-len", VL, F_SKIP, X_NONE},
	{"--distributed-executor-backend", VL, F_SKIP, X_NONE},
	{"--generation-config", VL, F_SKIP, X_NONE},
	{"--limit-mm-per-prompt", VL, F_SKIP, X_NONE},
	{"--mm-processor-kwargs", VL, F_SKIP, X_NONE},
	{"--compilation-config", VL, F_SKIP, X_NONE},
	{"-O", VL, F_SKIP, X_NONE},
	{"--kv-transfer-config", VL, F_STR, X_KV_TRANSFER},
	{"--hf-overrides", VL, F_SKIP, X_NONE},
	{"--override-generation-config", VL, F_SKIP, X_NONE},
	{"--tokenizer-pool-size", VL, F_SKIP, X_NONE},
	{"--ssl-keyfile", VL, F_SKIP, X_NONE},
	{"--ssl-certfile", VL, F_SKIP, X_NONE},
	{"--uds", VL, F_SKIP, X_NONE},
	{"--moe-backend", VL, F_SKIP, X_NONE},
	{"--max-seq-len-to-capture", VL, F_SKIP, X_NONE},
	{"--enable-sleep-mode", VL, F_SKIPB, X_NONE},
	{"--async-scheduling", VL, F_SKIPB, X_NONE},
	{"--disable-uvicorn-access-log", VL, F_SKIPB, X_NONE},
	{"--enable-reasoning", VL, F_SKIPB, X_NONE},
	{"--moe-runner-backend", SG, F_SKIP, X_NONE},
	{"--moe-a2a-backend", SG, F_SKIP, X_NONE},
	{"--deepep-mode", SG, F_SKIP, X_NONE},
	{"--sampling-backend", SG, F_SKIP, X_NONE},
	{"--grammar-backend", SG, F_SKIP, X_NONE},
	{"--prefill-attention-backend", SG, F_SKIP, X_NONE},
	{"--decode-attention-backend", SG, F_SKIP, X_NONE},
	{"--torch-compile-max-bs", SG, F_SKIP, X_NONE},
	{"--cuda-graph-bs", SG, F_SKIP, X_NONE},
	{"--num-continuous-decode-steps", SG, F_SKIP, X_NONE},
	{"--watchdog-timeout", SG, F_SKIP, X_NONE},
	{"--random-seed", SG, F_SKIP, X_NONE},
	{"--disaggregation-mode", SG, F_SKIP, X_NONE},
	{"--disaggregation-transfer-backend", SG, F_SKIP, X_NONE},
	{"--ep-num-redundant-experts", SG, F_SKIP, X_NONE},
	{"--moe-dense-tp-size", SG, F_SKIP, X_NONE},
	{"--router-policy", SG, F_SKIP, X_NONE},
	{"--router-port", SG, F_SKIP, X_NONE},
	{"--enable-dp-lm-head", SG, F_SKIPB, X_NONE},
	{"--enable-two-batch-overlap", SG, F_SKIPB, X_NONE},
	{"--enable-eplb", SG, F_SKIPB, X_NONE},
	{"--enable-deepep-moe", SG, F_SKIPB, X_NONE},
	{"--disable-overlap-schedule", SG, F_SKIPB, X_NONE},
	{"--enable-flashinfer-allreduce-fusion", SG, F_SKIPB, X_NONE},
	{"--enable-piecewise-cuda-graph", SG, F_SKIPB, X_NONE},
	{"--enforce-piecewise-cuda-graph", SG, F_SKIPB, X_NONE},
	{"--piecewise-cuda-graph-max-tokens", SG, F_SKIP, X_NONE},
	{"--disable-cuda-graph-padding", SG, F_SKIPB, X_NONE},
	{"--show-time-cost", SG, F_SKIPB, X_NONE},
	{"--enable-ep-moe", SG, F_SKIPB, X_NONE},
	{"--log-requests", SG, F_SKIPB, X_NONE},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

/* Values above these are absurd, not merely large: refusing them keeps the arithmetic finite. */
#define MAX_PARALLEL 65536
#define MAX_SIZE 1e6          /* GB or GiB per rank/GPU: a petabyte */
#define MAX_RATIO 1e4
#define MAX_TOKENS 1000000000L
/* The most GPUs one launch may take, all ranks on all nodes together: each size alone is bounded by
 * MAX_PARALLEL, and a product of them above this is a typo. It keeps every product of the sizes
 * (the GPU count, the ranks on a node) within an int. */
#define MAX_GPUS 65536

const char *launch_engine_name(enum launch_engine e)
{
	return e == LAUNCH_SGLANG ? "SGLang" : e == LAUNCH_VLLM ? "vLLM" : "unknown";
}

static int fail(struct launch *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct launch *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(l->error);
	l->error = xvasprintf(fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void add_str(char ***arr, size_t *n, const char *s)
{
	*arr = xrealloc(*arr, (*n + 1) * sizeof **arr);
	(*arr)[(*n)++] = xstrdup(s);
}

static void note(struct launch *l, const char *s)
{
	for (size_t i = 0; i < l->nnotes; i++)
		if (!strcmp(l->notes[i], s))
			return;
	add_str(&l->notes, &l->nnotes, s);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* strtod without its surprises: no hex, no inf/nan, no leading space, the whole string. Returns 0,
 * -EINVAL (not a number), or -ERANGE for a number a double cannot hold, with *out strtod's answer:
 * ±HUGE_VAL for one too large, a denormal or ±0 for one too small (1e-320, 1e-400). */
static int parse_number(const char *s, double *out)
{
	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (!strchr("0123456789+-.eE", *p))
			return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || end == s || isnan(v))
		return -EINVAL;
	*out = v;
	return errno == ERANGE ? -ERANGE : 0;
}

/* Underflow: strtod could only give a denormal or zero for it. */
static bool too_small(int rc, double d)
{
	return rc == -ERANGE && fabs(d) < 1;
}

static int read_int(struct launch *l, const char *flag, const char *v, long min, long max, long *out)
{
	double d;
	int rc = parse_number(v, &d);
	if (rc == -EINVAL || too_small(rc, d) || d != floor(d))
		return fail(l, "%s %s: not a whole number", flag, v);
	if (d < (double)min || d > (double)max)
		return fail(l, "%s %s: out of range (%ld to %ld)", flag, v, min, max);
	*out = (long)d;
	return 0;
}

/* vLLM's --max-model-len takes 32k (× 1000), 32K (× 1024), 1m, 1M; SGLang a plain number. */
static int read_len(struct launch *l, const char *flag, const char *v, long *out)
{
	size_t n = strlen(v);
	double mult = 1;
	char *num = xstrdup(v);
	if (l->engine == LAUNCH_VLLM && n > 1 && strchr("kKmMgG", v[n - 1])) {
		char c = v[n - 1];
		mult = c == 'k' ? 1e3 : c == 'K' ? 1024 : c == 'm' ? 1e6 : c == 'M' ? 1048576.0 : c == 'g' ? 1e9 : 1073741824.0;
		num[n - 1] = '\0';
	}
	double d;
	int r = 0, rc = parse_number(num, &d);
	if (rc == -EINVAL || too_small(rc, d) || d * mult != floor(d * mult))
		r = fail(l, "%s %s: not a token count", flag, v);
	else if (d * mult < 1 || d * mult > (double)MAX_TOKENS)
		r = fail(l, "%s %s: out of range (1 to %ld tokens)", flag, v, MAX_TOKENS);
	else
		*out = (long)(d * mult);
	free(num);
	return r;
}

static int read_double(struct launch *l, const struct flagdef *f, const char *v, double *out)
{
	double d;
	int rc = parse_number(v, &d);
	if (rc == -EINVAL)
		return fail(l, "%s %s: not a number", f->name, v);
	/* A value a double holds only as a denormal or zero is no setting anyone meant; one too large
	 * (±HUGE_VAL) falls to the bounds below. */
	if (too_small(rc, d)) {
		char range[64];
		if (f->kind == F_FRAC)
			snprintf(range, sizeof range, "a fraction above 0 and at most 1");
		else if (f->kind == F_RATIO)
			snprintf(range, sizeof range, "above 0 and at most %g", MAX_RATIO);
		else
			snprintf(range, sizeof range, "0 to 1,000,000");   /* MAX_SIZE */
		return fail(l, "%s %s: out of range, too small to be real (%s)", f->name, v, range);
	}
	switch (f->kind) {
	case F_FRAC:
		if (d <= 0 || d > 1)
			return fail(l, "%s %s: a fraction must be above 0 and at most 1", f->name, v);
		break;
	case F_RATIO:
		if (d <= 0)
			return fail(l, "%s %s: must be above 0", f->name, v);
		if (d > MAX_RATIO)
			return fail(l, "%s %s: absurd (above %g)", f->name, v, MAX_RATIO);
		break;
	default:
		if (d < 0)
			return fail(l, "%s %s: must not be negative", f->name, v);
		if (d > MAX_SIZE)
			return fail(l, "%s %s: absurd (above 1,000,000 GB)", f->name, v);
		break;
	}
	*out = d;
	return 0;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

/* Stores one recognised flag's value. */
static int apply(struct launch *l, const struct flagdef *f, const char *v, bool negated)
{
	long n = 0;
	double d = 0;
	int r = 0;
	if (f->kind == F_BOOL) {
		if (f->field == X_DP_ATTN)
			l->dp_attention = !negated;
		else if (f->field == X_EXPERT_PAR)
			l->expert_parallel = !negated;
		else if (f->field == X_HICACHE)
			l->hicache = !negated;
		else if (f->field == X_NO_GRAPH)
			l->no_cuda_graph = !negated;
		else if (f->field == X_HYBRID_KV)
			l->hybrid_kv_manager = negated ? 1 : -1;
		else if (f->field == X_NO_HYBRID_SWA)
			l->disable_hybrid_swa = !negated;
		return 0;
	}
	if (f->kind == F_INT) {
		long min = 1, max = MAX_PARALLEL;
		if (f->field == X_BASE_GPU)
			min = 0;
		if (f->field == X_MAXRUN || f->field == X_MAX_TOTAL || f->field == X_MAX_PREFILL)
			max = MAX_TOKENS;
		if (f->field == X_PAGE)
			max = 1 << 20;
		r = read_int(l, f->name, v, min, max, &n);
	} else if (f->kind == F_LEN) {
		r = read_len(l, f->name, v, &n);
	} else if (f->kind == F_FRAC || f->kind == F_SIZE || f->kind == F_RATIO) {
		r = read_double(l, f, v, &d);
	}
	if (r)
		return r;
	switch (f->field) {
	case X_MODEL: set_str(&l->model, v); break;
	case X_REVISION: set_str(&l->revision, v); break;
	case X_TP: l->tp = (int)n; break;
	case X_DP: l->dp = (int)n; break;
	case X_PP: l->pp = (int)n; break;
	case X_EP: l->ep = (int)n; break;
	case X_NNODES: l->nnodes = (int)n; break;
	case X_DP_LOCAL: l->dp_local = (int)n; break;
	case X_BASE_GPU: l->base_gpu_id = (int)n; break;
	case X_GPU_STEP: l->gpu_id_step = (int)n; break;
	case X_MEMFRAC: l->mem_fraction = d, l->has_mem_fraction = true; break;
	case X_KV_DTYPE: set_str(&l->kv_dtype, v); break;
	case X_DTYPE: set_str(&l->dtype, v); break;
	case X_PAGE: l->page_size = (int)n; break;
	case X_CTX: l->context_len = n; break;
	case X_MAXRUN: l->max_running = n; break;
	case X_HICACHE_SIZE:
		/* SGLang declares it int: 37.5 would be refused at launch, so refuse it here too. */
		if (d != floor(d))
			return fail(l, "%s %s: SGLang takes a whole number of GB", f->name, v);
		l->hicache_size_gb = d, l->has_hicache_size = true;
		break;
	case X_HICACHE_RATIO: l->hicache_ratio = d, l->has_hicache_ratio = true; break;
	case X_SWAP: l->swap_space_gib = d, l->has_swap_space = true; break;
	case X_CPU_OFFLOAD: l->cpu_offload_gib = d, l->has_cpu_offload = true; break;
	case X_KV_OFFLOAD: l->kv_offload_gib = d, l->has_kv_offload = true; break;
	case X_SPEC: l->speculative = true; break;
	case X_SPEC_ALGO:
		l->speculative = true;
		set_str(&l->spec_algo, v);
		break;
	case X_SPEC_CONFIG: {
		/* A JSON object; only its "method" matters here (mtp, eagle, eagle3, ngram, ...). */
		l->speculative = true;
		const char *m = strstr(v, "\"method\"");
		if (m && (m = strchr(m + 8, '"'))) {
			size_t n = strcspn(m + 1, "\"");
			free(l->spec_algo);
			l->spec_algo = xstrndup(m + 1, n);
		}
		break;
	}
	case X_MAX_TOTAL: l->max_total_tokens = n; break;
	case X_MAX_PREFILL: l->max_prefill = n; break;
	case X_MAX_BATCHED: l->max_batched = n; break;
	case X_GRAPH_BS: l->cuda_graph_max_bs = (int)n; break;
	case X_CHUNKED: {
		double c;
		if (parse_number(v, &c) || c != floor(c) || c < -1 || c > (double)MAX_TOKENS || c == 0)
			return fail(l, "%s %s: a token count, or -1 to disable", f->name, v);
		l->chunked_prefill = (long)c;
		break;
	}
	case X_KV_MEM: {
		/* vLLM reads it as bytes, with an optional k/K/m/M/g/G suffix (1000s and 1024s). */
		size_t len = strlen(v);
		double mult = 1, c;
		char *num = xstrdup(v);
		if (len > 1 && strchr("kKmMgGtT", v[len - 1])) {
			char u = v[len - 1];
			mult = u == 'k' ? 1e3 : u == 'K' ? 1024.0 : u == 'm' ? 1e6 : u == 'M' ? 1048576.0 : u == 'g' ? 1e9
			     : u == 'G' ? 1073741824.0 : u == 't' ? 1e12 : 1099511627776.0;
			num[len - 1] = '\0';
		}
		int bad = parse_number(num, &c) || c < 0 || c * mult > 1e15;
		free(num);
		if (bad)
			return fail(l, "%s %s: a size in bytes (optionally with k, M, G)", f->name, v);
		l->kv_cache_memory = c * mult;
		l->has_kv_cache_memory = true;
		break;
	}
	case X_CONFIG: set_str(&l->config_file, v); break;
	case X_QUANT: l->quantization = true; break;
	case X_KV_TRANSFER: l->kv_transfer = true; break;
	case X_SWA_RATIO: l->swa_full_ratio = d, l->has_swa_full_ratio = true; break;
	case X_ATTN_BACKEND: set_str(&l->attention_backend, v); break;
	default: break;
	}
	return 0;
}

/* "-x" with a letter, or "--x": what argparse would take for an option rather than a value. */
static bool looks_like_flag(const char *s)
{
	return s[0] == '-' && (s[1] == '-' || isalpha((unsigned char)s[1]));
}

static const struct flagdef *find_exact(const char *name, size_t len, unsigned bit, bool *negated)
{
	*negated = false;
	for (size_t i = 0; i < NFLAGS; i++)
		if ((flags[i].engines & bit) && strlen(flags[i].name) == len && !strncmp(flags[i].name, name, len))
			return &flags[i];
	/* vLLM's boolean options also come as --no-NAME. */
	if (len > 5 && !strncmp(name, "--no-", 5)) {
		for (size_t i = 0; i < NFLAGS; i++)
			if ((flags[i].engines & bit) && flags[i].kind == F_BOOL && strlen(flags[i].name) == len - 3 &&
			    !strncmp(flags[i].name + 2, name + 5, len - 5)) {
				*negated = true;
				return &flags[i];
			}
	}
	return NULL;
}

/* A flag as the engine's argparse finds it: exactly; for vLLM also with underscores for dashes
 * (FlexibleArgumentParser rewrites --tensor_parallel_size); and, as argparse's allow_abbrev does,
 * by a prefix that only one known flag starts with (*abbrev set: the caller says so). */
static const struct flagdef *find_flag(const char *name, size_t len, enum launch_engine e, bool *negated,
				       bool *abbrev)
{
	unsigned bit = e == LAUNCH_SGLANG ? SG : VL;
	*abbrev = false;
	char buf[128];
	if (len >= sizeof buf)
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (e == LAUNCH_VLLM && len > 2 && buf[0] == '-' && buf[1] == '-')
		for (size_t k = 2; k < len; k++)
			if (buf[k] == '_')
				buf[k] = '-';
	const struct flagdef *f = find_exact(buf, len, bit, negated);
	if (f || len < 5 || buf[1] != '-')
		return f;
	const struct flagdef *hit = NULL;
	for (size_t i = 0; i < NFLAGS; i++) {
		if (!(flags[i].engines & bit) || strlen(flags[i].name) <= len || strncmp(flags[i].name, buf, len))
			continue;
		/* Aliases of one setting (--tp, --tp-size) are one choice, not an ambiguity. */
		if (hit && hit->field != flags[i].field)
			return NULL;
		if (!hit || hit->kind == F_SKIP || hit->kind == F_SKIPB)
			hit = &flags[i];
	}
	if (hit)
		*abbrev = true;
	return hit;
}

static bool is_assignment(const char *s)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s; p < eq; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

static bool is_python(const char *prog)
{
	return str_starts(prog, "python") || str_starts(prog, "pypy");
}

/* The words being parsed: the caller's argv, or a copy into which env -S spliced the words of its
 * string (those are owned here, and freed with the copy). */
struct words {
	char **v;
	int n;
	char **owned;
	size_t nowned;
};

static void set_cuda_visible(struct launch *l, const char *v)
{
	free(l->cuda_visible);
	l->cuda_visible = v ? xstrdup(v) : NULL;
	l->has_cuda_visible = true;   /* NULL: env -u or -i left the launch without it */
}

/* Replaces w->v[at .. at+drop) by the words of env -S's string, split at blanks as GNU env does. Its
 * quoting, escapes, ${VAR} and comments are not reproduced: a string using them is refused. */
static int env_split(struct launch *l, struct words *w, int at, int drop, const char *str)
{
	if (strpbrk(str, "'\"\\$")) {
		return fail(l, "env -S '%s': quotes, backslash escapes and ${VAR} in the string are not understood; "
			       "give the words separately", str);
	}
	char **add = NULL;
	size_t nadd = 0;
	for (const char *p = str; *p;) {
		size_t blank = strspn(p, " \t\n\v\f\r");
		p += blank;
		size_t len = strcspn(p, " \t\n\v\f\r");
		if (!len)
			break;
		if (*p == '#')
			break;   /* GNU env -S: a word starting with # begins a comment */
		add = xrealloc(add, (nadd + 1) * sizeof *add);
		add[nadd++] = xstrndup(p, len);
		p += len;
	}
	if ((size_t)w->n - drop + nadd > INT_MAX - 1) {
		for (size_t k = 0; k < nadd; k++)
			free(add[k]);
		free(add);
		return fail(l, "env -S: too many words");
	}
	int n = w->n - drop + (int)nadd;
	char **v = xcalloc((size_t)n + 1, sizeof *v);
	/* memcpy from NULL is undefined even for 0 bytes (env -S "" gives no words: found by fuzz_launch) */
	if (at)
		memcpy(v, w->v, (size_t)at * sizeof *v);
	for (size_t k = 0; k < nadd; k++)
		v[at + (int)k] = add[k];
	if (w->n - at - drop > 0)
		memcpy(v + at + nadd, w->v + at + drop, (size_t)(w->n - at - drop) * sizeof *v);
	free(w->v);
	w->v = v;
	w->n = n;
	w->owned = xrealloc(w->owned, (w->nowned + nadd + 1) * sizeof *w->owned);
	if (nadd)
		memcpy(w->owned + w->nowned, add, nadd * sizeof *add);
	w->nowned += nadd;
	free(add);
	return 0;
}

/* GNU env's long options (coreutils env.c; getopt_long also takes any unambiguous prefix). arg: 0
 * none, 1 required (=VALUE or the next word), 2 optional (=VALUE only). letter: the short option
 * it equals, or 0 for one that does not matter here. */
static const struct {
	const char *name;
	int arg;
	char letter;
} env_long[] = {
	{"ignore-environment", 0, 'i'}, {"null", 0, '0'}, {"unset", 1, 'u'}, {"chdir", 1, 'C'},
	{"split-string", 1, 'S'}, {"debug", 0, 'v'}, {"block-signal", 2, 0}, {"default-signal", 2, 0},
	{"ignore-signal", 2, 0}, {"list-signal-handling", 0, 0}, {"help", 0, 'h'}, {"version", 0, 'V'},
};

/* Applies one env option. For -S, w->v[at .. at+drop) are the words that gave it. */
static int env_option(struct launch *l, struct words *w, const char *spelled, char letter, const char *val, int at,
		      int drop)
{
	switch (letter) {
	case 'i':
		set_cuda_visible(l, NULL);
		l->has_cg_profile_env = false;
		return 0;
	case 'u':
		if (!strcmp(val, "CUDA_VISIBLE_DEVICES"))
			set_cuda_visible(l, NULL);
		else if (!strcmp(val, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"))
			l->has_cg_profile_env = false;
		return 0;
	case 'C': {
		char *n = xasprintf("env -C %s: the launch runs there; a relative model path was looked up from "
				    "gpuwho's working directory", val);
		note(l, n);
		free(n);
		return 0;
	}
	case 'S':
		return env_split(l, w, at, drop, val);
	case 'h':
	case 'V':
		return fail(l, "env %s runs no command", spelled);
	default:
		return 0;
	}
}

/* Reads env's options from w->v[i] on, as getopt_long(argc, argv, "+C:iS:u:v0 \t") does: they stop
 * at the first word that is not one, or after "--". A lone "-" after them is -i. Returns the index
 * of the first assignment or of the program, or -1 with l->error set. */
static int env_options(struct launch *l, struct words *w, int i)
{
	while (i < w->n) {
		const char *a = w->v[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			int found = -1, matches = 0;
			for (size_t k = 0; k < sizeof env_long / sizeof env_long[0]; k++) {
				if (strncmp(env_long[k].name, name, len))
					continue;
				if (strlen(env_long[k].name) == len) {
					found = (int)k, matches = 1;
					break;
				}
				found = (int)k, matches++;
			}
			if (matches > 1)
				return fail(l, "env --%.*s is ambiguous", (int)len, name), -1;
			if (found < 0 || !len)
				return fail(l, "env --%.*s: not an option env takes", (int)len, name), -1;
			char *spelled = xasprintf("--%s", env_long[found].name);
			const char *val = eq ? eq + 1 : NULL;
			int drop = 1, r = 0;
			if (env_long[found].arg == 0 && eq)
				r = fail(l, "env %s takes no value", spelled);
			else if (env_long[found].arg == 1 && !eq && i + 1 >= w->n)
				r = fail(l, "env %s needs a value", spelled);
			else if (env_long[found].arg == 1 && !eq)
				val = w->v[i + 1], drop = 2;
			if (!r)
				r = env_option(l, w, spelled, env_long[found].letter, val, i, drop);
			free(spelled);
			if (r)
				return -1;
			if (env_long[found].letter != 'S')
				i += drop;
			continue;
		}
		/* A cluster of short options: -iv0, -u NAME, -uNAME, -iu NAME. */
		int next = i + 1;
		for (const char *p = a + 1; *p; p++) {
			if (strchr("iv0 \t", *p)) {
				env_option(l, w, NULL, *p, NULL, i, 1);
				continue;
			}
			if (!strchr("uCS", *p))
				return fail(l, "env -%c: not an option env takes", *p), -1;
			const char *val = p + 1;
			int drop = 1;
			if (!*val) {
				if (i + 1 >= w->n)
					return fail(l, "env -%c needs a value", *p), -1;
				val = w->v[i + 1];
				drop = 2;
			}
			char spelled[3] = {'-', *p, '\0'};
			if (env_option(l, w, spelled, *p, val, i, drop))
				return -1;
			next = *p == 'S' ? i : i + drop;   /* -S: read its words in place of the option */
			break;
		}
		i = next;
	}
	if (i < w->n && !strcmp(w->v[i], "-")) {
		set_cuda_visible(l, NULL);
		i++;
	}
	return i;
}

/* A program that only wraps the launch: nohup, sudo, numactl, taskset, nice, stdbuf, time, exec,
 * uv run, torchrun. Returns the index of the word after it and its options (i when argv[i] is
 * none), or -1 with l->error set; *module is set for `torchrun -m`, whose -m is left at the index.
 * The wrapped launch is then recognised as usual. */
static int skip_wrapper(struct launch *l, char *const *argv, int argc, int i, bool *module)
{
	const char *p = base_name(argv[i]);
	/* Options of each wrapper that take the next word as their value (when not joined by =). */
	static const struct {
		const char *prog;
		const char *valued;   /* space-separated */
	} w[] = {
		{"nohup", ""},
		{"sudo", "-u -g -C -D -h -p -r -t -U -T --user --group --chdir --prompt"},
		{"exec", "-a"},
		{"time", "-f --format -o --output"},
		{"nice", "-n --adjustment"},
		{"stdbuf", "-i -o -e --input --output --error"},
		{"numactl", "-N -m -C -i -p --cpunodebind --membind --physcpubind --interleave --preferred "
			    "--cpubind --preferred-many"},
		{"taskset", ""},
		{"torchrun", "--nproc-per-node --nproc_per_node --nnodes --node-rank --node_rank --master-addr "
			     "--master_addr --master-port --master_port --rdzv-backend --rdzv_backend --rdzv-endpoint "
			     "--rdzv_endpoint --rdzv-id --rdzv_id --rdzv-conf --rdzv_conf --max-restarts --max_restarts "
			     "--monitor-interval --monitor_interval --start-method --start_method --role --log-dir "
			     "--log_dir -r --redirects -t --tee --local-addr --local_addr"},
		{"uv", "--with --python -p --project --directory --env-file --index --index-url --extra-index-url "
		       "--extra --group --package --with-requirements --python-preference --cache-dir"},
	};
	for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
		if (strcmp(p, w[k].prog))
			continue;
		int j = i + 1;
		if (!strcmp(p, "uv")) {
			if (j >= argc || strcmp(argv[j], "run"))
				return fail(l, "uv: only `uv run` launches a program"), -1;
			j++;
		}
		if (!strcmp(p, "taskset")) {
			/* taskset [-a] [-c] MASK|LIST program */
			while (j < argc && argv[j][0] == '-')
				j++;
			if (j + 1 >= argc)
				return fail(l, "taskset: no program to run"), -1;
			return j + 1;
		}
		while (j < argc && argv[j][0] == '-' && argv[j][1]) {
			const char *a = argv[j];
			if (!strcmp(a, "--")) {
				j++;
				break;
			}
			if (!strcmp(p, "torchrun") && (!strcmp(a, "-m") || !strcmp(a, "--module"))) {
				/* torchrun -m MODULE runs the module like python -m. */
				*module = true;
				return j;
			}
			size_t len = strcspn(a, "=");
			bool valued = false;
			if (!a[len]) {
				const char *v = w[k].valued;
				while (*v) {
					size_t m = strcspn(v, " ");
					if (m == len && !strncmp(v, a, len))
						valued = true;
					v += m + (v[m] == ' ');
				}
			}
			j += valued ? 2 : 1;
		}
		if (j >= argc)
			return fail(l, "%s: no program to run", p), -1;
		return j;
	}
	return i;
}

/* `docker run`, `podman run`, `nvidia-docker run`, `docker container run`. */
static bool is_container_run(char *const *argv, int argc, int i)
{
	const char *p = base_name(argv[i]);
	if (strcmp(p, "docker") && strcmp(p, "podman") && strcmp(p, "nvidia-docker"))
		return false;
	if (i + 1 < argc && !strcmp(argv[i + 1], "run"))
		return true;
	return i + 2 < argc && !strcmp(argv[i + 1], "container") && !strcmp(argv[i + 2], "run");
}

/* A word that names a program rather than a model: python..., vllm, sglang, a path to one. */
static bool looks_like_program(const char *w)
{
	const char *b = base_name(w);
	return is_python(b) || !strcmp(b, "vllm") || !strcmp(b, "sglang") || !strcmp(b, "env") ||
	       !strcmp(b, "bash") || !strcmp(b, "sh") || !strcmp(b, "torchrun");
}

/* The variables of the launch's environment plan reads, from one NAME=value word (a VAR=value
 * prefix or docker's -e): CUDA_VISIBLE_DEVICES, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS (vLLM
 * counts its CUDA graphs' memory unless it is 0, envs.py) and VLLM_USE_V1 (which engine vLLM 0.7
 * to 0.10 runs). Other words are ignored. */
static void set_env(struct launch *l, const char *word)
{
	static const char cg[] = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=", v1[] = "VLLM_USE_V1=";
	if (str_starts(word, "CUDA_VISIBLE_DEVICES=")) {
		set_cuda_visible(l, word + strlen("CUDA_VISIBLE_DEVICES="));
	} else if (str_starts(word, cg)) {
		const char *v = word + strlen(cg);
		l->has_cg_profile_env = true;
		l->cg_profile_env = !(!strcmp(v, "0") || !strcasecmp(v, "false"));
	} else if (str_starts(word, v1)) {
		const char *v = word + strlen(v1);
		l->has_use_v1 = true;
		l->use_v1 = !(!strcmp(v, "0") || !strcasecmp(v, "false"));
	}
}

/* Reads `docker run`'s options from argv[i] (docker) on: CUDA_VISIBLE_DEVICES from -e/--env and
 * the devices from --gpus, and returns the index of the image, or -1 with l->error set. */
static int container_image(struct launch *l, char *const *argv, int argc, int i)
{
	static const char *const valued[] = {
		"-e", "--env", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--ipc", "--shm-size",
		"--network", "--net", "--runtime", "-u", "--user", "--entrypoint", "--env-file", "--mount",
		"--ulimit", "--device", "-w", "--workdir", "--platform", "-m", "--memory", "--cpus", "--restart",
		"--cap-add", "--cap-drop", "--security-opt", "-l", "--label", "--log-driver", "--log-opt",
		"--hostname", "-h", "--add-host", "--cpuset-cpus", "--pid", "--group-add", "--tmpfs", "--memory-swap",
		"--health-cmd", "--stop-signal", "--userns", "--uts", "--pull", "--cgroupns", "--device-cgroup-rule",
		"--dns", "--label-file", "--expose", "--volumes-from",
	};
	int j = i + 2 + (!strcmp(argv[i + 1], "container"));
	while (j < argc && argv[j][0] == '-') {
		const char *a = argv[j];
		if (!strcmp(a, "--"))
		{
			if (j + 1 >= argc)
				return fail(l, "docker run: no image"), -1;
			return j + 1;
		}
		size_t len = strcspn(a, "=");
		const char *val = a[len] ? a + len + 1 : NULL;
		bool takes = false;
		for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
			if (strlen(valued[k]) == len && !strncmp(valued[k], a, len))
				takes = true;
		if (takes && !val) {
			if (j + 1 >= argc)
				return fail(l, "docker run %s needs a value", a), -1;
			val = argv[j + 1];
			j++;
		}
		if (val && (!strncmp(a, "-e", len) || !strncmp(a, "--env", len)) && len >= 2)
			set_env(l, val);
		if (val && len == 6 && !strncmp(a, "--gpus", 6)) {
			/* --gpus all | N | '"device=0,1"': the container sees those devices as 0..n-1. */
			const char *d = strstr(val, "device=");
			if (d) {
				char *v = xstrdup(d + 7);
				v[strcspn(v, "\"'")] = '\0';
				int n = 1;
				for (const char *c = v; *c; c++)
					n += *c == ',';
				char *ids = xstrdup("");
				for (int k = 0; k < n; k++) {
					char *t = xasprintf("%s%s%d", ids, k ? "," : "", k);
					free(ids);
					ids = t;
				}
				set_cuda_visible(l, ids);
				free(ids);
				free(v);
			}
		}
		j++;
	}
	if (j >= argc)
		return fail(l, "docker run: no image"), -1;
	return j;
}

/* Finds the engine and returns the index of its first argument, or -1 (l->error set). */
static int recognise(struct words *w, struct launch *l)
{
	int argc = w->n, i = 0;
	char *const *argv = w->v;
	bool module = false;   /* torchrun -m: argv[i] is the -m */
	for (;;) {
		if (i < argc && !strcmp(base_name(argv[i]), "env")) {
			i = env_options(l, w, i + 1);
			if (i < 0)
				return -1;
			argc = w->n, argv = w->v;   /* -S may have spliced words in */
			continue;
		}
		if (i < argc && is_assignment(argv[i])) {
			set_env(l, argv[i]);
			i++;
			continue;
		}
		int j = i < argc ? skip_wrapper(l, argv, argc, i, &module) : i;
		if (j < 0)
			return -1;
		if (j != i) {
			i = j;
			if (module)
				break;
			continue;
		}
		if (i < argc && is_container_run(argv, argc, i)) {
			int k = container_image(l, argv, argc, i);
			if (k < 0)
				return -1;
			const char *img = argv[k];
			i = k + 1;
			/* The images' entrypoints: vllm/vllm-openai runs `vllm serve` (older tags the
			 * OpenAI server module) on the words after the image; an explicit command after the
			 * image (python3 -m ..., vllm serve, sglang serve) is read as any launch. */
			if (strstr(img, "vllm-openai") && (i >= argc || argv[i][0] == '-' || !looks_like_program(argv[i]))) {
				l->engine = LAUNCH_VLLM;
				l->entry = xasprintf("docker run %s (entrypoint vllm serve)", img);
				return i;
			}
			/* lmsysorg/sglang has no entrypoint of its own; flags right after it can only be
			 * launch_server's. */
			if (strstr(img, "sglang") && i < argc && argv[i][0] == '-') {
				l->engine = LAUNCH_SGLANG;
				l->entry = xasprintf("docker run %s (taken as python3 -m sglang.launch_server)", img);
				return i;
			}
			if (i >= argc)
				return fail(l, "%s: the image's own command is unknown here; give the launch command after it", img), -1;
			continue;
		}
		break;
	}
	if (i >= argc)
		return fail(l, "the launch command is empty"), -1;
	const char *prog = base_name(argv[i]);
	/* A script run by path (torchrun, python): the engines' own entry files. */
	if (!strcmp(prog, "launch_server.py") && strstr(argv[i], "sglang")) {
		l->engine = LAUNCH_SGLANG;
		l->entry = xstrdup("sglang/launch_server.py");
		return i + 1;
	}
	if (!strcmp(prog, "api_server.py") && strstr(argv[i], "vllm")) {
		l->engine = LAUNCH_VLLM;
		l->entry = xstrdup("vllm/entrypoints/openai/api_server.py");
		return i + 1;
	}
	if (is_python(prog) || module) {
		const char *py = module ? "torchrun" : argv[i];
		if (!module)
			i++;
		while (i < argc && argv[i][0] == '-') {
			const char *a = argv[i];
			const char *mod = NULL;
			if (!strcmp(a, "-m")) {
				if (i + 1 >= argc)
					return fail(l, "%s -m: no module named", py), -1;
				mod = argv[i + 1];
				i += 2;
			} else if (a[1] == 'm' && a[2]) {
				mod = a + 2;
				i++;
			} else if (!strcmp(a, "-c")) {
				return fail(l, "%s -c: inline code is not an SGLang or vLLM launch", py), -1;
			} else if (!strcmp(a, "-X") || !strcmp(a, "-W")) {
				i += 2;
				continue;
			} else {
				i++;
				continue;
			}
			if (!strcmp(mod, "sglang.launch_server") || !strcmp(mod, "sglang_router.launch_server")) {
				l->engine = LAUNCH_SGLANG;
				l->entry = xasprintf("%s -m %s", module ? "torchrun" : "python", mod);
				return i;
			}
			if (!strcmp(mod, "vllm.entrypoints.openai.api_server")) {
				l->engine = LAUNCH_VLLM;
				l->entry = xasprintf("%s -m %s", module ? "torchrun" : "python", mod);
				return i;
			}
			if (!strcmp(mod, "vllm.entrypoints.cli.main") && i < argc && !strcmp(argv[i], "serve")) {
				l->engine = LAUNCH_VLLM;
				l->entry = xasprintf("python -m %s serve", mod);
				return i + 1;
			}
			return fail(l, "python -m %s: not an SGLang or vLLM server (expected sglang.launch_server, "
				       "vllm.entrypoints.openai.api_server)", mod), -1;
		}
		if (i >= argc)
			return fail(l, "%s: no module or script to run", py), -1;
		/* `python /usr/bin/vllm serve ...` is how a console script shows in /proc/PID/cmdline. */
		prog = base_name(argv[i]);
		if (!strcmp(prog, "launch_server.py") || !strcmp(prog, "api_server.py")) {
			l->engine = prog[0] == 'l' ? LAUNCH_SGLANG : LAUNCH_VLLM;
			l->entry = xasprintf("%s %s", py, prog);
			return i + 1;
		}
	}
	if ((!strcmp(prog, "vllm") || !strcmp(prog, "sglang")) && i + 1 < argc && !strcmp(argv[i + 1], "serve")) {
		l->engine = prog[0] == 'v' ? LAUNCH_VLLM : LAUNCH_SGLANG;
		l->entry = xasprintf("%s serve", prog);
		return i + 2;
	}
	if (!strcmp(prog, "vllm") || !strcmp(prog, "sglang"))
		return fail(l, "%s: only the 'serve' subcommand launches a server", prog), -1;
	return fail(l, "%s: not an SGLang or vLLM launch (expected python -m sglang.launch_server, sglang serve, "
		       "vllm serve, python -m vllm.entrypoints.openai.api_server)", argv[i]), -1;
}

/* Refuses a product of parallel sizes above MAX_GPUS, naming each factor above 1 as the command
 * spelled its flag (names[i] NULL: the flag was not given, so its size is 1). */
static int check_gpus(struct launch *l, int n, const char *const *names, const int *sizes)
{
	long long p = 1;
	for (int i = 0; i < n; i++)
		p *= sizes[i];   /* at most MAX_PARALLEL^3: fits */
	if (p <= MAX_GPUS)
		return 0;
	char *s = xstrdup("");
	for (int i = 0; i < n; i++) {
		if (sizes[i] == 1)
			continue;
		char *t = xasprintf("%s%s%s %d", s, *s ? " × " : "", names[i], sizes[i]);
		free(s);
		s = t;
	}
	int r = fail(l, "%s is %lld GPUs, more than any deployment has (at most %d)", s, p, MAX_GPUS);
	free(s);
	return r;
}

/* Reads the engine's flags from argv[i] on. */
static int parse_flags(int argc, char *const *argv, int i, struct launch *l)
{
	bool model_from_flag = false;
	/* How the command spelled each size's flag (-tp, --tp-size, ...), for the errors below. */
	const char *name[X_NFIELDS] = {0};
	while (i < argc) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			continue;
		}
		if (!looks_like_flag(a)) {
			/* vllm serve MODEL: the one positional argument. */
			if (l->engine == LAUNCH_VLLM && !l->model && !model_from_flag)
				set_str(&l->model, a);
			else {
				char *n = xasprintf("ignored the stray argument '%s'", a);
				note(l, n);
				free(n);
			}
			i++;
			continue;
		}
		const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
		size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
		bool negated, abbrev;
		const struct flagdef *f = find_flag(a, nlen, l->engine, &negated, &abbrev);
		if (f && abbrev) {
			char *n = xasprintf("%.*s taken as %s (argparse accepts a unique prefix)", (int)nlen, a, f->name);
			note(l, n);
			free(n);
		}
		if (!f) {
			char *name = xstrndup(a, nlen);
			add_str(&l->unknown, &l->nunknown, name);
			free(name);
			/* An unknown flag's value, if it has one, is the next word unless that is a flag. */
			i += (!eq && i + 1 < argc && !looks_like_flag(argv[i + 1])) ? 2 : 1;
			continue;
		}
		bool takes_value = f->kind != F_BOOL && f->kind != F_SKIPB;
		const char *v = NULL;
		if (!takes_value) {
			if (eq)
				return fail(l, "%.*s takes no value", (int)nlen, a);
			i++;
		} else if (eq) {
			v = eq + 1;
			i++;
		} else {
			if (i + 1 >= argc || (looks_like_flag(argv[i + 1]) && f->kind != F_STR && f->kind != F_SKIP) ||
			    (f->kind == F_STR && argv[i + 1][0] == '-' && argv[i + 1][1] == '-'))
				return fail(l, "%s needs a value", a);
			v = argv[i + 1];
			i += 2;
		}
		if (takes_value && !*v)
			return fail(l, "%.*s needs a value", (int)nlen, a);
		if (f->field == X_MODEL)
			model_from_flag = true;
		int r = apply(l, f, v, negated);
		if (r)
			return r;
		name[f->field] = f->name;
	}
	if (l->engine == LAUNCH_SGLANG && !l->hicache && (l->has_hicache_size || l->has_hicache_ratio))
		note(l, "--hicache-size and --hicache-ratio do nothing without --enable-hierarchical-cache");
	/* The GPUs plan counts: tp × pp × dp (SGLang's DP attention puts its DP ranks inside the TP
	 * group), and vLLM's tp × pp × --data-parallel-size-local on this node. */
	if (check_gpus(l, 3, (const char *[]){name[X_TP], name[X_PP], name[X_DP]},
		       (int[]){l->tp, l->pp, l->dp_attention ? 1 : l->dp}))
		return -EINVAL;
	if (l->dp_local && check_gpus(l, 3, (const char *[]){name[X_DP_LOCAL], name[X_TP], name[X_PP]},
				      (int[]){l->dp_local, l->tp, l->pp}))
		return -EINVAL;
	if (l->dp_attention && l->tp % l->dp)
		return fail(l, "--dp %d with --enable-dp-attention: must divide --tp %d", l->dp, l->tp);
	if (l->nnodes > 1 && (l->tp * l->pp) % l->nnodes)
		return fail(l, "--nnodes %d: must divide the GPU count (tp %d × pp %d)", l->nnodes, l->tp, l->pp);
	if (!l->model)
		return fail(l, "no model named (%s)", l->engine == LAUNCH_SGLANG ? "--model-path" : "vllm serve MODEL or --model");
	return 0;
}

int launch_parse(int argc, char *const *argv, struct launch *l)
{
	memset(l, 0, sizeof *l);
	l->tp = l->dp = l->pp = l->ep = l->nnodes = 1;
	l->gpu_id_step = 1;
	struct words w = {.n = argc > 0 ? argc : 0};
	w.v = xcalloc((size_t)w.n + 1, sizeof *w.v);
	if (w.n)
		memcpy(w.v, argv, (size_t)w.n * sizeof *w.v);
	int i = recognise(&w, l);
	int r = i < 0 ? -EINVAL : parse_flags(w.n, w.v, i, l);
	/* Every value kept in l is a copy: the spliced words can go. */
	for (size_t k = 0; k < w.nowned; k++)
		free(w.owned[k]);
	free(w.owned);
	free(w.v);
	return r;
}

void launch_free(struct launch *l)
{
	if (!l)
		return;
	free(l->entry);
	free(l->model);
	free(l->revision);
	free(l->cuda_visible);
	free(l->kv_dtype);
	free(l->dtype);
	free(l->spec_algo);
	free(l->config_file);
	free(l->attention_backend);
	for (size_t i = 0; i < l->nunknown; i++)
		free(l->unknown[i]);
	free(l->unknown);
	for (size_t i = 0; i < l->nnotes; i++)
		free(l->notes[i]);
	free(l->notes);
	free(l->error);
	memset(l, 0, sizeof *l);
}

char **launch_argv_from_nul(const char *buf, size_t len, int *argc)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			n++;
	if (len && buf[len - 1] != '\0')
		n++;
	if (n > INT_MAX - 1)
		n = INT_MAX - 1;
	char **argv = xcalloc(n + 1, sizeof *argv);
	size_t k = 0;
	for (size_t i = 0; i < len && k < n;) {
		const char *s = buf + i;
		size_t m = strnlen(s, len - i);
		argv[k++] = xstrndup(s, m);
		i += m + 1;
	}
	*argc = (int)k;
	return argv;
}

void launch_argv_free(char **argv, int argc)
{
	if (!argv)
		return;
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

int launch_apply_config(struct launch *l, const char *yaml, size_t len, int argc, char *const *argv)
{
	/* Each `key: value` line becomes --key value (a list or true/false as the engines read them),
	 * placed before the command line's own flags so that those win, as with argparse defaults. */
	char **extra = NULL;
	size_t nextra = 0;
	const char *p = yaml, *end = yaml + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xstrndup(p, n);
		p += n + (nl != NULL);
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *k = line;
		while (*k == ' ' || *k == '\t')
			k++;
		char *colon = strchr(k, ':');
		if (!*k || !colon || k[0] == '-' || (k != line)) {
			/* Blank, a comment, a list item or a nested key: not a flat setting. */
			free(line);
			continue;
		}
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
			v[--vl] = '\0';
		if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
			v[vl - 1] = '\0';
			v++;
		}
		size_t kl = strlen(k);
		while (kl && (k[kl - 1] == ' ' || k[kl - 1] == '\t'))
			k[--kl] = '\0';
		if (!kl || kl > 100) {
			free(line);
			continue;
		}
		for (char *c = k; *c; c++)
			if (*c == '_')
				*c = '-';
		if (!strcmp(v, "false") || !strcmp(v, "False")) {
			/* A false switch is the default: nothing to add. */
		} else if (!strcmp(v, "true") || !strcmp(v, "True") || !*v) {
			char *f = xasprintf("--%s", k);
			add_str(&extra, &nextra, f);
			free(f);
		} else if (strcmp(k, "config")) {
			char *f = xasprintf("--%s=%s", k, v);
			add_str(&extra, &nextra, f);
			free(f);
		}
		free(line);
	}
	/* Re-parse: the launch words up to the engine's first flag, the file's, then the rest. */
	struct launch probe;
	memset(&probe, 0, sizeof probe);
	probe.tp = probe.dp = probe.pp = probe.ep = probe.nnodes = 1;
	struct words w = {.n = argc};
	w.v = xcalloc((size_t)argc + 1, sizeof *w.v);
	if (argc)
		memcpy(w.v, argv, (size_t)argc * sizeof *w.v);
	int at = recognise(&w, &probe);
	int r = 0;
	if (at >= 0) {
		int n = w.n + (int)nextra;
		char **v = xcalloc((size_t)n + 1, sizeof *v);
		memcpy(v, w.v, (size_t)at * sizeof *v);
		for (size_t k = 0; k < nextra; k++)
			v[at + (int)k] = extra[k];
		memcpy(v + at + nextra, w.v + at, (size_t)(w.n - at) * sizeof *v);
		char *cfg = l->config_file ? xstrdup(l->config_file) : NULL;
		launch_free(l);
		r = launch_parse(n, v, l);
		free(l->config_file);
		l->config_file = cfg;
		free(v);
	}
	launch_free(&probe);
	for (size_t k = 0; k < w.nowned; k++)
		free(w.owned[k]);
	free(w.owned);
	free(w.v);
	for (size_t k = 0; k < nextra; k++)
		free(extra[k]);
	free(extra);
	return r;
}
