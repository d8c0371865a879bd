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

/* Prints raw (process-controlled) text escaped and wrapped, starting at column col0. */
static void finding_text(FILE *f, const struct finding *x, const struct render_opts *o)
{
	char tag[16];
	int n = snprintf(tag, sizeof tag, "[%s]", diag_severity_name(x->severity));
	fprintf(f, "%s%s%s %s", render_col(o, sev_color(x->severity)), tag, render_col(o, C_OFF), render_col(o, C_BOLD));
	render_put(f, x->headline, o, "  ", n + 1);
	fputs(render_col(o, C_OFF), f);
	for (size_t i = 0; i < x->nevidence; i++) {
		fputs("  - ", f);
		render_put(f, x->evidence[i], o, "    ", 4);
	}
	if (x->fix) {
		fprintf(f, "  %sfix:%s ", render_col(o, C_BOLD), render_col(o, C_OFF));
		render_put(f, x->fix, o, "    ", 7);
	}
}

void render_why_text(FILE *f, const struct diagnosis *d, const bool *show, const struct render_opts *o)
{
	size_t shown = 0, count[DIAG_ACTION + 1] = {0};
	bool uncertain = false;
	for (size_t i = 0; i < d->nfindings; i++) {
		if (show && !show[i])
			continue;
		if (shown++)
			fputc('\n', f);
		finding_text(f, &d->findings[i], o);
		count[d->findings[i].severity]++;
		uncertain |= d->findings[i].uncertain;
	}
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
