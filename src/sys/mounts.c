/* mounts: the one reader of /proc/self/mountinfo, and which targets are mount points. */
#include "sys/mounts.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* mountinfo escapes space, tab, newline and backslash as \ooo octal. */
static char *unescape_octal(const char *s, size_t len)
{
	char *out = xmalloc(len + 1), *o = out;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len + 1 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* Splits the next space-separated field of *p; returns its start and length. */
static const char *field(const char **p, size_t *len)
{
	const char *s = *p;
	while (*s == ' ')
		s++;
	const char *e = s;
	while (*e && *e != ' ' && *e != '\n')
		e++;
	*len = (size_t)(e - s);
	*p = e;
	return *len ? s : NULL;
}

struct mount_entry *mounts_parse(const char *text, size_t *n)
{
	struct mount_entry *arr = NULL;
	size_t cap = 0;
	*n = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		/* 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue */
		const char *p = line, *f[6];
		size_t l[6];
		bool ok = true;
		for (int i = 0; i < 5 && ok; i++) {
			f[i] = field(&p, &l[i]);
			ok = f[i] && p <= end;
		}
		const char *sep = ok ? strstr(p, " - ") : NULL;
		if (ok && sep && sep < end) {
			p = sep + 3;
			const char *fs, *src, *so;
			size_t lfs, lsrc, lso;
			fs = field(&p, &lfs);
			src = field(&p, &lsrc);
			so = field(&p, &lso);
			unsigned ma, mi;
			if (fs && src && p <= end && sscanf(f[2], "%u:%u", &ma, &mi) == 2) {
				xgrow(&arr, &cap, *n + 1, sizeof *arr);
				struct mount_entry *m = &arr[(*n)++];
				m->major = ma;
				m->minor = mi;
				m->root = unescape_octal(f[3], l[3]);
				m->mount_point = unescape_octal(f[4], l[4]);
				m->fstype = xstrndup(fs, lfs);
				m->source = unescape_octal(src, lsrc);
				m->super_opts = so ? xstrndup(so, lso) : xstrdup("");
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return arr;
}

void mounts_free(struct mount_entry *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].root);
		free(m[i].mount_point);
		free(m[i].fstype);
		free(m[i].source);
		free(m[i].super_opts);
	}
	free(m);
}

void mounts_find_targets(const struct mount_entry *m, size_t nm, const struct target *t, size_t nt,
			 struct mount_hit **hits, size_t *nhits)
{
	size_t cap = *nhits;
	char **real = xcalloc(nt, sizeof *real);
	for (size_t k = 0; k < nt; k++)
		real[k] = t[k].ok ? realpath(t[k].path, NULL) : NULL;
	for (size_t i = 0; i < nm; i++) {
		for (size_t k = 0; k < nt; k++) {
			if (!t[k].ok)
				continue;
			bool same_path = !strcmp(m[i].mount_point, t[k].path) ||
					 (real[k] && !strcmp(m[i].mount_point, real[k]));
			bool same_fs = makedev(m[i].major, m[i].minor) == t[k].dev && strcmp(m[i].root, "/") != 0;
			if (!same_path && !same_fs)
				continue;
			struct stat st;
			if (stat(m[i].mount_point, &st) < 0 || st.st_dev != t[k].dev || st.st_ino != t[k].ino)
				continue;
			xgrow(hits, &cap, *nhits + 1, sizeof **hits);
			struct mount_hit *h = &(*hits)[(*nhits)++];
			h->target = k;
			h->mount_point = xstrdup(m[i].mount_point);
			h->fstype = xstrdup(m[i].fstype);
			h->source = xstrdup(m[i].source);
			h->root = xstrdup(m[i].root);
		}
	}
	for (size_t k = 0; k < nt; k++)
		free(real[k]);
	free(real);
}

const char *mounts_proc_hidepid(const struct mount_entry *m, size_t n, const char *proc_root)
{
	/* The last proc mount at proc_root is the visible one: `unshare --mount-proc` and container
	 * runtimes mount a new proc on top of the old, which mountinfo still lists first. */
	const struct mount_entry *top = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].fstype, "proc") && !strcmp(m[i].mount_point, proc_root))
			top = &m[i];
	const char *h = top ? strstr(top->super_opts, "hidepid=") : NULL;
	if (!h)
		return NULL;
	static char val[32];
	snprintf(val, sizeof val, "%.*s", (int)strcspn(h + 8, ","), h + 8);
	return val;
}
