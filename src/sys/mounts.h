/* mounts: the one reader of /proc/self/mountinfo, and which targets are mount points (fuser's
 * "kernel mount": a bind-mounted device node, as every GPU container has). */
#ifndef GPUWHO_SYS_MOUNTS_H
#define GPUWHO_SYS_MOUNTS_H

#include "sys/target.h"

#include <stddef.h>

/* One line of mountinfo (proc(5)): fields 3, 4, 5, 9, 10 and the super options. */
struct mount_entry {
	unsigned major, minor;  /* st_dev of files on this mount */
	char *root;             /* root of the mount within its filesystem */
	char *mount_point;      /* unescaped (\040 -> space) */
	char *fstype;
	char *source;
	char *super_opts;
};

/* Parses mountinfo text into a malloc'ed array (*n entries). Lines that do not parse are
 * skipped. Pure. */
struct mount_entry *mounts_parse(const char *text, size_t *n);

void mounts_free(struct mount_entry *m, size_t n);

/* Finds the mount points that are targets: a mount point whose path is the target's path, or
 * whose file (stat) is the target's (st_dev, st_ino), as fuser's scan_mounts compares. Only
 * mounts on the targets' filesystems or at their paths are stat'ed, so a dead network mount
 * elsewhere cannot stall us. Appends to *hits. */
void mounts_find_targets(const struct mount_entry *m, size_t nm, const struct target *t, size_t nt,
			 struct mount_hit **hits, size_t *nhits);

/* Returns the hidepid= option of the /proc mount ("invisible", "2", "noaccess", "1"), or NULL. */
const char *mounts_proc_hidepid(const struct mount_entry *m, size_t n, const char *proc_root);

#endif
