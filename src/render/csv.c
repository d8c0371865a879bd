/* csv: `--format csv` for ps and holders, for spreadsheet and awk users: one row per process, the
 * same facts as the JSON, in RFC 4180 form. */
#include "diagnose/account.h"
#include "escape.h"
#include "render/render.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One field: escaped as the text output escapes it (no raw control bytes), then quoted when it
 * holds a comma, a quote or a line break. */
static void field(FILE *f, const char *raw, bool last)
{
	char *e = escape_term(raw ? raw : "", raw ? strlen(raw) : 0);
	if (strpbrk(e, ",\"\r\n")) {
		fputc('"', f);
		for (const char *p = e; *p; p++) {
			if (*p == '"')
				fputc('"', f);
			fputc(*p, f);
		}
		fputc('"', f);
	} else {
		fputs(e, f);
	}
	fputs(last ? "\r\n" : ",", f);
	free(e);
}

static void num(FILE *f, bool known, long long v)
{
	if (known)
		fprintf(f, "%lld,", v);
	else
		fputc(',', f);
}

static void proc_fields(FILE *f, const struct proc_info *p)
{
	char st[2] = {p && p->state ? p->state : 0, 0};
	field(f, p ? p->user : NULL, false);
	field(f, st, false);
}

void render_ps_csv(FILE *f, const struct account *a, const bool *sel)
{
	fputs("gpu,uuid,bus_id,pid,host_pid,kind,user,state,gpu_memory_bytes,host_rss_bytes,command\r\n", f);
	for (size_t g = 0; g < a->ngpus; g++) {
		const struct account_gpu *ag = &a->gpus[g];
		if (sel && !sel[g])
			continue;
		char idx[16];
		snprintf(idx, sizeof idx, "%d", ag->index >= 0 ? ag->index : ag->minor);
		const char *uuid = ag->nvml && ag->nvml->uuid_rc == 0 ? ag->nvml->uuid : NULL;
		for (size_t i = 0; i < ag->nprocs; i++) {
			const struct account_proc *r = &ag->procs[i];
			const struct proc_info *p = r->info;
			field(f, idx, false);
			field(f, uuid, false);
			field(f, ag->bus_id, false);
			fprintf(f, "%d,", r->pid);
			num(f, r->host_pid > 0, r->host_pid);
			field(f, account_kind_name(r->kind), false);
			proc_fields(f, p);
			num(f, r->used_known, (long long)r->used_bytes);
			num(f, p && p->vm_rss_kb, p ? (long long)p->vm_rss_kb * 1024 : 0);
			char *cmd = p ? proc_cmdline_joined(p) : NULL;
			field(f, cmd, true);
			free(cmd);
		}
		if (ag->unattributed_known && ag->unattributed_bytes) {
			field(f, idx, false);
			field(f, uuid, false);
			field(f, ag->bus_id, false);
			fprintf(f, ",,unattributed,,,%llu,,\r\n", ag->unattributed_bytes);
		}
	}
}

void render_holders_csv(FILE *f, const struct holders_scan *s)
{
	fputs("pid,ppid,user,state,target,how,fds,maps,map_bytes,command\r\n", f);
	for (size_t i = 0; i < s->nholders; i++) {
		const struct holder *h = &s->holders[i];
		char *cmd = proc_cmdline_joined(&h->info);
		for (size_t k = 0; k < h->nholds; k++) {
			const struct hold *d = &h->holds[k];
			char how[64];
			render_hold_means(d, how, sizeof how);
			fprintf(f, "%d,%d,", h->info.pid, h->info.ppid);
			proc_fields(f, &h->info);
			field(f, s->targets[d->target].path, false);
			field(f, how, false);
			fprintf(f, "%u,%u,%llu,", d->nfd, d->nmap, d->map_bytes);
			field(f, cmd, true);
		}
		free(cmd);
	}
}
