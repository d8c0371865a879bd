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
	{"--speculative-algorithm", SG, F_STR, X_SPEC},
	{"--speculative-draft-model-path", SG, F_STR, X_SPEC},
	{"--speculative-config", VL, F_STR, X_SPEC},
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
	{"--attention-backend", SG, F_SKIP, X_NONE},
	{"--chunked-prefill-size", SG, F_SKIP, X_NONE},
	{"--max-prefill-tokens", SG, F_SKIP, X_NONE},
	{"--max-num-batched-tokens", VL, F_SKIP, X_NONE},
	{"--cuda-graph-max-bs", SG, F_SKIP, X_NONE},
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
	{"--enforce-eager", VL, F_SKIPB, X_NONE},
	{"--disable-cuda-graph", SG, F_SKIPB, X_NONE},
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
	{"--disable-hybrid-kv-cache-manager", VL, F_SKIPB, X_NONE},
	{"--enable-cache-report", SG, F_SKIPB, X_NONE},
	{"--enable-p2p-check", SG, F_SKIPB, X_NONE},
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
		return 0;
	}
	if (f->kind == F_INT) {
		long min = 1, max = MAX_PARALLEL;
		if (f->field == X_BASE_GPU)
			min = 0;
		if (f->field == X_MAXRUN)
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
	case X_QUANT: l->quantization = true; break;
	default: break;
	}
	return 0;
}

/* "-x" with a letter, or "--x": what argparse would take for an option rather than a value. */
static bool looks_like_flag(const char *s)
{
	return s[0] == '-' && (s[1] == '-' || isalpha((unsigned char)s[1]));
}

static const struct flagdef *find_flag(const char *name, size_t len, enum launch_engine e, bool *negated)
{
	unsigned bit = e == LAUNCH_SGLANG ? SG : VL;
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
		return 0;
	case 'u':
		if (!strcmp(val, "CUDA_VISIBLE_DEVICES"))
			set_cuda_visible(l, NULL);
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

/* Finds the engine and returns the index of its first argument, or -1 (l->error set). */
static int recognise(struct words *w, struct launch *l)
{
	int argc = w->n, i = 0;
	char *const *argv = w->v;
	for (;;) {
		if (i < argc && !strcmp(base_name(argv[i]), "env")) {
			i = env_options(l, w, i + 1);
			if (i < 0)
				return -1;
			argc = w->n, argv = w->v;   /* -S may have spliced words in */
			continue;
		}
		if (i < argc && is_assignment(argv[i])) {
			if (str_starts(argv[i], "CUDA_VISIBLE_DEVICES="))
				set_cuda_visible(l, argv[i] + strlen("CUDA_VISIBLE_DEVICES="));
			i++;
			continue;
		}
		break;
	}
	if (i >= argc)
		return fail(l, "the launch command is empty"), -1;
	const char *prog = base_name(argv[i]);
	if (is_python(prog)) {
		const char *py = argv[i];
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
			if (!strcmp(mod, "sglang.launch_server")) {
				l->engine = LAUNCH_SGLANG;
				l->entry = xasprintf("python -m %s", mod);
				return i;
			}
			if (!strcmp(mod, "vllm.entrypoints.openai.api_server")) {
				l->engine = LAUNCH_VLLM;
				l->entry = xasprintf("python -m %s", mod);
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
		bool negated;
		const struct flagdef *f = find_flag(a, nlen, l->engine, &negated);
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
