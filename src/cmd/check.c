/* check: the health check schedulers run after every job (Slurm Epilog, LBNL NHC) — silent and 0
 * when the GPUs are clean, one short line per bad GPU and 1 otherwise. Collects lazily (NVML first,
 * the fd walk only when memory is unexplained: cmd_get_diagnosis). */
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "diagnose/diagnose.h"
#include "escape.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --wait polls this often: the driver frees a killed holder's memory within about a second (8 x 8
 * GiB on an H200: 0.76 s), so a finer poll only costs CPU. */
#define CHECK_POLL_S 0.25
#define CHECK_WAIT_MAX 3600

static const char usage[] =
	"Usage: gpuwho check [OPTIONS] [GPU...]\n"
	"\n"
	"The health check for schedulers (a Slurm Epilog, an NHC check): prints nothing and exits 0\n"
	"when the GPUs are clean; otherwise one short line per bad GPU, fit for a drain reason, and\n"
	"exit 1:\n"
	"  gpu 1: 96,413 MiB held by PID 1234 (python, job 4242 of user alice), a <defunct> process\n"
	"  whose threads still run - gpuwho why 1\n"
	"It judges GPU state only: memory held by no live process (a driver leak), <defunct> leaders,\n"
	"orphaned workers, processes that inherited an exited one's device files, stopped holders,\n"
	"processes stuck in the driver, GPU health (lost, retired or remapped pages, ECC), and with\n"
	"--ended-job a process of that job still holding memory. It reads only what its verdicts need:\n"
	"NVML first, then every process's files only when NVML shows memory it cannot tie to a live\n"
	"process. A GPU whose memory is still being released is not a failure (see --wait).\n"
	"\n"
	"Which GPUs: the arguments (and -i), else $SLURM_JOB_GPUS, else $SLURM_STEP_GPUS, else\n"
	"$CUDA_VISIBLE_DEVICES (indexes or UUIDs), else every GPU.\n"
	CLI_GPU_SELECTORS_HELP
	"\n"
	"Options:\n"
	"  --wait SECONDS   poll until the GPUs are clean or SECONDS have passed (memory is freed by the\n"
	"                   driver after a job ends, usually within a second); 0: look once (default)\n"
	"  --ended-job ID   the Slurm job that just ended: its processes still holding GPU memory fail\n"
	"                   the check (default: $SLURM_JOB_ID when run as an epilog, i.e. when\n"
	"                   $SLURM_SCRIPT_CONTEXT is epilog_slurmd)\n"
	"  --host           also report host-wide problems (leaked /dev/shm, low host memory) as\n"
	"                   \"host: ...\" lines; they never fail the check\n"
	"  --from FILE      check a snapshot (gpuwho snapshot -o FILE) instead of this host\n"
	"  --nvml PATH      load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml        do not ask NVML (check then has nothing to judge: exit 3)\n"
	CLI_GPU_ID_HELP
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  gpuwho check                          every GPU (or the job's, inside a Slurm job)\n"
	"  gpuwho check --wait 10 0,1            GPUs 0 and 1, allowing 10 s for memory to come back\n"
	"  line=$(gpuwho check --wait 10) || scontrol update nodename=$(hostname -s) state=drain \\\n"
	"      reason=\"$line\"                  a Slurm Epilog (docs/fleet.md)\n"
	"  gpuwho check --json | jq -r '.gpus[] | select(.ok | not) | .line'\n"
	"\n"
	"Exit status: 0 every selected GPU is clean, 1 at least one is not (its line says why),\n"
	"2 bad usage (a selector that names no GPU, from the arguments or the environment),\n"
	"3 nothing could be inspected (NVML did not answer, or the --from file could not be loaded):\n"
	"the caller decides (an epilog should not drain a node for that alone).\n";

enum { OPT_WAIT = 1000, OPT_HOST, OPT_ENDED_JOB };

struct check_args {
	double wait_s;
	bool host;
	const char *ended_job;
};

static int parse_opt(int opt, const char *arg, void *ctx)
{
	struct check_args *a = ctx;
	unsigned long long n;
	switch (opt) {
	case OPT_HOST: a->host = true; return 0;
	case OPT_WAIT:
		if (!parse_uint(arg, &n) || n > CHECK_WAIT_MAX) {
			char *e = escape_term(arg, strlen(arg));
			fprintf(stderr, "gpuwho check: --wait wants whole seconds from 0 to %d, not '%s'\n", CHECK_WAIT_MAX, e);
			free(e);
			return -1;
		}
		a->wait_s = (double)n;
		return 0;
	case OPT_ENDED_JOB:
		if (!parse_uint(arg, &n)) {
			char *e = escape_term(arg, strlen(arg));
			fprintf(stderr, "gpuwho check: --ended-job wants a Slurm job id (digits), not '%s'\n", e);
			free(e);
			return -1;
		}
		a->ended_job = arg;
		return 0;
	}
	return -1;
}

/* The selectors and where they came from: the arguments, else the scheduler's variables. CUDA's
 * "NoDevFiles" and negative indexes (hide every GPU) select nothing we could check: all, then. */
static const char *pick_source(int nargs, const char **value)
{
	*value = NULL;
	if (nargs > 0)
		return "arguments";   /* operands or -i */
	static const char *const vars[] = {"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v && strcmp(v, "NoDevFiles") && v[0] != '-') {
			*value = v;
			return vars[i];
		}
	}
	return "all";
}

/* The epilog's job: Slurm runs the Epilog with SLURM_SCRIPT_CONTEXT=epilog_slurmd and the ended
 * job's SLURM_JOB_ID; elsewhere SLURM_JOB_ID is the job gpuwho itself runs in, which has not ended. */
static const char *epilog_job(void)
{
	const char *ctx = getenv("SLURM_SCRIPT_CONTEXT");
	const char *id = getenv("SLURM_JOB_ID");
	unsigned long long n;
	if (ctx && str_starts(ctx, "epilog") && id && parse_uint(id, &n))
		return id;
	return NULL;
}

/* Judges each selected GPU of d: bad when its worst finding is a warning or needs action, or when
 * a process of the ended job still has memory on it. Returns how many are bad. */
static size_t judge(const struct diagnosis *d, const bool *sel, const char *ended, struct check_gpu **out, size_t *n)
{
	*out = xcalloc(d->acct.ngpus + 1, sizeof **out);
	*n = 0;
	size_t nbad = 0;
	for (size_t k = 0; k < d->acct.ngpus; k++) {
		if (sel && !sel[k])
			continue;
		struct check_gpu *cg = &(*out)[(*n)++];
		cg->slot = k;
		/* Findings are sorted worst first within a GPU. */
		for (size_t i = 0; i < d->nfindings && !cg->finding; i++)
			if (d->findings[i].slot == (int)k)
				cg->finding = &d->findings[i];
		cg->job_row = diag_job_row(&d->acct.gpus[k], ended);
		cg->bad = (cg->finding && cg->finding->severity >= DIAG_WARNING) || cg->job_row;
		nbad += cg->bad;
	}
	return nbad;
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cmd_check(int argc, char **argv)
{
	struct cli c = {.cmd = "check", .gpus = true};
	struct check_args a = {0};
	static const struct option own[] = {
		{"wait", required_argument, NULL, OPT_WAIT},
		{"host", no_argument, NULL, OPT_HOST},
		{"ended-job", required_argument, NULL, OPT_ENDED_JOB},
		{0, 0, 0, 0},
	};
	int r = cli_parse(&c, argc, argv, "", own, parse_opt, &a, usage);
	if (r < 0)
		return cli_exit_for(r);
	const char *ended = a.ended_job ? a.ended_job : epilog_job();
	const char *envsel;
	const char *source = pick_source(argc - r + c.nids, &envsel);
	/* cmd_select_gpus takes comma lists and "all" (account_select_list), as the variables hold them. */
	char *envv[1] = {(char *)envsel};
	char *const *sels = envsel ? envv : argv + r;
	int nsels = envsel ? 1 : argc - r;

	uint64_t t0 = now_ns();
	struct snapshot s;
	struct diagnosis d;
	int code = EXIT_FINE;
	bool *gsel = NULL;
	struct check_gpu *gpus = NULL;
	size_t ngpus = 0, nbad = 0;
	if (cmd_get_diagnosis(&c, a.host, &s, &d) != 0) {
		code = EXIT_CANNOT;
		goto out_nodiag;
	}
	for (;;) {
		if (!s.nvml.loaded || !s.nvml_asked)
			break;
		free(gsel);
		gsel = NULL;
		if (cmd_select_gpus(&c, &d.acct, sels, nsels, &gsel) != EXIT_FINE) {
			if (envsel)
				fprintf(stderr, "gpuwho check: (the selectors above come from $%s)\n", source);
			code = EXIT_USAGE;
			goto out;
		}
		free(gpus);
		nbad = judge(&d, gsel, ended, &gpus, &ngpus);
		double waited = (double)(now_ns() - t0) / 1e9;
		if (!nbad || c.from || waited + CHECK_POLL_S > a.wait_s)
			break;
		/* Memory still being released right after a job is not a failure: look again. */
		sleep_s(CHECK_POLL_S);
		diag_free(&d);
		snapshot_free(&s);
		if (cmd_get_diagnosis(&c, a.host, &s, &d) != 0) {
			code = EXIT_CANNOT;
			goto out_nodiag;
		}
	}
	struct check_report rep = {.s = &s, .d = &d, .gpus = gpus, .ngpus = ngpus, .selected_by = source,
				   .ended_job = ended, .host = a.host, .inspected = s.nvml_asked && s.nvml.loaded,
				   .waited_s = a.wait_s > 0 ? (double)(now_ns() - t0) / 1e9 : 0};
	if (!rep.inspected) {
		/* Without NVML there is no memory to judge: the caller decides what that means. */
		char *why = xstrdup(!s.nvml_asked ? "NVML was not asked (--no-nvml)"
						 : s.nvml.error ? s.nvml.error : "NVML did not answer");
		rep.error = why;
		if (c.json) {
			cmd_print_json(render_check_json(&rep));
		} else {
			char *e = escape_term(why, strlen(why));
			cli_error(&c, "cannot inspect the GPUs: %s", e);
			free(e);
		}
		free(why);
		code = EXIT_CANNOT;
		goto out;
	}
	if (c.json)
		cmd_print_json(render_check_json(&rep));
	else
		render_check_text(stdout, &rep);
	code = nbad ? EXIT_PROBLEM : EXIT_FINE;
out:
	diag_free(&d);
	snapshot_free(&s);
out_nodiag:
	free(gpus);
	free(gsel);
	return code;
}
