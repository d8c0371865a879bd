/* diagnose: the entry point — a snapshot in, findings out, in order — and the public helpers. Pure: no I/O, no clock. */
#include "diagnose/diagnose.h"
#include "diagnose/internal.h"

#include <stdlib.h>
#include <string.h>

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
	out->uncertain = s->scan.ndenied || s->scan.ntimed_out || s->scan.limited;
	struct ctx c = {.s = s, .d = out};
	for (size_t i = 0; i < out->acct.ngpus; i++)
		diag_gpu(&c, &out->acct.gpus[i]);
	diag_host(&c);
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

bool diag_wants_resample(const struct snapshot *s, const struct diagnosis *d)
{
	if (s->resample.ngpus)
		return false;
	for (size_t i = 0; i < d->nfindings; i++)
		if (!strcmp(d->findings[i].verdict, "driver_leak"))
			return true;
	return false;
}

bool diag_wants_full_scan(const struct snapshot *s, const struct diagnosis *d)
{
	if (!s->scan.limited)
		return false;
	if (!d->acct.nvml_ok)
		return true;
	for (size_t i = 0; i < d->acct.ngpus; i++) {
		const struct account_gpu *g = &d->acct.gpus[i];
		/* What NVML cannot tell (its process list, the memory) the fd walk must. */
		if (!g->procs_known || !g->unattributed_known || g->nunknown)
			return true;
		if (g->unattributed_bytes >= DIAG_UNHELD_MIN_BYTES)
			return true;
		for (size_t k = 0; k < g->nprocs; k++) {
			enum account_kind kd = g->procs[k].kind;
			/* An exited PID's memory lives on in whoever inherited its files: only the walk finds them. */
			if (kd == ACCOUNT_EXITED || kd == ACCOUNT_OUTSIDE)
				return true;
		}
	}
	return false;
}

const struct account_proc *diag_job_row(const struct account_gpu *g, const char *job)
{
	if (!job || !*job)
		return NULL;
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->in_nvml && r->info && r->info->owner.slurm_job && !strcmp(r->info->owner.slurm_job, job))
			return r;
	}
	return NULL;
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
