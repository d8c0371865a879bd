/* plan: pre-flight of an SGLang/vLLM launch: GPU and host memory per rank, KV tokens, concurrency. */
#include "cli.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "escape.h"
#include "json.h"
#include "plan/enginelog.h"
#include "plan/launch.h"
#include "plan/live.h"
#include "plan/model.h"
#include "plan/plan.h"
#include "proc/holders.h"
#include "sys/meminfo.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"Usage: gpuwho plan [OPTIONS] -- LAUNCH COMMAND...\n"
	"       gpuwho plan [OPTIONS] --pid PID\n"
	"\n"
	"Checks an SGLang or vLLM launch before you run it: the GPUs it takes, weights and KV cache per\n"
	"GPU, how many tokens the KV cache holds and how many requests run at once, and the host memory\n"
	"its flags pin, multiplied out to the whole node. Nothing is launched and nothing is downloaded.\n"
	"\n"
	"Launch commands understood: python -m sglang.launch_server ..., sglang serve ...,\n"
	"python -m sglang_router.launch_server ..., vllm serve MODEL ...,\n"
	"python -m vllm.entrypoints.openai.api_server ..., also behind env, VAR=value, nohup,\n"
	"numactl, taskset, uv run, torchrun -m, and docker/podman run IMAGE (vllm/vllm-openai's\n"
	"entrypoint included); --config FILE (YAML) is read under the command line's flags.\n"
	"\n"
	"Options:\n"
	"  --pid PID          plan the server running as PID (reads /proc/PID/cmdline and its\n"
	"                     CUDA_VISIBLE_DEVICES from /proc/PID/environ when readable)\n"
	"  --gpu-mem SIZE     one GPU's total memory (default: live, when NVML is available)\n"
	"  --host-mem SIZE    host memory available (default: MemAvailable from /proc/meminfo)\n"
	"  --model-config FILE  the model's config.json, when --model-path is not a local folder\n"
	"                     or in the Hugging Face cache ($HF_HOME/hub)\n"
	"  --weights-gb SIZE  the whole checkpoint's size (default: from the safetensors metadata)\n"
	"  --overhead SIZE    per-GPU memory besides weights and KV, replacing plan's estimate of\n"
	"                     the CUDA context, communication buffers and vLLM's activation peak\n"
	"  --avg-tokens N     tokens per request (prompt + output) for concurrency (default 4000)\n"
	"  --log FILE         an SGLang or vLLM server log of this launch: print predicted against\n"
	"                     what the engine printed (KV tokens, pool, weights, ...), term by term\n"
	"  --engine-version V the engine's release (e.g. 0.11): plan models what changed since\n"
	"                     (vLLM 0.20 counts CUDA graphs, defaults to 0.92); default: the release\n"
	"                     the --log names, else the current one\n"
	"  --nvml PATH        read the GPUs' memory live through this libnvidia-ml (default\n"
	"                     libnvidia-ml.so.1, also $GPUWHO_NVML)\n"
	"  --no-nvml          do not read the GPUs live: plan from --gpu-mem alone\n"
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

enum { OPT_PID = 0x2000, OPT_GPU_MEM, OPT_HOST_MEM, OPT_MODEL_CONFIG, OPT_WEIGHTS, OPT_OVERHEAD, OPT_AVG, OPT_LOG, OPT_ENGINE_VERSION };

static const struct option options[] = {
	{"pid", required_argument, NULL, OPT_PID},
	{"gpu-mem", required_argument, NULL, OPT_GPU_MEM},
	{"host-mem", required_argument, NULL, OPT_HOST_MEM},
	{"model-config", required_argument, NULL, OPT_MODEL_CONFIG},
	{"weights-gb", required_argument, NULL, OPT_WEIGHTS},
	{"overhead", required_argument, NULL, OPT_OVERHEAD},
	{"avg-tokens", required_argument, NULL, OPT_AVG},
	{"log", required_argument, NULL, OPT_LOG},
	{"engine-version", required_argument, NULL, OPT_ENGINE_VERSION},
	{0},
};

struct opts {
	struct cli *c;
	long pid;
	const char *model_config;
	double gpu_mem, host_mem, weights, overhead;
	bool has_gpu_mem, has_host_mem, has_weights, has_overhead;
	const char *log;
	long avg_tokens;
	int engine_version;   /* --engine-version, 0: not given */
};

/* Parses "96", "96GiB", "449GB", "0.5TiB" into bytes; a bare number is in `unit` bytes. Returns 0,
 * -ERANGE for a number a double cannot hold (*out: 0 when too small, 1e308 or more when too large),
 * or -EINVAL for anything else, including negative, NaN and infinite values. */
static int parse_size(const char *s, double unit, double *out)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{"B", 1}, {"KB", 1e3}, {"KiB", 1024.0}, {"MB", 1e6}, {"MiB", 1048576.0}, {"GB", 1e9},
		{"GiB", PLAN_GIB}, {"TB", 1e12}, {"TiB", PLAN_GIB * 1024}, {"K", 1024.0}, {"M", 1048576.0},
		{"G", PLAN_GIB}, {"T", PLAN_GIB * 1024},
	};
	if (!s || !*s)
		return -EINVAL;
	size_t n = strspn(s, "0123456789.eE+-");
	/* "1e" followed by a unit would be read as an exponent: back off over a trailing 'e'/'E'. */
	while (n && (s[n - 1] == 'e' || s[n - 1] == 'E'))
		n--;
	if (!n || n > 40)
		return -EINVAL;
	char num[48];
	memcpy(num, s, n);
	num[n] = '\0';
	char *end;
	errno = 0;
	double v = strtod(num, &end);
	bool range = errno == ERANGE;
	if (*end || end == num || (errno && !range) || isnan(v) || v < 0)
		return -EINVAL;
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
			return -EINVAL;
	}
	if (range) {
		/* 1e-320 (a denormal or 0) or 1e999 (HUGE_VAL): no size anyone meant. */
		*out = v < 1 ? 0 : HUGE_VAL;
		return -ERANGE;
	}
	*out = v * mult;
	return isfinite(*out) ? 0 : -ERANGE;
}

/* Reads option --NAME's SIZE into *out, within [min, max] (`range` says it in words). */
static int opt_size(struct opts *o, const char *name, const char *arg, double unit, double min, double max,
		    const char *range, double *out)
{
	double v;
	int rc = parse_size(arg, unit, &v);
	if (rc == -EINVAL) {
		char *e = escape_term(arg, strlen(arg));
		cli_error(o->c, "--%s %s: not a size (a number, optionally with GB, GiB, TB, TiB, MB, MiB)", name, e);
		free(e);
		return -1;
	}
	/* A number too small for a double (1e-320) is too small to be real even where 0 is allowed. */
	bool small = rc == -ERANGE ? v < 1 : v < min;
	if (rc == -ERANGE || v < min || v > max) {
		char *e = escape_term(arg, strlen(arg));
		cli_error(o->c, "--%s %s: %s (%s)", name, e, small ? "too small to be real" : "absurdly large", range);
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
		return opt_size(o, "gpu-mem", arg, PLAN_GIB, 64 * 1048576.0, 64 * PLAN_GIB * 1024, "64 MiB to 64 TiB",
				&o->gpu_mem);
	case OPT_HOST_MEM:
		o->has_host_mem = true;
		return opt_size(o, "host-mem", arg, PLAN_GIB, 1, 1e18, "1 byte to 1,000,000 TB", &o->host_mem);
	case OPT_WEIGHTS:
		o->has_weights = true;
		return opt_size(o, "weights-gb", arg, PLAN_GB, 1, 1e16, "1 byte to 10,000 TB", &o->weights);
	case OPT_OVERHEAD:
		o->has_overhead = true;
		return opt_size(o, "overhead", arg, PLAN_GIB, 0, 64 * PLAN_GIB * 1024, "0 to 64 TiB", &o->overhead);
	case OPT_MODEL_CONFIG:
		o->model_config = arg;
		return 0;
	case OPT_LOG:
		o->log = arg;
		return 0;
	case OPT_ENGINE_VERSION: {
		int v, len = plan_parse_version(arg, &v);
		if (!len || arg[len]) {
			cli_error(o->c, "--engine-version: a release such as 0.21 or 0.11.2 (major.minor[.patch])");
			return -1;
		}
		o->engine_version = v;
		return 0;
	}
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

/* The command ------------------------------------------------------------------------------------ */

static void fact_note(struct plan_facts *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fact_note(struct plan_facts *f, const char *fmt, ...)
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

/* Reads the launch of a running process: its argv and CUDA_VISIBLE_DEVICES, through the holder
 * engine's bounded reader (cmdline and environ can block on a process stuck in D state). Returns 0
 * or an exit code. */
static int read_pid(struct cli *c, long pid, char ***argv, int *argc, char **cvd, bool *has_cvd, struct plan_facts *f)
{
	struct holders_opts ho = {.proc_root = holders_proc_root(), .env_name = "CUDA_VISIBLE_DEVICES"};
	int ipid = (int)pid;
	struct proc_info *p = NULL;
	size_t n = 0;
	char **notes = NULL;
	size_t nnotes = 0;
	int rc = holders_read_procs(&ho, &ipid, 1, &p, &n, &notes, &nnotes);
	for (size_t i = 0; i < nnotes; i++)
		free(notes[i]);   /* a timed-out read is also in p->missing, which is what we report */
	free(notes);
	int ret = EXIT_CANNOT;
	if (rc < 0) {
		cli_error(c, "--pid %ld: cannot read %s: %s", pid, ho.proc_root, strerror(-rc));
	} else if (n == 0) {
		cli_error(c, "--pid %ld: no such process", pid);
	} else if (!p->cmdline) {
		char *m = escape_str(p->missing ? p->missing : "cmdline unreadable");
		cli_error(c, "--pid %ld: cannot read its command line: %s", pid, m);
		free(m);
	} else if (!p->cmdline_len) {
		cli_error(c, "--pid %ld: empty command line (a kernel thread or a zombie)", pid);
	} else {
		*argv = launch_argv_from_nul(p->cmdline, p->cmdline_len, argc);
		*cvd = p->env_value;
		*has_cvd = p->env_value != NULL;
		p->env_value = NULL;
		if (p->env_err)
			fact_note(f, "could not read /proc/%ld/environ (%s): CUDA_VISIBLE_DEVICES taken as unset", pid,
				  strerror(-p->env_err));
		ret = 0;
	}
	for (size_t i = 0; i < n; i++)
		proc_info_free(&p[i]);
	free(p);
	return ret;
}

int cmd_plan(int argc, char **argv)
{
	struct cli c = {.cmd = "plan", .refuse = CLI_REFUSE_FROM};   /* a launch line, not a snapshot */
	struct opts o = {.c = &c, .overhead = 0.5 * PLAN_GIB, .avg_tokens = 4000};
	int r = cli_parse(&c, argc, argv, "", options, on_option, &o, usage_text);
	if (r < 0)
		return cli_exit_for(r);
	int ret = EXIT_USAGE;
	struct plan_facts f = {0};
	struct launch l;
	struct model_config model = {0};
	struct plan_result res = {0};
	char **pargv = NULL, *pcvd = NULL, *dir = NULL, *cfg_path = NULL, *err = NULL, *wsrc = NULL, *how = NULL;
	int pargc = 0;
	bool has_pcvd = false, have_model = false, have_log = false;
	struct engine_log elog;
	struct log_compare cmp = {0};
	memset(&elog, 0, sizeof elog);
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
	if (o.log) {
		/* The log is read whole (up to 256 MiB: a start-up log is kilobytes; anything bigger is
		 * cut there, and its memory lines are near the start). */
		char *text = NULL;
		size_t tlen = 0;
		int rc = readfile_at(AT_FDCWD, o.log, &text, &tlen, 256u << 20);
		char *pe = escape_term(o.log, strlen(o.log));
		if (rc < 0) {
			cli_error(&c, "--log %s: %s", pe, strerror(-rc));
			free(pe);
			goto out;
		}
		char *lerr = NULL;
		rc = engine_log_parse(text, tlen, &elog, &lerr);
		free(text);
		if (rc) {
			char *pre = xasprintf("--log %s: ", pe);
			error_escaped(&c, pre, lerr);
			free(pre);
			free(lerr);
			free(pe);
			goto out;
		}
		free(pe);
		have_log = true;
		if (elog.engine != LAUNCH_UNKNOWN && elog.engine != l.engine)
			fact_note(&f, "--log is a %s log but the launch is %s's", launch_engine_name(elog.engine),
				  launch_engine_name(l.engine));
		if (elog.cudagraph_off && !l.has_cg_profile_env) {
			/* The log says the launch ran with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0. */
			l.has_cg_profile_env = true;
			l.cg_profile_env = false;
		}
		if (elog.tokens_from_blocks && l.page_size)
			elog.tokens = elog.tokens / 16 * (uint64_t)l.page_size;
	}
	if (l.config_file) {
		/* --config FILE: its settings under the command line's (a relative path is looked up from
		 * here; for --pid, from the process's working directory when readable). */
		char *text = NULL, *cpath = o.pid && l.config_file[0] != '/' ? xasprintf("/proc/%ld/cwd/%s", o.pid, l.config_file)
										: xstrdup(l.config_file);
		size_t tlen = 0;
		int rc = readfile_at(AT_FDCWD, cpath, &text, &tlen, 1u << 20);
		if (rc < 0) {
			fact_note(&f, "--config %s: %s; its settings are not counted", l.config_file, strerror(-rc));
		} else if (launch_apply_config(&l, text, tlen, f.argc, f.argv)) {
			error_escaped(&c, "--config: ", l.error ? l.error : "cannot apply");
			free(text);
			free(cpath);
			goto out;
		}
		free(text);
		free(cpath);
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
		.estimate_overhead = !o.has_overhead,
		.avg_tokens = o.avg_tokens,
		.engine_version = o.engine_version ? o.engine_version : have_log ? elog.version : 0,
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
	double live, reserved, used;
	if (o.has_gpu_mem) {
		in.has_gpu_total = true;
		in.gpu_total_bytes = o.gpu_mem;
		f.gpu_source = "--gpu-mem";
	} else if (!c.no_nvml && plan_gpu_live(c.nvml_path, &live, &reserved, &used)) {
		/* CUDA's total is NVML's less the driver's reserve; memory in use now is gone for the
		 * launch too (except, with --pid, the server's own). */
		in.has_gpu_total = true;
		in.gpu_total_bytes = live;
		in.has_driver_reserve = reserved > 0;
		in.driver_reserve_bytes = reserved;
		f.gpu_source = "NVML";
		if (!o.pid) {
			in.has_gpu_used = true;
			in.gpu_used_bytes = used;
		} else {
			fact_note(&f, "--pid: the memory in use on the GPUs includes the server's own, so it is not "
				      "taken off (other processes' share is unknown)");
		}
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

	f.weights_total = in.weights_bytes;
	free(err);
	err = NULL;
	if (plan_compute(&in, &res, &err)) {
		error_escaped(&c, "", err ? err : "cannot plan this launch");
		goto out;
	}
	if (have_log)
		engine_log_compare(&elog, &res, &cmp);
	if (c.json) {
		json_t *j = render_plan_json(&l, &res, &f);
		if (have_log)
			json_object_set_new(j, "log", render_plan_log_json(o.log, &elog, &cmp));
		cmd_print_json(j);
	} else {
		/* The report fits 80 columns wherever it goes (a terminal, a ticket, a log). */
		struct render_opts ro = cmd_render_opts(&c);
		ro.width = 80;
		render_plan_text(stdout, &l, &res, &f, &ro);
		if (have_log)
			render_plan_log_text(stdout, o.log, &elog, &cmp, &ro);
	}
	ret = res.verdict == PLAN_NO_FIT ? EXIT_PROBLEM : EXIT_FINE;
out:
	if (ret == EXIT_USAGE)
		fputs("Try 'gpuwho plan --help'.\n", stderr);
	log_compare_free(&cmp);
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
