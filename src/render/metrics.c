/* render/metrics: the Prometheus text exposition of a snapshot and its diagnosis. */
#include "render/metrics.h"
#include "diagnose/gauges.h"
#include "escape.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void render_metrics_label_value(FILE *f, const char *s, size_t len)
{
	/* First the name as every gpuwho renderer shows it (escape_term: controls, bidi overrides and
	 * invalid UTF-8 as visible escapes), so that no terminal or dashboard showing the label acts on
	 * a byte the process chose, and the value is valid UTF-8, which Prometheus requires of a label
	 * (one bad value fails the whole scrape). Then the exposition format's own escaping. */
	char *t = escape_term(s, len);
	for (const char *p = t; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);   /* escape_term leaves none; kept for the format's sake */
		else
			fputc(*p, f);
	}
	free(t);
}

static void label_str(FILE *f, const char *name, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	if (v)
		render_metrics_label_value(f, v, strlen(v));
	fputc('"', f);
}

static void family(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* The gpu label: NVML's index, else the device path NVML does not know ("/dev/nvidia3"); ""
 * for host-wide findings. */
static void gpu_label(const struct account_gpu *g, char *buf, size_t n)
{
	if (!g)
		snprintf(buf, n, "%s", "");
	else if (g->index >= 0)
		snprintf(buf, n, "%d", g->index);
	else if (g->minor >= 0)
		snprintf(buf, n, "/dev/nvidia%d", g->minor);
	else
		snprintf(buf, n, "%s", "unknown");
}

static const char *gpu_uuid(const struct account_gpu *g)
{
	return g->nvml && g->nvml->uuid_rc == 0 ? g->nvml->uuid : "";
}

/* Starts a sample line "NAME{gpu="0",uuid="GPU-…"" (the caller closes the braces). */
static void gpu_sample(FILE *f, const char *name, const struct account_gpu *g)
{
	char gl[32];
	gpu_label(g, gl, sizeof gl);
	fprintf(f, "%s{", name);
	label_str(f, "gpu", gl, true);
	label_str(f, "uuid", gpu_uuid(g), false);
}

/* Who a process runs for, as far as the labels of gpuwho_process_gpu_memory_bytes go. The one
 * place these labels are decided, from what proc/owner.c and proc/'s cgroup reader found: the
 * Slurm job; the pod's name (its UID when the kubelet's log folders did not name it) and
 * namespace; the container's name (docker's), else its id. "" when unknown. */
struct attribution {
	const char *job, *pod, *namespace, *container;
};

static const char *or_empty(const char *a, const char *b)
{
	return a ? a : b ? b : "";
}

static struct attribution attribution_of(const struct proc_info *p)
{
	struct attribution a = {"", "", "", ""};
	if (!p)
		return a;
	a.job = or_empty(p->owner.slurm_job, NULL);
	a.pod = or_empty(p->owner.pod_name, p->container.pod_uid);
	a.namespace = or_empty(p->owner.pod_namespace, NULL);
	a.container = or_empty(p->owner.container_name, p->container.id);
	return a;
}

static void process_series(FILE *f, const struct diagnosis *d, unsigned max)
{
	family(f, "gpuwho_process_gpu_memory_bytes",
	       "GPU memory NVML reports for a process, the largest per GPU first (at most --max-processes per GPU).");
	for (size_t i = 0; i < d->acct.ngpus; i++) {
		const struct account_gpu *g = &d->acct.gpus[i];
		char gl[32];
		gpu_label(g, gl, sizeof gl);
		unsigned shown = 0;
		/* Rows come largest first (account.h), so the first max with known memory are the top. */
		for (size_t k = 0; k < g->nprocs && shown < max; k++) {
			const struct account_proc *r = &g->procs[k];
			if (!r->in_nvml || !r->used_known)
				continue;
			const struct proc_info *p = r->info;
			struct attribution at = attribution_of(p);
			char pid[24];
			snprintf(pid, sizeof pid, "%d", r->pid);
			fputs("gpuwho_process_gpu_memory_bytes{", f);
			label_str(f, "gpu", gl, true);
			label_str(f, "pid", pid, false);
			label_str(f, "user", p && p->user ? p->user : "", false);
			label_str(f, "comm", p && p->comm ? p->comm : "", false);
			label_str(f, "job", at.job, false);
			label_str(f, "pod", at.pod, false);
			label_str(f, "namespace", at.namespace, false);
			label_str(f, "container", at.container, false);
			fprintf(f, "} %llu\n", r->used_bytes);
			shown++;
		}
	}
	family(f, "gpuwho_gpu_processes", "Processes NVML lists on the GPU (all of them, beyond --max-processes too).");
	for (size_t i = 0; i < d->acct.ngpus; i++) {
		const struct account_gpu *g = &d->acct.gpus[i];
		if (!g->procs_known)
			continue;
		unsigned n = 0;
		for (size_t k = 0; k < g->nprocs; k++)
			n += g->procs[k].in_nvml;
		gpu_sample(f, "gpuwho_gpu_processes", g);
		fprintf(f, "} %u\n", n);
	}
}

/* The verdicts gauge_is_stuck accepts, each given a series per GPU (0 when absent) so that a
 * dashboard sees the value fall to 0 rather than the series vanish. */
static const char *const stuck_verdicts[] = {
	"driver_leak", "inherited_holder", "orphaned_workers", "stopped", "stuck_in_driver", "zombie_leader",
};
#define NSTUCK (sizeof stuck_verdicts / sizeof stuck_verdicts[0])

static void stuck_series(FILE *f, const struct diagnosis *d)
{
	family(f, "gpuwho_gpu_memory_stuck_bytes",
	       "GPU memory held where it should not be, by the verdict that says what frees it (gpuwho why).");
	for (size_t i = 0; i < d->acct.ngpus; i++) {
		const struct account_gpu *g = &d->acct.gpus[i];
		if (!g->mem_known)
			continue;
		for (size_t v = 0; v < NSTUCK; v++) {
			unsigned long long b = 0;
			for (size_t k = 0; k < d->nfindings; k++) {
				const struct finding *fd = &d->findings[k];
				if (fd->slot == (int)i && !strcmp(fd->verdict, stuck_verdicts[v]))
					b += gauge_stuck_bytes(d, fd, NULL);
			}
			gpu_sample(f, "gpuwho_gpu_memory_stuck_bytes", g);
			label_str(f, "verdict", stuck_verdicts[v], false);
			fprintf(f, "} %llu\n", b);
		}
	}
}

static void findings_series(FILE *f, const struct diagnosis *d)
{
	family(f, "gpuwho_findings", "Current findings of gpuwho why, by verdict, severity and GPU (gpu=\"\": host-wide).");
	/* Count equal (verdict, severity, gpu) together: one sample per label set. */
	bool *done = xcalloc(d->nfindings + 1, sizeof *done);
	for (size_t i = 0; i < d->nfindings; i++) {
		if (done[i])
			continue;
		const struct finding *a = &d->findings[i];
		unsigned n = 0;
		for (size_t k = i; k < d->nfindings; k++) {
			const struct finding *b = &d->findings[k];
			if (b->slot == a->slot && b->severity == a->severity && !strcmp(b->verdict, a->verdict)) {
				n++;
				done[k] = true;
			}
		}
		char gl[32];
		gpu_label(a->slot >= 0 ? &d->acct.gpus[a->slot] : NULL, gl, sizeof gl);
		fputs("gpuwho_findings{", f);
		label_str(f, "verdict", a->verdict, true);
		label_str(f, "severity", diag_severity_name(a->severity), false);
		label_str(f, "gpu", gl, false);
		fprintf(f, "} %u\n", n);
	}
	free(done);
}

bool render_metrics(FILE *f, const struct snapshot *s, const struct diagnosis *d, const struct metrics_opts *o)
{
	const struct account *a = &d->acct;
	family(f, "gpuwho_up", "1 when gpuwho could inspect this host (NVML answered or /proc was scanned), else 0.");
	fprintf(f, "gpuwho_up %d\n", (s->nvml.loaded || s->scan.nscanned > 0) ? 1 : 0);
	family(f, "gpuwho_nvml_up", "1 when NVML answered, 0 when it was not asked or failed (gpuwho why says why).");
	fprintf(f, "gpuwho_nvml_up %d\n", s->nvml.loaded ? 1 : 0);
	if (o->scrape_duration_s >= 0) {
		family(f, "gpuwho_scrape_duration_seconds", "Seconds the collection behind this answer took.");
		fprintf(f, "gpuwho_scrape_duration_seconds %.6f\n", o->scrape_duration_s);
	}
	family(f, "gpuwho_scan_limited",
	       "1 when this answer looked only at the processes NVML lists (the lazy walk), 0 when at every process.");
	fprintf(f, "gpuwho_scan_limited %d\n", s->scan.limited ? 1 : 0);
	family(f, "gpuwho_processes_uninspected",
	       "Processes gpuwho could not look at (permission denied, or a read timed out): \"no holder\" is then uncertain.");
	fprintf(f, "gpuwho_processes_uninspected{reason=\"denied\"} %zu\n", s->scan.ndenied);
	fprintf(f, "gpuwho_processes_uninspected{reason=\"timed_out\"} %zu\n", s->scan.ntimed_out);

	family(f, "gpuwho_gpu_memory_total_bytes", "GPU memory in total, as NVML reports it.");
	for (size_t i = 0; i < a->ngpus; i++)
		if (a->gpus[i].mem_known) {
			gpu_sample(f, "gpuwho_gpu_memory_total_bytes", &a->gpus[i]);
			fprintf(f, "} %llu\n", a->gpus[i].total_bytes);
		}
	family(f, "gpuwho_gpu_memory_used_bytes", "GPU memory in use, as NVML reports it.");
	for (size_t i = 0; i < a->ngpus; i++)
		if (a->gpus[i].mem_known) {
			gpu_sample(f, "gpuwho_gpu_memory_used_bytes", &a->gpus[i]);
			fprintf(f, "} %llu\n", a->gpus[i].used_bytes);
		}
	family(f, "gpuwho_gpu_memory_unattributed_bytes",
	       "GPU memory in use that NVML attributes to no process (used minus the processes' memory).");
	for (size_t i = 0; i < a->ngpus; i++)
		if (a->gpus[i].unattributed_known) {
			gpu_sample(f, "gpuwho_gpu_memory_unattributed_bytes", &a->gpus[i]);
			fprintf(f, "} %llu\n", a->gpus[i].unattributed_bytes);
		}
	stuck_series(f, d);
	findings_series(f, d);
	process_series(f, d, o->max_processes);

	family(f, "gpuwho_shm_orphan_bytes",
	       "Bytes of /dev/shm segments that GPU processes left behind: nobody holds them and their creator is gone.");
	fprintf(f, "gpuwho_shm_orphan_bytes %llu\n", gauge_shm_orphan_bytes(s));
	family(f, "gpuwho_host_memory_pinned_bytes",
	       "Host memory the GPU holders pin, lock or share (VmPin, VmLck, RssShmem): what they give back when they end.");
	fprintf(f, "gpuwho_host_memory_pinned_bytes %llu\n", gauge_pinned_bytes(s));
	return ferror(f) == 0;
}
