/* target: building a target from a path the user names, and freeing one. */
#include "sys/target.h"
#include "sys/devices.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct target target_from_path(const char *path)
{
	struct target t = {.path = xstrdup(path), .gpu_minor = -1};
	struct stat st;
	if (stat(path, &st) < 0) {
		t.err = errno;
		t.kind = xstrdup("file");
		return t;
	}
	t.ok = true;
	t.dev = st.st_dev;
	t.ino = st.st_ino;
	t.chr = S_ISCHR(st.st_mode);
	t.rdev = t.chr ? st.st_rdev : 0;
	const char *kind = NULL;
	if (t.chr) {
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		int gm;
		kind = devices_classify(base, major(st.st_rdev), minor(st.st_rdev), NULL, 0, &gm);
		t.gpu_minor = kind ? gm : -1;
	}
	t.kind = xstrdup(kind ? kind : "file");
	return t;
}

struct target target_copy(const struct target *t)
{
	struct target c = *t;
	c.path = t->path ? xstrdup(t->path) : NULL;
	c.kind = t->kind ? xstrdup(t->kind) : NULL;
	c.bus_id = t->bus_id ? xstrdup(t->bus_id) : NULL;
	return c;
}

void target_free(struct target *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->kind);
	free(t->bus_id);
}
