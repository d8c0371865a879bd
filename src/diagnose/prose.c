/* diagnose/prose: the text helpers findings are written with, so every verdict names GPUs, processes and memory alike. */
#include "diagnose/internal.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- building findings ---------- */

struct finding *diag_add_finding(struct ctx *c, const char *verdict, enum diag_severity sev,
				 const struct account_gpu *g, const char *fmt, ...)
{
	struct diagnosis *d = c->d;
	xgrow(&d->findings, &c->cap, d->nfindings + 1, sizeof *d->findings);
	struct finding *f = &d->findings[d->nfindings++];
	memset(f, 0, sizeof *f);
	f->verdict = verdict;
	f->severity = sev;
	f->gpu = g ? g->index : -1;
	f->minor = g ? g->minor : -1;
	f->slot = g ? (int)(g - d->acct.gpus) : -1;
	va_list ap;
	va_start(ap, fmt);
	f->headline = xvasprintf(fmt, ap);
	va_end(ap);
	return f;
}

void diag_ev(struct finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strv_push(&f->evidence, &f->nevidence, xvasprintf(fmt, ap));
	va_end(ap);
}

void diag_set_fix(struct finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(f->fix);
	f->fix = xvasprintf(fmt, ap);
	va_end(ap);
}

void diag_add_pid(struct finding *f, int pid)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return;
	f->pids = xrealloc(f->pids, (f->npids + 1) * sizeof *f->pids);
	f->pids[f->npids++] = pid;
}

/* Appends " PID" for each pid to a malloc'ed string (the arguments of a kill command). */
char *diag_pid_args(const int *pids, size_t n)
{
	char *out = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *m = xasprintf("%s%s%d", out, i ? " " : "", pids[i]);
		free(out);
		out = m;
	}
	return out;
}

/* ---------- naming things ---------- */

/* "GPU 0", or "GPU (minor 3)" when NVML does not know it. Static buffer per call site is enough:
 * callers use it at once. */
const char *diag_gpu_name(const struct account_gpu *g, char *buf, size_t n)
{
	if (g->index >= 0)
		snprintf(buf, n, "GPU %d", g->index);
	else
		snprintf(buf, n, "GPU (minor %d)", g->minor);
	return buf;
}

/* A process's display name: its command line's first word (or that word's base name) when it
 * extends the 15-byte comm — a process title (setproctitle: "sglang::scheduler_TP0",
 * "VLLM::EngineCore") or a long program name — else comm. Raw bytes. */
static char *proc_name(const struct proc_info *p)
{
	const char *comm = p->comm ? p->comm : "?";
	if (p->cmdline && p->cmdline_len) {
		size_t a0 = strnlen(p->cmdline, p->cmdline_len);
		const char *sp = memchr(p->cmdline, ' ', a0);
		if (sp)
			a0 = (size_t)(sp - p->cmdline);   /* setproctitle may write one string with spaces */
		/* The program's base name too: /usr/bin/nvidia-persistenced for "nvidia-persiste". */
		const char *base = p->cmdline;
		for (const char *q = p->cmdline; q < p->cmdline + a0; q++)
			if (*q == '/')
				base = q + 1;
		size_t bl = a0 - (size_t)(base - p->cmdline), cl = strlen(comm);
		if (bl > cl && cl >= 15 && strncmp(base, comm, cl) == 0)
			return xstrndup(base, bl);
	}
	return xstrdup(comm);
}

/* "PID 4121 (python3)", with its owner when one is known: "PID 4121 (python3, job 4242 of user
 * alice)", "PID 4121 (python3, pod ml/trainer-0)". A bare systemd unit is left out: every process
 * has one, and it says little about whose the memory is. */
char *diag_pdesc(const struct proc_info *p)
{
	char *n = proc_name(p);
	char *s;
	const struct owner *w = &p->owner;
	if (w->slurm_job)
		s = xasprintf("PID %d (%s, job %s of user %s)", p->pid, n, w->slurm_job, p->user ? p->user : "?");
	else if (w->pod_name || p->container.pod_uid || w->container_name || p->container.id) {
		struct owner no_unit = *w;
		no_unit.unit = NULL;
		char *l = owner_label(&no_unit, &p->container);
		s = xasprintf("PID %d (%s, %s)", p->pid, n, l);
		free(l);
	} else
		s = xasprintf("PID %d (%s)", p->pid, n);
	free(n);
	return s;
}

/* The command line, cut to 60 bytes, for an evidence line. */
char *diag_short_cmdline(const struct proc_info *p)
{
	char *c = proc_cmdline_joined(p);
	if (strlen(c) > 60)
		strcpy(c + 57, "...");
	return c;
}

/* The memory of one account row, as text. */
const char *diag_row_mem(const struct account_proc *r, char *buf, size_t n)
{
	if (r->used_known)
		return fmt_mib(buf, n, r->used_bytes);
	switch (r->kind) {
	case ACCOUNT_UNMATCHED: return "memory unmapped (NVML names host PIDs)";
	case ACCOUNT_DEVICE_ONLY: return "no GPU memory";
	case ACCOUNT_INHERITED: return "memory of an exited PID";
	default: return "memory unknown";
	}
}

double diag_gib(unsigned long long b)
{
	return (double)b / (double)DIAG_GIB;
}

/* "11,904 MiB" or "at least 11,904 MiB" or "memory of unknown size". */
char *diag_amount(unsigned long long bytes, bool unknown)
{
	char b[48];
	if (unknown && bytes == 0)
		return xstrdup("memory of unknown size");
	return xasprintf("%s%s", unknown ? "at least " : "", fmt_mib(b, sizeof b, bytes));
}

/* The parent of p as "PID 4121 (python3)", or "PID 1" when it cannot be seen. */
char *diag_parent_desc(const struct snapshot *s, const struct proc_info *p)
{
	const struct proc_info *pp = snapshot_find_proc(s, p->ppid);
	return pp ? diag_pdesc(pp) : xasprintf("PID %d", p->ppid);
}
