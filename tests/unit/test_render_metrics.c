/* Unit tests of render/metrics.c and diagnose/gauges.c: label values escaped per the exposition
 * format whatever bytes a process chose for its name; the series over a real example snapshot
 * (examples/orphaned-tp-workers.json: four orphaned SGLang ranks on GPU 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "diagnose/diagnose.h"
#include "diagnose/gauges.h"
#include "render/metrics.h"
#include "snapshot/snapshot.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *label(const char *s, size_t len)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	render_metrics_label_value(f, s, len);
	fclose(f);
	return out;
}

static void check_label(const char *in, size_t len, const char *want)
{
	char *got = label(in, len);
	assert_string_equal(got, want);
	free(got);
}

static void test_label_values_escape_backslash_quote_and_newline(void **st)
{
	(void)st;
	/* The value Prometheus decodes is the name as gpuwho shows it (escape_term): a newline is the
	 * text \n, a backslash \\; the exposition escapes those backslashes and the quote once more. */
	check_label("plain", 5, "plain");
	check_label("a\"b", 3, "a\\\"b");
	check_label("a\\b", 3, "a\\\\\\\\b");
	check_label("a\nb", 3, "a\\\\nb");
	check_label("\"}\nevil_metric 1\n", 17, "\\\"}\\\\nevil_metric 1\\\\n");
}

static void test_controls_bidi_and_invalid_utf8_become_visible_text(void **st)
{
	(void)st;
	/* ESC and a bidi override would act on whoever reads /metrics in a terminal or a dashboard;
	 * 0xff is not UTF-8, which Prometheus rejects in a label value (the whole scrape would fail). */
	check_label("\x1b]0;PWNED\x07", 10, "\\\\e]0;PWNED\\\\x07");
	check_label("a\xff" "b", 3, "a\\\\xffb");
	check_label("ok\xc3\xa9", 4, "ok\xc3\xa9");   /* é stays */
	check_label("x\xe2\x80\xae" "y", 5, "x\\\\u{202e}y");
	check_label("nul\0x", 5, "nul\\\\x00x");
}

static struct snapshot snap;

static int load_example(void **st)
{
	(void)st;
	char *err = NULL;
	if (snapshot_load("examples/orphaned-tp-workers.json", &snap, &err) != 0)
		fail_msg("examples/orphaned-tp-workers.json: %s", err ? err : "?");
	return 0;
}

static int free_example(void **st)
{
	(void)st;
	snapshot_free(&snap);
	return 0;
}

static char *render(const struct snapshot *s, unsigned maxp)
{
	struct diagnosis d;
	diagnose(s, &d);
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	struct metrics_opts o = {.max_processes = maxp, .scrape_duration_s = 0.25};
	assert_true(render_metrics(f, s, &d, &o));
	fclose(f);
	diag_free(&d);
	return out;
}

/* The sample line that starts with prefix, or NULL. */
static const char *line_of(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, strlen(prefix)))
			return p;
	return NULL;
}

static void test_orphans_give_stuck_bytes_equal_to_their_memory(void **st)
{
	(void)st;
	char *m = render(&snap, 16);
	const char *l = line_of(m, "gpuwho_gpu_memory_stuck_bytes{gpu=\"0\",uuid=\"GPU-c828feed-f198-be2d-6b0e-912cde0c0e73\",verdict=\"orphaned_workers\"} ");
	assert_non_null(l);
	/* Four ranks of 8,710 MiB each (the example's NVML rows). */
	assert_int_equal(strtoull(strchr(l, '}') + 2, NULL, 10), 4ull * 9133096960ull);
	assert_non_null(line_of(m, "gpuwho_findings{verdict=\"orphaned_workers\",severity=\"action\",gpu=\"0\"} 1\n"));
	assert_non_null(line_of(m, "gpuwho_gpu_memory_stuck_bytes{gpu=\"0\",uuid=\"GPU-c828feed-f198-be2d-6b0e-912cde0c0e73\",verdict=\"driver_leak\"} 0\n"));
	assert_non_null(line_of(m, "gpuwho_scrape_duration_seconds 0.250000\n"));
	assert_non_null(line_of(m, "gpuwho_up 1\n"));
	free(m);
}

static void test_max_processes_bounds_the_per_process_series(void **st)
{
	(void)st;
	char *m = render(&snap, 2);
	size_t n = 0;
	for (const char *p = m; (p = strstr(p, "\ngpuwho_process_gpu_memory_bytes{")); p++)
		n++;
	assert_int_equal(n, 2);
	assert_non_null(line_of(m, "gpuwho_gpu_processes{gpu=\"0\",uuid=\"GPU-c828feed-f198-be2d-6b0e-912cde0c0e73\"} 4\n"));
	free(m);
	m = render(&snap, 0);
	assert_null(strstr(m, "\ngpuwho_process_gpu_memory_bytes{"));
	free(m);
}

static void test_a_hostile_comm_and_owner_stay_inside_their_label(void **st)
{
	(void)st;
	/* Every holder of the example gets a name that tries to end the label and start a series. */
	for (size_t i = 0; i < snap.scan.nholders; i++) {
		struct proc_info *p = &snap.scan.holders[i].info;
		free(p->comm);
		p->comm = xstrdup("x\"} 1\ngpuwho_up{a=\"\\");
		free(p->owner.slurm_job);
		p->owner.slurm_job = xstrdup("42\n");
		free(p->owner.pod_name);
		p->owner.pod_name = xstrdup("pod\xff");
	}
	char *m = render(&snap, 16);
	const char *l = line_of(m, "gpuwho_process_gpu_memory_bytes{");
	assert_non_null(l);
	const char *want = "comm=\"x\\\"} 1\\\\ngpuwho_up{a=\\\"\\\\\\\\\",job=\"42\\\\n\",pod=\"pod\\\\xff\",";
	assert_non_null(strstr(l, want));
	/* gpuwho_up appears once as a sample: the name did not inject one. */
	size_t n = 0;
	for (const char *p = m; (p = strstr(p, "\ngpuwho_up")); p++)
		n++;
	assert_int_equal(n, 1);
	free(m);
}

static void test_gauges_count_only_stuck_verdicts(void **st)
{
	(void)st;
	struct finding f = {.verdict = "in_use", .slot = 0};
	assert_false(gauge_is_stuck(&f));
	f.verdict = "zombie_leader";
	assert_true(gauge_is_stuck(&f));
	f.slot = -1;   /* host-wide findings hold no GPU memory */
	assert_false(gauge_is_stuck(&f));
	f.verdict = "gpu_health";
	f.slot = 0;
	assert_false(gauge_is_stuck(&f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_values_escape_backslash_quote_and_newline),
		cmocka_unit_test(test_controls_bidi_and_invalid_utf8_become_visible_text),
		cmocka_unit_test_setup_teardown(test_orphans_give_stuck_bytes_equal_to_their_memory, load_example, free_example),
		cmocka_unit_test_setup_teardown(test_max_processes_bounds_the_per_process_series, load_example, free_example),
		cmocka_unit_test_setup_teardown(test_a_hostile_comm_and_owner_stay_inside_their_label, load_example, free_example),
		cmocka_unit_test(test_gauges_count_only_stuck_verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
