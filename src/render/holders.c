/* render/holders: `gpuwho holders` — the holders table, the mount points that are not holders, and
 * what could not be seen — as text and JSON (docs/json.md, "holders"). */
#include "escape.h"
#include "json.h"
#include "render/render.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>

void render_hold_means(const struct hold *h, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s%s%s%s", h->means & HOLD_FD ? "fd" : "",
		 (h->means & HOLD_FD) && (h->means & HOLD_MMAP) ? "+" : "", h->means & HOLD_MMAP ? "mmap" : "",
		 h->means & HOLD_THREAD ? " via-thread" : "", h->means & HOLD_COPY ? " via-copy" : "",
		 "");
}

static char *fmt_time(double t)
{
	if (t <= 0)
		return xstrdup("?");
	time_t tt = (time_t)t;
	struct tm tm;
	localtime_r(&tt, &tm);
	char buf[64];
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
	return xstrdup(buf);
}

/* The container cell, escaped: an lxc id comes straight from a cgroup name, which a user with a
 * delegated cgroup can choose. */
static char *container_str(const struct container *c)
{
	if (!c->runtime)
		return xstrdup("-");
	char *raw;
	if (c->pod_uid && c->id)
		raw = xasprintf("k8s pod %.8s %.12s", c->pod_uid, c->id);
	else if (c->pod_uid)
		raw = xasprintf("k8s pod %.8s", c->pod_uid);
	else if (c->id)
		raw = xasprintf("%s %.12s", c->runtime, c->id);
	else
		raw = xstrdup(c->runtime);
	char *e = escape_str(raw);
	free(raw);
	return e;
}

static char *state_str(const struct proc_info *p)
{
	/* ps-like: 'l' when multi-threaded. */
	return xasprintf("%c%s", p->state ? p->state : '?', p->nthreads > 1 ? "l" : "");
}

/* A target's name in the HOLDS cell: GPU nodes by name (nvidia0), the driver's other nodes by
 * kind (ctl, uvm, caps), any other file by its path. */
static const char *cell_name(const struct target *t)
{
	if (!strcmp(t->kind, "gpu") || !strcmp(t->kind, "file") || !strcmp(t->kind, "nvidia"))
		return render_target_short(t);
	return t->kind;
}

/* The HOLDS cell: "nvidia0 ctl uvm caps×2 (fd+mmap)", with unusual means spelled out. */
static char *holds_cell(const struct holders_scan *s, const struct holder *h)
{
	char *out = xstrdup("");
	unsigned all = 0;
	for (size_t i = 0; i < h->nholds; i++) {
		all |= h->holds[i].means;
		const char *name = cell_name(&s->targets[h->holds[i].target]);
		bool seen = false;
		unsigned count = 0;
		for (size_t k = 0; k < h->nholds; k++)
			if (!strcmp(cell_name(&s->targets[h->holds[k].target]), name)) {
				seen |= k < i;
				count++;
			}
		if (seen)
			continue;
		char *n = count > 1 ? xasprintf("%s%s%s×%u", out, *out ? " " : "", name, count)
				    : xasprintf("%s%s%s", out, *out ? " " : "", name);
		free(out);
		out = n;
	}
	struct hold u = {.means = all};
	char m[64];
	render_hold_means(&u, m, sizeof m);
	char *n = xasprintf("%s (%s)", out, m);
	free(out);
	char *e = escape_str(n);   /* target paths may come from a --from snapshot */
	free(n);
	return e;
}

static void print_fit(FILE *f, const char *s, int width, int used)
{
	if (width > 0 && used + (int)strlen(s) > width && width - used > 4)
		fprintf(f, "%.*s…\n", width - used - 1, s);
	else
		fprintf(f, "%s\n", s);
}

static void print_holder_detail(FILE *f, const struct holders_scan *s, const struct holder *h,
				const struct render_opts *o)
{
	const struct proc_info *p = &h->info;
	char *comm = escape_term(p->comm ? p->comm : "?", p->comm ? strlen(p->comm) : 1);
	char *cmd = proc_cmdline_joined(p);
	char *ecmd = escape_term(cmd, strlen(cmd));
	char *start = fmt_time(p->start_time);
	char *cont = container_str(&p->container);
	char *user = escape_str(p->user);
	fprintf(f, "%sPID %d%s  %s  user %s  state %c%s  ppid %d  started %s\n", render_col(o, C_BOLD), p->pid, render_col(o, C_OFF),
		comm, user, p->state ? p->state : '?', p->nthreads > 1 ? "l" : "", p->ppid, start);
	free(user);
	if (p->nnspid > 1) {
		fprintf(f, "  pid in each namespace:");
		for (unsigned i = 0; i < p->nnspid; i++)
			fprintf(f, " %d", p->nspid[i]);
		fprintf(f, " (outermost first)\n");
	}
	if (p->thread_states) {
		char *ts = escape_str(p->thread_states);
		fprintf(f, "  threads: %u (%s)\n", p->nthreads, ts);
		free(ts);
	}
	if (p->cgroup) {
		char *cg = escape_term(p->cgroup, strlen(p->cgroup));
		fprintf(f, "  cgroup: %s%s%s\n", cg, p->container.runtime ? "  container: " : "",
			p->container.runtime ? cont : "");
		free(cg);
	}
	fprintf(f, "  command: %s\n", ecmd);
	for (size_t i = 0; i < h->nholds; i++) {
		const struct hold *d = &h->holds[i];
		const struct target *t = &s->targets[d->target];
		char *tp = escape_str(t->path);
		fprintf(f, "  holds %s:", tp);
		free(tp);
		if (d->nfd)
			fprintf(f, " %u fd%s (%s%s)", d->nfd, d->nfd > 1 ? "s" : "", d->read ? "r" : "", d->write ? "w" : "");
		if (d->nmap)
			fprintf(f, "%s %u mapping%s", d->nfd ? "," : "", d->nmap, d->nmap > 1 ? "s" : "");
		if (d->means & HOLD_THREAD)
			fprintf(f, "; %sonly through thread %d: the group leader has exited%s", render_col(o, C_YEL), d->via_tid,
				render_col(o, C_OFF));
		if (d->means & HOLD_COPY) {
			char *cp = escape_term(d->copy_path ? d->copy_path : "?", d->copy_path ? strlen(d->copy_path) : 1);
			fprintf(f, "; %sthrough %s, another node with the same device number%s", render_col(o, C_YEL), cp,
				render_col(o, C_OFF));
			free(cp);
		}
		fputc('\n', f);
	}
	if (p->missing) {
		char *m = escape_str(p->missing);
		fprintf(f, "  could not read: %s\n", m);
		free(m);
	}
	free(comm);
	free(cmd);
	free(ecmd);
	free(start);
	free(cont);
}

static void print_unseen(FILE *f, const char *head, const struct unseen *u, size_t n)
{
	fprintf(f, "%s", head);
	for (size_t i = 0; i < n && i < 20; i++) {
		char *c = u[i].comm ? escape_term(u[i].comm, strlen(u[i].comm)) : xstrdup("?");
		fprintf(f, "%s%d (%s)", i ? ", " : " ", u[i].pid, c);
		free(c);
	}
	if (n > 20)
		fprintf(f, " and %zu more (--json lists them all)", n - 20);
	fputc('\n', f);
}

void render_holders_text(FILE *f, const struct holders_scan *s, const struct render_opts *o)
{
	if (s->ntargets == 0) {
		fprintf(f, "No NVIDIA device nodes to examine.\n");
	} else if (s->nholders == 0) {
		fprintf(f, "No process holds ");
		if (s->ntargets == 1) {
			char *e = escape_str(s->targets[0].path);   /* a path the user (or a snapshot) gave */
			fputs(e, f);
			free(e);
		} else
			fprintf(f, "any of the %zu target files", s->ntargets);
		fprintf(f, " (%u process%s scanned).\n", s->nscanned, s->nscanned == 1 ? "" : "es");
	} else {
		/* Column widths from the content. */
		int wpid = 3, wppid = 4, wuser = 4, wcont = 9, wholds = 5;
		char **holds = xcalloc(s->nholders, sizeof *holds), **conts = xcalloc(s->nholders, sizeof *conts);
		char **users = xcalloc(s->nholders, sizeof *users);
		bool any_cont = false;
		for (size_t i = 0; i < s->nholders; i++) {
			const struct proc_info *p = &s->holders[i].info;
			char tmp[32];
			int l = snprintf(tmp, sizeof tmp, "%d", p->pid);
			if (l > wpid)
				wpid = l;
			l = snprintf(tmp, sizeof tmp, "%d", p->ppid);
			if (l > wppid)
				wppid = l;
			users[i] = escape_str(p->user);
			if ((int)strlen(users[i]) > wuser)
				wuser = (int)strlen(users[i]);
			holds[i] = holds_cell(s, &s->holders[i]);
			if ((int)strlen(holds[i]) > wholds)
				wholds = (int)strlen(holds[i]);
			conts[i] = container_str(&p->container);
			if (p->container.runtime)
				any_cont = true;
			if ((int)strlen(conts[i]) > wcont)
				wcont = (int)strlen(conts[i]);
		}
		if (wuser > 12)
			wuser = 12;
		int used = fprintf(f, "%s%-*s %-*s %-*s %-5s %-*s ", render_col(o, C_BOLD), wpid, "PID", wppid, "PPID", wuser,
				   "USER", "STATE", wholds, "HOLDS (how)") - (o->color ? 4 : 0);
		if (any_cont)
			used += fprintf(f, "%-*s ", wcont, "CONTAINER");
		fprintf(f, "COMMAND%s\n", render_col(o, C_OFF));
		for (size_t i = 0; i < s->nholders; i++) {
			const struct proc_info *p = &s->holders[i].info;
			char *st = state_str(p);
			bool odd = p->state == 'Z' || p->state == 'D' || p->state == 'T' || p->state == 't';
			char *cmd = proc_cmdline_joined(p);
			char *ecmd = escape_term(cmd, strlen(cmd));
			used = fprintf(f, "%-*d %-*d %-*.*s %s%-5s%s %-*s ", wpid, p->pid, wppid, p->ppid, wuser, wuser,
				       users[i], odd ? render_col(o, C_RED) : "", st, odd ? render_col(o, C_OFF) : "",
				       wholds, holds[i]) - (odd && o->color ? 9 : 0);
			if (any_cont)
				used += fprintf(f, "%-*s ", wcont, conts[i]);
			print_fit(f, ecmd, o->cut ? o->width : 0, used);
			free(st);
			free(cmd);
			free(ecmd);
			free(users[i]);
			free(holds[i]);
			free(conts[i]);
		}
		free(holds);
		free(conts);
		free(users);
		/* Spell out what fuser and lsof would not show. */
		for (size_t i = 0; i < s->nholders; i++) {
			const struct holder *h = &s->holders[i];
			for (size_t k = 0; k < h->nholds; k++) {
				const struct hold *d = &h->holds[k];
				char *tp = escape_str(s->targets[d->target].path);
				if (d->means & HOLD_THREAD)
					fprintf(f, "%s! PID %d holds %s only through its live thread %d: the thread-group leader "
						   "has exited (<defunct> in ps), so fuser and lsof do not list it.%s\n",
						render_col(o, C_YEL), h->info.pid, tp, d->via_tid, render_col(o, C_OFF));
				if (d->means & HOLD_COPY) {
					char *cp = escape_term(d->copy_path ? d->copy_path : "?",
							       d->copy_path ? strlen(d->copy_path) : 1);
					fprintf(f, "%s! PID %d holds %s through its own node %s: another inode with the same "
						   "device number %u:%u (a mknod'ed copy, as in a container's /dev); fuser "
						   "and lsof match by inode and miss it.%s\n",
						render_col(o, C_YEL), h->info.pid, tp, cp, major(s->targets[d->target].rdev),
						minor(s->targets[d->target].rdev), render_col(o, C_OFF));
					free(cp);
				}
				if (d->means == HOLD_MMAP)
					fprintf(f, "  PID %d holds %s by a memory mapping only (its fd was closed).\n",
						h->info.pid, tp);
				free(tp);
			}
		}
		if (o->verbose)
			for (size_t i = 0; i < s->nholders; i++) {
				fputc('\n', f);
				print_holder_detail(f, s, &s->holders[i], o);
			}
	}
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct mount_hit *m = &s->mounts[i];
		char *mp = escape_term(m->mount_point, strlen(m->mount_point));
		char *rt = escape_term(m->root, strlen(m->root));
		char *fs = escape_str(m->fstype);
		fprintf(f, "%s%s is a mount point (bind mount of %s:%s) — NOT a holder.%s fuser prints this as \"kernel "
			   "mount\": the node was bind-mounted here, as container runtimes do with GPU devices; it holds no "
			   "GPU memory and no process needs to be killed for it.\n",
			render_col(o, C_DIM), mp, fs, rt, render_col(o, C_OFF));
		free(mp);
		free(rt);
		free(fs);
	}
	for (size_t i = 0; i < s->ntargets; i++)
		if (!s->targets[i].ok) {
			char *tp = escape_str(s->targets[i].path);
			fprintf(f, "cannot examine %s: %s\n", tp, strerror(s->targets[i].err));
			free(tp);
		}
	if (s->ndenied) {
		char head[160];
		snprintf(head, sizeof head, "%zu process%s could not be inspected (permission denied); run as root to see "
			 "them:", s->ndenied, s->ndenied == 1 ? "" : "es");
		print_unseen(f, head, s->denied, s->ndenied);
	}
	for (size_t i = 0; i < s->ntimed_out; i++) {
		char *c = escape_str(s->timed_out[i].comm), *w = escape_str(s->timed_out[i].why);
		fprintf(f, "%sskipped PID %d (%s): %s%s\n", render_col(o, C_YEL), s->timed_out[i].pid, c, w,
			render_col(o, C_OFF));
		free(c);
		free(w);
	}
	for (size_t i = 0; i < s->nnotes; i++) {
		char *n = escape_str(s->notes[i]);   /* a --from snapshot's notes are untrusted */
		fprintf(f, "note: %s\n", n);
		free(n);
	}
}

static json_t *unseen_json(const struct unseen *u, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:i, s:o, s:o}", "pid", u[i].pid, "comm", json_str_or_null(u[i].comm), "why",
						   json_str_or_null(u[i].why)));
	return a;
}

json_t *render_holders_json(const struct holders_scan *s)
{
	json_t *targets = json_array();
	for (size_t i = 0; i < s->ntargets; i++) {
		const struct target *t = &s->targets[i];
		json_t *o = json_pack("{s:o, s:s, s:b}", "path", json_str_or_null(t->path), "kind", t->kind, "ok", t->ok);
		if (t->gpu_minor >= 0)
			json_object_set_new(o, "gpu_minor", json_integer(t->gpu_minor));
		if (t->bus_id)
			json_object_set_new(o, "bus_id", json_str_or_null(t->bus_id));
		if (t->ok) {
			json_object_set_new(o, "dev", json_devnum(t->dev));
			json_object_set_new(o, "ino", json_integer((json_int_t)t->ino));
			if (t->chr)
				json_object_set_new(o, "rdev", json_devnum(t->rdev));
		} else {
			json_object_set_new(o, "error", json_string(strerror(t->err)));
		}
		json_array_append_new(targets, o);
	}
	json_t *holders = json_array();
	for (size_t i = 0; i < s->nholders; i++) {
		const struct holder *h = &s->holders[i];
		json_t *o = render_proc_json(&h->info);
		json_t *hs = json_array();
		for (size_t k = 0; k < h->nholds; k++) {
			const struct hold *d = &h->holds[k];
			json_t *how = json_array();
			if (d->means & HOLD_FD)
				json_array_append_new(how, json_string("fd"));
			if (d->means & HOLD_MMAP)
				json_array_append_new(how, json_string("mmap"));
			if (d->means & HOLD_THREAD)
				json_array_append_new(how, json_string("thread"));
			if (d->means & HOLD_COPY)
				json_array_append_new(how, json_string("copy"));
			char acc[3] = {0};
			int a = 0;
			if (d->read)
				acc[a++] = 'r';
			if (d->write)
				acc[a++] = 'w';
			json_t *ho = json_pack("{s:i, s:o, s:o, s:i, s:i, s:s}", "target", (int)d->target, "path",
					       json_str_or_null(s->targets[d->target].path), "how", how, "fds", (int)d->nfd, "maps",
					       (int)d->nmap, "access", acc);
			json_put(ho, "map_bytes", json_u64(d->map_bytes));
			if (d->via_tid)
				json_object_set_new(ho, "via_tid", json_integer(d->via_tid));
			if (d->copy_path)
				json_object_set_new(ho, "copy_path", json_str_or_null(d->copy_path));
			json_array_append_new(hs, ho);
		}
		json_object_set_new(o, "holds", hs);
		json_array_append_new(holders, o);
	}
	json_t *mounts = json_array();
	for (size_t i = 0; i < s->nmounts; i++) {
		const struct mount_hit *m = &s->mounts[i];
		json_array_append_new(mounts, json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:b}", "target", (int)m->target,
							"mount_point", json_str_or_null(m->mount_point), "fstype", json_str_or_null(m->fstype),
							"source", json_str_or_null(m->source), "root", json_str_or_null(m->root), "path",
							json_str_or_null(s->targets[m->target].path), "holder", 0));
	}
	json_t *notes = json_array();
	for (size_t i = 0; i < s->nnotes; i++)
		json_array_append_new(notes, json_str_or_null(s->notes[i]));
	return json_pack("{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:i, s:o}", "schema", "gpuwho.holders",
			 "schema_version", 1, "targets", targets,
			 "holders", holders, "mounts", mounts, "not_inspected", unseen_json(s->denied, s->ndenied),
			 "timed_out", unseen_json(s->timed_out, s->ntimed_out), "partial", (int)s->npartial, "scanned",
			 (int)s->nscanned, "vanished", (int)s->nvanished, "notes", notes);
}
