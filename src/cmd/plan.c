/* plan: pre-flight of an SGLang/vLLM launch: GPU and host memory per rank, KV tokens, concurrency. */
#include "cli.h"
#include "cmd/cmd.h"
#include "escape.h"
#include "json.h"
#include "plan/launch.h"
#include "plan/model.h"
#include "plan/plan.h"
#include "sys/meminfo.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
	"Usage: gpuwho plan [OPTIONS] -- LAUNCH COMMAND...\n"
	"       gpuwho plan [OPTIONS] --pid PID\n"
	"\n"
	"Checks an SGLang or vLLM launch before you run it: the GPUs it takes, weights and KV cache per\n"
	"GPU, how many tokens the KV cache holds and how many requests run at once, and the host memory\n"
	"its flags pin, multiplied out to the whole node. Nothing is launched and nothing is downloaded.\n"
	"\n"
	"Launch commands understood: python -m sglang.launch_server ..., sglang serve ...,\n"
	"vllm serve MODEL ..., python -m vllm.entrypoints.openai.api_server ...\n"
	"(a leading CUDA_VISIBLE_DEVICES=... is honoured).\n"
	"\n"
	"Options:\n"
	"  --pid PID          plan the server running as PID (reads /proc/PID/cmdline and its\n"
	"                     CUDA_VISIBLE_DEVICES from /proc/PID/environ when readable)\n"
	"  --gpu-mem SIZE     one GPU's total memory (default: live, when NVML is available)\n"
	"  --host-mem SIZE    host memory available (default: MemAvailable from /proc/meminfo)\n"
	"  --model-config FILE  the model's config.json, when --model-path is not a local folder\n"
	"                     or in the Hugging Face cache ($HF_HOME/hub)\n"
	"  --weights-gb SIZE  the whole checkpoint's size (default: from the safetensors metadata)\n"
	"  --overhead SIZE    per-GPU memory besides weights and KV: CUDA context, communication\n"
	"                     buffers, vLLM's activation peak (default 0.5 GiB)\n"
	"  --avg-tokens N     tokens per request (prompt + output) for concurrency (default 4000)\n"
	"SIZE is a number with an optional unit: GB/TB (10^9/10^12 bytes), GiB/TiB (2^30/2^40), MB, MiB.\n"
	"A bare number is GiB, except for --weights-gb where it is GB (as model hubs count).\n"
	"\n"
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  # The incident: 300 GB of hierarchical cache per rank on a 408 GB host, TP 8\n"
	"  gpuwho plan --gpu-mem 96 --host-mem 408GB -- python -m sglang.launch_server \\\n"
	"      --model-path moonshotai/Kimi-K2.5 --tp 8 --mem-fraction-static 0.93 \\\n"
	"      --enable-hierarchical-cache --hicache-size 300\n"
	"  # How many 8,000-token requests fit in vLLM's KV cache on 4 GPUs\n"
	"  gpuwho plan --avg-tokens 8000 -- vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4\n"
	"  # Check the server already running\n"
	"  gpuwho plan --pid 12345 --json\n"
	"\n"
	"Exit status: 0 everything fits (or is tight), 1 something does not fit, 2 a command line it\n"
	"cannot parse (the message names the flag), 3 the process given to --pid cannot be read.\n"
	"Formulas and their sources: docs/plan.md. JSON schema: docs/json.md.\n";

enum { OPT_PID = 0x2000, OPT_GPU_MEM, OPT_HOST_MEM, OPT_MODEL_CONFIG, OPT_WEIGHTS, OPT_OVERHEAD, OPT_AVG };

static const struct option options[] = {
	{"pid", required_argument, NULL, OPT_PID},
	{"gpu-mem", required_argument, NULL, OPT_GPU_MEM},
	{"host-mem", required_argument, NULL, OPT_HOST_MEM},
	{"model-config", required_argument, NULL, OPT_MODEL_CONFIG},
	{"weights-gb", required_argument, NULL, OPT_WEIGHTS},
	{"overhead", required_argument, NULL, OPT_OVERHEAD},
	{"avg-tokens", required_argument, NULL, OPT_AVG},
	{0},
};

struct opts {
	struct cli *c;
	long pid;
	const char *model_config;
	double gpu_mem, host_mem, weights, overhead;
	bool has_gpu_mem, has_host_mem, has_weights;
	long avg_tokens;
};

/* Parses "96", "96GiB", "449GB", "0.5TiB" into bytes; a bare number is in `unit` bytes. False for
 * anything else, including negative, NaN and infinite values. */
static bool parse_size(const char *s, double unit, double *out)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{"B", 1}, {"KB", 1e3}, {"KiB", 1024.0}, {"MB", 1e6}, {"MiB", 1048576.0}, {"GB", 1e9},
		{"GiB", PLAN_GIB}, {"TB", 1e12}, {"TiB", PLAN_GIB * 1024}, {"K", 1024.0}, {"M", 1048576.0},
		{"G", PLAN_GIB}, {"T", PLAN_GIB * 1024},
	};
	if (!s || !*s)
		return false;
	size_t n = strspn(s, "0123456789.eE+-");
	/* "1e" followed by a unit would be read as an exponent: back off over a trailing 'e'/'E'. */
	while (n && (s[n - 1] == 'e' || s[n - 1] == 'E'))
		n--;
	if (!n || n > 40)
		return false;
	char num[48];
	memcpy(num, s, n);
	num[n] = '\0';
	char *end;
	errno = 0;
	double v = strtod(num, &end);
	if (*end || errno || !isfinite(v) || v < 0)
		return false;
	const char *suf = s + n;
	double mult = unit;
	if (*suf) {
		bool ok = false;
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			if (!strcasecmp(suf, units[i].suffix)) {
				mult = units[i].mult;
				ok = true;
				break;
			}
		if (!ok)
			return false;
	}
	*out = v * mult;
	return isfinite(*out);
}

static int opt_size(struct opts *o, const char *name, const char *arg, double unit, double min, double max, double *out)
{
	double v;
	if (!parse_size(arg, unit, &v)) {
		char *e = escape_term(arg, strlen(arg));
		cli_error(o->c, "--%s %s: not a size (a number, optionally with GB, GiB, TB, TiB, MB, MiB)", name, e);
		free(e);
		return -1;
	}
	if (v < min || v > max) {
		char *e = escape_term(arg, strlen(arg));
		cli_error(o->c, "--%s %s: %s", name, e, v < min ? "too small to be real" : "absurdly large");
		free(e);
		return -1;
	}
	*out = v;
	return 0;
}

static int on_option(int opt, const char *arg, void *ctx)
{
	struct opts *o = ctx;
	unsigned long long n;
	switch (opt) {
	case OPT_PID:
		if (!parse_uint(arg, &n) || n < 1 || n > 4194304) {
			cli_error(o->c, "--pid: not a process id");
			return -1;
		}
		o->pid = (long)n;
		return 0;
	case OPT_GPU_MEM:
		o->has_gpu_mem = true;
		return opt_size(o, "gpu-mem", arg, PLAN_GIB, 64 * 1048576.0, 64 * PLAN_GIB * 1024, &o->gpu_mem);
	case OPT_HOST_MEM:
		o->has_host_mem = true;
		return opt_size(o, "host-mem", arg, PLAN_GIB, 1, 1e18, &o->host_mem);
	case OPT_WEIGHTS:
		o->has_weights = true;
		return opt_size(o, "weights-gb", arg, PLAN_GB, 1, 1e16, &o->weights);
	case OPT_OVERHEAD:
		return opt_size(o, "overhead", arg, PLAN_GIB, 0, 64 * PLAN_GIB * 1024, &o->overhead);
	case OPT_MODEL_CONFIG:
		o->model_config = arg;
		return 0;
	case OPT_AVG:
		if (!parse_uint(arg, &n) || n < 1 || n > 1000000000) {
			cli_error(o->c, "--avg-tokens: a whole number of tokens from 1 to 1,000,000,000");
			return -1;
		}
		o->avg_tokens = (long)n;
		return 0;
	}
	return -1;
}

/* Reading another process's /proc files can block (a process in D state holds its mm lock):
 * read in a thread and give up after a bound. */
struct slow_read {
	char *path;
	char *buf;
	size_t len;
	int rc;
};

static void *slow_read_thread(void *p)
{
	struct slow_read *s = p;
	s->rc = readfile_at(AT_FDCWD, s->path, &s->buf, &s->len, 1 << 20);
	return NULL;
}

/* Returns 0 with a malloc'ed buffer, -errno, or -ETIMEDOUT (the thread is left behind, detached). */
static int read_bounded(const char *path, char **buf, size_t *len)
{
	struct slow_read *s = xcalloc(1, sizeof *s);
	s->path = xstrdup(path);
	pthread_t t;
	if (pthread_create(&t, NULL, slow_read_thread, s)) {
		slow_read_thread(s);
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		if (pthread_timedjoin_np(t, NULL, &ts)) {
			pthread_detach(t);   /* leaks s on purpose: the thread may still write to it */
			return -ETIMEDOUT;
		}
	}
	int rc = s->rc;
	*buf = s->buf;
	*len = s->len;
	free(s->path);
	free(s);
	return rc;
}

/* Pulls CUDA_VISIBLE_DEVICES out of a NUL-separated environment block. */
static char *env_lookup(const char *buf, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < len;) {
		const char *s = buf + i;
		size_t m = strnlen(s, len - i);
		if (m > n && !strncmp(s, name, n) && s[n] == '=')
			return xstrndup(s + n + 1, m - n - 1);
		i += m + 1;
	}
	return NULL;
}

/* Text output ---------------------------------------------------------------------------------- */

/* Prints text escaped for the terminal, wrapped at 80 columns with `indent` spaces on each line. */
static void put_wrapped(int indent, const char *text)
{
	char *e = escape_term(text, strlen(text));
	const int width = 80;
	const char *p = e;
	while (*p) {
		int col = indent;
		const char *line = p, *brk = NULL, *q = p;
		while (*q) {
			if (*q == ' ')
				brk = q;
			if (((unsigned char)*q & 0xC0) != 0x80)
				col++;
			if (col > width && brk)
				break;
			q++;
		}
		const char *end = *q ? brk : q;
		printf("%*s%.*s\n", indent, "", (int)(end - line), line);
		p = *end ? end + 1 : end;
		indent = indent < 4 ? indent + 2 : indent;   /* continuation lines hang under the text */
	}
	free(e);
}

static void put_line(int indent, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_line(int indent, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	put_wrapped(indent, s);
	free(s);
}

static const char *verdict_upper(enum plan_verdict v)
{
	switch (v) {
	case PLAN_FITS: return "fits";
	case PLAN_TIGHT: return "TIGHT";
	case PLAN_NO_FIT: return "DOES NOT FIT";
	default: return "unknown";
	}
}

struct facts {
	const char *model_dir;
	const char *config_path;
	const struct model_config *model;
	const char *weights_source;
	const char *gpu_source;
	const char *host_source;
	const char *cuda_visible;
	long pid;
	char **argv;
	int argc;
	char **notes;   /* gathered by cmd_plan (model lookup, environ) */
	size_t nnotes;
};

static void render_text(const struct launch *l, const struct plan_result *r, const struct facts *f, bool color)
{
	char b1[40], b2[40], b3[40], b4[40];
	const char *on = "", *off = "";
	if (color && r->verdict == PLAN_NO_FIT)
		on = "\033[1;31m", off = "\033[0m";
	else if (color && r->verdict == PLAN_TIGHT)
		on = "\033[1;33m", off = "\033[0m";
	else if (color)
		on = "\033[1;32m", off = "\033[0m";

	const struct model_config *m = f->model;
	put_line(0, "gpuwho plan: %s (%s), model %s%s%s%s%s", launch_engine_name(l->engine), l->entry, l->model,
		 m ? " (" : "", m && m->model_type ? m->model_type : "", m ? (m->model_type ? ", " : "") : "",
		 m ? (m->mla ? "MLA)" : m->kv_heads == m->heads ? "MHA)" : "GQA)") : "");
	if (f->pid)
		put_line(0, "from the command line of process %ld", f->pid);
	bool sg = l->engine == LAUNCH_SGLANG;
	put_line(0, "TP %d × %s %d × PP %d = %d GPU%s%s; %d on this node", l->tp, sg && l->dp_attention ? "DP-attention" : "DP",
		 l->dp, l->pp, r->gpus, r->gpus == 1 ? "" : "s", sg && l->dp_attention ? " (DP attention shares the TP GPUs)" : "",
		 r->local_gpus);
	/* The verdict first: which resources do not fit. */
	char what[160] = "";
	struct { enum plan_verdict v; const char *name; } res[] = {
		{r->gpus_verdict, "GPUs"}, {r->gpu_verdict, "GPU memory"}, {r->kv_verdict, "KV cache"},
		{r->host_verdict, "host memory"},
	};
	for (size_t i = 0; i < 4; i++)
		if (res[i].v == r->verdict && r->verdict >= PLAN_TIGHT)
			snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", *what ? ", " : "", res[i].name);
	printf("\n%sVerdict: %s%s%s%s\n", on, verdict_upper(r->verdict), *what ? " — " : "", what, off);

	printf("\nGPUs: %s\n", verdict_upper(r->gpus_verdict));
	put_line(2, "%s", r->gpus_message);
	if (r->ngpu_ids) {
		char *ids = xstrdup("");
		for (int i = 0; i < r->ngpu_ids; i++) {
			char *n = xasprintf("%s%s%s", ids, i ? ", " : "", r->gpu_ids[i]);
			free(ids);
			ids = n;
		}
		put_line(2, "%s GPU%s %s%s", r->gpu_ids_assumed ? "would take" : "takes", r->ngpu_ids == 1 ? "" : "s", ids,
			 f->cuda_visible ? "" : r->gpu_ids_assumed ? " (assumed: CUDA_VISIBLE_DEVICES unset, GPU count unknown)"
								   : " (CUDA_VISIBLE_DEVICES unset)");
		free(ids);
	}
	if (f->cuda_visible)
		put_line(2, "CUDA_VISIBLE_DEVICES=%s", f->cuda_visible);

	printf("\nGPU memory, per GPU: %s\n", verdict_upper(r->gpu_verdict));
	put_line(2, "%s", r->gpu_message);
	if (r->has_gpu_total)
		put_line(2, "budget: %s GiB total (%s) × %s %.2f%s = %s GiB; reserve %s GiB", plan_fmt(b1, r->gpu_total / PLAN_GIB, 1),
			 f->gpu_source, r->fraction_flag, r->fraction, r->fraction_assumed ? " (assumed)" : "",
			 plan_fmt(b2, r->budget / PLAN_GIB, 1), plan_fmt(b3, r->reserve / PLAN_GIB, 1));
	if (r->has_weights)
		put_line(2, "weights: %s GiB per GPU = %s GB (%s) / (tp %d × pp %d)%s", plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1),
			 plan_fmt(b2, r->weights_per_gpu * l->tp * l->pp / PLAN_GB + (l->has_cpu_offload ? l->cpu_offload_gib * PLAN_GIB * l->tp * l->pp / PLAN_GB : 0), 0),
			 f->weights_source, l->tp, l->pp, l->has_cpu_offload ? " − --cpu-offload-gb" : "");
	else
		put_line(2, "weights: unknown (%s)", f->weights_source);

	printf("\nKV cache, per rank: %s\n", verdict_upper(r->kv_verdict));
	put_line(2, "%s", r->kv_message);
	if (r->has_cell)
		put_line(2, "%s bytes a token = %s", plan_fmt(b1, r->cell_bytes, 0), r->cell_formula);
	if (r->has_tokens) {
		put_line(2, "pool %s GiB / %s bytes = %s tokens", plan_fmt(b1, fmax(0, r->kv_pool) / PLAN_GIB, 2),
			 plan_fmt(b2, r->cell_bytes, 0), plan_fmt(b3, (double)r->tokens, 0));
		put_line(2, "each 0.01 of %s buys %s tokens per rank", r->fraction_flag, plan_fmt(b4, (double)r->tokens_per_point, 0));
		if (l->dp > 1)
			put_line(2, "%d DP %s, each with its own pool: %s requests at once in all", l->dp,
				 sg && l->dp_attention ? "attention ranks" : "replicas", plan_fmt(b4, (double)r->concurrency_total, 0));
	}

	printf("\nHost memory, for the node: %s\n", verdict_upper(r->host_verdict));
	for (size_t i = 0; i < r->nhost; i++) {
		const struct plan_host_item *it = &r->host[i];
		if (it->message)
			put_line(2, "%s", it->message);
	}
	put_line(2, "%s", r->host_message);
	if (r->has_host_avail)
		put_line(2, "available: %s GB (%s)", plan_fmt(b1, r->host_avail / PLAN_GB, 0), f->host_source);

	size_t nnotes = r->nnotes + l->nnotes + f->nnotes;
	if (nnotes || l->nunknown) {
		printf("\nNotes:\n");
		for (size_t i = 0; i < f->nnotes; i++)
			put_line(2, "- %s", f->notes[i]);
		for (size_t i = 0; i < l->nnotes; i++)
			put_line(2, "- %s", l->notes[i]);
		for (size_t i = 0; i < r->nnotes; i++)
			put_line(2, "- %s", r->notes[i]);
		if (l->nunknown) {
			char *list = xstrdup("");
			for (size_t i = 0; i < l->nunknown; i++) {
				char *n = xasprintf("%s%s%s", list, i ? ", " : "", l->unknown[i]);
				free(list);
				list = n;
			}
			put_line(2, "- ignored flags plan does not model: %s", list);
			free(list);
		}
	}
}

/* JSON output ---------------------------------------------------------------------------------- */

static json_t *jnum(bool has, double v)
{
	if (!has || !isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 9e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

static void render_json(const struct launch *l, const struct plan_result *r, const struct facts *f)
{
	const struct model_config *m = f->model;
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string("gpuwho.plan"));
	json_object_set_new(root, "schema_version", json_integer(1));
	json_object_set_new(root, "verdict", json_string(plan_verdict_key(r->verdict)));
	json_object_set_new(root, "engine", json_string(l->engine == LAUNCH_SGLANG ? "sglang" : "vllm"));
	json_object_set_new(root, "entry", json_str_or_null(l->entry));
	json_object_set_new(root, "command", json_strs(f->argv, (size_t)f->argc));
	json_object_set_new(root, "pid", f->pid ? json_integer(f->pid) : json_null());

	json_t *jm = json_object();
	json_object_set_new(jm, "name", json_str_or_null(l->model));
	json_object_set_new(jm, "dir", json_str_or_null(f->model_dir));
	json_object_set_new(jm, "config", json_str_or_null(f->config_path));
	json_object_set_new(jm, "model_type", json_str_or_null(m ? m->model_type : NULL));
	json_object_set_new(jm, "attention", m ? json_string(m->mla ? "mla" : m->kv_heads == m->heads ? "mha" : "gqa") : json_null());
	json_object_set_new(jm, "layers", jnum(m, m ? m->layers : 0));
	json_object_set_new(jm, "kv_lora_rank", jnum(m && m->mla, m ? m->kv_lora_rank : 0));
	json_object_set_new(jm, "qk_rope_head_dim", jnum(m && m->mla, m ? m->qk_rope_head_dim : 0));
	json_object_set_new(jm, "kv_heads", jnum(m && !m->mla, m ? m->kv_heads : 0));
	json_object_set_new(jm, "head_dim", jnum(m && !m->mla, m ? m->head_dim : 0));
	json_object_set_new(jm, "v_head_dim", jnum(m && !m->mla, m ? m->v_head_dim : 0));
	json_object_set_new(jm, "dtype", json_str_or_null(m ? m->torch_dtype : NULL));
	json_object_set_new(jm, "weights_bytes", jnum(r->has_weights, r->weights_per_gpu * l->tp * l->pp +
									  (l->has_cpu_offload ? l->cpu_offload_gib * PLAN_GIB * l->tp * l->pp : 0)));
	json_object_set_new(jm, "weights_source", json_str_or_null(r->has_weights ? f->weights_source : NULL));
	json_object_set_new(root, "model", jm);

	json_t *jp = json_object();
	json_object_set_new(jp, "verdict", json_string(plan_verdict_key(r->gpus_verdict)));
	json_object_set_new(jp, "message", json_str_or_null(r->gpus_message));
	json_object_set_new(jp, "tp", json_integer(l->tp));
	json_object_set_new(jp, "dp", json_integer(l->dp));
	json_object_set_new(jp, "pp", json_integer(l->pp));
	json_object_set_new(jp, "dp_attention", json_boolean(l->dp_attention));
	json_object_set_new(jp, "nnodes", json_integer(l->nnodes));
	json_object_set_new(jp, "gpus", json_integer(r->gpus));
	json_object_set_new(jp, "local_gpus", json_integer(r->local_gpus));
	json_object_set_new(jp, "attention_tp", json_integer(r->attn_tp));
	json_object_set_new(jp, "cuda_visible_devices", json_str_or_null(f->cuda_visible));
	json_object_set_new(jp, "gpu_ids", json_strs(r->gpu_ids, (size_t)r->ngpu_ids));
	json_object_set_new(jp, "gpu_ids_assumed", json_boolean(r->gpu_ids_assumed));
	json_object_set_new(root, "gpus", jp);

	json_t *jg = json_object();
	json_object_set_new(jg, "verdict", json_string(plan_verdict_key(r->gpu_verdict)));
	json_object_set_new(jg, "message", json_str_or_null(r->gpu_message));
	json_object_set_new(jg, "total_bytes", jnum(r->has_gpu_total, r->gpu_total));
	json_object_set_new(jg, "total_source", json_str_or_null(r->has_gpu_total ? f->gpu_source : NULL));
	json_object_set_new(jg, "fraction", json_real(r->fraction));
	json_object_set_new(jg, "fraction_flag", json_string(r->fraction_flag));
	json_object_set_new(jg, "fraction_assumed", json_boolean(r->fraction_assumed));
	json_object_set_new(jg, "budget_bytes", jnum(r->has_gpu_total, round(r->budget)));
	json_object_set_new(jg, "reserve_bytes", jnum(r->has_gpu_total, round(r->reserve)));
	json_object_set_new(jg, "weights_bytes_per_gpu", jnum(r->has_weights, round(r->weights_per_gpu)));
	json_object_set_new(jg, "overhead_bytes", jnum(true, round(r->overhead)));
	json_object_set_new(jg, "kv_pool_bytes", jnum(r->has_kv_pool, round(r->kv_pool)));
	json_object_set_new(root, "gpu_memory", jg);

	json_t *jk = json_object();
	json_object_set_new(jk, "verdict", json_string(plan_verdict_key(r->kv_verdict)));
	json_object_set_new(jk, "message", json_str_or_null(r->kv_message));
	json_object_set_new(jk, "dtype", json_str_or_null(r->kv_dtype));
	json_object_set_new(jk, "dtype_bytes", jnum(true, r->kv_dtype_bytes));
	json_object_set_new(jk, "bytes_per_token", jnum(r->has_cell, r->cell_bytes));
	json_object_set_new(jk, "formula", json_str_or_null(r->cell_formula));
	json_object_set_new(jk, "tokens_per_rank", jnum(r->has_tokens, (double)r->tokens));
	json_object_set_new(jk, "avg_tokens", json_integer(r->avg_tokens));
	json_object_set_new(jk, "concurrency", jnum(r->has_tokens, (double)r->concurrency));
	json_object_set_new(jk, "concurrency_total", jnum(r->has_tokens, (double)r->concurrency_total));
	json_object_set_new(jk, "concurrency_capped", json_boolean(r->concurrency_capped));
	json_object_set_new(jk, "tokens_per_fraction_point", jnum(r->has_tokens, (double)r->tokens_per_point));
	json_object_set_new(root, "kv_cache", jk);

	json_t *jh = json_object();
	json_object_set_new(jh, "verdict", json_string(plan_verdict_key(r->host_verdict)));
	json_object_set_new(jh, "message", json_str_or_null(r->host_message));
	json_object_set_new(jh, "available_bytes", jnum(r->has_host_avail, r->host_avail));
	json_object_set_new(jh, "available_source", json_str_or_null(r->has_host_avail ? f->host_source : NULL));
	json_object_set_new(jh, "asked_bytes", jnum(true, round(r->host_total)));
	json_object_set_new(jh, "headroom_bytes", jnum(r->has_host_avail, round(r->host_avail - r->host_total)));
	json_t *items = json_array();
	for (size_t i = 0; i < r->nhost; i++) {
		const struct plan_host_item *it = &r->host[i];
		json_t *ji = json_object();
		json_object_set_new(ji, "flag", json_string(it->flag));
		json_object_set_new(ji, "value", json_real(strtod(it->value, NULL)));
		json_object_set_new(ji, "scope", json_string(it->scope));
		json_object_set_new(ji, "what", json_string(it->what));
		json_object_set_new(ji, "count", json_integer(it->count));
		json_object_set_new(ji, "each_bytes", jnum(it->known, round(it->each_bytes)));
		json_object_set_new(ji, "total_bytes", jnum(it->known, round(it->total_bytes)));
		json_object_set_new(ji, "verdict", json_string(plan_verdict_key(it->verdict)));
		json_object_set_new(ji, "message", json_str_or_null(it->message));
		json_object_set_new(ji, "max_value", jnum(it->has_max, it->max_value));
		json_object_set_new(ji, "max_unit", json_str_or_null(it->max_unit));
		json_array_append_new(items, ji);
	}
	json_object_set_new(jh, "items", items);
	json_object_set_new(root, "host_memory", jh);

	json_object_set_new(root, "unknown_flags", json_strs(l->unknown, l->nunknown));
	json_t *notes = json_strs(f->notes, f->nnotes);
	json_t *ln = json_strs(l->notes, l->nnotes);
	json_array_extend(notes, ln);
	json_decref(ln);
	json_t *rn = json_strs(r->notes, r->nnotes);
	json_array_extend(notes, rn);
	json_decref(rn);
	json_object_set_new(root, "notes", notes);
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
	if (s)
		puts(s);
	free(s);
	json_decref(root);
}

/* The command ------------------------------------------------------------------------------------ */

static void fact_note(struct facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fact_note(struct facts *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(&f->notes, &f->nnotes, xvasprintf(fmt, ap));
	va_end(ap);
}

static void error_escaped(struct cli *c, const char *prefix, const char *msg)
{
	char *e = escape_term(msg, strlen(msg));
	cli_error(c, "%s%s", prefix, e);
	free(e);
}

/* Reads the launch of a running process: its argv and CUDA_VISIBLE_DEVICES. Returns 0 or an exit code. */
static int read_pid(struct cli *c, long pid, char ***argv, int *argc, char **cvd, bool *has_cvd, struct facts *f)
{
	char path[64];
	char *buf;
	size_t len;
	snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
	int rc = read_bounded(path, &buf, &len);
	if (rc == -ENOENT || rc == -ESRCH) {
		cli_error(c, "--pid %ld: no such process", pid);
		return EXIT_CANNOT;
	}
	if (rc < 0) {
		cli_error(c, "--pid %ld: cannot read %s: %s", pid, path, rc == -ETIMEDOUT ? "timed out (process stuck?)" : strerror(-rc));
		return EXIT_CANNOT;
	}
	if (!len) {
		cli_error(c, "--pid %ld: empty command line (a kernel thread or a zombie)", pid);
		free(buf);
		return EXIT_CANNOT;
	}
	*argv = launch_argv_from_nul(buf, len, argc);
	free(buf);
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	rc = read_bounded(path, &buf, &len);
	if (rc == 0) {
		*cvd = env_lookup(buf, len, "CUDA_VISIBLE_DEVICES");
		*has_cvd = *cvd != NULL;
		free(buf);
	} else {
		fact_note(f, "could not read /proc/%ld/environ (%s): CUDA_VISIBLE_DEVICES taken as unset", pid,
			  rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
	}
	return 0;
}

int cmd_plan(int argc, char **argv)
{
	struct cli c = {.cmd = "plan"};
	struct opts o = {.c = &c, .overhead = 0.5 * PLAN_GIB, .avg_tokens = 4000};
	int r = cli_parse(&c, argc, argv, "", options, on_option, &o, usage_text);
	if (r < 0)
		return cli_exit_for(r);
	int ret = EXIT_USAGE;
	struct facts f = {0};
	struct launch l;
	struct model_config model = {0};
	struct plan_result res = {0};
	char **pargv = NULL, *pcvd = NULL, *dir = NULL, *cfg_path = NULL, *err = NULL, *wsrc = NULL, *how = NULL;
	int pargc = 0;
	bool has_pcvd = false, have_model = false;
	memset(&l, 0, sizeof l);

	if (o.pid && r < argc) {
		cli_error(&c, "give either --pid PID or a launch command, not both");
		fputs("Try 'gpuwho plan --help'.\n", stderr);
		return EXIT_USAGE;
	}
	if (o.pid) {
		int e = read_pid(&c, o.pid, &pargv, &pargc, &pcvd, &has_pcvd, &f);
		if (e)
			return e;
		f.argv = pargv;
		f.argc = pargc;
		f.pid = o.pid;
	} else {
		if (r >= argc) {
			cli_error(&c, "no launch command: gpuwho plan [OPTIONS] -- LAUNCH COMMAND...");
			fputs("Try 'gpuwho plan --help'.\n", stderr);
			return EXIT_USAGE;
		}
		f.argv = argv + r;
		f.argc = argc - r;
	}
	if (launch_parse(f.argc, f.argv, &l)) {
		error_escaped(&c, "", l.error ? l.error : "cannot parse the launch command");
		goto out;
	}

	/* Which CUDA_VISIBLE_DEVICES the launch would see: its own prefix, the process's, or ours. */
	if (l.has_cuda_visible)
		f.cuda_visible = l.cuda_visible;
	else if (o.pid)
		f.cuda_visible = has_pcvd ? pcvd : NULL;
	else
		f.cuda_visible = getenv("CUDA_VISIBLE_DEVICES");

	/* The model: --model-config wins; else config.json of a local folder or the HF cache. */
	dir = model_find_dir(l.model, l.revision);
	f.model_dir = dir;
	if (o.model_config) {
		if (model_config_read(o.model_config, &model, &err)) {
			char *p = escape_term(o.model_config, strlen(o.model_config));
			char *pre = xasprintf("--model-config %s: ", p);
			error_escaped(&c, pre, err ? err : "unreadable");
			free(pre);
			free(p);
			goto out;
		}
		have_model = true;
		f.config_path = o.model_config;
	} else if (dir) {
		cfg_path = xasprintf("%s/config.json", dir);
		f.config_path = cfg_path;
		if (model_config_read(cfg_path, &model, &err) == 0)
			have_model = true;
		else
			fact_note(&f, "%s: %s; KV results unknown (fix it or pass --model-config)", cfg_path, err ? err : "unreadable");
	} else {
		fact_note(&f, "model %s is not a local folder nor in the Hugging Face cache: pass --model-config FILE and "
			      "--weights-gb N (plan never downloads)", l.model);
	}
	f.model = have_model ? &model : NULL;

	struct plan_input in = {
		.launch = &l,
		.model = f.model,
		.overhead_bytes = o.overhead,
		.avg_tokens = o.avg_tokens,
		.host_gpus = plan_gpu_count_live(),
		.cuda_visible = f.cuda_visible,
	};
	if (o.has_weights) {
		in.has_weights = true;
		in.weights_bytes = o.weights;
		f.weights_source = "--weights-gb";
	} else if (dir) {
		uint64_t b;
		free(err);
		err = NULL;
		if (model_weights_bytes(dir, &b, &how, &err) == 0) {
			in.has_weights = true;
			in.weights_bytes = (double)b;
			f.weights_source = how;
		} else {
			wsrc = xasprintf("%s; pass --weights-gb", err ? err : "no safetensors");
			f.weights_source = wsrc;
		}
	} else {
		f.weights_source = "pass --weights-gb";
	}
	double live;
	if (o.has_gpu_mem) {
		in.has_gpu_total = true;
		in.gpu_total_bytes = o.gpu_mem;
		f.gpu_source = "--gpu-mem";
	} else if (!c.no_nvml && plan_gpu_total_live(c.nvml_path, &live)) {
		in.has_gpu_total = true;
		in.gpu_total_bytes = live;
		f.gpu_source = "NVML";
	} else {
		fact_note(&f, "GPU memory unknown: pass --gpu-mem GiB");
	}
	if (o.has_host_mem) {
		in.has_host_avail = true;
		in.host_avail_bytes = o.host_mem;
		f.host_source = "--host-mem";
	} else {
		struct meminfo mi;
		if (meminfo_read(NULL, &mi) == 0 && mi.has_available) {
			in.has_host_avail = true;
			in.host_avail_bytes = (double)mi.available;
			f.host_source = "MemAvailable, /proc/meminfo";
		} else {
			fact_note(&f, "host memory unknown (no MemAvailable in /proc/meminfo): pass --host-mem");
		}
	}

	free(err);
	err = NULL;
	if (plan_compute(&in, &res, &err)) {
		error_escaped(&c, "", err ? err : "cannot plan this launch");
		goto out;
	}
	if (c.json)
		render_json(&l, &res, &f);
	else
		render_text(&l, &res, &f, cli_color(&c));
	ret = res.verdict == PLAN_NO_FIT ? EXIT_PROBLEM : EXIT_FINE;
out:
	if (ret == EXIT_USAGE)
		fputs("Try 'gpuwho plan --help'.\n", stderr);
	plan_result_free(&res);
	model_config_free(&model);
	launch_free(&l);
	launch_argv_free(pargv, pargc);
	for (size_t i = 0; i < f.nnotes; i++)
		free(f.notes[i]);
	free(f.notes);
	free(pcvd);
	free(dir);
	free(cfg_path);
	free(err);
	free(wsrc);
	free(how);
	return ret;
}
