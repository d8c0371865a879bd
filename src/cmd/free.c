/* free: safe cleanup of GPUs — prints whom it would signal and why (dry run), or with --yes signals them, verifies the memory came back, and reports. */
#include "cli.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "diagnose/diagnose.h"
#include "escape.h"
#include "free/act.h"
#include "free/plan.h"
#include "render/render.h"
#include "snapshot/snapshot.h"
#include "proc/holders.h"
#include "sys/shm.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GRACE_DEFAULT 10
#define GRACE_MAX 3600
#define SETTLE_S 10        /* after the grace: for SIGKILL to take and the memory to come back */
#define SETTLE_MAX 600
#define RESET_TIMEOUT_S 120

static const char usage[] =
	"Usage: gpuwho free GPU... [--yes] [OPTIONS]\n"
	"       gpuwho free --shm [--yes]       only the /dev/shm segments left by processes that exited\n"
	"\n"
	"Frees the selected GPUs safely. Without --yes it only prints the plan (a dry run): which\n"
	"processes it would signal and why, which it would spare and why, and how much memory should\n"
	"come back. With --yes it sends SIGTERM (and SIGCONT to stopped processes), waits up to --grace\n"
	"seconds, sends SIGKILL to what is left, then looks again until the memory is back (at most 10 s\n"
	"more) and reports per GPU: memory before and after, who exited on which signal, who did not and\n"
	"why, and the next step.\n"
	"\n"
	"Whom it signals: processes with evidence that they are the selected GPUs' job. A holder is\n"
	"signalled when NVML lists it on the GPU and it holds the GPU's device file, when it has a CUDA\n"
	"context there (it maps the device file and holds /dev/nvidia-uvm), or when it holds the device\n"
	"file and its process group or session is an exited PID NVML still lists (an heir).\n"
	"Then the holders' launchers up to the job's root (the walk up stops below PID 1, service\n"
	"managers, container runtimes, schedulers and interactive shells), and the job's other\n"
	"processes with a CUDA context. Never: PID 1, gpuwho and its ancestors, kernel threads, system\n"
	"GPU services and display servers (nvidia-persistenced, nv-hostengine, nvidia-fabricmanager,\n"
	"MPS daemons, dcgm*, Xorg, Xwayland, compositors) unless --include names them; monitors (they\n"
	"hold the device without a CUDA context: nvidia-smi, nvitop, exporters) and PIDs NVML lists that\n"
	"hold no NVIDIA file (a reused PID?) unless --include gives their PID; other users' processes\n"
	"unless --all-users (as root); processes (or jobs) that also use GPUs not selected unless\n"
	"--spill. Processes outside this PID namespace cannot be signalled from here: run gpuwho on the\n"
	"host. Right before the signals, through a pidfd opened first, each process must still be the\n"
	"planned one (start time, owner, name) and still hold what made it a target (docs/free.md).\n"
	"\n"
	CLI_GPU_SELECTORS_HELP
	"\n"
	"Options:\n"
	"  --yes            act (default: dry run)\n"
	"  --grace SECONDS  SIGTERM to SIGKILL (0..3600, default 10)\n"
	"  --include NAME|PID  signal a protected process named NAME, or the process PID that\n"
	"                   was spared as a monitor or for lack of evidence (repeatable)\n"
	"  --all-users      signal other users' processes too (root only)\n"
	"  --spill          signal processes and jobs that also use GPUs not selected\n"
	"  --shm            also remove /dev/shm segments whose creator has exited and that nobody holds\n"
	"  --reset          with --yes, as root, once no process holds the GPU: run\n"
	"                   `nvidia-smi --gpu-reset -i N` ($GPUWHO_RESET_CMD replaces nvidia-smi)\n"
	"  --from FILE      plan from a snapshot (gpuwho snapshot -o FILE): a dry run only; --yes\n"
	"                   with --from is refused, since the snapshot's PIDs may be others' now\n"
	"  --nvml PATH      load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml        do not ask NVML: holders only, memory unknown\n"
	CLI_GPU_ID_HELP
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  gpuwho free 0 2                   what freeing GPUs 0 and 2 would do\n"
	"  gpuwho free 0 2 --yes             do it\n"
	"  gpuwho free 0 --yes --grace 30 --shm\n"
	"  gpuwho free --shm --yes           remove the leaked /dev/shm segments, signal nobody\n"
	"\n"
	"Exit status: dry run: 0 plan printed (whether or not it would free everything: see the\n"
	"\"Not signalled\" list), 2 bad usage (--yes with --from too) or an unknown GPU, 3 nothing\n"
	"could be inspected or the --from file could not be loaded. --yes: 0 every selected GPU is\n"
	"free (no process holds memory on it and NVML's used memory is below 256 MiB) and every asked\n"
	"reset and /dev/shm removal succeeded; 1 otherwise; 2 and 3 as above.\n";

enum { OPT_YES = 1000, OPT_GRACE, OPT_INCLUDE, OPT_ALL_USERS, OPT_SPILL, OPT_SHM, OPT_RESET };

struct free_args {
	bool yes, all_users, spill, shm, reset;
	unsigned grace;
	const char **include;
	size_t ninclude;
};

static int parse_opt(int opt, const char *arg, void *ctx)
{
	struct free_args *a = ctx;
	unsigned long long n;
	switch (opt) {
	case OPT_YES: a->yes = true; return 0;
	case OPT_ALL_USERS: a->all_users = true; return 0;
	case OPT_SPILL: a->spill = true; return 0;
	case OPT_SHM: a->shm = true; return 0;
	case OPT_RESET: a->reset = true; return 0;
	case OPT_GRACE:
		if (!parse_uint(arg, &n) || n > GRACE_MAX) {
			char *e = escape_term(arg, strlen(arg));
			cli_error(&(struct cli){.cmd = "free"}, "--grace wants whole seconds from 0 to %d, not '%s'", GRACE_MAX, e);
			free(e);
			return -1;
		}
		a->grace = (unsigned)n;
		return 0;
	case OPT_INCLUDE:
		a->include = xrealloc(a->include, (a->ninclude + 1) * sizeof *a->include);
		a->include[a->ninclude++] = arg;
		return 0;
	}
	return -1;
}

/* The settle time: SETTLE_S, or $GPUWHO_FREE_SETTLE_S (0..600), a test hook like GPUWHO_PROC_ROOT:
 * the end-to-end tests whose memory never comes back (stand-in GPUs, spared processes) need not
 * wait out the full 10 s each. */
static unsigned settle_seconds(void)
{
	const char *v = getenv("GPUWHO_FREE_SETTLE_S");
	unsigned long long n;
	return v && parse_uint(v, &n) && n <= SETTLE_MAX ? (unsigned)n : SETTLE_S;
}

/* gpuwho's own PID and its live ancestors: never signalled, whatever the snapshot says (with
 * --from, the snapshot's were another gpuwho's). */
static int *live_self(const char *proc_root, size_t *n)
{
	int procfd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t na;
	int *anc = proc_ancestors(procfd, (int)getpid(), &na);
	if (procfd >= 0)
		close(procfd);
	int *v = xmalloc((na + 1) * sizeof *v);
	v[0] = (int)getpid();
	for (size_t i = 0; i < na; i++)
		v[i + 1] = anc[i];
	*n = na + 1;
	free(anc);
	return v;
}

/* MPS is running: free ends its clients (they hold CUDA contexts) and spares the daemons, which
 * serve every client; stopping MPS is `quit` to its control daemon, through the pipe folder that
 * daemon was started with ($CUDA_MPS_PIPE_DIRECTORY in its environment, when set). */
static char *mps_note(const struct cli *c, int pid)
{
	char *head = xasprintf("MPS is running (nvidia-cuda-mps-control, PID %d): free ends its clients and leaves the "
			       "MPS daemons, which serve every client. To stop MPS once nothing needs it: ", pid);
	char *cmd = NULL;
	if (!c->from) {
		struct holders_opts ho = {.proc_root = holders_proc_root(), .env_name = "CUDA_MPS_PIPE_DIRECTORY"};
		struct proc_info *p = NULL;
		size_t n = 0, nnotes = 0;
		char **notes = NULL;
		if (holders_read_procs(&ho, &pid, 1, &p, &n, &notes, &nnotes) == 0 && n == 1 && !p->env_err) {
			if (!p->env_value)
				cmd = xstrdup("echo quit | nvidia-cuda-mps-control");
			else if (escape_is_plain(p->env_value)) {
				char *q = escape_shell(p->env_value);
				cmd = xasprintf("echo quit | CUDA_MPS_PIPE_DIRECTORY=%s nvidia-cuda-mps-control", q);
				free(q);
			}
		}
		for (size_t i = 0; i < n; i++)
			proc_info_free(&p[i]);
		free(p);
		for (size_t i = 0; i < nnotes; i++)
			free(notes[i]);
		free(notes);
	}
	char *note = cmd ? xasprintf("%s%s", head, cmd)
			 : xasprintf("%secho quit | CUDA_MPS_PIPE_DIRECTORY=DIR nvidia-cuda-mps-control, with the DIR of "
				     "PID %d's CUDA_MPS_PIPE_DIRECTORY (/tmp/nvidia-mps when it has none)", head, pid);
	free(head);
	free(cmd);
	return note;
}

struct collect_ctx {
	struct snapshot_opts so;
};

static int collect_again(void *ctx, struct snapshot *out)
{
	struct collect_ctx *c = ctx;
	return snapshot_collect(&c->so, out);
}

/* The next step per selected GPU for what remains: the worst finding `why` makes of the last look
 * (its headline and fix), when it is worth acting on. */
static void next_steps(const struct free_plan *plan, const struct free_report *r, char **next, char **verdict)
{
	if (!r->after_ok)
		return;
	struct diagnosis d;
	diagnose(&r->after, &d);
	for (size_t i = 0; i < plan->ngpus; i++) {
		if (r->gpus[i].free)
			continue;
		const struct account_gpu *g = &plan->acct.gpus[plan->gpus[i].slot];
		const struct finding *best = NULL;
		for (size_t k = 0; k < d.nfindings; k++) {
			const struct finding *x = &d.findings[k];
			bool same = g->index >= 0 ? x->gpu == g->index : (x->minor >= 0 && x->minor == g->minor);
			if (same && x->severity >= DIAG_WARNING && (!best || x->severity > best->severity))
				best = x;
		}
		if (best) {
			next[i] = best->fix ? xasprintf("%s — %s", best->headline, best->fix) : xstrdup(best->headline);
			verdict[i] = xstrdup(best->verdict);
		} else {
			next[i] = xstrdup("run `gpuwho why` to see what still holds it");
		}
	}
	diag_free(&d);
}

/* --reset: per GPU, run the reset command once nothing holds the GPU (as root); else say why not. */
static bool do_resets(const struct free_plan *plan, const struct free_report *r, const char *cmd,
		      struct free_reset *rs)
{
	bool ok = true;
	for (size_t i = 0; i < plan->ngpus; i++) {
		int index = free_live_index(r, plan, i);
		free_reset_blockers(r, plan, i, &rs[i].blockers, &rs[i].nblockers);
		if (geteuid() != 0)
			rs[i].refused = xstrdup("resetting a GPU needs root");
		else if (rs[i].nblockers)
			rs[i].refused = xasprintf("%zu process%s still hold%s the GPU (listed above); a reset would fail",
						  rs[i].nblockers, rs[i].nblockers == 1 ? "" : "es",
						  rs[i].nblockers == 1 ? "s" : "");
		else if (index < 0)
			rs[i].refused = xstrdup("NVML does not know this GPU, so it has no index to reset");
		else {
			fprintf(stderr, "gpuwho free: running %s --gpu-reset -i %d\n", cmd, index);
			rs[i].ran = true;
			rs[i].status = free_run_reset(cmd, index, RESET_TIMEOUT_S);
		}
		ok = ok && rs[i].ran && rs[i].status == 0;
	}
	return ok;
}

int cmd_free(int argc, char **argv)
{
	struct cli c = {.cmd = "free", .gpus = true};
	struct free_args a = {.grace = GRACE_DEFAULT};
	static const struct option own[] = {
		{"yes", no_argument, NULL, OPT_YES},
		{"grace", required_argument, NULL, OPT_GRACE},
		{"include", required_argument, NULL, OPT_INCLUDE},
		{"all-users", no_argument, NULL, OPT_ALL_USERS},
		{"spill", no_argument, NULL, OPT_SPILL},
		{"shm", no_argument, NULL, OPT_SHM},
		{"reset", no_argument, NULL, OPT_RESET},
		{0, 0, 0, 0},
	};
	int r = cli_parse(&c, argc, argv, "", own, parse_opt, &a, usage);
	if (r < 0) {
		free(a.include);
		return cli_exit_for(r);
	}
	int ngpu;
	char **gpus = cmd_gpu_args(&c, argv + r, argc - r, &ngpu);
	free(gpus);
	if (ngpu == 0 && !a.shm) {
		cli_error(&c, "name the GPUs to free (index, UUID, PCI bus id, /dev/nvidiaN, a comma list, all), or give --shm alone "
			      "to clean /dev/shm; see --help");
		free(a.include);
		return EXIT_USAGE;
	}
	/* A snapshot's PIDs are history: by now any of them may be another process, of anyone. */
	if (a.yes && c.from) {
		cli_error(&c, "refusing --yes with --from: a snapshot's PIDs may belong to other processes by now; run "
			      "gpuwho free on the live host (--from makes a dry run only)");
		free(a.include);
		return EXIT_USAGE;
	}
	/* Signals go to this PID namespace (pidfd_open), so the start-time check must read its /proc. */
	if (a.yes && strcmp(holders_proc_root(), "/proc")) {
		cli_error(&c, "refusing --yes with GPUWHO_PROC_ROOT set: the checks would read another /proc than the "
			      "one the signals reach");
		free(a.include);
		return EXIT_USAGE;
	}
	const char *reset_cmd = getenv("GPUWHO_RESET_CMD");
	if (!reset_cmd || !*reset_cmd)
		reset_cmd = "nvidia-smi";

	struct snapshot snap;
	struct collect_ctx cc = {.so = {.nvml_path = c.nvml_path, .no_nvml = c.no_nvml}};
	if (cmd_get_snapshot(&c, 0, &snap) != 0) {
		free(a.include);
		return EXIT_CANNOT;
	}

	size_t nself;
	int *self = live_self(holders_proc_root(), &nself);
	struct free_plan_opts po = {.include = a.include, .ninclude = a.ninclude, .all_users = a.all_users,
				    .spill = a.spill, .uid = geteuid(), .protect = self, .nprotect = nself, .shm = a.shm};
	struct free_plan plan;
	char *err = NULL;
	int code = EXIT_FINE;
	gpus = cmd_gpu_args(&c, argv + r, argc - r, &ngpu);
	int built = free_plan_build(&snap, (const char *const *)gpus, (size_t)ngpu, &po, &plan, &err);
	free(gpus);
	if (built < 0) {
		char *e = escape_term(err, strlen(err));
		cli_error(&c, "%s", e);
		free(e);
		free(err);
		code = EXIT_USAGE;
		goto out;
	}
	if (!snap.nvml.loaded && snap.scan.nscanned == 0) {
		cli_error(&c, "neither NVML nor /proc could be read: nothing to plan from");
		code = EXIT_CANNOT;
		goto out;
	}
	if (plan.mps_control)
		strv_push(&plan.notes, &plan.nnotes, mps_note(&c, plan.mps_control));

	struct free_report rep = {0};
	struct free_reset *rs = NULL;
	char **next = NULL, **verdict = NULL;
	if (a.yes) {
		struct free_act_opts ao = {.grace_s = a.grace, .settle_s = settle_seconds(), .proc_root = holders_proc_root(),
					   .shm_dir = a.shm ? shm_root() : NULL,
					   .collect = collect_again, .collect_ctx = &cc, .quiet = false};
		free_act(&plan, &ao, &rep);
		next = xcalloc(plan.ngpus + 1, sizeof *next);
		verdict = xcalloc(plan.ngpus + 1, sizeof *verdict);
		next_steps(&plan, &rep, next, verdict);
		bool ok = rep.all_free;
		if (a.reset) {
			rs = xcalloc(plan.ngpus + 1, sizeof *rs);
			ok = do_resets(&plan, &rep, reset_cmd, rs) && ok;
		}
		for (size_t i = 0; i < plan.nshm; i++)
			ok = ok && (!plan.shm[i].remove || (rep.shm && rep.shm[i].removed));
		code = ok ? EXIT_FINE : EXIT_PROBLEM;
	}
	struct free_view v = {.plan = &plan, .report = a.yes ? &rep : NULL, .grace_s = a.grace, .reset = rs,
			      .reset_cmd = reset_cmd, .next = next, .next_verdict = verdict};
	if (c.json) {
		cmd_print_json(render_free_json(&v));
	} else {
		struct render_opts ro = cmd_render_opts(&c);
		if (a.reset && !a.yes)
			printf("--reset: after --yes has freed them, as root, `%s --gpu-reset -i N` runs for each GPU that "
			       "no process holds any more.\n\n", reset_cmd);
		render_free_text(stdout, &v, &ro);
	}
	for (size_t i = 0; rs && i < plan.ngpus; i++) {
		for (size_t k = 0; k < rs[i].nblockers; k++)
			free(rs[i].blockers[k]);
		free(rs[i].blockers);
		free(rs[i].refused);
	}
	free(rs);
	for (size_t i = 0; next && i < plan.ngpus; i++) {
		free(next[i]);
		free(verdict[i]);
	}
	free(next);
	free(verdict);
	free_report_release(&rep);
out:
	free_plan_release(&plan);
	free(self);
	snapshot_free(&snap);
	free(a.include);
	return code;
}
