/* nvml_json: what nvml_collect found, as the "nvml" object of gpuwho's JSON (schema: docs/json.md). */
#include "nvml/nvml_json.h"
#include "escape.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value jansson could not allocate is not worth carrying on without. */
static json_t *must(json_t *v)
{
	if (!v) {
		fputs("gpuwho: out of memory building JSON\n", stderr);
		abort();
	}
	return v;
}

static void set(json_t *obj, const char *key, json_t *v)
{
	if (json_object_set_new(obj, key, must(v)) != 0)
		must(NULL);
}

/* A string as JSON: bytes that are not UTF-8 become \xNN text; NULL or "" (when empty_is_null)
 * becomes null. NVML strings come from the driver, the library path and dlerror from the system. */
static json_t *str_or_null(const char *s, bool empty_is_null)
{
	if (!s || (empty_is_null && !*s))
		return json_null();
	char *e = escape_utf8(s, strlen(s));
	json_t *v = must(json_string(e));
	free(e);
	return v;
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
	set(unavailable, field, json_string(nvml_error_name(rc)));
	return false;
}

static json_t *proc_json(const struct nvml_proc *p)
{
	static const char *const names[NVML_NLISTS] = {"compute", "graphics", "mps"};
	json_t *o = must(json_object());
	set(o, "pid", json_integer(p->pid));
	set(o, "used_bytes", p->used_known ? bytes(p->used_bytes) : json_null());
	json_t *lists = must(json_array());
	for (int l = 0; l < NVML_NLISTS; l++)
		if (p->lists & (1u << l))
			json_array_append_new(lists, must(json_string(names[l])));
	set(o, "lists", lists);
	set(o, "gpu_instance", p->instance_known ? json_integer(p->gi) : json_null());
	set(o, "compute_instance", p->instance_known ? json_integer(p->ci) : json_null());
	return o;
}

static json_t *gpu_json(const struct nvml_gpu *g)
{
	static const char *const names[NVML_NLISTS] = {"compute", "graphics", "mps"};
	json_t *o = must(json_object());
	json_t *na = must(json_object());
	set(o, "index", json_integer(g->index));
	set(o, "minor", ok_or_note(na, "minor", g->minor_rc) ? json_integer(g->minor) : json_null());
	set(o, "uuid", ok_or_note(na, "uuid", g->uuid_rc) ? str_or_null(g->uuid, false) : json_null());
	set(o, "name", ok_or_note(na, "name", g->name_rc) ? str_or_null(g->name, false) : json_null());
	set(o, "bus_id", ok_or_note(na, "bus_id", g->bus_id_rc) ? str_or_null(g->bus_id, false) : json_null());

	if (ok_or_note(na, "memory", g->mem_rc)) {
		json_t *m = must(json_object());
		set(m, "total_bytes", bytes(g->mem_total));
		set(m, "used_bytes", bytes(g->mem_used));
		set(m, "free_bytes", bytes(g->mem_free));
		set(m, "reserved_bytes", g->mem_reserved_rc == NVML_OK ? bytes(g->mem_reserved) : json_null());
		set(m, "api", json_integer(g->mem_api));
		set(o, "memory", m);
	} else {
		set(o, "memory", json_null());
	}
	if (g->mem_rc == NVML_OK)
		ok_or_note(na, "memory.reserved_bytes", g->mem_reserved_rc);

	set(o, "persistence_mode",
	    ok_or_note(na, "persistence_mode", g->persistence_rc) ? json_boolean(g->persistence) : json_null());
	set(o, "compute_mode",
	    ok_or_note(na, "compute_mode", g->compute_mode_rc) ? json_string(nvml_compute_mode_name(g->compute_mode))
								: json_null());
	if (ok_or_note(na, "mig", g->mig_rc))
		set(o, "mig", json_pack("{s:b, s:b}", "current", g->mig_current, "pending", g->mig_pending));
	else
		set(o, "mig", json_null());
	set(o, "retired_pages_pending",
	    ok_or_note(na, "retired_pages_pending", g->retired_rc) ? json_boolean(g->retired_pending) : json_null());
	if (ok_or_note(na, "remapped_rows", g->remap_rc))
		set(o, "remapped_rows",
		    json_pack("{s:b, s:b, s:I, s:I}", "pending", g->remap_pending, "failure", g->remap_failure,
			      "correctable", (json_int_t)g->remap_correctable, "uncorrectable",
			      (json_int_t)g->remap_uncorrectable));
	else
		set(o, "remapped_rows", json_null());
	set(o, "ecc_volatile_uncorrected",
	    ok_or_note(na, "ecc_volatile_uncorrected", g->ecc_rc) ? bytes(g->ecc_uncorrected_volatile) : json_null());
	if (ok_or_note(na, "utilization", g->util_rc))
		set(o, "utilization", json_pack("{s:I, s:I}", "gpu_percent", (json_int_t)g->util_gpu, "memory_percent",
						(json_int_t)g->util_mem));
	else
		set(o, "utilization", json_null());

	json_t *procs = must(json_array());
	for (size_t i = 0; i < g->nprocs; i++)
		json_array_append_new(procs, proc_json(&g->procs[i]));
	set(o, "processes", procs);
	json_t *lists = must(json_object());
	for (int l = 0; l < NVML_NLISTS; l++)
		set(lists, names[l],
		    json_pack("{s:s, s:o}", "status", g->list_rc[l] == NVML_OK ? "ok" : nvml_error_name(g->list_rc[l]),
			      "api", g->list_api[l] ? json_integer(g->list_api[l]) : json_null()));
	set(o, "process_lists", lists);
	set(o, "unavailable", na);
	set(o, "error", str_or_null(g->error, false));
	return o;
}

json_t *nvml_info_to_json(const struct nvml_info *info)
{
	json_t *o = must(json_object());
	set(o, "loaded", json_boolean(info->loaded));
	set(o, "error", str_or_null(info->error, false));
	set(o, "error_code", info->error ? json_string(nvml_error_name(info->rc)) : json_null());
	set(o, "library", str_or_null(info->lib_path, true));
	set(o, "driver_version", str_or_null(info->driver_version, true));
	set(o, "nvml_version", str_or_null(info->nvml_version, true));
	set(o, "process_api", info->proc_api ? json_integer(info->proc_api) : json_null());
	set(o, "process_entry_bytes", info->proc_stride ? json_integer(info->proc_stride) : json_null());
	json_t *gpus = must(json_array());
	for (size_t i = 0; i < info->ngpus; i++)
		json_array_append_new(gpus, gpu_json(&info->gpus[i]));
	set(o, "gpus", gpus);
	return o;
}
