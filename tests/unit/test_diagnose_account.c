/* test_account: the join of NVML's process lists with the holder engine's processes, on hand-built inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnose/account.h"

#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

/* A world of two GPU nodes (nvidia0, nvidia1) and nvidiactl, built fresh by each test. */
struct world {
	struct target targets[3];
	struct hold holds[16];
	size_t nholds_used;
	struct holder holders[8];
	struct holders_scan scan;
	struct nvml_proc procs[2][8];
	struct nvml_gpu gpus[2];
	struct nvml_info nv;
};

enum { T_GPU0, T_GPU1, T_CTL };

static void world_init(struct world *w)
{
	memset(w, 0, sizeof *w);
	w->targets[T_GPU0] = (struct target){.path = "/dev/nvidia0", .kind = "gpu", .gpu_minor = 0,
					     .bus_id = "0000:18:00.0", .ok = true};
	w->targets[T_GPU1] = (struct target){.path = "/dev/nvidia1", .kind = "gpu", .gpu_minor = 1,
					     .bus_id = "0000:2a:00.0", .ok = true};
	w->targets[T_CTL] = (struct target){.path = "/dev/nvidiactl", .kind = "ctl", .gpu_minor = -1, .ok = true};
	w->scan.targets = w->targets;
	w->scan.ntargets = 3;
	w->scan.holders = w->holders;
	w->scan.nscanned = 100;
	w->nv.loaded = true;
	w->nv.gpus = w->gpus;
	w->nv.ngpus = 2;
	for (int i = 0; i < 2; i++) {
		struct nvml_gpu *g = &w->gpus[i];
		g->index = (unsigned)i;
		g->minor = i;
		snprintf(g->uuid, sizeof g->uuid, "GPU-%d%d%d%d-aaaa", i, i, i, i);
		snprintf(g->name, sizeof g->name, "NVIDIA H200");
		snprintf(g->bus_id, sizeof g->bus_id, "%s", i ? "0000:2a:00.0" : "0000:18:00.0");
		g->mem_total = 143771 * MIB;
		g->procs = w->procs[i];
	}
}

/* Adds a holder (pids must be added in increasing order) of the given targets (-1 ends the list). */
static void add_holder(struct world *w, int pid, int t0, int t1)
{
	struct holder *h = &w->holders[w->scan.nholders++];
	memset(h, 0, sizeof *h);
	h->info.pid = pid;
	h->info.state = 'S';
	h->holds = &w->holds[w->nholds_used];
	int ts[2] = {t0, t1};
	for (int i = 0; i < 2; i++)
		if (ts[i] >= 0) {
			w->holds[w->nholds_used++] = (struct hold){.target = (size_t)ts[i], .means = HOLD_FD, .nfd = 1};
			h->nholds++;
		}
}

static void add_proc(struct world *w, int gpu, unsigned pid, long long mib)
{
	struct nvml_gpu *g = &w->gpus[gpu];
	g->procs[g->nprocs++] = (struct nvml_proc){.pid = pid, .used_known = mib >= 0,
						   .used_bytes = mib >= 0 ? (unsigned long long)mib * MIB : 0,
						   .lists = NVML_LIST_COMPUTE};
}

static const struct account_proc *row(const struct account_gpu *g, int pid)
{
	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	return NULL;
}

static void test_memory_is_attributed_by_pid_and_sorted_and_the_rest_is_unattributed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 100, T_GPU0, T_CTL);
	add_holder(&w, 200, T_CTL, -1);     /* holds only nvidiactl, yet NVML lists it on GPU 0 */
	add_holder(&w, 300, T_GPU0, -1);    /* a monitoring tool */
	add_proc(&w, 0, 100, 1024);
	add_proc(&w, 0, 200, 2048);
	w.gpus[0].mem_used = 4096 * MIB;
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_int_equal(a.ngpus, 2);
	const struct account_gpu *g = &a.gpus[0];
	assert_ptr_equal(g->target, &w.targets[T_GPU0]);
	assert_int_equal(g->nprocs, 3);
	assert_int_equal(g->procs[0].pid, 200);   /* largest first */
	assert_int_equal(g->procs[0].kind, ACCOUNT_ATTRIBUTED);
	assert_ptr_equal(g->procs[0].holder, &w.holders[1]);
	assert_int_equal(g->procs[1].pid, 100);
	assert_int_equal(g->procs[2].pid, 300);
	assert_int_equal(g->procs[2].kind, ACCOUNT_DEVICE_ONLY);
	assert_true(g->unattributed_known);
	assert_int_equal(g->attributed_bytes, 3072 * MIB);
	assert_int_equal(g->unattributed_bytes, 1024 * MIB);
	assert_int_equal(g->attributed_bytes + g->unattributed_bytes, g->used_bytes);
	assert_int_equal(a.gpus[1].nprocs, 0);
	assert_int_equal(a.nothers, 0);   /* 200 is accounted for on GPU 0 */
	account_free(&a);
}

static void test_on_the_host_a_missing_pid_exited_and_holders_without_entry_are_its_heirs(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 5151, T_GPU0, -1);   /* forked child that kept the fds */
	add_proc(&w, 0, 4242, 3590);        /* the dead parent */
	w.gpus[0].mem_used = 3590 * MIB;
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	const struct account_gpu *g = &a.gpus[0];
	assert_int_equal(row(g, 4242)->kind, ACCOUNT_EXITED);
	assert_int_equal(row(g, 4242)->host_pid, 4242);
	assert_null(row(g, 4242)->info);
	assert_int_equal(row(g, 5151)->kind, ACCOUNT_INHERITED);
	assert_int_equal(row(g, 5151)->host_pid, 5151);
	assert_int_equal(g->procs[0].pid, 4242);
	assert_int_equal(g->unattributed_bytes, 0);
	account_free(&a);
}

static void test_in_a_child_namespace_a_missing_pid_is_held_outside(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 7, T_GPU0, -1);
	add_proc(&w, 0, 123456, 4623);
	w.gpus[0].mem_used = 4623 * MIB;
	/* A process in extra with NVML's number is a coincidence in a child namespace: ignored. */
	struct proc_info extra = {.pid = 123456, .state = 'S'};
	struct account a;
	account_build(&w.nv, &w.scan, &extra, 1, false, &a);
	const struct account_gpu *g = &a.gpus[0];
	assert_false(a.host_pidns);
	assert_int_equal(row(g, 123456)->kind, ACCOUNT_OUTSIDE);
	assert_true(row(g, 123456)->used_known);
	assert_int_equal(row(g, 123456)->used_bytes, 4623 * MIB);
	assert_int_equal(row(g, 7)->kind, ACCOUNT_UNMATCHED);
	assert_int_equal(row(g, 7)->host_pid, -1);
	assert_int_equal(g->attributed_bytes, 4623 * MIB);
	account_free(&a);
}

static void test_in_a_child_namespace_without_missing_pids_holders_hold_no_memory(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 7, T_GPU1, -1);
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, false, &a);
	assert_int_equal(a.gpus[1].nprocs, 1);
	assert_int_equal(a.gpus[1].procs[0].kind, ACCOUNT_DEVICE_ONLY);
	account_free(&a);
}

static void test_on_the_host_a_pid_that_holds_no_node_is_attributed_from_extra(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_proc(&w, 1, 900, 100);
	w.gpus[1].mem_used = 100 * MIB;
	struct proc_info extra = {.pid = 900, .state = 'S'};
	struct account a;
	account_build(&w.nv, &w.scan, &extra, 1, true, &a);
	const struct account_proc *r = row(&a.gpus[1], 900);
	assert_int_equal(r->kind, ACCOUNT_ATTRIBUTED);
	assert_ptr_equal(r->info, &extra);
	assert_null(r->holder);
	account_free(&a);
}

static void test_unknown_memory_is_counted_and_sorted_last_among_nvml_rows(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 10, T_GPU0, -1);
	add_holder(&w, 11, T_GPU0, -1);
	add_proc(&w, 0, 10, -1);
	add_proc(&w, 0, 11, 500);
	w.gpus[0].mem_used = 2000 * MIB;
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	const struct account_gpu *g = &a.gpus[0];
	assert_int_equal(g->procs[0].pid, 11);
	assert_int_equal(g->procs[1].pid, 10);
	assert_false(g->procs[1].used_known);
	assert_int_equal(g->nunknown, 1);
	assert_int_equal(g->unattributed_bytes, 1500 * MIB);
	account_free(&a);
}

static void test_a_sum_above_used_is_flagged_not_negative(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 10, T_GPU0, -1);
	add_proc(&w, 0, 10, 900);
	w.gpus[0].mem_used = 800 * MIB;
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_true(a.gpus[0].over_attributed);
	assert_int_equal(a.gpus[0].unattributed_bytes, 0);
	account_free(&a);
}

static void test_without_nvml_gpus_come_from_dev_and_memory_is_unknown(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 10, T_GPU0, -1);
	add_holder(&w, 11, T_CTL, -1);
	struct account a;
	account_build(NULL, &w.scan, NULL, 0, true, &a);
	assert_false(a.nvml_ok);
	assert_int_equal(a.ngpus, 2);
	assert_int_equal(a.gpus[0].index, -1);
	assert_int_equal(a.gpus[0].minor, 0);
	assert_false(a.gpus[0].unattributed_known);
	assert_int_equal(a.gpus[0].procs[0].kind, ACCOUNT_UNKNOWN);
	assert_int_equal(a.nothers, 1);
	assert_int_equal(a.others[0]->info.pid, 11);
	assert_int_equal(account_select(&a, "1"), 1);   /* the minor stands in for the index */
	account_free(&a);
}

static void test_a_failed_process_list_makes_memory_unknown(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 10, T_GPU0, -1);
	w.gpus[0].list_rc[0] = NVML_E_NO_PERMISSION;
	w.gpus[0].mem_used = 10 * MIB;
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_false(a.gpus[0].procs_known);
	assert_false(a.gpus[0].unattributed_known);
	assert_true(a.gpus[0].mem_known);
	assert_int_equal(a.gpus[0].procs[0].kind, ACCOUNT_UNKNOWN);
	account_free(&a);
}

static void test_gpus_match_nodes_by_minor_or_bus_id_and_unmatched_nodes_are_kept(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	w.nv.ngpus = 1;
	w.gpus[0].minor_rc = NVML_E_NOT_SUPPORTED;
	snprintf(w.gpus[0].bus_id, sizeof w.gpus[0].bus_id, "0000:2A:00.0");   /* GPU 0 is /dev/nvidia1 */
	add_holder(&w, 10, T_GPU0, -1);
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_int_equal(a.ngpus, 2);
	assert_ptr_equal(a.gpus[0].target, &w.targets[T_GPU1]);
	assert_int_equal(a.gpus[0].minor, 1);
	assert_ptr_equal(a.gpus[1].target, &w.targets[T_GPU0]);   /* NVML did not name it */
	assert_int_equal(a.gpus[1].index, -1);
	assert_int_equal(a.gpus[1].procs[0].kind, ACCOUNT_UNKNOWN);
	account_free(&a);
}

static void test_selectors_index_uuid_bus_id_and_device_path(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	snprintf(w.gpus[1].uuid, sizeof w.gpus[1].uuid, "GPU-0000-bbbb");   /* shares a prefix with GPU 0 */
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_int_equal(account_select(&a, "0"), 0);
	assert_int_equal(account_select(&a, "1"), 1);
	assert_int_equal(account_select(&a, "2"), -1);
	assert_int_equal(account_select(&a, "GPU-0000-aaaa"), 0);
	assert_int_equal(account_select(&a, "gpu-0000-BBBB"), 1);
	assert_int_equal(account_select(&a, "GPU-0000-b"), 1);
	assert_int_equal(account_select(&a, "GPU-0000"), -2);
	assert_int_equal(account_select(&a, "GPU-9"), -1);
	assert_int_equal(account_select(&a, "0000:2a:00.0"), 1);
	assert_int_equal(account_select(&a, "00000000:2A:00.0"), 1);
	assert_int_equal(account_select(&a, "0000:18:00.0"), 0);
	assert_int_equal(account_select(&a, "0000:99:00.0"), -1);
	assert_int_equal(account_select(&a, "/dev/nvidia1"), 1);
	assert_int_equal(account_select(&a, "nvidia0"), 0);
	assert_int_equal(account_select(&a, "/dev/nvidia7"), -1);
	assert_int_equal(account_select(&a, "banana"), -1);
	assert_int_equal(account_select(&a, ""), -1);
	account_free(&a);
}

static void test_control_node_holders_without_entries_are_others(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	add_holder(&w, 1, T_CTL, -1);     /* e.g. nvidia-persistenced before a GPU is opened */
	add_holder(&w, 2, T_GPU0, T_CTL);
	struct account a;
	account_build(&w.nv, &w.scan, NULL, 0, true, &a);
	assert_int_equal(a.nothers, 1);
	assert_int_equal(a.others[0]->info.pid, 1);
	assert_int_equal(a.gpus[0].procs[0].kind, ACCOUNT_DEVICE_ONLY);
	assert_string_equal(account_kind_name(ACCOUNT_OUTSIDE), "outside_namespace");
	account_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_is_attributed_by_pid_and_sorted_and_the_rest_is_unattributed),
		cmocka_unit_test(test_on_the_host_a_missing_pid_exited_and_holders_without_entry_are_its_heirs),
		cmocka_unit_test(test_in_a_child_namespace_a_missing_pid_is_held_outside),
		cmocka_unit_test(test_in_a_child_namespace_without_missing_pids_holders_hold_no_memory),
		cmocka_unit_test(test_on_the_host_a_pid_that_holds_no_node_is_attributed_from_extra),
		cmocka_unit_test(test_unknown_memory_is_counted_and_sorted_last_among_nvml_rows),
		cmocka_unit_test(test_a_sum_above_used_is_flagged_not_negative),
		cmocka_unit_test(test_without_nvml_gpus_come_from_dev_and_memory_is_unknown),
		cmocka_unit_test(test_a_failed_process_list_makes_memory_unknown),
		cmocka_unit_test(test_gpus_match_nodes_by_minor_or_bus_id_and_unmatched_nodes_are_kept),
		cmocka_unit_test(test_selectors_index_uuid_bus_id_and_device_path),
		cmocka_unit_test(test_control_node_holders_without_entries_are_others),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
