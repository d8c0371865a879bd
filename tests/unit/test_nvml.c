/* test_nvml: the NVML layer against the fake libnvidia-ml (build/tests/fake_nvml*.so), loaded through dlopen as users load the real one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nvml/nvml.h"
#include "nvml/nvml_json.h"
#include "util.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

static char scenario_path[PATH_MAX];

/* Where the fake libraries are: $TESTBIN (tests/run sets it), else beside this binary. */
static char *fake_lib(const char *name)
{
	const char *dir = getenv("TESTBIN");
	if (dir && *dir)
		return xasprintf("%s/%s", dir, name);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	return xasprintf("%s/%s", dirname(self), name);
}

/* Writes the scenario the fake reads at nvmlInit. */
static void scenario(const char *text)
{
	FILE *f = fopen(scenario_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	setenv("FAKE_NVML_SCENARIO", scenario_path, 1);
}

/* Collects through the named fake library with the given scenario. */
static int collect_with(const char *lib, const char *text, struct nvml_info *info)
{
	scenario(text);
	char *path = fake_lib(lib);
	int r = nvml_collect(path, info);
	free(path);
	return r;
}

static int collect(const char *text, struct nvml_info *info)
{
	return collect_with("fake_nvml.so", text, info);
}

static const struct nvml_proc *find_proc(const struct nvml_gpu *g, unsigned pid)
{
	for (size_t i = 0; i < g->nprocs; i++)
		if (g->procs[i].pid == pid)
			return &g->procs[i];
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	snprintf(scenario_path, sizeof scenario_path, "/tmp/gpuwho-test-nvml.XXXXXX");
	int fd = mkstemp(scenario_path);
	assert_true(fd >= 0);
	close(fd);
	unsetenv("GPUWHO_NVML");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(scenario_path);
	unsetenv("FAKE_NVML_SCENARIO");
	return 0;
}

static void test_reads_every_gpu_field_and_process_from_a_current_library(void **state)
{
	(void)state;
	struct nvml_info info;
	int r = collect("driver 580.159.04\n"
			"nvml 12.580.159.04\n"
			"gpu 0 minor=0 uuid=GPU-aaaa name=\"NVIDIA H200\" bus=00000000:18:00.0 total_mib=143771 "
			"used_mib=5000 reserved_mib=523 persistence=1 compute_mode=3 util_gpu=42 util_mem=17\n"
			"gpu 1 minor=3 uuid=GPU-bbbb bus=00000000:AB:00.0 persistence=0 mig=1 retired_pending=1 "
			"remap_pending=1 remap_corr=2 remap_unc=1 ecc=7\n"
			"proc gpu=0 pid=1234 mib=1542 list=compute\n"
			"proc gpu=0 pid=2222 mib=10 list=graphics\n"
			"proc gpu=0 pid=3333 mib=20 list=mps\n"
			"proc gpu=1 pid=4444 mib=30 gi=1 ci=0\n"
			"proc gpu=1 pid=4445 mib=40 gi=2 ci=0\n",
			&info);
	assert_int_equal(r, 0);
	assert_true(info.loaded);
	assert_null(info.error);
	assert_string_equal(info.driver_version, "580.159.04");
	assert_string_equal(info.nvml_version, "12.580.159.04");
	assert_non_null(strstr(info.lib_path, "fake_nvml.so"));
	assert_int_equal(info.proc_api, 3);
	assert_int_equal(info.proc_stride, 24);
	assert_int_equal(info.ngpus, 2);

	const struct nvml_gpu *g = &info.gpus[0];
	assert_null(g->error);
	assert_int_equal(g->handle_rc, 0);
	assert_int_equal(g->minor, 0);
	assert_string_equal(g->uuid, "GPU-aaaa");
	assert_string_equal(g->name, "NVIDIA H200");
	assert_string_equal(g->bus_id, "0000:18:00.0");
	assert_int_equal(g->mem_rc, 0);
	assert_int_equal(g->mem_api, 2);
	assert_int_equal(g->mem_reserved_rc, 0);
	assert_int_equal(g->mem_total, 143771 * MIB);
	assert_int_equal(g->mem_used, 5000 * MIB);
	assert_int_equal(g->mem_reserved, 523 * MIB);
	assert_int_equal(g->mem_free, (143771 - 5000) * MIB);
	assert_true(g->persistence);
	assert_int_equal(g->compute_mode, NVML_COMPUTE_EXCLUSIVE_PROCESS);
	assert_false(g->mig_current);
	assert_int_equal(g->util_rc, 0);
	assert_int_equal(g->util_gpu, 42);
	assert_int_equal(g->util_mem, 17);
	assert_int_equal(g->nprocs, 3);
	const struct nvml_proc *p = find_proc(g, 1234);
	assert_non_null(p);
	assert_true(p->used_known);
	assert_int_equal(p->used_bytes, 1542 * MIB);
	assert_int_equal(p->lists, NVML_LIST_COMPUTE);
	assert_false(p->instance_known);
	assert_int_equal(find_proc(g, 2222)->lists, NVML_LIST_GRAPHICS);
	assert_int_equal(find_proc(g, 3333)->lists, NVML_LIST_MPS);
	for (int l = 0; l < NVML_NLISTS; l++) {
		assert_int_equal(g->list_rc[l], 0);
		assert_int_equal(g->list_api[l], 3);
	}

	g = &info.gpus[1];
	assert_int_equal(g->minor, 3);
	assert_string_equal(g->name, "NVIDIA Fake GPU");
	assert_string_equal(g->bus_id, "0000:ab:00.0");
	assert_false(g->persistence);
	assert_int_equal(g->mig_rc, 0);
	assert_true(g->mig_current);
	assert_true(g->retired_pending);
	assert_int_equal(g->remap_rc, 0);
	assert_true(g->remap_pending);
	assert_false(g->remap_failure);
	assert_int_equal(g->remap_correctable, 2);
	assert_int_equal(g->remap_uncorrectable, 1);
	assert_int_equal(g->ecc_rc, 0);
	assert_int_equal(g->ecc_uncorrected_volatile, 7);
	assert_int_equal(g->nprocs, 2);
	p = find_proc(g, 4445);
	assert_true(p->instance_known);
	assert_int_equal(p->gi, 2);
	assert_int_equal(p->ci, 0);
	assert_int_equal(p->used_bytes, 40 * MIB);
	nvml_info_free(&info);
}

static void test_missing_library_is_explained_not_fatal(void **state)
{
	(void)state;
	struct nvml_info info;
	int r = nvml_collect("/nonexistent/libnvidia-ml.so.1", &info);
	assert_int_equal(r, -1);
	assert_false(info.loaded);
	assert_int_equal(info.rc, NVML_E_NO_LIBRARY);
	assert_non_null(strstr(info.error, "NVML library not found: dlopen(/nonexistent/libnvidia-ml.so.1) failed"));
	assert_null(strchr(info.error, '\n'));
	assert_string_equal(info.lib_path, "/nonexistent/libnvidia-ml.so.1");
	assert_int_equal(info.ngpus, 0);
	nvml_info_free(&info);
}

static void test_library_without_nvml_symbols_is_rejected(void **state)
{
	(void)state;
	struct nvml_info info;
	int r = nvml_collect("libm.so.6", &info);
	assert_int_equal(r, -1);
	assert_false(info.loaded);
	assert_int_equal(info.rc, NVML_E_NOT_NVML);
	assert_string_equal(info.error, "libm.so.6 is not a usable NVML library: it has no nvmlInit_v2");
	nvml_info_free(&info);
}

static void test_driver_not_loaded_is_explained(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("init_error 9\ngpu 0\n", &info), -1);
	assert_false(info.loaded);
	assert_int_equal(info.rc, NVML_E_DRIVER_NOT_LOADED);
	assert_string_equal(info.error, "NVIDIA driver not loaded: nvmlInit_v2 failed with DRIVER_NOT_LOADED (9); "
					"is the nvidia kernel module loaded?");
	assert_int_equal(info.ngpus, 0);
	nvml_info_free(&info);
}

static void test_library_and_driver_version_mismatch_is_explained(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("init_error 18\n", &info), -1);
	assert_int_equal(info.rc, NVML_E_LIB_RM_VERSION_MISMATCH);
	assert_non_null(strstr(info.error, "NVML library and NVIDIA driver versions differ: nvmlInit_v2 failed with "
					   "LIB_RM_VERSION_MISMATCH (18); "));
	assert_non_null(strstr(info.error, "reboot"));
	nvml_info_free(&info);
}

static void test_no_permission_at_init_is_explained(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("init_error 4\n", &info), -1);
	assert_non_null(strstr(info.error, "NO_PERMISSION (4)"));
	assert_non_null(strstr(info.error, "/dev/nvidiactl"));
	nvml_info_free(&info);
}

static void test_failing_gpu_count_keeps_versions_and_explains(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("driver 535.54.03\nfail nvmlDeviceGetCount_v2 999\ngpu 0\n", &info), -1);
	assert_true(info.loaded);
	assert_string_equal(info.driver_version, "535.54.03");
	assert_non_null(strstr(info.error, "NVML cannot count GPUs: nvmlDeviceGetCount_v2 failed with UNKNOWN (999)"));
	assert_int_equal(info.ngpus, 0);
	nvml_info_free(&info);
}

static void test_host_without_gpus_is_a_valid_answer(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("driver 580.159.04\n", &info), 0);
	assert_true(info.loaded);
	assert_null(info.error);
	assert_int_equal(info.ngpus, 0);
	assert_null(info.gpus);
	assert_int_equal(info.proc_stride, 0);
	nvml_info_free(&info);
}

static void test_process_list_growing_between_count_and_fill_is_read_whole(void **state)
{
	(void)state;
	struct nvml_info info;
	/* 2 more processes: within the headroom of the first fill */
	assert_int_equal(collect("gpu 0\nproc gpu=0 pid=10 mib=1\nproc gpu=0 pid=11 mib=1\ngrow_between_calls 2\n", &info),
			 0);
	assert_int_equal(info.gpus[0].list_rc[0], 0);
	assert_int_equal(info.gpus[0].nprocs, 4);
	nvml_info_free(&info);

	/* 50 more: past the headroom, so the fill answers INSUFFICIENT_SIZE and is asked again */
	assert_int_equal(collect("gpu 0\nproc gpu=0 pid=10 mib=1\nproc gpu=0 pid=11 mib=1\ngrow_between_calls 50\n", &info),
			 0);
	assert_int_equal(info.gpus[0].list_rc[0], 0);
	assert_int_equal(info.gpus[0].nprocs, 52);
	assert_non_null(find_proc(&info.gpus[0], 10));
	nvml_info_free(&info);

	/* it grows again after the second answer too */
	assert_int_equal(collect("gpu 0\nproc gpu=0 pid=10 mib=1\ngrow_between_calls 40 3\n", &info), 0);
	assert_int_equal(info.gpus[0].list_rc[0], 0);
	assert_int_equal(info.gpus[0].nprocs, 121);
	nvml_info_free(&info);
}

static void test_unavailable_process_memory_is_unknown_not_a_number(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0\nproc gpu=0 pid=99999 mib=unknown\nproc gpu=0 pid=5 mib=0\n", &info), 0);
	const struct nvml_proc *p = find_proc(&info.gpus[0], 99999);
	assert_non_null(p);
	assert_false(p->used_known);
	assert_int_equal(p->used_bytes, 0);
	p = find_proc(&info.gpus[0], 5);
	assert_true(p->used_known); /* zero is a real answer */
	assert_int_equal(p->used_bytes, 0);
	nvml_info_free(&info);
}

static void test_pid_in_several_lists_is_one_process_with_each_list(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0\n"
				 "proc gpu=0 pid=500 mib=100 list=compute\n"
				 "proc gpu=0 pid=500 mib=100 list=graphics\n"
				 "proc gpu=0 pid=501 mib=unknown list=compute\n"
				 "proc gpu=0 pid=501 mib=7 list=mps\n"
				 "proc gpu=0 pid=600 mib=3 gi=1 ci=0\n"
				 "proc gpu=0 pid=600 mib=4 gi=2 ci=0\n",
				 &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_int_equal(g->nprocs, 3);
	const struct nvml_proc *p = find_proc(g, 600); /* contexts on two MIG instances add up */
	assert_int_equal(p->lists, NVML_LIST_COMPUTE);
	assert_int_equal(p->used_bytes, 7 * MIB);
	p = find_proc(g, 500);
	assert_int_equal(p->lists, NVML_LIST_COMPUTE | NVML_LIST_GRAPHICS);
	assert_int_equal(p->used_bytes, 100 * MIB);
	p = find_proc(g, 501);
	assert_int_equal(p->lists, NVML_LIST_COMPUTE | NVML_LIST_MPS);
	assert_true(p->used_known);
	assert_int_equal(p->used_bytes, 7 * MIB);
	nvml_info_free(&info);
}

static void test_old_library_uses_v1_symbols_and_16_byte_entries(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect_with("fake_nvml_old.so",
				      "driver 418.67\ngpu 0 bus=00000000:3B:00.0 total_mib=16160 used_mib=900\n"
				      "proc gpu=0 pid=100 mib=300\nproc gpu=0 pid=101 mib=unknown\n"
				      "proc gpu=0 pid=102 mib=600\nproc gpu=0 pid=103 mib=1 list=graphics\n",
				      &info),
			 0);
	assert_true(info.loaded);
	assert_int_equal(info.proc_api, 1);
	assert_int_equal(info.proc_stride, 16);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_string_equal(g->bus_id, "0000:3b:00.0");
	assert_int_equal(g->mem_api, 1);
	assert_int_equal(g->mem_total, 16160 * MIB);
	assert_int_equal(g->mem_used, 900 * MIB);
	assert_int_equal(g->mem_reserved_rc, NVML_E_FUNCTION_NOT_FOUND);
	assert_int_equal(g->mig_rc, NVML_E_FUNCTION_NOT_FOUND);
	assert_int_equal(g->remap_rc, NVML_E_FUNCTION_NOT_FOUND);
	assert_int_equal(g->list_api[0], 1);
	assert_int_equal(g->nprocs, 4);
	assert_int_equal(find_proc(g, 100)->used_bytes, 300 * MIB);
	assert_false(find_proc(g, 101)->used_known);
	assert_int_equal(find_proc(g, 102)->used_bytes, 600 * MIB);
	assert_int_equal(find_proc(g, 103)->lists, NVML_LIST_GRAPHICS);
	assert_false(find_proc(g, 100)->instance_known);
	nvml_info_free(&info);
}

static void test_v3_answering_function_not_found_falls_back_to_v2(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0\nmissing nvmlDeviceGetComputeRunningProcesses_v3\n"
				 "proc gpu=0 pid=7 mib=70 gi=3 ci=1\nproc gpu=0 pid=8 mib=80 gi=4 ci=0\n",
				 &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_int_equal(g->list_rc[0], 0);
	assert_int_equal(g->list_api[0], 2);
	assert_int_equal(g->list_api[1], 3);
	assert_int_equal(g->nprocs, 2);
	assert_int_equal(find_proc(g, 7)->gi, 3);
	assert_int_equal(find_proc(g, 7)->ci, 1);
	assert_int_equal(find_proc(g, 8)->used_bytes, 80 * MIB);
	assert_int_equal(info.proc_stride, 24);
	nvml_info_free(&info);
}

static void test_each_process_list_version_reads_the_same_processes(void **state)
{
	(void)state;
	static const char *const apis[] = {"v1", "v2", "v3"};
	for (unsigned v = 1; v <= 3; v++) {
		struct nvml_info info;
		char *text = xasprintf("proc_api %s\ngpu 0\nproc gpu=0 pid=31 mib=310 gi=1 ci=1\n"
				       "proc gpu=0 pid=32 mib=unknown list=graphics\nproc gpu=0 pid=33 mib=330 list=mps\n",
				       apis[v - 1]);
		assert_int_equal(collect(text, &info), 0);
		free(text);
		const struct nvml_gpu *g = &info.gpus[0];
		for (int l = 0; l < NVML_NLISTS; l++) {
			assert_int_equal(g->list_rc[l], 0);
			assert_int_equal(g->list_api[l], v);
		}
		assert_int_equal(info.proc_stride, v == 1 ? 16 : 24);
		assert_int_equal(g->nprocs, 3);
		assert_int_equal(find_proc(g, 31)->used_bytes, 310 * MIB);
		assert_int_equal(find_proc(g, 31)->instance_known, v >= 2); /* v1 entries carry no MIG ids */
		assert_false(find_proc(g, 32)->used_known);
		assert_int_equal(find_proc(g, 33)->used_bytes, 330 * MIB);
		nvml_info_free(&info);
	}
}

static void test_collected_unknown_memory_and_lost_gpu_reach_the_json(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0\ngpu 1\ngpu_error 1 15\nproc gpu=0 pid=99999 mib=unknown\n", &info), 0);
	json_t *j = nvml_info_to_json(&info);
	json_t *gpus = json_object_get(j, "gpus");
	json_t *p = json_array_get(json_object_get(json_array_get(gpus, 0), "processes"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")), 99999);
	assert_true(json_is_null(json_object_get(p, "used_bytes")));
	json_t *lost = json_array_get(gpus, 1);
	assert_non_null(strstr(json_string_value(json_object_get(lost, "error")), "GPU_IS_LOST"));
	assert_true(json_is_null(json_object_get(lost, "memory")));
	json_decref(j);
	nvml_info_free(&info);
}

static void test_32_byte_v3_entries_of_driver_535_are_measured_not_assumed(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("driver 535.54.03\nstride 32\ngpu 0\n"
				 "proc gpu=0 pid=1001 mib=11\nproc gpu=0 pid=1002 mib=22\nproc gpu=0 pid=1003 mib=33 gi=1 ci=2\n",
				 &info),
			 0);
	assert_int_equal(info.proc_stride, 32);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_int_equal(g->nprocs, 3);
	assert_int_equal(find_proc(g, 1001)->used_bytes, 11 * MIB);
	assert_int_equal(find_proc(g, 1002)->used_bytes, 22 * MIB);
	assert_int_equal(find_proc(g, 1003)->used_bytes, 33 * MIB);
	assert_int_equal(find_proc(g, 1003)->gi, 1);
	assert_int_equal(find_proc(g, 1003)->ci, 2);
	nvml_info_free(&info);

	/* one entry: either stride reads it the same */
	assert_int_equal(collect("stride 32\ngpu 0\nproc gpu=0 pid=1001 mib=11\n", &info), 0);
	assert_int_equal(info.gpus[0].nprocs, 1);
	assert_int_equal(info.gpus[0].procs[0].pid, 1001);
	assert_int_equal(info.gpus[0].procs[0].used_bytes, 11 * MIB);
	nvml_info_free(&info);
}

static void test_unrecognised_v3_entry_layout_falls_back_to_v2(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("stride 40\ngpu 0\nproc gpu=0 pid=1001 mib=11\nproc gpu=0 pid=1002 mib=22\n", &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_int_equal(g->list_rc[0], 0);
	assert_int_equal(g->list_api[0], 2);
	assert_int_equal(g->nprocs, 2);
	assert_int_equal(find_proc(g, 1002)->used_bytes, 22 * MIB);
	assert_int_equal(info.proc_stride, 24);
	nvml_info_free(&info);

	/* with no older version to fall back on, the list is marked, and nothing is made up */
	assert_int_equal(collect("stride 40\ngpu 0\nproc gpu=0 pid=1001 mib=11\n"
				 "missing nvmlDeviceGetComputeRunningProcesses_v2\n"
				 "missing nvmlDeviceGetComputeRunningProcesses\n"
				 "proc gpu=0 pid=2002 mib=5 list=graphics\n",
				 &info),
			 0);
	g = &info.gpus[0];
	assert_int_equal(g->list_rc[0], NVML_E_BAD_LAYOUT);
	assert_int_equal(g->list_rc[1], 0); /* graphics fell back to _v2 */
	assert_int_equal(g->list_api[1], 2);
	assert_int_equal(g->nprocs, 1);
	assert_int_equal(g->procs[0].pid, 2002);
	nvml_info_free(&info);
}

static void test_lost_gpu_is_recorded_while_the_others_are_read(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0\ngpu 1\ngpu 2\ngpu_error 1 15\n"
				 "proc gpu=0 pid=1 mib=1\nproc gpu=1 pid=2 mib=2\nproc gpu=2 pid=3 mib=3\n",
				 &info),
			 0);
	assert_int_equal(info.ngpus, 3);
	assert_null(info.gpus[0].error);
	assert_null(info.gpus[2].error);
	assert_int_equal(info.gpus[0].nprocs, 1);
	assert_int_equal(info.gpus[2].nprocs, 1);
	const struct nvml_gpu *g = &info.gpus[1];
	assert_int_equal(g->handle_rc, NVML_E_GPU_IS_LOST);
	assert_string_equal(g->error, "GPU 1: nvmlDeviceGetHandleByIndex_v2 failed with GPU_IS_LOST (15): the GPU "
				      "fell off the bus or stopped responding; see dmesg for Xid errors");
	assert_int_equal(g->mem_rc, NVML_E_NOT_READ);
	assert_int_equal(g->nprocs, 0);
	nvml_info_free(&info);
}

static void test_gpu_lost_mid_read_stops_that_gpu_only(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0 uuid=GPU-zero\ngpu 1 uuid=GPU-one\nfail nvmlDeviceGetMemoryInfo_v2 15 gpu=0\n"
				 "proc gpu=0 pid=1 mib=1\nproc gpu=1 pid=2 mib=2\n",
				 &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_string_equal(g->uuid, "GPU-zero"); /* read before the loss */
	assert_int_equal(g->mem_rc, NVML_E_GPU_IS_LOST);
	assert_int_equal(g->mem_api, 0); /* no v1 fallback on a lost GPU */
	assert_int_equal(g->util_rc, NVML_E_NOT_READ);
	assert_int_equal(g->list_rc[0], NVML_E_NOT_READ);
	assert_non_null(strstr(g->error, "GPU 0: nvmlDeviceGetMemoryInfo_v2 failed with GPU_IS_LOST (15)"));
	g = &info.gpus[1];
	assert_null(g->error);
	assert_string_equal(g->uuid, "GPU-one");
	assert_int_equal(g->mem_api, 2);
	assert_int_equal(g->nprocs, 1);
	nvml_info_free(&info);
}

static void test_memory_v2_refused_falls_back_to_v1(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0 total_mib=1000 used_mib=250 reserved_mib=5\n"
				 "missing nvmlDeviceGetMemoryInfo_v2\n",
				 &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_int_equal(g->mem_rc, 0);
	assert_int_equal(g->mem_api, 1);
	assert_int_equal(g->mem_reserved_rc, NVML_E_FUNCTION_NOT_FOUND);
	assert_int_equal(g->mem_total, 1000 * MIB);
	assert_int_equal(g->mem_used, 250 * MIB);
	assert_int_equal(g->mem_free, 750 * MIB);
	nvml_info_free(&info);
}

static void test_not_supported_fields_carry_the_code_not_a_value(void **state)
{
	(void)state;
	struct nvml_info info;
	assert_int_equal(collect("gpu 0 ecc=5\nfail nvmlDeviceGetTotalEccErrors 3\nfail nvmlDeviceGetRemappedRows 3\n"
				 "fail nvmlDeviceGetGraphicsRunningProcesses_v3 3\nproc gpu=0 pid=9 mib=9\n",
				 &info),
			 0);
	const struct nvml_gpu *g = &info.gpus[0];
	assert_null(g->error);
	assert_int_equal(g->ecc_rc, NVML_E_NOT_SUPPORTED);
	assert_int_equal(g->ecc_uncorrected_volatile, 0);
	assert_int_equal(g->remap_rc, NVML_E_NOT_SUPPORTED);
	assert_int_equal(g->list_rc[1], NVML_E_NOT_SUPPORTED);
	assert_int_equal(g->list_rc[0], 0);
	assert_int_equal(g->nprocs, 1);
	assert_int_equal(g->util_rc, 0);
	nvml_info_free(&info);
}

static void test_env_GPUWHO_NVML_names_the_library_when_no_path_is_given(void **state)
{
	(void)state;
	struct nvml_info info;
	char *path = fake_lib("fake_nvml.so");
	setenv("GPUWHO_NVML", path, 1);
	scenario("gpu 0\n");
	assert_int_equal(nvml_collect(NULL, &info), 0);
	assert_int_equal(info.ngpus, 1);
	nvml_info_free(&info);
	unsetenv("GPUWHO_NVML");
	free(path);
}

static void test_bus_ids_are_normalised_to_the_sysfs_form(void **state)
{
	(void)state;
	char out[32];
	assert_true(nvml_normalize_bus_id("00000000:65:00.0", out, sizeof out));
	assert_string_equal(out, "0000:65:00.0");
	assert_true(nvml_normalize_bus_id("0000:AB:1F.7", out, sizeof out));
	assert_string_equal(out, "0000:ab:1f.7");
	assert_true(nvml_normalize_bus_id("00010000:01:00.0", out, sizeof out));
	assert_string_equal(out, "10000:01:00.0");
	assert_false(nvml_normalize_bus_id("not a bus", out, sizeof out));
	assert_string_equal(out, "not a bus");
	assert_false(nvml_normalize_bus_id("0000:65:00.0x", out, sizeof out));
}

static void test_error_names_match_nvml(void **state)
{
	(void)state;
	assert_string_equal(nvml_error_name(9), "DRIVER_NOT_LOADED");
	assert_string_equal(nvml_error_name(15), "GPU_IS_LOST");
	assert_string_equal(nvml_error_name(18), "LIB_RM_VERSION_MISMATCH");
	assert_string_equal(nvml_error_name(3), "NOT_SUPPORTED");
	assert_string_equal(nvml_error_name(999), "UNKNOWN");
	assert_string_equal(nvml_error_name(12345), "UNKNOWN_CODE");
	assert_string_equal(nvml_compute_mode_name(3), "exclusive_process");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reads_every_gpu_field_and_process_from_a_current_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_library_is_explained_not_fatal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_library_without_nvml_symbols_is_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_driver_not_loaded_is_explained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_library_and_driver_version_mismatch_is_explained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_permission_at_init_is_explained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_gpu_count_keeps_versions_and_explains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_host_without_gpus_is_a_valid_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_list_growing_between_count_and_fill_is_read_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unavailable_process_memory_is_unknown_not_a_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_in_several_lists_is_one_process_with_each_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_library_uses_v1_symbols_and_16_byte_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v3_answering_function_not_found_falls_back_to_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_each_process_list_version_reads_the_same_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collected_unknown_memory_and_lost_gpu_reach_the_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_32_byte_v3_entries_of_driver_535_are_measured_not_assumed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unrecognised_v3_entry_layout_falls_back_to_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_gpu_is_recorded_while_the_others_are_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_lost_mid_read_stops_that_gpu_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_v2_refused_falls_back_to_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_supported_fields_carry_the_code_not_a_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_GPUWHO_NVML_names_the_library_when_no_path_is_given, setup, teardown),
		cmocka_unit_test(test_bus_ids_are_normalised_to_the_sysfs_form),
		cmocka_unit_test(test_error_names_match_nvml),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
