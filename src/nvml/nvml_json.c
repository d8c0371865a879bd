/* nvml_json: what nvml_collect found, as the "nvml" object of gpuwho's JSON (schema: docs/json.md). */
#include "nvml/nvml_json.h"
#include "json.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string as JSON: bytes that are not UTF-8 become \xNN text; NULL or "" (when empty_is_null)
 * becomes null. NVML strings come from the driver, the library path and dlerror from the system. */
static json_t *str_or_null(const char *s, bool empty_is_null)
{
	if (!s || (empty_is_null && !*s))
		return json_null();
	return json_text(s, strlen(s));
}

static json_t *bytes(unsigned long long n)
{
	return n > (unsigned long long)LLONG_MAX ? json_null() : json_integer((json_int_t)n);
}

/* Records in `unavailable` why a field has no value, when rc says it has none. */
static bool ok_or_note(json_t *unavailable, const char *field, int rc)
{
	if (rc == NVML_OK)
		return true;
	json_put(unavailable, field, json_string(nvml_error_name(rc)));
	return false;
}

static json_t *proc_json(const struct nvml_proc *p)
{
	static const char *const names[NVML_NLISTS] = {"compute", "graphics", "mps"};
	json_t *o = json_must(json_object());
	json_put(o, "pid", json_integer(p->pid));
	json_put(o, "used_bytes", p->used_known ? bytes(p->used_bytes) : json_null());
	json_t *lists = json_must(json_array());
	for (int l = 0; l < NVML_NLISTS; l++)
		if (p->lists & (1u << l))
			json_array_append_new(lists, json_must(json_string(names[l])));
	json_put(o, "lists", lists);
	json_put(o, "gpu_instance", p->instance_known ? json_integer(p->gi) : json_null());
	json_put(o, "compute_instance", p->instance_known ? json_integer(p->ci) : json_null());
	return o;
}

static json_t *gpu_json(const struct nvml_gpu *g)
{
	static const char *const names[NVML_NLISTS] = {"compute", "graphics", "mps"};
	json_t *o = json_must(json_object());
	json_t *na = json_must(json_object());
	json_put(o, "index", json_integer(g->index));
	json_put(o, "minor", ok_or_note(na, "minor", g->minor_rc) ? json_integer(g->minor) : json_null());
	json_put(o, "uuid", ok_or_note(na, "uuid", g->uuid_rc) ? str_or_null(g->uuid, false) : json_null());
	json_put(o, "name", ok_or_note(na, "name", g->name_rc) ? str_or_null(g->name, false) : json_null());
	json_put(o, "bus_id", ok_or_note(na, "bus_id", g->bus_id_rc) ? str_or_null(g->bus_id, false) : json_null());

	if (ok_or_note(na, "memory", g->mem_rc)) {
		json_t *m = json_must(json_object());
		json_put(m, "total_bytes", bytes(g->mem_total));
		json_put(m, "used_bytes", bytes(g->mem_used));
		json_put(m, "free_bytes", bytes(g->mem_free));
		json_put(m, "reserved_bytes", g->mem_reserved_rc == NVML_OK ? bytes(g->mem_reserved) : json_null());
		json_put(m, "api", json_integer(g->mem_api));
		json_put(o, "memory", m);
	} else {
		json_put(o, "memory", json_null());
	}
	if (g->mem_rc == NVML_OK)
		ok_or_note(na, "memory.reserved_bytes", g->mem_reserved_rc);

	json_put(o, "persistence_mode",
	    ok_or_note(na, "persistence_mode", g->persistence_rc) ? json_boolean(g->persistence) : json_null());
	json_put(o, "compute_mode",
	    ok_or_note(na, "compute_mode", g->compute_mode_rc) ? json_string(nvml_compute_mode_name(g->compute_mode))
								: json_null());
	if (ok_or_note(na, "mig", g->mig_rc)) {
		json_t *devs = json_array();
		for (size_t i = 0; i < g->nmigs; i++)
			json_array_append_new(devs, json_pack("{s:o, s:I, s:I}", "uuid", json_text(g->migs[i].uuid, strlen(g->migs[i].uuid)),
							      "gi", (json_int_t)g->migs[i].gi, "ci", (json_int_t)g->migs[i].ci));
		json_put(o, "mig", json_pack("{s:b, s:b, s:o}", "current", g->mig_current, "pending", g->mig_pending,
					     "devices", devs));
	}
	else
		json_put(o, "mig", json_null());
	json_put(o, "retired_pages_pending",
	    ok_or_note(na, "retired_pages_pending", g->retired_rc) ? json_boolean(g->retired_pending) : json_null());
	if (ok_or_note(na, "remapped_rows", g->remap_rc))
		json_put(o, "remapped_rows",
		    json_pack("{s:b, s:b, s:I, s:I}", "pending", g->remap_pending, "failure", g->remap_failure,
			      "correctable", (json_int_t)g->remap_correctable, "uncorrectable",
			      (json_int_t)g->remap_uncorrectable));
	else
		json_put(o, "remapped_rows", json_null());
	json_put(o, "ecc_volatile_uncorrected",
	    ok_or_note(na, "ecc_volatile_uncorrected", g->ecc_rc) ? bytes(g->ecc_uncorrected_volatile) : json_null());
	if (ok_or_note(na, "utilization", g->util_rc))
		json_put(o, "utilization", json_pack("{s:I, s:I}", "gpu_percent", (json_int_t)g->util_gpu, "memory_percent",
						(json_int_t)g->util_mem));
	else
		json_put(o, "utilization", json_null());

	json_t *procs = json_must(json_array());
	for (size_t i = 0; i < g->nprocs; i++)
		json_array_append_new(procs, proc_json(&g->procs[i]));
	json_put(o, "processes", procs);
	json_t *lists = json_must(json_object());
	for (int l = 0; l < NVML_NLISTS; l++)
		json_put(lists, names[l],
		    json_pack("{s:s, s:o}", "status", g->list_rc[l] == NVML_OK ? "ok" : nvml_error_name(g->list_rc[l]),
			      "api", g->list_api[l] ? json_integer(g->list_api[l]) : json_null()));
	json_put(o, "process_lists", lists);
	json_put(o, "unavailable", na);
	json_put(o, "error", str_or_null(g->error, false));
	return o;
}

json_t *nvml_info_to_json(const struct nvml_info *info)
{
	json_t *o = json_must(json_object());
	json_put(o, "loaded", json_boolean(info->loaded));
	json_put(o, "error", str_or_null(info->error, false));
	json_put(o, "error_code", info->error ? json_string(nvml_error_name(info->rc)) : json_null());
	json_put(o, "library", str_or_null(info->lib_path, true));
	json_put(o, "driver_version", str_or_null(info->driver_version, true));
	json_put(o, "nvml_version", str_or_null(info->nvml_version, true));
	json_put(o, "process_api", info->proc_api ? json_integer(info->proc_api) : json_null());
	json_put(o, "process_entry_bytes", info->proc_stride ? json_integer(info->proc_stride) : json_null());
	json_t *gpus = json_must(json_array());
	for (size_t i = 0; i < info->ngpus; i++)
		json_array_append_new(gpus, gpu_json(&info->gpus[i]));
	json_put(o, "gpus", gpus);
	return o;
}
