/* snapshot: the plain data of one look at a host — GPUs (NVML), the holders of every NVIDIA node
 * with their processes, the processes around them, host memory, /dev/shm segments, and what could
 * not be read and why. Collected live, or loaded from a JSON file (`--from`); every read command
 * renders from it, so live and replayed output are the same. It serializes to JSON and back
 * without loss (docs/json.md, "snapshot"). */
/* Layer snapshot/: the plain data every command works from, collected live (collect.c: the only
 * file here that calls the collect layer's readers), written (write.c) and loaded (load.c). May
 * include proc/, sys/, nvml/, util, escape, json; never diagnose/, free/, plan/, render/, cmd/. */
#ifndef GPUWHO_SNAPSHOT_H
#define GPUWHO_SNAPSHOT_H

#include "nvml/nvml.h"
#include "proc/holders.h"
#include "proc/proc.h"
#include "sys/meminfo.h"
#include "sys/shm.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_SCHEMA "gpuwho.snapshot"
#define SNAPSHOT_SCHEMA_VERSION 1

/* struct shm_segment (a file under /dev/shm) is defined in sys/shm.h, with its reader. */

/* The GPUs' memory sampled a second time, a short moment after the first, so that memory being
 * released (a holder that just exited) is not called a leak. */
struct gpu_resample {
	double delay_s;              /* seconds after the first sample */
	size_t ngpus;
	unsigned long long *used_bytes;  /* per NVML GPU index; valid when used_ok[i] */
	bool *used_ok;
};

struct snapshot {
	int schema_version;          /* SNAPSHOT_SCHEMA_VERSION when collected; as read when loaded */
	char *gpuwho_version;        /* version that took it */
	char *hostname;
	double taken_at;             /* Unix time */
	bool redacted;               /* command lines and user names were replaced (snapshot --redact) */
	bool host_pidns;             /* the /proc read is the host's PID namespace (proc_pidns_is_host) */
	int self_pid;                /* gpuwho's own PID when collected, and its ancestors (free never signals them) */
	int *self_ancestors;
	size_t nself_ancestors;

	struct holders_scan scan;    /* targets = every NVIDIA device node; holders with full proc_info */
	bool nvml_asked;             /* false with --no-nvml */
	struct nvml_info nvml;       /* loaded == false: nvml.error says why */
	struct gpu_resample resample;/* ngpus == 0 when not taken */
	uint64_t nvml_mono_ns;       /* CLOCK_MONOTONIC time of the NVML sample (live only, not serialized) */

	/* Processes that are not holders but matter: NVML-listed PIDs that hold no node (host PID
	 * namespace only), holders of /dev/shm segments, the leaders of the holders' process groups,
	 * and every ancestor of all of these and of the holders up to PID 1 (launchers, subreapers,
	 * the parents of zombies). A holder's group leader missing here has exited. Sorted by pid, no
	 * duplicates, none of them also in scan.holders. */
	struct proc_info *others;
	size_t nothers;

	bool mem_ok;                 /* mem was read */
	struct meminfo mem;
	struct shm_segment *shm;     /* sorted by name */
	size_t nshm;
	char *shm_error;             /* why /dev/shm could not be listed, or NULL */
	char *shm_dir;               /* the folder listed (shm_root(): /dev/shm unless a test stand-in) */
	char **notes;                /* what could not be read and why, beyond scan.notes */
	size_t nnotes;
};

struct snapshot_opts {
	const char *nvml_path;       /* --nvml; NULL: default */
	bool no_nvml;                /* --no-nvml */
	double resample_s;           /* > 0: sample GPU memory again after this long (why uses 0.5) */
	unsigned timeout_ms;         /* the holder engine's bound on all of collection's /proc reads
				      * together (holders_opts.timeout_ms); 0: default */
	bool lazy;                   /* NVML first, then the holder engine over NVML's PIDs only (and
				      * the processes around them), no /dev/shm: for check and
				      * metrics, which run after every job. The snapshot says so
				      * (scan.limited); in a child PID namespace, or without NVML, the
				      * full walk is done anyway (NVML's PIDs are not this /proc's) */
};

/* Collects a snapshot of this host (holders_proc_root(), holders_dev_root(), NVML, /dev/shm,
 * /proc/meminfo). Never fails as a whole: what could not be read is recorded. With o->lazy the fd
 * walk covers only NVML's PIDs and s->scan.limited is set (a process missing from the holders
 * may still hold a node): collect again without lazy before concluding "no holder". Returns 0. */
int snapshot_collect(const struct snapshot_opts *o, struct snapshot *out);

/* Samples the GPUs' memory again into s->resample, delay_s after s's NVML sample (sleeping what is
 * left of it): memory that falls in between is being released, not leaked. Live snapshots only;
 * does nothing without NVML, for delay_s <= 0, or when the second sample was taken already. */
void snapshot_resample(struct snapshot *s, const char *nvml_path, double delay_s);

/* Serializes s (docs/json.md, "snapshot"). redact: command lines, user names and cgroup paths
 * are replaced by placeholders. Returns a new reference; never NULL. */
json_t *snapshot_to_json(const struct snapshot *s, bool redact);

/* Loads a snapshot from JSON text. Returns 0, or -1 with *err set (malloc'ed) to one line naming
 * what is wrong ("line 3: unexpected end of input", "gpus[2].memory.total_bytes: expected an
 * integer", "schema_version 7 is newer than this gpuwho understands (1)"). Never crashes on any
 * input. On failure *out is left empty (safe to snapshot_free). */
int snapshot_from_json(const char *text, size_t len, struct snapshot *out, char **err);

/* Reads `path` ("-": stdin) and loads it with snapshot_from_json. Same contract. */
int snapshot_load(const char *path, struct snapshot *out, char **err);

/* Frees everything s owns; accepts NULL and an empty snapshot. */
void snapshot_free(struct snapshot *s);

/* Looks up a process by pid among scan.holders' infos and others; NULL when absent. */
const struct proc_info *snapshot_find_proc(const struct snapshot *s, int pid);

#endif
