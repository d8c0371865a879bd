/* metrics: the Prometheus text exposition of this host's GPUs and findings, for node_exporter's
 * textfile collector (or any scraper of files). gpuwho serve answers the same over HTTP. */
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "cmd/scrape.h"
#include "escape.h"
#include "render/metrics.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"Usage: gpuwho metrics [OPTIONS]\n"
	"\n"
	"Prints this host's GPU memory and gpuwho's findings as Prometheus text exposition: memory used,\n"
	"total, unattributed (no process accounts for it) and stuck (by the verdict that frees it), the\n"
	"count of findings by verdict and severity, the largest processes per GPU, orphaned /dev/shm\n"
	"and pinned host memory. For node_exporter's textfile collector, write it with -o: the file is\n"
	"replaced whole (a temporary file and rename), so the collector never reads half of it.\n"
	"docs/metrics.md lists every series; gpuwho serve answers the same over HTTP.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE    write to FILE (mode 0644) instead of stdout, e.g.\n"
	"                       /var/lib/prometheus/node-exporter/gpuwho.prom\n"
	"  --max-processes N    at most N gpuwho_process_gpu_memory_bytes series per GPU, the largest\n"
	"                       first (default 16; 0: none)\n"
	"  --from FILE          render a snapshot (gpuwho snapshot -o FILE) instead of this host\n"
	"  --nvml PATH          load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml            do not ask NVML (no memory series)\n"
	"  -h, --help           this text\n"
	"\n"
	"Examples:\n"
	"  gpuwho metrics | grep ^gpuwho_gpu_memory_stuck_bytes\n"
	"  gpuwho metrics -o /var/lib/prometheus/node-exporter/gpuwho.prom\n"
	"                       what deploy/systemd/gpuwho-metrics.timer runs every 30 s\n"
	"\n"
	"Exit status: 0 written, 2 bad usage, 3 nothing could be inspected (gpuwho_up 0 is still\n"
	"written), the --from file could not be loaded, or the output could not be written.\n";

enum { OPT_MAX_PROCESSES = 1 };

struct mopts {
	const char *output;
	unsigned max_processes;
};

static int on_opt(int opt, const char *arg, void *ctx)
{
	struct mopts *o = ctx;
	unsigned long long n;
	switch (opt) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_MAX_PROCESSES:
		if (!parse_uint(arg, &n) || n > 10000) {
			char *e = escape_term(arg, strlen(arg));
			cli_error(&(struct cli){.cmd = "metrics"}, "--max-processes wants a number from 0 to 10000, not '%s'", e);
			free(e);
			return -1;
		}
		o->max_processes = (unsigned)n;
		return 0;
	}
	return -1;
}

int cmd_metrics(int argc, char **argv)
{
	static const struct option own[] = {
		{"output", required_argument, NULL, 'o'},
		{"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
		{0},
	};
	struct cli c = {.cmd = "metrics"};
	struct mopts o = {.max_processes = METRICS_MAX_PROCESSES_DEFAULT};
	int r = cli_parse(&c, argc, argv, "o:", own, on_opt, &o, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (r < argc) {
		cli_error(&c, "takes no arguments (did you mean -o %s?)", argv[r]);
		return EXIT_USAGE;
	}
	if (c.json) {
		cli_error(&c, "--json: the exposition is the output (use gpuwho why --json for findings as JSON)");
		return EXIT_USAGE;
	}
	struct scrape_result sr;
	struct scrape_opts so = {.max_processes = o.max_processes};
	if (cmd_scrape(&c, &so, NULL, &sr) != 0)
		return EXIT_CANNOT;
	int code = sr.up ? EXIT_FINE : EXIT_CANNOT;
	if (!o.output || !strcmp(o.output, "-")) {
		fwrite(sr.text, 1, sr.len, stdout);
		if (fflush(stdout) != 0)
			code = EXIT_CANNOT;
	} else {
		/* 0644: node_exporter reads it as another user; the numbers are no secret on the host. */
		int w = cmd_write_atomic(o.output, sr.text, sr.len, 0644);
		if (w < 0) {
			cli_error(&c, "cannot write %s: %s", o.output, strerror(-w));
			code = EXIT_CANNOT;
		}
	}
	free(sr.text);
	return code;
}
