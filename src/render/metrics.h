/* render/metrics: the Prometheus text exposition (format 0.0.4) of a snapshot and its diagnosis,
 * for `gpuwho metrics` (node_exporter's textfile collector) and `gpuwho serve` (/metrics).
 * docs/metrics.md lists the series. Decides nothing: the numbers come from the account, the
 * findings and diagnose/gauges.h. */
#ifndef GPUWHO_RENDER_METRICS_H
#define GPUWHO_RENDER_METRICS_H

#include "diagnose/diagnose.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stdio.h>

/* Per GPU, at most this many gpuwho_process_gpu_memory_bytes series by default (largest first):
 * series cost Prometheus memory, and a GPU rarely has more holders worth a series. */
#define METRICS_MAX_PROCESSES_DEFAULT 16

struct metrics_opts {
	unsigned max_processes;      /* per GPU, the largest first; 0: no per-process series */
	double scrape_duration_s;    /* gpuwho_scrape_duration_seconds; < 0: the series is left out */
};

/* Writes every gpuwho_* family to f: HELP and TYPE lines, then its samples, families in a fixed
 * order. A label value is the string as gpuwho shows it everywhere (escape_term: a control, a bidi
 * override or an invalid UTF-8 byte becomes a visible escape such as \n, \e, \xNN; a backslash
 * "\\"), then escaped per the exposition format (backslash, double quote, newline), so any comm or
 * cgroup name gives valid exposition and no raw control byte. gpuwho_up is 1 when NVML
 * answered or /proc could be scanned. Returns ferror(f) == 0. */
bool render_metrics(FILE *f, const struct snapshot *s, const struct diagnosis *d, const struct metrics_opts *o);

/* Writes s[0..len) as a label value's inside (no quotes) to f, escaped as render_metrics does.
 * Exposed for its unit test. */
void render_metrics_label_value(FILE *f, const char *s, size_t len);

#endif
