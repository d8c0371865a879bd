/* devices: discovers the NVIDIA device nodes of this host. */
#include "sys/devices.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NVIDIA_MAJOR 195   /* fixed by the driver: nvidiaN, nvidiactl (255), nvidia-modeset (254) */

/* Reads the character-device majors named nvidia* from /proc/devices ("Character devices:"
 * section, lines "MAJOR NAME"). */
static size_t read_majors(const char *proc_root, unsigned *majors, size_t max)
{
	char path[4096], *buf;
	snprintf(path, sizeof path, "%s/devices", proc_root);
	if (readfile_at(AT_FDCWD, path, &buf, NULL, 0) < 0)
		return 0;
	size_t n = 0;
	bool chr = false;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (str_starts(line, "Character devices:")) {
			chr = true;
			continue;
		}
		if (str_starts(line, "Block devices:"))
			break;
		unsigned m;
		char name[64];
		if (chr && sscanf(line, " %u %63s", &m, name) == 2 && str_starts(name, "nvidia") && n < max)
			majors[n++] = m;
	}
	free(buf);
	return n;
}

const char *devices_classify(const char *name, unsigned major, unsigned minor, const unsigned *majors,
			     size_t nmajors, int *gpu_minor)
{
	bool nv_major = major == NVIDIA_MAJOR;
	for (size_t i = 0; i < nmajors; i++)
		if (majors[i] == major)
			nv_major = true;
	*gpu_minor = -1;
	if (!str_starts(name, "nvidia") && !nv_major)
		return NULL;
	unsigned long long k;
	if (str_starts(name, "nvidia") && parse_uint(name + 6, &k) && major == NVIDIA_MAJOR && k == minor &&
	    minor < 254) {
		*gpu_minor = (int)minor;
		return "gpu";
	}
	if (!strcmp(name, "nvidiactl"))
		return "ctl";
	if (!strcmp(name, "nvidia-modeset"))
		return "modeset";
	if (!strcmp(name, "nvidia-uvm"))
		return "uvm";
	if (!strcmp(name, "nvidia-uvm-tools"))
		return "uvm-tools";
	if (str_starts(name, "nvidia-cap"))
		return "caps";
	return nv_major ? "nvidia" : NULL;
}

int devices_count_gpus(const char *proc_root)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/driver/nvidia/gpus", proc_root);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Reads /proc/driver/nvidia/gpus/BUS/information files: "Device Minor:" -> "Bus Location:". */
static char *bus_for_minor(const char *proc_root, int minor)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/driver/nvidia/gpus", proc_root);
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	char *found = NULL;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char ipath[4096 + 300], *buf;
		snprintf(ipath, sizeof ipath, "%s/%s/information", path, de->d_name);
		if (readfile_at(AT_FDCWD, ipath, &buf, NULL, 0) < 0)
			continue;
		char *m = strstr(buf, "Device Minor:");
		char *b = strstr(buf, "Bus Location:");
		int mi;
		char bus[64];
		if (m && b && sscanf(m + 13, " %d", &mi) == 1 && mi == minor && sscanf(b + 13, " %63s", bus) == 1)
			found = xstrdup(bus);
		free(buf);
	}
	closedir(d);
	return found;
}

/* by_name: count nvidiaN as GPU N whatever its major (the test hook, see devices_discover). */
static void add_dir(const char *dir, const char *prefix, const unsigned *majors, size_t nmajors, bool by_name,
		    struct target **arr, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_CHR && de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
			continue;
		if (!prefix && !str_starts(de->d_name, "nvidia") && !nmajors)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISCHR(st.st_mode))
			continue;
		int gm;
		const char *kind = devices_classify(de->d_name, major(st.st_rdev), minor(st.st_rdev), majors,
						    nmajors, &gm);
		unsigned long long k;
		if (by_name && !prefix && str_starts(de->d_name, "nvidia") && parse_uint(de->d_name + 6, &k) && k < 254) {
			kind = "gpu";
			gm = (int)k;
		}
		if (prefix && !kind)
			kind = "caps";
		if (!kind)
			continue;
		xgrow(arr, cap, *n + 1, sizeof **arr);
		struct target *t = &(*arr)[(*n)++];
		memset(t, 0, sizeof *t);
		t->path = xasprintf("%s/%s", dir, de->d_name);
		t->kind = xstrdup(kind);
		t->gpu_minor = gm;
		t->ok = true;
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		t->rdev = st.st_rdev;
		t->chr = true;
	}
	closedir(d);
}

static int cmp_target(const void *a, const void *b)
{
	const struct target *x = a, *y = b;
	if ((x->gpu_minor >= 0) != (y->gpu_minor >= 0))
		return x->gpu_minor >= 0 ? -1 : 1;
	if (x->gpu_minor != y->gpu_minor)
		return x->gpu_minor < y->gpu_minor ? -1 : 1;
	return strcmp(x->path, y->path);
}

struct target *devices_discover(const char *proc_root, const char *dev_root, size_t *n, char **note)
{
	unsigned majors[16];
	size_t nmajors = read_majors(proc_root, majors, 16);
	struct target *arr = NULL;
	size_t cap = 0;
	*n = 0;
	*note = NULL;
	/* Test hook: under a dev_root other than /dev (GPUWHO_DEV_ROOT), mknod'ed stand-ins of any
	 * major named nvidiaN count as GPU N, so tests can have real processes hold "GPUs" on a
	 * machine without NVIDIA's driver. The real /dev is classified by major:minor only. */
	bool by_name = strcmp(dev_root, "/dev") != 0;
	add_dir(dev_root, NULL, majors, nmajors, by_name, &arr, n, &cap);
	char caps[4096];
	snprintf(caps, sizeof caps, "%s/nvidia-caps", dev_root);
	add_dir(caps, "caps", majors, nmajors, false, &arr, n, &cap);
	for (size_t i = 0; i < *n; i++)
		if (arr[i].gpu_minor >= 0)
			arr[i].bus_id = bus_for_minor(proc_root, arr[i].gpu_minor);
	if (*n)
		qsort(arr, *n, sizeof *arr, cmp_target);
	else if (nmajors)
		*note = xasprintf("the nvidia driver is loaded (%s/devices names it) but %s has no nvidia device "
				  "nodes: they are created on first use, or this container was given none",
				  proc_root, dev_root);
	else
		*note = xasprintf("no NVIDIA device nodes in %s and no nvidia driver in %s/devices: "
				  "this host has no NVIDIA GPU driver loaded", dev_root, proc_root);
	return arr;
}
