/* render: the renderers of every command, and what they share (the colour codes, the wrapper). */
/* Layer render/: text for a person and JSON for a script, from what the layers below produced
 * (holder scans, accounts, findings, free plans and reports, plan results). Decides nothing: every
 * judgement is made below it. May include every layer's types, util, escape, json; never cmd/. */
#ifndef GPUWHO_RENDER_H
#define GPUWHO_RENDER_H

#include "proc/holders.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Columns text is wrapped to when the terminal's width is unknown (a pipe, a file): wide enough for
 * a table, narrow enough for a mail or a ticket. */
#define RENDER_DEFAULT_WIDTH 100

struct render_opts {
	bool color;      /* ANSI colour */
	bool verbose;    /* a detailed block per holder */
	int width;       /* columns to wrap prose and headers to; 0: no limit */
	bool cut;        /* also cut table cells (command lines) to width, with "…": only when width is
			  * a terminal's, so that a pipe keeps whole command lines */
};

/* ANSI colours, used only through render_col so that --no-color and NO_COLOR turn them all off. */
#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_YEL "\033[33m"
#define C_GRN "\033[32m"
#define C_DIM "\033[2m"
#define C_OFF "\033[0m"

/* The escape sequence c when colour is on, else "". */
static inline const char *render_col(const struct render_opts *o, const char *c)
{
	return o->color ? c : "";
}

/* True when the locale (LC_ALL, else LC_CTYPE, else LANG) names UTF-8; false for C/POSIX or
 * when none is set. */
bool render_locale_is_utf8(void);

/* A stream writing to fd that replaces gpuwho's non-ASCII signs (— × … − ± ≤ ≥ →) by ASCII
 * stand-ins and passes every other byte through, buffered as `mode` (_IOFBF, _IOLBF, _IONBF):
 * main puts it under stdout and stderr when the locale is not UTF-8. NULL when it cannot. */
FILE *render_ascii_stream(int fd, int mode);

/* How a hold holds, for a table cell: "fd", "mmap", "fd+mmap", with " via-thread", " via-copy". */
void render_hold_means(const struct hold *h, char *buf, size_t n);

/* --format csv (RFC 4180: a header row, then one row per process; fields with a comma, quote or
 * line break quoted, quotes doubled; process-controlled text escaped like the text output first,
 * so a row never holds a raw control byte). ps: one row per process per GPU, plus a row with kind
 * "unattributed" for each GPU's memory no process accounts for. */
struct account;
void render_ps_csv(FILE *f, const struct account *a, const bool *sel);
/* holders: one row per process per target it holds. */
void render_holders_csv(FILE *f, const struct holders_scan *s);

/* Prints the holders table, the mount points that are not holders, and what could not be seen. */
void render_holders_text(FILE *f, const struct holders_scan *s, const struct render_opts *o);

/* Returns the holders scan as a new JSON object (docs/json.md, "holders"); never NULL. */
json_t *render_holders_json(const struct holders_scan *s);

/* One process's facts as a new JSON object (pid, nspid, user, state, comm, cmdline, container...,
 * docs/json.md "holders"); never NULL. */
json_t *render_proc_json(const struct proc_info *p);

/* The owner object of a process for --json (docs/json.md "owner": label, Slurm job and step, pod,
 * container name, unit), or JSON null when nothing is known. New reference. */
json_t *render_owner_json(const struct proc_info *p);

/* owner_label of p, escaped for a terminal ("job 4242 step 0", "pod ns/name", "container vllm",
 * "unit x.service"); NULL when nothing is known or p is NULL. Malloc'ed. */
char *render_owner(const struct proc_info *p);

struct account;
struct nvml_info;
struct diagnosis;
struct finding;
struct snapshot;
struct account_proc;

/* One selected GPU of `gpuwho check`, as cmd/check.c judged it. */
struct check_gpu {
	size_t slot;                        /* index into d->acct.gpus */
	const struct finding *finding;      /* the GPU's worst finding (NULL: none) */
	const struct account_proc *job_row; /* a live process of the ended job with memory here, or NULL */
	bool bad;                           /* fails the check */
};

/* What `gpuwho check` found, for its renderers. */
struct check_report {
	const struct snapshot *s;
	const struct diagnosis *d;
	struct check_gpu *gpus;             /* the selected GPUs, in account order */
	size_t ngpus;
	const char *selected_by;            /* "arguments", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS",
					     * "CUDA_VISIBLE_DEVICES" or "all" */
	const char *ended_job;              /* --ended-job (or the epilog's SLURM_JOB_ID); NULL */
	bool host;                          /* --host: host-wide findings are reported (never failed on) */
	bool inspected;                     /* NVML answered */
	const char *error;                  /* why nothing could be inspected, or NULL */
	double waited_s;                    /* how long --wait polled */
};

/* The one line for a failing GPU: "gpu 1: 96,413 MiB held by PID 1234 (python, job 4242 of user
 * alice), a <defunct> process whose threads still run - gpuwho why 1", at most 200 bytes, escaped
 * (no control or bidi bytes). Malloc'ed. */
char *render_check_line(const struct check_report *r, const struct check_gpu *g);

/* Prints one line per failing GPU, and with r->host one "host: ..." line per host-wide warning or
 * action; nothing when all is well. */
void render_check_text(FILE *f, const struct check_report *r);

/* `gpuwho check --json` (docs/json.md, "check"). New reference; never NULL. */
json_t *render_check_json(const struct check_report *r);

/* Prints `gpuwho ps`: a headline per GPU (used/total, unattributed), then its processes by memory,
 * then what could not be seen. sel[i] says whether a->gpus[i] is shown (NULL: all, plus the holders
 * of control nodes only). nv: what NVML said, or NULL when it was not asked (--no-nvml). */
void render_ps_text(FILE *f, const struct account *a, const bool *sel, const struct nvml_info *nv,
		    const struct holders_scan *s, const struct render_opts *o);

/* Returns `gpuwho ps --json` (docs/json.md, "ps") as a new JSON object; never NULL. */
json_t *render_ps_json(const struct account *a, const bool *sel, const struct nvml_info *nv,
		       const struct holders_scan *s);

struct diagnosis;

/* Prints `gpuwho why`: each finding (show[i]; show NULL: all) as a severity tag and headline, its
 * evidence lines and its fix, escaped and wrapped to o->width; then one summary line. */
void render_why_text(FILE *f, const struct diagnosis *d, const bool *show, const struct render_opts *o);

/* Returns `gpuwho why --json` (docs/json.md, "why") as a new JSON object; never NULL. host_pidns:
 * the snapshot's /proc is the host's PID namespace; second_sample_s: how long after the first the
 * second memory sample was taken, or < 0 when none was. */
json_t *render_why_json(const struct diagnosis *d, const bool *show, bool host_pidns, double second_sample_s);

/* render_wrap of raw (process-controlled) text after escape_term, to o->width. */
void render_put(FILE *f, const char *raw, const struct render_opts *o, const char *indent, int col0);

/* Prints text word-wrapped to width (0: no limit) and a newline; the first line starts at column
 * col0, continuation lines start with indent. Counts bytes, so keep colour codes out of text. */
void render_wrap(FILE *f, const char *text, int width, const char *indent, int col0);


/* The short name of a target for tables: "nvidia0", "nvidiactl", "nvidia-caps/nvidia-cap1", or
 * the path for other files. Points into t->path. */
const char *render_target_short(const struct target *t);

struct free_plan;
struct free_report;
struct free_reset;

/* What `gpuwho free` shows: the plan, and after --yes what happened. */
struct free_view {
	const struct free_plan *plan;
	const struct free_report *report;  /* NULL: a dry run */
	unsigned grace_s;
	const struct free_reset *reset;    /* per plan GPU with --reset; NULL when not asked */
	const char *reset_cmd;             /* the command --reset runs */
	char **next;                       /* per plan GPU: the next step for what remains (raw text), or
					    * NULL entries; NULL: none computed */
	char **next_verdict;               /* per plan GPU: the why verdict behind next[i], or NULL */
};

/* Prints `gpuwho free`: the selected GPUs with the memory that should come back, whom it signals
 * (or signalled) and how each ended, whom it spares and why, and the next step per GPU. */
void render_free_text(FILE *f, const struct free_view *v, const struct render_opts *o);

/* Returns `gpuwho free --json` (docs/json.md, "free") as a new JSON object; never NULL. */
json_t *render_free_json(const struct free_view *v);

struct launch;
struct plan_result;
struct plan_facts;

/* Prints `gpuwho plan`'s report: the verdict first, then GPUs, GPU memory, KV cache and host
 * memory with the numbers behind each, then notes; escaped, wrapped to o->width. */
void render_plan_text(FILE *f, const struct launch *l, const struct plan_result *r, const struct plan_facts *pf,
		      const struct render_opts *o);

/* Returns `gpuwho plan --json` (docs/json.md, "plan") as a new JSON object; never NULL. */
json_t *render_plan_json(const struct launch *l, const struct plan_result *r, const struct plan_facts *pf);

struct engine_log;
struct log_compare;

/* Prints `gpuwho plan --log`'s comparison: predicted against printed, term by term, then the
 * error on the token count and which term explains most of it. `path` is the log's name (escaped). */
void render_plan_log_text(FILE *f, const char *path, const struct engine_log *lg, const struct log_compare *c,
			  const struct render_opts *o);

/* The same as a JSON object ("log" in `gpuwho plan --log --json`); never NULL. */
json_t *render_plan_log_json(const char *path, const struct engine_log *lg, const struct log_compare *c);

#endif
