/* scrape: one answer of the fleet exporters (gpuwho metrics, gpuwho serve): get the snapshot,
 * diagnose it, render the Prometheus exposition into memory. */
#ifndef GPUWHO_CMD_SCRAPE_H
#define GPUWHO_CMD_SCRAPE_H

#include "cli.h"

#include <stdbool.h>
#include <stddef.h>

struct scrape_result {
	char *text;        /* the exposition, NUL-terminated, malloc'ed; NULL when nothing was rendered */
	size_t len;
	double seconds;    /* wall time of collection, diagnosis and rendering */
	bool up;           /* NVML answered or /proc was scanned (gpuwho_up) */
};

/* Collects this host (or loads c->from; the full collection of snapshot_collect, no second memory
 * sample: a scrape must not sleep, and Prometheus' `for:` rides out memory being released), and
 * renders it with at most max_processes process series per GPU. Returns 0 with *r filled (free
 * r->text); or EXIT_CANNOT when the --from file could not be loaded (the error is printed), with
 * r->text NULL. Thread-safe as long as one call runs at a time (serve's collector). */
int cmd_scrape(const struct cli *c, unsigned max_processes, struct scrape_result *r);

#endif
