/* free/act: carries out a free plan on the live host — signals through pidfds after checking each
 * process's start time, waits for exits and for the GPUs' memory to come back (re-collecting, not
 * sleeping blindly), removes leaked /dev/shm segments, and runs the reset command when asked. */
#ifndef GPUWHO_FREE_ACT_H
#define GPUWHO_FREE_ACT_H

#include "free/plan.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>

/* What happened to one process of the plan. */
enum free_outcome {
	FREE_OUT_NOT_SIGNALLED,  /* the plan spared it */
	FREE_OUT_GONE,           /* exited before it was signalled */
	FREE_OUT_REUSED,         /* its PID now belongs to another process (start time differs): untouched */
	FREE_OUT_CHANGED,        /* same process, but its owner or name is not the plan's (it exec'd, or the
				  * --from snapshot was not this host's): untouched */
	FREE_OUT_NO_LONGER,      /* same process, but right before the signal it no longer held what made it
				  * a target (the GPU's node, /dev/nvidia-uvm; a launcher: the holder below
				  * it): untouched */
	FREE_OUT_DENIED,         /* the kernel refused the signal (EPERM) */
	FREE_OUT_FAILED,         /* another error (err says which) */
	FREE_OUT_TERM,           /* exited after SIGTERM */
	FREE_OUT_KILL,           /* exited after SIGKILL */
	FREE_OUT_ALIVE,          /* still there after SIGKILL and the wait */
};

struct free_result {
	enum free_outcome outcome;
	int err;                 /* errno for DENIED and FAILED */
	double after_s;          /* seconds from SIGTERM until it was seen gone */
	unsigned long long start_now; /* REUSED: the start time (stat field 22) the PID has now */
	char state;              /* ALIVE: its state when given up on ('D': in the kernel) */
	char *wchan;             /* ALIVE: where it sleeps in the kernel, or NULL */
	bool sent_cont;          /* got SIGCONT (it was stopped) */
	bool by_kill;            /* signalled with kill(2): this kernel has no pidfds */
};

/* A GPU after the act, as re-collected. */
struct free_gpu_after {
	bool seen;               /* the GPU was found again (by UUID, else minor) */
	bool mem_known;
	unsigned long long used_bytes;
	bool free;               /* mem known and below FREE_DONE_BYTES, and nobody has memory on it */
	int *holders;            /* PIDs still holding its node or listed by NVML (this /proc's; NVML's
				  * for rows outside it) */
	size_t nholders;
	int *mem_holders;        /* those of them that hold memory (NVML rows, or any when NVML is blind) */
	size_t nmem_holders;
};

/* A /dev/shm segment --shm was asked to remove. */
struct free_shm_result {
	bool removed;
	char *why;               /* why it was kept (held again, replaced, creator back, error) */
};

/* What --reset did for one selected GPU (decided by cmd_free). */
struct free_reset {
	bool ran;                /* the command was run */
	int status;              /* its exit status (free_run_reset's result) */
	char **blockers;         /* what stands in the way (processes holding the GPU), one line each */
	size_t nblockers;
	char *refused;           /* why it was not run (not root, blockers, NVML does not know the GPU) */
};

/* Re-collects the host for the verification loop (the caller's snapshot_collect). 0 on success. */
typedef int (*free_collect_fn)(void *ctx, struct snapshot *out);

struct free_act_opts {
	unsigned grace_s;        /* SIGTERM to SIGKILL (0..3600) */
	unsigned settle_s;       /* after the grace: time for SIGKILL to take and memory to come back */
	const char *proc_root;   /* holders_proc_root() */
	const char *shm_dir;     /* the /dev/shm to remove segments from (NULL: --shm not asked) */
	free_collect_fn collect;
	void *collect_ctx;
	bool quiet;              /* no progress lines on stderr */
};

struct free_report {
	struct free_result *procs;     /* parallel to plan->procs (nprocs entries) */
	size_t nprocs;
	struct free_gpu_after *gpus;   /* parallel to plan->gpus (ngpus entries) */
	size_t ngpus;
	struct free_shm_result *shm;   /* parallel to plan->shm (nshm entries); NULL when none removed */
	size_t nshm;
	struct snapshot after;         /* the last look; after_ok when taken */
	bool after_ok;
	struct account after_acct;        /* its account (borrows from after) */
	bool no_pidfd;                 /* this kernel lacks pidfd_open: kill(2) was used, with a warning */
	double elapsed_s;
	bool all_free;                 /* every selected GPU is free */
};

/* Acts on the plan: opens a pidfd for every process plan->procs[0..nsignal), then checks through
 * /proc that it is still the planned process (start time, owner, name, not a kernel thread) and
 * still holds what made it a target (fp->held; a launcher: still an ancestor of its holder), and
 * that the pidfd's process is still alive (so those reads were its own); then sends SIGTERM (and
 * SIGCONT to stopped processes) to those that pass, waits up to grace_s for them to exit, SIGKILLs the rest,
 * waits for exits and for memory, re-collecting through o->collect, at most settle_s more; then
 * removes the planned /dev/shm segments that are still leaked. Fills *r (free with
 * free_report_release). Never signals a process whose start time differs from the snapshot's. */
void free_act(const struct free_plan *plan, const struct free_act_opts *o, struct free_report *r);

void free_report_release(struct free_report *r);

/* The text of an outcome for JSON: "not_signalled", "gone_before", "pid_reused", "changed",
 * "no_longer_holds", "not_permitted", "failed", "exited_on_sigterm", "exited_on_sigkill",
 * "still_alive". */
const char *free_outcome_name(enum free_outcome o);

/* What stands in the way of resetting GPU slot `slot` of the report's re-collected account: one
 * line per reason (processes holding the node, persistence mode), malloc'ed into *lines. */
void free_reset_blockers(const struct free_report *r, const struct free_plan *plan, size_t gi, char ***lines,
			 size_t *n);

/* Runs `cmd --gpu-reset -i INDEX` (cmd: $GPUWHO_RESET_CMD, else "nvidia-smi") without a shell,
 * bounded by timeout_s; its output goes to stderr. Returns its exit status, or -errno when it
 * could not run, or -ETIMEDOUT. */
int free_run_reset(const char *cmd, int index, unsigned timeout_s);

/* NVML's index, now, of selected GPU gi (matched by UUID, else minor, in r->after_acct): the
 * index a reset must name, which a --from snapshot's index need not be. -1 when unknown. */
int free_live_index(const struct free_report *r, const struct free_plan *plan, size_t gi);

#endif
