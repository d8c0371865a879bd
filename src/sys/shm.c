/* shm: lists /dev/shm and reads the creator PID some libraries put in a segment's name. */
#include "sys/shm.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PID_LIMIT 4194304   /* PID_MAX_LIMIT on 64-bit kernels */

bool shm_name_ok(const char *name)
{
	return name && *name && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

const char *shm_root(void)
{
	const char *v = getenv("GPUWHO_SHM_ROOT");
	return v && *v ? v : "/dev/shm";
}

/* Parses the decimal run at s; requires it to end at one of `ends` (a '\0' in ends allows the end
 * of the name). Returns the PID or 0. */
static int pid_at(const char *s, const char *ends, bool end_ok)
{
	size_t n = 0;
	long v = 0;
	while (s[n] >= '0' && s[n] <= '9' && n < 8)
		v = v * 10 + (s[n++] - '0');
	if (!n || s[0] == '0' || v > PID_LIMIT)
		return 0;
	if (s[n] == '\0' ? !end_ok : !strchr(ends, s[n]))
		return 0;
	return (int)v;
}

int shm_parse_name(const char *name, const char **origin)
{
	*origin = NULL;
	if (str_starts(name, "torch_")) {
		/* torch/csrc (THManagedMapAllocator / libshm): "/torch_" + getpid() + "_" + a counter or random. */
		*origin = "pytorch";
		return pid_at(name + 6, "_", false);
	}
	if (str_starts(name, "psm_")) {
		/* CPython's multiprocessing.shared_memory: "psm_" + 8 random hex digits (vLLM's
		 * shm_broadcast ring buffers are these); some servers name their own psm_<pid>_… */
		*origin = "python";
		return pid_at(name + 4, "_", false);
	}
	if (str_starts(name, "sgl_shm_")) {
		/* SGLang: sgl_shm_<kind>_<pid>_<random> (sgl_shm_mm_… for multimodal inputs, which
		 * filled /dev/shm after scheduler crashes: sglang#40723). */
		*origin = "sglang";
		const char *k = strchr(name + 8, '_');
		return k ? pid_at(k + 1, "_", false) : 0;
	}
	if (str_starts(name, "deepspeed_allreduce_buffer")) {
		/* DeepSpeed's shared-memory allreduce (CPU inference): no PID in the name. */
		*origin = "deepspeed";
		return 0;
	}
	if (str_starts(name, "nccl-")) {
		*origin = "nccl";
		return pid_at(name + 5, "-", false);
	}
	if (str_starts(name, "sem.")) {
		/* sem_open("/NAME") creates sem.NAME; Python's multiprocessing uses sem.mp-<random>. */
		*origin = "semaphore";
		return 0;
	}
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	return strcmp(((const struct shm_segment *)a)->name, ((const struct shm_segment *)b)->name);
}

int shm_list(const char *root, struct shm_segment **out, size_t *n, struct target **targets)
{
	*out = NULL;
	*n = 0;
	if (targets)
		*targets = NULL;
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		return -e;
	}
	struct shm_segment *segs = NULL;
	size_t cap = 0;
	struct dirent *de;
	/* dev/ino per segment until sorted: the targets are built after. */
	struct stat *sts = NULL;
	size_t capst = 0;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;   /* removed meanwhile, or a folder or link: not a segment */
		xgrow(&segs, &cap, *n + 1, sizeof *segs);
		xgrow(&sts, &capst, *n + 1, sizeof *sts);
		struct shm_segment *s = &segs[*n];
		memset(s, 0, sizeof *s);
		s->name = xstrdup(de->d_name);
		s->size = (unsigned long long)st.st_size;
		s->bytes = (unsigned long long)st.st_blocks * 512ull;
		s->mtime = (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
		s->uid = st.st_uid;
		const char *origin;
		s->creator_pid = shm_parse_name(s->name, &origin);
		s->origin = origin ? xstrdup(origin) : NULL;
		sts[*n] = st;
		/* Keep the stat with its segment through the sort: stash its index in `holders`' count. */
		s->nholders = *n;
		(*n)++;
	}
	closedir(d);
	if (*n) {
		qsort(segs, *n, sizeof *segs, cmp_seg);
		if (targets) {
			*targets = xcalloc(*n, sizeof **targets);
			for (size_t i = 0; i < *n; i++) {
				const struct stat *st = &sts[segs[i].nholders];
				(*targets)[i] = (struct target){.path = xasprintf("%s/%s", root, segs[i].name),
								.kind = xstrdup("shm"), .gpu_minor = -1, .ok = true,
								.dev = st->st_dev, .ino = st->st_ino};
			}
		}
		for (size_t i = 0; i < *n; i++)
			segs[i].nholders = 0;
	}
	free(sts);
	*out = segs;
	return 0;
}

void shm_segments_free(struct shm_segment *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		free(s[i].name);
		free(s[i].holders);
		free(s[i].origin);
	}
	free(s);
}
