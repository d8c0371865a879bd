/* holders: who holds these files (default: every NVIDIA device node) — a better fuser. */
#include "cli.h"
#include "cmd/cmd.h"
#include "proc/holders.h"
#include "render.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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
	"  --timeout SECONDS   give up on one process's /proc files after this long (default 2); a\n"
	"                      process in uninterruptible sleep (D) can block reads of its memory\n"
	"  --threads N         scan with N threads (default: one per CPU, at most 8)\n"
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  gpuwho holders                    who holds any NVIDIA device node\n"
	"  gpuwho holders /dev/nvidia0 -v    everything about the holders of GPU 0's node\n"
	"  gpuwho holders --json /data/model.safetensors | jq '.holders[].pid'\n"
	"\n"
	"Run as root to see every process: others' /proc/PID/fd cannot be read, and the processes\n"
	"that could not be inspected are counted and named. Exit status: 0 done, 2 bad usage,\n"
	"3 nothing could be inspected (no /proc, or no target could be examined).\n";

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
			fprintf(stderr, "gpuwho holders: --timeout wants seconds between 0 and 3600, not '%s'\n", arg);
			return -1;
		}
		o->h.timeout_ms = (unsigned)(s * 1000) ? (unsigned)(s * 1000) : 1;
		return 0;
	}
	case OPT_THREADS: {
		unsigned long long n;
		if (!parse_uint(arg, &n) || n < 1 || n > 64) {
			fprintf(stderr, "gpuwho holders: --threads wants a number from 1 to 64, not '%s'\n", arg);
			return -1;
		}
		o->h.threads = (unsigned)n;
		return 0;
	}
	}
	return -1;
}

int cmd_holders(int argc, char **argv)
{
	static const struct option own[] = {
		{"verbose", no_argument, NULL, 'v'},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"threads", required_argument, NULL, OPT_THREADS},
		{0},
	};
	struct cli c = {.cmd = "holders"};
	struct hopts o = {0};
	int r = cli_parse(&c, argc, argv, "v", own, on_opt, &o, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (c.from) {
		cli_error(&c, "--from needs snapshots, which this version of gpuwho cannot read yet");
		return EXIT_USAGE;
	}
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
	size_t nok = 0;
	for (size_t i = 0; i < s.ntargets; i++)
		nok += s.targets[i].ok;
	if (c.json) {
		json_t *j = render_holders_json(&s);
		json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		fputc('\n', stdout);
		json_decref(j);
	} else {
		struct render_opts ro = {.color = cli_color(&c), .verbose = o.verbose};
		struct winsize ws;
		if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
			ro.width = ws.ws_col;
		render_holders_text(stdout, &s, &ro);
	}
	int code = (s.nscanned == 0 || (s.ntargets > 0 && nok == 0)) ? EXIT_CANNOT : EXIT_FINE;
	holders_scan_free(&s);
	return code;
}
