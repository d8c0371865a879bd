/* json: the few jansson helpers every JSON writer shares (snapshot, nvml_json, the renderers).
 * Allocation failure aborts here, once, so writers need no error paths. */
#ifndef GPUWHO_JSON_H
#define GPUWHO_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* Returns v; aborts with a message when v is NULL (jansson could not allocate). */
json_t *json_must(json_t *v);

/* Sets o[key] = v, stealing the reference (json_object_set_new); aborts on failure. */
void json_put(json_t *o, const char *key, json_t *v);

/* Appends v to a, stealing the reference (json_array_append_new); aborts on failure. */
void json_push(json_t *a, json_t *v);

/* A string for display from raw bytes (process-controlled, driver-given): bytes that are not
 * UTF-8 become \xNN text (escape_utf8). Never NULL. Lossy: the snapshot writer keeps raw bytes
 * its own way (snapshot/write.c). */
json_t *json_text(const char *s, size_t len);

/* json_text of a C string; NULL becomes null. */
json_t *json_str_or_null(const char *s);

/* An array of json_str_or_null(v[i]). */
json_t *json_strs(char *const *v, size_t n);

/* An unsigned 64-bit number: an integer, or a decimal string above json_int_t's range. */
json_t *json_u64(unsigned long long v);

/* A device number as "major:minor". */
json_t *json_devnum(dev_t d);

/* An array of PIDs. */
json_t *json_pids(const int *v, size_t n);

#endif
