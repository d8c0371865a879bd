/* test_nvml_json: the "nvml" JSON object (docs/json.md) built from hand-made nvml_info data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nvml/nvml_json.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024LL * 1024LL)

/* One GPU with every field read, two processes (one with unknown memory). */
static void sample(struct nvml_info *info)
{
	memset(info, 0, sizeof *info);
	info->loaded = true;
	info->lib_path = xstrdup("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
	strcpy(info->driver_version, "580.159.04");
	strcpy(info->nvml_version, "12.580.159.04");
	info->proc_api = 3;
	info->proc_stride = 24;
	info->ngpus = 1;
	info->gpus = xcalloc(1, sizeof *info->gpus);
	struct nvml_gpu *g = &info->gpus[0];
	g->index = 0;
	g->minor = 0;
	strcpy(g->uuid, "GPU-aaaa");
	strcpy(g->name, "NVIDIA H200");
	strcpy(g->bus_id, "0000:18:00.0");
	g->mem_total = 143771 * MIB;
	g->mem_used = 1542 * MIB;
	g->mem_free = g->mem_total - g->mem_used;
	g->mem_reserved = 523 * MIB;
	g->mem_api = 2;
	g->persistence = true;
	g->compute_mode = NVML_COMPUTE_DEFAULT;
	g->remap_rc = NVML_E_NOT_SUPPORTED;
	g->ecc_rc = NVML_E_NOT_SUPPORTED;
	g->util_gpu = 42;
	g->list_api[0] = g->list_api[1] = g->list_api[2] = 3;
	g->list_rc[1] = NVML_E_NOT_SUPPORTED;
	g->list_api[1] = 0;
	g->nprocs = 2;
	g->procs = xcalloc(2, sizeof *g->procs);
	g->procs[0] = (struct nvml_proc){.pid = 1234, .used_bytes = 1542 * MIB, .used_known = true,
					 .lists = NVML_LIST_COMPUTE | NVML_LIST_GRAPHICS};
	g->procs[1] = (struct nvml_proc){.pid = 99999, .lists = NVML_LIST_MPS, .instance_known = true, .gi = 1, .ci = 0};
}

static void test_gpu_fields_processes_and_reasons_are_emitted(void **state)
{
	(void)state;
	struct nvml_info info;
	sample(&info);
	json_t *j = nvml_info_to_json(&info);
	json_error_t err;
	json_t *want = json_loads(
		"{\"loaded\": true, \"error\": null, \"error_code\": null,"
		" \"library\": \"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\","
		" \"driver_version\": \"580.159.04\", \"nvml_version\": \"12.580.159.04\","
		" \"process_api\": 3, \"process_entry_bytes\": 24,"
		" \"gpus\": [{\"index\": 0, \"minor\": 0, \"uuid\": \"GPU-aaaa\", \"name\": \"NVIDIA H200\","
		"  \"bus_id\": \"0000:18:00.0\","
		"  \"memory\": {\"total_bytes\": 150754820096, \"used_bytes\": 1616904192,"
		"              \"free_bytes\": 149137915904, \"reserved_bytes\": 548405248, \"api\": 2},"
		"  \"persistence_mode\": true, \"compute_mode\": \"default\","
		"  \"mig\": {\"current\": false, \"pending\": false, \"devices\": []}, \"retired_pages_pending\": false,"
		"  \"remapped_rows\": null, \"ecc_volatile_uncorrected\": null,"
		"  \"utilization\": {\"gpu_percent\": 42, \"memory_percent\": 0},"
		"  \"processes\": ["
		"    {\"pid\": 1234, \"used_bytes\": 1616904192, \"lists\": [\"compute\", \"graphics\"],"
		"     \"gpu_instance\": null, \"compute_instance\": null},"
		"    {\"pid\": 99999, \"used_bytes\": null, \"lists\": [\"mps\"], \"gpu_instance\": 1, \"compute_instance\": 0}],"
		"  \"process_lists\": {\"compute\": {\"status\": \"ok\", \"api\": 3},"
		"                      \"graphics\": {\"status\": \"NOT_SUPPORTED\", \"api\": null},"
		"                      \"mps\": {\"status\": \"ok\", \"api\": 3}},"
		"  \"unavailable\": {\"remapped_rows\": \"NOT_SUPPORTED\", \"ecc_volatile_uncorrected\": \"NOT_SUPPORTED\"},"
		"  \"error\": null}]}",
		0, &err);
	assert_non_null(want);
	if (!json_equal(j, want)) {
		char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
		print_error("got: %s\n", s);
		free(s);
		fail();
	}
	json_decref(want);
	json_decref(j);
	nvml_info_free(&info);
}

static void test_failed_load_is_an_error_with_its_code_and_no_gpus(void **state)
{
	(void)state;
	struct nvml_info info = {0};
	info.rc = NVML_E_DRIVER_NOT_LOADED;
	info.error = xstrdup("NVIDIA driver not loaded: nvmlInit_v2 failed with DRIVER_NOT_LOADED (9); is the nvidia "
			     "kernel module loaded?");
	info.lib_path = xstrdup("libnvidia-ml.so.1");
	json_t *j = nvml_info_to_json(&info);
	assert_true(json_is_false(json_object_get(j, "loaded")));
	assert_string_equal(json_string_value(json_object_get(j, "error_code")), "DRIVER_NOT_LOADED");
	assert_string_equal(json_string_value(json_object_get(j, "error")), info.error);
	assert_true(json_is_null(json_object_get(j, "driver_version")));
	assert_true(json_is_null(json_object_get(j, "process_api")));
	assert_int_equal(json_array_size(json_object_get(j, "gpus")), 0);
	json_decref(j);
	nvml_info_free(&info);
}

static void test_lost_gpu_has_nulls_reasons_and_its_error(void **state)
{
	(void)state;
	struct nvml_info info = {.loaded = true, .ngpus = 1};
	info.gpus = xcalloc(1, sizeof *info.gpus);
	struct nvml_gpu *g = &info.gpus[0];
	g->index = 1;
	g->handle_rc = NVML_E_GPU_IS_LOST;
	g->minor_rc = g->uuid_rc = g->name_rc = g->bus_id_rc = g->mem_rc = g->mem_reserved_rc = NVML_E_NOT_READ;
	g->persistence_rc = g->compute_mode_rc = g->mig_rc = g->retired_rc = g->remap_rc = NVML_E_NOT_READ;
	g->ecc_rc = g->util_rc = NVML_E_NOT_READ;
	g->list_rc[0] = g->list_rc[1] = g->list_rc[2] = NVML_E_NOT_READ;
	g->error = xstrdup("GPU 1: nvmlDeviceGetHandleByIndex_v2 failed with GPU_IS_LOST (15)");
	json_t *j = nvml_info_to_json(&info);
	json_t *gj = json_array_get(json_object_get(j, "gpus"), 0);
	assert_true(json_is_null(json_object_get(gj, "uuid")));
	assert_true(json_is_null(json_object_get(gj, "memory")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(gj, "unavailable"), "memory")), "NOT_READ");
	assert_string_equal(json_string_value(json_object_get(gj, "error")), g->error);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(json_object_get(gj, "process_lists"), "mps"), "status")),
		"NOT_READ");
	json_decref(j);
	nvml_info_free(&info);
}

static void test_non_utf8_strings_are_escaped_not_dropped(void **state)
{
	(void)state;
	struct nvml_info info;
	sample(&info);
	strcpy(info.gpus[0].name, "NVIDIA \xff\xfe");
	free(info.lib_path);
	info.lib_path = xstrdup("/opt/\xc3(/libnvidia-ml.so.1");
	json_t *j = nvml_info_to_json(&info);
	assert_string_equal(json_string_value(json_object_get(j, "library")), "/opt/\\xc3(/libnvidia-ml.so.1");
	json_t *gj = json_array_get(json_object_get(j, "gpus"), 0);
	const char *name = json_string_value(json_object_get(gj, "name"));
	assert_non_null(name);
	assert_non_null(strstr(name, "NVIDIA \\x"));
	json_decref(j);
	nvml_info_free(&info);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_fields_processes_and_reasons_are_emitted),
		cmocka_unit_test(test_failed_load_is_an_error_with_its_code_and_no_gpus),
		cmocka_unit_test(test_lost_gpu_has_nulls_reasons_and_its_error),
		cmocka_unit_test(test_non_utf8_strings_are_escaped_not_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
