/* free/plan: whom `gpuwho free` signals, whom it spares and why, from a snapshot. Pure. */
#include "free/plan.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

/* ---------------------------------------------------------------- names */

/* System GPU services, monitors and display servers: killing them takes the GPU away from everyone
 * (fabric manager, DCGM, MPS: its clients would all lose their server) or the desktop down;
 * persistence daemons come back and hold the node again; monitors hold no memory. An entry ending
 * in '*' is a prefix. The evidence rules (monitor, no_evidence) spare such processes whatever their
 * names; the names add the daemons that do have a CUDA context (MPS server, DCGM). */
static const char *const protected_names[] = {
	"nvidia-persistenced", "nv-hostengine", "nvidia-fabricmanager", "nv-fabricmanager", "nvidia-powerd",
	"nvidia-cuda-mps-control", "nvidia-cuda-mps-server", "dcgm*", "nvidia-smi", "nvitop", "nvtop", "gpustat",
	"nvidia_gpu_exporter", "nvidia-gpu-exporter", "Xorg", "X", "Xwayland", "gnome-shell", "kwin_wayland",
	"kwin_x11", "kwin", "mutter", "sway", "weston", "Hyprland", "wayfire", "gdm*",
};

/* Where the walk up from a holder stops: init systems, container runtimes, session and remote
 * shells, schedulers and long-lived servers that start many jobs. Killing one of them would end
 * more than the job (a login session, a container, every notebook kernel), so a job's root is the
 * process just below. */
static const char *const boundary_names[] = {
	"systemd", "init", "tini", "dumb-init", "docker-init", "catatonit", "s6-svscan", "s6-supervise", "runsv",
	"supervisord", "containerd-shim*", "containerd", "dockerd", "conmon", "runc", "crun", "kubelet", "sshd*",
	"sudo", "su", "login", "screen", "SCREEN", "tmux*", "slurmstepd", "slurmd", "srun", "salloc", "cron",
	"crond", "atd", "jupyter*", "raylet", "gcs_server", "node", "code-server", "gpuwho",
};

/* Programs that start GPU jobs: the walk goes up through them (a Python launcher above its TP
 * workers, torchrun above its ranks). Any other process that holds no NVIDIA node — make, timeout,
 * a CI agent — is not part of the job, and the walk stops below it. */
static const char *const launcher_names[] = {
	"python*", "torchrun", "deepspeed", "accelerate", "mpirun", "mpiexec", "orterun", "prterun", "sglang*",
	"vllm*", "VLLM*",
};

static const char *const shell_names[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "tcsh", "csh"};

/* argv[0]'s base name, or NULL when the command line is empty (unreadable, kernel thread, zombie). */
static const char *argv0_base(const struct proc_info *p)
{
	if (!p->cmdline || !p->cmdline_len || !p->cmdline[0])
		return NULL;
	const char *slash = strrchr(p->cmdline, '/');   /* argv[0] ends at the first NUL */
	return slash ? slash + 1 : p->cmdline;
}

/* True when `name` (an entry, '*' for a prefix) names the command name c; comm (is_comm) is cut to
 * 15 bytes by the kernel, so a longer name matches its first 15. */
static bool name_is(const char *name, const char *c, bool is_comm)
{
	size_t n = strlen(name);
	bool prefix = n && name[n - 1] == '*';
	if (prefix)
		n--;
	if (!c)
		return false;
	if (prefix ? strncmp(c, name, n) == 0 : (strlen(c) == n && strncmp(c, name, n) == 0))
		return true;
	return is_comm && !prefix && n > 15 && strlen(c) == 15 && strncmp(c, name, 15) == 0;
}

/* True when `name` names p, by argv[0]'s base name or by comm. */
static bool name_matches(const char *name, const struct proc_info *p)
{
	return name_is(name, argv0_base(p), false) || name_is(name, p->comm, true);
}

/* The first entry of list that names p: by argv[0]'s base name first, which is whole, then by the
 * 15 bytes of comm (nvidia-cuda-mps-server and -control share theirs). */
static const char *match_list(const char *const *list, size_t n, const struct proc_info *p)
{
	for (int by_comm = 0; by_comm < 2; by_comm++)
		for (size_t i = 0; i < n; i++)
			if (name_is(list[i], by_comm ? p->comm : argv0_base(p), by_comm))
				return list[i];
	return NULL;
}

const char *free_protected_name(const struct proc_info *p)
{
	return match_list(protected_names, sizeof protected_names / sizeof *protected_names, p);
}

/* True when --include names p (the protected entry, its command name or argv[0]'s base name). */
static bool included(const struct free_plan_opts *o, const struct proc_info *p, const char *entry)
{
	for (size_t i = 0; i < o->ninclude; i++)
		if (!strcmp(o->include[i], entry) || name_matches(o->include[i], p))
			return true;
	return false;
}

/* True when --include names p by its PID (the only way to signal a monitor or a process without
 * evidence: a name would match every nvidia-smi). */
static bool included_pid(const struct free_plan_opts *o, int pid)
{
	unsigned long long n;
	for (size_t i = 0; i < o->ninclude; i++)
		if (parse_uint(o->include[i], &n) && n == (unsigned long long)pid)
			return true;
	return false;
}

/* A shell that is not running a script or a -c command: the user's interactive (or login) shell,
 * whose job is everything typed into it, not only this one. Unreadable command line: assume so. */
static bool interactive_shell(const struct proc_info *p)
{
	if (!match_list(shell_names, sizeof shell_names / sizeof *shell_names, p))
		return false;
	if (!p->cmdline || !p->cmdline_len || p->cmdline[0] == '-')
		return true;
	size_t off = strlen(p->cmdline) + 1;
	while (off < p->cmdline_len) {
		const char *a = p->cmdline + off;
		if (a[0] != '-')
			return false;                      /* a script file */
		if (a[1] != '-' && strchr(a, 'c'))
			return false;                      /* -c, -ec, -lc: a command string */
		off += strlen(a) + 1;
	}
	return true;
}

const char *free_role_name(enum free_role r)
{
	switch (r) {
	case FREE_ROLE_HOLDER: return "holder";
	case FREE_ROLE_LAUNCHER: return "launcher";
	case FREE_ROLE_PEER: return "job_peer";
	case FREE_ROLE_OUTSIDE: return "outside_namespace";
	case FREE_ROLE_EXITED: return "exited";
	}
	return "unknown";
}

const char *free_skip_name(enum free_skip k)
{
	switch (k) {
	case FREE_SIGNAL: return "signal";
	case FREE_SKIP_PID1: return "pid1";
	case FREE_SKIP_SELF: return "self";
	case FREE_SKIP_KTHREAD: return "kernel_thread";
	case FREE_SKIP_PROTECTED: return "protected";
	case FREE_SKIP_OTHER_USER: return "other_user";
	case FREE_SKIP_SPILL: return "spill";
	case FREE_SKIP_OUTSIDE: return "outside_namespace";
	case FREE_SKIP_EXITED: return "exited";
	case FREE_SKIP_ZOMBIE: return "zombie";
	case FREE_SKIP_MONITOR: return "monitor";
	case FREE_SKIP_NO_EVIDENCE: return "no_evidence";
	}
	return "unknown";
}

char *free_gpu_label(const struct account_gpu *g)
{
	if (g->index >= 0)
		return xasprintf("GPU %d", g->index);
	return xasprintf("/dev/nvidia%d", g->minor);
}

/* ---------------------------------------------------------------- lookups */

static const struct holder *find_holder(const struct snapshot *s, int pid)
{
	for (size_t i = 0; i < s->scan.nholders; i++)
		if (s->scan.holders[i].info.pid == pid)
			return &s->scan.holders[i];
	return NULL;
}

static bool is_self(const struct snapshot *s, const struct free_plan_opts *o, int pid)
{
	if (pid == s->self_pid)
		return true;
	for (size_t i = 0; i < s->nself_ancestors; i++)
		if (s->self_ancestors[i] == pid)
			return true;
	for (size_t i = 0; i < o->nprotect; i++)
		if (o->protect[i] == pid)
			return true;
	return false;
}

/* Row kinds that mean the process uses the GPU's memory (or may: NVML could not say). A process
 * that only holds the node (DEVICE_ONLY) does not use it: CUDA opens every visible /dev/nvidiaN. */
static bool row_uses(enum account_kind k)
{
	return k == ACCOUNT_ATTRIBUTED || k == ACCOUNT_INHERITED || k == ACCOUNT_UNMATCHED || k == ACCOUNT_UNKNOWN;
}

/* The process's rows in the account: fills the selected GPUs it is on, its memory there, and the
 * first GPU not selected that it uses (-1 when none). Returns true when it has any row at all. */
static bool usage(const struct free_plan *pl, int pid, struct free_proc *fp, long *unsel)
{
	bool any = false;
	*unsel = -1;
	for (size_t g = 0; g < pl->acct.ngpus; g++) {
		const struct account_gpu *ag = &pl->acct.gpus[g];
		for (size_t r = 0; r < ag->nprocs; r++) {
			const struct account_proc *row = &ag->procs[r];
			if (!row->info || row->info->pid != pid)
				continue;
			any = true;
			if (!pl->sel[g]) {
				if (row_uses(row->kind) && *unsel < 0)
					*unsel = (long)g;
				continue;
			}
			if (fp) {
				fp->slots = xrealloc(fp->slots, (fp->nslots + 1) * sizeof *fp->slots);
				fp->slots[fp->nslots++] = (int)g;
				if (row->in_nvml) {
					fp->in_nvml = true;
					fp->host_pid = row->host_pid;
					if (row->used_known)
						fp->used_bytes += row->used_bytes;
					else
						fp->used_unknown = true;
				}
			}
		}
	}
	return any;
}

static bool holds_via_thread(const struct holder *h)
{
	for (size_t i = 0; h && i < h->nholds; i++)
		if (h->holds[i].means & HOLD_THREAD)
			return true;
	return false;
}

/* Whether p may be signalled; when not, *why says why and what would change it. Spill is judged
 * by the caller, which knows the GPUs. */
static enum free_skip judge(const struct snapshot *s, const struct free_plan_opts *o, const struct proc_info *p,
			    char **why)
{
	const char *name;
	if (p->pid == 1) {
		*why = xstrdup("PID 1 of this PID namespace (the init system, or a container's main process): never signalled");
		return FREE_SKIP_PID1;
	}
	if (is_self(s, o, p->pid)) {
		*why = xstrdup(p->pid == s->self_pid ? "gpuwho itself" : "an ancestor of gpuwho (its shell, terminal or session)");
		return FREE_SKIP_SELF;
	}
	if (p->kthread) {
		*why = xstrdup("a kernel thread: signals do not stop it");
		return FREE_SKIP_KTHREAD;
	}
	if ((name = free_protected_name(p)) && !included(o, p, name)) {
		*why = xasprintf("a system GPU service or display server (%s); add --include %s to signal it", name, name);
		return FREE_SKIP_PROTECTED;
	}
	if (p->state == 'Z' && p->nthreads <= 1 && !holds_via_thread(find_holder(s, p->pid))) {
		*why = xasprintf("a zombie: it has exited and holds nothing; only its parent (PID %d) can reap it", p->ppid);
		return FREE_SKIP_ZOMBIE;
	}
	if (p->uid != o->uid && !(o->uid == 0 && o->all_users)) {
		const char *u = p->user ? p->user : "?";
		if (o->uid != 0)
			*why = xasprintf("belongs to %s (uid %u): only root can signal it (as root, with --all-users)", u,
					 (unsigned)p->uid);
		else
			*why = xasprintf("belongs to %s (uid %u); add --all-users to signal other users' processes", u,
					 (unsigned)p->uid);
		return FREE_SKIP_OTHER_USER;
	}
	return FREE_SIGNAL;
}

/* A shell running a script or a -c command: it may be the job's launcher (`sh -c 'w1 & w2'`,
 * `bash run.sh`), but what started the shell is not the job: the walk stops above it. */
static bool is_shell(const struct proc_info *p)
{
	return match_list(shell_names, sizeof shell_names / sizeof *shell_names, p);
}

/* Why the walk up from a job's process stops at parent (NULL: the parent is part of the job). */
static const char *boundary(const struct snapshot *s, const struct free_plan_opts *o, const struct proc_info *parent,
			    uid_t job_uid)
{
	if (parent->pid <= 1)
		return "PID 1";
	if (is_self(s, o, parent->pid))
		return "gpuwho's ancestor";
	if (parent->kthread)
		return "a kernel thread";
	if (free_protected_name(parent))
		return "a system GPU service";
	if (parent->uid != job_uid)
		return "another user's process";
	if (match_list(boundary_names, sizeof boundary_names / sizeof *boundary_names, parent))
		return "a service, session or scheduler process";
	if (interactive_shell(parent))
		return "an interactive shell";
	if (!find_holder(s, parent->pid) && !is_shell(parent) &&
	    !match_list(launcher_names, sizeof launcher_names / sizeof *launcher_names, parent))
		return "not part of the job (it holds no GPU and is no launcher)";
	return NULL;
}

/* ---------------------------------------------------------------- building */

static long plan_find(const struct free_plan *pl, int pid)
{
	for (size_t i = 0; i < pl->nprocs; i++)
		if (pl->procs[i].pid == pid && pl->procs[i].info)
			return (long)i;
	return -1;
}

/* True when t is the node of a GPU the plan selected. */
static bool selected_node(const struct free_plan *pl, const struct target *t)
{
	for (size_t g = 0; g < pl->acct.ngpus; g++)
		if (pl->sel[g] && pl->acct.gpus[g].target == t)
			return true;
	return false;
}

static void add_evidence(struct free_proc *fp, char *line)
{
	strv_push(&fp->evidence, &fp->nevidence, line);
}

/* The kernel's evidence that p (a HOLDER or PEER) is part of a selected GPU's job, recorded in
 * fp->evidence and fp->held. Returns FREE_SIGNAL when it suffices; else FREE_SKIP_MONITOR or
 * FREE_SKIP_NO_EVIDENCE with *why. The rules (docs/free.md), from what an H200 (driver 580) shows:
 *  - a CUDA context is a mapping of the GPU's node together with /dev/nvidia-uvm held: a CUDA
 *    process (and an heir that inherited its files) maps /dev/nvidiaN and holds nvidia-uvm, while
 *    an NVML client holds both by fd and maps neither, and the MPS control daemon maps /dev/nvidiaN
 *    without nvidia-uvm;
 *  - a holder is a target when NVML lists it on a selected GPU and it holds that GPU's node, or it
 *    has a CUDA context on the node, or it holds the node and its process group or session is a
 *    PID NVML lists there that has exited (a forked heir keeps its parent's group);
 *  - a process holding the node with none of these is a monitor; a PID NVML names that holds no
 *    NVIDIA file has no evidence at all (NVML keeps naming an exited holder's PID, which the kernel
 *    may give to anyone);
 *  - a peer (reached through the job's parent chain) is a target with a CUDA context. */
static enum free_skip evidence(const struct free_plan *pl, const struct snapshot *s, const struct proc_info *p,
			       const struct holder *h, struct free_proc *fp, char **why)
{
	bool node = false, mapped = false, uvm = false, any = false, heir = false;
	char mb[32];
	for (size_t i = 0; h && i < h->nholds; i++) {
		const struct hold *hd = &h->holds[i];
		const struct target *t = &s->scan.targets[hd->target];
		any = true;
		bool is_node = selected_node(pl, t), is_uvm = t->kind && !strcmp(t->kind, "uvm");
		if (!is_node && !is_uvm)
			continue;
		node |= is_node;
		mapped |= is_node && (hd->means & HOLD_MMAP);
		uvm |= is_uvm;
		fp->held = xrealloc(fp->held, (fp->nheld + 1) * sizeof *fp->held);
		fp->held[fp->nheld++] = hd->target;
		add_evidence(fp, xasprintf("holds %s (%s%s%s%s)", t->path, hd->means & HOLD_FD ? "fd" : "",
					   (hd->means & HOLD_FD) && (hd->means & HOLD_MMAP) ? "+" : "",
					   hd->means & HOLD_MMAP ? "mmap" : "",
					   hd->means & HOLD_THREAD ? " through a live thread" : ""));
	}
	if (fp->in_nvml) {
		char *gl = free_gpu_label(&pl->acct.gpus[fp->slots[0]]);
		if (fp->used_unknown)
			add_evidence(fp, xasprintf("NVML lists it on %s (memory unknown)", gl));
		else
			add_evidence(fp, xasprintf("NVML lists it on %s with %s", gl, fmt_mib(mb, sizeof mb, fp->used_bytes)));
		free(gl);
	}
	/* Descent from an exited holder: its process group or session is that PID. */
	for (size_t g = 0; g < pl->acct.ngpus && (p->pgid > 0 || p->sid > 0); g++) {
		const struct account_gpu *ag = &pl->acct.gpus[g];
		for (size_t r = 0; pl->sel[g] && r < ag->nprocs; r++) {
			const struct account_proc *row = &ag->procs[r];
			if (row->kind != ACCOUNT_EXITED || row->pid == p->pid)
				continue;
			if (row->pid == p->pgid)
				add_evidence(fp, xasprintf("pgid %d: the process group of PID %d, which NVML lists and which "
							   "has exited", p->pgid, row->pid));
			else if (row->pid == p->sid)
				add_evidence(fp, xasprintf("sid %d: the session of PID %d, which NVML lists and which has "
							   "exited", p->sid, row->pid));
			else
				continue;
			heir = true;
		}
	}
	if (!any) {
		*why = fp->in_nvml ? xasprintf("NVML lists PID %d, but it holds no NVIDIA device file: NVML can go on naming "
					       "an exited holder's PID, which the kernel may have given to this process; "
					       "add --include %d to signal it anyway", p->pid, p->pid)
				   : xasprintf("holds no NVIDIA device file; add --include %d to signal it anyway", p->pid);
		return FREE_SKIP_NO_EVIDENCE;
	}
	bool cuda = mapped && uvm;
	if (cuda)
		add_evidence(fp, xstrdup("a CUDA context: it maps the GPU's device file and holds /dev/nvidia-uvm"));
	if (fp->role == FREE_ROLE_PEER ? cuda : (fp->in_nvml && node) || (node && (cuda || heir)))
		return FREE_SIGNAL;
	if (node || fp->role == FREE_ROLE_PEER) {
		*why = xasprintf("holds the GPU's device files without a CUDA context (a mapping of the GPU's device file "
				 "with /dev/nvidia-uvm) and NVML lists no memory for it: a monitoring client (nvidia-smi, "
				 "nvitop, an exporter); add --include %d to signal it anyway", p->pid);
		return FREE_SKIP_MONITOR;
	}
	*why = xasprintf("holds NVIDIA control files but no node of a selected GPU and no CUDA context; add --include "
			 "%d to signal it anyway", p->pid);
	return FREE_SKIP_NO_EVIDENCE;
}

/* Adds p to the plan as a member of a job: a HOLDER when it is on a selected GPU, a PEER when it
 * holds other NVIDIA nodes, else a LAUNCHER (reached from `via`). Judges it, spill included. */
static size_t add_member(struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o,
			 const struct proc_info *p, int via)
{
	size_t cap = pl->nprocs;
	xgrow(&pl->procs, &cap, pl->nprocs + 1, sizeof *pl->procs);
	size_t k = pl->nprocs++;
	struct free_proc *fp = &pl->procs[k];
	memset(fp, 0, sizeof *fp);
	fp->pid = p->pid;
	fp->host_pid = s->host_pidns ? p->pid : -1;
	fp->info = p;
	fp->job_root = p->pid;
	fp->stopped = p->state == 'T';
	fp->stuck = p->state == 'D' || p->driver_wait;
	long unsel;
	bool rows = usage(pl, p->pid, fp, &unsel);
	const struct holder *h = find_holder(s, p->pid);
	if (fp->nslots) {
		fp->role = FREE_ROLE_HOLDER;
		char *gl = free_gpu_label(&pl->acct.gpus[fp->slots[0]]);
		fp->why = fp->nslots > 1 ? xasprintf("on %s and %zu more selected GPU%s", gl, fp->nslots - 1,
						     fp->nslots > 2 ? "s" : "")
					 : xasprintf("on %s", gl);
		free(gl);
	} else if (rows || h) {
		fp->role = FREE_ROLE_PEER;
		fp->why = xstrdup("in the same job, holds NVIDIA device files");
	} else {
		fp->role = FREE_ROLE_LAUNCHER;
		fp->via = via;
		fp->why = xasprintf("launcher: an ancestor of PID %d", via);
		add_evidence(fp, xasprintf("an ancestor of PID %d through the parent PIDs (/proc/PID/stat)", via));
	}
	char *ev_why = NULL;
	enum free_skip ev = fp->role == FREE_ROLE_LAUNCHER ? FREE_SIGNAL : evidence(pl, s, p, h, fp, &ev_why);
	fp->skip = judge(s, o, p, &fp->skip_why);
	if (fp->skip == FREE_SIGNAL && ev != FREE_SIGNAL && !included_pid(o, p->pid)) {
		fp->skip = ev;
		fp->skip_why = ev_why;
		ev_why = NULL;
	}
	free(ev_why);
	if (fp->skip == FREE_SIGNAL && unsel >= 0 && !o->spill) {
		char *gl = free_gpu_label(&pl->acct.gpus[unsel]);
		fp->skip = FREE_SKIP_SPILL;
		fp->skip_why = xasprintf("also uses %s, which was not selected; add --spill to signal it anyway", gl);
		free(gl);
	}
	return k;
}

/* Walks up from the member at index k, adding its ancestors to the job until a boundary or a
 * process already in the plan; sets job_root along the chain. */
static void walk_up(struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o, size_t k)
{
	size_t chain[64];
	size_t n = 0;
	chain[n++] = k;
	int root = -1;
	uid_t uid = pl->procs[k].info->uid;
	int origin = pl->procs[k].pid;
	for (;;) {
		const struct proc_info *cur = pl->procs[chain[n - 1]].info;
		const struct proc_info *parent = cur->ppid > 0 ? snapshot_find_proc(s, cur->ppid) : NULL;
		if (!parent || n == sizeof chain / sizeof *chain || boundary(s, o, parent, uid))
			break;
		long have = plan_find(pl, parent->pid);
		if (have >= 0) {
			root = pl->procs[have].job_root;
			break;
		}
		chain[n++] = add_member(pl, s, o, parent, origin);
		if (is_shell(parent))
			break;
	}
	if (root < 0)
		root = pl->procs[chain[n - 1]].pid;
	for (size_t i = 0; i < n; i++)
		pl->procs[chain[i]].job_root = root;
}

/* True when the walk up from p reaches a member of the plan (before any boundary). */
static bool reaches_job(const struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o,
			const struct proc_info *p)
{
	const struct proc_info *cur = p;
	for (int depth = 0; depth < 64; depth++) {
		const struct proc_info *parent = cur->ppid > 0 ? snapshot_find_proc(s, cur->ppid) : NULL;
		if (!parent || boundary(s, o, parent, p->uid))
			return false;
		long have = plan_find(pl, parent->pid);
		if (have >= 0)
			return pl->procs[have].role <= FREE_ROLE_PEER &&
			       (pl->procs[have].skip == FREE_SIGNAL || pl->procs[have].skip == FREE_SKIP_SPILL);
		cur = parent;
	}
	return false;
}

/* The job root of the first plan member above p (before any boundary), or -1. */
static int job_above(const struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o,
		     const struct proc_info *p)
{
	const struct proc_info *cur = p;
	for (int depth = 0; depth < 64; depth++) {
		const struct proc_info *parent = cur->ppid > 0 ? snapshot_find_proc(s, cur->ppid) : NULL;
		if (!parent || boundary(s, o, parent, p->uid))
			return -1;
		long have = plan_find(pl, parent->pid);
		if (have >= 0)
			return pl->procs[have].job_root;
		cur = parent;
	}
	return -1;
}

/* A job with a member on a GPU not selected: its launchers would take that GPU's work down too. */
static void spill_launchers(struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o)
{
	for (size_t i = 0; i < pl->nprocs; i++) {
		struct free_proc *sp = &pl->procs[i];
		if (sp->skip != FREE_SKIP_SPILL)
			continue;
		/* an excluded holder was not walked up from: find the job it belongs to */
		if (sp->job_root == sp->pid && sp->info) {
			int root = job_above(pl, s, o, sp->info);
			if (root > 0)
				sp->job_root = root;
		}
		for (size_t k = 0; k < pl->nprocs; k++) {
			struct free_proc *l = &pl->procs[k];
			if (l->role != FREE_ROLE_LAUNCHER || l->skip != FREE_SIGNAL || l->job_root != sp->job_root)
				continue;
			l->skip = FREE_SKIP_SPILL;
			l->skip_why = xasprintf("its job (root PID %d) also uses a GPU not selected, through PID %d; "
						"add --spill to signal it anyway", sp->job_root, sp->pid);
		}
	}
}

/* NVML rows on selected GPUs that no process of this /proc answers for. */
static void add_unseen_rows(struct free_plan *pl, const struct snapshot *s)
{
	for (size_t g = 0; g < pl->acct.ngpus; g++) {
		if (!pl->sel[g])
			continue;
		const struct account_gpu *ag = &pl->acct.gpus[g];
		for (size_t r = 0; r < ag->nprocs; r++) {
			const struct account_proc *row = &ag->procs[r];
			if (row->kind != ACCOUNT_OUTSIDE && row->kind != ACCOUNT_EXITED)
				continue;
			size_t cap = pl->nprocs;
			xgrow(&pl->procs, &cap, pl->nprocs + 1, sizeof *pl->procs);
			struct free_proc *fp = &pl->procs[pl->nprocs++];
			memset(fp, 0, sizeof *fp);
			fp->pid = row->pid;
			fp->host_pid = row->host_pid;
			fp->job_root = row->pid;
			fp->in_nvml = true;
			fp->used_bytes = row->used_known ? row->used_bytes : 0;
			fp->used_unknown = !row->used_known;
			fp->slots = xmalloc(sizeof *fp->slots);
			fp->slots[0] = (int)g;
			fp->nslots = 1;
			char *gl = free_gpu_label(ag);
			if (row->kind == ACCOUNT_OUTSIDE) {
				fp->role = FREE_ROLE_OUTSIDE;
				fp->skip = FREE_SKIP_OUTSIDE;
				fp->why = xasprintf("NVML lists host PID %d on %s", row->pid, gl);
				fp->skip_why = xasprintf("not in this PID namespace (%s): it cannot be signalled from here; "
							 "run gpuwho free on the host", s->host_pidns ? "host" : "a container's");
			} else {
				fp->role = FREE_ROLE_EXITED;
				fp->skip = FREE_SKIP_EXITED;
				fp->why = xasprintf("NVML lists PID %d on %s", row->pid, gl);
				fp->skip_why = xstrdup("has exited: its memory lives on in the processes that inherited its "
						       "device files (the heirs, signalled when they may be)");
			}
			free(gl);
		}
	}
}

static int cmp_proc(const void *a, const void *b)
{
	const struct free_proc *x = a, *y = b;
	bool sx = x->skip == FREE_SIGNAL, sy = y->skip == FREE_SIGNAL;
	if (sx != sy)
		return sx ? -1 : 1;
	if (x->role != y->role)
		return x->role < y->role ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Per selected GPU: what should come back, and who stays. */
static void tally_gpus(struct free_plan *pl)
{
	for (size_t i = 0; i < pl->ngpus; i++) {
		struct free_gpu *fg = &pl->gpus[i];
		const struct account_gpu *ag = &pl->acct.gpus[fg->slot];
		bool heirs_all = true, heirs_any = false;
		unsigned long long exited = 0;
		for (size_t r = 0; r < ag->nprocs; r++) {
			const struct account_proc *row = &ag->procs[r];
			long k = row->info ? plan_find(pl, row->info->pid) : -1;
			bool sig = k >= 0 && pl->procs[k].skip == FREE_SIGNAL;
			if (row->kind == ACCOUNT_EXITED) {
				if (row->used_known)
					exited += row->used_bytes;
				else
					fg->expect_partial = true;
				continue;
			}
			if (row->kind == ACCOUNT_INHERITED) {
				heirs_any = true;
				heirs_all = heirs_all && sig;
			}
			if (row->kind == ACCOUNT_OUTSIDE) {
				fg->nkept++;
				fg->expect_partial = true;
				continue;
			}
			if (sig)
				fg->nsignal++;
			else
				fg->nkept++;
			if (!row->in_nvml)
				continue;
			if (!sig)
				fg->expect_partial = true;
			else if (row->used_known)
				fg->expect_back += row->used_bytes;
			else
				fg->expect_partial = true;
		}
		if (exited && heirs_any && heirs_all)
			fg->expect_back += exited;
		else if (exited)
			fg->expect_partial = true;
		if (ag->hidden_outside)
			fg->expect_partial = true;
		/* NVML's sum can exceed used when the two were read moments apart */
		if (ag->mem_known && fg->expect_back > ag->used_bytes)
			fg->expect_back = ag->used_bytes;
	}
}

static void plan_shm(struct free_plan *pl, const struct snapshot *s, const struct free_plan_opts *o)
{
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *seg = &s->shm[i];
		if (seg->creator_pid <= 0 || seg->creator_alive)
			continue;
		xgrow(&pl->shm, &(size_t){pl->nshm}, pl->nshm + 1, sizeof *pl->shm);
		struct free_shm *fs = &pl->shm[pl->nshm++];
		fs->seg = seg;
		/* In a child PID namespace the creator and the holders may live outside it (a shared
		 * /dev/shm, --ipc=host): "dead and unheld" cannot be known from here. */
		if (!s->host_pidns)
			fs->why = xasprintf("kept: from inside a PID namespace its creator PID %d and its holders may be "
					    "out of sight; run gpuwho free --shm on the host", seg->creator_pid);
		else if (seg->uid != o->uid && !(o->uid == 0 && o->all_users))
			fs->why = xasprintf("kept: it belongs to uid %u (as root, --all-users removes it)", (unsigned)seg->uid);
		else if (seg->nholders)
			fs->why = xasprintf("its creator PID %d has exited, but PID %d still holds it: kept",
					    seg->creator_pid, seg->holders[0]);
		else {
			fs->remove = true;
			fs->why = xasprintf("its creator PID %d has exited and no process holds it", seg->creator_pid);
		}
	}
}

/* A running MPS control daemon (by its command line: the server's comm is the same 15 bytes). */
static int find_mps_control(const struct snapshot *s)
{
	for (size_t i = 0; i < s->scan.nholders + s->nothers; i++) {
		const struct proc_info *p = i < s->scan.nholders ? &s->scan.holders[i].info : &s->others[i - s->scan.nholders];
		const char *a0 = argv0_base(p);
		if (a0 && !strcmp(a0, "nvidia-cuda-mps-control") && p->state != 'Z')
			return p->pid;
	}
	return 0;
}

/* A process group whose leader has exited (the kernel's sign of a dead launcher) with members in
 * the kill set and members on GPUs not selected: those are left alone, and the note says how to end
 * the whole family (a TP-4 launch across GPUs 0-3 and `free 2`). */
static void note_family_elsewhere(struct free_plan *pl, const struct snapshot *s)
{
	int *seen = NULL;
	size_t nseen = 0;
	for (size_t i = 0; i < pl->nsignal; i++) {
		const struct proc_info *p = pl->procs[i].info;
		int g = p ? p->pgid : 0;
		bool done = false;
		for (size_t k = 0; k < nseen && !done; k++)
			done = seen[k] == g;
		if (g <= 0 || done || g == p->pid || snapshot_find_proc(s, g))
			continue;
		seen = xrealloc(seen, (nseen + 1) * sizeof *seen);
		seen[nseen++] = g;
		char *all = NULL, *left = NULL;
		unsigned nleft = 0, ngleft = 0;
		for (size_t gi = 0; gi < pl->acct.ngpus; gi++) {
			const struct account_gpu *ag = &pl->acct.gpus[gi];
			bool on = false, outside = false;
			for (size_t r = 0; r < ag->nprocs; r++) {
				const struct account_proc *row = &ag->procs[r];
				if (!row->info || row->info->pgid != g)
					continue;
				on = true;
				if (plan_find(pl, row->pid) < 0) {
					outside = true;
					nleft++;
				}
			}
			if (!on)
				continue;
			char *sel = account_gpu_selector(ag);
			char *a2 = all ? xasprintf("%s,%s", all, sel) : xstrdup(sel);
			free(all);
			all = a2;
			if (outside) {
				ngleft++;
				char *l2 = left ? xasprintf("%s, %s", left, sel) : xstrdup(sel);
				free(left);
				left = l2;
			}
			free(sel);
		}
		if (left)
			strv_push(&pl->notes, &pl->nnotes,
				  xasprintf("%u more process%s of process group %d, whose leader has exited (the same orphaned "
					    "family), hold%s GPU%s %s and %s left alone: free acts on the GPUs it is given. To "
					    "end the whole family: `gpuwho free %s`", nleft, nleft == 1 ? "" : "es", g,
					    nleft == 1 ? "s" : "", ngleft == 1 ? "" : "s", left, nleft == 1 ? "is" : "are", all));
		free(all);
		free(left);
	}
	free(seen);
}

static void plan_notes(struct free_plan *pl, const struct snapshot *s)
{
	note_family_elsewhere(pl, s);
	if (!pl->acct.nvml_ok)
		strv_push(&pl->notes, &pl->nnotes,
			  xasprintf("NVML did not answer (%s): GPU memory is unknown, and the plan rests on the holders of "
				    "/dev/nvidiaN alone", s->nvml_asked ? (s->nvml.error ? s->nvml.error : "no reason given")
									: "--no-nvml"));
	size_t unseen = s->scan.ndenied + s->scan.ntimed_out;
	if (unseen)
		strv_push(&pl->notes, &pl->nnotes,
			  xasprintf("%zu process%s could not be inspected (permission, or a read that did not finish in "
				    "time): %s may hold a selected GPU and is not in this plan", unseen,
				    unseen == 1 ? "" : "es", unseen == 1 ? "it" : "one of them"));
	if (!s->host_pidns)
		strv_push(&pl->notes, &pl->nnotes,
			  xstrdup("this /proc is a child PID namespace's (a container): processes outside it cannot be "
				  "signalled from here"));
	for (size_t i = 0; i < pl->ngpus; i++) {
		const struct account_gpu *ag = &pl->acct.gpus[pl->gpus[i].slot];
		if (!ag->hidden_outside)
			continue;
		char *gl = free_gpu_label(ag);
		strv_push(&pl->notes, &pl->nnotes,
			  xasprintf("%s: %llu MiB are held by processes outside this PID namespace that NVML does not "
				    "list here; run gpuwho free on the host", gl, ag->unattributed_bytes / MIB));
		free(gl);
	}
}

int free_plan_build(const struct snapshot *s, const char *const *sels, size_t nsel, const struct free_plan_opts *o,
		    struct free_plan *out, char **err)
{
	memset(out, 0, sizeof *out);
	*err = NULL;
	out->snap = s;
	bool host = s->host_pidns;
	account_from_snapshot(s, &out->acct);
	out->sel = xcalloc(out->acct.ngpus + 1, sizeof *out->sel);
	for (size_t i = 0; i < nsel; i++)
		if (account_select_list(&out->acct, sels[i], out->sel, err) < 0)
			return -1;
	for (size_t g = 0; g < out->acct.ngpus; g++) {
		if (!out->sel[g])
			continue;
		size_t cap = out->ngpus;
		xgrow(&out->gpus, &cap, out->ngpus + 1, sizeof *out->gpus);
		out->gpus[out->ngpus++] = (struct free_gpu){.slot = g};
	}

	/* The holders of the selected GPUs (by pid, so each is judged once), then their jobs. */
	for (size_t g = 0; g < out->acct.ngpus; g++) {
		if (!out->sel[g])
			continue;
		const struct account_gpu *ag = &out->acct.gpus[g];
		for (size_t r = 0; r < ag->nprocs; r++) {
			const struct account_proc *row = &ag->procs[r];
			if (!row->info || plan_find(out, row->info->pid) >= 0)
				continue;
			size_t k = add_member(out, s, o, row->info, 0);
			if (out->procs[k].skip == FREE_SIGNAL)
				walk_up(out, s, o, k);
		}
	}
	/* The jobs' other processes that hold NVIDIA nodes (control nodes, other GPUs). */
	const struct proc_info **cands = xcalloc(s->scan.nholders + s->nothers + 1, sizeof *cands);
	size_t ncand = 0;
	for (size_t i = 0; i < s->scan.nholders; i++)
		cands[ncand++] = &s->scan.holders[i].info;
	for (size_t i = 0; i < s->nothers; i++) {
		long unsel;
		if (host && usage(out, s->others[i].pid, NULL, &unsel))
			cands[ncand++] = &s->others[i];
	}
	for (size_t i = 0; i < ncand; i++) {
		if (plan_find(out, cands[i]->pid) >= 0 || !reaches_job(out, s, o, cands[i]))
			continue;
		size_t k = add_member(out, s, o, cands[i], 0);
		walk_up(out, s, o, k);
	}
	free(cands);
	spill_launchers(out, s, o);
	add_unseen_rows(out, s);

	if (out->nprocs > 1)
		qsort(out->procs, out->nprocs, sizeof *out->procs, cmp_proc);
	while (out->nsignal < out->nprocs && out->procs[out->nsignal].skip == FREE_SIGNAL)
		out->nsignal++;
	tally_gpus(out);
	if (o->shm)
		plan_shm(out, s, o);
	out->mps_control = find_mps_control(s);
	plan_notes(out, s);
	return 0;
}

void free_plan_release(struct free_plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nprocs; i++) {
		free(p->procs[i].why);
		free(p->procs[i].skip_why);
		free(p->procs[i].slots);
		free(p->procs[i].held);
		for (size_t k = 0; k < p->procs[i].nevidence; k++)
			free(p->procs[i].evidence[k]);
		free(p->procs[i].evidence);
	}
	free(p->procs);
	for (size_t i = 0; i < p->nshm; i++)
		free(p->shm[i].why);
	free(p->shm);
	for (size_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	free(p->notes);
	free(p->gpus);
	free(p->sel);
	account_free(&p->acct);
	memset(p, 0, sizeof *p);
}
