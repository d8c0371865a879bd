/* snapshot: everything gpuwho collects, as one JSON file (attach it to a bug report; replay it with --from). */
#include "cli.h"
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "escape.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
	"Usage: gpuwho snapshot [OPTIONS]\n"
	"\n"
	"Writes everything gpuwho sees as one JSON document (schema: docs/json.md, \"snapshot\"): the\n"
	"holders of every NVIDIA device node with their processes (command lines, threads, waits in the\n"
	"driver), their ancestors, what NVML says about each GPU (sampled twice, --resample apart), host\n"
	"memory, the /dev/shm segments and who holds them, and what could not be read and why.\n"
	"Every read command replays it with --from FILE: gpuwho ps --from FILE.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE   write to FILE (atomically, mode 0600: it holds command lines);\n"
	"                      '-' or no -o: standard output\n"
	"  --redact            replace command lines (all but argv[0]'s base name), user names, cgroup\n"
	"                      paths and the host name with placeholders, for sharing\n"
	"  --resample SECONDS  sample GPU memory a second time after this long (default 0.5; 0: once)\n"
	"  --from FILE         read a snapshot instead of this host (with --redact: redact a snapshot)\n"
	"  --nvml PATH         load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml           do not ask NVML\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  gpuwho snapshot -o gpu-$(hostname).json\n"
	"  gpuwho snapshot --redact -o report.json && gpuwho ps --from report.json\n"
	"\n"
	"Exit status: 0 written, 2 bad usage, 3 nothing could be inspected, the snapshot given to --from\n"
	"could not be read, or the output could not be written.\n";

enum { OPT_REDACT = 1, OPT_RESAMPLE };

struct sopts {
	const char *output;
	bool redact;
	double resample_s;
};

static int on_opt(int opt, const char *arg, void *ctx)
{
	struct sopts *o = ctx;
	char *end;
	switch (opt) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_REDACT:
		o->redact = true;
		return 0;
	case OPT_RESAMPLE:
		o->resample_s = strtod(arg, &end);
		if (*end || !(o->resample_s >= 0) || o->resample_s > 60) {
			char *e = escape_term(arg, strlen(arg));
			cli_error(&(struct cli){.cmd = "snapshot"}, "--resample wants seconds from 0 to 60, not '%s'", e);
			free(e);
			return -1;
		}
		return 0;
	}
	return -1;
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option own[] = {
		{"output", required_argument, NULL, 'o'},
		{"redact", no_argument, NULL, OPT_REDACT},
		{"resample", required_argument, NULL, OPT_RESAMPLE},
		{0},
	};
	struct cli c = {.cmd = "snapshot"};
	struct sopts o = {.resample_s = 0.5};
	int r = cli_parse(&c, argc, argv, "o:", own, on_opt, &o, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (r < argc) {
		cli_error(&c, "takes no arguments (did you mean -o %s?)", argv[r]);
		return EXIT_USAGE;
	}
	struct snapshot s;
	if (cmd_get_snapshot(&c, o.resample_s, &s) != 0)
		return EXIT_CANNOT;
	json_t *j = snapshot_to_json(&s, o.redact);
	char *text = json_dumps(j, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	json_decref(j);
	if (!text) {
		fputs("gpuwho: out of memory building JSON\n", stderr);
		abort();
	}
	size_t len = strlen(text);
	text = xrealloc(text, len + 2);
	text[len++] = '\n';
	text[len] = '\0';
	int code = (!s.nvml.loaded && s.scan.nscanned == 0) ? EXIT_CANNOT : EXIT_FINE;
	if (!o.output || !strcmp(o.output, "-")) {
		fwrite(text, 1, len, stdout);
		if (fflush(stdout) != 0) {
			cli_error(&c, "cannot write the snapshot to standard output: %s", strerror(errno));
			code = EXIT_CANNOT;
		}
	} else {
		int w = cmd_write_atomic(o.output, text, len, 0600);
		if (w < 0) {
			cli_error(&c, "cannot write %s: %s", o.output, strerror(-w));
			code = EXIT_CANNOT;
		}
	}
	if (code == EXIT_CANNOT && !c.from && s.scan.nscanned == 0 && !s.nvml.loaded)
		cli_error(&c, "nothing could be inspected: neither NVML nor %s answered", holders_proc_root());
	free(text);
	snapshot_free(&s);
	return code;
}
