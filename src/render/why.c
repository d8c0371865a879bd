/* render/why: `gpuwho why` as text (a headline per finding, its evidence and fix) and as JSON. Decides nothing. */
#include "diagnose/diagnose.h"
#include "escape.h"
#include "json.h"
#include "render/render.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>


static const char *sev_color(enum diag_severity s)
{
	switch (s) {
	case DIAG_ACTION: return C_RED C_BOLD;
	case DIAG_WARNING: return C_YEL C_BOLD;
	case DIAG_INFO: return C_DIM;
	case DIAG_OK: return C_GRN;
	}
	return "";
}

/* Folding: the same verdict on several GPUs, saying the same thing but for the GPU's number and
 * device node, is shown once, listing the GPUs (the seed's two hidden-holder GPUs, six idle ones).
 * Texts are compared with the GPU's identity replaced by placeholders: "GPU 2" by "GPU \1",
 * "nvidia2" by "nvidia\2", a command's bare "2" (`gpuwho why 2`) by "\1". */
#define PH_GPU '\001'
#define PH_MINOR '\002'

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* s with gpu's and minor's mentions replaced by the placeholders (malloc'ed); NULL for NULL. */
static char *generalize(const char *s, int gpu, int minor)
{
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *out = xmalloc(n + 1), *o = out;
	bool in_cmd = false;
	char num[16], mnum[16];
	int ln = snprintf(num, sizeof num, "%d", gpu), lm = snprintf(mnum, sizeof mnum, "%d", minor);
	for (size_t i = 0; i < n;) {
		if (s[i] == '`')
			in_cmd = !in_cmd;
		bool before_ok = i == 0 || !is_digit(s[i - 1]);
		if (gpu >= 0 && i >= 4 && !strncmp(s + i - 4, "GPU ", 4) && !strncmp(s + i, num, (size_t)ln) &&
		    !is_digit(s[i + (size_t)ln])) {
			*o++ = PH_GPU;
			i += (size_t)ln;
		} else if (minor >= 0 && i >= 6 && !strncmp(s + i - 6, "nvidia", 6) && !strncmp(s + i, mnum, (size_t)lm) &&
			   !is_digit(s[i + (size_t)lm])) {
			*o++ = PH_MINOR;
			i += (size_t)lm;
		} else if (gpu >= 0 && in_cmd && i > 0 && s[i - 1] == ' ' && !strncmp(s + i, num, (size_t)ln) &&
			   (s[i + (size_t)ln] == ' ' || s[i + (size_t)ln] == '`') && before_ok) {
			*o++ = PH_GPU;
			i += (size_t)ln;
		} else {
			*o++ = s[i++];
		}
	}
	*o = '\0';
	return out;
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* True when y says what x says, but for another GPU. */
static bool folds_with(const struct finding *x, const struct finding *y)
{
	if (x->slot < 0 || y->slot < 0 || strcmp(x->verdict, y->verdict) || x->severity != y->severity ||
	    x->nevidence != y->nevidence || !x->fix != !y->fix)
		return false;
	bool eq = true;
	for (size_t i = 0; eq && i <= x->nevidence + 1; i++) {
		const char *a = i == 0 ? x->headline : i == 1 ? x->fix : x->evidence[i - 2];
		const char *b = i == 0 ? y->headline : i == 1 ? y->fix : y->evidence[i - 2];
		/* process-controlled text holding a placeholder byte is never folded */
		if ((a && (strchr(a, PH_GPU) || strchr(a, PH_MINOR))) || (b && (strchr(b, PH_GPU) || strchr(b, PH_MINOR))))
			return false;
		char *ga = generalize(a, x->gpu, x->minor), *gb = generalize(b, y->gpu, y->minor);
		eq = same(ga, gb);
		free(ga);
		free(gb);
	}
	return eq;
}

/* s for the group: "GPU \1" -> "GPUs 0, 2", other \1 -> "0,2", "nvidia\2" -> "nvidia{0,2}". */
static char *specialize(const char *s, const struct finding *const *g, size_t n)
{
	if (!s)
		return NULL;
	char *gpus = xstrdup(""), *list = xstrdup(""), *minors = xstrdup("");
	for (size_t k = 0; k < n; k++) {
		char *a = xasprintf("%s%s%d", gpus, k ? ", " : "", g[k]->gpu);
		char *b = xasprintf("%s%s%d", list, k ? "," : "", g[k]->gpu);
		char *c = xasprintf("%s%s%d", minors, k ? "," : "", g[k]->minor);
		free(gpus), free(list), free(minors);
		gpus = a, list = b, minors = c;
	}
	char *gen = generalize(s, g[0]->gpu, g[0]->minor);
	char *out = xstrdup("");
	for (const char *p = gen; *p; p++) {
		char *next;
		if (*p == PH_GPU && p - gen >= 4 && !strncmp(p - 4, "GPU ", 4)) {
			out[strlen(out) - 4] = '\0';   /* "GPU " becomes "GPUs " */
			next = xasprintf("%sGPUs %s", out, gpus);
		} else if (*p == PH_GPU) {
			next = xasprintf("%s%s", out, list);
		} else if (*p == PH_MINOR) {
			next = xasprintf("%s{%s}", out, minors);
		} else {
			next = xasprintf("%s%c", out, *p);
		}
		free(out);
		out = next;
	}
	free(gen);
	free(gpus);
	free(list);
	free(minors);
	return out;
}

/* Prints a finding (or a group of findings that fold: g[0..n)) with raw (process-controlled) text
 * escaped and wrapped. */
static void finding_text(FILE *f, const struct finding *const *g, size_t n, const struct render_opts *o)
{
	const struct finding *x = g[0];
	char tag[16];
	int w = snprintf(tag, sizeof tag, "[%s]", diag_severity_name(x->severity));
	fprintf(f, "%s%s%s %s", render_col(o, sev_color(x->severity)), tag, render_col(o, C_OFF), render_col(o, C_BOLD));
	char *t = n > 1 ? specialize(x->headline, g, n) : NULL;
	render_put(f, t ? t : x->headline, o, "  ", w + 1);
	free(t);
	fputs(render_col(o, C_OFF), f);
	for (size_t i = 0; i < x->nevidence; i++) {
		fputs("  - ", f);
		t = n > 1 ? specialize(x->evidence[i], g, n) : NULL;
		render_put(f, t ? t : x->evidence[i], o, "    ", 4);
		free(t);
	}
	if (x->fix) {
		fprintf(f, "  %sfix:%s ", render_col(o, C_BOLD), render_col(o, C_OFF));
		t = n > 1 ? specialize(x->fix, g, n) : NULL;
		render_put(f, t ? t : x->fix, o, "    ", 7);
		free(t);
	}
}

void render_why_text(FILE *f, const struct diagnosis *d, const bool *show, const struct render_opts *o)
{
	size_t shown = 0, count[DIAG_ACTION + 1] = {0};
	bool uncertain = false;
	bool *done = xcalloc(d->nfindings + 1, sizeof *done);
	const struct finding **g = xcalloc(d->nfindings + 1, sizeof *g);
	for (size_t i = 0; i < d->nfindings; i++) {
		if ((show && !show[i]) || done[i])
			continue;
		size_t n = 0;
		g[n++] = &d->findings[i];
		for (size_t j = i + 1; j < d->nfindings; j++)
			if (!done[j] && (!show || show[j]) && folds_with(&d->findings[i], &d->findings[j])) {
				g[n++] = &d->findings[j];
				done[j] = true;
			}
		if (shown++)
			fputc('\n', f);
		finding_text(f, g, n, o);
		count[d->findings[i].severity]++;
		for (size_t k = 0; k < n; k++)
			uncertain |= g[k]->uncertain;
	}
	free(done);
	free(g);
	if (!shown) {
		fputs("No findings.\n", f);
		return;
	}
	fputc('\n', f);
	if (count[DIAG_ACTION] || count[DIAG_WARNING]) {
		size_t n = count[DIAG_ACTION] + count[DIAG_WARNING];
		char *act = count[DIAG_ACTION] ? xasprintf("%zu to act on", count[DIAG_ACTION]) : xstrdup("");
		char *warn = count[DIAG_WARNING] ? xasprintf("%zu warning%s", count[DIAG_WARNING],
							     count[DIAG_WARNING] == 1 ? "" : "s") : xstrdup("");
		char *line = xasprintf("%zu finding%s need%s attention (%s%s%s).%s", n, n == 1 ? "" : "s",
				       n == 1 ? "s" : "", act, *act && *warn ? ", " : "", warn,
				       uncertain ? " Some processes could not be inspected: see above." : "");
		fputs(render_col(o, C_BOLD), f);
		render_wrap(f, line, o->width, "", 0);
		fputs(render_col(o, C_OFF), f);
		free(line);
		free(act);
		free(warn);
	} else {
		render_wrap(f, uncertain ? "Nothing needs action (some processes could not be inspected: see above)."
					 : "Nothing needs action.", o->width, "", 0);
	}
}

json_t *render_why_json(const struct diagnosis *d, const bool *show, bool host_pidns, double second_sample_s)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < d->nfindings; i++) {
		if (show && !show[i])
			continue;
		const struct finding *x = &d->findings[i];
		json_t *ev = json_array(), *pids = json_array();
		for (size_t k = 0; k < x->nevidence; k++)
			json_array_append_new(ev, json_str_or_null(x->evidence[k]));
		for (size_t k = 0; k < x->npids; k++)
			json_array_append_new(pids, json_integer(x->pids[k]));
		json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "verdict", x->verdict,
						     "severity", diag_severity_name(x->severity), "gpu",
						     x->gpu >= 0 ? json_integer(x->gpu) : json_null(), "minor",
						     x->minor >= 0 ? json_integer(x->minor) : json_null(), "headline",
						     json_str_or_null(x->headline), "evidence", ev, "fix", json_str_or_null(x->fix), "pids", pids,
						     "uncertain", x->uncertain));
	}
	return json_pack("{s:s, s:i, s:s, s:s, s:b, s:o, s:o}", "schema", "gpuwho.why", "schema_version", 1,
			 "pid_namespace", host_pidns ? "host" : "child", "worst", diag_severity_name(diag_worst(d, show)),
			 "uncertain", d->uncertain, "second_sample_s",
			 second_sample_s >= 0 ? json_real(second_sample_s) : json_null(), "findings", arr);
}
