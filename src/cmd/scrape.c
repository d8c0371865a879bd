/* scrape: collect, diagnose and render one Prometheus answer (metrics and serve share it). */
#include "cmd/scrape.h"
#include "cmd/common.h"
#include "diagnose/diagnose.h"
#include "render/metrics.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_scrape(const struct cli *c, unsigned max_processes, struct scrape_result *r)
{
	memset(r, 0, sizeof *r);
	uint64_t t0 = now_ns();
	struct snapshot s;
	if (cmd_get_snapshot(c, 0, &s) != 0)
		return EXIT_CANNOT;
	struct diagnosis d;
	diagnose(&s, &d);
	r->up = s.nvml.loaded || s.scan.nscanned > 0;
	/* The duration series reports the collection and the diagnosis: what a scrape costs. */
	struct metrics_opts mo = {.max_processes = max_processes, .scrape_duration_s = (double)(now_ns() - t0) / 1e9};
	FILE *f = open_memstream(&r->text, &r->len);
	/* open_memstream and its fclose fail only when out of memory: abort as util.h's helpers do. */
	if (!f) {
		fputs("gpuwho: out of memory\n", stderr);
		abort();
	}
	render_metrics(f, &s, &d, &mo);
	if (fclose(f) != 0) {
		fputs("gpuwho: out of memory\n", stderr);
		abort();
	}
	diag_free(&d);
	snapshot_free(&s);
	r->seconds = (double)(now_ns() - t0) / 1e9;
	return 0;
}
