/* account: joins NVML's process lists with the holder engine's processes, per GPU. Pure. */
#include "diagnose/account.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The holder whose pid (this /proc's) is pid, or NULL. s->holders is sorted by pid. */
static const struct holder *find_holder(const struct holders_scan *s, int pid)
{
	size_t lo = 0, hi = s->nholders;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int p = s->holders[mid].info.pid;
		if (p == pid)
			return &s->holders[mid];
		if (p < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const struct proc_info *find_extra(const struct proc_info *extra, size_t n, int pid)
{
	for (size_t i = 0; i < n; i++)
		if (extra[i].pid == pid)
			return &extra[i];
	return NULL;
}

/* True when h holds target index t (by fd, mapping, thread or copy). */
static bool holds_target(const struct holder *h, size_t t)
{
	for (size_t i = 0; i < h->nholds; i++)
		if (h->holds[i].target == t)
			return true;
	return false;
}

static bool holds_any_gpu(const struct holders_scan *s, const struct holder *h)
{
	for (size_t i = 0; i < h->nholds; i++)
		if (s->targets[h->holds[i].target].gpu_minor >= 0)
			return true;
	return false;
}

static bool bus_equal(const char *a, const char *b)
{
	char na[64], nb[64];
	if (!a || !b)
		return false;
	nvml_normalize_bus_id(a, na, sizeof na);
	nvml_normalize_bus_id(b, nb, sizeof nb);
	return strcasecmp(na, nb) == 0;
}

/* The index of the scanned GPU node for a minor (or a bus id when the minor is unknown), or -1. */
static long gpu_target(const struct holders_scan *s, int minor, const char *bus)
{
	for (size_t i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];
		if (t->gpu_minor < 0)
			continue;
		if (minor >= 0 ? t->gpu_minor == minor : bus_equal(t->bus_id, bus))
			return (long)i;
	}
	return -1;
}

static struct account_proc *add_row(struct account_gpu *g, size_t *cap)
{
	xgrow(&g->procs, cap, g->nprocs + 1, sizeof *g->procs);
	struct account_proc *r = &g->procs[g->nprocs++];
	memset(r, 0, sizeof *r);
	r->host_pid = -1;
	return r;
}

/* Sort groups: NVML rows first, then the processes that may carry their memory, then the rest. */
static int kind_group(enum account_kind k)
{
	switch (k) {
	case ACCOUNT_ATTRIBUTED:
	case ACCOUNT_OUTSIDE:
	case ACCOUNT_EXITED:
		return 0;
	case ACCOUNT_INHERITED:
	case ACCOUNT_UNMATCHED:
		return 1;
	case ACCOUNT_UNKNOWN:
		return 2;
	case ACCOUNT_DEVICE_ONLY:
		return 3;
	}
	return 4;
}

static int cmp_row(const void *a, const void *b)
{
	const struct account_proc *x = a, *y = b;
	int gx = kind_group(x->kind), gy = kind_group(y->kind);
	if (gx != gy)
		return gx < gy ? -1 : 1;
	if (gx == 0) {
		if (x->used_known != y->used_known)
			return x->used_known ? -1 : 1;
		if (x->used_known && x->used_bytes != y->used_bytes)
			return x->used_bytes > y->used_bytes ? -1 : 1;
	}
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Fills g's rows: NVML's entries joined to this /proc, then the GPU node's other holders. */
static void fill_rows(struct account_gpu *g, long tgt, const struct holders_scan *s, const struct proc_info *extra,
		      size_t nextra, bool host_pidns)
{
	size_t cap = 0;
	bool pending = false;   /* NVML rows no visible process answers for */
	if (g->nvml && g->procs_known) {
		for (size_t i = 0; i < g->nvml->nprocs; i++) {
			const struct nvml_proc *np = &g->nvml->procs[i];
			struct account_proc *r = add_row(g, &cap);
			r->pid = (int)np->pid;
			r->host_pid = (int)np->pid;
			r->in_nvml = true;
			r->used_known = np->used_known;
			r->used_bytes = np->used_known ? np->used_bytes : 0;
			r->lists = np->lists;
			r->holder = find_holder(s, r->pid);
			if (r->holder)
				r->info = &r->holder->info;
			else if (host_pidns)
				r->info = find_extra(extra, nextra, r->pid);
			if (r->info) {
				r->kind = ACCOUNT_ATTRIBUTED;
			} else {
				r->kind = host_pidns ? ACCOUNT_EXITED : ACCOUNT_OUTSIDE;
				pending = true;
			}
			if (np->used_known)
				g->attributed_bytes += np->used_bytes;
			else
				g->nunknown++;
		}
	}
	if (tgt >= 0) {
		for (size_t i = 0; i < s->nholders; i++) {
			const struct holder *h = &s->holders[i];
			if (!holds_target(h, (size_t)tgt))
				continue;
			bool listed = false;
			for (size_t k = 0; k < g->nprocs && !listed; k++)
				listed = g->procs[k].in_nvml && g->procs[k].holder == h;
			if (listed)
				continue;
			struct account_proc *r = add_row(g, &cap);
			r->pid = h->info.pid;
			r->host_pid = host_pidns ? h->info.pid : -1;
			r->info = &h->info;
			r->holder = h;
			if (!g->procs_known)
				r->kind = ACCOUNT_UNKNOWN;
			else if (pending)
				r->kind = host_pidns ? ACCOUNT_INHERITED : ACCOUNT_UNMATCHED;
			else
				r->kind = ACCOUNT_DEVICE_ONLY;
		}
	}
	if (g->nprocs > 1)
		qsort(g->procs, g->nprocs, sizeof *g->procs, cmp_row);
	if (g->mem_known && g->procs_known) {
		g->unattributed_known = true;
		if (g->attributed_bytes > g->used_bytes)
			g->over_attributed = true;
		else
			g->unattributed_bytes = g->used_bytes - g->attributed_bytes;
		g->hidden_outside = !host_pidns && g->unattributed_bytes >= ACCOUNT_HIDDEN_MIN_BYTES;
	}
}

static struct account_gpu *add_gpu(struct account *a, size_t *cap)
{
	xgrow(&a->gpus, cap, a->ngpus + 1, sizeof *a->gpus);
	struct account_gpu *g = &a->gpus[a->ngpus++];
	memset(g, 0, sizeof *g);
	g->index = -1;
	g->minor = -1;
	return g;
}

void account_build(const struct nvml_info *nv, const struct holders_scan *s, const struct proc_info *extra,
		   size_t nextra, bool host_pidns, struct account *out)
{
	memset(out, 0, sizeof *out);
	out->host_pidns = host_pidns;
	out->nvml_ok = nv && nv->loaded;
	size_t cap = 0;
	bool *used = xcalloc(s->ntargets + 1, sizeof *used);   /* GPU nodes already given a GPU */
	for (size_t i = 0; out->nvml_ok && i < nv->ngpus; i++) {
		const struct nvml_gpu *n = &nv->gpus[i];
		struct account_gpu *g = add_gpu(out, &cap);
		g->index = (int)n->index;
		g->nvml = n;
		if (n->handle_rc == 0 && n->minor_rc == 0)
			g->minor = n->minor;
		if (n->handle_rc == 0 && n->bus_id_rc == 0 && n->bus_id[0])
			g->bus_id = n->bus_id;
		long t = -1;
		if (g->minor >= 0 || g->bus_id)
			t = gpu_target(s, g->minor, g->bus_id);
		if (t >= 0 && used[t])
			t = -1;   /* two NVML GPUs claiming one node: trust the first */
		if (t >= 0) {
			used[t] = true;
			g->target = &s->targets[t];
			if (g->minor < 0)
				g->minor = g->target->gpu_minor;
			if (!g->bus_id)
				g->bus_id = g->target->bus_id;
		}
		g->procs_known = n->handle_rc == 0 && n->list_rc[0] == 0;
		if (n->handle_rc == 0 && n->mem_rc == 0) {
			g->mem_known = true;
			g->total_bytes = n->mem_total;
			g->used_bytes = n->mem_used;
		}
		fill_rows(g, t, s, extra, nextra, host_pidns);
	}
	/* GPU nodes NVML did not name (or all of them, when NVML did not answer). */
	for (size_t t = 0; t < s->ntargets; t++) {
		if (s->targets[t].gpu_minor < 0 || used[t] || strcmp(s->targets[t].kind, "gpu"))
			continue;
		struct account_gpu *g = add_gpu(out, &cap);
		g->minor = s->targets[t].gpu_minor;
		g->target = &s->targets[t];
		g->bus_id = g->target->bus_id;
		fill_rows(g, (long)t, s, extra, nextra, host_pidns);
	}
	free(used);
	/* Holders of control nodes only (nvidiactl, nvidia-uvm...) that no NVML list names. */
	size_t ocap = 0;
	for (size_t i = 0; i < s->nholders; i++) {
		const struct holder *h = &s->holders[i];
		if (holds_any_gpu(s, h))
			continue;
		bool listed = false;
		for (size_t k = 0; k < out->ngpus && !listed; k++)
			for (size_t r = 0; r < out->gpus[k].nprocs && !listed; r++)
				listed = out->gpus[k].procs[r].holder == h;
		if (listed)
			continue;
		xgrow(&out->others, &ocap, out->nothers + 1, sizeof *out->others);
		out->others[out->nothers++] = h;
	}
}

void account_from_snapshot(const struct snapshot *s, struct account *out)
{
	/* account_build matches `others` to NVML's PIDs only in the host's PID namespace. */
	account_build(s->nvml_asked ? &s->nvml : NULL, &s->scan, s->others, s->nothers, s->host_pidns, out);
}

void account_free(struct account *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->ngpus; i++)
		free(a->gpus[i].procs);
	free(a->gpus);
	free(a->others);
	memset(a, 0, sizeof *a);
}

/* "/dev/nvidia3", "nvidia3" -> 3; else -1. */
static int dev_minor(const char *sel)
{
	const char *b = strrchr(sel, '/');
	b = b ? b + 1 : sel;
	unsigned long long k;
	if (str_starts(b, "nvidia") && parse_uint(b + 6, &k) && k < 256)
		return (int)k;
	return -1;
}

int account_select(const struct account *a, const char *sel)
{
	unsigned long long k;
	if (parse_uint(sel, &k)) {
		for (size_t i = 0; i < a->ngpus; i++) {
			const struct account_gpu *g = &a->gpus[i];
			if (g->index >= 0 ? (unsigned long long)g->index == k
					  : (g->minor >= 0 && (unsigned long long)g->minor == k))
				return (int)i;
		}
		return -1;
	}
	if (strncasecmp(sel, "GPU-", 4) == 0) {
		int found = -1;
		size_t n = strlen(sel);
		for (size_t i = 0; i < a->ngpus; i++) {
			const struct account_gpu *g = &a->gpus[i];
			if (!g->nvml || g->nvml->uuid_rc != 0)
				continue;
			if (strcasecmp(g->nvml->uuid, sel) == 0)
				return (int)i;
			if (strncasecmp(g->nvml->uuid, sel, n) == 0) {
				if (found >= 0)
					return -2;
				found = (int)i;
			}
		}
		return found;
	}
	/* A MIG device: its UUID (MIG-..., a unique prefix will do) or nvidia-smi's GPU:GI:CI (0:1:0).
	 * It selects the GPU it is part of: memory and holders are per GPU (a process's gi/ci are in
	 * the JSON). */
	if (strncasecmp(sel, "MIG-", 4) == 0) {
		int found = -1;
		size_t n = strlen(sel);
		for (size_t i = 0; i < a->ngpus; i++)
			for (size_t k = 0; a->gpus[i].nvml && k < a->gpus[i].nvml->nmigs; k++) {
				const char *u = a->gpus[i].nvml->migs[k].uuid;
				if (strcasecmp(u, sel) == 0)
					return (int)i;
				if (strncasecmp(u, sel, n) == 0) {
					if (found >= 0 && found != (int)i)
						return -2;
					found = (int)i;
				}
			}
		return found;
	}
	unsigned gidx, gi, ci;
	char tail;
	if (sscanf(sel, "%u:%u:%u%c", &gidx, &gi, &ci, &tail) == 3 && !strchr(sel, '.')) {
		for (size_t i = 0; i < a->ngpus; i++) {
			const struct account_gpu *g = &a->gpus[i];
			if (g->index != (int)gidx || !g->nvml)
				continue;
			for (size_t k = 0; k < g->nvml->nmigs; k++)
				if (g->nvml->migs[k].gi == gi && g->nvml->migs[k].ci == ci)
					return (int)i;
		}
		return -1;
	}
	int m = dev_minor(sel);
	if (m >= 0) {
		for (size_t i = 0; i < a->ngpus; i++)
			if (a->gpus[i].minor == m)
				return (int)i;
		return -1;
	}
	char want[64], full[64];
	/* "65:00.0", as lspci prints it: domain 0 */
	const char *colon = strchr(sel, ':');
	if (colon && colon == strrchr(sel, ':') && strlen(sel) < 32) {
		snprintf(full, sizeof full, "0000:%s", sel);
		sel = full;
	}
	if (strchr(sel, ':') && nvml_normalize_bus_id(sel, want, sizeof want))
		for (size_t i = 0; i < a->ngpus; i++)
			if (bus_equal(a->gpus[i].bus_id, want))
				return (int)i;
	return -1;
}

char *account_gpu_selector(const struct account_gpu *g)
{
	if (g->index >= 0)
		return xasprintf("%d", g->index);
	return xasprintf("/dev/nvidia%d", g->minor);
}

char *account_select_error(const struct account *a, const char *sel, int rc)
{
	if (rc == -2)
		return xasprintf("'%s' matches more than one GPU's UUID; give more of it", sel);
	return xasprintf("no GPU matches '%s' (%zu GPU%s here; selectors: index, UUID GPU-..., PCI bus id "
			 "0000:65:00.0, /dev/nvidiaN, a MIG device MIG-... or GPU:GI:CI, comma lists, all)", sel, a->ngpus,
			 a->ngpus == 1 ? "" : "s");
}

int account_select_list(const struct account *a, const char *sel, bool *mark, char **err)
{
	*err = NULL;
	if (!strcasecmp(sel, "all")) {
		for (size_t i = 0; i < a->ngpus; i++)
			mark[i] = true;
		return 0;
	}
	char *copy = xstrdup(sel), *save = NULL;
	int rc = 0;
	if (!*copy || copy[strlen(copy) - 1] == ',' || *copy == ',' || strstr(copy, ",,")) {
		*err = xasprintf("'%s' has an empty item: write GPUs as 0,1 or GPU-...,GPU-...", sel);
		rc = -1;
	}
	for (char *it = strtok_r(copy, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save)) {
		int k = account_select(a, it);
		if (k < 0) {
			*err = account_select_error(a, it, k);
			rc = -1;
		} else {
			mark[k] = true;
		}
	}
	free(copy);
	return rc;
}

const char *account_kind_name(enum account_kind k)
{
	switch (k) {
	case ACCOUNT_ATTRIBUTED: return "attributed";
	case ACCOUNT_OUTSIDE: return "outside_namespace";
	case ACCOUNT_EXITED: return "exited";
	case ACCOUNT_INHERITED: return "inherited";
	case ACCOUNT_UNMATCHED: return "unmatched";
	case ACCOUNT_DEVICE_ONLY: return "device_only";
	case ACCOUNT_UNKNOWN: return "memory_unknown";
	}
	return "unknown";
}
