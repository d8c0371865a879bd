/* diagnose/classify: what each process with GPU memory is — live, stuck, stopped, a zombie, an heir or an orphan. */
#include "diagnose/internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

bool diag_is_stuck(const struct proc_info *p)
{
	return p->state == 'D' || p->driver_wait;
}

/* The topmost ancestor of p (p itself included) still in p's process group. */
static const struct proc_info *group_top(const struct snapshot *s, const struct proc_info *p)
{
	const struct proc_info *top = p;
	for (int depth = 0; depth < 64; depth++) {
		const struct proc_info *pp = snapshot_find_proc(s, top->ppid);
		if (!pp || pp->pgid != p->pgid)
			break;
		top = pp;
	}
	return top;
}

/* The kernel's evidence of a dead launcher, whatever the names and whoever adopted the rest: p's
 * process group was led by a process that has exited (the snapshot collects every holder's group
 * leader, so a missing one is gone), and the group's live GPU holders hang from two or more
 * separate subtrees — each adopted on its own when the launcher that tied them died. A group with
 * one subtree is a live job whose starter exited (a script that ran `nohup server &`), and a
 * daemon that called setsid leads its own group: neither is orphaned. */
static bool group_split(const struct snapshot *s, const struct proc_info *p, const struct proc_info **top)
{
	if (p->pgid <= 0 || p->pgid == p->pid)
		return false;
	const struct proc_info *leader = snapshot_find_proc(s, p->pgid);
	if (leader && !(leader->state == 'Z' && leader->nthreads <= 1))
		return false;
	*top = group_top(s, p);
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *q = &s->scan.holders[i].info;
		if (q->pgid == p->pgid && q->state != 'Z' && group_top(s, q) != *top)
			return true;
	}
	return false;
}

/* True when p is an adopted worker; fills o. First the kernel's evidence (group_split); then the
 * names: walks up through ancestors of the same family (a data-parallel controller above its
 * schedulers) to the one an init or subreaper adopted. */
bool diag_orphan_of(const struct snapshot *s, const struct proc_info *p, struct orphan_info *o)
{
	const struct proc_info *gtop;
	if (group_split(s, p, &gtop)) {
		o->family = worker_family(p);
		o->root = gtop->pid;
		o->reaper = gtop->ppid;
		o->group = p->pgid;
		return true;
	}
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
		o->group = 0;
	}
	return adopted;
}

enum cls diag_classify(const struct snapshot *s, const struct account_proc *r, struct orphan_info *o)
{
	const struct proc_info *p = r->info;
	if (diag_is_stuck(p))
		return CLS_STUCK;
	if (p->state == 'Z')
		return p->nthreads > 1 ? CLS_ZOMBIE_LEADER : CLS_ZOMBIE;
	if (p->state == 'T' || p->state == 't')
		return CLS_STOPPED;
	if (r->kind == ACCOUNT_INHERITED)
		return CLS_INHERITED;
	if (r->kind != ACCOUNT_DEVICE_ONLY && diag_orphan_of(s, p, o))
		return CLS_ORPHAN;
	return CLS_LIVE;
}

/* True when the row may carry GPU memory (not a holder NVML says has none). */
bool diag_carries_memory(const struct account_proc *r)
{
	return r->info && r->kind != ACCOUNT_DEVICE_ONLY;
}
