/* json: the jansson helpers every JSON writer shares. */
#include "json.h"
#include "escape.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

json_t *json_must(json_t *v)
{
	if (!v) {
		fputs("gpuwho: out of memory building JSON\n", stderr);
		abort();
	}
	return v;
}

void json_put(json_t *o, const char *key, json_t *v)
{
	if (json_object_set_new(o, key, json_must(v)) != 0)
		json_must(NULL);
}

void json_push(json_t *a, json_t *v)
{
	if (json_array_append_new(a, json_must(v)) != 0)
		json_must(NULL);
}

json_t *json_text(const char *s, size_t len)
{
	char *u = escape_utf8(s ? s : "", s ? len : 0);
	json_t *j = json_must(json_string(u));
	free(u);
	return j;
}

json_t *json_str_or_null(const char *s)
{
	return s ? json_text(s, strlen(s)) : json_null();
}

json_t *json_strs(char *const *v, size_t n)
{
	json_t *a = json_must(json_array());
	for (size_t i = 0; i < n; i++)
		json_push(a, json_str_or_null(v[i]));
	return a;
}

json_t *json_u64(unsigned long long v)
{
	if (v <= (unsigned long long)LLONG_MAX)
		return json_must(json_integer((json_int_t)v));
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", v);
	return json_must(json_string(buf));
}

json_t *json_devnum(dev_t d)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%u:%u", major(d), minor(d));
	return json_must(json_string(buf));
}

json_t *json_pids(const int *v, size_t n)
{
	json_t *a = json_must(json_array());
	for (size_t i = 0; i < n; i++)
		json_push(a, json_integer(v[i]));
	return a;
}
