/* diagnose/internal.h: what the diagnose module's own files share (prose.c, classify.c, gpu.c,
 * host.c, diagnose.c); nothing outside src/diagnose/ includes it. */
#ifndef GPUWHO_DIAGNOSE_INTERNAL_H
#define GPUWHO_DIAGNOSE_INTERNAL_H

#include "diagnose/diagnose.h"

#include <stdbool.h>
#include <stddef.h>

#define DIAG_MIB (1024ull * 1024ull)
#define DIAG_GIB (1024ull * DIAG_MIB)
#define DIAG_LIST_MAX 8   /* processes or files named one per evidence line before "and N more" */

/* One diagnose() call: the snapshot it reads and the diagnosis it fills. */
struct ctx {
	const struct snapshot *s;
	struct diagnosis *d;
	size_t cap;           /* capacity of d->findings */
};

/* ---------- prose.c: writing findings ---------- */

/* Appends a finding with this headline to c->d and returns it (valid until the next call); g NULL:
 * host-wide. */
struct finding *diag_add_finding(struct ctx *c, const char *verdict, enum diag_severity sev,
				 const struct account_gpu *g, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Appends one evidence line to f. */
void diag_ev(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets f's fix, replacing any earlier one. */
void diag_set_fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds pid to f's PIDs unless it is there already. */
void diag_add_pid(struct finding *f, int pid);

/* "4121 4122": the PIDs space-separated, malloc'ed (the arguments of a kill command). */
char *diag_pid_args(const int *pids, size_t n);

/* "GPU 0", or "GPU (minor 3)" when NVML does not know it, written into buf; returns buf. */
const char *diag_gpu_name(const struct account_gpu *g, char *buf, size_t n);

/* "PID 4121 (python3)", malloc'ed; the name is raw process-controlled bytes. */
char *diag_pdesc(const struct proc_info *p);

/* The parent of p as diag_pdesc gives it, or "PID N" when it cannot be seen; malloc'ed. */
char *diag_parent_desc(const struct snapshot *s, const struct proc_info *p);

/* p's command line cut to 60 bytes, malloc'ed. */
char *diag_short_cmdline(const struct proc_info *p);

/* The memory of one account row as text: in buf when known, else a static phrase. */
const char *diag_row_mem(const struct account_proc *r, char *buf, size_t n);

/* Bytes in GiB. */
double diag_gib(unsigned long long b);

/* "11,904 MiB", "at least 11,904 MiB" (unknown: some memory is not counted) or "memory of unknown
 * size"; malloc'ed. */
char *diag_amount(unsigned long long bytes, bool unknown);


/* ---------- classify.c: what each GPU process is ---------- */

/* What a process with GPU memory is, as far as freeing that memory goes. */
enum cls {
	CLS_LIVE,          /* running or sleeping normally */
	CLS_STUCK,         /* D state, or a thread waiting inside the NVIDIA driver */
	CLS_ZOMBIE_LEADER, /* leader exited (Z), threads live on holding the GPU */
	CLS_ZOMBIE,        /* a plain zombie */
	CLS_STOPPED,       /* T or t */
	CLS_INHERITED,     /* holds an exited PID's device files */
	CLS_ORPHAN,        /* a worker whose launcher is gone */
	CLS_COUNT          /* not a class: how many there are */
};

struct orphan_info {
	const char *family;    /* the serving engine ("vLLM"), or NULL: one of several identical command lines */
	int root;              /* the topmost ancestor below the reaper in the same family (or group) */
	int reaper;            /* its parent now */
	int group;             /* the kernel's evidence: its process group, whose leader has exited, split
				* into several adopted subtrees holding GPUs; 0 when found by names */
};

/* True when p is in state D or a thread of it waits inside the NVIDIA driver. */
bool diag_is_stuck(const struct proc_info *p);

/* True when p is an adopted worker (its launcher died); then fills *o. */
bool diag_orphan_of(const struct snapshot *s, const struct proc_info *p, struct orphan_info *o);

/* The class of row r (r->info not NULL); fills *o when it is CLS_ORPHAN. */
enum cls diag_classify(const struct snapshot *s, const struct account_proc *r, struct orphan_info *o);

/* True when the row may carry GPU memory (a process, and not a holder NVML says has none). */
bool diag_carries_memory(const struct account_proc *r);

/* ---------- gpu.c and host.c: the verdicts ---------- */

/* Appends g's findings to c->d: one per problem found, else one that says it is in use or idle. */
void diag_gpu(struct ctx *c, const struct account_gpu *g);

/* Appends the host-wide findings to c->d (NVML, mounts, host memory, /dev/shm, zombies, what could
 * not be inspected), in that order. */
void diag_host(struct ctx *c);

#endif
