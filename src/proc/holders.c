/* holders: the holder engine. Walks every /proc/PID in parallel, stats each open fd (matching
 * character devices by st_rdev, other files by st_dev+st_ino), reads maps for mapping-only
 * holders, and looks into task/TID/ when a group leader has exited. The whole run is bounded in
 * time by a watchdog: a process in D state cannot stall the scan, and a dozen of them cannot add
 * their stalls up. fd/ is read first because it never takes the process's memory-map lock, while
 * maps, status and cmdline can wait on it forever; what the fds showed survives a later stall.
 * Over 700 lines on purpose: the scan, its worker pool and the watchdog that replaces stuck
 * workers share one context and one lock; split across files, that locking would be harder to
 * check than it is to read here in one place. */
#include "proc/holders.h"
#include "sys/devices.h"
#include "sys/mounts.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define GETDENTS_BUF (64 * 1024)
#define CACHE_SLOTS 8192          /* per-worker (st_dev, st_ino) -> class cache for maps lines */
#define MAX_EXTRA_WORKERS 64      /* replacements for workers stuck on a process */
#define SLOW_MS 100               /* a worker this long on one process looks stuck: the watchdog
				   * starts another so the rest of the run goes on meanwhile */

/* What a target is matched by, copied out of struct target so that a worker abandoned by the
 * watchdog never touches memory the caller may free. */
struct match {
	bool ok, chr;
	dev_t dev, rdev;
	ino_t ino;
};

enum { R_NOTHING, R_HOLDER, R_DENIED, R_VANISHED };

struct pid_result {
	int kind;
	struct holder h;   /* R_HOLDER */
	char *why;         /* R_DENIED */
	const char *stage; /* partial R_HOLDER: the read that did not end (a static string) */
};

struct cache_slot {
	dev_t dev;
	ino_t ino;
	int cls;           /* 0 empty, -1 not a target's device, k+1 target k by rdev */
};

struct ctx;

struct worker {
	struct ctx *c;
	pthread_t th;
	_Atomic int cur_pid;          /* 0 when idle */
	_Atomic uint64_t since;       /* when cur_pid's reads began */
	const char *_Atomic stage;    /* which file is being read, for the timeout message */
	size_t cur_idx;               /* cur_pid's index in c->pids; guarded by c->mu */
	struct pid_result *partial;   /* the holds cur_pid's fds (and maps) showed so far, for the
				       * watchdog to report if the rest never ends; guarded by c->mu */
	bool replaced;                /* slow: another worker was started in its place; guarded by c->mu */
	bool abandoned;               /* guarded by c->mu */
	bool done;                    /* guarded by c->mu */
	char *dbuf;                   /* getdents buffer */
	struct cache_slot *cache;
};

struct timed_out {
	int pid;
	const char *stage;
};

struct ctx {
	int procfd;
	bool info_only;               /* holders_read_procs: read each pid's facts, scan nothing */
	bool waits;                   /* also proc_read_waits for each process read in full */
	char *env_name;               /* also proc_read_environ of each holder and process read (owned: an abandoned
				       * worker may still read it after the call returns) */
	struct match *m;
	size_t nm;
	bool any_chr;
	int *pids;
	size_t npids;
	atomic_size_t next;
	struct pid_result **res;      /* one slot per pid index, guarded by mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned running;             /* workers not yet done and not abandoned */
	struct worker **workers;
	size_t nworkers, capworkers;
	struct timed_out *to;
	size_t nto, capto;
	unsigned npartial;            /* holders reported from a partial result */
};

static int sys_getdents64(int fd, char *buf, size_t n)
{
	return (int)syscall(SYS_getdents64, fd, buf, n);
}

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Per-target accumulation while one process is scanned. */
struct acc {
	struct hold *h;   /* ctx->nm entries */
	bool any;
};

static void note_hold(struct acc *a, size_t k, unsigned means, int tid, const char *copy_path)
{
	struct hold *h = &a->h[k];
	h->target = k;
	h->means |= means;
	if (tid && !h->via_tid)
		h->via_tid = tid;
	if (copy_path && !h->copy_path)
		h->copy_path = xstrdup(copy_path);
	a->any = true;
}

/* Returns the index of the target st matches, or -1. *copy: matched by rdev, not the node itself. */
static int match_stat(const struct ctx *c, const struct stat *st, bool *copy)
{
	for (size_t k = 0; k < c->nm; k++) {
		const struct match *m = &c->m[k];
		if (!m->ok)
			continue;
		if (m->chr) {
			if (S_ISCHR(st->st_mode) && st->st_rdev == m->rdev) {
				*copy = st->st_dev != m->dev || st->st_ino != m->ino;
				return (int)k;
			}
		} else if (st->st_dev == m->dev && st->st_ino == m->ino) {
			*copy = false;
			return (int)k;
		}
	}
	return -1;
}

/* fdinfo "flags:" is the file's f_flags in octal; O_ACCMODE gives read/write. */
static void read_access(int dfd, const char *fdinfo_dir, const char *fd, struct hold *h)
{
	char path[512], buf[512];
	snprintf(path, sizeof path, "%s/%s", fdinfo_dir, fd);
	int f = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return;
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	if (n <= 0)
		return;
	buf[n] = '\0';
	char *q = strstr(buf, "flags:");
	if (!q)
		return;
	unsigned long fl = strtoul(q + 6, NULL, 8);
	int acc = (int)(fl & O_ACCMODE);
	if (acc == O_RDONLY || acc == O_RDWR)
		h->read = true;
	if (acc == O_WRONLY || acc == O_RDWR)
		h->write = true;
}

/* Scans dir (e.g. "fd" or "task/TID/fd") under the process directory dfd. Returns the number of
 * entries seen, or -errno when the directory cannot be opened. */
static int scan_fds(struct worker *w, int dfd, const char *dir, const char *fdinfo_dir, int tid, struct acc *a)
{
	struct ctx *c = w->c;
	int fdfd = openat(dfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fdfd < 0)
		return -errno;
	int entries = 0;
	for (;;) {
		int n = sys_getdents64(fdfd, w->dbuf, GETDENTS_BUF);
		if (n <= 0)
			break;
		for (int off = 0; off < n;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(w->dbuf + off);
			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			entries++;
			struct stat st;
			/* Following the magic link stats the open file itself, whatever its path. */
			if (fstatat(fdfd, de->d_name, &st, 0) < 0)
				continue;   /* closed meanwhile, or a dead mount: not ours */
			bool copy;
			int k = match_stat(c, &st, &copy);
			if (k < 0)
				continue;
			char link[4096] = "";
			if (copy) {
				ssize_t l = readlinkat(fdfd, de->d_name, link, sizeof link - 1);
				link[l > 0 ? l : 0] = '\0';
			}
			note_hold(a, (size_t)k, (tid ? HOLD_THREAD : 0) | HOLD_FD | (copy ? HOLD_COPY : 0), tid,
				  copy ? link : NULL);
			a->h[k].nfd++;
			read_access(dfd, fdinfo_dir, de->d_name, &a->h[k]);
		}
	}
	close(fdfd);
	return entries;
}

static unsigned cache_hash(dev_t d, ino_t i)
{
	unsigned long long x = (unsigned long long)d * 0x9e3779b97f4a7c15ull ^ (unsigned long long)i;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (unsigned)(x >> 32) % CACHE_SLOTS;
}

/* Classifies a mapped file that is not a target node itself: is it a character device with a
 * target's rdev (a mknod'ed copy)? Stats it once per worker through map_files/ (the mapped file
 * itself; root only), else through the path maps shows, checked to be the same inode. */
static int classify_mapped(struct worker *w, int dfd, const char *range, const char *path, dev_t dev, ino_t ino)
{
	unsigned h = cache_hash(dev, ino);
	for (unsigned i = 0; i < 16; i++) {
		struct cache_slot *s = &w->cache[(h + i) % CACHE_SLOTS];
		if (s->cls && s->dev == dev && s->ino == ino)
			return s->cls;
		if (!s->cls)
			break;
	}
	char mf[128];
	snprintf(mf, sizeof mf, "map_files/%s", range);
	struct stat st;
	int cls = -1;
	bool have = fstatat(dfd, mf, &st, 0) == 0;
	if (!have && path[0] == '/')
		have = stat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
	if (have) {
		bool copy;
		int k = match_stat(w->c, &st, &copy);
		if (k >= 0)
			cls = k + 1;
	}
	for (unsigned i = 0; i < 16; i++) {
		struct cache_slot *s = &w->cache[(h + i) % CACHE_SLOTS];
		if (!s->cls) {
			s->dev = dev;
			s->ino = ino;
			s->cls = cls;
			break;
		}
	}
	return cls;
}

/* Reads maps ("maps" or "task/TID/maps"): "start-end perms offset MAJ:MIN inode path". */
static int scan_maps(struct worker *w, int dfd, const char *file, int tid, struct acc *a)
{
	struct ctx *c = w->c;
	char *buf;
	int r = readfile_at(dfd, file, &buf, NULL, 0);
	if (r < 0)
		return r;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char range[64];
		unsigned ma, mi;
		unsigned long long ino;
		int pathoff = 0;
		if (sscanf(line, "%63s %*s %*s %x:%x %llu %n", range, &ma, &mi, &ino, &pathoff) >= 4 && ino) {
			dev_t dev = makedev(ma, mi);
			const char *path = pathoff ? line + pathoff : "";
			int k = -1;
			bool copy = false;
			for (size_t t = 0; t < c->nm && k < 0; t++)
				if (c->m[t].ok && c->m[t].dev == dev && c->m[t].ino == (ino_t)ino)
					k = (int)t;
			if (k < 0 && c->any_chr) {
				int cls = classify_mapped(w, dfd, range, path, dev, (ino_t)ino);
				if (cls > 0) {
					k = cls - 1;
					copy = true;
				}
			}
			if (k >= 0) {
				note_hold(a, (size_t)k, HOLD_MMAP | (tid ? HOLD_THREAD : 0) | (copy ? HOLD_COPY : 0), tid,
					  copy ? path : NULL);
				a->h[k].nmap++;
				unsigned long long lo, hi;
				if (sscanf(range, "%llx-%llx", &lo, &hi) == 2 && hi > lo)
					a->h[k].map_bytes += hi - lo;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	return 0;
}

/* A group leader that exited while other threads live: its fd/ and maps are empty, the threads'
 * are not (the kernel's exit_files() cleared only the leader's view). */
static void scan_threads(struct worker *w, int dfd, int pid, struct acc *a)
{
	DIR *d = proc_open_tasks(dfd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		unsigned long long tid;
		if (!parse_uint(de->d_name, &tid) || (int)tid == pid)
			continue;
		char fd[300], fdinfo[300], maps[300];
		snprintf(fd, sizeof fd, "task/%s/fd", de->d_name);
		snprintf(fdinfo, sizeof fdinfo, "task/%s/fdinfo", de->d_name);
		snprintf(maps, sizeof maps, "task/%s/maps", de->d_name);
		atomic_store(&w->stage, "task/TID/fd");
		scan_fds(w, dfd, fd, fdinfo, (int)tid, a);
		/* Threads share one address space and, unless one unshared it, one fd table: the
		 * first live thread's view is the group's (and counts each fd once). */
		atomic_store(&w->stage, "task/TID/maps");
		if (scan_maps(w, dfd, maps, (int)tid, a) == 0)
			break;
	}
	closedir(d);
}

static struct pid_result *result_new(int kind)
{
	struct pid_result *r = xcalloc(1, sizeof *r);
	r->kind = kind;
	return r;
}

static void result_free(struct pid_result *r, size_t nm)
{
	if (!r)
		return;
	proc_info_free(&r->h.info);
	for (size_t i = 0; i < r->h.nholds; i++)
		free(r->h.holds[i].copy_path);
	(void)nm;
	free(r->h.holds);
	free(r->why);
	free(r);
}

/* Hands the watchdog a copy of what a's holds are now, replacing the last copy: if pid's next
 * reads stall, the holder is still reported from them. */
static void publish_partial(struct worker *w, const struct acc *a)
{
	struct ctx *c = w->c;
	struct pid_result *r = result_new(R_HOLDER);
	r->h.holds = xcalloc(c->nm, sizeof *r->h.holds);
	for (size_t k = 0; k < c->nm; k++) {
		if (!a->h[k].means)
			continue;
		struct hold *h = &r->h.holds[r->h.nholds++];
		*h = a->h[k];
		h->copy_path = a->h[k].copy_path ? xstrdup(a->h[k].copy_path) : NULL;
	}
	pthread_mutex_lock(&c->mu);
	struct pid_result *old = w->partial;
	w->partial = r;
	pthread_mutex_unlock(&c->mu);
	result_free(old, c->nm);
}

static struct pid_result *scan_pid(struct worker *w, int pid)
{
	struct ctx *c = w->c;
	char name[32];
	snprintf(name, sizeof name, "%d", pid);
	int dfd = openat(c->procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return result_new(errno == ENOENT || errno == ESRCH ? R_VANISHED : R_NOTHING);
	struct acc a = {.h = xcalloc(c->nm, sizeof *a.h)};
	struct pid_result *res = NULL;
	atomic_store(&w->stage, "fd");
	int n = scan_fds(w, dfd, "fd", "fdinfo", 0, &a);
	if (n == -ENOENT || n == -ESRCH) {
		res = result_new(R_VANISHED);
		goto out;
	}
	if (n <= 0) {
		/* Unreadable or empty fd/: a kernel thread (holds nothing), a zombie, a process of
		 * another user, or a group leader that exited while its threads live on. */
		struct proc_info st = {.pid = pid};
		atomic_store(&w->stage, "stat");
		int r = proc_read_stat(dfd, &st);
		if (r < 0) {
			res = result_new(R_VANISHED);
			goto out;
		}
		if (st.kthread) {
			res = result_new(R_NOTHING);
			goto out;
		}
		if (n == -EACCES || n == -EPERM) {
			res = result_new(R_DENIED);
			res->why = xstrdup("permission denied");
			goto out;
		}
		if (n < 0) {
			res = result_new(R_DENIED);
			res->why = xasprintf("cannot read fd/: %s", strerror(-n));
			goto out;
		}
		if (st.state == 'Z' && st.nthreads > 1)
			scan_threads(w, dfd, pid, &a);
	} else {
		if (a.any)
			publish_partial(w, &a);
		atomic_store(&w->stage, "maps");
		scan_maps(w, dfd, "maps", 0, &a);
	}
	if (!a.any) {
		res = result_new(R_NOTHING);
		goto out;
	}
	publish_partial(w, &a);
	res = result_new(R_HOLDER);
	atomic_store(&w->stage, "{status,cmdline,cgroup}");
	if (proc_read_info(c->procfd, pid, &res->h.info) == -ESRCH) {
		result_free(res, c->nm);
		res = result_new(R_VANISHED);
		goto out;
	}
	if (c->waits) {
		atomic_store(&w->stage, "task/TID/{wchan,stack}");
		proc_read_waits(dfd, &res->h.info);
	}
	if (c->env_name) {
		atomic_store(&w->stage, "environ");
		res->h.info.env_err = proc_read_environ(dfd, c->env_name, &res->h.info);
	}
	res->h.holds = xcalloc(c->nm, sizeof *res->h.holds);
	for (size_t k = 0; k < c->nm; k++) {
		if (!a.h[k].means)
			continue;
		res->h.holds[res->h.nholds++] = a.h[k];
		a.h[k].copy_path = NULL;
	}
out:
	for (size_t k = 0; k < c->nm; k++)
		free(a.h[k].copy_path);
	free(a.h);
	close(dfd);
	return res;
}

/* holders_read_procs: one process's facts, read in full (cmdline may block: hence the watchdog). */
static struct pid_result *info_pid(struct worker *w, int pid)
{
	struct ctx *c = w->c;
	atomic_store(&w->stage, "{stat,status,cmdline,cgroup}");
	struct pid_result *res = result_new(R_HOLDER);
	if (proc_read_info(c->procfd, pid, &res->h.info) < 0) {
		result_free(res, c->nm);
		return result_new(R_VANISHED);
	}
	if (c->waits || c->env_name) {
		char name[32];
		snprintf(name, sizeof name, "%d", pid);
		int dfd = openat(c->procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			res->h.info.env_err = -errno;
			return res;
		}
		if (c->waits) {
			atomic_store(&w->stage, "task/TID/{wchan,stack}");
			proc_read_waits(dfd, &res->h.info);
		}
		if (c->env_name) {
			atomic_store(&w->stage, "environ");
			res->h.info.env_err = proc_read_environ(dfd, c->env_name, &res->h.info);
		}
		close(dfd);
	}
	return res;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ctx *c = w->c;
	for (;;) {
		size_t i = atomic_fetch_add(&c->next, 1);
		if (i >= c->npids)
			break;
		pthread_mutex_lock(&c->mu);
		w->cur_idx = i;
		atomic_store(&w->since, now_ns());
		atomic_store(&w->cur_pid, c->pids[i]);
		pthread_mutex_unlock(&c->mu);
		struct pid_result *r = c->info_only ? info_pid(w, c->pids[i]) : scan_pid(w, c->pids[i]);
		pthread_mutex_lock(&c->mu);
		bool abandoned = w->abandoned;
		if (!abandoned)
			c->res[i] = r;
		struct pid_result *partial = w->partial;
		w->partial = NULL;
		atomic_store(&w->cur_pid, 0);
		pthread_mutex_unlock(&c->mu);
		result_free(partial, c->nm);
		if (abandoned) {
			/* The watchdog gave up on us and recorded this pid as timed out. */
			result_free(r, c->nm);
			break;
		}
	}
	pthread_mutex_lock(&c->mu);
	if (!w->abandoned) {
		w->done = true;
		c->running--;
		pthread_cond_signal(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Called with c->mu held. */
static bool worker_start(struct ctx *c)
{
	struct worker *w = xcalloc(1, sizeof *w);
	w->c = c;
	w->dbuf = xmalloc(GETDENTS_BUF);
	w->cache = xcalloc(CACHE_SLOTS, sizeof *w->cache);
	if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
		free(w->dbuf);
		free(w->cache);
		free(w);
		return false;
	}
	xgrow(&c->workers, &c->capworkers, c->nworkers + 1, sizeof *c->workers);
	c->workers[c->nworkers++] = w;
	c->running++;
	return true;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int *list_pids(int procfd, size_t *n)
{
	int *pids = NULL;
	size_t cap = 0;
	*n = 0;
	int fd = openat(procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = xmalloc(GETDENTS_BUF);
	for (;;) {
		int r = sys_getdents64(fd, buf, GETDENTS_BUF);
		if (r <= 0)
			break;
		for (int off = 0; off < r;) {
			struct linux_dirent64 *de = (struct linux_dirent64 *)(buf + off);
			off += de->d_reclen;
			unsigned long long v;
			if (parse_uint(de->d_name, &v) && v > 0 && v < (1u << 30)) {
				xgrow(&pids, &cap, *n + 1, sizeof *pids);
				pids[(*n)++] = (int)v;
			}
		}
	}
	free(buf);
	close(fd);
	if (*n)   /* qsort(NULL, 0) is undefined: an empty /proc gives no array */
		qsort(pids, *n, sizeof *pids, cmp_int);
	return pids;
}

static char *read_comm_of(int procfd, int pid)
{
	char path[64];
	snprintf(path, sizeof path, "%d/comm", pid);
	char *buf;
	size_t len;
	if (readfile_at(procfd, path, &buf, &len, 256) < 0)
		return NULL;
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}

static char read_state_of(int procfd, int pid)
{
	char path[64];
	snprintf(path, sizeof path, "%d", pid);
	int dfd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return '?';
	struct proc_info p = {0};
	int r = proc_read_stat(dfd, &p);
	close(dfd);
	return r == 0 ? p.state : '?';
}

static void add_note(struct holders_scan *s, char *note)
{
	strv_push(&s->notes, &s->nnotes, note);
}

static void add_unseen(struct unseen **arr, size_t *n, int pid, char *comm, char *why)
{
	*arr = xrealloc(*arr, (*n + 1) * sizeof **arr);
	(*arr)[*n] = (struct unseen){.pid = pid, .comm = comm, .why = why};
	(*n)++;
}

/* Targets that are mount points in our mount namespace, and /proc's hidepid. */
static void scan_mounts(int procfd, struct holders_scan *out)
{
	char *text;
	int r = readfile_at(procfd, "self/mountinfo", &text, NULL, 0);
	if (r < 0) {
		add_note(out, xasprintf("cannot read /proc/self/mountinfo (%s): bind-mounted targets are not reported",
					strerror(-r)));
		return;
	}
	size_t nm;
	struct mount_entry *m = mounts_parse(text, &nm);
	free(text);
	mounts_find_targets(m, nm, out->targets, out->ntargets, &out->mounts, &out->nmounts);
	const char *hp = mounts_proc_hidepid(m, nm, "/proc");
	if (hp && strcmp(hp, "0") && strcmp(hp, "off"))
		add_note(out, xasprintf("/proc is mounted with hidepid=%s: processes of other users may be invisible "
					"here and cannot be counted; run as root", hp));
	mounts_free(m, nm);
}

/* A holder whose reads stalled after its fds showed its holds: its facts from the files that
 * cannot block (proc_read_brief), and a `missing` line naming the read that did not end. Returns
 * a note saying so (malloc'ed). */
static char *fill_partial(int procfd, int pid, struct pid_result *r, unsigned timeout_ms)
{
	struct proc_info *p = &r->h.info;
	if (proc_read_brief(procfd, pid, p) < 0)
		p->pid = pid;
	char state = p->state ? p->state : '?';
	const char *why = state == 'D' ? ": uninterruptible sleep" : "";
	char *m = xasprintf("%s%sreading /proc/%d/%s took longer than %.1f s (state %c%s); found by its open fds",
			    p->missing ? p->missing : "", p->missing ? "; " : "", pid, r->stage, timeout_ms / 1000.0, state,
			    why);
	free(p->missing);
	p->missing = m;
	return xasprintf("PID %d (%s) was found by its open fds, but reading /proc/%d/%s took longer than %.1f s "
			 "(state %c%s): its other facts come from the files that cannot block", pid,
			 p->comm ? p->comm : "?", pid, r->stage, timeout_ms / 1000.0, state, why);
}

/* Workers the watchdog abandoned may still be running when we return; their context stays
 * allocated (and reachable from here) until the process exits. */
static struct ctx *graveyard[16];

static unsigned opt_timeout_ms(const struct holders_opts *opts)
{
	return opts && opts->timeout_ms ? opts->timeout_ms : HOLDERS_DEFAULT_TIMEOUT_MS;
}

/* A context over pids[0..npids) (owned) for the targets' match data. */
static struct ctx *ctx_new(const struct holders_opts *opts, int procfd, const struct target *targets, size_t n,
			   int *pids, size_t npids)
{
	struct ctx *c = xcalloc(1, sizeof *c);
	c->procfd = procfd;
	c->waits = opts && opts->waits;
	c->env_name = opts && opts->env_name ? xstrdup(opts->env_name) : NULL;
	c->nm = n;
	c->m = xcalloc(n ? n : 1, sizeof *c->m);
	for (size_t k = 0; k < n; k++) {
		c->m[k] = (struct match){.ok = targets[k].ok, .chr = targets[k].chr, .dev = targets[k].dev,
					  .rdev = targets[k].rdev, .ino = targets[k].ino};
		c->any_chr |= targets[k].ok && targets[k].chr;
	}
	c->pids = pids;
	c->npids = npids;
	c->res = xcalloc(npids ? npids : 1, sizeof *c->res);
	pthread_mutex_init(&c->mu, NULL);
	/* The watchdog's waits must not stretch when the wall clock is set back. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	return c;
}

/* Called with c->mu held: gives up on w's process. What its fds showed becomes its result (a
 * partial holder); without that, its pid is recorded as timed out. */
static void worker_abandon(struct ctx *c, struct worker *w, int pid)
{
	w->abandoned = true;
	c->running--;
	pthread_detach(w->th);
	if (w->partial) {
		w->partial->stage = atomic_load(&w->stage);
		c->res[w->cur_idx] = w->partial;
		w->partial = NULL;
		c->npartial++;
		return;
	}
	xgrow(&c->to, &c->capto, c->nto + 1, sizeof *c->to);
	c->to[c->nto++] = (struct timed_out){.pid = pid, .stage = atomic_load(&w->stage)};
}

/* Runs the workers over c->pids until each pid has a result or timed out (c->to). A worker busy
 * on one pid for SLOW_MS gets a replacement, so stuck processes stall side by side, not one after
 * another; at the run's deadline (or after the bound on one pid) the watchdog abandons it.
 * Returns true when some worker was abandoned (c must then outlive us: ctx_release). */
static bool ctx_run(struct ctx *c, const struct holders_opts *opts)
{
	unsigned timeout_ms = opt_timeout_ms(opts);
	uint64_t bound_ns = (uint64_t)timeout_ms * 1000000u;
	uint64_t deadline = opts && opts->deadline_ns ? opts->deadline_ns : now_ns() + bound_ns;
	unsigned nthreads = opts && opts->threads ? opts->threads : 0;
	if (!nthreads) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
	}
	pthread_mutex_lock(&c->mu);
	for (unsigned i = 0; i < nthreads && i < (c->npids ? c->npids : 1); i++)
		worker_start(c);
	size_t extra = 0;
	while (c->running > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 20 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
		uint64_t now = now_ns();
		for (size_t i = 0; i < c->nworkers; i++) {
			struct worker *w = c->workers[i];
			int pid = atomic_load(&w->cur_pid);
			if (w->abandoned || w->done || !pid)
				continue;
			uint64_t busy = now - atomic_load(&w->since);
			if (busy < (uint64_t)SLOW_MS * 1000000u)
				continue;
			if (busy >= bound_ns || now >= deadline)
				worker_abandon(c, w, pid);
			if (w->replaced)
				continue;
			w->replaced = true;
			if (extra < MAX_EXTRA_WORKERS && atomic_load(&c->next) < c->npids && worker_start(c))
				extra++;
		}
	}
	pthread_mutex_unlock(&c->mu);

	bool any_abandoned = false;
	for (size_t i = 0; i < c->nworkers; i++) {
		struct worker *w = c->workers[i];
		if (w->abandoned) {
			any_abandoned = true;
			continue;
		}
		pthread_join(w->th, NULL);
		free(w->dbuf);
		free(w->cache);
		free(w);
		c->workers[i] = NULL;
	}
	return any_abandoned;
}

/* Frees c, or parks it for the process's life when abandoned workers still use it (procfd, m,
 * pids, res). Closes c->procfd only when freeing. */
static void ctx_release(struct ctx *c, bool any_abandoned)
{
	if (any_abandoned) {
		for (size_t i = 0; i < sizeof graveyard / sizeof *graveyard; i++)
			if (!graveyard[i]) {
				graveyard[i] = c;
				break;
			}
		free(c->to);
		c->to = NULL;
		return;
	}
	close(c->procfd);
	free(c->env_name);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->workers);
	free(c->to);
	free(c->res);
	free(c->pids);
	free(c->m);
	free(c);
}

int holders_scan(const struct holders_opts *opts, struct target *targets, size_t n, struct holders_scan *out)
{
	memset(out, 0, sizeof *out);
	out->targets = targets;
	out->ntargets = n;
	const char *root = opts && opts->proc_root ? opts->proc_root : "/proc";
	unsigned timeout_ms = opt_timeout_ms(opts);
	int procfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		add_note(out, xasprintf("cannot open %s: %s; no process could be inspected", root, strerror(errno)));
		return 0;
	}
	size_t npids;
	int *pids;
	if (opts && opts->pids) {
		out->limited = true;
		npids = opts->npids;
		pids = xmalloc((npids + 1) * sizeof *pids);
		memcpy(pids, opts->pids, npids * sizeof *pids);
	} else {
		pids = list_pids(procfd, &npids);
	}
	struct ctx *c = ctx_new(opts, procfd, targets, n, pids, npids);
	bool any_abandoned = ctx_run(c, opts);

	size_t caph = 0;
	for (size_t i = 0; i < c->npids; i++) {
		struct pid_result *r = c->res[i];
		if (!r)
			continue;   /* timed out (recorded below) or never reached */
		out->nscanned++;
		if (r->stage)
			add_note(out, fill_partial(procfd, c->pids[i], r, timeout_ms));
		if (r->kind == R_VANISHED)
			out->nvanished++;
		else if (r->kind == R_DENIED) {
			add_unseen(&out->denied, &out->ndenied, c->pids[i], read_comm_of(procfd, c->pids[i]), r->why);
			r->why = NULL;
		} else if (r->kind == R_HOLDER) {
			xgrow(&out->holders, &caph, out->nholders + 1, sizeof *out->holders);
			out->holders[out->nholders++] = r->h;
			memset(&r->h, 0, sizeof r->h);
		}
		result_free(r, c->nm);
		c->res[i] = NULL;
	}
	size_t unreached = c->npids - out->nscanned - c->nto;
	out->npartial = c->npartial;
	for (size_t i = 0; i < c->nto; i++) {
		char st = read_state_of(procfd, c->to[i].pid);
		add_unseen(&out->timed_out, &out->ntimed_out, c->to[i].pid, read_comm_of(procfd, c->to[i].pid),
			   xasprintf("reading /proc/%d/%s took longer than %.1f s (state %c%s); skipped", c->to[i].pid,
				     c->to[i].stage ? c->to[i].stage : "?", timeout_ms / 1000.0, st,
				     st == 'D' ? ": uninterruptible sleep" : ""));
	}
	scan_mounts(procfd, out);
	if (!proc_pidns_is_host(procfd))
		add_note(out, xstrdup("this /proc shows a PID namespace other than the host's (PID 2 is not kthreadd): "
				      "processes outside it, which may hold these files, are invisible here; run gpuwho "
				      "on the host, or in a container started with --pid=host"));
	if (unreached > 0)
		add_note(out, xasprintf("%zu processes were not scanned: %s", unreached,
					unreached < c->npids ? "too many reads were stuck" : "no scanning thread could be started"));
	ctx_release(c, any_abandoned);
	return 0;
}

int holders_read_procs(const struct holders_opts *opts, const int *pids, size_t n, struct proc_info **out,
		       size_t *nout, char ***notes, size_t *nnotes)
{
	*out = NULL;
	*nout = 0;
	const char *root = opts && opts->proc_root ? opts->proc_root : "/proc";
	int procfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0 || n == 0) {
		if (procfd >= 0)
			close(procfd);
		return procfd < 0 ? -errno : 0;
	}
	int *copy = xmalloc(n * sizeof *copy);
	memcpy(copy, pids, n * sizeof *copy);
	struct ctx *c = ctx_new(opts, procfd, NULL, 0, copy, n);
	c->info_only = true;
	bool any_abandoned = ctx_run(c, opts);
	*out = xcalloc(n, sizeof **out);
	for (size_t i = 0; i < n; i++) {
		struct pid_result *r = c->res[i];
		if (r && r->kind == R_HOLDER) {
			(*out)[(*nout)++] = r->h.info;
			memset(&r->h.info, 0, sizeof r->h.info);
		} else if (!r) {
			/* Timed out (or never reached): what cannot block, and why the rest is missing. */
			const char *stage = "?";
			for (size_t k = 0; k < c->nto; k++)
				if (c->to[k].pid == pids[i])
					stage = c->to[k].stage ? c->to[k].stage : "?";
			struct proc_info p;
			if (proc_read_brief(procfd, pids[i], &p) == 0) {
				char *m = xasprintf("%s%sreading /proc/%d/%s took longer than %.1f s (state %c)",
						    p.missing ? p.missing : "", p.missing ? "; " : "", pids[i], stage,
						    opt_timeout_ms(opts) / 1000.0, p.state ? p.state : '?');
				free(p.missing);
				p.missing = m;
				strv_push(notes, nnotes, xasprintf("PID %d: %s", pids[i], m));
				(*out)[(*nout)++] = p;
			} else {
				proc_info_free(&p);
			}
		}
		result_free(r, 0);
		c->res[i] = NULL;
	}
	if (any_abandoned)
		procfd = -1;   /* still in use by the parked context */
	ctx_release(c, any_abandoned);
	return 0;
}

static const char *env_or(const char *var, const char *dflt)
{
	const char *v = getenv(var);
	return v && *v ? v : dflt;
}

const char *holders_proc_root(void)
{
	return env_or("GPUWHO_PROC_ROOT", "/proc");
}

const char *holders_dev_root(void)
{
	return env_or("GPUWHO_DEV_ROOT", "/dev");
}

int holders_scan_nvidia(const struct holders_opts *opts, struct holders_scan *out)
{
	size_t n = 0;
	char *note = NULL;
	const char *proc_root = opts && opts->proc_root ? opts->proc_root : holders_proc_root();
	struct target *targets = devices_discover(proc_root, holders_dev_root(), &n, &note);
	holders_scan(opts, targets, n, out);
	if (note)
		strv_push(&out->notes, &out->nnotes, note);
	return 0;
}

void holders_scan_free(struct holders_scan *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ntargets; i++)
		target_free(&s->targets[i]);
	free(s->targets);
	for (size_t i = 0; i < s->nholders; i++) {
		proc_info_free(&s->holders[i].info);
		for (size_t k = 0; k < s->holders[i].nholds; k++)
			free(s->holders[i].holds[k].copy_path);
		free(s->holders[i].holds);
	}
	free(s->holders);
	for (size_t i = 0; i < s->nmounts; i++) {
		free(s->mounts[i].mount_point);
		free(s->mounts[i].fstype);
		free(s->mounts[i].source);
		free(s->mounts[i].root);
	}
	free(s->mounts);
	for (size_t i = 0; i < s->ndenied; i++) {
		free(s->denied[i].comm);
		free(s->denied[i].why);
	}
	free(s->denied);
	for (size_t i = 0; i < s->ntimed_out; i++) {
		free(s->timed_out[i].comm);
		free(s->timed_out[i].why);
	}
	free(s->timed_out);
	for (size_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	memset(s, 0, sizeof *s);
}
