/* diagnose/gpu: the verdicts about one GPU, from its account rows as classify.c sorts them. */
#include "diagnose/internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- evidence shared by several verdicts ---------- */

static void ev_uncertain(struct ctx *c, struct finding *f)
{
	const struct holders_scan *sc = &c->s->scan;
	if (sc->limited) {
		f->uncertain = true;
		diag_ev(f, "uncertain: only the processes NVML lists were looked at (a lazy collection), not every process "
			"— another may hold this GPU");
	}
	if (!sc->ndenied && !sc->ntimed_out)
		return;
	f->uncertain = true;
	char *names = xstrdup("");
	size_t shown = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct unseen *u = pass ? sc->timed_out : sc->denied;
		size_t n = pass ? sc->ntimed_out : sc->ndenied;
		for (size_t i = 0; i < n && shown < DIAG_LIST_MAX; i++, shown++) {
			char *m = xasprintf("%s%s%d (%s)", names, shown ? ", " : "", u[i].pid, u[i].comm ? u[i].comm : "?");
			free(names);
			names = m;
		}
	}
	size_t total = sc->ndenied + sc->ntimed_out;
	diag_ev(f, "uncertain: %zu process%s could not be inspected (%zu permission denied, %zu timed out): %s%s — any "
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
		if (n++ >= DIAG_LIST_MAX)
			continue;
		char *what = xstrdup("");
		for (size_t k = 0; k < h->nholds && k < 4; k++) {
			char *m = xasprintf("%s%s%s", what, k ? ", " : "", sc->targets[h->holds[k].target].path);
			free(what);
			what = m;
		}
		char *pd = diag_pdesc(&h->info);
		diag_ev(f, "would block a reset: %s holds %s%s", pd, what, h->nholds > 4 ? ", ..." : "");
		free(pd);
		free(what);
	}
	if (n > DIAG_LIST_MAX)
		diag_ev(f, "would block a reset: %zu more processes hold NVIDIA device nodes", n - DIAG_LIST_MAX);
	const struct nvml_gpu *ng = g->nvml;
	if (ng && ng->persistence_rc == 0 && ng->persistence)
		diag_ev(f, "would block a reset: persistence mode is on (nvidia-persistenced keeps the GPU open): stop it "
			"first (systemctl stop nvidia-persistenced)");
	if (ng && ng->mig_rc == 0 && ng->mig_current)
		diag_ev(f, "would block a reset: MIG mode is on; its GPU and compute instances must be destroyed first");
	if (n == 0 && !(ng && ng->persistence_rc == 0 && ng->persistence) && !(ng && ng->mig_rc == 0 && ng->mig_current))
		diag_ev(f, "nothing seen here would block a reset (no process holds an NVIDIA device node)");
}

/* "NVML: 96,413 MiB used of 97,887 MiB". */
static void ev_memory(struct finding *f, const struct account_gpu *g)
{
	char a[48], b[48], u[48];
	if (!g->mem_known) {
		diag_ev(f, "NVML: memory unknown");
		return;
	}
	if (g->unattributed_known) {
		char v[48];
		diag_ev(f, "NVML: %s used of %s; the processes it lists account for %s, %s unattributed",
			fmt_mib(a, sizeof a, g->used_bytes), fmt_mib(b, sizeof b, g->total_bytes),
			fmt_mib(u, sizeof u, g->attributed_bytes), fmt_mib(v, sizeof v, g->unattributed_bytes));
	} else
		diag_ev(f, "NVML: %s used of %s; its process list is unknown", fmt_mib(a, sizeof a, g->used_bytes),
			fmt_mib(b, sizeof b, g->total_bytes));
}

/* ---------- one GPU's rows, by class ---------- */

struct gpu_rows {
	const struct account_proc **r[CLS_COUNT];   /* rows per class */
	size_t n[CLS_COUNT];
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
	for (int k = 0; k < CLS_COUNT; k++)
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

/* One evidence line per row: "PID 5001 (sglang::scheduler_TP0): state S, 4 threads, 11,904 MiB, parent PID 1 (systemd) — CMD". */
static void ev_rows(struct ctx *c, struct finding *f, const struct account_proc *const *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		diag_add_pid(f, r[i]->pid);
		if (i >= DIAG_LIST_MAX)
			continue;
		const struct proc_info *p = r[i]->info;
		char *pd = diag_pdesc(p), *par = diag_parent_desc(c->s, p), *cmd = diag_short_cmdline(p), mb[48];
		char threads[32] = "";
		if (p->nthreads > 1)
			snprintf(threads, sizeof threads, ", %u threads", p->nthreads);
		diag_ev(f, "%s: state %c%s, %s, parent %s%s%s — %s", pd, p->state ? p->state : '?', threads,
			diag_row_mem(r[i], mb, sizeof mb), par, p->thread_states ? "; threads: " : "",
			p->thread_states ? p->thread_states : "", cmd);
		free(pd);
		free(par);
		free(cmd);
	}
	if (n > DIAG_LIST_MAX)
		diag_ev(f, "and %zu more", n - DIAG_LIST_MAX);
}

/* ---------- the verdicts ---------- */

static void verdict_stuck(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n)
{
	char gn[32];
	char *sel = account_gpu_selector(g);
	char *pd = diag_pdesc(r[0]->info);
	struct finding *f = diag_add_finding(c, "stuck_in_driver", DIAG_ACTION, g,
					     "%s: %s%s %s stuck in the NVIDIA driver — signals cannot free its memory "
					     "until the driver call returns", diag_gpu_name(g, gn, sizeof gn), pd,
					     n > 1 ? " and others" : "", n > 1 ? "are" : "is");
	free(pd);
	ev_memory(f, g);
	for (size_t i = 0; i < n; i++) {
		const struct proc_info *p = r[i]->info;
		if (p->driver_wait)
			diag_ev(f, "PID %d: %s", p->pid, p->driver_wait);
		else
			diag_ev(f, "PID %d is in state D (uninterruptible sleep)%s%s", p->pid, p->wchan ? " in " : "",
				p->wchan ? p->wchan : "");
	}
	ev_rows(c, f, r, n);
	diag_ev(f, "a process in uninterruptible sleep acts on signals only when the kernel call returns; kill -9 "
		"is queued, not lost (vllm#25127, open-gpu-kernel-modules#456)");
	ev_reset_blockers(c, f, g);
	char *pids = diag_pid_args(f->pids, f->npids);
	diag_set_fix(f, "Wait: a long copy or a finishing kernel returns in seconds; `kill -9 %s` is safe to send now and "
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
	char *amt = diag_amount(bytes, unknown);
	char *pd = diag_pdesc(r[0]->info);
	struct finding *f = diag_add_finding(c, "zombie_leader", DIAG_ACTION, g,
					     "%s: %s held by %s%s, a <defunct> process whose threads still run — kill -9 %d",
					     diag_gpu_name(g, gn, sizeof gn), amt, pd, n > 1 ? " and others" : "", r[0]->pid);
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
			diag_ev(f, "PID %d: its leader has exited (state Z) but thread %d still holds the GPU through "
				"/proc/%d/task/%d; /proc/%d/fd is empty, so fuser and lsof (without -K) miss it", p->pid, tid,
				p->pid, tid, p->pid);
		else
			diag_ev(f, "PID %d: its leader has exited (state Z) and %u threads live on; ps shows <defunct>", p->pid,
				p->nthreads);
		char *par = diag_parent_desc(c->s, p);
		if (p->ppid != 1)
			diag_ev(f, "PID %d's parent, %s, must reap it once its threads are gone (wait())", p->pid, par);
		else
			diag_ev(f, "PID %d's parent is PID 1, which reaps it once its threads are gone", p->pid);
		free(par);
	}
	char *pids = diag_pid_args(f->pids, f->npids);
	diag_set_fix(f, "`kill -9 %s` — SIGKILL ends every thread of the group and the driver frees the memory; the "
		     "parent then reaps the zombie (PID 1 does when it is the parent).", pids);
	free(pids);
}

static void verdict_stopped(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n)
{
	char gn[32];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = diag_amount(bytes, unknown);
	char *pd = diag_pdesc(r[0]->info);
	struct finding *f = diag_add_finding(c, "stopped", DIAG_ACTION, g,
					     "%s: %s held by %s%s, stopped — it keeps the memory until it continues or dies",
					     diag_gpu_name(g, gn, sizeof gn), amt, pd, n > 1 ? " and others" : "");
	free(pd);
	free(amt);
	ev_rows(c, f, r, n);
	diag_ev(f, "state T (stopped by a signal: Ctrl-Z, SIGSTOP) or t (stopped by a debugger); fuser lists it with no "
		"hint that it is stopped");
	char *pids = diag_pid_args(f->pids, f->npids);
	diag_set_fix(f, "`kill -CONT %s` to let it run on; or end it: `kill %s` (a stopped process acts on SIGTERM only "
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
	char *amt = diag_amount(bytes, unknown);
	char *pd = diag_pdesc(r[0]->info);
	struct finding *f = diag_add_finding(c, "inherited_holder", DIAG_ACTION, g,
					     "%s: %s of exited PID %s held by %s%s, which inherited its device files",
					     diag_gpu_name(g, gn, sizeof gn), amt, dead, pd, n > 1 ? " and others" : "");
	free(pd);
	free(amt);
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *e = &g->procs[i];
		if (e->kind == ACCOUNT_EXITED)
			diag_ev(f, "NVML lists PID %d with %s; no such process exists (this /proc is the host's PID namespace)",
				e->pid, e->used_known ? fmt_mib(mb, sizeof mb, e->used_bytes) : "memory of unknown size");
	}
	ev_rows(c, f, r, n);
	diag_ev(f, "it holds the GPU's device files with no NVML entry of its own: it got them from a parent that "
		"exited (a fork after CUDA initialised), and is likely not a CUDA user itself; the driver frees the "
		"memory when the last file closes");
	char *pids = diag_pid_args(f->pids, f->npids);
	char *sel = account_gpu_selector(g);
	diag_set_fix(f, "`gpuwho free %s`, or by hand: `kill %s` (then `kill -9 %s` if still there after 10 s). Unless "
		     "it does GPU work of its own, nothing is lost.", sel, pids, pids);
	free(sel);
	free(pids);
	free(dead);
}

/* The GPUs on which any of pids[0..n) has a row, as one selector ("0,1,3", malloc'ed), in account
 * order; NULL when none. */
static char *family_gpus(const struct account *a, const int *pids, size_t n)
{
	char *out = NULL;
	for (size_t g = 0; g < a->ngpus; g++) {
		bool on = false;
		for (size_t r = 0; r < a->gpus[g].nprocs && !on; r++)
			for (size_t k = 0; k < n && !on; k++)
				on = a->gpus[g].procs[r].pid == pids[k];
		if (!on)
			continue;
		char *one = account_gpu_selector(&a->gpus[g]);
		char *next = out ? xasprintf("%s,%s", out, one) : xstrdup(one);
		free(one);
		free(out);
		out = next;
	}
	return out;
}

static void verdict_orphans(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n,
			    const struct orphan_info *o)
{
	const struct snapshot *s = c->s;
	char gn[32];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = diag_amount(bytes, unknown);
	const char *fam = o[0].family;
	int group = o[0].group;   /* one process group whose leader died: the kernel's evidence */
	for (size_t i = 1; i < n; i++) {
		if (!o[i].family || !fam || strcmp(o[i].family, fam))
			fam = NULL;
		if (o[i].group != group)
			group = 0;
	}
	const struct proc_info *reaper = snapshot_find_proc(s, o[0].reaper);
	char *rdesc = reaper ? diag_pdesc(reaper) : xasprintf("PID %d", o[0].reaper);
	char *sel = account_gpu_selector(g);
	/* The whole family on the host: every GPU holder adopted the same way, with its roots. */
	int *kill = NULL;
	size_t nkill = 0;
	unsigned family_n = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *q = &s->scan.holders[i].info;
		struct orphan_info qo;
		if (diag_is_stuck(q) || q->state == 'Z' || !diag_orphan_of(s, q, &qo))
			continue;
		/* One family: the same dead process group, the same engine, or (ranks of an unknown
		 * command) the same command line. */
		bool same = false;
		char *qk = qo.family ? NULL : proc_cmdline_joined(q);
		for (size_t k = 0; k < n && !same; k++) {
			if (qo.group || o[k].group) {
				same = qo.group == o[k].group;
			} else if (qo.family || o[k].family) {
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
	/* A family on several GPUs (a TP-4 launch): the fix frees all of its GPUs, not this one only,
	 * or the rest stays orphaned. */
	char *fam_gpus = family_gpus(&c->d->acct, kill, nkill);
	if (fam_gpus && strchr(fam_gpus, ',')) {
		free(sel);
		sel = fam_gpus;
	} else
		free(fam_gpus);
	struct finding *f;
	if (group)
		f = diag_add_finding(c, "orphaned_workers", DIAG_ACTION, g,
				     "%s: %s held by %zu orphaned %s%s of process group %d (its leader exited; adopted by "
				     "%s) — gpuwho free %s", diag_gpu_name(g, gn, sizeof gn), amt, n, fam ? fam : "",
				     fam ? (n == 1 ? " worker" : " workers") : (n == 1 ? "process" : "processes"), group,
				     rdesc, sel);
	else
		f = diag_add_finding(c, "orphaned_workers", DIAG_ACTION, g,
				     "%s: %s held by %zu orphaned %s%s (launcher gone, adopted by %s) — gpuwho free %s",
				     diag_gpu_name(g, gn, sizeof gn), amt, n, fam ? fam : "",
				     fam ? (n == 1 ? " worker" : " workers") : (n == 1 ? "rank" : "ranks"), rdesc, sel);
	free(amt);
	ev_rows(c, f, r, n);
	for (size_t i = 0; i < n; i++) {
		if (o[i].root != r[i]->pid) {
			const struct proc_info *rp = snapshot_find_proc(s, o[i].root);
			char *rd = rp ? diag_pdesc(rp) : xasprintf("PID %d", o[i].root);
			diag_ev(f, "PID %d descends from %s, the topmost process of its family, whose parent is now PID %d",
				r[i]->pid, rd, o[i].reaper);
			free(rd);
		}
	}
	if (group)
		diag_ev(f, "process group %d: its leader, PID %d, has exited, and its GPU holders hang from separate subtrees "
			"that were each adopted (by %s): the launcher that tied them is gone (SIGKILL does not reach its "
			"children), whatever their names", group, group, rdesc);
	else
		diag_ev(f, "%s: a worker's parent is its launcher; %s means the launcher died (SIGKILL does not reach its "
			"children) and the workers kept their GPU memory (vllm#55510, #34643)",
			fam ? fam : "several GPU holders run the same command", o[0].reaper == 1 ? "PID 1 as parent" : "an "
			"init or subreaper as parent");
	if (family_n > n)
		diag_ev(f, "the same orphaned family on this host: %u GPU holders%s%s", family_n,
			strchr(sel, ',') ? ", on GPUs " : "", strchr(sel, ',') ? sel : "");
	if (nkill == 0) {   /* cannot happen: r's own processes qualify; keep the fix meaningful anyway */
		for (size_t i = 0; i < n; i++) {
			kill = xrealloc(kill, (nkill + 1) * sizeof *kill);
			kill[nkill++] = r[i]->pid;
		}
	}
	for (size_t i = 0; i < nkill; i++)
		diag_add_pid(f, kill[i]);
	char *pids = diag_pid_args(kill, nkill);
	if (group)
		diag_set_fix(f, "`gpuwho free %s` — or by hand, the whole process group: `kill -TERM -- -%d` (then `kill -KILL "
			     "-- -%d` if any is still there after 10 s). Then relaunch.", sel, group, group);
	else
		diag_set_fix(f, "`gpuwho free %s` — or by hand, the whole tree, its root first: `kill %s` (then `kill -9 %s` "
			     "for any still there after 10 s). Then relaunch.", sel, pids, pids);
	free(pids);
	free(kill);
	free(sel);
	free(rdesc);
}

static void verdict_in_use(struct ctx *c, const struct account_gpu *g, const struct account_proc *const *r, size_t n,
			   bool other_findings)
{
	char gn[32], a[48];
	bool unknown = false;
	unsigned long long bytes = rows_bytes(r, n, &unknown);
	char *amt = g->procs_known ? diag_amount(bytes, unknown) : xstrdup("memory unknown");
	struct finding *f = diag_add_finding(c, "in_use", DIAG_OK, g, "%s: %s in use by %zu live process%s%s",
					     diag_gpu_name(g, gn, sizeof gn), amt, n, n == 1 ? "" : "es",
					     other_findings ? "" : " — nothing to free");
	free(amt);
	ev_memory(f, g);
	ev_rows(c, f, r, n);
	size_t ndev = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *d = &g->procs[i];
		if (d->kind != ACCOUNT_DEVICE_ONLY || !d->info || diag_is_stuck(d->info))
			continue;
		if (ndev++ < DIAG_LIST_MAX) {
			char *pd = diag_pdesc(d->info);
			diag_ev(f, "%s holds the device with no GPU memory (monitoring tools, nvidia-persistenced)", pd);
			free(pd);
		}
	}
	if (g->unattributed_known && g->unattributed_bytes >= DIAG_UNHELD_MIN_BYTES && c->s->host_pidns)
		diag_ev(f, "%s more is used than NVML attributes to processes%s", fmt_mib(a, sizeof a, g->unattributed_bytes),
			g->nunknown ? " (it includes processes whose memory NVML could not give)" : "");
	diag_set_fix(f, "Nothing to free: live processes use it. To get the GPU back, stop them the way they were "
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
	char *amt = diag_amount(bytes, unknown);
	char *sel = account_gpu_selector(g);
	struct finding *f = diag_add_finding(c, "outside_pid_namespace", DIAG_WARNING, g,
					     "%s: %s held by processes outside this PID namespace (gpuwho runs in a container) "
					     "— not a driver leak; run gpuwho on the host", diag_gpu_name(g, gn, sizeof gn), amt);
	free(amt);
	diag_ev(f, "this /proc is a child PID namespace's (its PID 2 is not kthreadd): processes of the host and of "
		"other containers are invisible here");
	ev_memory(f, g);
	for (size_t i = 0, k = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind != ACCOUNT_OUTSIDE || k++ >= DIAG_LIST_MAX)
			continue;
		diag_ev(f, "NVML lists host PID %d with %s; no process here has that PID (NVML names host PIDs)", r->pid,
			r->used_known ? fmt_mib(mb, sizeof mb, r->used_bytes) : "memory of unknown size");
	}
	if (nout > DIAG_LIST_MAX)
		diag_ev(f, "and %zu more host PIDs", nout - DIAG_LIST_MAX);
	if (g->hidden_outside)
		diag_ev(f, "NVML lists no process for %s of it: the driver shows a PID namespace only its own processes "
			"(driver 580), so nvidia-smi says \"No running processes found\"",
			fmt_mib(mb, sizeof mb, g->unattributed_bytes));
	size_t nhere = 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (!r->info)
			continue;
		if (nhere++ < DIAG_LIST_MAX) {
			char *pd = diag_pdesc(r->info);
			diag_ev(f, "%s here holds %s too (%s)", pd, g->target ? g->target->path : "the GPU",
				account_kind_name(r->kind));
			free(pd);
		}
		diag_add_pid(f, r->pid);
	}
	if (nhere == 0)
		diag_ev(f, "no process in this PID namespace holds %s", g->target ? g->target->path : "the GPU's device node");
	for (size_t i = 0; g->target && i < s->scan.nmounts; i++)
		if (&s->scan.targets[s->scan.mounts[i].target] == g->target)
			diag_ev(f, "%s is a bind mount: fuser's \"kernel mount\" is that mount point, not a holder",
				s->scan.mounts[i].mount_point);
	diag_ev(f, "the holders are out of sight, not gone: a reset would fail while they run (or end their work), "
		"and signals from here cannot reach them");
	diag_set_fix(f, "Run gpuwho on the host: `sudo gpuwho why %s` — or from a container that shares the host's PID "
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

/* unheld bytes on g that no process holds; nmem processes hold the rest (0: none). */
static void verdict_no_holder(struct ctx *c, const struct account_gpu *g, unsigned long long unheld, size_t nmem)
{
	const struct snapshot *s = c->s;
	char gn[32], a[48], b[48];
	char *sel = account_gpu_selector(g);
	const struct gpu_resample *rs = &s->resample;
	/* The second sample is stored by position in nvml.gpus, which need not be the index. */
	size_t pos = g->nvml ? (size_t)(g->nvml - s->nvml.gpus) : (size_t)-1;
	bool sampled = pos < rs->ngpus && rs->used_ok && rs->used_ok[pos];
	unsigned long long later = sampled ? rs->used_bytes[pos] : g->used_bytes;
	if (sampled && later + DIAG_RELEASE_MIN_BYTES <= g->used_bytes) {
		struct finding *f = diag_add_finding(c, "memory_releasing", DIAG_INFO, g,
						     "%s: %s with no holder, and falling — memory is being released; "
						     "wait and re-run", diag_gpu_name(g, gn, sizeof gn), fmt_mib(a, sizeof a, unheld));
		ev_memory(f, g);
		diag_ev(f, "used fell from %s to %s within %.1f s (the second sample)", fmt_mib(a, sizeof a, g->used_bytes),
			fmt_mib(b, sizeof b, later), rs->delay_s);
		diag_ev(f, "a holder that just exited leaves its memory for the driver to free; a SIGKILLed PyTorch process's "
			"memory read 0 within 0.2 s on an H200");
		ev_uncertain(c, f);
		diag_set_fix(f, "Nothing yet: re-run `gpuwho why %s` in a few seconds. Only memory that stays with no holder is "
			     "a leak.", sel);
		free(sel);
		return;
	}
	bool uncertain = s->scan.ndenied || s->scan.ntimed_out || s->scan.limited;
	struct finding *f;
	if (nmem)
		f = diag_add_finding(c, "driver_leak", DIAG_WARNING, g,
				     "%s: %s held by no process%s, beside the memory of %zu live process%s — a leak that "
				     "only a reset frees, once they have ended", diag_gpu_name(g, gn, sizeof gn),
				     fmt_mib(a, sizeof a, unheld), uncertain ? " that gpuwho could inspect" : "", nmem,
				     nmem == 1 ? "" : "es");
	else
		f = diag_add_finding(c, "driver_leak", uncertain ? DIAG_WARNING : DIAG_ACTION, g,
				     "%s: %s held by no process%s — %s", diag_gpu_name(g, gn, sizeof gn),
				     fmt_mib(a, sizeof a, unheld), uncertain ? " that gpuwho could inspect" : "",
				     uncertain ? "possibly a driver-level leak; run as root first"
					       : "a driver-level leak; only a reset frees it");
	ev_memory(f, g);
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind == ACCOUNT_EXITED)
			diag_ev(f, "NVML lists PID %d with %s; it has exited and no process holds its device files", r->pid,
				r->used_known ? fmt_mib(b, sizeof b, r->used_bytes) : "memory of unknown size");
	}
	/* A limited walk looked at NVML's PIDs only: ev_uncertain says so instead. */
	if (nmem && !s->scan.limited)
		diag_ev(f, "this /proc is the host's PID namespace, so every process on the host was looked at (%u scanned); "
			"the %zu that hold memory on %s account for the rest", s->scan.nscanned, nmem,
			g->target ? g->target->path : "the GPU");
	else if (!s->scan.limited)
		diag_ev(f, "this /proc is the host's PID namespace, so every process on the host was looked at (%u scanned); "
			"none holds %s with memory", s->scan.nscanned, g->target ? g->target->path : "the GPU");
	diag_ev(f, "threshold: more than %llu MiB with no holder (NVML's used excludes the driver's reserve; one CUDA "
		"context alone takes ~500 MiB)", DIAG_UNHELD_MIN_BYTES / DIAG_MIB);
	if (sampled)
		diag_ev(f, "a second sample %.1f s later read %s: not falling", rs->delay_s, fmt_mib(b, sizeof b, later));
	else
		diag_ev(f, "one sample only: re-run to see whether it falls (memory being released is not a leak)");
	ev_uncertain(c, f);
	ev_reset_blockers(c, f, g);
	if (nmem)
		diag_set_fix(f, "Nothing frees it while the GPU is in use. Re-run `gpuwho why %s` first (memory being released "
			     "falls within seconds); if it stays, once the live processes have ended, as root: "
			     "`nvidia-smi --gpu-reset -i %s` (gpuwho why never runs it).", sel, sel);
	else if (uncertain)
		diag_set_fix(f, "Run `sudo gpuwho why %s` so that every process can be inspected; only if it still finds no "
			     "holder, reset the GPU as root: `nvidia-smi --gpu-reset -i %s` (gpuwho why never runs it).",
			     sel, sel);
	else
		diag_set_fix(f, "As root, with nothing holding the GPU (see above): `nvidia-smi --gpu-reset -i %s` — gpuwho why "
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
	struct finding *f = diag_add_finding(c, "gpu_health", (lost || retired || remap || remap_fail) ? DIAG_ACTION
				       : DIAG_WARNING, g, "%s: the GPU %s", diag_gpu_name(g, gn, sizeof gn), what);
	if (lost)
		diag_ev(f, "NVML: %s", n->error ? n->error : nvml_error_name(n->handle_rc ? n->handle_rc : n->mem_rc));
	if (retired)
		diag_ev(f, "NVML: retired pages pending (nvmlDeviceGetRetiredPagesPendingStatus): they take effect at the "
			"next reset or driver reload");
	if (remap)
		diag_ev(f, "NVML: row remapping pending (%u correctable, %u uncorrectable remaps): takes effect at the next "
			"reset", n->remap_correctable, n->remap_uncorrectable);
	if (remap_fail)
		diag_ev(f, "NVML: a row remapping failed: the GPU is out of spare rows");
	if (ecc)
		diag_ev(f, "NVML: %llu volatile uncorrectable ECC errors since the driver loaded", n->ecc_uncorrected_volatile);
	ev_reset_blockers(c, f, g);
	char *sel = account_gpu_selector(g);
	if (lost)
		diag_set_fix(f, "Look at `dmesg | grep -i xid`; stop its processes, then as root `nvidia-smi --gpu-reset -i %s`, "
			     "or reboot when the reset fails. A GPU that falls off the bus again needs its hardware checked.",
			     sel);
	else if (remap_fail)
		diag_set_fix(f, "Drain the GPU and have its hardware replaced (a failed remap cannot be repaired in place).");
	else if (retired || remap)
		diag_set_fix(f, "When its work is done: stop its processes, then as root `nvidia-smi --gpu-reset -i %s` (or "
			     "reboot) so the repair takes effect.", sel);
	else
		diag_set_fix(f, "Check its applications' results (they may have been stopped by the errors) and `dmesg | grep "
			     "-i xid`; reset (`nvidia-smi --gpu-reset -i %s`) or reboot if errors keep coming.", sel);
	free(sel);
}

/* Everything about one GPU: the verdicts in the order they are shown when equally severe. */
void diag_gpu(struct ctx *c, const struct account_gpu *g)
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
		enum cls k = diag_classify(s, r, &o);
		/* A holder NVML says has no memory matters only when it is stuck (a hung nvidia-smi). */
		if (!diag_carries_memory(r) && k != CLS_STUCK)
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
	/* Memory no process holds, on the host: a leak — also on a GPU that live processes use, where
	 * ps shows it as unattributed all the same. Not when NVML could not give some process's
	 * memory: then the difference is not known to be nobody's. */
	size_t nmem = 0;
	for (int k = 0; k < CLS_COUNT; k++)
		nmem += gr.n[k];
	nmem -= gr.n[CLS_STUCK];
	for (size_t i = 0; i < gr.n[CLS_STUCK]; i++)
		nmem += diag_carries_memory(gr.r[CLS_STUCK][i]);
	if (s->host_pidns && g->unattributed_known && !g->nunknown) {
		unsigned long long unheld = unheld_bytes(g);
		if (unheld >= DIAG_UNHELD_MIN_BYTES)
			verdict_no_holder(c, g, unheld, nmem);
	}
	/* Live holders; plain zombies NVML still lists are counted with them (their evidence says Z). */
	size_t nlive = gr.n[CLS_LIVE] + gr.n[CLS_ZOMBIE];
	if (nlive) {
		const struct account_proc **live = xcalloc(nlive, sizeof *live);
		if (gr.n[CLS_LIVE])   /* memcpy from NULL is undefined even for 0 bytes */
			memcpy(live, gr.r[CLS_LIVE], gr.n[CLS_LIVE] * sizeof *live);
		if (gr.n[CLS_ZOMBIE])
			memcpy(live + gr.n[CLS_LIVE], gr.r[CLS_ZOMBIE], gr.n[CLS_ZOMBIE] * sizeof *live);
		verdict_in_use(c, g, live, nlive, c->d->nfindings > before);
		free(live);
	}
	if (c->d->nfindings == before) {
		char gn[32], a[48], b[48];
		struct finding *f;
		if (g->mem_known)
			f = diag_add_finding(c, "idle", DIAG_OK, g, "%s: idle — %s used of %s, no process holds memory on it",
					     diag_gpu_name(g, gn, sizeof gn), fmt_mib(a, sizeof a, g->used_bytes),
					     fmt_mib(b, sizeof b, g->total_bytes));
		else
			f = diag_add_finding(c, "idle", DIAG_OK, g, "%s: no process holds it (memory unknown without NVML)",
					     diag_gpu_name(g, gn, sizeof gn));
		(void)f;   /* the headline says it all */
	}
	rows_free(&gr);
}
