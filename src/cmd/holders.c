/* holders: who holds these files (default: every NVIDIA device node) — a better fuser. */
#include "cli.h"
#include "escape.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "proc/holders.h"
#include "render/render.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"Usage: gpuwho holders [OPTIONS] [PATH...]\n"
	"\n"
	"Lists every process that holds the given files, and how. Without PATH: every NVIDIA device\n"
	"node (/dev/nvidiaN, nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-caps/*).\n"
	"Any file or device works, so this is a better fuser. It finds what fuser and lsof miss:\n"
	"  - processes that hold a file only by a memory mapping (the fd was closed after mmap);\n"
	"  - a thread group whose leader exited (<defunct>, Zl in ps) while a thread still holds it;\n"
	"  - a mknod'ed copy of a device node (same major:minor, another inode);\n"
	"and it says plainly that a bind-mounted node (fuser's \"kernel mount\") is not a holder.\n"
	"\n"
	"Options:\n"
	"  -v, --verbose       a block per holder: namespaces' PIDs, start time, cgroup, container,\n"
	"                      full command line, and per-file fd counts and access modes\n"
	"  --timeout SECONDS   end the scan after this long (default 2), however many processes\n"
	"                      block it: a thread stuck in the kernel (state D) can block reads of\n"
	"                      a process's memory (cmdline, maps) for ever; such a process is still\n"
	"                      named from its open fds, which never block, or listed as skipped\n"
	"  --threads N         scan with N threads (default: one per CPU, at most 8)\n"
	"  --from FILE         show a snapshot's NVIDIA-node holders (gpuwho snapshot -o FILE); with\n"
	"                      PATHs, only those of its nodes\n"
	CLI_FORMAT_HELP
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  gpuwho holders                    who holds any NVIDIA device node\n"
	"  gpuwho holders /dev/nvidia0 -v    everything about the holders of GPU 0's node\n"
	"  gpuwho holders --json /data/model.safetensors | jq '.holders[].pid'\n"
	"\n"
	"Run as root to see every process: others' /proc/PID/fd cannot be read, and the processes\n"
	"that could not be inspected are counted and named. Exit status: 0 done, 2 bad usage (with\n"
	"--from, a PATH the snapshot does not hold), 3 nothing could be inspected (no /proc, no target\n"
	"could be examined, or the --from snapshot could not be read).\n";

enum { OPT_TIMEOUT = 1, OPT_THREADS };

struct hopts {
	struct holders_opts h;
	bool verbose;
};

static int on_opt(int opt, const char *arg, void *ctx)
{
	struct hopts *o = ctx;
	char *end;
	switch (opt) {
	case 'v':
		o->verbose = true;
		return 0;
	case OPT_TIMEOUT: {
		double s = strtod(arg, &end);
		if (*end || !(s > 0) || s > 3600) {
			char *e = escape_term(arg, strlen(arg));
			cli_error(&(struct cli){.cmd = "holders"}, "--timeout wants seconds between 0 and 3600, not '%s'", e);
			free(e);
			return -1;
		}
		o->h.timeout_ms = (unsigned)(s * 1000) ? (unsigned)(s * 1000) : 1;
		return 0;
	}
	case OPT_THREADS: {
		unsigned long long n;
		if (!parse_uint(arg, &n) || n < 1 || n > 64) {
			char *e = escape_term(arg, strlen(arg));
			cli_error(&(struct cli){.cmd = "holders"}, "--threads wants a number from 1 to 64, not '%s'", e);
			free(e);
			return -1;
		}
		o->h.threads = (unsigned)n;
		return 0;
	}
	}
	return -1;
}

/* A view of s restricted to the targets at idx[0..n) (in that order), holds renumbered. It borrows
 * every string and process from s: free it with view_free only. */
static struct holders_scan scan_view(const struct holders_scan *s, const size_t *idx, size_t n)
{
	struct holders_scan v = *s;
	v.targets = xcalloc(n ? n : 1, sizeof *v.targets);
	v.ntargets = n;
	for (size_t i = 0; i < n; i++)
		v.targets[i] = s->targets[idx[i]];
	v.holders = xcalloc(s->nholders ? s->nholders : 1, sizeof *v.holders);
	v.nholders = 0;
	for (size_t i = 0; i < s->nholders; i++) {
		const struct holder *h = &s->holders[i];
		struct holder nh = {.info = h->info, .holds = xcalloc(h->nholds ? h->nholds : 1, sizeof *nh.holds)};
		for (size_t k = 0; k < h->nholds; k++)
			for (size_t t = 0; t < n; t++)
				if (h->holds[k].target == idx[t]) {
					nh.holds[nh.nholds] = h->holds[k];
					nh.holds[nh.nholds++].target = t;
				}
		if (nh.nholds)
			v.holders[v.nholders++] = nh;
		else
			free(nh.holds);
	}
	v.mounts = xcalloc(s->nmounts ? s->nmounts : 1, sizeof *v.mounts);
	v.nmounts = 0;
	for (size_t i = 0; i < s->nmounts; i++)
		for (size_t t = 0; t < n; t++)
			if (s->mounts[i].target == idx[t]) {
				v.mounts[v.nmounts] = s->mounts[i];
				v.mounts[v.nmounts++].target = t;
			}
	return v;
}

static void view_free(struct holders_scan *v)
{
	for (size_t i = 0; i < v->nholders; i++)
		free(v->holders[i].holds);
	free(v->holders);
	free(v->targets);
	free(v->mounts);
}

/* The target of s a PATH names: its path exactly, or its short name (nvidia0 for /dev/nvidia0, and
 * for an NVIDIA node under another /dev, such as a container's or a test's stand-in tree). */
static long find_target(const struct holders_scan *s, const char *path)
{
	for (size_t i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];
		const char *base = strrchr(t->path, '/');
		if (!strcmp(t->path, path) || !strcmp(render_target_short(t), path) ||
		    (t->kind && strcmp(t->kind, "file") && base && !strcmp(base + 1, path)))
			return (long)i;
	}
	return -1;
}

static void render(const struct cli *c, const struct hopts *o, const struct holders_scan *s)
{
	if (c->json) {
		cmd_print_json(render_holders_json(s));
	} else if (c->csv) {
		render_holders_csv(stdout, s);
	} else {
		struct render_opts ro = cmd_render_opts(c);
		ro.verbose = o->verbose;
		render_holders_text(stdout, s, &ro);
	}
}

static int exit_for(const struct holders_scan *s)
{
	size_t nok = 0;
	for (size_t i = 0; i < s->ntargets; i++)
		nok += s->targets[i].ok;
	return (s->nscanned == 0 || (s->ntargets > 0 && nok == 0)) ? EXIT_CANNOT : EXIT_FINE;
}

/* holders --from FILE [PATH...]: the snapshot's NVIDIA-node scan, or the part of it about PATHs. */
static int from_snapshot(const struct cli *c, const struct hopts *o, char **paths, size_t npaths)
{
	struct snapshot snap;
	if (cmd_get_snapshot(c, 0, &snap) != 0)
		return EXIT_CANNOT;
	int code = EXIT_FINE;
	if (!npaths) {
		render(c, o, &snap.scan);
		code = exit_for(&snap.scan);
	} else {
		size_t *idx = xcalloc(npaths, sizeof *idx);
		for (size_t i = 0; i < npaths; i++) {
			long k = find_target(&snap.scan, paths[i]);
			if (k < 0) {
				char *e = escape_term(paths[i], strlen(paths[i]));
				cli_error(c, "%s: the snapshot has no holders of '%s': it scanned only the NVIDIA device nodes "
					  "(%zu of them)", c->from, e, snap.scan.ntargets);
				free(e);
				code = EXIT_USAGE;
			}
			idx[i] = k < 0 ? 0 : (size_t)k;
		}
		if (code == EXIT_FINE) {
			struct holders_scan v = scan_view(&snap.scan, idx, npaths);
			render(c, o, &v);
			code = exit_for(&v);
			view_free(&v);
		}
		free(idx);
	}
	snapshot_free(&snap);
	return code;
}

int cmd_holders(int argc, char **argv)
{
	static const struct option own[] = {
		{"verbose", no_argument, NULL, 'v'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"threads", required_argument, NULL, OPT_THREADS},
		{0},
	};
	struct cli c = {.cmd = "holders", .tables = true, .refuse = CLI_REFUSE_NVML};   /* it reads /proc and /dev, never NVML */
	struct hopts o = {0};
	int r = cli_parse(&c, argc, argv, "v", own, on_opt, &o, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (c.from)
		return from_snapshot(&c, &o, argv + r, (size_t)(argc - r));
	o.h.proc_root = holders_proc_root();
	struct holders_scan s;
	if (r < argc) {
		size_t n = (size_t)(argc - r);
		struct target *targets = xcalloc(n, sizeof *targets);
		for (size_t i = 0; i < n; i++)
			targets[i] = target_from_path(argv[r + (int)i]);
		holders_scan(&o.h, targets, n, &s);
	} else {
		holders_scan_nvidia(&o.h, &s);
	}
	render(&c, &o, &s);
	int code = exit_for(&s);
	holders_scan_free(&s);
	return code;
}
