/* snapshot/collect: one look at the live host — the holders of every NVIDIA node (proc/holders),
 * NVML, the processes around the holders, /dev/shm, /proc/meminfo — into a struct snapshot. The
 * only part of the snapshot module that reads the live system. */
#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "sys/devices.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ANCESTOR_ROUNDS 256      /* process trees deeper than this are not real */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int cmp_info(const void *a, const void *b)
{
	return cmp_int(&((const struct proc_info *)a)->pid, &((const struct proc_info *)b)->pid);
}

static bool pid_in(const int *v, size_t n, int pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

static void push_pid(int **v, size_t *n, size_t *cap, int pid)
{
	xgrow(v, cap, *n + 1, sizeof **v);
	(*v)[(*n)++] = pid;
}

/* Splits the one holder scan over NVIDIA nodes [0, nnv) and /dev/shm segments [nnv, ntargets) into
 * s->scan (the nodes only) and each segment's holder PIDs. Holders of segments only are returned in
 * *shm_only (moved out, for `others`). */
static void split_scan(struct snapshot *s, struct holders_scan *all, size_t nnv, struct proc_info **shm_only,
		       size_t *nshm_only)
{
	size_t cap_only = 0;
	*shm_only = NULL;
	*nshm_only = 0;
	size_t kept = 0;
	for (size_t i = 0; i < all->nholders; i++) {
		struct holder *h = &all->holders[i];
		size_t nk = 0;
		for (size_t k = 0; k < h->nholds; k++) {
			struct hold *d = &h->holds[k];
			if (d->target >= nnv) {
				struct shm_segment *seg = &s->shm[d->target - nnv];
				seg->holders = xrealloc(seg->holders, (seg->nholders + 1) * sizeof *seg->holders);
				seg->holders[seg->nholders++] = h->info.pid;
				free(d->copy_path);
			} else {
				h->holds[nk++] = *d;
			}
		}
		h->nholds = nk;
		if (nk) {
			all->holders[kept++] = *h;
		} else {
			xgrow(shm_only, &cap_only, *nshm_only + 1, sizeof **shm_only);
			(*shm_only)[(*nshm_only)++] = h->info;
			free(h->holds);
		}
	}
	all->nholders = kept;
	size_t km = 0;
	for (size_t i = 0; i < all->nmounts; i++) {
		if (all->mounts[i].target < nnv) {
			all->mounts[km++] = all->mounts[i];
		} else {
			free(all->mounts[i].mount_point);
			free(all->mounts[i].fstype);
			free(all->mounts[i].source);
			free(all->mounts[i].root);
		}
	}
	all->nmounts = km;
	for (size_t i = nnv; i < all->ntargets; i++)
		target_free(&all->targets[i]);
	all->ntargets = nnv;
	s->scan = *all;
	memset(all, 0, sizeof *all);
}

/* Fills s->others: NVML-listed PIDs holding no node (host PID namespace only: elsewhere NVML's PIDs
 * are not this /proc's), the holders of /dev/shm segments, and every ancestor of all of these and of
 * the holders, read in rounds (each round's parents are the next round's PIDs). */
static void collect_others(struct snapshot *s, const struct holders_opts *ho, struct proc_info *shm_only,
			   size_t nshm_only)
{
	int *known = NULL, *want = NULL;
	size_t nknown = 0, capk = 0, nwant = 0, capw = 0;
	struct proc_info *others = NULL;
	size_t nothers = 0, capo = 0;
	for (size_t i = 0; i < s->scan.nholders; i++)
		push_pid(&known, &nknown, &capk, s->scan.holders[i].info.pid);
	for (size_t i = 0; i < nshm_only; i++) {
		push_pid(&known, &nknown, &capk, shm_only[i].pid);
		xgrow(&others, &capo, nothers + 1, sizeof *others);
		others[nothers++] = shm_only[i];
	}
	free(shm_only);
	if (s->host_pidns && s->nvml.loaded)
		for (size_t g = 0; g < s->nvml.ngpus; g++)
			for (size_t i = 0; i < s->nvml.gpus[g].nprocs; i++) {
				int pid = (int)s->nvml.gpus[g].procs[i].pid;
				if (pid > 0 && pid < SNAPSHOT_PID_MAX && !pid_in(known, nknown, pid) && !pid_in(want, nwant, pid))
					push_pid(&want, &nwant, &capw, pid);
			}
	/* The holders' parents, and the leaders of their process groups: a group whose leader has
	 * exited is the kernel's evidence of a dead launcher (diagnose/classify.c). */
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *h = &s->scan.holders[i].info;
		int want_pids[2] = {h->ppid, h->pgid};
		for (int k = 0; k < 2; k++) {
			int pp = want_pids[k];
			if (pp > 0 && pp < SNAPSHOT_PID_MAX && !pid_in(known, nknown, pp) && !pid_in(want, nwant, pp))
				push_pid(&want, &nwant, &capw, pp);
		}
	}
	for (size_t i = 0; i < nothers; i++) {
		int pp = others[i].ppid;
		if (pp > 0 && !pid_in(known, nknown, pp) && !pid_in(want, nwant, pp))
			push_pid(&want, &nwant, &capw, pp);
	}
	for (int round = 0; nwant && round < MAX_ANCESTOR_ROUNDS; round++) {
		struct proc_info *got;
		size_t ngot;
		for (size_t i = 0; i < nwant; i++)
			push_pid(&known, &nknown, &capk, want[i]);
		holders_read_procs(ho, want, nwant, &got, &ngot, &s->notes, &s->nnotes);
		nwant = 0;
		for (size_t i = 0; i < ngot; i++) {
			int pp = got[i].ppid;
			if (pp > 0 && !pid_in(known, nknown, pp) && !pid_in(want, nwant, pp))
				push_pid(&want, &nwant, &capw, pp);
			xgrow(&others, &capo, nothers + 1, sizeof *others);
			others[nothers++] = got[i];
		}
		free(got);
	}
	if (nothers)
		qsort(others, nothers, sizeof *others, cmp_info);
	s->others = others;
	s->nothers = nothers;
	free(known);
	free(want);
}

/* Completes one process's owner: the Slurm job from SLURM_JOB_ID when its cgroup named none, the
 * pod's namespace and name, docker's name for its container. */
static void owner_complete(struct proc_info *p)
{
	owner_from_slurm_env(p->env_value, &p->owner);
	free(p->env_value);   /* read for the owner only; not part of the snapshot */
	p->env_value = NULL;
	p->env_err = 0;
	if (p->container.pod_uid && !p->owner.pod_name)
		owner_lookup_pod(owner_pods_dir(), p->container.pod_uid, &p->owner.pod_namespace, &p->owner.pod_name);
	if (p->container.id && !p->container.pod_uid && p->container.runtime &&
	    !strcmp(p->container.runtime, "docker") && !p->owner.container_name)
		owner_lookup_docker(owner_docker_dir(), p->container.id, &p->owner.container_name);
}

/* Owners of the holders and the processes around them (owner_complete). */
static void collect_owners(struct snapshot *s)
{
	for (size_t i = 0; i < s->scan.nholders; i++)
		owner_complete(&s->scan.holders[i].info);
	for (size_t i = 0; i < s->nothers; i++)
		owner_complete(&s->others[i]);
}

/* gpuwho's own ancestors, from stat alone (cannot block). */
static void collect_self(struct snapshot *s, int procfd)
{
	s->self_pid = (int)getpid();
	s->self_ancestors = proc_ancestors(procfd, s->self_pid, &s->nself_ancestors);
}

void snapshot_resample(struct snapshot *s, const char *nvml_path, double delay_s)
{
	if (!(delay_s > 0) || !s->nvml.loaded || !s->nvml.ngpus || s->resample.ngpus)
		return;
	double elapsed = (double)(now_ns() - s->nvml_mono_ns) / 1e9;
	if (elapsed < delay_s) {
		double left = delay_s - elapsed;
		struct timespec ts = {.tv_sec = (time_t)left, .tv_nsec = (long)((left - (double)(time_t)left) * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	struct nvml_info again;
	uint64_t t = now_ns();
	nvml_collect(nvml_path, &again);
	struct gpu_resample *r = &s->resample;
	r->delay_s = (double)(t - s->nvml_mono_ns) / 1e9;
	r->ngpus = s->nvml.ngpus;
	r->used_bytes = xcalloc(r->ngpus, sizeof *r->used_bytes);
	r->used_ok = xcalloc(r->ngpus, sizeof *r->used_ok);
	for (size_t i = 0; i < r->ngpus; i++)
		for (size_t k = 0; k < again.ngpus; k++)
			if (again.gpus[k].index == s->nvml.gpus[i].index && again.gpus[k].handle_rc == NVML_OK &&
			    again.gpus[k].mem_rc == NVML_OK) {
				r->used_bytes[i] = again.gpus[k].mem_used;
				r->used_ok[i] = true;
			}
	nvml_info_free(&again);
}

int snapshot_collect(const struct snapshot_opts *o, struct snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->schema_version = SNAPSHOT_SCHEMA_VERSION;
	s->gpuwho_version = xstrdup(GPUWHO_VERSION);
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) == 0)
		s->hostname = xstrdup(host);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	s->taken_at = (double)now.tv_sec + (double)now.tv_nsec / 1e9;

	const char *proc_root = holders_proc_root();
	/* SLURM_JOB_ID names the job of a process that Slurm did not put in a job cgroup
	 * (proctrack/linuxproc, or a process that escaped it): read under the engine's bound. */
	struct holders_opts ho = {.proc_root = proc_root, .timeout_ms = o ? o->timeout_ms : 0, .waits = true,
				  .env_name = "SLURM_JOB_ID"};
	int procfd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s->host_pidns = procfd >= 0 && proc_pidns_is_host(procfd);

	/* Lazy: NVML first, so that the fd walk can be limited to the PIDs it lists. Only where NVML's
	 * PIDs are this /proc's (the host's PID namespace) and NVML answered; else the full walk. */
	bool nvml_first = o && o->lazy && !o->no_nvml && s->host_pidns;
	if (nvml_first) {
		s->nvml_asked = true;
		s->nvml_mono_ns = now_ns();
		nvml_collect(o->nvml_path, &s->nvml);
		if (!s->nvml.loaded)
			strv_push(&s->notes, &s->nnotes, xstrdup("lazy collection fell back to the full walk: NVML did not answer"));
	}
	bool lazy = nvml_first && s->nvml.loaded;
	int *nvpids = NULL;
	size_t nnvpids = 0, capnv = 0;
	if (lazy) {
		for (size_t g = 0; g < s->nvml.ngpus; g++)
			for (size_t i = 0; i < s->nvml.gpus[g].nprocs; i++) {
				int pid = (int)s->nvml.gpus[g].procs[i].pid;
				if (pid > 0 && pid < SNAPSHOT_PID_MAX && !pid_in(nvpids, nnvpids, pid))
					push_pid(&nvpids, &nnvpids, &capnv, pid);
			}
		if (nnvpids > 1)
			qsort(nvpids, nnvpids, sizeof *nvpids, cmp_int);
		/* A non-NULL pids with npids 0 scans nobody: a healthy idle node costs no fd walk. */
		if (!nvpids)
			nvpids = xmalloc(sizeof *nvpids);
	}

	/* One pass over /proc for the NVIDIA nodes and the /dev/shm segments together. The lazy
	 * collection leaves /dev/shm out: segments are judged only by who holds them, which needs
	 * every process's maps. */
	size_t nnv = 0, nsh = 0;
	char *note = NULL;
	struct target *nv = devices_discover(proc_root, holders_dev_root(), &nnv, &note);
	struct target *sh = NULL;
	int r = 0;
	if (!lazy) {
		s->shm_dir = xstrdup(shm_root());
		r = shm_list(shm_root(), &s->shm, &s->nshm, &sh);
		if (r < 0)
			s->shm_error = xasprintf("cannot list %s: %s", shm_root(), strerror(-r));
	}
	nsh = s->nshm;
	struct target *all = xcalloc(nnv + nsh ? nnv + nsh : 1, sizeof *all);
	if (nnv)
		memcpy(all, nv, nnv * sizeof *all);
	if (nsh)
		memcpy(all + nnv, sh, nsh * sizeof *all);
	free(nv);
	free(sh);
	struct holders_scan full;
	struct holders_opts sho = ho;
	if (lazy) {
		sho.pids = nvpids;
		sho.npids = nnvpids;
	}
	/* One time bound for every round of reads below (holders, then the processes around them):
	 * stuck processes cost it once, not once per round. Set here, after a lazy collection's NVML
	 * (which takes seconds per GPU without persistence mode), so that NVML does not eat it. */
	ho.deadline_ns = now_ns() + (uint64_t)(ho.timeout_ms ? ho.timeout_ms : HOLDERS_DEFAULT_TIMEOUT_MS) * 1000000u;
	sho.deadline_ns = ho.deadline_ns;
	holders_scan(&sho, all, nnv + nsh, &full);
	free(nvpids);
	if (note)
		strv_push(&full.notes, &full.nnotes, note);
	if (lazy)
		strv_push(&full.notes, &full.nnotes,
			  xasprintf("lazy collection: only the %zu process%s NVML lists were looked at, not every process; "
				    "/dev/shm was not listed", nnvpids, nnvpids == 1 ? "" : "es"));
	struct proc_info *shm_only;
	size_t nshm_only;
	split_scan(s, &full, nnv, &shm_only, &nshm_only);
	for (size_t i = 0; i < s->nshm; i++) {
		struct shm_segment *seg = &s->shm[i];
		if (seg->nholders > 1)
			qsort(seg->holders, seg->nholders, sizeof *seg->holders, cmp_int);
		if (seg->creator_pid > 0 && procfd >= 0) {
			char name[32];
			snprintf(name, sizeof name, "%d", seg->creator_pid);
			seg->creator_alive = faccessat(procfd, name, F_OK, 0) == 0;
		}
	}

	if (!nvml_first) {
		s->nvml_mono_ns = now_ns();
		if (!o || !o->no_nvml) {
			s->nvml_asked = true;
			nvml_collect(o ? o->nvml_path : NULL, &s->nvml);
		}
	}
	if (o && s->nvml_asked)
		snapshot_resample(s, o->nvml_path, o->resample_s);
	collect_others(s, &ho, shm_only, nshm_only);
	collect_owners(s);

	char *mi = xasprintf("%s/meminfo", proc_root);
	r = meminfo_read(mi, &s->mem);
	if (r == 0)
		s->mem_ok = true;
	else
		strv_push(&s->notes, &s->nnotes, xasprintf("cannot read %s: %s", mi, strerror(-r)));
	free(mi);
	collect_self(s, procfd);
	if (procfd >= 0)
		close(procfd);
	return 0;
}
