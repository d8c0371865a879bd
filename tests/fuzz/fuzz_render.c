/* fuzz_render: libFuzzer target for the renderers over loaded snapshots (`make fuzz`, clang only).
 * A snapshot is untrusted input (a file from another host, a bug report): whatever loads is
 * rendered as ps, holders, why, check and free text and as Prometheus metrics, and the text must
 * never carry a raw control byte (C0 but newline, DEL, C1) or a bidi override — every
 * process-controlled string is escaped. The JSON renderers must produce a document. */
#include "diagnose/diagnose.h"
#include "free/plan.h"
#include "render/metrics.h"
#include "render/render.h"
#include "snapshot/snapshot.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Aborts on a byte a terminal would act on: C0 (but \n), DEL, C1 (UTF-8 C2 80..9F), bidi
 * controls (U+200E/F, U+202A..202E, U+2066..2069). */
static void check_text(const char *t, size_t n)
{
	const unsigned char *u = (const unsigned char *)t;
	for (size_t i = 0; i < n; i++) {
		if ((u[i] < 0x20 && u[i] != '\n') || u[i] == 0x7f)
			abort();
		if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
			abort();
		if (u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0x8e || u[i + 2] == 0x8f || (u[i + 2] >= 0xaa && u[i + 2] <= 0xae)))
			abort();
		if (u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x81 && u[i + 2] >= 0xa6 && u[i + 2] <= 0xa9)
			abort();
	}
}

static void check_json(json_t *j)
{
	if (!j)
		abort();
	char *t = json_dumps(j, 0);
	if (!t)
		abort();
	free(t);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot s;
	char *err = NULL;
	if (snapshot_from_json((const char *)data, size, &s, &err) != 0) {
		free(err);
		snapshot_free(&s);
		return 0;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	struct render_opts ro = {.color = false, .width = 80};
	const struct nvml_info *nv = s.nvml_asked ? &s.nvml : NULL;

	struct account a;
	account_from_snapshot(&s, &a);
	render_ps_text(f, &a, NULL, nv, &s.scan, &ro);
	check_json(render_ps_json(&a, NULL, nv, &s.scan));
	account_free(&a);

	ro.verbose = true;
	render_holders_text(f, &s.scan, &ro);
	check_json(render_holders_json(&s.scan));
	ro.verbose = false;

	struct diagnosis d;
	diagnose(&s, &d);
	render_why_text(f, &d, NULL, &ro);
	check_json(render_why_json(&d, NULL, s.host_pidns, -1));
	/* check's lines: every GPU judged bad, with its worst finding and the first row as the ended
	 * job's process, so that each line's wording meets the snapshot's bytes. */
	struct check_gpu *cg = calloc(d.acct.ngpus + 1, sizeof *cg);
	if (!cg)
		abort();
	for (size_t k = 0; k < d.acct.ngpus; k++) {
		cg[k].slot = k;
		for (size_t i = 0; i < d.nfindings && !cg[k].finding; i++)
			if (d.findings[i].slot == (int)k)
				cg[k].finding = &d.findings[i];
		const struct account_gpu *g = &d.acct.gpus[k];
		cg[k].job_row = g->nprocs && g->procs[0].info ? &g->procs[0] : NULL;
		cg[k].bad = cg[k].finding || cg[k].job_row;
	}
	struct check_report cr = {.s = &s, .d = &d, .gpus = cg, .ngpus = d.acct.ngpus, .selected_by = "all",
				  .ended_job = "4242", .host = true, .inspected = true};
	render_check_text(f, &cr);
	check_json(render_check_json(&cr));
	free(cg);
	struct metrics_opts mo = {.max_processes = 16, .scrape_duration_s = 0.01};
	render_metrics(f, &s, &d, &mo);
	diag_free(&d);

	/* The plan for GPU 0 when there is one, and the /dev/shm clean-up. */
	const char *sel[] = {"0"};
	struct free_plan_opts po = {.uid = 0, .shm = true};
	struct free_plan p;
	char *perr = NULL;
	if (free_plan_build(&s, sel, 1, &po, &p, &perr) != 0) {
		free(perr);
		free_plan_release(&p);
		perr = NULL;
		if (free_plan_build(&s, NULL, 0, &po, &p, &perr) != 0)
			abort();   /* no selector cannot fail */
	}
	struct free_view v = {.plan = &p, .grace_s = 10};
	render_free_text(f, &v, &ro);
	check_json(render_free_json(&v));
	free_plan_release(&p);

	fclose(f);
	check_text(buf, len);
	free(buf);
	snapshot_free(&s);
	return 0;
}
