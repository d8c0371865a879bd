/* holders: the holder engine. Finds every process that holds a set of target files, and how:
 * by open fd, by memory mapping only, through a live thread of a group whose leader exited,
 * through a mknod'ed copy of a device node (matched by st_rdev); and lists the mount points that
 * are targets (bind-mounted device nodes: fuser's "kernel mount"), which are not holders. */
#ifndef GPUWHO_PROC_HOLDERS_H
#define GPUWHO_PROC_HOLDERS_H

#include "proc/proc.h"
#include "sys/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The time bound on a run of the holder engine when holders_opts.timeout_ms is 0. */
#define HOLDERS_DEFAULT_TIMEOUT_MS 2000

/* How a process holds a target (bits). */
enum {
	HOLD_FD = 1,      /* an open file descriptor */
	HOLD_MMAP = 2,    /* a memory mapping */
	HOLD_THREAD = 4,  /* only through /proc/PID/task/TID: the group leader has exited (Zl) */
	HOLD_COPY = 8,    /* through another device node with the same major:minor (mknod'ed copy) */
};

/* What one process holds of one target. */
struct hold {
	size_t target;    /* index into holders_scan.targets */
	unsigned means;   /* HOLD_* bits */
	unsigned nfd;     /* open fds on it */
	unsigned nmap;    /* mappings of it */
	unsigned long long map_bytes; /* their size in the address space (the driver maps pinned host
				       * buffers and GPU memory through the NVIDIA nodes) */
	bool read, write; /* union of the fds' access modes (from fdinfo flags) */
	int via_tid;      /* HOLD_THREAD: a live thread whose fd table or maps hold it */
	char *copy_path;  /* HOLD_COPY: the other node's path, as the holder sees it */
};

/* A holder: the process facts plus what it holds. */
struct holder {
	struct proc_info info;
	struct hold *holds;
	size_t nholds;
};

/* A process gpuwho could not (fully) look at. */
struct unseen {
	int pid;
	char *comm;       /* may be NULL */
	char *why;        /* e.g. "permission denied", "timed out reading /proc/PID/maps after 2.0 s (state D)" */
};

struct holders_scan {
	struct target *targets;
	size_t ntargets;
	struct holder *holders;   /* sorted by pid */
	size_t nholders;
	struct mount_hit *mounts;
	size_t nmounts;
	struct unseen *denied;    /* could not be inspected: EACCES/EPERM, hidepid */
	size_t ndenied;
	struct unseen *timed_out; /* skipped: its reads did not end within the run's bound, before
				   * its fds showed a hold */
	size_t ntimed_out;
	unsigned npartial;        /* holders found by their fds whose other reads (maps, status,
				   * cmdline) did not end in time: info.missing says which */
	unsigned nscanned;        /* processes looked at */
	bool limited;             /* only holders_opts.pids were looked at, not every process: a
				   * process missing from holders may still hold a target */
	unsigned nvanished;       /* exited while we looked (normal) */
	char **notes;             /* things that could not be seen and why, one line each */
	size_t nnotes;
};

struct holders_opts {
	const char *proc_root;    /* "/proc" unless testing */
	unsigned threads;         /* 0: one per online CPU, at most 8 */
	unsigned timeout_ms;      /* bound on the whole run, not on each process: a process whose
				   * reads are not done by then is skipped (timed_out), or, when its
				   * fds already showed it holds a target, reported as a holder with
				   * what could not be read in info.missing; 0:
				   * HOLDERS_DEFAULT_TIMEOUT_MS */
	uint64_t deadline_ns;     /* now_ns() time at which the run ends instead, so that several
				   * calls share one bound (snapshot collection); 0: timeout_ms after
				   * the call starts */
	bool waits;               /* also read each holder's wchan and threads' driver waits
				   * (proc_read_waits): snapshot collection */
	const int *pids;          /* holders_scan only: scan just these PIDs (free's re-check right
				   * before its signals), not every /proc entry; NULL: all */
	size_t npids;
	const char *env_name;     /* also read this variable of each holder's and each read
				   * process's environment (proc_read_environ), under the same bound:
				   * plan --pid's CUDA_VISIBLE_DEVICES, the snapshot's SLURM_JOB_ID */
};

/* Scans every process under opts->proc_root for the holders of targets[0..n). Takes ownership of
 * the targets array (freed by holders_scan_free). Never fails as a whole: what could not be read
 * is recorded in the result. Returns 0. */
int holders_scan(const struct holders_opts *opts, struct target *targets, size_t n, struct holders_scan *out);

/* Reads the facts of pids[0..n) (proc_read_info, and proc_read_waits with opts->waits) in
 * parallel under the same time bound as holders_scan: for processes that matter but
 * hold no target (launchers, NVML-listed PIDs), whose cmdline can block like anyone's. Stores in
 * *out (malloc'ed, *nout entries, in the order of pids) the processes that exist; one whose reads
 * timed out gets what cannot block (proc_read_brief) and a `missing` line, also pushed to *notes.
 * Returns 0, or -errno when opts->proc_root cannot be opened. Free each with proc_info_free. */
int holders_read_procs(const struct holders_opts *opts, const int *pids, size_t n, struct proc_info **out,
		       size_t *nout, char ***notes, size_t *nnotes);

/* Scans the holders of every NVIDIA device node under holders_dev_root() (devices_discover); when
 * there is none, the scan's notes say why. Returns 0, like holders_scan. */
int holders_scan_nvidia(const struct holders_opts *opts, struct holders_scan *out);

/* The /proc and /dev trees to read: "/proc" and "/dev", unless the test hooks GPUWHO_PROC_ROOT or
 * GPUWHO_DEV_ROOT name others (stand-in trees for tests; see tests/e2e). */
const char *holders_proc_root(void);
const char *holders_dev_root(void);

/* Frees everything a scan owns; accepts NULL. */
void holders_scan_free(struct holders_scan *s);

#endif
