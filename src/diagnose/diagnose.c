/* diagnose: a snapshot in, findings out (verdict, evidence, fix, PIDs). Pure: no I/O, no clock. */
#include "diagnose/diagnose.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
#define LIST_MAX 8        /* processes or files named one per evidence line before "and N more" */

/* ---------- building findings ---------- */

struct ctx {
	const struct snapshot *s;
	struct diagnosis *d;
	size_t cap;
};

static struct finding *add_finding(struct ctx *c, const char *verdict, enum diag_severity sev,
				   const struct account_gpu *g, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static struct finding *add_finding(struct ctx *c, const char *verdict, enum diag_severity sev,
				   const struct account_gpu *g, const char *fmt, ...)
{
	struct diagnosis *d = c->d;
	xgrow(&d->findings, &c->cap, d->nfindings + 1, sizeof *d->findings);
	struct finding *f = &d->findings[d->nfindings++];
	memset(f, 0, sizeof *f);
	f->verdict = verdict;
	f->severity = sev;
	f->gpu = g ? g->index : -1;
	f->minor = g ? g->minor : -1;
	f->slot = g ? (int)(g - d->acct.gpus) : -1;
	va_list ap;
	va_start(ap, fmt);
	f->headline = xvasprintf(fmt, ap);
	va_end(ap);
	return f;
}

static void ev(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev(struct finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(&f->evidence, &f->nevidence, xvasprintf(fmt, ap));
	va_end(ap);
}

static void set_fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_fix(struct finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(f->fix);
	f->fix = xvasprintf(fmt, ap);
	va_end(ap);
}

static void add_pid(struct finding *f, int pid)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return;
	f->pids = xrealloc(f->pids, (f->npids + 1) * sizeof *f->pids);
	f->pids[f->npids++] = pid;
}

/* Appends " PID" for each pid to a malloc'ed string (the arguments of a kill command). */
static char *pid_args(const int *pids, size_t n)
{
	char *out = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *m = xasprintf("%s%s%d", out, i ? " " : "", pids[i]);
		free(out);
		out = m;
	}
	return out;
}

/* ---------- naming things ---------- */

/* "GPU 0", or "GPU (minor 3)" when NVML does not know it. Static buffer per call site is enough:
 * callers use it at once. */
static const char *gpu_name(const struct account_gpu *g, char *buf, size_t n)
{
	if (g->index >= 0)
		snprintf(buf, n, "GPU %d", g->index);
	else
		snprintf(buf, n, "GPU (minor %d)", g->minor);
	return buf;
}

/* What `gpuwho free`/`nvidia-smi -i` take for this GPU: the index, else the device path. */
static char *gpu_selector(const struct account_gpu *g)
{
	if (g->index >= 0)
		return xasprintf("%d", g->index);
	return xasprintf("/dev/nvidia%d", g->minor);
}

/* A process's display name: its command line's first word (or that word's base name) when it
 * extends the 15-byte comm — a process title (setproctitle: "sglang::scheduler_TP0",
 * "VLLM::EngineCore") or a long program name — else comm. Raw bytes. */
static char *proc_name(const struct proc_info *p)
{
	const char *comm = p->comm ? p->comm : "?";
	if (p->cmdline && p->cmdline_len) {
		size_t a0 = strnlen(p->cmdline, p->cmdline_len);
		const char *sp = memchr(p->cmdline, ' ', a0);
		if (sp)
			a0 = (size_t)(sp - p->cmdline);   /* setproctitle may write one string with spaces */
		/* The program's base name too: /usr/bin/nvidia-persistenced for "nvidia-persiste". */
		const char *base = p->cmdline;
		for (const char *q = p->cmdline; q < p->cmdline + a0; q++)
			if (*q == '/')
				base = q + 1;
		size_t bl = a0 - (size_t)(base - p->cmdline), cl = strlen(comm);
		if (bl > cl && cl >= 15 && strncmp(base, comm, cl) == 0)
			return xstrndup(base, bl);
	}
	return xstrdup(comm);
}

/* "PID 4121 (python3)". */
static char *pdesc(const struct proc_info *p)
{
	char *n = proc_name(p);
	char *s = xasprintf("PID %d (%s)", p->pid, n);
	free(n);
	return s;
}

/* The command line, cut to 60 bytes, for an evidence line. */
static char *short_cmdline(const struct proc_info *p)
{
	char *c = proc_cmdline_joined(p);
	if (strlen(c) > 60)
		strcpy(c + 57, "...");
	return c;
}

/* The memory of one account row, as text. */
static const char *row_mem(const struct account_proc *r, char *buf, size_t n)
{
	if (r->used_known)
		return fmt_mib(buf, n, r->used_bytes);
	switch (r->kind) {
	case ACCOUNT_UNMATCHED: return "memory unmapped (NVML names host PIDs)";
	case ACCOUNT_DEVICE_ONLY: return "no GPU memory";
	case ACCOUNT_INHERITED: return "memory of an exited PID";
	default: return "memory unknown";
	}
}

static double gib(unsigned long long b)
{
	return (double)b / (double)GIB;
}

/* ---------- process relations ---------- */

static bool comm_is(const struct proc_info *p, const char *const *names)
{
	if (!p || !p->comm)
		return false;
	for (size_t i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		/* A trailing '*' matches a prefix (containerd-shim-runc-v2 is cut to 15 bytes). */
		if (names[i][n - 1] == '*' ? strncmp(p->comm, names[i], n - 1) == 0 : strcmp(p->comm, names[i]) == 0)
			return true;
	}
	return false;
}

/* Init systems and container shims: processes that adopt orphans (PID 1 or PR_SET_CHILD_SUBREAPER). */
static const char *const reapers[] = {"systemd", "init", "containerd-shim*", "tini", "dumb-init", "docker-init",
				      "catatonit", "conmon", "s6-svscan", "runsvdir", NULL};
static const char *const shells[] = {"sh", "bash", "dash", "zsh", NULL};

/* True when a process whose parent is ppid was adopted: the parent is an init or a subreaper.
 * PID 1 we cannot see is init, and so is the host's PID 1 whatever its name (the H200 VMs run
 * "process_api" as init): only a container's PID 1 can be a launcher. A shell that is its PID
 * namespace's init (a container started with `sh -c`) adopts orphans too. */
static bool parent_is_reaper(const struct snapshot *s, int ppid)
{
	const struct proc_info *pp = snapshot_find_proc(s, ppid);
	if (!pp)
		return ppid == 1;
	if (comm_is(pp, reapers) || (s->host_pidns && ppid == 1))
		return true;
	bool ns_init = pp->pid == 1 || (pp->nnspid > 0 && pp->nspid[pp->nnspid - 1] == 1);
	return ns_init && comm_is(pp, shells);
}

/* A serving engine's worker, named by its process title or command line; NULL for other
 * processes. Workers are children of a launcher: adopted, their launcher is gone. */
static const char *worker_family(const struct proc_info *p)
{
	const char *comm = p->comm ? p->comm : "";
	size_t a0 = p->cmdline ? strnlen(p->cmdline, p->cmdline_len) : 0;
	char *arg0 = xstrndup(p->cmdline ? p->cmdline : "", a0);
	char *all = proc_cmdline_joined(p);
	const char *fam = NULL;
	if (str_starts(comm, "sglang::") || str_starts(arg0, "sglang::"))
		fam = "SGLang";
	else if (!strncasecmp(comm, "vllm::", 6) || !strncasecmp(arg0, "vllm::", 6) || str_starts(comm, "VllmWorker") ||
		 strstr(arg0, "VllmWorker") || strstr(comm, "EngineCore") || strstr(arg0, "EngineCore"))
		fam = "vLLM";
	else if (strstr(all, "multiprocessing.spawn") || strstr(all, "multiprocessing.forkserver") ||
		 strstr(all, "--multiprocessing-fork"))
		fam = "Python multiprocessing";
	free(arg0);
	free(all);
	return fam;
}

/* ---------- per-process classification ---------- */

enum cls {
	CLS_LIVE,          /* running or sleeping normally */
	CLS_STUCK,         /* D state, or a thread waiting inside the NVIDIA driver */
	CLS_ZOMBIE_LEADER, /* leader exited (Z), threads live on holding the GPU */
	CLS_ZOMBIE,        /* a plain zombie */
	CLS_STOPPED,       /* T or t */
	CLS_INHERITED,     /* holds an exited PID's device files */
	CLS_ORPHAN,        /* a worker whose launcher is gone */
};

struct orphan_info {
	const char *family;    /* worker_family, or NULL: one of several identical command lines */
	int root;              /* the topmost ancestor below the reaper in the same family */
	int reaper;            /* its parent now */
};

static bool is_stuck(const struct proc_info *p)
{
	return p->state == 'D' || p->driver_wait;
}

/* True when p is an adopted worker; fills o. Walks up through ancestors of the same family (a
 * data-parallel controller above its schedulers) to the one an init or subreaper adopted. */
static bool orphan_of(const struct snapshot *s, const struct proc_info *p, struct orphan_info *o)
{
	const char *fam = worker_family(p);
	char *key = fam ? NULL : proc_cmdline_joined(p);
	const struct proc_info *top = p;
	for (int depth = 0; depth < 64; depth++) {
		const struct proc_info *pp = snapshot_find_proc(s, top->ppid);
		if (!pp || parent_is_reaper(s, top->ppid))
			break;
		bool same;
		if (fam) {
			const char *pf = worker_family(pp);
			same = pf && !strcmp(pf, fam);
		} else {
			char *k = proc_cmdline_joined(pp);
			same = !strcmp(k, key);
			free(k);
		}
		if (!same)
			break;
		top = pp;
	}
	bool adopted = top->ppid > 0 && parent_is_reaper(s, top->ppid);
	if (adopted && !fam) {
		/* An unknown command is a worker only when several GPU holders run it, all adopted:
		 * ranks of one launch (torchrun's) whose launcher died. One adopted process is a daemon. */
		unsigned n = 0;
		for (size_t i = 0; i < s->scan.nholders; i++) {
			const struct proc_info *q = &s->scan.holders[i].info;
			char *k = proc_cmdline_joined(q);
			if (!strcmp(k, key) && parent_is_reaper(s, q->ppid))
				n++;
			free(k);
		}
		adopted = n >= 2;
	}
	free(key);
	if (adopted) {
		o->family = fam;
		o->root = top->pid;
		o->reaper = top->ppid;
	}
	return adopted;
}

static enum cls classify(const struct snapshot *s, const struct account_proc *r, struct orphan_info *o)
{
	const struct proc_info *p = r->info;
	if (is_stuck(p))
		return CLS_STUCK;
	if (p->state == 'Z')
		return p->nthreads > 1 ? CLS_ZOMBIE_LEADER : CLS_ZOMBIE;
	if (p->state == 'T' || p->state == 't')
		return CLS_STOPPED;
	if (r->kind == ACCOUNT_INHERITED)
		return CLS_INHERITED;
	if (r->kind != ACCOUNT_DEVICE_ONLY && orphan_of(s, p, o))
		return CLS_ORPHAN;
	return CLS_LIVE;
}

/* True when the row may carry GPU memory (not a holder NVML says has none). */
static bool carries_memory(const struct account_proc *r)
{
	return r->info && r->kind != ACCOUNT_DEVICE_ONLY;
}

/* The parent of p as "PID 4121 (python3)", or "PID 1" when it cannot be seen. */
static char *parent_desc(const struct snapshot *s, const struct proc_info *p)
{
	const struct proc_info *pp = snapshot_find_proc(s, p->ppid);
	return pp ? pdesc(pp) : xasprintf("PID %d", p->ppid);
}

/* ---------- evidence shared by several verdicts ---------- */

static void ev_uncertain(struct ctx *c, struct finding *f)
{
	const struct holders_scan *sc = &c->s->scan;
	if (!sc->ndenied && !sc->ntimed_out)
		return;
	f->uncertain = true;
	char *names = xstrdup("");
	size_t shown = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct unseen *u = pass ? sc->timed_out : sc->denied;
		size_t n = pass ? sc->ntimed_out : sc->ndenied;
		for (size_t i = 0; i < n && shown < LIST_MAX; i++, shown++) {
			char *m = xasprintf("%s%s%d (%s)", names, shown ? ", " : "", u[i].pid, u[i].comm ? u[i].comm : "?");
			free(names);
			names = m;
		}
	}
	size_t total = sc->ndenied + sc->ntimed_out;
	ev(f, "uncertain: %zu process%s could not be inspected (%zu permission denied, %zu timed out): %s%s — any "
	   "of them may hold this GPU", total, total == 1 ? "" : "es", sc->ndenied, sc->ntimed_out, names,
	   total > shown ? ", ..." : "");
	free(names);
}

/* Names what would stop `nvidia-smi --gpu-reset -i N` now: processes holding any NVIDIA node
 * (the reset needs none: monitoring tools and nvidia-persistenced count), persistence mode, MIG. */
static void ev_reset_blockers(struct ctx *c, struct finding *f, const struct account_gpu *g)
{
	const struct holders_scan *sc = &c->s->scan;
	size_t n = 0;
	for (size_t i = 0; i < sc->nholders; i++) {
		const struct holder *h = &sc->holders[i];
		if (n++ >= LIST_MAX)
			continue;
		char *what = xstrdup("");
		for (size_t k = 0; k < h->nholds && k < 4; k++) {
			char *m = xasprintf("%s%s%s", what, k ? ", " : "", sc->targets[h->holds[k].target].path);
			free(what);
			what = m;
		}
		char *pd = pdesc(&h->info);
		ev(f, "would block a reset: %s holds %s%s", pd, what, h->nholds > 4 ? ", ..." : "");
		free(pd);
		free(what);
	}
	if (n > LIST_MAX)
		ev(f, "would block a reset: %zu more processes hold NVIDIA device nodes", n - LIST_MAX);
	const struct nvml_gpu *ng = g->nvml;
	if (ng && ng->persistence_rc == 0 && ng->persistence)
		ev(f, "would block a reset: persistence mode is on (nvidia-persistenced keeps the GPU open): stop it "
		   "first (systemctl stop nvidia-persistenced)");
	if (ng && ng->mig_rc == 0 && ng->mig_current)
		ev(f, "would block a reset: MIG mode is on; its GPU and compute instances must be destroyed first");
	if (n == 0 && !(ng && ng->persistence_rc == 0 && ng->persistence) && !(ng && ng->mig_rc == 0 && ng->mig_current))
		ev(f, "nothing seen here would block a reset (no process holds an NVIDIA device node)");
}

/* "NVML: 96,413 MiB used of 97,887 MiB". */
static void ev_memory(struct finding *f, const struct account_gpu *g)
{
	char a[48], b[48], u[48];
	if (!g->mem_known) {
		ev(f, "NVML: memory unknown");
		return;
	}
	if (g->unattributed_known) {
		char v[48];
		ev(f, "NVML: %s used of %s; the processes it lists account for %s, %s unattributed",
		   fmt_mib(a, sizeof a, g->used_bytes), fmt_mib(b, sizeof b, g->total_bytes),
		   fmt_mib(u, sizeof u, g->attributed_bytes), fmt_mib(v, sizeof v, g->unattributed_bytes));
	} else
		ev(f, "NVML: %s used of %s; its process list is unknown", fmt_mib(a, sizeof a, g->used_bytes),
		   fmt_mib(b, sizeof b, g->total_bytes));
}

/* ---------- per-GPU verdicts ---------- */

struct gpu_rows {
	const struct account_proc **r[7];   /* rows per class */
	size_t n[7];
	struct orphan_info *orph;        /* parallel to r[CLS_ORPHAN] */
};

static void rows_add(struct gpu_rows *gr, enum cls k, const struct account_proc *r, const struct orphan_info *o)
{
	gr->r[k] = xrealloc(gr->r[k], (gr->n[k] + 1) * sizeof *gr->r[k]);
	if (k == CLS_ORPHAN) {
		gr->orph = xrealloc(gr->orph, (gr->n[k] + 1) * sizeof *gr->orph);
		gr->orph[gr->n[k]] = *o;
	}
	gr->r[k][gr->n[k]++] = r;
}

static void rows_free(struct gpu_rows *gr)
{
	for (int k = 0; k < 7; k++)
		free(gr->r[k]);
	free(gr->orph);
}

/* Sum of the known memory of rows; *unknown set when some row's memory is unknown. */
static unsigned long long rows_bytes(const struct account_proc *const *r, size_t n, bool *unknown)
{
	unsigned long long sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i]->used_known)
			sum += r[i]->used_bytes;
		else if (unknown)
			*unknown = true;
	}
	return sum;
}

/* "11,904 MiB" or "at least 11,904 MiB" or "memory of unknown size". */
static char *amount(unsigned long long bytes, bool unknown)
{
	char b[48];
	if (unknown && bytes == 0)
		return xstrdup("memory of unknown size");
	return xasprintf("%s%s", unknown ? "at least " : "", fmt_mib(b, sizeof b, bytes));
}

/* One evidence line per row: "PID 5001 (sglang::scheduler_TP0): state S, 4 threads, 11,904 MiB, parent PID 1 (systemd) — CMD". */
static void ev_rows(struct ctx *c, struct finding *f, const struct account_proc *const *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		add_pid(f, r[i]->pid);
		if (i >= LIST_MAX)
			continue;
		const struct proc_info *p = r[i]->info;
		char *pd = pdesc(p), *par = parent_desc(c->s, p), *cmd = short_cmdline(p), mb[48];
		char threads[32] = "";
		if (p->nthreads > 1)
			snprintf(threads, sizeof threads, ", %u threads", p->nthreads);
		ev(f, "%s: state %c%s, %s, parent %s%s%s — %s", pd, p->state ? p->state : '?', threads,
		   row_mem(r[i], mb, sizeof mb), par, p->thread_states ? "; threads: " : "",
		   p->thread_states ? p->thread_states : "", cmd);
		free(pd);
		free(par);
		free(cmd);
	}
	if (n > LIST_MAX)
		ev(f, "and %zu more", n - LIST_MAX);
}

static void verdict_stuck(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n)
{
	char gn[32];
	char *sel = gpu_selector(g);
	char *pd = pdesc(r[0]->info);
	struct finding *f = add_finding(c, "stuck_in_driver", DIAG_ACTION, g,
					"%s: %s%s %s stuck in the NVIDIA driver — signals cannot free its memory "
					"until the driver call returns", gpu_name(g, gn, sizeof gn), pd,
					n > 1 ? " and others" : "", n > 1 ? "are" : "is");
	free(pd);
	ev_memory(f, g);
	for (size_t i = 0; i < n; i++) {
		const struct proc_info *p = r[i]->info;
		if (p->driver_wait)
			ev(f, "PID %d: %s", p->pid, p->driver_wait);
		else
			ev(f, "PID %d is in state D (uninterruptible sleep)%s%s", p->pid, p->wchan ? " in " : "",
			   p->wchan ? p->wchan : "");
	}
	ev_rows(c, f, r, n);
	ev(f, "a process in uninterruptible sleep acts on signals only when the kernel call returns; kill -9 "
	   "is queued, not lost (vllm#25127, open-gpu-kernel-modules#456)");
	ev_reset_blockers(c, f, g);
	char *pids = pid_args(f->pids, f->npids);
	set_fix(f, "Wait: a long copy or a finishing kernel returns in seconds; `kill -9 %s` is safe to send now and "
		"takes effect when it does. If it stays stuck for minutes, look for Xid errors (`dmesg | grep -i xid`): "
		"a reset (`nvidia-smi --gpu-reset -i %s`, root) needs no process on the GPU, and this one cannot leave, "
		"so a reboot is then the only way.", pids, sel);
	free(pids);
	free(sel);
}

static void verdict_zombie_leader(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r,
				  size_t n)
{
	char gn[32];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = amount(bytes, unknown);
	char *pd = pdesc(r[0]->info);
	struct finding *f = add_finding(c, "zombie_leader", DIAG_ACTION, g,
					"%s: %s held by %s%s, a <defunct> process whose threads still run — kill -9 %d",
					gpu_name(g, gn, sizeof gn), amt, pd, n > 1 ? " and others" : "", r[0]->pid);
	free(pd);
	free(amt);
	ev_rows(c, f, r, n);
	for (size_t i = 0; i < n; i++) {
		const struct proc_info *p = r[i]->info;
		const struct holder *h = r[i]->holder;
		int tid = 0;
		for (size_t k = 0; h && k < h->nholds; k++)
			if (h->holds[k].means & HOLD_THREAD)
				tid = h->holds[k].via_tid;
		if (tid)
			ev(f, "PID %d: its leader has exited (state Z) but thread %d still holds the GPU through "
			   "/proc/%d/task/%d; /proc/%d/fd is empty, so fuser and lsof (without -K) miss it", p->pid, tid,
			   p->pid, tid, p->pid);
		else
			ev(f, "PID %d: its leader has exited (state Z) and %u threads live on; ps shows <defunct>", p->pid,
			   p->nthreads);
		char *par = parent_desc(c->s, p);
		if (p->ppid != 1)
			ev(f, "PID %d's parent, %s, must reap it once its threads are gone (wait())", p->pid, par);
		else
			ev(f, "PID %d's parent is PID 1, which reaps it once its threads are gone", p->pid);
		free(par);
	}
	char *pids = pid_args(f->pids, f->npids);
	set_fix(f, "`kill -9 %s` — SIGKILL ends every thread of the group and the driver frees the memory; the "
		"parent then reaps the zombie (PID 1 does when it is the parent).", pids);
	free(pids);
}

static void verdict_stopped(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n)
{
	char gn[32];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = amount(bytes, unknown);
	char *pd = pdesc(r[0]->info);
	struct finding *f = add_finding(c, "stopped", DIAG_ACTION, g,
					"%s: %s held by %s%s, stopped — it keeps the memory until it continues or dies",
					gpu_name(g, gn, sizeof gn), amt, pd, n > 1 ? " and others" : "");
	free(pd);
	free(amt);
	ev_rows(c, f, r, n);
	ev(f, "state T (stopped by a signal: Ctrl-Z, SIGSTOP) or t (stopped by a debugger); fuser lists it with no "
	   "hint that it is stopped");
	char *pids = pid_args(f->pids, f->npids);
	set_fix(f, "`kill -CONT %s` to let it run on; or end it: `kill %s` (a stopped process acts on SIGTERM only "
		"after SIGCONT; `kill -9` ends it at once). Under a debugger, detach or quit the debugger.",
		pids, pids);
	free(pids);
}

static void verdict_inherited(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n)
{
	char gn[32], mb[48];
	/* The exited PIDs NVML still lists on this GPU, and their memory. */
	unsigned long long bytes = 0;
	bool unknown = false;
	char *dead = xstrdup("");
	size_t ndead = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *e = &g->procs[i];
		if (e->kind != ACCOUNT_EXITED)
			continue;
		if (e->used_known)
			bytes += e->used_bytes;
		else
			unknown = true;
		char *m = xasprintf("%s%s%d", dead, ndead++ ? ", " : "", e->pid);
		free(dead);
		dead = m;
	}
	char *amt = amount(bytes, unknown);
	char *pd = pdesc(r[0]->info);
	struct finding *f = add_finding(c, "inherited_holder", DIAG_ACTION, g,
					"%s: %s of exited PID %s held by %s%s, which inherited its device files",
					gpu_name(g, gn, sizeof gn), amt, dead, pd, n > 1 ? " and others" : "");
	free(pd);
	free(amt);
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *e = &g->procs[i];
		if (e->kind == ACCOUNT_EXITED)
			ev(f, "NVML lists PID %d with %s; no such process exists (this /proc is the host's PID namespace)",
			   e->pid, e->used_known ? fmt_mib(mb, sizeof mb, e->used_bytes) : "memory of unknown size");
	}
	ev_rows(c, f, r, n);
	ev(f, "it holds the GPU's device files with no NVML entry of its own: it got them from a parent that "
	   "exited (a fork after CUDA initialised), and is likely not a CUDA user itself; the driver frees the "
	   "memory when the last file closes");
	char *pids = pid_args(f->pids, f->npids);
	char *sel = gpu_selector(g);
	set_fix(f, "`gpuwho free %s`, or by hand: `kill %s` (then `kill -9 %s` if still there after 10 s). Unless "
		"it does GPU work of its own, nothing is lost.", sel, pids, pids);
	free(sel);
	free(pids);
	free(dead);
}

static void verdict_orphans(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n,
			    const struct orphan_info *o)
{
	const struct snapshot *s = c->s;
	char gn[32];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = amount(bytes, unknown);
	const char *fam = o[0].family;
	for (size_t i = 1; i < n; i++)
		if (!o[i].family || !fam || strcmp(o[i].family, fam))
			fam = NULL;
	const struct proc_info *reaper = snapshot_find_proc(s, o[0].reaper);
	char *rdesc = reaper ? pdesc(reaper) : xasprintf("PID %d", o[0].reaper);
	char *sel = gpu_selector(g);
	struct finding *f = add_finding(c, "orphaned_workers", DIAG_ACTION, g,
					"%s: %s held by %zu orphaned %s%s (launcher gone, adopted by %s) — gpuwho free %s",
					gpu_name(g, gn, sizeof gn), amt, n, fam ? fam : "", fam ? (n == 1 ? " worker" : " workers")
					: (n == 1 ? "rank" : "ranks"), rdesc, sel);
	free(amt);
	free(rdesc);
	ev_rows(c, f, r, n);
	/* The whole family on the host: every GPU holder adopted the same way, with its roots. */
	int *kill = NULL;
	size_t nkill = 0;
	unsigned family_n = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *q = &s->scan.holders[i].info;
		struct orphan_info qo;
		if (is_stuck(q) || q->state == 'Z' || !orphan_of(s, q, &qo))
			continue;
		/* One family: the same engine, or (ranks of an unknown command) the same command line. */
		bool same = false;
		char *qk = qo.family ? NULL : proc_cmdline_joined(q);
		for (size_t k = 0; k < n && !same; k++) {
			if (qo.family || o[k].family) {
				same = qo.family && o[k].family && !strcmp(qo.family, o[k].family);
			} else {
				char *rk = proc_cmdline_joined(r[k]->info);
				same = !strcmp(qk, rk);
				free(rk);
			}
		}
		free(qk);
		if (!same)
			continue;
		family_n++;
		int add[2] = {qo.root, q->pid};
		for (int a = 0; a < 2; a++) {
			bool have = false;
			for (size_t k = 0; k < nkill && !have; k++)
				have = kill[k] == add[a];
			if (!have) {
				kill = xrealloc(kill, (nkill + 1) * sizeof *kill);
				kill[nkill++] = add[a];
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (o[i].root != r[i]->pid) {
			const struct proc_info *rp = snapshot_find_proc(s, o[i].root);
			char *rd = rp ? pdesc(rp) : xasprintf("PID %d", o[i].root);
			ev(f, "PID %d descends from %s, the topmost process of its family, whose parent is now PID %d",
			   r[i]->pid, rd, o[i].reaper);
			free(rd);
		}
	}
	ev(f, "%s: a worker's parent is its launcher; %s means the launcher died (SIGKILL does not reach its "
	   "children) and the workers kept their GPU memory (vllm#55510, #34643)",
	   fam ? fam : "several GPU holders run the same command", o[0].reaper == 1 ? "PID 1 as parent" : "an init or "
	   "subreaper as parent");
	if (family_n > n)
		ev(f, "the same orphaned family on this host: %u GPU holders", family_n);
	if (nkill == 0) {   /* cannot happen: r's own processes qualify; keep the fix meaningful anyway */
		for (size_t i = 0; i < n; i++) {
			kill = xrealloc(kill, (nkill + 1) * sizeof *kill);
			kill[nkill++] = r[i]->pid;
		}
	}
	for (size_t i = 0; i < nkill; i++)
		add_pid(f, kill[i]);
	char *pids = pid_args(kill, nkill);
	set_fix(f, "`gpuwho free %s` — or by hand, the whole tree, its root first: `kill %s` (then `kill -9 %s` for "
		"any still there after 10 s). Then relaunch.", sel, pids, pids);
	free(pids);
	free(kill);
	free(sel);
}

static void verdict_in_use(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n,
			   bool other_findings)
{
	char gn[32], a[48];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = g->procs_known ? amount(bytes, unknown) : xstrdup("memory unknown");
	struct finding *f = add_finding(c, "in_use", DIAG_OK, g, "%s: %s in use by %zu live process%s%s",
					gpu_name(g, gn, sizeof gn), amt, n, n == 1 ? "" : "es",
					other_findings ? "" : " — nothing to free");
	free(amt);
	ev_memory(f, g);
	ev_rows(c, f, r, n);
	size_t ndev = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *d = &g->procs[i];
		if (d->kind != ACCOUNT_DEVICE_ONLY || !d->info || is_stuck(d->info))
			continue;
		if (ndev++ < LIST_MAX) {
			char *pd = pdesc(d->info);
			ev(f, "%s holds the device with no GPU memory (monitoring tools, nvidia-persistenced)", pd);
			free(pd);
		}
	}
	if (g->unattributed_known && g->unattributed_bytes >= DIAG_UNHELD_MIN_BYTES && c->s->host_pidns)
		ev(f, "%s more is used than NVML attributes to processes%s", fmt_mib(a, sizeof a, g->unattributed_bytes),
		   g->nunknown ? " (it includes processes whose memory NVML could not give)" : "");
	set_fix(f, "Nothing to free: live processes use it. To get the GPU back, stop them the way they were "
		"started (their service, job or container).");
}

static void verdict_outside(struct ctx *c, const struct account_gpu *g)
{
	const struct snapshot *s = c->s;
	char gn[32], mb[48];
	unsigned long long bytes = 0;
	bool unknown = false;
	size_t nout = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind != ACCOUNT_OUTSIDE)
			continue;
		nout++;
		if (r->used_known)
			bytes += r->used_bytes;
		else
			unknown = true;
	}
	if (g->hidden_outside)
		bytes += g->unattributed_bytes;
	char *amt = amount(bytes, unknown);
	char *sel = gpu_selector(g);
	struct finding *f = add_finding(c, "outside_pid_namespace", DIAG_WARNING, g,
					"%s: %s held by processes outside this PID namespace (gpuwho runs in a container) "
					"— not a driver leak; run gpuwho on the host", gpu_name(g, gn, sizeof gn), amt);
	free(amt);
	ev(f, "this /proc is a child PID namespace's (its PID 2 is not kthreadd): processes of the host and of "
	   "other containers are invisible here");
	ev_memory(f, g);
	for (size_t i = 0, k = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind != ACCOUNT_OUTSIDE || k++ >= LIST_MAX)
			continue;
		ev(f, "NVML lists host PID %d with %s; no process here has that PID (NVML names host PIDs)", r->pid,
		   r->used_known ? fmt_mib(mb, sizeof mb, r->used_bytes) : "memory of unknown size");
	}
	if (nout > LIST_MAX)
		ev(f, "and %zu more host PIDs", nout - LIST_MAX);
	if (g->hidden_outside)
		ev(f, "NVML lists no process for %s of it: the driver shows a PID namespace only its own processes "
		   "(driver 580), so nvidia-smi says \"No running processes found\"",
		   fmt_mib(mb, sizeof mb, g->unattributed_bytes));
	size_t nhere = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (!r->info)
			continue;
		if (nhere++ < LIST_MAX) {
			char *pd = pdesc(r->info);
			ev(f, "%s here holds %s too (%s)", pd, g->target ? g->target->path : "the GPU",
			   account_kind_name(r->kind));
			free(pd);
		}
		add_pid(f, r->pid);
	}
	if (nhere == 0)
		ev(f, "no process in this PID namespace holds %s", g->target ? g->target->path : "the GPU's device node");
	for (size_t i = 0; g->target && i < s->scan.nmounts; i++)
		if (&s->scan.targets[s->scan.mounts[i].target] == g->target)
			ev(f, "%s is a bind mount: fuser's \"kernel mount\" is that mount point, not a holder",
			   s->scan.mounts[i].mount_point);
	ev(f, "the holders are out of sight, not gone: a reset would fail while they run (or end their work), "
	   "and signals from here cannot reach them");
	set_fix(f, "Run gpuwho on the host: `sudo gpuwho why %s` — or from a container that shares the host's PID "
		"namespace: `docker run --rm --pid=host --gpus all IMAGE gpuwho why %s`, or `kubectl debug node/NODE "
		"-it --image=IMAGE` (its pod uses the host's PID namespace). Do not reset the GPU.", sel, sel);
	free(sel);
}

/* Memory no visible process accounts for, on the host: the GPU's unattributed memory plus what
 * NVML lists for PIDs that exited when nobody inherited their files. */
static unsigned long long unheld_bytes(const struct account_gpu *g)
{
	unsigned long long b = g->unattributed_bytes;
	bool heirs = false;
	for (size_t i = 0; i < g->nprocs; i++)
		heirs |= g->procs[i].kind == ACCOUNT_INHERITED;
	for (size_t i = 0; i < g->nprocs && !heirs; i++)
		if (g->procs[i].kind == ACCOUNT_EXITED && g->procs[i].used_known)
			b += g->procs[i].used_bytes;
	return b;
}

static void verdict_no_holder(struct ctx *c, const struct account_gpu *g, unsigned long long unheld)
{
	const struct snapshot *s = c->s;
	char gn[32], a[48], b[48];
	char *sel = gpu_selector(g);
	const struct gpu_resample *rs = &s->resample;
	/* The second sample is stored by position in nvml.gpus, which need not be the index. */
	size_t pos = g->nvml ? (size_t)(g->nvml - s->nvml.gpus) : (size_t)-1;
	bool sampled = pos < rs->ngpus && rs->used_ok && rs->used_ok[pos];
	unsigned long long later = sampled ? rs->used_bytes[pos] : g->used_bytes;
	if (sampled && later + DIAG_RELEASE_MIN_BYTES <= g->used_bytes) {
		struct finding *f = add_finding(c, "memory_releasing", DIAG_INFO, g,
						"%s: %s with no holder, and falling — memory is being released; wait and re-run",
						gpu_name(g, gn, sizeof gn), fmt_mib(a, sizeof a, unheld));
		ev_memory(f, g);
		ev(f, "used fell from %s to %s within %.1f s (the second sample)", fmt_mib(a, sizeof a, g->used_bytes),
		   fmt_mib(b, sizeof b, later), rs->delay_s);
		ev(f, "a holder that just exited leaves its memory for the driver to free; a SIGKILLed PyTorch process's "
		   "memory read 0 within 0.2 s on an H200");
		ev_uncertain(c, f);
		set_fix(f, "Nothing yet: re-run `gpuwho why %s` in a few seconds. Only memory that stays with no holder is "
			"a leak.", sel);
		free(sel);
		return;
	}
	bool uncertain = s->scan.ndenied || s->scan.ntimed_out;
	struct finding *f = add_finding(c, "driver_leak", uncertain ? DIAG_WARNING : DIAG_ACTION, g,
					"%s: %s held by no process%s — %s", gpu_name(g, gn, sizeof gn),
					fmt_mib(a, sizeof a, unheld), uncertain ? " that gpuwho could inspect" : "",
					uncertain ? "possibly a driver-level leak; run as root first"
						  : "a driver-level leak; only a reset frees it");
	ev_memory(f, g);
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind == ACCOUNT_EXITED)
			ev(f, "NVML lists PID %d with %s; it has exited and no process holds its device files", r->pid,
			   r->used_known ? fmt_mib(b, sizeof b, r->used_bytes) : "memory of unknown size");
	}
	ev(f, "this /proc is the host's PID namespace, so every process on the host was looked at (%u scanned); none "
	   "holds %s with memory", s->scan.nscanned, g->target ? g->target->path : "the GPU");
	ev(f, "threshold: more than %llu MiB with no holder (NVML's used excludes the driver's reserve; one CUDA "
	   "context alone takes ~500 MiB)", DIAG_UNHELD_MIN_BYTES / MIB);
	if (sampled)
		ev(f, "a second sample %.1f s later read %s: not falling", rs->delay_s, fmt_mib(b, sizeof b, later));
	else
		ev(f, "one sample only: re-run to see whether it falls (memory being released is not a leak)");
	ev_uncertain(c, f);
	ev_reset_blockers(c, f, g);
	if (uncertain)
		set_fix(f, "Run `sudo gpuwho why %s` so that every process can be inspected; only if it still finds no "
			"holder, reset the GPU as root: `nvidia-smi --gpu-reset -i %s` (gpuwho why never runs it).", sel, sel);
	else
		set_fix(f, "As root, with nothing holding the GPU (see above): `nvidia-smi --gpu-reset -i %s` — gpuwho why "
			"never runs it; `gpuwho free --reset %s` asks first. NVLink peers may need resetting together; "
			"NVIDIA calls reset \"not guaranteed to work\": reboot when it fails.", sel, sel);
	free(sel);
}

static void verdict_health(struct ctx *c, const struct account_gpu *g)
{
	const struct nvml_gpu *n = g->nvml;
	if (!n)
		return;
	char gn[32];
	bool lost = n->handle_rc == NVML_E_GPU_IS_LOST || n->mem_rc == NVML_E_GPU_IS_LOST ||
		    n->handle_rc == NVML_E_RESET_REQUIRED || n->mem_rc == NVML_E_RESET_REQUIRED;
	bool retired = n->retired_rc == 0 && n->retired_pending;
	bool remap = n->remap_rc == 0 && n->remap_pending;
	bool remap_fail = n->remap_rc == 0 && n->remap_failure;
	bool ecc = n->ecc_rc == 0 && n->ecc_uncorrected_volatile > 0;
	if (!lost && !retired && !remap && !remap_fail && !ecc)
		return;
	const char *what = lost ? "has fallen off the bus or needs a reset (NVML: GPU lost)"
		: remap_fail ? "failed to remap a memory row"
		: (retired || remap) ? "has memory repairs pending that need a reset"
		: "reported uncorrectable ECC errors";
	struct finding *f = add_finding(c, "gpu_health", (lost || retired || remap || remap_fail) ? DIAG_ACTION
				       : DIAG_WARNING, g, "%s: the GPU %s", gpu_name(g, gn, sizeof gn), what);
	if (lost)
		ev(f, "NVML: %s", n->error ? n->error : nvml_error_name(n->handle_rc ? n->handle_rc : n->mem_rc));
	if (retired)
		ev(f, "NVML: retired pages pending (nvmlDeviceGetRetiredPagesPendingStatus): they take effect at the "
		   "next reset or driver reload");
	if (remap)
		ev(f, "NVML: row remapping pending (%u correctable, %u uncorrectable remaps): takes effect at the next "
		   "reset", n->remap_correctable, n->remap_uncorrectable);
	if (remap_fail)
		ev(f, "NVML: a row remapping failed: the GPU is out of spare rows");
	if (ecc)
		ev(f, "NVML: %llu volatile uncorrectable ECC errors since the driver loaded", n->ecc_uncorrected_volatile);
	ev_reset_blockers(c, f, g);
	char *sel = gpu_selector(g);
	if (lost)
		set_fix(f, "Look at `dmesg | grep -i xid`; stop its processes, then as root `nvidia-smi --gpu-reset -i %s`, "
			"or reboot when the reset fails. A GPU that falls off the bus again needs its hardware checked.",
			sel);
	else if (remap_fail)
		set_fix(f, "Drain the GPU and have its hardware replaced (a failed remap cannot be repaired in place).");
	else if (retired || remap)
		set_fix(f, "When its work is done: stop its processes, then as root `nvidia-smi --gpu-reset -i %s` (or "
			"reboot) so the repair takes effect.", sel);
	else
		set_fix(f, "Check its applications' results (they may have been stopped by the errors) and `dmesg | grep "
			"-i xid`; reset (`nvidia-smi --gpu-reset -i %s`) or reboot if errors keep coming.", sel);
	free(sel);
}

/* Everything about one GPU. */
static void diagnose_gpu(struct ctx *c, const struct account_gpu *g)
{
	const struct snapshot *s = c->s;
	size_t before = c->d->nfindings;
	struct gpu_rows gr;
	memset(&gr, 0, sizeof gr);
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (!r->info)
			continue;
		struct orphan_info o = {0};
		enum cls k = classify(s, r, &o);
		/* A holder NVML says has no memory matters only when it is stuck (a hung nvidia-smi). */
		if (!carries_memory(r) && k != CLS_STUCK)
			continue;
		rows_add(&gr, k, r, &o);
	}
	verdict_health(c, g);
	if (gr.n[CLS_STUCK])
		verdict_stuck(c, g, gr.r[CLS_STUCK], gr.n[CLS_STUCK]);
	if (gr.n[CLS_ZOMBIE_LEADER])
		verdict_zombie_leader(c, g, gr.r[CLS_ZOMBIE_LEADER], gr.n[CLS_ZOMBIE_LEADER]);
	if (gr.n[CLS_STOPPED])
		verdict_stopped(c, g, gr.r[CLS_STOPPED], gr.n[CLS_STOPPED]);
	if (gr.n[CLS_INHERITED])
		verdict_inherited(c, g, gr.r[CLS_INHERITED], gr.n[CLS_INHERITED]);
	if (gr.n[CLS_ORPHAN])
		verdict_orphans(c, g, gr.r[CLS_ORPHAN], gr.n[CLS_ORPHAN], gr.orph);
	bool outside = false;
	for (size_t i = 0; i < g->nprocs; i++)
		outside |= g->procs[i].kind == ACCOUNT_OUTSIDE;
	if (!s->host_pidns && (outside || g->hidden_outside))
		verdict_outside(c, g);
	/* Live holders; plain zombies NVML still lists are counted with them (their evidence says Z). */
	size_t nlive = gr.n[CLS_LIVE] + gr.n[CLS_ZOMBIE];
	if (nlive) {
		const struct account_proc **live = xcalloc(nlive, sizeof *live);
		memcpy(live, gr.r[CLS_LIVE], gr.n[CLS_LIVE] * sizeof *live);
		if (gr.n[CLS_ZOMBIE])
			memcpy(live + gr.n[CLS_LIVE], gr.r[CLS_ZOMBIE], gr.n[CLS_ZOMBIE] * sizeof *live);
		verdict_in_use(c, g, live, nlive, c->d->nfindings > before);
		free(live);
	}
	/* No process with memory, on the host: memory the driver keeps for nobody. */
	size_t nmem = 0;
	for (int k = 0; k < 7; k++)
		nmem += gr.n[k];
	nmem -= gr.n[CLS_STUCK];
	for (size_t i = 0; i < gr.n[CLS_STUCK]; i++)
		nmem += carries_memory(gr.r[CLS_STUCK][i]);
	if (s->host_pidns && g->unattributed_known && nmem == 0 && gr.n[CLS_INHERITED] == 0) {
		unsigned long long unheld = unheld_bytes(g);
		if (unheld >= DIAG_UNHELD_MIN_BYTES)
			verdict_no_holder(c, g, unheld);
	}
	if (c->d->nfindings == before) {
		char gn[32], a[48], b[48];
		struct finding *f;
		if (g->mem_known)
			f = add_finding(c, "idle", DIAG_OK, g, "%s: idle — %s used of %s, no process holds memory on it",
					gpu_name(g, gn, sizeof gn), fmt_mib(a, sizeof a, g->used_bytes),
					fmt_mib(b, sizeof b, g->total_bytes));
		else
			f = add_finding(c, "idle", DIAG_OK, g, "%s: no process holds it (memory unknown without NVML)",
					gpu_name(g, gn, sizeof gn));
		(void)f;   /* the headline says it all */
	}
	rows_free(&gr);
}

/* ---------- host-wide verdicts ---------- */

static void verdict_mounts(struct ctx *c)
{
	const struct holders_scan *sc = &c->s->scan;
	if (!sc->nmounts)
		return;
	char *more = sc->nmounts > 1 ? xasprintf(" and %zu more NVIDIA device nodes", sc->nmounts - 1) : xstrdup("");
	struct finding *f = add_finding(c, "bind_mount_not_holder", DIAG_INFO, NULL,
					"%s%s %s bind mount%s: fuser's \"kernel mount\" is the mount point, not a holder "
					"of GPU memory", sc->mounts[0].mount_point, more, sc->nmounts > 1 ? "are" : "is a",
					sc->nmounts > 1 ? "s" : "");
	free(more);
	for (size_t i = 0; i < sc->nmounts; i++) {
		if (i >= LIST_MAX) {
			ev(f, "and %zu more", sc->nmounts - LIST_MAX);
			break;
		}
		const struct mount_hit *m = &sc->mounts[i];
		ev(f, "%s: mount point (%s, source %s, root %s)", m->mount_point, m->fstype ? m->fstype : "?",
		   m->source ? m->source : "?", m->root ? m->root : "?");
	}
	ev(f, "fuser prints \"kernel mount\" when a mount point has the same device and inode as the file named "
	   "(psmisc scan_mounts); libnvidia-container bind-mounts /dev/nvidia* into every GPU container; fuser -k "
	   "skips these entries");
	set_fix(f, "Nothing to do: a mount holds no GPU memory, and no signal or reset is needed for it. The other "
		"findings name the real holders.");
}

/* A shm name the GPU stacks leave behind: PyTorch (torch_*), SGLang (psm_*), NCCL (nccl-*), POSIX semaphores. */
static bool shm_gpu_name(const char *n)
{
	return str_starts(n, "torch_") || str_starts(n, "psm_") || str_starts(n, "nccl-") || str_starts(n, "sem.");
}

/* A shell word: the name in single quotes, each ' written as '\''. */
static char *shell_quote(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *q = xmalloc(n), *o = q;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

static void verdict_shm(struct ctx *c)
{
	const struct snapshot *s = c->s;
	unsigned long long total = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		if (g->nholders == 0 && shm_gpu_name(g->name) && !(g->creator_pid > 0 && g->creator_alive)) {
			total += g->bytes;
			n++;
		}
	}
	if (!n)
		return;
	char a[48];
	struct finding *f = add_finding(c, "shm_orphans", total >= DIAG_SHM_ACTION_BYTES ? DIAG_ACTION : DIAG_INFO, NULL,
					"/dev/shm: %zu segment%s nobody holds (%s) left by GPU processes that died — remove "
					"them", n, n == 1 ? "" : "s", fmt_mib(a, sizeof a, total));
	char *args = xstrdup("");
	size_t shown = 0;
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		if (g->nholders || !shm_gpu_name(g->name) || (g->creator_pid > 0 && g->creator_alive))
			continue;
		if (shown < LIST_MAX) {
			char *creator = g->creator_pid > 0 ? xasprintf("; its creator PID %d is gone", g->creator_pid)
							   : xstrdup("");
			ev(f, "/dev/shm/%s: %s in RAM, no process holds it by fd or mapping%s", g->name,
			   fmt_mib(a, sizeof a, g->bytes), creator);
			free(creator);
		}
		if (shown < 16) {
			char *path = xasprintf("/dev/shm/%s", g->name);
			char *q = shell_quote(path);
			char *m = xasprintf("%s %s", args, q);
			free(path);
			free(q);
			free(args);
			args = m;
		}
		shown++;
		if (g->creator_pid > 0)
			add_pid(f, g->creator_pid);
	}
	if (shown > LIST_MAX)
		ev(f, "and %zu more", shown - LIST_MAX);
	ev(f, "segments count as shared memory (Shmem) until removed; a full /dev/shm makes the next start die with a "
	   "bus error (sglang#28089; torch's file_system sharing strategy)");
	if (s->scan.ndenied || s->scan.ntimed_out) {
		f->uncertain = true;
		ev(f, "uncertain: some processes could not be inspected; one of them may still map a segment");
	}
	if (n <= 16)
		set_fix(f, "`rm --%s` (or `gpuwho free --shm`)", args);
	else
		set_fix(f, "`gpuwho free --shm` (removes the %zu segments nobody holds); or by hand, after checking "
			"each: `rm --%s ...`", n, args);
	free(args);
}

/* Host memory: MemAvailable low, and what GPU processes pin or lock. */
static void verdict_host_memory(struct ctx *c)
{
	const struct snapshot *s = c->s;
	const struct meminfo *m = &s->mem;
	bool low = s->mem_ok && m->has_total && m->has_available && m->total &&
		   m->available * 100 < m->total * DIAG_HOST_LOW_PERCENT;
	unsigned long long pinned = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *p = &s->scan.holders[i].info;
		pinned += (p->vm_pin_kb > p->vm_lck_kb ? p->vm_pin_kb : p->vm_lck_kb) * 1024ull;
	}
	if (!low && pinned < DIAG_PINNED_MIN_BYTES)
		return;
	struct finding *f;
	if (low)
		f = add_finding(c, "host_memory", DIAG_WARNING, NULL,
				"host memory is low: %.1f GiB available of %.1f GiB (%.0f%%)", gib(m->available), gib(m->total),
				100.0 * (double)m->available / (double)m->total);
	else
		f = add_finding(c, "host_memory", DIAG_INFO, NULL, "GPU processes pin or lock %.1f GiB of host memory",
				gib(pinned));
	if (s->mem_ok && m->has_total && m->has_available)
		ev(f, "/proc/meminfo: MemTotal %.1f GiB, MemAvailable %.1f GiB", gib(m->total), gib(m->available));
	if (s->mem_ok && m->has_shmem && m->shmem >= GIB)
		ev(f, "Shmem %.1f GiB: tmpfs and /dev/shm pages, which only removing the files frees", gib(m->shmem));
	if (s->mem_ok && m->has_mlocked && m->mlocked >= GIB)
		ev(f, "Mlocked %.1f GiB", gib(m->mlocked));
	size_t named = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *p = &s->scan.holders[i].info;
		if (p->vm_pin_kb * 1024ull < GIB && p->vm_lck_kb * 1024ull < GIB)
			continue;
		add_pid(f, p->pid);
		if (named++ >= LIST_MAX)
			continue;
		char *pd = pdesc(p);
		ev(f, "%s: VmPin %.1f GiB, VmLck %.1f GiB, VmRSS %.1f GiB (pinned host buffers: KV cache offload, "
		   "pinned staging)", pd, gib(p->vm_pin_kb * 1024ull), gib(p->vm_lck_kb * 1024ull),
		   gib(p->vm_rss_kb * 1024ull));
		free(pd);
	}
	if (named > LIST_MAX)
		ev(f, "and %zu more", named - LIST_MAX);
	if (named == 0 && low)
		ev(f, "no GPU holder visible here pins or locks host memory%s", s->host_pidns ? ""
		   : " (this is a child PID namespace: the host's processes are out of sight)");
	if (low)
		set_fix(f, "Find what holds it: %sremove leaked /dev/shm segments%s. Serving engines' host-memory flags are "
			"per rank (SGLang --hicache-size: 8 ranks x 300 GB = 2.4 TB); `gpuwho plan -- LAUNCH COMMAND` "
			"checks a launch before it runs.", named ? "stop the processes above, " : "",
			s->host_pidns ? "" : ", and look on the host (`gpuwho why` there)");
	else
		set_fix(f, "Nothing to do unless host memory runs short; then these processes are where it went.");
}

/* Zombies that are not GPU holders (their parents have not reaped them): harmless for the GPU. */
static void verdict_zombies(struct ctx *c)
{
	const struct snapshot *s = c->s;
	struct finding *f = NULL;
	for (int pass = 0; pass < 2; pass++) {
		size_t n = pass ? s->nothers : s->scan.nholders;
		for (size_t i = 0; i < n; i++) {
			const struct proc_info *p = pass ? &s->others[i] : &s->scan.holders[i].info;
			if (p->state != 'Z' || p->nthreads > 1)
				continue;
			/* NVML listing it makes it a GPU row, reported with its GPU. */
			bool listed = false;
			for (size_t g = 0; g < c->d->acct.ngpus && !listed; g++)
				for (size_t r = 0; r < c->d->acct.gpus[g].nprocs && !listed; r++)
					listed = c->d->acct.gpus[g].procs[r].info == p;
			if (listed)
				continue;
			if (!f)
				f = add_finding(c, "zombie", DIAG_INFO, NULL,
						"zombie processes (<defunct>) that hold nothing: harmless for the GPU");
			char *pd = pdesc(p), *par = parent_desc(s, p);
			ev(f, "%s: exited, its files closed and memory freed; its parent %s has not reaped it yet", pd, par);
			free(pd);
			free(par);
			add_pid(f, p->pid);
		}
	}
	if (f)
		set_fix(f, "Nothing for the GPU. The parent reaps it when it calls wait(); if the parent never does, ending "
			"the parent hands it to PID 1, which does.");
}

static void verdict_nvml(struct ctx *c)
{
	const struct snapshot *s = c->s;
	if (!s->nvml_asked) {
		struct finding *f = add_finding(c, "nvml_unavailable", DIAG_INFO, NULL,
						"NVML not asked (--no-nvml): GPU memory unknown, holders only");
		ev(f, "without NVML there is no memory to attribute, so no verdict about leaks or hidden holders");
		set_fix(f, "Run without --no-nvml for memory verdicts.");
		return;
	}
	if (s->nvml.loaded)
		return;
	/* No library and no GPU node: a host without NVIDIA GPUs, not a problem. */
	bool none = c->d->acct.ngpus == 0 && (s->nvml.rc == NVML_E_NO_LIBRARY || s->nvml.rc == NVML_E_LIBRARY_NOT_FOUND);
	struct finding *f = add_finding(c, "nvml_unavailable", none ? DIAG_INFO : DIAG_WARNING, NULL, "%s",
					none ? "no NVIDIA GPU here: no NVML library and no /dev/nvidiaN"
					     : "NVML did not answer: GPU memory unknown, so no memory verdict is possible");
	ev(f, "NVML: %s", s->nvml.error ? s->nvml.error : nvml_error_name(s->nvml.rc));
	if (none)
		set_fix(f, "Nothing to do on a host without NVIDIA GPUs.");
	else if (s->nvml.rc == NVML_E_LIB_RM_VERSION_MISMATCH)
		set_fix(f, "The library and the kernel driver differ (a driver upgrade without a reboot or module reload): "
			"reboot, or reload the nvidia modules when no process uses them.");
	else if (s->nvml.rc == NVML_E_DRIVER_NOT_LOADED)
		set_fix(f, "Load the NVIDIA driver (modprobe nvidia) or check `dmesg` for why it failed to load.");
	else
		set_fix(f, "Check that libnvidia-ml.so.1 matches the driver (`--nvml PATH` picks another), and run as a "
			"user allowed to query the GPUs.");
}

static void verdict_not_inspected(struct ctx *c)
{
	const struct holders_scan *sc = &c->s->scan;
	if (!sc->ndenied && !sc->ntimed_out)
		return;
	struct finding *f = add_finding(c, "not_inspected", DIAG_INFO, NULL,
					"%zu process%s could not be inspected: a conclusion that no process holds memory is "
					"uncertain", sc->ndenied + sc->ntimed_out, sc->ndenied + sc->ntimed_out == 1 ? "" : "es");
	f->uncertain = true;
	for (size_t i = 0; i < sc->ndenied && i < LIST_MAX; i++)
		ev(f, "PID %d (%s): %s", sc->denied[i].pid, sc->denied[i].comm ? sc->denied[i].comm : "?",
		   sc->denied[i].why ? sc->denied[i].why : "permission denied");
	if (sc->ndenied > LIST_MAX)
		ev(f, "and %zu more could not be read (permission denied)", sc->ndenied - LIST_MAX);
	for (size_t i = 0; i < sc->ntimed_out; i++) {
		ev(f, "PID %d (%s): %s — a read that blocks suggests a process in the driver", sc->timed_out[i].pid,
		   sc->timed_out[i].comm ? sc->timed_out[i].comm : "?", sc->timed_out[i].why ? sc->timed_out[i].why : "timed out");
		add_pid(f, sc->timed_out[i].pid);
	}
	set_fix(f, sc->ndenied ? "Run as root (`sudo gpuwho why`) to inspect every process."
			       : "Re-run; a process whose files cannot be read in time may be stuck in the kernel.");
}

/* ---------- entry points ---------- */

/* Order: by GPU, worst first within a GPU; host-wide findings last, worst first. */
static bool goes_before(const struct finding *x, const struct finding *y)
{
	bool hx = x->slot < 0, hy = y->slot < 0;
	if (hx != hy)
		return hy;
	if (x->slot != y->slot)
		return x->slot < y->slot;
	return x->severity > y->severity;
}

void diagnose(const struct snapshot *s, struct diagnosis *out)
{
	memset(out, 0, sizeof *out);
	account_from_snapshot(s, &out->acct);
	out->uncertain = s->scan.ndenied || s->scan.ntimed_out;
	struct ctx c = {.s = s, .d = out};
	for (size_t i = 0; i < out->acct.ngpus; i++)
		diagnose_gpu(&c, &out->acct.gpus[i]);
	verdict_nvml(&c);
	verdict_mounts(&c);
	verdict_host_memory(&c);
	verdict_shm(&c);
	verdict_zombies(&c);
	verdict_not_inspected(&c);
	/* Insertion sort: stable, so findings of equal rank keep the order they were made in. */
	for (size_t i = 1; i < out->nfindings; i++) {
		struct finding f = out->findings[i];
		size_t k = i;
		for (; k > 0 && goes_before(&f, &out->findings[k - 1]); k--)
			out->findings[k] = out->findings[k - 1];
		out->findings[k] = f;
	}
}

void diag_free(struct diagnosis *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nfindings; i++) {
		struct finding *f = &d->findings[i];
		free(f->headline);
		for (size_t k = 0; k < f->nevidence; k++)
			free(f->evidence[k]);
		free(f->evidence);
		free(f->fix);
		free(f->pids);
	}
	free(d->findings);
	account_free(&d->acct);
	memset(d, 0, sizeof *d);
}

const char *diag_severity_name(enum diag_severity sev)
{
	switch (sev) {
	case DIAG_OK: return "ok";
	case DIAG_INFO: return "info";
	case DIAG_WARNING: return "warning";
	case DIAG_ACTION: return "action";
	}
	return "unknown";
}

enum diag_severity diag_worst(const struct diagnosis *d, const bool *show)
{
	enum diag_severity w = DIAG_OK;
	for (size_t i = 0; i < d->nfindings; i++)
		if ((!show || show[i]) && d->findings[i].severity > w)
			w = d->findings[i].severity;
	return w;
}
