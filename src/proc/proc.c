/* proc: one reader per /proc/PID file, and the facts about one process that gpuwho reports. */
#include "proc/proc.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000  /* include/linux/sched.h */

/* Splits the fields after "PID (comm) " of a stat line: returns a pointer to field 3 (state),
 * or NULL when the line is malformed. The comm ends at the LAST ')' (names may hold ')'). */
static char *stat_after_comm(char *buf)
{
	char *rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ')
		return NULL;
	return rp + 2;
}

/* Parses a /proc/PID/stat (or task/TID/stat) line. Fields numbered as in proc(5). */
static int parse_stat(char *buf, struct proc_info *p)
{
	char *s = stat_after_comm(buf);
	if (!s)
		return -EINVAL;
	/* (3) state (4) ppid (5) pgrp (6) session (7) tty_nr (8) tpgid (9) flags ... (20) num_threads
	 * (21) itrealvalue (22) starttime */
	char state;
	int ppid, pgid, sid;
	unsigned long flags;
	long nthreads;
	unsigned long long start;
	int n = sscanf(s, "%c %d %d %d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld %*d %llu",
		       &state, &ppid, &pgid, &sid, &flags, &nthreads, &start);
	if (n != 7)
		return -EINVAL;
	p->state = state;
	p->ppid = ppid;
	p->pgid = pgid;
	p->sid = sid;
	p->kthread = (flags & PF_KTHREAD) != 0;
	p->nthreads = nthreads > 0 ? (unsigned)nthreads : 0;
	p->start_ticks = start;
	return 0;
}

int proc_read_stat(int piddir, struct proc_info *p)
{
	char buf[1024];
	int fd = openat(piddir, "stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	if (n == 0)
		return -ESRCH;   /* an exited-and-reaped process reads empty */
	buf[n] = '\0';
	return parse_stat(buf, p);
}

static const char *user_name(uid_t uid, char *tmp, size_t n)
{
	/* getpwuid_r may consult NSS (LDAP, sssd): acceptable here, it is called once per holder. */
	struct passwd pw, *res = NULL;
	char pwbuf[1024];
	if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res) {
		snprintf(tmp, n, "%s", res->pw_name);
		return tmp;
	}
	snprintf(tmp, n, "%u", (unsigned)uid);
	return tmp;
}

int proc_read_status(int piddir, struct proc_info *p)
{
	char *buf;
	int r = readfile_at(piddir, "status", &buf, NULL, 64 * 1024);
	if (r < 0)
		return r;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (str_starts(line, "Uid:")) {
			unsigned long uid;
			if (sscanf(line + 4, "%lu", &uid) == 1)
				p->uid = (uid_t)uid;
		} else if (str_starts(line, "VmRSS:")) {
			sscanf(line + 6, "%llu", &p->vm_rss_kb);
		} else if (str_starts(line, "VmLck:")) {
			sscanf(line + 6, "%llu", &p->vm_lck_kb);   /* mlock()ed */
		} else if (str_starts(line, "RssAnon:")) {
			sscanf(line + 8, "%llu", &p->rss_anon_kb);
		} else if (str_starts(line, "RssFile:")) {
			sscanf(line + 8, "%llu", &p->rss_file_kb);
		} else if (str_starts(line, "RssShmem:")) {
			sscanf(line + 9, "%llu", &p->rss_shmem_kb);
		} else if (str_starts(line, "VmPin:")) {
			sscanf(line + 6, "%llu", &p->vm_pin_kb);   /* pinned: cannot be moved or swapped (RDMA, cudaHostAlloc) */
		} else if (str_starts(line, "NSpid:")) {
			char *q = line + 6, *end;
			p->nnspid = 0;
			for (;;) {
				long v = strtol(q, &end, 10);
				if (end == q || p->nnspid >= PROC_MAX_NS)
					break;
				p->nspid[p->nnspid++] = (int)v;
				q = end;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	char tmp[256];
	free(p->user);
	p->user = xstrdup(user_name(p->uid, tmp, sizeof tmp));
	return 0;
}

int proc_read_comm(int piddir, struct proc_info *p)
{
	char *buf;
	size_t len;
	int r = readfile_at(piddir, "comm", &buf, &len, 256);
	if (r < 0)
		return r;
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	free(p->comm);
	p->comm = buf;
	return 0;
}

int proc_read_cmdline(int piddir, struct proc_info *p)
{
	char *buf;
	size_t len;
	int r = readfile_at(piddir, "cmdline", &buf, &len, 256 * 1024);
	if (r < 0)
		return r;
	while (len && buf[len - 1] == '\0')
		len--;   /* the kernel NUL-terminates the last argument */
	free(p->cmdline);
	p->cmdline = buf;
	p->cmdline_len = len;
	return 0;
}

int proc_read_environ(int piddir, const char *name, struct proc_info *p)
{
	char *buf;
	size_t len;
	int r = readfile_at(piddir, "environ", &buf, &len, 1 << 20);
	if (r < 0)
		return r;
	size_t n = strlen(name);
	free(p->env_value);
	p->env_value = NULL;
	for (size_t i = 0; i < len;) {
		const char *e = buf + i;
		size_t m = strnlen(e, len - i);
		if (m > n && !strncmp(e, name, n) && e[n] == '=') {
			p->env_value = xstrndup(e + n + 1, m - n - 1);
			break;
		}
		i += m + 1;
	}
	free(buf);
	return 0;
}

static bool is_hex_run(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* Finds the first run of exactly 64 hex digits in s (a container id), or NULL. */
static const char *find_id64(const char *s)
{
	for (const char *q = s; *q; q++) {
		if ((q == s || !isxdigit((unsigned char)q[-1])) && strlen(q) >= 64 && is_hex_run(q, 64) &&
		    !isxdigit((unsigned char)q[64]))
			return q;
	}
	return NULL;
}

void container_from_cgroup(const char *path, struct container *c)
{
	memset(c, 0, sizeof *c);
	if (!path)
		return;
	const char *id = find_id64(path);
	const char *pod = strstr(path, "pod");
	const char *kube = strstr(path, "kubepods");
	if (kube && pod) {
		/* kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with _>.slice/...
		 * or kubepods/burstable/pod<uid>/<id> (cgroupfs driver). */
		const char *q = kube;
		while ((q = strstr(q, "pod")) != NULL) {
			const char *u = q + 3;
			size_t n = 0;
			while (isxdigit((unsigned char)u[n]) || u[n] == '_' || u[n] == '-')
				n++;
			if (n == 36) {
				char *uid = xstrndup(u, n);
				for (char *x = uid; *x; x++)
					if (*x == '_')
						*x = '-';
				c->pod_uid = uid;
				break;
			}
			q = u;
		}
		c->runtime = xstrdup("kubepods");
	}
	if (id) {
		const char *rt = NULL;
		if (strstr(path, "docker"))
			rt = "docker";
		else if (strstr(path, "cri-containerd") || strstr(path, "containerd"))
			rt = "containerd";
		else if (strstr(path, "crio"))
			rt = "cri-o";
		else if (strstr(path, "libpod"))
			rt = "podman";
		if (rt && !c->runtime)
			c->runtime = xstrdup(rt);
		else if (!c->runtime)
			c->runtime = xstrdup("container");
		c->id = xstrndup(id, 64);
	} else if (!c->runtime) {
		const char *l = strstr(path, "lxc.payload.");
		if (l) {
			const char *e = strchr(l + 12, '/');
			c->runtime = xstrdup("lxc");
			c->id = e ? xstrndup(l + 12, (size_t)(e - l - 12)) : xstrdup(l + 12);
		}
	}
}

int proc_read_cgroup(int piddir, struct proc_info *p)
{
	char *buf;
	int r = readfile_at(piddir, "cgroup", &buf, NULL, 64 * 1024);
	if (r < 0)
		return r;
	owner_free(&p->owner);
	owner_from_cgroup_text(buf, &p->owner);
	/* Lines "hierarchy-ID:controllers:path"; the v2 line is "0::path". Prefer it, else the first
	 * that is not the root. */
	char *best = NULL;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		/* On a hybrid host (v1 controllers beside an empty v2 tree) the v2 line reads "0::/"
		 * while the v1 lines name the container: a root path is the last resort. */
		if (c2 && (!best || (str_starts(line, "0::") && strcmp(c2 + 1, "/")) || (!strcmp(best, "/") && strcmp(c2 + 1, "/"))))
			best = c2 + 1;
		if (c2 && str_starts(line, "0::") && strcmp(c2 + 1, "/"))
			break;
		line = nl ? nl + 1 : NULL;
	}
	free(p->cgroup);
	p->cgroup = best ? xstrdup(best) : NULL;
	free(buf);
	proc_container_free(&p->container);
	container_from_cgroup(p->cgroup, &p->container);
	return 0;
}

/* The state (stat field 3) of thread `tid` under an open task/ directory; 0 when it is gone or
 * its stat does not parse. */
static char task_state(int taskfd, const char *tid)
{
	char path[300], buf[1024];
	snprintf(path, sizeof path, "%s/stat", tid);
	int fd = openat(taskfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *s = stat_after_comm(buf);
	return s ? s[0] : 0;
}

DIR *proc_open_tasks(int piddir)
{
	int tfd = openat(piddir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd < 0)
		return NULL;
	DIR *d = fdopendir(tfd);
	if (!d) {
		int e = errno;
		close(tfd);
		errno = e;
	}
	return d;
}

int proc_read_threads(int piddir, struct proc_info *p)
{
	DIR *d = proc_open_tasks(piddir);
	if (!d)
		return -errno;
	int tfd = dirfd(d);
	unsigned counts[128] = {0};
	unsigned total = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		unsigned long long tid;
		if (!parse_uint(de->d_name, &tid) || (int)tid == p->pid)
			continue;
		char st = task_state(tfd, de->d_name);
		if (st && (unsigned char)st < 128) {
			counts[(unsigned char)st]++;
			total++;
		}
	}
	closedir(d);
	bool differ = false;
	for (int c = 0; c < 128; c++)
		if (counts[c] && c != p->state)
			differ = true;
	free(p->thread_states);
	p->thread_states = NULL;
	if (!differ || !total)
		return 0;
	char out[256];
	int k = snprintf(out, sizeof out, "leader %c", p->state ? p->state : '?');
	for (int c = 0; c < 128 && k < (int)sizeof out - 16; c++)
		if (counts[c])
			k += snprintf(out + k, sizeof out - (size_t)k, ", %u %c", counts[c], c);
	p->thread_states = xstrdup(out);
	return 0;
}

/* The kernel function a sleeping task waits in, as /proc/PID/wchan (or task/TID/wchan) names it:
 * "0" (or empty) means running or not visible to us (wchan needs ptrace access). Malloc'ed or NULL. */
static char *read_wchan_at(int dirfd, const char *path)
{
	char *buf;
	size_t len;
	if (readfile_at(dirfd, path, &buf, &len, 256) < 0)
		return NULL;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (!len || !strcmp(buf, "0")) {
		free(buf);
		return NULL;
	}
	return buf;
}

int proc_read_wchan(int piddir, struct proc_info *p)
{
	int fd = openat(piddir, "wchan", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	free(p->wchan);
	p->wchan = read_wchan_at(piddir, "wchan");
	return 0;
}

bool proc_symbol_is_nvidia(const char *sym, size_t len)
{
	/* The driver's own prefixes (open-gpu-kernel-modules: nv_*, nvidia_*, uvm_* and the _nv*
	 * internals of the binary core). Not os_* or rm_*: too generic to be sure of. */
	static const char *const pre[] = {"uvm_", "nv_", "nvidia_", "_nv"};
	for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) {
		size_t n = strlen(pre[i]);
		if (len > n && !strncmp(sym, pre[i], n))
			return true;
	}
	return false;
}

/* Finds, in the text of task/TID/stack, the innermost frame inside the NVIDIA driver: a symbol
 * proc_symbol_is_nvidia accepts, or any frame tagged with the module [nvidia] or [nvidia_uvm].
 * Lines look like "[<0>] uvm_spin_loop+0x4f/0x90 [nvidia_uvm]". Returns the symbol (malloc'ed) or NULL. */
char *proc_stack_nvidia_frame(const char *stack)
{
	for (const char *line = stack; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line) : strlen(line);
		const char *sym = memchr(line, ']', ll);
		if (sym) {
			sym++;
			while (sym < line + ll && *sym == ' ')
				sym++;
			size_t sl = 0;
			while (sym + sl < line + ll && sym[sl] != '+' && sym[sl] != ' ')
				sl++;
			const char *end = line + ll;
			while (end > sym && end[-1] == ' ')
				end--;
			bool tagged = (end - sym >= 8 && !strncmp(end - 8, "[nvidia]", 8)) ||
				      (end - sym >= 12 && !strncmp(end - 12, "[nvidia_uvm]", 12));
			if (sl && (tagged || proc_symbol_is_nvidia(sym, sl)))
				return xstrndup(sym, sl);
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* How bad a thread's state is for a driver wait: D (cannot be killed) before R (spinning, as
 * uvm_spin_loop does) before the rest. */
static int wait_rank(char st)
{
	return st == 'D' ? 3 : st == 'R' ? 2 : 1;
}

int proc_read_waits(int piddir, struct proc_info *p)
{
	proc_read_wchan(piddir, p);
	DIR *d = proc_open_tasks(piddir);
	if (!d)
		return -errno;
	int tfd = dirfd(d);
	char *best = NULL;
	int best_rank = 0;
	bool stack_ok = true;   /* task/TID/stack needs root: stop trying after the first EACCES */
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		unsigned long long tid;
		if (!parse_uint(de->d_name, &tid))
			continue;
		char st = task_state(tfd, de->d_name);
		if (!st)
			continue;   /* the thread exited meanwhile */
		if (wait_rank(st) <= best_rank)
			continue;
		char path[300];
		snprintf(path, sizeof path, "%s/wchan", de->d_name);
		char *sym = read_wchan_at(tfd, path);
		if (sym && !proc_symbol_is_nvidia(sym, strlen(sym))) {
			free(sym);
			sym = NULL;
		}
		if (!sym && stack_ok && st != 'S') {
			/* A sleeping (S) thread's wchan already names where it waits; the stack is for
			 * D and R threads, whose wchan may be a generic scheduler function or 0. */
			char *stack;
			snprintf(path, sizeof path, "%s/stack", de->d_name);
			int r = readfile_at(tfd, path, &stack, NULL, 16 * 1024);
			if (r == 0) {
				sym = proc_stack_nvidia_frame(stack);
				free(stack);
			} else if (r == -EACCES || r == -EPERM) {
				stack_ok = false;
			}
		}
		if (!sym)
			continue;
		free(best);
		best = xasprintf("thread %llu (%c) in %s", tid, st, sym);
		best_rank = wait_rank(st);
		free(sym);
	}
	closedir(d);
	free(p->driver_wait);
	p->driver_wait = best;
	return 0;
}

static void note_missing(struct proc_info *p, const char *what, int err)
{
	char *m = p->missing ? xasprintf("%s; %s (%s)", p->missing, what, strerror(-err))
			     : xasprintf("%s (%s)", what, strerror(-err));
	free(p->missing);
	p->missing = m;
}

/* Reads task/TID/cmdline of the first thread other than the leader. */
static void cmdline_from_thread(int piddir, struct proc_info *p)
{
	DIR *d = proc_open_tasks(piddir);
	if (!d)
		return;
	int tfd = dirfd(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		unsigned long long tid;
		if (!parse_uint(de->d_name, &tid) || (int)tid == p->pid)
			continue;
		int t = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (t < 0)
			continue;
		int r = proc_read_cmdline(t, p);
		close(t);
		if (r == 0 && p->cmdline_len)
			break;
	}
	closedir(d);
}

static double boot_time_cached = -1;

double proc_boot_time(int procfd)
{
	if (boot_time_cached >= 0)
		return boot_time_cached;
	char *buf;
	double bt = 0;
	if (readfile_at(procfd, "stat", &buf, NULL, 0) == 0) {
		char *q = strstr(buf, "\nbtime ");
		if (q)
			bt = strtod(q + 7, NULL);
		free(buf);
	}
	boot_time_cached = bt;
	return bt;
}

/* Reads stat, status, comm and cgroup; with `full`, also cmdline and the threads' states. */
static int read_info(int procfd, int pid, struct proc_info *p, bool full)
{
	char name[32];
	snprintf(name, sizeof name, "%d", pid);
	memset(p, 0, sizeof *p);
	p->pid = pid;
	int dfd = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	int r = proc_read_stat(dfd, p);
	if (r < 0) {
		close(dfd);
		return r == -ENOENT ? -ESRCH : r;
	}
	static long hz;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	double bt = proc_boot_time(procfd);
	if (bt > 0 && hz > 0)
		p->start_time = bt + (double)p->start_ticks / (double)hz;
	if ((r = proc_read_status(dfd, p)) < 0)
		note_missing(p, "status", r);
	if ((r = proc_read_comm(dfd, p)) < 0)
		note_missing(p, "comm", r);
	if ((r = proc_read_cgroup(dfd, p)) < 0)
		note_missing(p, "cgroup", r);
	if (!full) {
		close(dfd);
		return 0;
	}
	if ((r = proc_read_cmdline(dfd, p)) < 0)
		note_missing(p, "cmdline", r);
	else if (p->cmdline_len == 0 && p->state == 'Z' && p->nthreads > 1)
		cmdline_from_thread(dfd, p);   /* an exited leader has no mm; its live threads do */
	if (p->nthreads > 1 && (r = proc_read_threads(dfd, p)) < 0)
		note_missing(p, "threads", r);
	close(dfd);
	return 0;
}

int proc_read_info(int procfd, int pid, struct proc_info *p)
{
	return read_info(procfd, pid, p, true);
}

int proc_read_brief(int procfd, int pid, struct proc_info *p)
{
	return read_info(procfd, pid, p, false);
}


int *proc_ancestors(int procfd, int pid, size_t *n)
{
	int *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (int depth = 0; procfd >= 0 && depth < 256; depth++) {
		char name[32];
		snprintf(name, sizeof name, "%d", pid);
		int dfd = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			break;
		struct proc_info p = {.pid = pid};
		int r = proc_read_stat(dfd, &p);
		close(dfd);
		if (r < 0 || p.ppid <= 0)
			break;
		xgrow(&v, &cap, *n + 1, sizeof *v);
		v[(*n)++] = p.ppid;
		pid = p.ppid;
	}
	return v;
}

bool proc_pidns_is_host(int procfd)
{
	struct proc_info p;
	int dfd = openat(procfd, "2", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return false;
	memset(&p, 0, sizeof p);
	bool host = proc_read_stat(dfd, &p) == 0 && p.kthread && p.ppid == 0;
	close(dfd);
	return host;
}

void proc_container_free(struct container *c)
{
	free(c->runtime);
	free(c->id);
	free(c->pod_uid);
	memset(c, 0, sizeof *c);
}

void proc_info_free(struct proc_info *p)
{
	if (!p)
		return;
	free(p->thread_states);
	free(p->user);
	free(p->comm);
	free(p->cmdline);
	free(p->cgroup);
	free(p->missing);
	free(p->wchan);
	free(p->driver_wait);
	free(p->env_value);
	proc_container_free(&p->container);
	owner_free(&p->owner);
	memset(p, 0, sizeof *p);
}

char *proc_cmdline_joined(const struct proc_info *p)
{
	if (!p->cmdline || p->cmdline_len == 0)
		return xasprintf("[%s]", p->comm ? p->comm : "?");
	char *s = xstrndup(p->cmdline, p->cmdline_len);
	for (size_t i = 0; i < p->cmdline_len; i++)
		if (s[i] == '\0')
			s[i] = ' ';
	return s;
}
