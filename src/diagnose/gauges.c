/* gauges: the numbers behind the findings, for exporters (gpuwho metrics, serve). Pure. */
#include "diagnose/gauges.h"

#include <string.h>

static const char *const stuck_verdicts[] = {
	"stuck_in_driver", "zombie_leader", "stopped", "inherited_holder", "orphaned_workers", "driver_leak",
};

bool gauge_is_stuck(const struct finding *f)
{
	if (f->slot < 0)
		return false;
	for (size_t i = 0; i < sizeof stuck_verdicts / sizeof stuck_verdicts[0]; i++)
		if (!strcmp(f->verdict, stuck_verdicts[i]))
			return true;
	return false;
}

static bool has_pid(const struct finding *f, int pid)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}

unsigned long long gauge_stuck_bytes(const struct diagnosis *d, const struct finding *f, bool *unknown)
{
	if (!gauge_is_stuck(f) || (size_t)f->slot >= d->acct.ngpus)
		return 0;
	const struct account_gpu *g = &d->acct.gpus[f->slot];
	bool leak = !strcmp(f->verdict, "driver_leak"), inherited = !strcmp(f->verdict, "inherited_holder");
	/* driver_leak counts what gpu.c's unheld_bytes counts: exited PIDs' memory is nobody's only
	 * when no process inherited their files (then it is inherited_holder's). */
	bool heirs = false;
	for (size_t i = 0; i < g->nprocs; i++)
		heirs |= g->procs[i].kind == ACCOUNT_INHERITED;
	unsigned long long b = leak ? g->unattributed_bytes : 0;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		bool counts;
		if (leak)
			counts = r->kind == ACCOUNT_EXITED && !heirs;
		else if (inherited)
			counts = r->kind == ACCOUNT_EXITED;
		else
			counts = r->in_nvml && r->kind != ACCOUNT_EXITED && has_pid(f, r->pid);
		if (!counts)
			continue;
		if (r->used_known)
			b += r->used_bytes;
		else if (unknown)
			*unknown = true;
	}
	return b;
}

unsigned long long gauge_shm_orphan_bytes(const struct snapshot *s)
{
	unsigned long long total = 0;
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		if (g->nholders == 0 && g->origin && !(g->creator_pid > 0 && g->creator_alive))
			total += g->bytes;
	}
	return total;
}

unsigned long long gauge_pinned_bytes(const struct snapshot *s)
{
	unsigned long long total = 0;
	for (size_t i = 0; i < s->scan.nholders; i++) {
		const struct proc_info *p = &s->scan.holders[i].info;
		unsigned long long pin = p->vm_pin_kb > p->vm_lck_kb ? p->vm_pin_kb : p->vm_lck_kb;
		total += (pin > p->rss_shmem_kb ? pin : p->rss_shmem_kb) * 1024ull;
	}
	return total;
}
