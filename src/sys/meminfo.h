/* meminfo: the one reader of /proc/meminfo (host memory totals, in bytes). */
#ifndef GPUWHO_SYS_MEMINFO_H
#define GPUWHO_SYS_MEMINFO_H

#include <stdbool.h>
#include <stdint.h>

/* The fields gpuwho uses, in bytes (proc(5) reports kB = 1024 bytes). A field the kernel did not
 * report has its has_* flag false and value 0. */
struct meminfo {
	uint64_t total;        /* MemTotal */
	uint64_t free;         /* MemFree */
	uint64_t available;    /* MemAvailable (kernel's estimate; Linux >= 3.14) */
	uint64_t buffers;      /* Buffers */
	uint64_t cached;       /* Cached */
	uint64_t shmem;        /* Shmem: tmpfs and /dev/shm pages, which drop_caches cannot free */
	uint64_t mlocked;      /* Mlocked */
	uint64_t swap_total;   /* SwapTotal */
	uint64_t swap_free;    /* SwapFree */
	uint64_t hugepages_total; /* HugePages_Total × Hugepagesize */
	uint64_t hugepages_free;  /* HugePages_Free × Hugepagesize */
	bool has_total, has_free, has_available, has_buffers, has_cached, has_shmem, has_mlocked,
		has_swap_total, has_swap_free, has_hugepages;
};

/* Parses the text of /proc/meminfo. Pure. Returns 0, or -EINVAL when MemTotal is missing
 * (the text is not meminfo). Unknown lines are skipped. */
int meminfo_parse(const char *text, struct meminfo *m);

/* Reads and parses `path` (NULL: /proc/meminfo). Returns 0 or -errno. */
int meminfo_read(const char *path, struct meminfo *m);

#endif
