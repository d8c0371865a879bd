/* snapshot/load: a snapshot from JSON text, validated field by field; an error names the JSON path
 * of what is wrong. Untrusted input (a file from another host, a bug report): never crashes.
 * Over 700 lines on purpose: the path-tracking getters and the schema they check are one piece,
 * and splitting them would export two dozen small static helpers for this file's use only. */
#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define MAX_ITEMS (1u << 20)         /* no array in a snapshot is longer: a bigger one is not ours */

/* The loader's state: where in the document it is (for messages) and the first error. */
struct ld {
	char path[512];
	size_t len;
	char *err;
};

static size_t ld_push(struct ld *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t ld_push(struct ld *l, const char *fmt, ...)
{
	size_t mark = l->len;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(l->path + l->len, sizeof l->path - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len = l->len + (size_t)n < sizeof l->path ? l->len + (size_t)n : sizeof l->path - 1;
	return mark;
}

static size_t ld_key_push(struct ld *l, const char *key)
{
	return l->len ? ld_push(l, ".%s", key) : ld_push(l, "%s", key);
}

static void ld_pop(struct ld *l, size_t mark)
{
	l->len = mark;
	l->path[mark] = '\0';
}

static bool ld_fail(struct ld *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool ld_fail(struct ld *l, const char *fmt, ...)
{
	if (l->err)
		return false;
	va_list ap;
	va_start(ap, fmt);
	char *m = xvasprintf(fmt, ap);
	va_end(ap);
	l->err = l->len ? xasprintf("%s: %s", l->path, m) : m;
	if (l->len)
		free(m);
	return false;
}

#define TRY(x)                 \
	do {                   \
		if (!(x))      \
			return false; \
	} while (0)

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "something else";
}

/* Value checkers: v is at l->path. */
static bool v_int(struct ld *l, json_t *v, long long min, long long max, long long *out)
{
	if (!json_is_integer(v))
		return ld_fail(l, "expected an integer, found %s", type_name(v));
	long long x = json_integer_value(v);
	if (x < min || x > max)
		return ld_fail(l, "%lld is out of range (%lld to %lld)", x, min, max);
	*out = x;
	return true;
}

static bool v_u64(struct ld *l, json_t *v, unsigned long long *out)
{
	if (json_is_string(v)) {
		unsigned long long x;
		if (!parse_uint(json_string_value(v), &x) || x <= (unsigned long long)LLONG_MAX)
			return ld_fail(l, "expected an unsigned integer (a string only above 2^63)");
		*out = x;
		return true;
	}
	long long x;
	TRY(v_int(l, v, 0, LLONG_MAX, &x));
	*out = (unsigned long long)x;
	return true;
}

static bool v_real(struct ld *l, json_t *v, double *out)
{
	if (!json_is_number(v))
		return ld_fail(l, "expected a number, found %s", type_name(v));
	double x = json_number_value(v);
	if (!isfinite(x) || x < -1e15 || x > 1e15)
		return ld_fail(l, "number out of range");
	*out = x;
	return true;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A byte string: a JSON string, or {"hex": "…"} for bytes that are not UTF-8. NUL bytes are refused
 * (no C string holds one); with allow_nul the length is returned and NULs are kept. */
static bool v_bytes(struct ld *l, json_t *v, bool nullable, char **out, size_t *outlen)
{
	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (json_is_null(v)) {
		if (!nullable)
			return ld_fail(l, "expected a string, found null");
		return true;
	}
	if (json_is_string(v)) {
		size_t n = json_string_length(v);
		const char *s = json_string_value(v);
		if (memchr(s, '\0', n))
			return ld_fail(l, "string holds a NUL byte");
		*out = xstrndup(s, n);
		if (outlen)
			*outlen = n;
		return true;
	}
	json_t *h = json_is_object(v) && json_object_size(v) == 1 ? json_object_get(v, "hex") : NULL;
	if (!h || !json_is_string(h))
		return ld_fail(l, "expected a string or {\"hex\": \"...\"}, found %s", type_name(v));
	const char *s = json_string_value(h);
	size_t n = json_string_length(h);
	if (n % 2)
		return ld_fail(l, "hex string of odd length");
	char *b = xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(b);
			return ld_fail(l, hi < 0 || lo < 0 ? "not a hex digit" : "string holds a NUL byte");
		}
		b[i] = (char)(hi * 16 + lo);
	}
	b[n / 2] = '\0';
	*out = b;
	if (outlen)
		*outlen = n / 2;
	return true;
}

/* The value of a required key (present; may be null). */
static bool get(struct ld *l, json_t *o, const char *key, json_t **v)
{
	*v = json_object_get(o, key);
	if (!*v) {
		size_t m = ld_key_push(l, key);
		ld_fail(l, "missing");
		ld_pop(l, m);
		return false;
	}
	return true;
}

#define KEYED(l, o, key, check)                          \
	do {                                             \
		json_t *v_;                              \
		TRY(get((l), (o), (key), &v_));          \
		size_t m_ = ld_key_push((l), (key));     \
		json_t *v = v_;                          \
		TRY(check);                              \
		ld_pop((l), m_);                         \
	} while (0)

static bool g_int(struct ld *l, json_t *o, const char *key, long long min, long long max, long long *out)
{
	KEYED(l, o, key, v_int(l, v, min, max, out));
	return true;
}

/* Integer-typed fields of every width. */
#define G_INT(l, o, key, min, max, dst)                    \
	do {                                               \
		long long x_;                              \
		TRY(g_int((l), (o), (key), (min), (max), &x_)); \
		(dst) = x_;                                \
	} while (0)

static bool g_u64(struct ld *l, json_t *o, const char *key, unsigned long long *out)
{
	KEYED(l, o, key, v_u64(l, v, out));
	return true;
}

static bool g_real(struct ld *l, json_t *o, const char *key, double *out)
{
	KEYED(l, o, key, v_real(l, v, out));
	return true;
}

static bool g_bool(struct ld *l, json_t *o, const char *key, bool *out)
{
	KEYED(l, o, key, json_is_boolean(v) ? (*out = json_is_true(v), true)
					    : ld_fail(l, "expected a boolean, found %s", type_name(v)));
	return true;
}

static bool g_str(struct ld *l, json_t *o, const char *key, bool nullable, char **out)
{
	KEYED(l, o, key, v_bytes(l, v, nullable, out, NULL));
	return true;
}

/* A string into a fixed buffer (NVML's char arrays). */
static bool g_chars(struct ld *l, json_t *o, const char *key, char *buf, size_t n)
{
	char *s;
	size_t len;
	KEYED(l, o, key, v_bytes(l, v, false, &s, &len) && (len < n || (free(s), ld_fail(l, "longer than %zu bytes", n - 1))));
	memcpy(buf, s, len + 1);
	free(s);
	return true;
}

static bool v_kind(struct ld *l, json_t *v, json_type t, bool nullable)
{
	if ((nullable && json_is_null(v)) || json_typeof(v) == t)
		return true;
	return ld_fail(l, "expected %s%s, found %s", t == JSON_OBJECT ? "an object" : "an array",
		       nullable ? " or null" : "", type_name(v));
}

static bool g_obj(struct ld *l, json_t *o, const char *key, bool nullable, json_t **out)
{
	KEYED(l, o, key, v_kind(l, v, JSON_OBJECT, nullable) && (*out = json_is_null(v) ? NULL : v, true));
	return true;
}

static bool g_arr(struct ld *l, json_t *o, const char *key, size_t max, json_t **out)
{
	KEYED(l, o, key,
	      v_kind(l, v, JSON_ARRAY, false) &&
		      (json_array_size(v) <= max || ld_fail(l, "%zu entries: more than %zu", json_array_size(v), max)) &&
		      (*out = v, true));
	return true;
}

static bool v_obj(struct ld *l, json_t *v)
{
	return v_kind(l, v, JSON_OBJECT, false);
}

static bool g_strv(struct ld *l, json_t *o, const char *key, char ***v, size_t *n)
{
	json_t *a;
	TRY(g_arr(l, o, key, MAX_ITEMS, &a));
	size_t m = ld_key_push(l, key);
	*v = xcalloc(json_array_size(a) + 1, sizeof **v);
	*n = json_array_size(a);
	for (size_t i = 0; i < *n; i++) {
		size_t mi = ld_push(l, "[%zu]", i);
		TRY(v_bytes(l, json_array_get(a, i), false, &(*v)[i], NULL));
		ld_pop(l, mi);
	}
	ld_pop(l, m);
	return true;
}

static bool g_pids(struct ld *l, json_t *o, const char *key, int min, int **v, size_t *n)
{
	json_t *a;
	TRY(g_arr(l, o, key, MAX_ITEMS, &a));
	size_t m = ld_key_push(l, key);
	*n = json_array_size(a);
	*v = xcalloc(*n + 1, sizeof **v);
	for (size_t i = 0; i < *n; i++) {
		size_t mi = ld_push(l, "[%zu]", i);
		long long x;
		TRY(v_int(l, json_array_get(a, i), min, SNAPSHOT_PID_MAX - 1, &x));
		(*v)[i] = (int)x;
		ld_pop(l, mi);
	}
	ld_pop(l, m);
	return true;
}

static bool v_dev(struct ld *l, json_t *v, dev_t *out)
{
	unsigned ma, mi;
	char tail;
	if (!json_is_string(v) || sscanf(json_string_value(v), "%u:%u%c", &ma, &mi, &tail) != 2 || ma > 0xfffff ||
	    mi > 0xfffff)
		return ld_fail(l, "expected a device number \"MAJOR:MINOR\"");
	*out = makedev(ma, mi);
	return true;
}

static bool g_dev(struct ld *l, json_t *o, const char *key, dev_t *out)
{
	KEYED(l, o, key, v_dev(l, v, out));
	return true;
}

static bool load_proc(struct ld *l, json_t *o, struct proc_info *p)
{
	TRY(v_obj(l, o));
	G_INT(l, o, "pid", 1, SNAPSHOT_PID_MAX - 1, p->pid);
	G_INT(l, o, "ppid", 0, SNAPSHOT_PID_MAX - 1, p->ppid);
	/* Absent in older snapshots: unknown (0), which is never taken as evidence of a process group. */
	if (json_object_get(o, "pgid"))
		G_INT(l, o, "pgid", 0, SNAPSHOT_PID_MAX - 1, p->pgid);
	if (json_object_get(o, "sid"))
		G_INT(l, o, "sid", 0, SNAPSHOT_PID_MAX - 1, p->sid);
	char *st;
	TRY(g_str(l, o, "state", false, &st));
	bool one = strlen(st) == 1 && st[0] > ' ' && st[0] < 127;
	p->state = st[0];
	free(st);
	if (!one) {
		ld_key_push(l, "state");
		return ld_fail(l, "expected one letter");
	}
	G_INT(l, o, "threads", 0, 1 << 22, p->nthreads);
	TRY(g_str(l, o, "thread_states", true, &p->thread_states));
	TRY(g_bool(l, o, "kthread", &p->kthread));
	TRY(g_u64(l, o, "start_ticks", &p->start_ticks));
	TRY(g_real(l, o, "start_time", &p->start_time));
	G_INT(l, o, "uid", 0, UINT_MAX, p->uid);
	TRY(g_str(l, o, "user", true, &p->user));
	json_t *ns;
	TRY(g_arr(l, o, "nspid", PROC_MAX_NS, &ns));
	size_t m = ld_key_push(l, "nspid");
	for (size_t i = 0; i < json_array_size(ns); i++) {
		size_t mi = ld_push(l, "[%zu]", i);
		long long x;
		TRY(v_int(l, json_array_get(ns, i), 1, SNAPSHOT_PID_MAX - 1, &x));
		p->nspid[p->nnspid++] = (int)x;
		ld_pop(l, mi);
	}
	ld_pop(l, m);
	TRY(g_str(l, o, "comm", true, &p->comm));
	json_t *args;
	TRY(g_arr(l, o, "cmdline", 1u << 17, &args));
	m = ld_key_push(l, "cmdline");
	size_t total = 0;
	for (size_t i = 0; i < json_array_size(args); i++) {
		size_t mi = ld_push(l, "[%zu]", i);
		char *a;
		size_t al;
		TRY(v_bytes(l, json_array_get(args, i), false, &a, &al));
		if (total + al + 1 > (1u << 24)) {
			free(a);
			return ld_fail(l, "command line longer than 16 MiB");
		}
		p->cmdline = xrealloc(p->cmdline, total + al + 1);
		memcpy(p->cmdline + total, a, al + 1);   /* with its NUL: the separator */
		total += al + 1;
		free(a);
		ld_pop(l, mi);
	}
	ld_pop(l, m);
	p->cmdline_len = total ? total - 1 : 0;   /* the reader drops the last argument's NUL */
	TRY(g_str(l, o, "cgroup", true, &p->cgroup));
	json_t *c;
	TRY(g_obj(l, o, "container", true, &c));
	if (c) {
		m = ld_key_push(l, "container");
		TRY(g_str(l, c, "runtime", false, &p->container.runtime));
		TRY(g_str(l, c, "id", true, &p->container.id));
		TRY(g_str(l, c, "pod_uid", true, &p->container.pod_uid));
		ld_pop(l, m);
	}
	if (json_object_get(o, "owner")) {   /* absent in snapshots older than attribution */
		json_t *w;
		TRY(g_obj(l, o, "owner", true, &w));
		if (w) {
			m = ld_key_push(l, "owner");
			TRY(g_str(l, w, "slurm_job", true, &p->owner.slurm_job));
			TRY(g_str(l, w, "slurm_step", true, &p->owner.slurm_step));
			TRY(g_str(l, w, "slurm_source", true, &p->owner.slurm_source));
			TRY(g_str(l, w, "pod_namespace", true, &p->owner.pod_namespace));
			TRY(g_str(l, w, "pod_name", true, &p->owner.pod_name));
			TRY(g_str(l, w, "container_name", true, &p->owner.container_name));
			TRY(g_str(l, w, "unit", true, &p->owner.unit));
			ld_pop(l, m);
		}
	}
	TRY(g_str(l, o, "missing", true, &p->missing));
	TRY(g_str(l, o, "wchan", true, &p->wchan));
	TRY(g_str(l, o, "driver_wait", true, &p->driver_wait));
	TRY(g_u64(l, o, "vm_rss_kb", &p->vm_rss_kb));
	TRY(g_u64(l, o, "vm_lck_kb", &p->vm_lck_kb));
	TRY(g_u64(l, o, "vm_pin_kb", &p->vm_pin_kb));
	/* Absent in older snapshots: unknown (0). */
	if (json_object_get(o, "rss_anon_kb"))
		TRY(g_u64(l, o, "rss_anon_kb", &p->rss_anon_kb));
	if (json_object_get(o, "rss_file_kb"))
		TRY(g_u64(l, o, "rss_file_kb", &p->rss_file_kb));
	if (json_object_get(o, "rss_shmem_kb"))
		TRY(g_u64(l, o, "rss_shmem_kb", &p->rss_shmem_kb));
	return true;
}

/* Iterates over the array at o[key], with the path naming each element. */
#define EACH(l, o, key, max, arr, n, i, ...)                               \
	do {                                                                \
		json_t *a_;                                                 \
		TRY(g_arr((l), (o), (key), (max), &a_));                    \
		size_t mk_ = ld_key_push((l), (key));                       \
		(n) = json_array_size(a_);                                  \
		(arr) = xcalloc((n) + 1, sizeof *(arr));                    \
		for (size_t i = 0; i < (n); i++) {                          \
			size_t mi_ = ld_push((l), "[%zu]", i);              \
			json_t *e = json_array_get(a_, i);                  \
			__VA_ARGS__;                                        \
			ld_pop((l), mi_);                                   \
		}                                                           \
		ld_pop((l), mk_);                                           \
	} while (0)

static bool load_unseen(struct ld *l, json_t *e, struct unseen *u)
{
	TRY(v_obj(l, e));
	G_INT(l, e, "pid", 1, SNAPSHOT_PID_MAX - 1, u->pid);
	TRY(g_str(l, e, "comm", true, &u->comm));
	TRY(g_str(l, e, "why", false, &u->why));
	return true;
}

static bool load_scan(struct ld *l, json_t *o, struct holders_scan *s)
{
	TRY(v_obj(l, o));
	EACH(l, o, "targets", MAX_ITEMS, s->targets, s->ntargets, i, {
		struct target *t = &s->targets[i];
		t->gpu_minor = -1;
		TRY(v_obj(l, e));
		TRY(g_str(l, e, "path", false, &t->path));
		TRY(g_str(l, e, "kind", false, &t->kind));
		G_INT(l, e, "gpu_minor", -1, 1 << 20, t->gpu_minor);
		TRY(g_str(l, e, "bus_id", true, &t->bus_id));
		TRY(g_bool(l, e, "ok", &t->ok));
		G_INT(l, e, "errno", 0, 4095, t->err);
		TRY(g_dev(l, e, "dev", &t->dev));
		unsigned long long ino;
		TRY(g_u64(l, e, "ino", &ino));
		t->ino = (ino_t)ino;
		TRY(g_bool(l, e, "chr", &t->chr));
		TRY(g_dev(l, e, "rdev", &t->rdev));
	});
	EACH(l, o, "holders", MAX_ITEMS, s->holders, s->nholders, i, {
		struct holder *h = &s->holders[i];
		TRY(load_proc(l, e, &h->info));
		EACH(l, e, "holds", 4096, h->holds, h->nholds, k, {
			struct hold *d = &h->holds[k];
			TRY(v_obj(l, e));
			G_INT(l, e, "target", 0, s->ntargets ? (long long)s->ntargets - 1 : -1, d->target);
			json_t *how;
			TRY(g_arr(l, e, "how", 4, &how));
			for (size_t b = 0; b < json_array_size(how); b++) {
				const char *nm = json_string_value(json_array_get(how, b));
				unsigned bit = 0;
				for (unsigned q = 0; nm && q < 4; q++)
					if (!strcmp(nm, snapshot_means_names[q]))
						bit = 1u << q;
				if (!bit) {
					ld_push(l, ".how[%zu]", b);
					return ld_fail(l, "expected \"fd\", \"mmap\", \"thread\" or \"copy\"");
				}
				d->means |= bit;
			}
			G_INT(l, e, "fds", 0, 1 << 24, d->nfd);
			G_INT(l, e, "maps", 0, 1 << 24, d->nmap);
			if (json_object_get(e, "map_bytes"))   /* absent in older snapshots */
				TRY(g_u64(l, e, "map_bytes", &d->map_bytes));
			TRY(g_bool(l, e, "read", &d->read));
			TRY(g_bool(l, e, "write", &d->write));
			G_INT(l, e, "via_tid", 0, SNAPSHOT_PID_MAX - 1, d->via_tid);
			TRY(g_str(l, e, "copy_path", true, &d->copy_path));
		});
	});
	EACH(l, o, "mounts", MAX_ITEMS, s->mounts, s->nmounts, i, {
		struct mount_hit *m = &s->mounts[i];
		TRY(v_obj(l, e));
		G_INT(l, e, "target", 0, s->ntargets ? (long long)s->ntargets - 1 : -1, m->target);
		TRY(g_str(l, e, "mount_point", false, &m->mount_point));
		TRY(g_str(l, e, "fstype", false, &m->fstype));
		TRY(g_str(l, e, "source", false, &m->source));
		TRY(g_str(l, e, "root", false, &m->root));
	});
	EACH(l, o, "not_inspected", MAX_ITEMS, s->denied, s->ndenied, i, TRY(load_unseen(l, e, &s->denied[i])));
	EACH(l, o, "timed_out", MAX_ITEMS, s->timed_out, s->ntimed_out, i, TRY(load_unseen(l, e, &s->timed_out[i])));
	G_INT(l, o, "scanned", 0, SNAPSHOT_PID_MAX, s->nscanned);
	if (json_object_get(o, "limited"))   /* absent in older snapshots: they walked every process */
		TRY(g_bool(l, o, "limited", &s->limited));
	G_INT(l, o, "vanished", 0, SNAPSHOT_PID_MAX, s->nvanished);
	TRY(g_strv(l, o, "notes", &s->notes, &s->nnotes));
	return true;
}

#define RC(l, o, key, dst) G_INT(l, o, key, -1000, 100000, dst)

static bool load_nvml(struct ld *l, json_t *o, struct nvml_info *nv)
{
	TRY(v_obj(l, o));
	TRY(g_bool(l, o, "loaded", &nv->loaded));
	RC(l, o, "rc", nv->rc);
	TRY(g_str(l, o, "error", true, &nv->error));
	TRY(g_str(l, o, "lib_path", true, &nv->lib_path));
	TRY(g_chars(l, o, "driver_version", nv->driver_version, sizeof nv->driver_version));
	TRY(g_chars(l, o, "nvml_version", nv->nvml_version, sizeof nv->nvml_version));
	G_INT(l, o, "proc_api", 0, 3, nv->proc_api);
	G_INT(l, o, "proc_stride", 0, 4096, nv->proc_stride);
	EACH(l, o, "gpus", 4096, nv->gpus, nv->ngpus, i, {
		struct nvml_gpu *g = &nv->gpus[i];
		TRY(v_obj(l, e));
		G_INT(l, e, "index", 0, 1 << 20, g->index);
		RC(l, e, "handle_rc", g->handle_rc);
		G_INT(l, e, "minor", -1, INT_MAX, g->minor);
		RC(l, e, "minor_rc", g->minor_rc);
		TRY(g_chars(l, e, "uuid", g->uuid, sizeof g->uuid));
		RC(l, e, "uuid_rc", g->uuid_rc);
		TRY(g_chars(l, e, "name", g->name, sizeof g->name));
		RC(l, e, "name_rc", g->name_rc);
		TRY(g_chars(l, e, "bus_id", g->bus_id, sizeof g->bus_id));
		RC(l, e, "bus_id_rc", g->bus_id_rc);
		TRY(g_u64(l, e, "mem_total", &g->mem_total));
		TRY(g_u64(l, e, "mem_reserved", &g->mem_reserved));
		TRY(g_u64(l, e, "mem_used", &g->mem_used));
		TRY(g_u64(l, e, "mem_free", &g->mem_free));
		RC(l, e, "mem_rc", g->mem_rc);
		RC(l, e, "mem_reserved_rc", g->mem_reserved_rc);
		G_INT(l, e, "mem_api", 0, 2, g->mem_api);
		TRY(g_bool(l, e, "persistence", &g->persistence));
		RC(l, e, "persistence_rc", g->persistence_rc);
		G_INT(l, e, "compute_mode", INT_MIN, INT_MAX, g->compute_mode);
		RC(l, e, "compute_mode_rc", g->compute_mode_rc);
		TRY(g_bool(l, e, "mig_current", &g->mig_current));
		TRY(g_bool(l, e, "mig_pending", &g->mig_pending));
		RC(l, e, "mig_rc", g->mig_rc);
		if (json_object_get(e, "mig_devices"))   /* absent in older snapshots and without MIG */
			EACH(l, e, "mig_devices", 64, g->migs, g->nmigs, k, {
				TRY(v_obj(l, e));
				TRY(g_chars(l, e, "uuid", g->migs[k].uuid, sizeof g->migs[k].uuid));
				G_INT(l, e, "gi", 0, UINT_MAX, g->migs[k].gi);
				G_INT(l, e, "ci", 0, UINT_MAX, g->migs[k].ci);
			});
		TRY(g_bool(l, e, "retired_pending", &g->retired_pending));
		RC(l, e, "retired_rc", g->retired_rc);
		TRY(g_bool(l, e, "remap_pending", &g->remap_pending));
		TRY(g_bool(l, e, "remap_failure", &g->remap_failure));
		G_INT(l, e, "remap_correctable", 0, UINT_MAX, g->remap_correctable);
		G_INT(l, e, "remap_uncorrectable", 0, UINT_MAX, g->remap_uncorrectable);
		RC(l, e, "remap_rc", g->remap_rc);
		TRY(g_u64(l, e, "ecc_uncorrected_volatile", &g->ecc_uncorrected_volatile));
		RC(l, e, "ecc_rc", g->ecc_rc);
		G_INT(l, e, "util_gpu", 0, UINT_MAX, g->util_gpu);
		G_INT(l, e, "util_mem", 0, UINT_MAX, g->util_mem);
		RC(l, e, "util_rc", g->util_rc);
		EACH(l, e, "procs", MAX_ITEMS, g->procs, g->nprocs, k, {
			struct nvml_proc *p = &g->procs[k];
			TRY(v_obj(l, e));
			G_INT(l, e, "pid", 0, UINT_MAX, p->pid);
			TRY(g_u64(l, e, "used_bytes", &p->used_bytes));
			TRY(g_bool(l, e, "used_known", &p->used_known));
			G_INT(l, e, "lists", 0, (1 << NVML_NLISTS) - 1, p->lists);
			TRY(g_bool(l, e, "instance_known", &p->instance_known));
			G_INT(l, e, "gi", 0, UINT_MAX, p->gi);
			G_INT(l, e, "ci", 0, UINT_MAX, p->ci);
		});
		json_t *rc, *api;
		TRY(g_arr(l, e, "list_rc", NVML_NLISTS, &rc));
		TRY(g_arr(l, e, "list_api", NVML_NLISTS, &api));
		if (json_array_size(rc) != NVML_NLISTS || json_array_size(api) != NVML_NLISTS) {
			ld_key_push(l, json_array_size(rc) != NVML_NLISTS ? "list_rc" : "list_api");
			return ld_fail(l, "expected %d entries (compute, graphics, mps)", NVML_NLISTS);
		}
		for (int k = 0; k < NVML_NLISTS; k++) {
			long long x;
			size_t mk = ld_push(l, ".list_rc[%d]", k);
			TRY(v_int(l, json_array_get(rc, (size_t)k), -1000, 100000, &x));
			g->list_rc[k] = (int)x;
			ld_pop(l, mk);
			mk = ld_push(l, ".list_api[%d]", k);
			TRY(v_int(l, json_array_get(api, (size_t)k), 0, 3, &x));
			g->list_api[k] = (unsigned)x;
			ld_pop(l, mk);
		}
		TRY(g_str(l, e, "error", true, &g->error));
	});
	return true;
}

static bool load_mem(struct ld *l, json_t *o, struct meminfo *m)
{
	TRY(v_obj(l, o));
#define MEM(key, field, has)                                  \
	do {                                                  \
		json_t *v_;                                   \
		TRY(get(l, o, key, &v_));                     \
		if (!json_is_null(v_)) {                      \
			unsigned long long x_;                \
			TRY(g_u64(l, o, key, &x_));           \
			m->field = x_;                        \
			m->has = true;                        \
		}                                             \
	} while (0)
	MEM("total_bytes", total, has_total);
	MEM("free_bytes", free, has_free);
	MEM("available_bytes", available, has_available);
	MEM("buffers_bytes", buffers, has_buffers);
	MEM("cached_bytes", cached, has_cached);
	MEM("shmem_bytes", shmem, has_shmem);
	MEM("mlocked_bytes", mlocked, has_mlocked);
	MEM("swap_total_bytes", swap_total, has_swap_total);
	MEM("swap_free_bytes", swap_free, has_swap_free);
	bool hp_total = false, hp_free = false;
	MEM("hugepages_total_bytes", hugepages_total, has_hugepages);
	hp_total = m->has_hugepages;
	m->has_hugepages = false;
	MEM("hugepages_free_bytes", hugepages_free, has_hugepages);
	hp_free = m->has_hugepages;
#undef MEM
	if (hp_total != hp_free) {
		ld_key_push(l, "hugepages_free_bytes");
		return ld_fail(l, "hugepages_total_bytes and hugepages_free_bytes must both be null or both be set");
	}
	m->has_hugepages = hp_total;
	return true;
}

static bool load_snapshot(struct ld *l, json_t *root, struct snapshot *s)
{
	if (!json_is_object(root))
		return ld_fail(l, "a snapshot is a JSON object, this is %s", type_name(root));
	json_t *v = json_object_get(root, "schema");
	if (!v || !json_is_string(v) || strcmp(json_string_value(v), SNAPSHOT_SCHEMA))
		return ld_fail(l, "not a gpuwho snapshot (\"schema\" is not \"%s\")", SNAPSHOT_SCHEMA);
	v = json_object_get(root, "schema_version");
	if (!v || !json_is_integer(v))
		return ld_fail(l, "schema_version: expected an integer");
	if (json_integer_value(v) > SNAPSHOT_SCHEMA_VERSION)
		return ld_fail(l, "schema_version %lld is newer than this gpuwho understands (%d): use a newer gpuwho",
			       (long long)json_integer_value(v), SNAPSHOT_SCHEMA_VERSION);
	if (json_integer_value(v) < 1)
		return ld_fail(l, "schema_version %lld is not valid", (long long)json_integer_value(v));
	s->schema_version = (int)json_integer_value(v);
	TRY(g_str(l, root, "gpuwho_version", true, &s->gpuwho_version));
	TRY(g_str(l, root, "hostname", true, &s->hostname));
	TRY(g_real(l, root, "taken_at", &s->taken_at));
	TRY(g_bool(l, root, "redacted", &s->redacted));
	TRY(g_bool(l, root, "host_pid_namespace", &s->host_pidns));
	json_t *o;
	TRY(g_obj(l, root, "self", false, &o));
	size_t m = ld_key_push(l, "self");
	G_INT(l, o, "pid", 0, SNAPSHOT_PID_MAX - 1, s->self_pid);
	TRY(g_pids(l, o, "ancestors", 1, &s->self_ancestors, &s->nself_ancestors));
	ld_pop(l, m);

	TRY(g_obj(l, root, "nvml", true, &o));
	s->nvml_asked = o != NULL;
	if (o) {
		m = ld_key_push(l, "nvml");
		TRY(load_nvml(l, o, &s->nvml));
		ld_pop(l, m);
	}
	TRY(g_obj(l, root, "resample", true, &o));
	if (o) {
		m = ld_key_push(l, "resample");
		TRY(g_real(l, o, "delay_s", &s->resample.delay_s));
		json_t *a;
		TRY(g_arr(l, o, "used_bytes", 4096, &a));
		size_t n = json_array_size(a);
		if (n == 0) {
			ld_key_push(l, "used_bytes");
			return ld_fail(l, "empty: a resample has one entry per GPU");
		}
		s->resample.ngpus = n;
		s->resample.used_bytes = xcalloc(n, sizeof *s->resample.used_bytes);
		s->resample.used_ok = xcalloc(n, sizeof *s->resample.used_ok);
		for (size_t i = 0; i < n; i++) {
			size_t mi = ld_push(l, ".used_bytes[%zu]", i);
			json_t *e = json_array_get(a, i);
			if (!json_is_null(e)) {
				TRY(v_u64(l, e, &s->resample.used_bytes[i]));
				s->resample.used_ok[i] = true;
			}
			ld_pop(l, mi);
		}
		ld_pop(l, m);
	}
	TRY(g_obj(l, root, "scan", false, &o));
	m = ld_key_push(l, "scan");
	TRY(load_scan(l, o, &s->scan));
	ld_pop(l, m);
	EACH(l, root, "others", MAX_ITEMS, s->others, s->nothers, i, TRY(load_proc(l, e, &s->others[i])));
	TRY(g_obj(l, root, "memory", true, &o));
	s->mem_ok = o != NULL;
	if (o) {
		m = ld_key_push(l, "memory");
		TRY(load_mem(l, o, &s->mem));
		ld_pop(l, m);
	}
	TRY(g_obj(l, root, "shm", false, &o));
	m = ld_key_push(l, "shm");
	TRY(g_str(l, o, "error", true, &s->shm_error));
	if (json_object_get(o, "dir"))   /* absent in older snapshots: /dev/shm */
		TRY(g_str(l, o, "dir", true, &s->shm_dir));
	EACH(l, o, "segments", MAX_ITEMS, s->shm, s->nshm, i, {
		struct shm_segment *g = &s->shm[i];
		TRY(v_obj(l, e));
		TRY(g_str(l, e, "name", false, &g->name));
		if (!shm_name_ok(g->name))
			return ld_fail(l, "name: not a file name in /dev/shm (empty, \".\", \"..\" or with a '/')");
		TRY(g_u64(l, e, "size", &g->size));
		TRY(g_u64(l, e, "bytes", &g->bytes));
		TRY(g_real(l, e, "mtime", &g->mtime));
		G_INT(l, e, "uid", 0, UINT_MAX, g->uid);
		TRY(g_pids(l, e, "holders", 1, &g->holders, &g->nholders));
		G_INT(l, e, "creator_pid", 0, SNAPSHOT_PID_MAX - 1, g->creator_pid);
		TRY(g_bool(l, e, "creator_alive", &g->creator_alive));
		TRY(g_str(l, e, "origin", true, &g->origin));
	});
	ld_pop(l, m);
	TRY(g_strv(l, root, "notes", &s->notes, &s->nnotes));
	return true;
}

/* Messages are one line: jansson quotes the offending token, which may hold control characters. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 127)
			*s = '?';
}

int snapshot_from_json(const char *text, size_t len, struct snapshot *out, char **err)
{
	memset(out, 0, sizeof *out);
	*err = NULL;
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
		i++;
	if (i == len) {
		*err = xstrdup(len ? "the file holds only white space, not a snapshot" : "the file is empty, not a snapshot");
		return -1;
	}
	json_error_t je;
	/* JSON_REJECT_DUPLICATES: a key given twice is a corrupted file, not a choice to make. */
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		*err = xasprintf("not valid JSON: line %d, column %d: %s", je.line, je.column, je.text);
		one_line(*err);
		return -1;
	}
	struct ld l = {.len = 0};
	bool ok = load_snapshot(&l, root, out);
	json_decref(root);
	if (!ok) {
		snapshot_free(out);
		*err = l.err ? l.err : xstrdup("invalid snapshot");
		one_line(*err);
		return -1;
	}
	free(l.err);
	return 0;
}

int snapshot_load(const char *path, struct snapshot *out, char **err)
{
	memset(out, 0, sizeof *out);
	char *buf = NULL;
	size_t len = 0;
	int r;
	if (!strcmp(path, "-")) {
		size_t cap = 0;
		r = 0;
		for (;;) {
			xgrow(&buf, &cap, len + 65536, 1);
			ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				r = -errno;
				break;
			}
			if (n == 0)
				break;
			len += (size_t)n;
		}
	} else {
		r = readfile_at(AT_FDCWD, path, &buf, &len, 0);
	}
	if (r < 0) {
		free(buf);
		*err = xasprintf("cannot read %s: %s", path, strerror(-r));
		return -1;
	}
	r = snapshot_from_json(buf ? buf : "", len, out, err);
	free(buf);
	return r;
}
