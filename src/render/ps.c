/* render/ps: `gpuwho ps` as text (a headline per GPU, then its processes) and as JSON. Decides nothing. */
#include "diagnose/account.h"
#include "escape.h"
#include "json.h"
#include "nvml/nvml_json.h"
#include "render/render.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

/* "12,345" into buf: bytes in MiB. */
static const char *num(char *buf, size_t n, unsigned long long bytes)
{
	return fmt_mib_num(buf, n, bytes);
}

/* "12,345 MiB" into buf. */
static const char *mib(char *buf, size_t n, unsigned long long bytes)
{
	return fmt_mib(buf, n, bytes);
}

/* The PIDs of the GPU's INHERITED rows, "5151, 5152", or NULL when there are none. */
static char *heirs_list(const struct account_gpu *g)
{
	char *out = NULL;
	for (size_t i = 0; i < g->nprocs; i++) {
		if (g->procs[i].kind != ACCOUNT_INHERITED)
			continue;
		char *n = out ? xasprintf("%s, %d", out, g->procs[i].pid) : xasprintf("%d", g->procs[i].pid);
		free(out);
		out = n;
	}
	return out;
}

/* The sentence that explains a row, or NULL for a plain attributed one. Malloc'ed. */
static char *row_message(const struct account_gpu *g, const struct account_proc *r, const struct holders_scan *s)
{
	switch (r->kind) {
	case ACCOUNT_ATTRIBUTED:
		if (r->holder)
			return NULL;
		for (size_t i = 0; i < s->ndenied; i++)
			if (s->denied[i].pid == r->pid)
				return xstrdup("NVML lists it; its open files could not be inspected (permission denied)");
		for (size_t i = 0; i < s->ntimed_out; i++)
			if (s->timed_out[i].pid == r->pid)
				return xasprintf("NVML lists it; its files were skipped: %s", s->timed_out[i].why);
		return xstrdup("NVML lists it, but it holds no NVIDIA device node gpuwho could see");
	case ACCOUNT_OUTSIDE:
		return xasprintf("PID %d not found in this PID namespace: held outside this PID namespace (host PID %d)",
				 r->pid, r->pid);
	case ACCOUNT_EXITED: {
		char *h = heirs_list(g);
		char *m = xasprintf("PID %d (exited) — memory now held through processes that inherited its device "
				    "files: %s", r->pid, h ? h : "none visible from here");
		free(h);
		return m;
	}
	case ACCOUNT_INHERITED:
		return xstrdup("holds the device with no NVML entry while an exited PID's memory is still in use: "
			       "likely inherited its device files");
	case ACCOUNT_UNMATCHED:
		return xstrdup("holds the device; NVML names host PIDs, which this PID namespace cannot map: its "
			       "memory may be among the host PIDs listed");
	case ACCOUNT_DEVICE_ONLY:
		return xstrdup("holds the device, no GPU memory");
	case ACCOUNT_UNKNOWN:
		return xstrdup("holds the device, memory unknown: NVML did not list this GPU's processes");
	}
	return NULL;
}

/* The MEMORY cell. */
static const char *mem_cell(const struct account_proc *r, char *buf, size_t n)
{
	switch (r->kind) {
	case ACCOUNT_ATTRIBUTED:
	case ACCOUNT_OUTSIDE:
	case ACCOUNT_EXITED:
		return r->used_known ? mib(buf, n, r->used_bytes) : "unknown";
	case ACCOUNT_INHERITED: return "inherited";
	case ACCOUNT_UNMATCHED: return "unmapped";
	case ACCOUNT_DEVICE_ONLY: return "none";
	case ACCOUNT_UNKNOWN: return "unknown";
	}
	return "?";
}

/* Columns a UTF-8 byte run takes: one per character (continuation bytes take none). */
/* The OWNER cell: the owner's label ("job 4242 step 0", "pod ns/name", "container vllm", "unit
 * x.service"), else a short container cell: "docker 1a2b3c4d", plus " pid N" (its PID inside) when it lives in a
 * nested PID namespace; "ns pid N" for a nested namespace without a container runtime; "-". */
static char *container_cell(const struct proc_info *p)
{
	const struct container *c = p ? &p->container : NULL;
	char *base;
	char *owner = p ? owner_label(&p->owner, c) : NULL;
	if (owner)
		base = owner;   /* the job, pod, container name or unit: the most specific known */
	else if (!c || !c->runtime)
		base = xstrdup(p && p->nnspid > 1 ? "ns" : "-");
	else if (c->pod_uid)
		base = xasprintf("k8s %.8s", c->pod_uid);
	else if (c->id)
		base = xasprintf("%s %.8s", c->runtime, c->id);
	else
		base = xstrdup(c->runtime);
	if (p && p->nnspid > 1) {
		char *n = xasprintf("%s pid %d", base, p->nspid[p->nnspid - 1]);
		free(base);
		base = n;
	}
	char *e = escape_str(base);   /* an lxc id is a cgroup name: anyone with a delegated cgroup picks it */
	free(base);
	return e;
}

/* Prints the headline parts of one GPU, wrapped between parts. */
static void headline(FILE *f, const struct account_gpu *g, const struct render_opts *o)
{
	char *parts[8];
	int n = 0;
	char a[48], b[48];
	if (g->index >= 0)
		parts[n++] = xasprintf("%sGPU %d%s", render_col(o, C_BOLD), g->index, render_col(o, C_OFF));
	else
		parts[n++] = xasprintf("%sGPU (minor %d)%s", render_col(o, C_BOLD), g->minor, render_col(o, C_OFF));
	if (g->nvml && g->nvml->name_rc == 0 && g->nvml->name[0]) {
		char *e = escape_term(g->nvml->name, strlen(g->nvml->name));
		parts[n++] = e;
	}
	if (g->mem_known)
		parts[n++] = xasprintf("%s / %s used", num(a, sizeof a, g->used_bytes), mib(b, sizeof b, g->total_bytes));
	else
		parts[n++] = xstrdup("memory unknown");
	if (g->unattributed_known && g->over_attributed)
		parts[n++] = xasprintf("unattributed 0 MiB (processes' sum exceeds used by %s: read moments apart)",
				       mib(a, sizeof a, g->attributed_bytes - g->used_bytes));
	else if (g->unattributed_known)
		parts[n++] = xasprintf("%sunattributed %s%s%s", g->unattributed_bytes >= MIB ? render_col(o, C_YEL) : "",
				       mib(a, sizeof a, g->unattributed_bytes),
				       g->nunknown ? (g->nunknown == 1 ? " (includes 1 process of unknown size)"
							   : " (includes processes of unknown size)") : "",
				       g->unattributed_bytes >= MIB ? render_col(o, C_OFF) : "");
	else
		parts[n++] = xstrdup("unattributed unknown");
	if (g->bus_id)
		parts[n++] = escape_term(g->bus_id, strlen(g->bus_id));   /* may come from /proc/driver/nvidia */
	if (g->target)
		parts[n++] = escape_term(g->target->path, strlen(g->target->path));
	int used = 0;
	for (int i = 0; i < n; i++) {
		/* Colour codes do not take columns. */
		int vis = (int)strlen(parts[i]);
		for (const char *q = parts[i]; (q = strchr(q, '\033')); q++)
			vis -= (int)strcspn(q, "m") + 1;
		if (i && o->width > 0 && used + 2 + vis > o->width) {
			fputs("\n  ", f);
			used = 2;
		} else if (i) {
			fputs("  ", f);
			used += 2;
		}
		fputs(parts[i], f);
		used += vis;
		free(parts[i]);
	}
	fputc('\n', f);
}

/* The COMMAND cell: the command line, or what stands in for a process we cannot see. */
static char *command_cell(const struct account_proc *r)
{
	if (r->kind == ACCOUNT_OUTSIDE)
		return xasprintf("[held outside this PID namespace (host PID %d)]", r->pid);
	if (r->kind == ACCOUNT_EXITED)
		return xasprintf("[PID %d exited; see below]", r->pid);
	if (!r->info)
		return xstrdup("?");
	char *cmd = proc_cmdline_joined(r->info);
	char *e = escape_term(cmd, strlen(cmd));
	free(cmd);
	return e;
}

/* The process's resident host memory (VmRSS): "29.1 GiB", "312 MiB", "-" when unknown. Pinned
 * host buffers count in it (as shared RSS), so a GPU holder's share of host memory shows here. */
static const char *host_cell(const struct proc_info *p, char *buf, size_t n)
{
	if (!p || !p->vm_rss_kb)
		snprintf(buf, n, "-");
	else if (p->vm_rss_kb >= 1024ull * 1024)
		snprintf(buf, n, "%.1f GiB", (double)p->vm_rss_kb / (1024.0 * 1024.0));
	else
		snprintf(buf, n, "%llu MiB", (p->vm_rss_kb + 512) / 1024);
	return buf;
}

static void gpu_block(FILE *f, const struct account_gpu *g, const struct holders_scan *s, const struct render_opts *o)
{
	headline(f, g, o);
	if (g->nvml && g->nvml->error) {
		char *e = escape_term(g->nvml->error, strlen(g->nvml->error));
		fprintf(f, "  %s", render_col(o, C_RED));
		render_wrap(f, e, o->width, "  ", 2);
		fputs(render_col(o, C_OFF), f);
		free(e);
	}
	if (g->hidden_outside) {
		char mb[48];
		char *line = xasprintf("%s held by processes outside this PID namespace that NVML does not list here "
				       "(the driver shows each namespace only its own processes; nvidia-smi says \"No "
				       "running processes found\"). Run gpuwho on the host, or in a container started "
				       "with --pid=host, to see and free them.",
				       mib(mb, sizeof mb, g->unattributed_bytes));
		fprintf(f, "  %s! ", render_col(o, C_YEL));
		render_wrap(f, line, o->width, "    ", 4);
		fputs(render_col(o, C_OFF), f);
		free(line);
	}
	if (g->nprocs == 0) {
		fprintf(f, "  %s\n", g->procs_known || !g->target ? "no processes" : "no process holds the device");
		return;
	}
	char **conts = xcalloc(g->nprocs, sizeof *conts);
	int wcont = 9;
	bool any_cont = false;
	for (size_t i = 0; i < g->nprocs; i++) {
		conts[i] = container_cell(g->procs[i].info);
		if (strcmp(conts[i], "-"))
			any_cont = true;
		if ((int)strlen(conts[i]) > wcont)
			wcont = (int)strlen(conts[i]);
	}
	if (wcont > 24)
		wcont = 24;
	fprintf(f, "%s  %7s %-8s %-5s %11s %9s  ", render_col(o, C_DIM), "PID", "USER", "STATE", "MEMORY", "HOST");
	if (any_cont)
		fprintf(f, "%-*s ", wcont, "OWNER");
	fprintf(f, "COMMAND%s\n", render_col(o, C_OFF));
	unsigned seen = 0;   /* kinds present, for the legend */
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		const struct proc_info *p = r->info;
		seen |= 1u << r->kind;
		char st[8] = "?", mb[48];
		if (p)
			snprintf(st, sizeof st, "%c%s", p->state ? p->state : '?', p->nthreads > 1 ? "l" : "");
		bool odd = p && (p->state == 'Z' || p->state == 'D' || p->state == 'T' || p->state == 't');
		char *user = p && p->user ? escape_term(p->user, strlen(p->user)) : xstrdup("?");
		char hb[32];
		int used = fprintf(f, "  %7d %-8.8s %s%-5s%s %11s %9s  ", r->pid, user, odd ? render_col(o, C_RED) : "", st,
				   odd ? render_col(o, C_OFF) : "", mem_cell(r, mb, sizeof mb), host_cell(p, hb, sizeof hb)) -
			   (odd && o->color ? 9 : 0);
		if (any_cont)
			used += fprintf(f, "%-*.*s ", wcont, wcont, conts[i]);
		char *cmd = command_cell(r);
		bool special = r->kind == ACCOUNT_OUTSIDE || r->kind == ACCOUNT_EXITED;
		fputs(special ? render_col(o, C_YEL) : "", f);
		if (o->cut && o->width > 0 && used + (int)strlen(cmd) > o->width && o->width - used > 4)
			fprintf(f, "%.*s…", o->width - used - 1, cmd);
		else
			fputs(cmd, f);
		fprintf(f, "%s\n", special ? render_col(o, C_OFF) : "");
		free(cmd);
		free(user);
		free(conts[i]);
	}
	free(conts);
	/* The rows that need a sentence, then a legend for the memory words. */
	for (size_t i = 0; i < g->nprocs; i++) {
		const struct account_proc *r = &g->procs[i];
		if (r->kind != ACCOUNT_OUTSIDE && r->kind != ACCOUNT_EXITED && !(r->kind == ACCOUNT_ATTRIBUTED && !r->holder))
			continue;
		char *m = row_message(g, r, s), mb[48];
		char *line;
		if (r->kind == ACCOUNT_ATTRIBUTED)
			line = xasprintf("PID %d: %s.", r->pid, m);
		else if (r->kind == ACCOUNT_EXITED)
			line = xasprintf("%s. NVML still lists %s for it.", m,
					 r->used_known ? mib(mb, sizeof mb, r->used_bytes) : "memory of unknown size");
		else
			line = xasprintf("%s, %s.", m, r->used_known ? mib(mb, sizeof mb, r->used_bytes) : "memory unknown");
		fprintf(f, "  %s! ", render_col(o, C_YEL));
		render_wrap(f, line, o->width, "    ", 4);
		fputs(render_col(o, C_OFF), f);
		free(m);
		free(line);
	}
	static const struct { enum account_kind k; const char *text; } legend[] = {
		{ACCOUNT_INHERITED, "inherited: holds the device with no NVML entry while an exited PID's memory is "
				 "still in use; it likely inherited that PID's device files."},
		{ACCOUNT_UNMATCHED, "unmapped: holds the device; NVML names host PIDs, which this PID namespace cannot "
				 "map, so its memory may be among the host PIDs above."},
		{ACCOUNT_DEVICE_ONLY, "none: holds the device, no GPU memory (monitoring tools, the persistence daemon)."},
		{ACCOUNT_UNKNOWN, "unknown: holds the device, memory unknown (NVML did not list this GPU's processes)."},
	};
	for (size_t i = 0; i < sizeof legend / sizeof legend[0]; i++)
		if (seen & (1u << legend[i].k)) {
			fprintf(f, "  %s", render_col(o, C_DIM));
			render_wrap(f, legend[i].text, o->width, "    ", 2);
			fputs(render_col(o, C_OFF), f);
		}
}

void render_ps_text(FILE *f, const struct account *a, const bool *sel, const struct nvml_info *nv,
		    const struct holders_scan *s, const struct render_opts *o)
{
	bool said = nv == NULL || !nv->loaded || (nv->error && nv->ngpus == 0) || (nv->loaded && !a->host_pidns);
	if (!nv) {
		render_wrap(f, "NVML not asked (--no-nvml): showing the holders /proc and /dev show, GPU memory unknown.",
		     o->width, "", 0);
	} else if (!nv->loaded || (nv->error && nv->ngpus == 0)) {
		char *m = xasprintf("NVML: %s", nv->error ? nv->error : "did not answer");
		char *e = escape_term(m, strlen(m));
		fputs(render_col(o, C_YEL), f);
		render_wrap(f, e, o->width, "  ", 0);
		fputs(render_col(o, C_OFF), f);
		if (!nv->loaded)
			render_wrap(f, "Showing the holders /proc and /dev show; GPU memory unknown.", o->width, "", 0);
		free(m);
		free(e);
	}
	if (nv && nv->loaded && !a->host_pidns)
		render_wrap(f, "This /proc is a child PID namespace's (a container's): NVML names host PIDs, and a PID it "
			"names that is not here is held outside this namespace.", o->width, "", 0);
	size_t shown = 0;
	for (size_t i = 0; i < a->ngpus; i++) {
		if (sel && !sel[i])
			continue;
		if (shown++ || said)
			fputc('\n', f);
		gpu_block(f, &a->gpus[i], s, o);
	}
	if (a->ngpus == 0) {
		fprintf(f, "%sNo NVIDIA GPUs found.\n", said ? "\n" : "");
	}
	if (!sel && a->nothers) {
		char *line = xasprintf("Holding NVIDIA control nodes only (no GPU node, no GPU memory):");
		for (size_t i = 0; i < a->nothers; i++) {
			const struct proc_info *p = &a->others[i]->info;
			char *c = escape_term(p->comm ? p->comm : "?", p->comm ? strlen(p->comm) : 1);
			char *n = xasprintf("%s%s %d (%s)", line, i ? "," : "", p->pid, c);
			free(line);
			free(c);
			line = n;
		}
		fputc('\n', f);
		render_wrap(f, line, o->width, "  ", 0);
		free(line);
	}
	for (size_t i = 0; i < s->nmounts; i++) {
		char *mp = escape_term(s->mounts[i].mount_point, strlen(s->mounts[i].mount_point));
		char *line = xasprintf("%s is a mount point (bind mount), not a holder: fuser's \"kernel mount\".", mp);
		fprintf(f, "%s", render_col(o, C_DIM));
		render_wrap(f, line, o->width, "  ", 0);
		fputs(render_col(o, C_OFF), f);
		free(mp);
		free(line);
	}
	if (s->ndenied) {
		char *line = xasprintf("%zu process%s could not be inspected (permission denied); run as root to see "
				       "them (gpuwho holders names them).", s->ndenied, s->ndenied == 1 ? "" : "es");
		render_wrap(f, line, o->width, "  ", 0);
		free(line);
	}
	for (size_t i = 0; i < s->ntimed_out; i++) {
		char *c = escape_str(s->timed_out[i].comm), *w = escape_str(s->timed_out[i].why);
		char *line = xasprintf("skipped PID %d (%s): %s", s->timed_out[i].pid, c, w);
		free(w);
		fputs(render_col(o, C_YEL), f);
		render_wrap(f, line, o->width, "  ", 0);
		fputs(render_col(o, C_OFF), f);
		free(c);
		free(line);
	}
	for (size_t i = 0; i < s->nnotes; i++) {
		char *n = escape_str(s->notes[i]);
		char *line = xasprintf("note: %s", n);
		render_wrap(f, line, o->width, "  ", 0);
		free(line);
		free(n);
	}
}

static json_t *jbytes(bool known, unsigned long long b)
{
	return known ? json_integer((json_int_t)b) : json_null();
}

static json_t *lists_json(unsigned lists)
{
	json_t *l = json_array();
	if (lists & NVML_LIST_COMPUTE)
		json_array_append_new(l, json_string("compute"));
	if (lists & NVML_LIST_GRAPHICS)
		json_array_append_new(l, json_string("graphics"));
	if (lists & NVML_LIST_MPS)
		json_array_append_new(l, json_string("mps"));
	return l;
}

static json_t *row_json(const struct account_gpu *g, const struct account_proc *r, const struct holders_scan *s)
{
	json_t *o = r->info ? render_proc_json(r->info) : json_object();
	json_object_set_new(o, "pid", json_integer(r->pid));
	json_object_set_new(o, "kind", json_string(account_kind_name(r->kind)));
	json_object_set_new(o, "host_pid", r->host_pid >= 0 ? json_integer(r->host_pid) : json_null());
	json_object_set_new(o, "in_nvml", json_boolean(r->in_nvml));
	json_object_set_new(o, "used_bytes", jbytes(r->used_known, r->used_bytes));
	json_object_set_new(o, "lists", lists_json(r->lists));
	json_t *holds = json_array();
	for (size_t i = 0; r->holder && i < r->holder->nholds; i++)
		json_array_append_new(holds, json_str_or_null(s->targets[r->holder->holds[i].target].path));
	json_object_set_new(o, "holds", holds);
	if (r->kind == ACCOUNT_EXITED) {
		json_t *h = json_array();
		for (size_t i = 0; i < g->nprocs; i++)
			if (g->procs[i].kind == ACCOUNT_INHERITED)
				json_array_append_new(h, json_integer(g->procs[i].pid));
		json_object_set_new(o, "heirs", h);
	}
	char *m = row_message(g, r, s);
	json_object_set_new(o, "message", json_str_or_null(m));
	free(m);
	return o;
}

static json_t *gpu_json(const struct account_gpu *g, const struct holders_scan *s)
{
	const struct nvml_gpu *n = g->nvml;
	json_t *procs = json_array();
	for (size_t i = 0; i < g->nprocs; i++)
		json_array_append_new(procs, row_json(g, &g->procs[i], s));
	json_t *mem = json_pack("{s:o, s:o, s:o, s:o, s:i, s:b, s:b}", "total_bytes", jbytes(g->mem_known, g->total_bytes),
				"used_bytes", jbytes(g->mem_known, g->used_bytes), "attributed_bytes",
				jbytes(g->procs_known, g->attributed_bytes), "unattributed_bytes",
				jbytes(g->unattributed_known, g->unattributed_bytes), "unknown_processes",
				(int)g->nunknown, "over_attributed", g->over_attributed,
				"hidden_outside_namespace", g->hidden_outside);
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o, s:o}", "index",
			 g->index >= 0 ? json_integer(g->index) : json_null(), "minor",
			 g->minor >= 0 ? json_integer(g->minor) : json_null(), "uuid",
			 n && n->uuid_rc == 0 ? json_str_or_null(n->uuid) : json_null(), "name",
			 n && n->name_rc == 0 ? json_str_or_null(n->name) : json_null(), "bus_id", json_str_or_null(g->bus_id), "device",
			 g->target ? json_str_or_null(g->target->path) : json_null(), "processes_known", g->procs_known, "memory",
			 mem, "processes", procs, "error", n ? json_str_or_null(n->error) : json_null());
}

json_t *render_ps_json(const struct account *a, const bool *sel, const struct nvml_info *nv,
		       const struct holders_scan *s)
{
	json_t *gpus = json_array();
	for (size_t i = 0; i < a->ngpus; i++)
		if (!sel || sel[i])
			json_array_append_new(gpus, gpu_json(&a->gpus[i], s));
	json_t *others = json_array();
	for (size_t i = 0; !sel && i < a->nothers; i++) {
		const struct holder *h = a->others[i];
		json_t *o = render_proc_json(&h->info);
		json_t *holds = json_array();
		for (size_t k = 0; k < h->nholds; k++)
			json_array_append_new(holds, json_str_or_null(s->targets[h->holds[k].target].path));
		json_object_set_new(o, "holds", holds);
		json_array_append_new(others, o);
	}
	/* What could not be seen: the same keys as `gpuwho holders --json`. */
	json_t *hj = render_holders_json(s);
	json_t *root = json_pack("{s:s, s:i, s:s, s:b, s:o, s:o}", "schema", "gpuwho.ps", "schema_version", 1,
				 "pid_namespace", a->host_pidns ? "host" : "child", "nvml_ok", a->nvml_ok, "gpus", gpus,
				 "control_only_holders", others);
	static const char *const keep[] = {"mounts", "not_inspected", "timed_out", "partial", "scanned", "notes"};
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		json_object_set(root, keep[i], json_object_get(hj, keep[i]));
	json_decref(hj);
	/* A lazy snapshot (check's) looked only at NVML's PIDs: device-only holders may be missing. */
	json_put(root, "scan_limited", json_boolean(s->limited));
	if (nv)
		json_object_set_new(root, "nvml", nvml_info_to_json(nv));
	return root;
}
