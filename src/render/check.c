/* render/check: `gpuwho check` — one short line per GPU that fails (a Slurm drain reason, an NHC
 * message), nothing for a healthy one; and the JSON of the same. What fails is decided by
 * cmd/check.c from the diagnosis; this file only words it. */
#include "diagnose/diagnose.h"
#include "escape.h"
#include "json.h"
#include "render/render.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* A drain reason is shown in `sinfo -R` and `scontrol show node`: keep it to one terminal line's
 * worth, cut on a character boundary. */
#define CHECK_LINE_MAX 200

/* The finding's headline without its "GPU N: " prefix and without the advice after " — ". */
static char *headline_core(const char *h)
{
	const char *p = h;
	if (str_starts(p, "GPU ")) {
		const char *c = strstr(p, ": ");
		if (c)
			p = c + 2;
	}
	const char *dash = strstr(p, " \xe2\x80\x94 ");   /* " — " */
	return dash ? xstrndup(p, (size_t)(dash - p)) : xstrdup(p);
}

/* Cuts s (UTF-8) to at most max bytes, ending in "..." when cut. */
static void cut_utf8(char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return;
	size_t k = max - 3;
	while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
		k--;
	memcpy(s + k, "...", 4);
}

char *render_check_line(const struct check_report *r, const struct check_gpu *cg)
{
	const struct account_gpu *g = &r->d->acct.gpus[cg->slot];
	/* Built from numbers, not from the node's path, which a snapshot may make anything: the command
	 * after the line must work as printed. */
	char *sel = account_gpu_selector(g);
	char *what;
	if (cg->job_row && (!cg->finding || cg->finding->severity < DIAG_WARNING)) {
		const struct account_proc *jr = cg->job_row;
		const struct proc_info *p = jr->info;
		char mb[48];
		what = xasprintf("%s held by PID %d (%s) of job %s of user %s, which ended",
				 jr->used_known ? fmt_mib(mb, sizeof mb, jr->used_bytes) : "memory",
				 jr->pid, p->comm ? p->comm : "?", r->ended_job, p->user ? p->user : "?");
	} else {
		what = headline_core(cg->finding->headline);
	}
	char *line = xasprintf("gpu %s: %s", sel, what);
	free(what);
	/* The headline quotes process names: no control or bidi byte may reach a terminal or a log. */
	char *e = escape_term(line, strlen(line));
	free(line);
	char *tail = xasprintf(" - gpuwho why %s", sel);
	cut_utf8(e, CHECK_LINE_MAX - strlen(tail));
	char *out = xasprintf("%s%s", e, tail);
	free(e);
	free(tail);
	free(sel);
	return out;
}

void render_check_text(FILE *f, const struct check_report *r)
{
	for (size_t i = 0; i < r->ngpus; i++) {
		if (!r->gpus[i].bad)
			continue;
		char *l = render_check_line(r, &r->gpus[i]);
		fprintf(f, "%s\n", l);
		free(l);
	}
	if (!r->host)
		return;
	for (size_t i = 0; i < r->d->nfindings; i++) {
		const struct finding *x = &r->d->findings[i];
		if (x->slot >= 0 || x->severity < DIAG_WARNING)
			continue;
		char *core = headline_core(x->headline);
		char *e = escape_term(core, strlen(core));
		cut_utf8(e, CHECK_LINE_MAX - 20);
		fprintf(f, "host: %s - gpuwho why\n", e);
		free(e);
		free(core);
	}
}

/* The owners of a finding's processes (labels), for scripts that page the owner. */
static json_t *owners_json(const struct snapshot *s, const int *pids, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct proc_info *p = snapshot_find_proc(s, pids[i]);
		if (!p || owner_empty(&p->owner))
			continue;
		json_t *o = render_owner_json(p);
		json_put(o, "pid", json_integer(p->pid));
		json_put(o, "user", json_str_or_null(p->user));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *render_check_json(const struct check_report *r)
{
	json_t *gs = json_array();
	for (size_t i = 0; i < r->ngpus; i++) {
		const struct check_gpu *cg = &r->gpus[i];
		const struct account_gpu *g = &r->d->acct.gpus[cg->slot];
		const struct finding *x = cg->finding;
		json_t *o = json_object();
		json_put(o, "gpu", g->index >= 0 ? json_integer(g->index) : json_null());
		json_put(o, "minor", g->minor >= 0 ? json_integer(g->minor) : json_null());
		json_put(o, "uuid", g->nvml && g->nvml->uuid_rc == 0 ? json_str_or_null(g->nvml->uuid) : json_null());
		json_put(o, "ok", json_boolean(!cg->bad));
		json_put(o, "used_bytes", g->mem_known ? json_u64(g->used_bytes) : json_null());
		if (cg->bad) {
			char *l = render_check_line(r, cg);
			json_put(o, "line", json_str_or_null(l));
			free(l);
		} else {
			json_put(o, "line", json_null());
		}
		json_put(o, "verdict", x ? json_string(x->verdict) : json_null());
		json_put(o, "severity", x ? json_string(diag_severity_name(x->severity)) : json_null());
		json_put(o, "headline", x ? json_str_or_null(x->headline) : json_null());
		json_put(o, "fix", x ? json_str_or_null(x->fix) : json_null());
		json_t *pids = json_array();
		for (size_t k = 0; x && k < x->npids; k++)
			json_array_append_new(pids, json_integer(x->pids[k]));
		json_put(o, "pids", pids);
		json_put(o, "owners", x ? owners_json(r->s, x->pids, x->npids) : json_array());
		json_put(o, "ended_job_pid", cg->job_row ? json_integer(cg->job_row->pid) : json_null());
		json_array_append_new(gs, o);
	}
	json_t *host = json_array();
	for (size_t i = 0; r->host && i < r->d->nfindings; i++) {
		const struct finding *x = &r->d->findings[i];
		if (x->slot >= 0 || x->severity < DIAG_WARNING)
			continue;
		json_array_append_new(host, json_pack("{s:s, s:s, s:o, s:o}", "verdict", x->verdict, "severity",
						      diag_severity_name(x->severity), "headline",
						      json_str_or_null(x->headline), "fix", json_str_or_null(x->fix)));
	}
	bool ok = true;
	for (size_t i = 0; i < r->ngpus; i++)
		ok &= !r->gpus[i].bad;
	json_t *o = json_pack("{s:s, s:i, s:b, s:b, s:s, s:o, s:o, s:o, s:o}", "schema", "gpuwho.check", "schema_version",
			      1, "inspected", r->inspected, "ok", r->inspected && ok, "selected_by", r->selected_by,
			      "ended_job", json_str_or_null(r->ended_job), "scan",
			      json_string(r->s->scan.limited ? "limited" : "full"), "waited_s", json_real(r->waited_s),
			      "gpus", gs);
	json_put(o, "host", r->host ? host : (json_decref(host), json_null()));
	json_put(o, "error", json_str_or_null(r->error));
	return o;
}
