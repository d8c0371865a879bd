/* diagnose: from a snapshot to findings — per GPU and for the host, a verdict (why the memory is
 * in use), the evidence it rests on, the exact fix and the PIDs involved. Pure: no I/O, no clock,
 * no environment; docs/why.md explains each verdict and FACTS.md the facts behind it.
 *
 * The layer owns the verdicts and their wording, and the per-GPU account (account.h) they rest on.
 * It may include snapshot/, the types of nvml/nvml.h, proc/ and sys/, and util.h and escape.h;
 * never render/, free/ or cmd/ (they call it), and it does no I/O. Its files: diagnose.c (this
 * header's functions, the order of findings), gpu.c and host.c (the verdicts), classify.c (what
 * each GPU process is), prose.c (the text helpers); internal.h is what they share, private to
 * src/diagnose/. */
#ifndef GPUWHO_DIAGNOSE_H
#define GPUWHO_DIAGNOSE_H

#include "diagnose/account.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>

/* Memory with no holder above this is more than the driver's own use: NVML's v2 used excludes the
 * reserve, and what the driver keeps besides stays near 10 MiB, while one CUDA context alone takes
 * about 500 MiB on an H200 (the same bound ps uses for memory hidden outside a PID namespace). */
#define DIAG_UNHELD_MIN_BYTES ACCOUNT_HIDDEN_MIN_BYTES

/* A drop of used memory between the two samples at least this large means memory is being
 * released (a holder that just exited, a context being torn down): not a leak yet. */
#define DIAG_RELEASE_MIN_BYTES (64ull << 20)

/* Leaked /dev/shm segments at or above this total are worth acting on; below it they are noted. */
#define DIAG_SHM_ACTION_BYTES (64ull << 20)

/* Host memory is low when MemAvailable is below this percentage of MemTotal. */
#define DIAG_HOST_LOW_PERCENT 10

/* GPU processes pinning or locking at least this much host memory in total are named. */
#define DIAG_PINNED_MIN_BYTES (1ull << 30)

/* How much a finding matters. The order is significant: worse is larger. */
enum diag_severity {
	DIAG_OK,        /* nothing wrong (in use by live processes, idle) */
	DIAG_INFO,      /* explains something; nothing to do (a bind mount, memory being released) */
	DIAG_WARNING,   /* a problem, or one that cannot be confirmed from here: a person should look */
	DIAG_ACTION,    /* memory or a GPU is stuck and the fix says what frees it */
};

struct finding {
	const char *verdict;      /* stable id (static): "in_use", "orphaned_workers", ... (docs/why.md) */
	enum diag_severity severity;
	int gpu;                  /* NVML index; -1 when host-wide or NVML does not know the GPU */
	int minor;                /* /dev/nvidiaN's N; -1 when host-wide or unknown */
	int slot;                 /* index into diagnosis.acct.gpus; -1 when host-wide */
	char *headline;           /* one line; may contain process-controlled bytes (escape to show) */
	char **evidence;          /* the snapshot facts it rests on, one per line, raw */
	size_t nevidence;
	char *fix;                /* the exact command, or what to do when no command can help; NULL: none */
	int *pids;                /* processes involved, in this /proc's PID namespace */
	size_t npids;
	bool uncertain;           /* some processes could not be inspected: the conclusion may be wrong */
};

struct diagnosis {
	struct account acct;         /* the per-GPU memory join it rests on (borrows from the snapshot) */
	struct finding *findings; /* GPU findings in acct.gpus order, worst first within a GPU; then the
				   * host-wide ones */
	size_t nfindings;
	bool uncertain;           /* scan.denied or scan.timed_out: "no holder" cannot be certain */
};

/* Diagnoses s. *out borrows from s (through out->acct), which must outlive it; free it with
 * diag_free. Never fails: a snapshot with nothing in it gives findings that say so. */
void diagnose(const struct snapshot *s, struct diagnosis *out);

/* Frees what diagnose allocated; accepts NULL. */
void diag_free(struct diagnosis *d);

/* True when a finding rests on one memory sample where a second would tell memory being released
 * from memory leaked (a driver_leak without the snapshot's second sample): the caller may take it
 * (snapshot_resample) and diagnose again. A healthy GPU never needs it. */
bool diag_wants_resample(const struct snapshot *s, const struct diagnosis *d);

/* True when s's fd walk was limited (snapshot_opts.lazy) and the diagnosis needs the full walk:
 * NVML shows memory it cannot tie to a live listed process (an exited PID, memory with no row
 * above DIAG_UNHELD_MIN_BYTES, rows of unknown size), or could not list a GPU's processes. The
 * caller collects again without lazy and diagnoses again. False for full snapshots. */
bool diag_wants_full_scan(const struct snapshot *s, const struct diagnosis *d);

/* The first of g's rows (largest memory first) that NVML lists with memory on g and whose process
 * belongs to Slurm job `job` (proc_info.owner.slurm_job, from its cgroup or SLURM_JOB_ID): after
 * the job has ended (a Slurm epilog), a process that escaped its teardown. NULL when none, or job
 * is NULL or empty. Pure. */
const struct account_proc *diag_job_row(const struct account_gpu *g, const char *job);

/* "ok", "info", "warning", "action". */
const char *diag_severity_name(enum diag_severity sev);

/* The worst severity among the findings f[0..n) with show[i] (show NULL: all); DIAG_OK when none. */
enum diag_severity diag_worst(const struct diagnosis *d, const bool *show);

#endif
