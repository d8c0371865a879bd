/* scrape: collect, diagnose and render one Prometheus answer (metrics and serve share it). */
#include "cmd/scrape.h"
#include "cmd/common.h"
#include "diagnose/diagnose.h"
#include "render/metrics.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The second memory sample before memory with no holder is called a leak (why's delay). */
#define SCRAPE_RESAMPLE_S 0.5

/* cmd_get_diagnosis, with the full walk rationed by st: a node with a leak would otherwise walk
 * every process on every scrape, the cost the lazy collection exists to avoid. */
static int get_diagnosis(const struct cli *c, const struct scrape_opts *o, struct scrape_state *st,
			 struct snapshot *s, struct diagnosis *d)
{
	if (!st || c->from)
		return cmd_get_diagnosis(c, false, s, d);
	struct snapshot_opts so = {.nvml_path = c->nvml_path, .no_nvml = c->no_nvml, .lazy = true};
	uint64_t now = now_ns();
	snapshot_collect(&so, s);
	diagnose(s, d);
	bool due = !st->walked || (double)(now - st->last_full_ns) / 1e9 >= o->scan_interval_s;
	if (diag_wants_full_scan(s, d) && due) {
		diag_free(d);
		snapshot_free(s);
		so.lazy = false;
		snapshot_collect(&so, s);
		diagnose(s, d);
		st->walked = true;
		st->last_full_ns = now;
	}
	if (diag_wants_resample(s, d)) {
		snapshot_resample(s, c->nvml_path, SCRAPE_RESAMPLE_S);
		diag_free(d);
		diagnose(s, d);
	}
	return 0;
}

int cmd_scrape(const struct cli *c, const struct scrape_opts *o, struct scrape_state *st, struct scrape_result *r)
{
	memset(r, 0, sizeof *r);
	uint64_t t0 = now_ns();
	struct snapshot s;
	struct diagnosis d;
	if (get_diagnosis(c, o, st, &s, &d) != 0)
		return EXIT_CANNOT;
	r->up = s.nvml.loaded || s.scan.nscanned > 0;
	r->full_walk = !s.scan.limited;
	/* The duration series reports the collection and the diagnosis: what a scrape costs. */
	struct metrics_opts mo = {.max_processes = o->max_processes, .scrape_duration_s = (double)(now_ns() - t0) / 1e9};
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
