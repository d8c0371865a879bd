/* scrape: one answer of the fleet exporters (gpuwho metrics, gpuwho serve): collect lazily,
 * diagnose, render the Prometheus exposition into memory. */
#ifndef GPUWHO_CMD_SCRAPE_H
#define GPUWHO_CMD_SCRAPE_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct scrape_opts {
	unsigned max_processes;   /* gpuwho_process_gpu_memory_bytes series per GPU */
	double scan_interval_s;   /* the full fd walk at most this often (with a state); 0: whenever needed */
};

/* What one scraper remembers between answers (serve's collector): when the full walk last ran. */
struct scrape_state {
	bool walked;
	uint64_t last_full_ns;    /* CLOCK_MONOTONIC (now_ns) */
};

struct scrape_result {
	char *text;        /* the exposition, NUL-terminated, malloc'ed; NULL when nothing was rendered */
	size_t len;
	double seconds;    /* wall time of collection, diagnosis and rendering */
	bool up;           /* NVML answered or /proc was scanned (gpuwho_up) */
	bool full_walk;    /* the answer rests on a walk over every process (not the lazy one) */
};

/* Collects this host as cmd_get_diagnosis does for check (the lazy collection: NVML first, the fd
 * walk over NVML's PIDs; the full walk when memory is unexplained, then a second memory sample
 * when a verdict rests on one), or loads c->from; and renders it. With st, the full walk runs at
 * most every o->scan_interval_s: in between, an unexplained GPU keeps the lazy walk's diagnosis,
 * marked uncertain (gpuwho_scan_limited 1). Returns 0 with *r filled (free r->text); or
 * EXIT_CANNOT when the --from file could not be loaded (the error is printed), r->text NULL.
 * One call at a time per st. */
int cmd_scrape(const struct cli *c, const struct scrape_opts *o, struct scrape_state *st, struct scrape_result *r);

#endif
