/* snapshot/write: a snapshot as JSON, without loss (docs/json.md, "snapshot"): raw bytes stay
 * raw (a string when UTF-8, else {"hex": ...}), so load.c gives back what was collected. */
#include "json.h"
#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Raw bytes, losslessly: a JSON string when they are UTF-8, else {"hex": "…"}. NULL: null. */
static json_t *jbytes(const char *s, size_t len)
{
	if (!s)
		return json_null();
	json_t *v = json_stringn(s, len);
	if (v)
		return v;
	char *hex = xmalloc(len * 2 + 1);
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s[i]);
	v = json_must(json_pack("{s:s}", "hex", hex));
	free(hex);
	return v;
}

static json_t *jstr(const char *s)
{
	return s ? jbytes(s, strlen(s)) : json_null();
}

/* An array of lossless strings. */
static json_t *jstrv(char *const *v, size_t n)
{
	json_t *a = json_must(json_array());
	for (size_t i = 0; i < n; i++)
		json_push(a, jstr(v[i]));
	return a;
}

/* The command line as an array of arguments. Redacted: argv[0]'s base name, then one SNAPSHOT_REDACTED
 * standing for the other arguments, if any (idempotent: a redacted line redacts to itself). */
static json_t *jcmdline(const struct proc_info *p, bool redact)
{
	json_t *a = json_must(json_array());
	size_t nargs = 0;
	for (size_t i = 0; p->cmdline && i < p->cmdline_len; nargs++) {
		size_t l = strnlen(p->cmdline + i, p->cmdline_len - i);
		if (!redact) {
			json_push(a, jbytes(p->cmdline + i, l));
		} else if (nargs == 0) {
			const char *arg = p->cmdline + i, *slash = memrchr(arg, '/', l);
			const char *base = slash && slash + 1 < arg + l ? slash + 1 : arg;
			json_push(a, jbytes(base, l - (size_t)(base - arg)));
		}
		i += l + 1;
	}
	if (redact && nargs > 1)
		json_push(a, json_string(SNAPSHOT_REDACTED));
	return a;
}

/* The owner (proc/owner.h), null when nothing is known. Redaction hides the names people choose
 * (pods, containers, units) and keeps the job id, as it keeps container ids. */
static json_t *owner_to_json(const struct owner *w, bool redact)
{
	if (owner_empty(w))
		return json_null();
#define NAME(x) (redact && (x) ? json_string(SNAPSHOT_REDACTED) : jstr(x))
	return json_must(json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "slurm_job", jstr(w->slurm_job), "slurm_step",
				   jstr(w->slurm_step), "slurm_source", jstr(w->slurm_source), "pod_namespace",
				   NAME(w->pod_namespace), "pod_name", NAME(w->pod_name), "container_name",
				   NAME(w->container_name), "unit", NAME(w->unit)));
#undef NAME
}

static json_t *proc_to_json(const struct proc_info *p, bool redact)
{
	json_t *o = json_must(json_object());
	char st[2] = {p->state ? p->state : '?', 0};
	if (!(st[0] > ' ' && st[0] < 127))
		st[0] = '?';
	json_put(o, "pid", json_integer(p->pid));
	json_put(o, "ppid", json_integer(p->ppid));
	json_put(o, "pgid", json_integer(p->pgid));
	json_put(o, "sid", json_integer(p->sid));
	json_put(o, "state", json_string(st));
	json_put(o, "threads", json_integer(p->nthreads));
	json_put(o, "thread_states", jstr(p->thread_states));
	json_put(o, "kthread", json_boolean(p->kthread));
	json_put(o, "start_ticks", json_u64(p->start_ticks));
	json_put(o, "start_time", json_real(p->start_time));
	json_put(o, "uid", json_integer((json_int_t)p->uid));
	if (redact && p->user)
		json_put(o, "user", json_must(json_sprintf("user%u", (unsigned)p->uid)));
	else
		json_put(o, "user", jstr(p->user));
	json_t *ns = json_must(json_array());
	for (unsigned i = 0; i < p->nnspid && i < PROC_MAX_NS; i++)
		json_push(ns, json_integer(p->nspid[i]));
	json_put(o, "nspid", ns);
	json_put(o, "comm", jstr(p->comm));
	json_put(o, "cmdline", jcmdline(p, redact));
	json_put(o, "cgroup", redact && p->cgroup ? json_string(SNAPSHOT_REDACTED) : jstr(p->cgroup));
	if (p->container.runtime)
		json_put(o, "container", json_must(json_pack("{s:o, s:o, s:o}", "runtime", jstr(p->container.runtime), "id",
						   jstr(p->container.id), "pod_uid", jstr(p->container.pod_uid))));
	else
		json_put(o, "container", json_null());
	json_put(o, "owner", owner_to_json(&p->owner, redact));
	json_put(o, "missing", jstr(p->missing));
	json_put(o, "wchan", jstr(p->wchan));
	json_put(o, "driver_wait", jstr(p->driver_wait));
	json_put(o, "vm_rss_kb", json_u64(p->vm_rss_kb));
	json_put(o, "vm_lck_kb", json_u64(p->vm_lck_kb));
	json_put(o, "vm_pin_kb", json_u64(p->vm_pin_kb));
	json_put(o, "rss_anon_kb", json_u64(p->rss_anon_kb));
	json_put(o, "rss_file_kb", json_u64(p->rss_file_kb));
	json_put(o, "rss_shmem_kb", json_u64(p->rss_shmem_kb));
	return o;
}

const char *const snapshot_means_names[4] = {"fd", "mmap", "thread", "copy"};   /* HOLD_* bit order */

static json_t *unseen_to_json(const struct unseen *u, size_t n)
{
	json_t *a = json_must(json_array());
	for (size_t i = 0; i < n; i++)
		json_push(a, json_pack("{s:i, s:o, s:o}", "pid", u[i].pid, "comm", jstr(u[i].comm), "why", jstr(u[i].why)));
	return a;
}

static json_t *scan_to_json(const struct holders_scan *s, bool redact)
{
	json_t *o = json_must(json_object());
	json_t *ts = json_must(json_array());
	for (size_t i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];
		json_t *j = json_must(json_object());
		json_put(j, "path", jstr(t->path));
		json_put(j, "kind", jstr(t->kind));
		json_put(j, "gpu_minor", json_integer(t->gpu_minor));
		json_put(j, "bus_id", jstr(t->bus_id));
		json_put(j, "ok", json_boolean(t->ok));
		json_put(j, "errno", json_integer(t->err));
		json_put(j, "dev", json_devnum(t->dev));
		json_put(j, "ino", json_u64((unsigned long long)t->ino));
		json_put(j, "chr", json_boolean(t->chr));
		json_put(j, "rdev", json_devnum(t->rdev));
		json_push(ts, j);
	}
	json_put(o, "targets", ts);
	json_t *hs = json_must(json_array());
	for (size_t i = 0; i < s->nholders; i++) {
		const struct holder *h = &s->holders[i];
		json_t *j = proc_to_json(&h->info, redact);
		json_t *holds = json_must(json_array());
		for (size_t k = 0; k < h->nholds; k++) {
			const struct hold *d = &h->holds[k];
			json_t *how = json_must(json_array());
			for (unsigned b = 0; b < 4; b++)
				if (d->means & (1u << b))
					json_push(how, json_string(snapshot_means_names[b]));
			json_t *hj = json_pack("{s:I, s:o, s:i, s:i, s:b, s:b, s:i, s:o}", "target", (json_int_t)d->target, "how",
					       how, "fds", (int)d->nfd, "maps", (int)d->nmap, "read", d->read, "write", d->write,
					       "via_tid", d->via_tid, "copy_path", jstr(d->copy_path));
			json_put(hj, "map_bytes", json_u64(d->map_bytes));
			json_push(holds, hj);
		}
		json_put(j, "holds", holds);
		json_push(hs, j);
	}
	json_put(o, "holders", hs);
	json_t *ms = json_must(json_array());
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct mount_hit *m = &s->mounts[i];
		json_push(ms, json_pack("{s:I, s:o, s:o, s:o, s:o}", "target", (json_int_t)m->target, "mount_point",
				     jstr(m->mount_point), "fstype", jstr(m->fstype), "source", jstr(m->source), "root",
				     jstr(m->root)));
	}
	json_put(o, "mounts", ms);
	json_put(o, "not_inspected", unseen_to_json(s->denied, s->ndenied));
	json_put(o, "timed_out", unseen_to_json(s->timed_out, s->ntimed_out));
	json_put(o, "scanned", json_integer(s->nscanned));
	json_put(o, "limited", json_boolean(s->limited));
	json_put(o, "vanished", json_integer(s->nvanished));
	json_put(o, "notes", jstrv(s->notes, s->nnotes));
	return o;
}

static json_t *jchars(const char *buf, size_t n)
{
	return jbytes(buf, strnlen(buf, n));
}

/* The nvml object of a snapshot mirrors struct nvml_info field by field (raw NVML return codes
 * included): the ps/why renderers need every one of them back. */
static json_t *nvml_to_json(const struct nvml_info *nv)
{
	json_t *o = json_must(json_object());
	json_put(o, "loaded", json_boolean(nv->loaded));
	json_put(o, "rc", json_integer(nv->rc));
	json_put(o, "error", jstr(nv->error));
	json_put(o, "lib_path", jstr(nv->lib_path));
	json_put(o, "driver_version", jchars(nv->driver_version, sizeof nv->driver_version));
	json_put(o, "nvml_version", jchars(nv->nvml_version, sizeof nv->nvml_version));
	json_put(o, "proc_api", json_integer(nv->proc_api));
	json_put(o, "proc_stride", json_integer(nv->proc_stride));
	json_t *gs = json_must(json_array());
	for (size_t i = 0; i < nv->ngpus; i++) {
		const struct nvml_gpu *g = &nv->gpus[i];
		json_t *j = json_must(json_object());
		json_put(j, "index", json_integer(g->index));
		json_put(j, "handle_rc", json_integer(g->handle_rc));
		json_put(j, "minor", json_integer(g->minor));
		json_put(j, "minor_rc", json_integer(g->minor_rc));
		json_put(j, "uuid", jchars(g->uuid, sizeof g->uuid));
		json_put(j, "uuid_rc", json_integer(g->uuid_rc));
		json_put(j, "name", jchars(g->name, sizeof g->name));
		json_put(j, "name_rc", json_integer(g->name_rc));
		json_put(j, "bus_id", jchars(g->bus_id, sizeof g->bus_id));
		json_put(j, "bus_id_rc", json_integer(g->bus_id_rc));
		json_put(j, "mem_total", json_u64(g->mem_total));
		json_put(j, "mem_reserved", json_u64(g->mem_reserved));
		json_put(j, "mem_used", json_u64(g->mem_used));
		json_put(j, "mem_free", json_u64(g->mem_free));
		json_put(j, "mem_rc", json_integer(g->mem_rc));
		json_put(j, "mem_reserved_rc", json_integer(g->mem_reserved_rc));
		json_put(j, "mem_api", json_integer(g->mem_api));
		json_put(j, "persistence", json_boolean(g->persistence));
		json_put(j, "persistence_rc", json_integer(g->persistence_rc));
		json_put(j, "compute_mode", json_integer(g->compute_mode));
		json_put(j, "compute_mode_rc", json_integer(g->compute_mode_rc));
		json_put(j, "mig_current", json_boolean(g->mig_current));
		json_put(j, "mig_pending", json_boolean(g->mig_pending));
		json_put(j, "mig_rc", json_integer(g->mig_rc));
		if (g->nmigs) {
			json_t *devs = json_array();
			for (size_t k = 0; k < g->nmigs; k++)
				json_array_append_new(devs, json_pack("{s:o, s:I, s:I}", "uuid",
								      json_text(g->migs[k].uuid, strlen(g->migs[k].uuid)), "gi",
								      (json_int_t)g->migs[k].gi, "ci", (json_int_t)g->migs[k].ci));
			json_put(j, "mig_devices", devs);
		}
		json_put(j, "retired_pending", json_boolean(g->retired_pending));
		json_put(j, "retired_rc", json_integer(g->retired_rc));
		json_put(j, "remap_pending", json_boolean(g->remap_pending));
		json_put(j, "remap_failure", json_boolean(g->remap_failure));
		json_put(j, "remap_correctable", json_integer(g->remap_correctable));
		json_put(j, "remap_uncorrectable", json_integer(g->remap_uncorrectable));
		json_put(j, "remap_rc", json_integer(g->remap_rc));
		json_put(j, "ecc_uncorrected_volatile", json_u64(g->ecc_uncorrected_volatile));
		json_put(j, "ecc_rc", json_integer(g->ecc_rc));
		json_put(j, "util_gpu", json_integer(g->util_gpu));
		json_put(j, "util_mem", json_integer(g->util_mem));
		json_put(j, "util_rc", json_integer(g->util_rc));
		json_t *ps = json_must(json_array());
		for (size_t k = 0; k < g->nprocs; k++) {
			const struct nvml_proc *p = &g->procs[k];
			json_push(ps, json_pack("{s:I, s:o, s:b, s:I, s:b, s:I, s:I}", "pid", (json_int_t)p->pid, "used_bytes",
					     json_u64(p->used_bytes), "used_known", p->used_known, "lists", (json_int_t)p->lists,
					     "instance_known", p->instance_known, "gi", (json_int_t)p->gi, "ci",
					     (json_int_t)p->ci));
		}
		json_put(j, "procs", ps);
		json_t *rc = json_must(json_array()), *api = json_must(json_array());
		for (int l = 0; l < NVML_NLISTS; l++) {
			json_push(rc, json_integer(g->list_rc[l]));
			json_push(api, json_integer(g->list_api[l]));
		}
		json_put(j, "list_rc", rc);
		json_put(j, "list_api", api);
		json_put(j, "error", jstr(g->error));
		json_push(gs, j);
	}
	json_put(o, "gpus", gs);
	return o;
}

static json_t *mem_to_json(const struct meminfo *m)
{
	json_t *o = json_must(json_object());
#define MEM(key, field, has) json_put(o, key, (has) ? json_u64(m->field) : json_null())
	MEM("total_bytes", total, m->has_total);
	MEM("free_bytes", free, m->has_free);
	MEM("available_bytes", available, m->has_available);
	MEM("buffers_bytes", buffers, m->has_buffers);
	MEM("cached_bytes", cached, m->has_cached);
	MEM("shmem_bytes", shmem, m->has_shmem);
	MEM("mlocked_bytes", mlocked, m->has_mlocked);
	MEM("swap_total_bytes", swap_total, m->has_swap_total);
	MEM("swap_free_bytes", swap_free, m->has_swap_free);
	MEM("hugepages_total_bytes", hugepages_total, m->has_hugepages);
	MEM("hugepages_free_bytes", hugepages_free, m->has_hugepages);
#undef MEM
	return o;
}

json_t *snapshot_to_json(const struct snapshot *s, bool redact)
{
	redact = redact || s->redacted;
	json_t *o = json_must(json_object());
	json_put(o, "schema", json_string(SNAPSHOT_SCHEMA));
	json_put(o, "schema_version", json_integer(s->schema_version ? s->schema_version : SNAPSHOT_SCHEMA_VERSION));
	json_put(o, "gpuwho_version", jstr(s->gpuwho_version));
	json_put(o, "hostname", redact && s->hostname ? json_string(SNAPSHOT_REDACTED) : jstr(s->hostname));
	json_put(o, "taken_at", json_real(s->taken_at));
	json_put(o, "redacted", json_boolean(redact));
	json_put(o, "host_pid_namespace", json_boolean(s->host_pidns));
	json_put(o, "self", json_must(json_pack("{s:i, s:o}", "pid", s->self_pid, "ancestors",
				      json_pids(s->self_ancestors, s->nself_ancestors))));
	json_put(o, "nvml", s->nvml_asked ? nvml_to_json(&s->nvml) : json_null());
	if (s->resample.ngpus) {
		json_t *u = json_must(json_array());
		for (size_t i = 0; i < s->resample.ngpus; i++)
			json_push(u, s->resample.used_ok[i] ? json_u64(s->resample.used_bytes[i]) : json_null());
		json_put(o, "resample", json_must(json_pack("{s:f, s:o}", "delay_s", s->resample.delay_s, "used_bytes", u)));
	} else {
		json_put(o, "resample", json_null());
	}
	json_put(o, "scan", scan_to_json(&s->scan, redact));
	json_t *others = json_must(json_array());
	for (size_t i = 0; i < s->nothers; i++)
		json_push(others, proc_to_json(&s->others[i], redact));
	json_put(o, "others", others);
	json_put(o, "memory", s->mem_ok ? mem_to_json(&s->mem) : json_null());
	json_t *segs = json_must(json_array());
	for (size_t i = 0; i < s->nshm; i++) {
		const struct shm_segment *g = &s->shm[i];
		json_t *j = json_must(json_object());
		json_put(j, "name", jstr(g->name));
		json_put(j, "size", json_u64(g->size));
		json_put(j, "bytes", json_u64(g->bytes));
		json_put(j, "mtime", json_real(g->mtime));
		json_put(j, "uid", json_integer((json_int_t)g->uid));
		json_put(j, "holders", json_pids(g->holders, g->nholders));
		json_put(j, "creator_pid", json_integer(g->creator_pid));
		json_put(j, "creator_alive", json_boolean(g->creator_alive));
		json_put(j, "origin", jstr(g->origin));
		json_push(segs, j);
	}
	json_put(o, "shm", json_must(json_pack("{s:o, s:o, s:o}", "dir", jstr(s->shm_dir), "error", jstr(s->shm_error),
					       "segments", segs)));
	json_put(o, "notes", jstrv(s->notes, s->nnotes));
	return o;
}
