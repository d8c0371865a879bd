/* account: joins NVML's per-GPU process lists (host PIDs with memory) with the holder engine's
 * processes (what /proc and /dev show) into one account per GPU: who has how much memory, who
 * holds the device without memory, and how much memory no process accounts for. Pure: no I/O. */
#ifndef GPUWHO_ACCOUNT_H
#define GPUWHO_ACCOUNT_H

#include "nvml/nvml.h"
#include "proc/holders.h"
#include "proc/proc.h"

#include <stdbool.h>
#include <stddef.h>

/* Unattributed memory above this, seen from a child PID namespace, is held outside it: one CUDA
 * context alone takes about 500 MiB on an H200, while the driver's own use stays near 10 MiB. */
#define ACCOUNT_HIDDEN_MIN_BYTES (256ull << 20)

/* What one row of a GPU's account is. */
enum account_kind {
	ACCOUNT_ATTRIBUTED,   /* NVML lists it (memory known or unknown) and it is in this /proc */
	ACCOUNT_OUTSIDE,      /* NVML's host PID is not in this /proc, which is a child PID namespace's */
	ACCOUNT_EXITED,       /* NVML's PID is not in this /proc, which is the host's: the creator exited and
			    * its device files live on in processes that inherited them */
	ACCOUNT_INHERITED,    /* holds the GPU node, no NVML entry, and this GPU has ACCOUNT_EXITED rows: the
			    * likely heirs of their memory */
	ACCOUNT_UNMATCHED,    /* child namespace: holds the GPU node, no NVML entry under its local PID, and
			    * this GPU has ACCOUNT_OUTSIDE rows: its memory may be among them (NVML names
			    * host PIDs, which a child namespace cannot map) */
	ACCOUNT_DEVICE_ONLY,  /* holds the GPU node; NVML listed this GPU's processes and not this one */
	ACCOUNT_UNKNOWN,      /* holds the GPU node; NVML could not list this GPU's processes */
};

/* One row: a process with its memory on one GPU. */
struct account_proc {
	enum account_kind kind;
	int pid;                       /* this /proc's PID; NVML's PID for OUTSIDE and EXITED */
	int host_pid;                  /* NVML's PID when NVML listed it; else pid when this /proc is the
					* host's; else -1 (unknown) */
	const struct proc_info *info;  /* borrowed; NULL for OUTSIDE and EXITED */
	const struct holder *holder;   /* borrowed: what it holds; NULL when it holds no scanned target */
	bool in_nvml;                  /* NVML listed it on this GPU */
	bool used_known;               /* used_bytes is NVML's number (in_nvml and not NOT_AVAILABLE) */
	unsigned long long used_bytes;
	unsigned lists;                /* NVML_LIST_* bits */
};

/* One GPU, as NVML and /dev know it. */
struct account_gpu {
	int index;                     /* NVML's index; -1 when NVML does not know this GPU */
	int minor;                     /* /dev/nvidiaN's N; -1 unknown */
	const struct nvml_gpu *nvml;   /* borrowed; NULL when NVML does not know this GPU */
	const struct target *target;   /* borrowed /dev/nvidiaN; NULL when there is none */
	const char *bus_id;            /* NVML's, else /proc/driver/nvidia's; NULL unknown (borrowed) */
	bool procs_known;              /* NVML listed this GPU's processes (the compute list answered) */
	bool mem_known;                /* total/used below are NVML's */
	unsigned long long total_bytes, used_bytes;
	unsigned long long attributed_bytes; /* sum of the known used_bytes of the NVML rows */
	unsigned nunknown;             /* NVML rows whose memory NVML could not give */
	bool unattributed_known;       /* mem_known and procs_known */
	unsigned long long unattributed_bytes; /* used - attributed, 0 when attributed exceeds used */
	bool over_attributed;          /* attributed > used: the two were read moments apart */
	bool hidden_outside;           /* child PID namespace and at least ACCOUNT_HIDDEN_MIN_BYTES
					* unattributed: the driver lists only the caller's namespace's
					* processes (seen on driver 580), so this memory is held by processes
					* outside it that NVML does not even name here */
	struct account_proc *procs;       /* NVML rows by memory (largest first, unknown last), then
					* INHERITED/UNMATCHED, UNKNOWN, DEVICE_ONLY by pid */
	size_t nprocs;
};

struct account {
	bool host_pidns;               /* this /proc is the host's PID namespace */
	bool nvml_ok;                  /* NVML answered */
	struct account_gpu *gpus;         /* NVML's GPUs in index order, then /dev-only GPUs by minor */
	size_t ngpus;
	const struct holder **others;  /* hold NVIDIA nodes, but no GPU node and no NVML entry */
	size_t nothers;
};

/* Builds the account. nv: what NVML said (NULL or !nv->loaded: NVML did not answer). s: the holder
 * scan over the NVIDIA device nodes. extra[0..nextra): processes NVML names that hold no target
 * (read by the caller; may be empty). host_pidns: this /proc is the host's PID namespace, so NVML's
 * PIDs are this /proc's; otherwise a PID NVML names is matched only to a process of this /proc that
 * holds an NVIDIA node (a bare number match across namespaces would be a coincidence).
 * Everything in *out borrows from nv, s and extra, which must outlive it. Free with account_free. */
void account_build(const struct nvml_info *nv, const struct holders_scan *s, const struct proc_info *extra,
		   size_t nextra, bool host_pidns, struct account *out);

struct snapshot;

/* The account of a snapshot: account_build over what its NVML said (when NVML was asked), its
 * holder scan, and its other processes. The one way every command and module joins a snapshot;
 * *out borrows from s. Free with account_free. */
void account_from_snapshot(const struct snapshot *s, struct account *out);

/* Frees what account_build allocated; accepts NULL. */
void account_free(struct account *a);

/* Finds the GPU a selector names: an index ("0": NVML's index, or the minor when NVML does not know
 * the GPU), a UUID ("GPU-…", case-insensitive, a unique prefix will do), a PCI bus id ("0000:65:00.0"
 * or "00000000:65:00.0", case-insensitive; "65:00.0" for domain 0) or a device path ("/dev/nvidia0", or "nvidia0").
 * Returns the index into a->gpus, -1 when no GPU matches, -2 when a UUID prefix matches several. */
int account_select(const struct account *a, const char *sel);
/* (A MIG device, "MIG-…" (a unique prefix will do) or nvidia-smi's "GPU:GI:CI", selects the GPU it
 * is part of, from the MIG devices NVML listed for it.) */

/* The selector for g that account_select, `gpuwho free` and `nvidia-smi -i` take: its NVML index,
 * else "/dev/nvidiaN" from its minor (never its node's path, which a snapshot may make anything: the
 * selector goes into commands printed to be pasted); malloc'ed. */
char *account_gpu_selector(const struct account_gpu *g);

/* What to tell the user when account_select(a, sel) returned rc (-1 or -2): one line, malloc'ed,
 * quoting sel raw (escape it before a terminal). */
char *account_select_error(const struct account *a, const char *sel, int rc);

/* Marks in mark[0..a->ngpus) the GPUs that sel names, as nvidia-smi -i and CUDA_VISIBLE_DEVICES
 * write them: a comma list of account_select's selectors ("0,1", "GPU-ab12,2"), or "all". Returns
 * 0; or -1 with *err (malloc'ed, account_select_error's line for the first item that names no GPU,
 * or says an item is empty). */
int account_select_list(const struct account *a, const char *sel, bool *mark, char **err);

/* The JSON/text name of a kind: "attributed", "outside_namespace", "exited", "inherited",
 * "unmatched", "device_only", "memory_unknown". */
const char *account_kind_name(enum account_kind k);

#endif
