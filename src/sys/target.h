/* target: a file whose holders are wanted (an NVIDIA device node, a /dev/shm segment, a path the
 * user named) and a target that is a mount point. The sys/ readers produce them (devices_discover,
 * shm_list, mounts_find_targets); the holder engine (proc/holders) consumes them. */
/* Layer sys/ (collect, the lowest): host-wide readers — NVIDIA device nodes (devices), mountinfo
 * (mounts), /dev/shm (shm), /proc/meminfo (meminfo) — and the target types they produce. May
 * include util only; never proc/ or anything above. */
#ifndef GPUWHO_SYS_TARGET_H
#define GPUWHO_SYS_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A file whose holders are wanted. */
struct target {
	char *path;       /* as given, or as discovered under /dev */
	char *kind;       /* "gpu", "ctl", "uvm", "uvm-tools", "modeset", "caps", "nvidia" or "file" */
	int gpu_minor;    /* /dev/nvidiaN's N for "gpu", else -1 */
	char *bus_id;     /* PCI bus id of a "gpu" node when /proc/driver/nvidia says it, else NULL */
	bool ok;          /* stat succeeded; when false, err says why and nothing can hold it */
	int err;          /* errno of the failed stat */
	dev_t dev;        /* st_dev */
	ino_t ino;        /* st_ino */
	dev_t rdev;       /* st_rdev, meaningful when chr */
	bool chr;         /* a character device: matched by rdev, not by inode */
};

/* A target that is a mount point in our mount namespace: not a holder. */
struct mount_hit {
	size_t target;
	char *mount_point;
	char *fstype;
	char *source;     /* mount source (e.g. "udev", "devtmpfs") */
	char *root;       /* root of the mount within its filesystem (e.g. "/nvidia0") */
};

/* Builds a target from a path given by the user: stats it (following links). kind "file" unless
 * it is an NVIDIA device node, which gets the discovered kind. Never fails: see target.ok. */
struct target target_from_path(const char *path);

/* A deep copy of t (its strings duplicated). */
struct target target_copy(const struct target *t);

/* Frees the strings of one target (not the struct itself). */
void target_free(struct target *t);

#endif
