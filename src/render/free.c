/* render/free: `gpuwho free` as text and JSON — the plan, and after --yes what happened. Decides nothing. */
#include "escape.h"
#include "free/act.h"
#include "free/plan.h"
#include "json.h"
#include "render/render.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *errno_name(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ESRCH: return "ESRCH";
	case EINVAL: return "EINVAL";
	case EACCES: return "EACCES";
	}
	return "error";
}

/* What happened to procs[i], in words (raw: may hold a wait channel's name). */
static char *outcome_text(const struct free_result *r, const struct free_proc *fp)
{
	switch (r->outcome) {
	case FREE_OUT_NOT_SIGNALLED:
		return xstrdup("not signalled");
	case FREE_OUT_GONE:
		return xstrdup("had already exited");
	case FREE_OUT_REUSED:
		return xasprintf("NOT signalled: PID %d now belongs to another process (start time %llu ticks after boot, "
				 "the plan's was %llu): untouched", fp->pid, r->start_now,
				 fp->info ? fp->info->start_ticks : 0ULL);
	case FREE_OUT_CHANGED:
		return xasprintf("NOT signalled: PID %d is no longer what the plan judged (its owner, its name, or a "
				 "kernel thread now): untouched", fp->pid);
	case FREE_OUT_NO_LONGER:
		return xasprintf("NOT signalled: right before the signal PID %d no longer held what made it a target (%s): "
				 "untouched", fp->pid, fp->role == FREE_ROLE_LAUNCHER ? "an ancestor of its GPU holder"
										     : "the GPU's device files");
	case FREE_OUT_DENIED:
		return xasprintf("not permitted (%s): run as root, or as the process's owner", errno_name(r->err));
	case FREE_OUT_FAILED:
		return xasprintf("could not be signalled: %s", strerror(r->err));
	case FREE_OUT_TERM:
		return xasprintf("exited on SIGTERM%s after %.1f s", r->sent_cont ? " (+SIGCONT)" : "", r->after_s);
	case FREE_OUT_KILL:
		return xasprintf("exited on SIGKILL after %.1f s", r->after_s);
	case FREE_OUT_ALIVE:
		if (r->state == 'D' || (fp->info && fp->info->driver_wait))
			return xasprintf("STILL ALIVE after SIGKILL: state %c (uninterruptible)%s%s%s%s — it is stuck in the "
					 "kernel and exits when the call returns; if that never happens only a reboot (or a "
					 "driver reload) frees it", r->state ? r->state : '?', r->wchan ? ", waiting in " : "",
					 r->wchan ? r->wchan : "", fp->info && fp->info->driver_wait ? "; " : "",
					 fp->info && fp->info->driver_wait ? fp->info->driver_wait : "");
		return xasprintf("STILL ALIVE after SIGKILL: state %c%s%s", r->state ? r->state : '?',
				 r->wchan ? ", waiting in " : "", r->wchan ? r->wchan : "");
	}
	return xstrdup("?");
}

static void proc_line(FILE *f, const struct free_proc *fp, const struct render_opts *o)
{
	char mem[32] = "-";
	if (fp->in_nvml && !fp->used_unknown)
		fmt_mib(mem, sizeof mem, fp->used_bytes);
	else if (fp->in_nvml)
		snprintf(mem, sizeof mem, "unknown");
	char *user = fp->info && fp->info->user ? escape_term(fp->info->user, strlen(fp->info->user)) : xstrdup("-");
	char state = fp->info ? fp->info->state : '-';
	char *cmd = fp->info ? proc_cmdline_joined(fp->info) : xstrdup("(not in this PID namespace)");
	int n = fprintf(f, "  %s%-7d%s %-8s %c  %-11s ", render_col(o, C_BOLD), fp->pid, render_col(o, C_OFF), user, state, mem);
	n -= (int)(strlen(render_col(o, C_BOLD)) + strlen(render_col(o, C_OFF)));
	char *owner = render_owner(fp->info);
	if (owner) {
		/* Whose it is (a job, a pod) before what it runs: the owner is whom to ask first. */
		n += fprintf(f, "[%s] ", owner);
		free(owner);
	}
	if (fp->role == FREE_ROLE_EXITED)
		fputs("(exited)\n", f);
	else
		render_put(f, cmd, o, "           ", n);
	free(cmd);
	free(user);
}

static void gpu_headline(FILE *f, const struct free_view *v, size_t i, const struct render_opts *o)
{
	const struct free_plan *p = v->plan;
	const struct free_gpu *fg = &p->gpus[i];
	const struct account_gpu *g = &p->acct.gpus[fg->slot];
	char *label = free_gpu_label(g);
	char a[32], b[32], c[32];
	fprintf(f, "%s%s%s", render_col(o, C_BOLD), label, render_col(o, C_OFF));
	if (g->nvml && g->nvml->name[0]) {
		char *name = escape_str(g->nvml->name);
		fprintf(f, "  %s", name);
		free(name);
	}
	if (!g->mem_known) {
		fputs("  memory unknown", f);
	} else if (!v->report) {
		fprintf(f, "  %s / %s MiB used  should come back: %s%s", fmt_mib_num(a, sizeof a, g->used_bytes),
			fmt_mib_num(b, sizeof b, g->total_bytes), fg->expect_partial ? "at least " : "",
			fmt_mib(c, sizeof c, fg->expect_back));
	}
	if (v->report) {
		const struct free_gpu_after *ga = &v->report->gpus[i];
		if (g->mem_known)
			fprintf(f, "  %s", fmt_mib(a, sizeof a, g->used_bytes));
		if (ga->mem_known)
			fprintf(f, " -> %s used", fmt_mib(b, sizeof b, ga->used_bytes));
		else
			fputs(" -> memory unknown", f);
		fprintf(f, ": %s%s%s", render_col(o, ga->free ? C_GRN : C_RED), ga->free ? "free" : "NOT free", render_col(o, C_OFF));
	}
	fputc('\n', f);
	free(label);
}

void render_free_text(FILE *f, const struct free_view *v, const struct render_opts *o)
{
	const struct free_plan *p = v->plan;
	const struct free_report *r = v->report;
	char m[32];
	for (size_t i = 0; i < p->ngpus; i++) {
		gpu_headline(f, v, i, o);
		if (r) {
			const struct free_gpu_after *ga = &r->gpus[i];
			if (!ga->seen)
				fputs("  not found when looked at again\n", f);
			else if (!ga->mem_known)
				fputs("  NVML did not give its memory: whether it is free cannot be confirmed\n", f);
			else if (!ga->free && !ga->nmem_holders)
				fprintf(f, "  %s still used with no process holding it (threshold %s)\n",
					fmt_mib(m, sizeof m, ga->used_bytes), fmt_mib(m, sizeof m, FREE_DONE_BYTES));
			if (ga->nmem_holders) {
				fputs("  memory still held by PID", f);
				for (size_t k = 0; k < ga->nmem_holders; k++)
					fprintf(f, "%s %d", k ? "," : "", ga->mem_holders[k]);
				fputc('\n', f);
			}
		}
		if (v->next && v->next[i]) {
			fputs("  next: ", f);
			render_put(f, v->next[i], o, "        ", 8);
		}
		if (v->reset) {
			const struct free_reset *rs = &v->reset[i];
			for (size_t k = 0; k < rs->nblockers; k++) {
				fputs("  blocks a reset: ", f);
				render_put(f, rs->blockers[k], o, "    ", 18);
			}
			if (rs->ran)
				fprintf(f, "  reset: %s --gpu-reset -i %d %s (exit %d)\n", v->reset_cmd,
					p->acct.gpus[p->gpus[i].slot].index, rs->status == 0 ? "succeeded" : "FAILED",
					rs->status);
			else if (rs->refused) {
				fputs("  reset not run: ", f);
				render_put(f, rs->refused, o, "    ", 17);
			}
		}
	}
	fputc('\n', f);
	if (p->nsignal) {
		fprintf(f, "%s%s %zu process%s%s (SIGTERM; SIGKILL after %u s):\n", render_col(o, C_BOLD),
			r ? "Signalled" : "Would signal", p->nsignal, p->nsignal == 1 ? "" : "es", render_col(o, C_OFF), v->grace_s);
		for (size_t i = 0; i < p->nsignal; i++) {
			const struct free_proc *fp = &p->procs[i];
			proc_line(f, fp, o);
			char *why = xasprintf("%s%s", fp->why, fp->stopped ? "; stopped: gets SIGCONT too" : "");
			if (fp->job_root != fp->pid) {
				char *w2 = xasprintf("%s; job of PID %d", why, fp->job_root);
				free(why);
				why = w2;
			}
			fputs("           ", f);
			render_put(f, why, o, "           ", 11);
			if (fp->nevidence) {
				char *list = strv_join(fp->evidence, fp->nevidence, "; ");
				char *ev = xasprintf("evidence: %s", list);
				fputs("           ", f);
				render_put(f, ev, o, "             ", 11);
				free(ev);
				free(list);
			}
			if (fp->stuck && !r) {
				fputs("           ", f);
				render_put(f, "in the kernel (state D or waiting in the NVIDIA driver): it may not exit until that call "
				       "returns", o, "           ", 11);
			}
			if (r) {
				char *t = outcome_text(&r->procs[i], fp);
				fprintf(f, "           %s", render_col(o, r->procs[i].outcome == FREE_OUT_TERM ||
								r->procs[i].outcome == FREE_OUT_KILL ||
								r->procs[i].outcome == FREE_OUT_GONE ? C_GRN : C_RED));
				render_put(f, t, o, "           ", 11);
				fputs(render_col(o, C_OFF), f);
				free(t);
			}
			free(why);
		}
	} else if (p->ngpus) {
		fprintf(f, "Nothing to signal on the selected GPU%s.\n", p->ngpus == 1 ? "" : "s");
	}
	if (p->nsignal < p->nprocs) {
		fprintf(f, "%sNot signalled:%s\n", render_col(o, C_BOLD), render_col(o, C_OFF));
		for (size_t i = p->nsignal; i < p->nprocs; i++) {
			const struct free_proc *fp = &p->procs[i];
			proc_line(f, fp, o);
			fputs("           ", f);
			render_put(f, fp->skip_why, o, "           ", 11);
		}
	}
	if (p->nshm) {
		fprintf(f, "%s/dev/shm segments left by processes that exited:%s\n", render_col(o, C_BOLD), render_col(o, C_OFF));
		for (size_t i = 0; i < p->nshm; i++) {
			const struct free_shm *s = &p->shm[i];
			const char *verb = !s->remove ? "keep" : !r ? "would remove" : r->shm && r->shm[i].removed ? "removed"
													: "kept";
			char *line = xasprintf("%s %s (%s): %s%s%s", verb, s->seg->name, fmt_mib(m, sizeof m, s->seg->bytes),
					       s->why, r && r->shm && r->shm[i].why ? "; " : "",
					       r && r->shm && r->shm[i].why ? r->shm[i].why : "");
			fputs("  ", f);
			render_put(f, line, o, "    ", 2);
			free(line);
		}
	}
	for (size_t i = 0; i < p->nnotes; i++) {
		fputs("note: ", f);
		render_put(f, p->notes[i], o, "      ", 6);
	}
	if (!r) {
		fprintf(f, "\n%sDry run: nothing was signalled.%s Run again with --yes to act.\n", render_col(o, C_BOLD), render_col(o, C_OFF));
	} else {
		size_t nfree = 0;
		for (size_t i = 0; i < p->ngpus; i++)
			nfree += r->gpus[i].free;
		if (p->ngpus)
			fprintf(f, "\n%zu of %zu GPU%s free after %.1f s.\n", nfree, p->ngpus, p->ngpus == 1 ? "" : "s",
				r->elapsed_s);
		else
			fprintf(f, "\nDone after %.1f s.\n", r->elapsed_s);
	}
}

/* ---------------------------------------------------------------- JSON */

static json_t *proc_json(const struct free_view *v, size_t i)
{
	const struct free_plan *p = v->plan;
	const struct free_proc *fp = &p->procs[i];
	json_t *o = fp->info ? render_proc_json(fp->info) : json_object();
	json_object_set_new(o, "pid", json_integer(fp->pid));
	json_object_set_new(o, "host_pid", fp->host_pid >= 0 ? json_integer(fp->host_pid) : json_null());
	json_object_set_new(o, "role", json_string(free_role_name(fp->role)));
	json_object_set_new(o, "why", json_str_or_null(fp->why));
	json_object_set_new(o, "signal", json_boolean(fp->skip == FREE_SIGNAL));
	json_object_set_new(o, "skip", fp->skip == FREE_SIGNAL ? json_null() : json_string(free_skip_name(fp->skip)));
	json_object_set_new(o, "skip_why", json_str_or_null(fp->skip_why));
	json_object_set_new(o, "job_root", json_integer(fp->job_root));
	json_object_set_new(o, "via", fp->via ? json_integer(fp->via) : json_null());
	json_object_set_new(o, "evidence", json_strs(fp->evidence, fp->nevidence));
	json_t *g = json_array();
	for (size_t k = 0; k < fp->nslots; k++) {
		const struct account_gpu *ag = &p->acct.gpus[fp->slots[k]];
		json_array_append_new(g, ag->index >= 0 ? json_integer(ag->index) : json_null());
	}
	json_object_set_new(o, "gpus", g);
	json_object_set_new(o, "in_nvml", json_boolean(fp->in_nvml));
	json_object_set_new(o, "used_bytes",
			    fp->in_nvml && !fp->used_unknown ? json_integer((json_int_t)fp->used_bytes) : json_null());
	json_object_set_new(o, "stopped", json_boolean(fp->stopped));
	json_object_set_new(o, "stuck", json_boolean(fp->stuck));
	if (v->report) {
		const struct free_result *r = &v->report->procs[i];
		json_t *res = json_pack("{s:s}", "outcome", free_outcome_name(r->outcome));
		if (r->outcome == FREE_OUT_TERM || r->outcome == FREE_OUT_KILL)
			json_object_set_new(res, "after_s", json_real(r->after_s));
		if (r->outcome == FREE_OUT_DENIED || r->outcome == FREE_OUT_FAILED)
			json_object_set_new(res, "errno", json_string(errno_name(r->err)));
		if (r->outcome == FREE_OUT_REUSED)
			json_object_set_new(res, "start_ticks_now", json_integer((json_int_t)r->start_now));
		if (r->outcome == FREE_OUT_ALIVE) {
			char st[2] = {r->state ? r->state : '?', 0};
			json_object_set_new(res, "state", json_string(st));
			json_object_set_new(res, "wchan", json_str_or_null(r->wchan));
		}
		json_object_set_new(res, "sent_sigcont", json_boolean(r->sent_cont));
		json_object_set_new(res, "by_kill", json_boolean(r->by_kill));
		json_object_set_new(o, "result", res);
	}
	return o;
}

static json_t *gpu_json(const struct free_view *v, size_t i)
{
	const struct free_plan *p = v->plan;
	const struct free_gpu *fg = &p->gpus[i];
	const struct account_gpu *g = &p->acct.gpus[fg->slot];
	json_t *o = json_object();
	json_object_set_new(o, "index", g->index >= 0 ? json_integer(g->index) : json_null());
	json_object_set_new(o, "minor", g->minor >= 0 ? json_integer(g->minor) : json_null());
	json_object_set_new(o, "uuid", g->nvml && g->nvml->uuid_rc == 0 ? json_string(g->nvml->uuid) : json_null());
	json_object_set_new(o, "device", g->target ? json_str_or_null(g->target->path) : json_null());
	json_object_set_new(o, "used_bytes", g->mem_known ? json_integer((json_int_t)g->used_bytes) : json_null());
	json_object_set_new(o, "total_bytes", g->mem_known ? json_integer((json_int_t)g->total_bytes) : json_null());
	json_object_set_new(o, "expected_back_bytes", json_integer((json_int_t)fg->expect_back));
	json_object_set_new(o, "expected_back_partial", json_boolean(fg->expect_partial));
	json_object_set_new(o, "signalled_processes", json_integer(fg->nsignal));
	json_object_set_new(o, "kept_processes", json_integer(fg->nkept));
	if (v->report) {
		const struct free_gpu_after *ga = &v->report->gpus[i];
		json_t *a = json_object();
		json_object_set_new(a, "seen", json_boolean(ga->seen));
		json_object_set_new(a, "used_bytes", ga->mem_known ? json_integer((json_int_t)ga->used_bytes) : json_null());
		json_object_set_new(a, "free", json_boolean(ga->free));
		json_object_set_new(a, "holders", json_pids(ga->holders, ga->nholders));
		json_object_set_new(a, "memory_holders", json_pids(ga->mem_holders, ga->nmem_holders));
		json_object_set_new(o, "after", a);
	}
	json_object_set_new(o, "next_step", v->next && v->next[i] ? json_str_or_null(v->next[i]) : json_null());
	json_object_set_new(o, "next_step_verdict",
			    v->next_verdict && v->next_verdict[i] ? json_string(v->next_verdict[i]) : json_null());
	if (v->reset) {
		const struct free_reset *rs = &v->reset[i];
		json_t *b = json_array();
		for (size_t k = 0; k < rs->nblockers; k++)
			json_array_append_new(b, json_str_or_null(rs->blockers[k]));
		json_object_set_new(o, "reset", json_pack("{s:b, s:o, s:o, s:o}", "ran", rs->ran, "exit_status",
							  rs->ran ? json_integer(rs->status) : json_null(), "blockers", b,
							  "refused", json_str_or_null(rs->refused)));
	}
	return o;
}

json_t *render_free_json(const struct free_view *v)
{
	const struct free_plan *p = v->plan;
	const struct free_report *r = v->report;
	json_t *o = json_pack("{s:s, s:i, s:b, s:i}", "schema", "gpuwho.free", "schema_version", 1, "dry_run", r == NULL,
			      "grace_s", (int)v->grace_s);
	json_object_set_new(o, "pid_namespace", json_string(p->acct.host_pidns ? "host" : "child"));
	json_t *gs = json_array();
	for (size_t i = 0; i < p->ngpus; i++)
		json_array_append_new(gs, gpu_json(v, i));
	json_object_set_new(o, "gpus", gs);
	json_t *ps = json_array();
	for (size_t i = 0; i < p->nprocs; i++)
		json_array_append_new(ps, proc_json(v, i));
	json_object_set_new(o, "processes", ps);
	json_t *sh = json_array();
	for (size_t i = 0; i < p->nshm; i++) {
		const struct free_shm *s = &p->shm[i];
		json_t *x = json_pack("{s:o, s:I, s:i, s:b, s:o}", "name", json_str_or_null(s->seg->name), "bytes",
				      (json_int_t)s->seg->bytes, "creator_pid", s->seg->creator_pid, "remove", s->remove,
				      "why", json_str_or_null(s->why));
		if (r && s->remove) {
			json_object_set_new(x, "removed", json_boolean(r->shm && r->shm[i].removed));
			json_object_set_new(x, "kept_why", r->shm ? json_str_or_null(r->shm[i].why) : json_null());
		}
		json_array_append_new(sh, x);
	}
	json_object_set_new(o, "shm", sh);
	json_t *notes = json_array();
	for (size_t i = 0; i < p->nnotes; i++)
		json_array_append_new(notes, json_str_or_null(p->notes[i]));
	json_object_set_new(o, "notes", notes);
	if (r) {
		json_object_set_new(o, "all_free", json_boolean(r->all_free));
		json_object_set_new(o, "elapsed_s", json_real(r->elapsed_s));
		json_object_set_new(o, "pidfd", json_boolean(!r->no_pidfd));
	}
	return o;
}
