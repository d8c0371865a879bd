/* render/proc: one process and one target as every report shows them (holders, ps, free). */
#include "escape.h"
#include "json.h"
#include "render/render.h"
#include "util.h"

#include <string.h>

const char *render_target_short(const struct target *t)
{
	if (str_starts(t->path, "/dev/"))
		return t->path + 5;
	return t->path;
}

json_t *render_proc_json(const struct proc_info *p)
{
	json_t *ns = json_array();
	for (unsigned i = 0; i < p->nnspid; i++)
		json_array_append_new(ns, json_integer(p->nspid[i]));
	json_t *argv = json_array();
	for (size_t i = 0; p->cmdline && i < p->cmdline_len;) {
		size_t l = strnlen(p->cmdline + i, p->cmdline_len - i);
		json_array_append_new(argv, json_text(p->cmdline + i, l));
		i += l + 1;
	}
	json_t *cont = json_null();
	if (p->container.runtime)
		cont = json_pack("{s:o, s:o, s:o}", "runtime", json_str_or_null(p->container.runtime), "id", json_str_or_null(p->container.id),
				 "pod_uid", json_str_or_null(p->container.pod_uid));
	char st[2] = {p->state ? p->state : '?', 0};
	json_t *o = json_pack("{s:i, s:o, s:i, s:i, s:o, s:s, s:i, s:o, s:o, s:o, s:f, s:I, s:o, s:o, s:o}", "pid", p->pid,
			 "nspid", ns, "ppid", p->ppid, "uid", (int)p->uid, "user", json_str_or_null(p->user), "state", st, "threads",
			 (int)p->nthreads, "thread_states", json_str_or_null(p->thread_states), "comm", json_str_or_null(p->comm), "cmdline", argv,
			 "start_time", p->start_time, "start_ticks", (json_int_t)p->start_ticks, "cgroup", json_str_or_null(p->cgroup),
			 "container", cont, "missing", json_str_or_null(p->missing));
	json_put(o, "pgid", p->pgid ? json_integer(p->pgid) : json_null());
	/* Host memory it holds (status, in bytes): what ending it gives back, pinned buffers included. */
	json_put(o, "host_memory", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "rss_bytes", json_u64(p->vm_rss_kb * 1024),
					      "anon_bytes", json_u64(p->rss_anon_kb * 1024), "file_bytes",
					      json_u64(p->rss_file_kb * 1024), "shared_bytes", json_u64(p->rss_shmem_kb * 1024),
					      "pinned_bytes", json_u64(p->vm_pin_kb * 1024), "locked_bytes",
					      json_u64(p->vm_lck_kb * 1024)));
	json_put(o, "sid", p->sid ? json_integer(p->sid) : json_null());
	json_put(o, "owner", render_owner_json(p));
	return o;
}

json_t *render_owner_json(const struct proc_info *p)
{
	const struct owner *w = &p->owner;
	if (owner_empty(w))
		return json_null();
	char *label = owner_label(w, &p->container);
	json_t *o = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "label", json_str_or_null(label), "slurm_job",
			      json_str_or_null(w->slurm_job), "slurm_step", json_str_or_null(w->slurm_step), "slurm_source",
			      json_str_or_null(w->slurm_source), "pod_namespace", json_str_or_null(w->pod_namespace), "pod_name",
			      json_str_or_null(w->pod_name), "container_name", json_str_or_null(w->container_name), "unit",
			      json_str_or_null(w->unit));
	free(label);
	return o;
}

char *render_owner(const struct proc_info *p)
{
	if (!p)
		return NULL;
	char *l = owner_label(&p->owner, &p->container);
	if (!l)
		return NULL;
	/* Pod, container and unit names come from users and cgroup names. */
	char *e = escape_term(l, strlen(l));
	free(l);
	return e;
}
