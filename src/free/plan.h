/* free/plan: from a snapshot and the GPUs chosen, whom `gpuwho free` would signal and why, whom it
 * must not signal and why, and how much memory should come back. Pure: no I/O, no clock, no
 * environment — the caller passes who it is (uid, its own PIDs). docs/free.md states the rules. */
/* Layer free/: `gpuwho free` — whom to signal, from a snapshot (plan.c, pure), and doing it on the
 * live host (act.c: pidfds, waits, re-collection). May include diagnose/ (the account), snapshot/
 * and below; never render/ or cmd/. */
#ifndef GPUWHO_FREE_PLAN_H
#define GPUWHO_FREE_PLAN_H

#include "diagnose/account.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A selected GPU counts as free when no process holds memory on it and NVML's used memory is below
 * this: the driver's own use stays near 10 MiB while one CUDA context takes about 500 MiB (H200),
 * so anything above it is a context somebody still has (the bound ps uses for hidden memory). */
#define FREE_DONE_BYTES ACCOUNT_HIDDEN_MIN_BYTES

/* How a process came into the plan. */
enum free_role {
	FREE_ROLE_HOLDER,    /* holds a selected GPU's node, or NVML lists it on a selected GPU */
	FREE_ROLE_LAUNCHER,  /* an ancestor of a holder, up to the job's root */
	FREE_ROLE_PEER,      /* another descendant of the job's root that holds NVIDIA nodes */
	FREE_ROLE_OUTSIDE,   /* NVML names it on a selected GPU; it is not in this PID namespace */
	FREE_ROLE_EXITED,    /* NVML names it on a selected GPU; it exited (host namespace) */
};

/* Whether it is signalled, and if not, why not. */
enum free_skip {
	FREE_SIGNAL = 0,       /* in the kill set */
	FREE_SKIP_PID1,        /* PID 1 of this namespace: init, or a container's main process */
	FREE_SKIP_SELF,        /* gpuwho itself or one of its ancestors */
	FREE_SKIP_KTHREAD,     /* a kernel thread */
	FREE_SKIP_PROTECTED,   /* a system GPU daemon or display server (free_protected_name) */
	FREE_SKIP_OTHER_USER,  /* another user's: needs --all-users, as root */
	FREE_SKIP_SPILL,       /* it (or its job) also uses GPUs not selected: needs --spill */
	FREE_SKIP_OUTSIDE,     /* outside this PID namespace: cannot be signalled from here */
	FREE_SKIP_EXITED,      /* already exited: its memory is held by the heirs of its files */
	FREE_SKIP_ZOMBIE,      /* a zombie with no live thread: only its parent can reap it */
	FREE_SKIP_MONITOR,     /* holds the GPU's node without a CUDA context and NVML lists no memory
				* for it: an NVML client (nvidia-smi, nvitop, an exporter) */
	FREE_SKIP_NO_EVIDENCE, /* nothing the kernel shows ties it to the GPU: NVML names its PID, but it
				* holds no NVIDIA device file (a PID reused after the holder exited?) */
};

struct free_proc {
	int pid;                       /* this /proc's PID; NVML's for OUTSIDE and EXITED */
	int host_pid;                  /* NVML's PID when known, else -1 */
	const struct proc_info *info;  /* borrowed from the snapshot; NULL for OUTSIDE and EXITED */
	enum free_role role;
	enum free_skip skip;
	char *why;                     /* one line: the role ("holds GPU 0", "launcher of 1234") */
	char **evidence;               /* what the kernel (and NVML) showed that makes it part of the job,
					* one fact a line ("holds /dev/nvidia0 (fd+mmap)", "pgid 1234
					* (exited)"); act re-checks the holding right before a signal */
	size_t nevidence;
	size_t *held;                  /* indexes into snap->scan.targets of what it held as evidence (a
					* selected GPU's node, /dev/nvidia-uvm): act signals it only while it
					* still holds one of them; none for launchers */
	size_t nheld;
	char *skip_why;                /* one line: why it is not signalled, with the option that
					* would change that; NULL when signalled */
	int job_root;                  /* PID of the root of its job (itself when nothing above) */
	int via;                       /* LAUNCHER: the holder whose ancestor it is; else 0 */
	unsigned long long used_bytes; /* NVML's memory for it on the selected GPUs (the known part) */
	bool used_unknown;             /* NVML could not give some of it */
	bool in_nvml;                  /* NVML lists it on a selected GPU */
	int *slots;                    /* indexes into plan.acct.gpus of the selected GPUs it is on */
	size_t nslots;
	bool stopped;                  /* state T: it gets SIGCONT after SIGTERM so it can act on it */
	bool stuck;                    /* state D or a thread waiting in the NVIDIA driver */
};

/* One selected GPU. */
struct free_gpu {
	size_t slot;                   /* index into plan.acct.gpus */
	unsigned long long expect_back;/* memory that should come back when the kill set exits */
	bool expect_partial;           /* some signalled process's memory is unknown, or memory stays
					* with processes not signalled */
	unsigned nsignal;              /* signalled processes on it */
	unsigned nkept;                /* processes on it that are not signalled */
};

/* A /dev/shm segment --shm would remove. */
struct free_shm {
	const struct shm_segment *seg; /* borrowed from the snapshot */
	bool remove;                   /* nobody holds it and its creator is dead */
	char *why;
};

struct free_plan_opts {
	const char *const *include;    /* --include NAME|PID...: protected names, or PIDs spared as
					* monitors or for lack of evidence, to signal after all */
	size_t ninclude;
	bool all_users;                /* --all-users */
	bool spill;                    /* --spill */
	uid_t uid;                     /* the effective uid gpuwho runs as (0: root) */
	const int *protect;            /* more PIDs never to signal (the gpuwho that acts, its
					* ancestors: with --from they differ from the snapshot's) */
	size_t nprotect;
	bool shm;                      /* --shm: plan the removal of leaked /dev/shm segments */
};

struct free_plan {
	const struct snapshot *snap;   /* what it was made from (borrowed): act re-checks its targets */
	struct account acct;           /* the per-GPU join it rests on (borrows from the snapshot) */
	bool *sel;                     /* acct.ngpus entries: selected */
	struct free_gpu *gpus;         /* the selected GPUs, in acct order */
	size_t ngpus;
	struct free_proc *procs;       /* signalled first, then the rest; each group by role, then pid */
	size_t nprocs;
	size_t nsignal;                /* procs[0..nsignal) are signalled */
	struct free_shm *shm;          /* --shm: the candidates */
	size_t nshm;
	char **notes;                  /* what limits the plan (no NVML, unreadable processes, memory
					* hidden outside this namespace), one line each */
	size_t nnotes;
	int mps_control;               /* PID of a running nvidia-cuda-mps-control, or 0 */
};

/* Builds the plan for the GPUs that sels[0..nsel) name (account_select's selectors). Returns 0;
 * or -1 when a selector matches no GPU or several, with *err (malloc'ed) saying which. *out
 * borrows from s, which must outlive it; free it with free_plan_release (also after a failure). */
int free_plan_build(const struct snapshot *s, const char *const *sels, size_t nsel, const struct free_plan_opts *o,
		    struct free_plan *out, char **err);

/* Frees what free_plan_build allocated; accepts NULL. */
void free_plan_release(struct free_plan *p);

/* The protected name p matches — "nvidia-persistenced", "nv-hostengine", "dcgm*", "Xorg", ... —
 * by command name or argv[0]'s base name; NULL when none. Static storage. */
const char *free_protected_name(const struct proc_info *p);

/* JSON/text names: "holder", "launcher", "job_peer", "outside_namespace", "exited"; and
 * "signal", "pid1", "self", "kernel_thread", "protected", "other_user", "spill",
 * "outside_namespace", "exited", "zombie", "monitor", "no_evidence". */
const char *free_role_name(enum free_role r);
const char *free_skip_name(enum free_skip k);

/* The slot of the GPU in plan->acct a process row belongs to, as "GPU 0" or "/dev/nvidia3" text. */
char *free_gpu_label(const struct account_gpu *g);

#endif
