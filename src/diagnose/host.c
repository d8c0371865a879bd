/* diagnose/host: the host-wide verdicts — NVML, bind mounts, host memory, /dev/shm, zombies, what could not be inspected. */
#include "diagnose/internal.h"
#include "escape.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static bool str_eq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* A bind mount of a node from the same name in its source (/dev/nvidia0 from root /nvidia0), as
 * libnvidia-container makes them. */
static bool mount_own_node(const struct mount_hit *m)
{
	size_t lp = strlen(m->mount_point), lr = m->root ? strlen(m->root) : 0;
	return lr > 1 && lr <= lp && !strcmp(m->mount_point + lp - lr, m->root);
}

static void verdict_mounts(struct ctx *c)
{
	const struct holders_scan *sc = &c->s->scan;
	if (!sc->nmounts)
		return;
	char *more = sc->nmounts > 1 ? xasprintf(" and %zu more NVIDIA device nodes", sc->nmounts - 1) : xstrdup("");
	struct finding *f = diag_add_finding(c, "bind_mount_not_holder", DIAG_INFO, NULL,
					     "%s%s %s bind mount%s: fuser's \"kernel mount\" is the mount point, not a holder "
					     "of GPU memory", sc->mounts[0].mount_point, more, sc->nmounts > 1 ? "are" : "is a",
					     sc->nmounts > 1 ? "s" : "");
	free(more);
	/* The usual container: every node bind-mounted from the same devtmpfs, each from its own name
	 * there. Those are one line; any other mount gets its own. */
	bool *done = xcalloc(sc->nmounts + 1, sizeof *done);
	size_t lines = 0;
	for (size_t i = 0; i < sc->nmounts; i++) {
		if (done[i])
			continue;
		const struct mount_hit *m = &sc->mounts[i];
		if (lines++ >= DIAG_LIST_MAX) {
			diag_ev(f, "and more mount points");
			break;
		}
		char *names = xstrdup(m->mount_point);
		size_t same = 1;
		for (size_t j = i + 1; mount_own_node(m) && j < sc->nmounts; j++) {
			const struct mount_hit *o = &sc->mounts[j];
			if (done[j] || !mount_own_node(o) || !str_eq(m->fstype, o->fstype) || !str_eq(m->source, o->source))
				continue;
			done[j] = true;
			if (++same <= DIAG_LIST_MAX) {
				char *n = xasprintf("%s, %s", names, o->mount_point);
				free(names);
				names = n;
			}
		}
		char extra[48] = "";
		if (same > DIAG_LIST_MAX)
			snprintf(extra, sizeof extra, " and %zu more", same - DIAG_LIST_MAX);
		if (same > 1)
			diag_ev(f, "%s%s: %zu mount points, each of its own node (%s, source %s, root /NAME)", names, extra,
				same, m->fstype ? m->fstype : "?", m->source ? m->source : "?");
		else
			diag_ev(f, "%s: mount point (%s, source %s, root %s)", m->mount_point, m->fstype ? m->fstype : "?",
				m->source ? m->source : "?", m->root ? m->root : "?");
		free(names);
	}
	free(done);
	diag_ev(f, "fuser prints \"kernel mount\" when a mount point has the same device and inode as the file named "
		"(psmisc scan_mounts); libnvidia-container bind-mounts /dev/nvidia* into every GPU container; fuser -k "
		"skips these entries");
	diag_set_fix(f, "Nothing to do: a mount holds no GPU memory, and no signal or reset is needed for it. The other "
		     "findings name the real holders.");
}

static void verdict_shm(struct ctx *c)
{
	const struct snapshot *s = c->s;
	unsigned long long total = 0;
	size_t n = 0;
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		if (g->nholders == 0 && g->origin && !(g->creator_pid > 0 && g->creator_alive)) {
			total += g->bytes;
			n++;
		}
	}
	if (!n)
		return;
	char a[48];
	struct finding *f = diag_add_finding(c, "shm_orphans", total >= DIAG_SHM_ACTION_BYTES ? DIAG_ACTION : DIAG_INFO, NULL,
					     "/dev/shm: %zu segment%s nobody holds (%s) left by GPU processes that died — remove "
					     "them", n, n == 1 ? "" : "s", fmt_mib(a, sizeof a, total));
	char *args = xstrdup("");
	size_t shown = 0, nargs = 0;
	bool all_plain = true;
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		if (g->nholders || !g->origin || (g->creator_pid > 0 && g->creator_alive))
			continue;
		if (shown < DIAG_LIST_MAX) {
			char *creator = g->creator_pid > 0 ? xasprintf("; its creator PID %d is gone", g->creator_pid)
							   : xstrdup("");
			diag_ev(f, "%s/%s: %s in RAM, no process holds it by fd or mapping%s", s->shm_dir ? s->shm_dir : "/dev/shm", g->name,
				fmt_mib(a, sizeof a, g->bytes), creator);
			free(creator);
		}
		/* A name with control characters would reach the terminal escaped, and an rm of the
		 * escaped text would miss the file: such segments are left to gpuwho free --shm. */
		if (!escape_is_plain(g->name))
			all_plain = false;
		else if (nargs < 16) {
			char *path = xasprintf("%s/%s", s->shm_dir ? s->shm_dir : "/dev/shm", g->name);
			char *q = escape_shell(path);
			char *m = xasprintf("%s %s", args, q);
			free(path);
			free(q);
			free(args);
			args = m;
			nargs++;
		}
		shown++;
		if (g->creator_pid > 0)
			diag_add_pid(f, g->creator_pid);
	}
	if (shown > DIAG_LIST_MAX)
		diag_ev(f, "and %zu more", shown - DIAG_LIST_MAX);
	diag_ev(f, "segments count as shared memory (Shmem) until removed; a full /dev/shm makes the next start die with a "
		"bus error (sglang#28089; torch's file_system sharing strategy)");
	if (s->scan.ndenied || s->scan.ntimed_out) {
		f->uncertain = true;
		diag_ev(f, "uncertain: some processes could not be inspected; one of them may still map a segment");
	}
	/* free --shm checks each segment again (creator gone, nobody holding it, same file) right
	 * before removing it; rm does not. */
	if (n <= 16 && all_plain)
		diag_set_fix(f, "`gpuwho free --shm --yes` (checks each again, then removes it); or by hand: `rm --%s`", args);
	else
		diag_set_fix(f, "`gpuwho free --shm --yes` (checks each of the %zu segments again, then removes it%s)", n,
			     all_plain ? "" : "; some names hold control characters, which a command typed by hand "
					      "cannot spell as shown");
	free(args);
}

/* Host memory a GPU holder would give back when it ends: what it pins or locks (VmPin, VmLck)
 * and its shared RSS — host buffers pinned through the driver (cudaHostAlloc) count as RssShmem,
 * with VmPin and VmLck at 0 (H200, driver 580: four processes pinning ~28 GiB each raised Shmem
 * to 112.7 GiB). */
static unsigned long long held_host_bytes(const struct proc_info *p)
{
	unsigned long long pin = p->vm_pin_kb > p->vm_lck_kb ? p->vm_pin_kb : p->vm_lck_kb;
	return (pin > p->rss_shmem_kb ? pin : p->rss_shmem_kb) * 1024ull;
}

/* Host memory: MemAvailable low, and how much of it — Shmem first — the GPU holders hold. */
static void verdict_host_memory(struct ctx *c)
{
	const struct snapshot *s = c->s;
	const struct meminfo *m = &s->mem;
	bool low = s->mem_ok && m->has_total && m->has_available && m->total &&
		   m->available * 100 < m->total * DIAG_HOST_LOW_PERCENT;
	unsigned long long held = 0, gpu_shmem = 0, shm_files = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *p = &s->scan.holders[i].info;
		held += held_host_bytes(p);
		gpu_shmem += p->rss_shmem_kb * 1024ull;
	}
	for (size_t i = 0; i < s->nshm; i++)
		shm_files += s->shm[i].bytes;
	if (!low && held < DIAG_PINNED_MIN_BYTES)
		return;
	struct finding *f;
	if (low)
		f = diag_add_finding(c, "host_memory", DIAG_WARNING, NULL,
				     "host memory is low: %.1f GiB available of %.1f GiB (%.0f%%)%s", diag_gib(m->available),
				     diag_gib(m->total), 100.0 * (double)m->available / (double)m->total,
				     held >= DIAG_PINNED_MIN_BYTES ? "; the GPU processes hold much of it" : "");
	else
		f = diag_add_finding(c, "host_memory", DIAG_INFO, NULL,
				     "GPU processes hold %.1f GiB of host memory (pinned host buffers), which ending them frees",
				     diag_gib(held));
	if (s->mem_ok && m->has_total && m->has_available)
		diag_ev(f, "/proc/meminfo: MemTotal %.1f GiB, MemAvailable %.1f GiB", diag_gib(m->total), diag_gib(m->available));
	/* Shmem is the GPU holders' before it is /dev/shm's: pinned buffers are shared memory. */
	if (s->mem_ok && m->has_shmem && m->shmem >= DIAG_GIB) {
		unsigned long long gpu = gpu_shmem < m->shmem ? gpu_shmem : m->shmem;
		unsigned long long files = shm_files < m->shmem - gpu ? shm_files : m->shmem - gpu;
		diag_ev(f, "Shmem %.1f GiB: %.1f GiB is the GPU holders' shared RSS (host buffers pinned through the driver, "
			"freed when they exit), %.1f GiB files in %s (freed only by removing them), %.1f GiB other tmpfs "
			"files and shared mappings", diag_gib(m->shmem), diag_gib(gpu), diag_gib(files),
			s->shm_dir ? s->shm_dir : "/dev/shm", diag_gib(m->shmem - gpu - files));
	}
	if (s->mem_ok && m->has_mlocked && m->mlocked >= DIAG_GIB)
		diag_ev(f, "Mlocked %.1f GiB", diag_gib(m->mlocked));
	size_t named = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct holder *h = &s->scan.holders[i];
		const struct proc_info *p = &h->info;
		if (held_host_bytes(p) < DIAG_GIB)
			continue;
		diag_add_pid(f, p->pid);
		if (named++ >= DIAG_LIST_MAX)
			continue;
		unsigned long long mapped = 0;
		for (size_t k = 0; k < h->nholds; k++)
			mapped += h->holds[k].map_bytes;
		char *pd = diag_pdesc(p);
		diag_ev(f, "%s gives back %.1f GiB when it ends: RSS %.1f GiB (anon %.1f, file %.1f, shared %.1f GiB); VmPin "
			"%.1f GiB, VmLck %.1f GiB; %.1f GiB of NVIDIA device mappings", pd, diag_gib(held_host_bytes(p)),
			diag_gib(p->vm_rss_kb * 1024ull), diag_gib(p->rss_anon_kb * 1024ull), diag_gib(p->rss_file_kb * 1024ull),
			diag_gib(p->rss_shmem_kb * 1024ull), diag_gib(p->vm_pin_kb * 1024ull), diag_gib(p->vm_lck_kb * 1024ull),
			diag_gib(mapped));
		free(pd);
	}
	if (named > DIAG_LIST_MAX)
		diag_ev(f, "and %zu more", named - DIAG_LIST_MAX);
	if (named == 0 && low)
		diag_ev(f, "no GPU holder visible here holds host memory pinned, locked or shared%s", s->host_pidns ? ""
			: " (this is a child PID namespace: the host's processes are out of sight)");
	if (low)
		diag_set_fix(f, "Find what holds it: %s%s. Serving engines' host-memory flags are per rank (SGLang "
			     "--hicache-size: 8 ranks x 300 GB = 2.4 TB); `gpuwho plan -- LAUNCH COMMAND` checks a launch "
			     "before it runs.", named ? "the GPU processes above (ending them gives their memory back; "
						       "`gpuwho free GPU` ends a GPU's job)" : "",
			     named ? (shm_files >= DIAG_GIB ? ", then leaked /dev/shm segments" : "")
				   : (s->host_pidns ? "leaked /dev/shm segments, tmpfs files" :
						      "look on the host (`gpuwho why` there)"));
	else
		diag_set_fix(f, "Nothing to do unless host memory runs short; then these processes are where it went.");
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
				f = diag_add_finding(c, "zombie", DIAG_INFO, NULL,
						     "zombie processes (<defunct>) that hold nothing: harmless for the GPU");
			char *pd = diag_pdesc(p), *par = diag_parent_desc(s, p);
			diag_ev(f, "%s: exited, its files closed and memory freed; its parent %s has not reaped it yet", pd, par);
			free(pd);
			free(par);
			diag_add_pid(f, p->pid);
		}
	}
	if (f)
		diag_set_fix(f, "Nothing for the GPU. The parent reaps it when it calls wait(); if the parent never does, ending "
			     "the parent hands it to PID 1, which does.");
}

static void verdict_nvml(struct ctx *c)
{
	const struct snapshot *s = c->s;
	if (!s->nvml_asked) {
		struct finding *f = diag_add_finding(c, "nvml_unavailable", DIAG_INFO, NULL,
						     "NVML not asked (--no-nvml): GPU memory unknown, holders only");
		diag_ev(f, "without NVML there is no memory to attribute, so no verdict about leaks or hidden holders");
		diag_set_fix(f, "Run without --no-nvml for memory verdicts.");
		return;
	}
	if (s->nvml.loaded)
		return;
	/* No library and no GPU node: a host without NVIDIA GPUs, not a problem. */
	bool none = c->d->acct.ngpus == 0 && (s->nvml.rc == NVML_E_NO_LIBRARY || s->nvml.rc == NVML_E_LIBRARY_NOT_FOUND);
	struct finding *f = diag_add_finding(c, "nvml_unavailable", none ? DIAG_INFO : DIAG_WARNING, NULL, "%s",
					     none ? "no NVIDIA GPU here: no NVML library and no /dev/nvidiaN"
						  : "NVML did not answer: GPU memory unknown, so no memory verdict is possible");
	diag_ev(f, "NVML: %s", s->nvml.error ? s->nvml.error : nvml_error_name(s->nvml.rc));
	if (none)
		diag_set_fix(f, "Nothing to do on a host without NVIDIA GPUs.");
	else if (s->nvml.rc == NVML_E_LIB_RM_VERSION_MISMATCH)
		diag_set_fix(f, "The library and the kernel driver differ (a driver upgrade without a reboot or module reload): "
			     "reboot, or reload the nvidia modules when no process uses them.");
	else if (s->nvml.rc == NVML_E_DRIVER_NOT_LOADED)
		diag_set_fix(f, "Load the NVIDIA driver (modprobe nvidia) or check `dmesg` for why it failed to load.");
	else
		diag_set_fix(f, "Check that libnvidia-ml.so.1 matches the driver (`--nvml PATH` picks another), and run as a "
			     "user allowed to query the GPUs.");
}

static void verdict_not_inspected(struct ctx *c)
{
	const struct holders_scan *sc = &c->s->scan;
	if (!sc->ndenied && !sc->ntimed_out)
		return;
	struct finding *f = diag_add_finding(c, "not_inspected", DIAG_INFO, NULL,
					     "%zu process%s could not be inspected: a conclusion that no process holds memory is "
					     "uncertain", sc->ndenied + sc->ntimed_out,
					     sc->ndenied + sc->ntimed_out == 1 ? "" : "es");
	f->uncertain = true;
	for (size_t i = 0; i < sc->ndenied && i < DIAG_LIST_MAX; i++)
		diag_ev(f, "PID %d (%s): %s", sc->denied[i].pid, sc->denied[i].comm ? sc->denied[i].comm : "?",
			sc->denied[i].why ? sc->denied[i].why : "permission denied");
	if (sc->ndenied > DIAG_LIST_MAX)
		diag_ev(f, "and %zu more could not be read (permission denied)", sc->ndenied - DIAG_LIST_MAX);
	for (size_t i = 0; i < sc->ntimed_out; i++) {
		diag_ev(f, "PID %d (%s): %s — a read that blocks suggests a process in the driver", sc->timed_out[i].pid,
			sc->timed_out[i].comm ? sc->timed_out[i].comm : "?",
			sc->timed_out[i].why ? sc->timed_out[i].why : "timed out");
		diag_add_pid(f, sc->timed_out[i].pid);
	}
	diag_set_fix(f, sc->ndenied ? "Run as root (`sudo gpuwho why`) to inspect every process."
				    : "Re-run; a process whose files cannot be read in time may be stuck in the kernel.");
}

void diag_host(struct ctx *c)
{
	verdict_nvml(c);
	verdict_mounts(c);
	verdict_host_memory(c);
	verdict_shm(c);
	verdict_zombies(c);
	verdict_not_inspected(c);
}
