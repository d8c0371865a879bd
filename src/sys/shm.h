/* shm: the files of /dev/shm (POSIX shared memory and named semaphores) with what their names say
 * about who created them (PyTorch's torch_<pid>_…, NCCL, Python's psm_…, sem.*). */
#ifndef GPUWHO_SYS_SHM_H
#define GPUWHO_SYS_SHM_H

#include "sys/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A file under /dev/shm (POSIX shared memory and semaphores: torch_*, psm_*, nccl-*, sem.*). */
struct shm_segment {
	char *name;                  /* the file name, raw */
	unsigned long long size;     /* st_size */
	unsigned long long bytes;    /* allocated: st_blocks * 512 (what it costs in RAM) */
	double mtime;                /* Unix time of last modification */
	uid_t uid;
	int *holders;                /* PIDs holding it by fd or mapping (holder engine) */
	size_t nholders;
	int creator_pid;             /* a PID its name encodes (torch_<pid>_…, psm_<pid>_…, nccl-<pid>-…), or 0 */
	bool creator_alive;          /* creator_pid exists in this /proc */
	char *origin;                /* who makes such names: "pytorch", "python", "sglang", "deepspeed",
				      * "nccl", "semaphore";
				      * NULL when the name is not recognised */
};

/* True when name can be a file directly in the shm folder: not empty, not "." or "..", no '/'.
 * A snapshot is untrusted input, and free --shm unlinks by name. */
bool shm_name_ok(const char *name);

/* The folder to list: $GPUWHO_SHM_ROOT (test hook) or /dev/shm. */
const char *shm_root(void);

/* What a segment's name says (pure): returns the creator PID it encodes, or 0, and sets *origin
 * (static string, or NULL). Encoded PIDs: torch_<pid>_<n> (PyTorch's file_system sharing
 * strategy), sgl_shm_<kind>_<pid>_<random> (SGLang); psm_<pid>_… and nccl-<pid>-… only with the
 * separator after the digits, since Python's own psm_<8 hex> (also vLLM's) and NCCL's
 * nccl-<mkstemp suffix> names are random, not PIDs. deepspeed_allreduce_buffer* has no PID. */
int shm_parse_name(const char *name, const char **origin);

/* Lists the regular files directly under root, sorted by name, into *out (*n entries; holders
 * empty, creator_alive false). When targets is not NULL, also returns one holder-engine target per
 * segment, in the same order (kind "shm", matched by st_dev+st_ino). Returns 0, or -errno when
 * root cannot be read. */
int shm_list(const char *root, struct shm_segment **out, size_t *n, struct target **targets);

/* Frees n segments and the array; accepts NULL. */
void shm_segments_free(struct shm_segment *s, size_t n);

#endif
