/* free/act: signals a free plan's processes through pidfds, waits for them and for the memory, and
 * cleans up /dev/shm leftovers — re-checking every fact the plan rests on right before acting. */
#include "free/act.h"
#include "proc/holders.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Older headers lack the numbers; they are the same on every architecture since 5.1/5.3. */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define POLL_MS 50        /* how often exits are looked for without pidfds */
#define RECOLLECT_MS 250  /* pause between two looks at the GPUs' memory */

static int pidfd_open_(int pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal_(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}

const char *free_outcome_name(enum free_outcome o)
{
	switch (o) {
	case FREE_OUT_NOT_SIGNALLED: return "not_signalled";
	case FREE_OUT_GONE: return "gone_before";
	case FREE_OUT_REUSED: return "pid_reused";
	case FREE_OUT_CHANGED: return "changed";
	case FREE_OUT_NO_LONGER: return "no_longer_holds";
	case FREE_OUT_DENIED: return "not_permitted";
	case FREE_OUT_FAILED: return "failed";
	case FREE_OUT_TERM: return "exited_on_sigterm";
	case FREE_OUT_KILL: return "exited_on_sigkill";
	case FREE_OUT_ALIVE: return "still_alive";
	}
	return "unknown";
}

static double secs(uint64_t from_ns)
{
	return (double)(now_ns() - from_ns) / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The live stat of pid (stat field 3 state, field 22 start time). Returns 0 or -errno (-ENOENT,
 * -ESRCH: gone). */
static int live_stat(int procfd, int pid, char *state, unsigned long long *start, unsigned *nthreads)
{
	char name[32];
	snprintf(name, sizeof name, "%d", pid);
	int dfd = openat(procfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	struct proc_info p = {.pid = pid};
	int r = proc_read_stat(dfd, &p);
	close(dfd);
	if (r == 0) {
		*state = p.state;
		*start = p.start_ticks;
		if (nthreads)
			*nthreads = p.nthreads;
	}
	proc_info_free(&p);
	return r;
}

/* /proc/PID/wchan, or NULL ("0" or empty: running). */
static char *live_wchan(int procfd, int pid)
{
	char name[48], *buf = NULL;
	size_t len;
	snprintf(name, sizeof name, "%d/wchan", pid);
	if (readfile_at(procfd, name, &buf, &len, 256) < 0)
		return NULL;
	if (!len || !strcmp(buf, "0")) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* One process being acted on. */
struct victim {
	int pid;
	int fd;                      /* its pidfd, or -1 (no pidfd support, or done) */
	unsigned long long start;    /* the snapshot's start time */
	bool pending;                /* signalled, not yet seen gone */
};

/* True when the process has exited: its pidfd is readable (POLLIN), or without a pidfd, its PID
 * is gone, taken by a process that started later, or a zombie with no live thread. */
static bool exited_nopidfd(int procfd, const struct victim *v)
{
	char state;
	unsigned long long start;
	unsigned n = 0;
	if (live_stat(procfd, v->pid, &state, &start, &n) < 0 || start != v->start)
		return true;
	return (state == 'Z' || state == 'X') && n <= 1;
}

/* Waits until every pending victim exited or deadline_ns; marks exits with `outcome`. */
static void wait_exits(struct victim *vs, size_t n, struct free_result *res, enum free_outcome outcome, int procfd,
		       uint64_t t0, uint64_t deadline_ns)
{
	struct pollfd *pf = xcalloc(n + 1, sizeof *pf);
	size_t *idx = xcalloc(n + 1, sizeof *idx);
	for (;;) {
		size_t np = 0, nleft = 0;
		for (size_t i = 0; i < n; i++) {
			if (!vs[i].pending)
				continue;
			if (vs[i].fd < 0 && exited_nopidfd(procfd, &vs[i])) {
				vs[i].pending = false;
				res[i].outcome = outcome;
				res[i].after_s = secs(t0);
				continue;
			}
			nleft++;
			if (vs[i].fd >= 0) {
				pf[np] = (struct pollfd){.fd = vs[i].fd, .events = POLLIN};
				idx[np++] = i;
			}
		}
		uint64_t now = now_ns();
		if (!nleft || now >= deadline_ns)
			break;
		uint64_t left_ms = (deadline_ns - now) / 1000000 + 1;
		int to = np < nleft ? POLL_MS : (int)(left_ms > 1000 ? 1000 : left_ms);
		int r = poll(pf, np, to);
		if (r < 0 && errno != EINTR)
			break;
		for (size_t k = 0; r > 0 && k < np; k++) {
			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct victim *v = &vs[idx[k]];
			v->pending = false;
			res[idx[k]].outcome = outcome;
			res[idx[k]].after_s = secs(t0);
		}
	}
	free(pf);
	free(idx);
}

/* Sends sig to v: through its pidfd, or (no pidfds) with kill(2) right after re-checking the start
 * time. Returns 0 or -errno. */
static int send(int procfd, struct victim *v, int sig)
{
	if (v->fd >= 0)
		return pidfd_signal_(v->fd, sig) == 0 ? 0 : -errno;
	char state;
	unsigned long long start;
	if (live_stat(procfd, v->pid, &state, &start, NULL) < 0 || start != v->start)
		return -ESRCH;
	return kill(v->pid, sig) == 0 ? 0 : -errno;
}

/* Opens the pidfd FIRST, then compares the live start time with the snapshot's: the pidfd pins
 * the process it names, so once the start times match, the signal cannot reach a newer process
 * that took the PID. Sets the outcome when the process must not (or cannot) be signalled. */
static bool arm(int procfd, const struct free_proc *fp, struct victim *v, struct free_result *res, bool *no_pidfd)
{
	v->pid = fp->pid;
	v->start = fp->info->start_ticks;
	v->fd = -1;
	if (!*no_pidfd) {
		v->fd = pidfd_open_(fp->pid);
		if (v->fd < 0) {
			if (errno == ENOSYS) {
				*no_pidfd = true;
			} else if (errno == ESRCH) {
				res->outcome = FREE_OUT_GONE;
				return false;
			} else {
				res->outcome = FREE_OUT_FAILED;
				res->err = errno;
				return false;
			}
		}
	}
	res->by_kill = v->fd < 0;
	char state;
	unsigned long long start;
	int r = live_stat(procfd, fp->pid, &state, &start, NULL);
	if (r < 0 || start != v->start) {
		if (r < 0) {
			res->outcome = FREE_OUT_GONE;
		} else {
			res->outcome = FREE_OUT_REUSED;
			res->start_now = start;
		}
		if (v->fd >= 0)
			close(v->fd);
		v->fd = -1;
		return false;
	}
	/* The plan judged the snapshot's uid, name and kind (protected daemons, other users, kernel
	 * threads). The same process may have exec'd since, or a --from snapshot may not describe
	 * this host: judge again what the live process is, before any signal. */
	/* A name the snapshot could not read proves nothing: such a process is never signalled. */
	struct proc_info live;
	bool same = proc_read_brief(procfd, fp->pid, &live) == 0 && !live.kthread && live.uid == fp->info->uid &&
		    fp->info->comm && live.comm && !strcmp(live.comm, fp->info->comm);
	proc_info_free(&live);
	if (!same) {
		res->outcome = FREE_OUT_CHANGED;
		if (v->fd >= 0)
			close(v->fd);
		v->fd = -1;
		return false;
	}
	res->state = state;
	return true;
}

/* Which GPU of the re-collected account is plan GPU g: by UUID when NVML named both, else minor. */
static long match_gpu(const struct account *after, const struct account_gpu *g)
{
	for (size_t i = 0; i < after->ngpus; i++) {
		const struct account_gpu *a = &after->gpus[i];
		if (g->nvml && a->nvml && g->nvml->uuid_rc == 0 && a->nvml->uuid_rc == 0) {
			if (!strcmp(g->nvml->uuid, a->nvml->uuid))
				return (long)i;
		} else if (g->minor >= 0 && a->minor == g->minor) {
			return (long)i;
		}
	}
	return -1;
}

/* Row kinds that stand for memory somebody still has. */
static bool row_has_memory(const struct account_proc *row)
{
	switch (row->kind) {
	case ACCOUNT_ATTRIBUTED:
	case ACCOUNT_OUTSIDE:
	case ACCOUNT_EXITED:
	case ACCOUNT_INHERITED:
	case ACCOUNT_UNMATCHED:
	case ACCOUNT_UNKNOWN:
		return true;
	case ACCOUNT_DEVICE_ONLY:
		return false;
	}
	return true;
}

static void after_gpus_free(struct free_report *r, size_t n)
{
	for (size_t i = 0; r->gpus && i < n; i++) {
		free(r->gpus[i].holders);
		free(r->gpus[i].mem_holders);
		memset(&r->gpus[i], 0, sizeof r->gpus[i]);
	}
}

/* Fills r->gpus from r->after_acct; returns true when every selected GPU is free. */
static bool judge_after(const struct free_plan *plan, struct free_report *r)
{
	bool all = true;
	for (size_t i = 0; i < plan->ngpus; i++) {
		struct free_gpu_after *ga = &r->gpus[i];
		long k = match_gpu(&r->after_acct, &plan->acct.gpus[plan->gpus[i].slot]);
		if (k < 0) {
			all = false;
			continue;
		}
		const struct account_gpu *a = &r->after_acct.gpus[k];
		ga->seen = true;
		ga->mem_known = a->mem_known;
		ga->used_bytes = a->used_bytes;
		for (size_t p = 0; p < a->nprocs; p++) {
			const struct account_proc *row = &a->procs[p];
			ga->holders = xrealloc(ga->holders, (ga->nholders + 1) * sizeof *ga->holders);
			ga->holders[ga->nholders++] = row->pid;
			if (row_has_memory(row)) {
				ga->mem_holders = xrealloc(ga->mem_holders, (ga->nmem_holders + 1) * sizeof *ga->mem_holders);
				ga->mem_holders[ga->nmem_holders++] = row->pid;
			}
		}
		ga->free = a->mem_known && a->used_bytes < FREE_DONE_BYTES && ga->nmem_holders == 0;
		all = all && ga->free;
	}
	return all;
}

/* Looks again until the selected GPUs are free or deadline_ns; leaves the last look in r. */
static void verify(const struct free_plan *plan, const struct free_act_opts *o, struct free_report *r,
		   uint64_t deadline_ns)
{
	if (!o->collect)
		return;
	for (;;) {
		if (r->after_ok) {
			account_free(&r->after_acct);
			snapshot_free(&r->after);
			after_gpus_free(r, plan->ngpus);
			r->after_ok = false;
		}
		if (o->collect(o->collect_ctx, &r->after) != 0)
			return;
		r->after_ok = true;
		account_from_snapshot(&r->after, &r->after_acct);
		r->all_free = judge_after(plan, r);
		if (r->all_free || now_ns() >= deadline_ns)
			return;
		sleep_ms(RECOLLECT_MS);
	}
}

/* Removes the planned /dev/shm segments that are still leaked: a regular file, same owner, its
 * creator still gone, held by nobody (one holder-engine pass over all of them), and the same
 * (dev, ino) right before unlinkat relative to the directory's fd. */
static void remove_shm(const struct free_plan *plan, const struct free_act_opts *o, struct free_report *r, int procfd)
{
	if (!o->shm_dir || !plan->nshm)
		return;
	r->shm = xcalloc(plan->nshm, sizeof *r->shm);
	r->nshm = plan->nshm;
	int dfd = open(o->shm_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		for (size_t i = 0; i < plan->nshm; i++)
			if (plan->shm[i].remove)
				r->shm[i].why = xasprintf("cannot open %s: %s", o->shm_dir, strerror(errno));
		return;
	}
	struct stat *st = xcalloc(plan->nshm, sizeof *st);
	struct target *ts = xcalloc(plan->nshm + 1, sizeof *ts);
	size_t *ti = xcalloc(plan->nshm + 1, sizeof *ti);
	size_t nt = 0;
	for (size_t i = 0; i < plan->nshm; i++) {
		const struct shm_segment *seg = plan->shm[i].seg;
		if (!plan->shm[i].remove)
			continue;
		char cpid[32];
		snprintf(cpid, sizeof cpid, "%d", seg->creator_pid);
		if (!shm_name_ok(seg->name))
			r->shm[i].why = xstrdup("not removed: not a file name in the shm folder");
		else if (fstatat(dfd, seg->name, &st[i], AT_SYMLINK_NOFOLLOW) < 0)
			r->shm[i].why = xasprintf("not removed: %s", strerror(errno));
		else if (!S_ISREG(st[i].st_mode))
			r->shm[i].why = xstrdup("not removed: no longer a regular file");
		else if (st[i].st_uid != seg->uid)
			r->shm[i].why = xstrdup("not removed: its owner changed since the snapshot");
		else if (faccessat(procfd, cpid, F_OK, 0) == 0)
			r->shm[i].why = xasprintf("not removed: a process with its creator's PID %d exists now",
						  seg->creator_pid);
		else {
			ts[nt] = (struct target){.path = xasprintf("%s/%s", o->shm_dir, seg->name), .kind = xstrdup("file"),
						 .gpu_minor = -1, .ok = true, .dev = st[i].st_dev, .ino = st[i].st_ino};
			ti[nt++] = i;
		}
	}
	if (nt) {
		struct holders_opts ho = {.proc_root = o->proc_root};
		struct holders_scan sc;
		holders_scan(&ho, ts, nt, &sc);   /* takes the targets */
		ts = NULL;
		for (size_t k = 0; k < nt; k++) {
			size_t i = ti[k];
			int by = 0;
			for (size_t h = 0; h < sc.nholders && !by; h++)
				for (size_t x = 0; x < sc.holders[h].nholds && !by; x++)
					if (sc.holders[h].holds[x].target == k)
						by = sc.holders[h].info.pid;
			struct stat now;
			if (by)
				r->shm[i].why = xasprintf("not removed: PID %d holds it now", by);
			else if (fstatat(dfd, plan->shm[i].seg->name, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
				 now.st_dev != st[i].st_dev || now.st_ino != st[i].st_ino)
				r->shm[i].why = xstrdup("not removed: replaced by another file since it was checked");
			else if (unlinkat(dfd, plan->shm[i].seg->name, 0) < 0)
				r->shm[i].why = xasprintf("not removed: %s", strerror(errno));
			else
				r->shm[i].removed = true;
		}
		holders_scan_free(&sc);
	}
	free(ts);
	free(ti);
	free(st);
	close(dfd);
}

/* Drops victim i: not signalled, with outcome out. */
static void disarm(struct victim *v, bool *ok, struct free_result *res, enum free_outcome out)
{
	*ok = false;
	res->outcome = out;
	if (v->fd >= 0)
		close(v->fd);
	v->fd = -1;
}

/* The second judgement, as a holder: one bounded holder-engine pass over the armed targets that
 * held GPU files, against the snapshot's NVIDIA nodes; each must still hold one of the files that
 * made it a target (fp->held). A launcher must still be an ancestor of the holder it was found
 * from. Last, each pidfd must still name a live process: while it lives its PID cannot be reused,
 * so what /proc showed above was that process's own. */
static void recheck(const struct free_plan *plan, const struct free_act_opts *o, int procfd, struct victim *vs,
		    bool *ok, struct free_result *res, size_t n)
{
	const struct holders_scan *snap = &plan->snap->scan;
	int *pids = xcalloc(n + 1, sizeof *pids);
	size_t np = 0;
	for (size_t i = 0; i < n; i++)
		if (ok[i] && plan->procs[i].nheld)
			pids[np++] = plan->procs[i].pid;
	struct holders_scan live = {0};
	if (np) {
		struct target *t = xcalloc(snap->ntargets + 1, sizeof *t);
		for (size_t k = 0; k < snap->ntargets; k++)
			t[k] = target_copy(&snap->targets[k]);
		struct holders_opts ho = {.proc_root = o->proc_root, .pids = pids, .npids = np};
		holders_scan(&ho, t, snap->ntargets, &live);   /* takes t */
	}
	for (size_t i = 0; i < n; i++) {
		const struct free_proc *fp = &plan->procs[i];
		if (!ok[i])
			continue;
		bool still = false;
		if (fp->nheld) {
			for (size_t h = 0; h < live.nholders && !still; h++) {
				const struct holder *lh = &live.holders[h];
				for (size_t k = 0; lh->info.pid == fp->pid && k < lh->nholds && !still; k++)
					for (size_t e = 0; e < fp->nheld && !still; e++)
						still = lh->holds[k].target == fp->held[e];
			}
		} else if (fp->role == FREE_ROLE_LAUNCHER) {
			size_t na;
			int *anc = proc_ancestors(procfd, fp->via, &na);
			for (size_t k = 0; k < na && !still; k++)
				still = anc[k] == fp->pid;
			free(anc);
		} else {
			still = true;   /* no holding behind it to re-check (planned with --include PID) */
		}
		if (!still)
			disarm(&vs[i], &ok[i], &res[i], FREE_OUT_NO_LONGER);
		else if (vs[i].fd >= 0 && pidfd_signal_(vs[i].fd, 0) < 0) {
			res[i].err = errno;
			disarm(&vs[i], &ok[i], &res[i], errno == ESRCH ? FREE_OUT_GONE : FREE_OUT_FAILED);
		}
	}
	holders_scan_free(&live);
	free(pids);
}

void free_act(const struct free_plan *plan, const struct free_act_opts *o, struct free_report *r)
{
	memset(r, 0, sizeof *r);
	uint64_t t0 = now_ns();
	r->procs = xcalloc(plan->nprocs + 1, sizeof *r->procs);
	r->nprocs = plan->nprocs;
	r->gpus = xcalloc(plan->ngpus + 1, sizeof *r->gpus);
	r->ngpus = plan->ngpus;
	int procfd = open(o->proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n = plan->nsignal;
	struct victim *vs = xcalloc(n + 1, sizeof *vs);
	for (size_t i = 0; i <= n; i++)
		vs[i].fd = -1;   /* never close(0) for a victim that was not armed */
	size_t armed = 0;

	/* First every target is pinned by a pidfd and judged again as a process (arm), then as a holder
	 * (recheck); only then does any signal go out, so a target's check cannot see a world that the
	 * signals to the others already changed. */
	bool *ok = xcalloc(n + 1, sizeof *ok);
	for (size_t i = 0; i < n && procfd >= 0; i++) {
		bool warned = r->no_pidfd;
		ok[i] = arm(procfd, &plan->procs[i], &vs[i], &r->procs[i], &r->no_pidfd);
		if (r->no_pidfd && !warned)
			fprintf(stderr, "gpuwho free: warning: this kernel has no pidfd_open (Linux < 5.3): signalling with "
					"kill(2) right after checking each start time; a PID recycled in between could be hit\n");
	}
	if (procfd >= 0)
		recheck(plan, o, procfd, vs, ok, r->procs, n);

	/* SIGTERM first: a server that gets the chance tears its workers and its CUDA contexts down. */
	for (size_t i = 0; i < n && procfd >= 0; i++) {
		const struct free_proc *fp = &plan->procs[i];
		struct free_result *res = &r->procs[i];
		if (!ok[i])
			continue;
		int e = send(procfd, &vs[i], SIGTERM);
		if (e == -ESRCH) {
			res->outcome = FREE_OUT_GONE;
		} else if (e < 0) {
			res->outcome = e == -EPERM ? FREE_OUT_DENIED : FREE_OUT_FAILED;
			res->err = -e;
		} else {
			vs[i].pending = true;
			armed++;
			/* a stopped process cannot act on SIGTERM until it runs again */
			if (res->state == 'T' || fp->stopped)
				res->sent_cont = send(procfd, &vs[i], SIGCONT) == 0;
		}
		if (!vs[i].pending && vs[i].fd >= 0) {
			close(vs[i].fd);
			vs[i].fd = -1;
		}
	}
	free(ok);
	if (armed && !o->quiet)
		fprintf(stderr, "gpuwho free: sent SIGTERM to %zu process%s; waiting up to %u s before SIGKILL\n", armed,
			armed == 1 ? "" : "es", o->grace_s);
	uint64_t t_grace = t0 + (uint64_t)o->grace_s * 1000000000ull;
	wait_exits(vs, n, r->procs, FREE_OUT_TERM, procfd, t0, t_grace);

	size_t killed = 0;
	for (size_t i = 0; i < n; i++) {
		if (!vs[i].pending)
			continue;
		int e = send(procfd, &vs[i], SIGKILL);
		if (e == -ESRCH) {   /* exited between the wait and now (or without pidfds: PID reused) */
			vs[i].pending = false;
			r->procs[i].outcome = FREE_OUT_TERM;
			r->procs[i].after_s = secs(t0);
		} else {
			killed++;
		}
	}
	if (killed && !o->quiet)
		fprintf(stderr, "gpuwho free: %zu process%s ignored SIGTERM for %u s: sent SIGKILL\n", killed,
			killed == 1 ? "" : "es", o->grace_s);
	uint64_t t_end = now_ns() + (uint64_t)o->settle_s * 1000000000ull;
	wait_exits(vs, n, r->procs, FREE_OUT_KILL, procfd, t0, t_end);
	for (size_t i = 0; i < n; i++) {
		if (vs[i].fd >= 0)
			close(vs[i].fd);
		if (!vs[i].pending)
			continue;
		struct free_result *res = &r->procs[i];
		res->outcome = FREE_OUT_ALIVE;
		char state;
		unsigned long long start;
		if (procfd >= 0 && live_stat(procfd, vs[i].pid, &state, &start, NULL) == 0) {
			res->state = state;
			res->wchan = live_wchan(procfd, vs[i].pid);
		}
	}
	free(vs);

	verify(plan, o, r, t_end);
	if (procfd >= 0) {
		remove_shm(plan, o, r, procfd);
		close(procfd);
	}
	r->elapsed_s = secs(t0);
}

void free_report_release(struct free_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->procs && i < r->nprocs; i++)
		free(r->procs[i].wchan);
	free(r->procs);
	after_gpus_free(r, r->ngpus);
	free(r->gpus);
	for (size_t i = 0; r->shm && i < r->nshm; i++)
		free(r->shm[i].why);
	free(r->shm);
	if (r->after_ok) {
		account_free(&r->after_acct);
		snapshot_free(&r->after);
	}
	memset(r, 0, sizeof *r);
}

void free_reset_blockers(const struct free_report *r, const struct free_plan *plan, size_t gi, char ***lines,
			 size_t *n)
{
	*lines = NULL;
	*n = 0;
	if (!r->after_ok) {
		strv_push(lines, n, xstrdup("the GPU could not be looked at again after the processes were signalled"));
		return;
	}
	long k = match_gpu(&r->after_acct, &plan->acct.gpus[plan->gpus[gi].slot]);
	if (k < 0) {
		strv_push(lines, n, xstrdup("the GPU was not found again"));
		return;
	}
	const struct account_gpu *a = &r->after_acct.gpus[k];
	for (size_t p = 0; p < a->nprocs; p++) {
		const struct account_proc *row = &a->procs[p];
		const char *comm = row->info && row->info->comm ? row->info->comm : "?";
		strv_push(lines, n, xasprintf("PID %d (%s) %s", row->pid, comm,
					      row->kind == ACCOUNT_DEVICE_ONLY ? "holds the device"
					      : row->kind == ACCOUNT_OUTSIDE ? "has memory on it, outside this PID namespace"
					      : row->kind == ACCOUNT_EXITED ? "is still listed by NVML with memory on it"
									 : "has memory on it"));
	}
}

int free_run_reset(const char *cmd, int index, unsigned timeout_s)
{
	char idx[16];
	snprintf(idx, sizeof idx, "%d", index);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(STDERR_FILENO, STDOUT_FILENO);   /* its output is commentary, not our result */
		execlp(cmd, cmd, "--gpu-reset", "-i", idx, (char *)NULL);
		fprintf(stderr, "gpuwho free: cannot run %s: %s\n", cmd, strerror(errno));
		_exit(127);
	}
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (now_ns() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		sleep_ms(POLL_MS);
	}
}

int free_live_index(const struct free_report *r, const struct free_plan *plan, size_t gi)
{
	long k = match_gpu(&r->after_acct, &plan->acct.gpus[plan->gpus[gi].slot]);
	return k < 0 ? -1 : r->after_acct.gpus[k].index;
}
