/* proc: one reader per /proc/PID file (stat, status, cmdline, cgroup, task/TID/stat), and the
 * facts about one process that gpuwho reports. Readers work relative to an open /proc/PID
 * directory fd, return 0 or -errno, and leave fields they could not read at their zero value. */
/* Layer proc/ (collect): the readers of /proc/PID files and the holder engine (holders.c) that walks
 * every process under a time bound. May include sys/ (targets, devices, mounts), util, escape;
 * never nvml/, snapshot/ or anything above. */
#ifndef GPUWHO_PROC_PROC_H
#define GPUWHO_PROC_PROC_H

#include "proc/owner.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PROC_MAX_NS 8   /* nesting depth of PID namespaces we record */

/* The container a cgroup path names, if any. */
struct container {
	char *runtime;    /* "docker", "containerd", "cri-o", "podman", "kubepods", "lxc"; NULL: none seen */
	char *id;         /* container id (64 hex digits usually), or NULL */
	char *pod_uid;    /* Kubernetes pod UID (dashes restored), or NULL */
};

struct proc_info {
	int pid;
	int ppid;
	int pgid;                 /* stat field 5: process group (a forked child keeps its parent's) */
	int sid;                  /* stat field 6: session (setsid starts a new one); 0: unknown */
	char state;               /* proc(5) stat field 3: R S D Z T t X I ... */
	unsigned nthreads;        /* stat field 20 */
	char *thread_states;      /* e.g. "leader Z, 1 R, 3 S" when threads differ from the leader; else NULL */
	bool kthread;             /* PF_KTHREAD in stat field 9 */
	unsigned long long start_ticks; /* stat field 22: clock ticks after boot */
	double start_time;        /* the same as a Unix time (seconds), 0 when unknown */
	uid_t uid;                /* real uid, from status */
	char *user;               /* user name, or the uid as text */
	int nspid[PROC_MAX_NS];   /* status NSpid: outermost (this /proc's) namespace first */
	unsigned nnspid;
	char *comm;               /* raw (unescaped) */
	char *cmdline;            /* raw: arguments separated by NUL bytes */
	size_t cmdline_len;
	char *cgroup;             /* the v2 (or first) cgroup path, raw */
	struct container container;
	struct owner owner;       /* Slurm job, pod, container name, unit (proc/owner.h): from the cgroup
				   * file here; SLURM_JOB_ID and the names filled in by collection */
	char *missing;            /* what could not be read, e.g. "cmdline (permission denied)"; NULL: nothing */
	/* Filled by snapshot collection (proc_read_waits, proc_read_status), for the diagnosis: */
	char *wchan;              /* /proc/PID/wchan of the leader: the kernel function it sleeps in; NULL
				   * when running, unreadable, or "0" */
	char *driver_wait;        /* a thread blocked inside the NVIDIA driver, e.g. "thread 1236 (D) in
				   * uvm_spin_loop" — from task/TID/wchan, or task/TID/stack (root) naming
				   * an nvidia/uvm/nv_ function; NULL when none */
	unsigned long long vm_rss_kb, vm_lck_kb, vm_pin_kb;  /* status VmRSS, VmLck, VmPin (0: absent) */
	unsigned long long rss_anon_kb, rss_file_kb, rss_shmem_kb;  /* status RssAnon, RssFile, RssShmem:
				   * VmRSS split; host buffers pinned with cudaHostAlloc count as
				   * RssShmem (seen on an H200: VmPin and VmLck stay 0) */
	/* Filled only when asked (holders_opts.env_name: plan --pid's CUDA_VISIBLE_DEVICES): */
	char *env_value;          /* the variable's value, raw; NULL when unset or unread */
	int env_err;              /* 0, or -errno when /proc/PID/environ could not be read */
};

/* Reads /proc/PID/stat: state, ppid, flags, threads, start time. The comm field is split at the
 * last ')' because a name may contain ')' and spaces. Returns 0 or -errno (-ESRCH: gone). */
int proc_read_stat(int piddir, struct proc_info *p);

/* Reads /proc/PID/status: Uid, NSpid, VmRSS, VmLck, VmPin, RssAnon, RssFile, RssShmem. Returns 0
 * or -errno. */
int proc_read_status(int piddir, struct proc_info *p);

/* Reads /proc/PID/comm (untrimmed bytes, minus the newline). Returns 0 or -errno. */
int proc_read_comm(int piddir, struct proc_info *p);

/* Reads /proc/PID/cmdline (may block on a process whose memory is locked: callers bound it).
 * Returns 0 or -errno. */
int proc_read_cmdline(int piddir, struct proc_info *p);

/* Reads /proc/PID/environ (the environment the process started with: NUL-separated NAME=value)
 * and sets p->env_value to the value of `name`, or NULL when unset. Reads the process's memory,
 * so it can block like cmdline: callers bound it. Returns 0 or -errno (EACCES: another user's). */
int proc_read_environ(int piddir, const char *name, struct proc_info *p);

/* Reads /proc/PID/cgroup, names the container and the owner (owner_from_cgroup_text: Slurm job
 * and step, systemd unit). Returns 0 or -errno. */
int proc_read_cgroup(int piddir, struct proc_info *p);

/* Opens /proc/PID/task for listing the threads (readdir; dirfd for openat). NULL with errno set
 * when it cannot be opened. Close with closedir. */
DIR *proc_open_tasks(int piddir);

/* Reads the state of every thread (task/TID/stat) and fills p->thread_states when they differ
 * from the leader's. Returns 0 or -errno. */
int proc_read_threads(int piddir, struct proc_info *p);

/* Reads /proc/PID/wchan into p->wchan (NULL when running, or hidden: wchan needs ptrace access).
 * Does not touch the process's memory. Returns 0 or -errno. */
int proc_read_wchan(int piddir, struct proc_info *p);

/* Reads p->wchan, then each thread's task/TID/stat state and task/TID/wchan, and (root only)
 * task/TID/stack of threads not in S state; sets p->driver_wait to the worst thread waiting inside
 * the NVIDIA driver ("thread 1236 (D) in uvm_spin_loop"; D before R before others), else NULL.
 * None of these files touch the process's memory. Returns 0 or -errno (task/ unreadable). */
int proc_read_waits(int piddir, struct proc_info *p);

/* True when a kernel symbol (sym[0..len)) is the NVIDIA driver's: uvm_*, nv_*, nvidia_*, _nv*. Pure. */
bool proc_symbol_is_nvidia(const char *sym, size_t len);

/* The innermost NVIDIA-driver frame of a task/TID/stack text (a symbol proc_symbol_is_nvidia
 * accepts, or a frame tagged [nvidia] / [nvidia_uvm]), malloc'ed; NULL when none. Pure. */
char *proc_stack_nvidia_frame(const char *stack);

/* Names the container a cgroup path belongs to (docker, containerd, cri-o, podman, kubepods with
 * pod UID, lxc). Pure; fills c with malloc'ed strings, or leaves it zeroed. */
void container_from_cgroup(const char *path, struct container *c);

/* Reads everything above for `pid` under the open /proc directory `procfd`. Returns 0, or -ESRCH
 * when the process is gone, or -errno when even stat could not be read; partial reads are
 * recorded in p->missing. The caller frees with proc_info_free. */
int proc_read_info(int procfd, int pid, struct proc_info *p);

/* Reads the files of `pid` that cannot block (stat, status, comm, cgroup), not cmdline, which can
 * stall on a process in D state: for processes looked at outside the holder engine's time bound.
 * Returns like proc_read_info; free with proc_info_free. */
int proc_read_brief(int procfd, int pid, struct proc_info *p);

/* True when the /proc open at procfd shows the host's (initial) PID namespace: its PID 2 is
 * kthreadd, a kernel thread, which only the initial namespace can see. False in a container's
 * /proc, and when PID 2 cannot be read. */
bool proc_pidns_is_host(int procfd);

/* The parent chain of pid from stat alone (cannot block): ppid, its ppid, … up to PID 1 (at most
 * 256). Returns a malloc'ed array (NULL when empty) and its length in *n. */
int *proc_ancestors(int procfd, int pid, size_t *n);

/* Frees a container's strings and zeroes it. */
void proc_container_free(struct container *c);

/* Frees what proc_info owns (not the struct); accepts NULL. */
void proc_info_free(struct proc_info *p);

/* The command line as one string with spaces between arguments (raw bytes, malloc'ed);
 * falls back to "[comm]" when the command line is empty (kernel threads, zombies). */
char *proc_cmdline_joined(const struct proc_info *p);

/* Seconds since the Unix epoch at which the system booted (from /proc/stat btime), or 0. */
double proc_boot_time(int procfd);

#endif
