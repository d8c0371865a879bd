/* util: allocation that cannot fail silently, whole-file reads, small string helpers. */
#ifndef GPUWHO_UTIL_H
#define GPUWHO_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Allocation helpers: on out-of-memory they print one line and abort; they never return NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Appends the malloc'ed string s to the array *v of *n strings (taking ownership of s). */
void strv_push(char ***v, size_t *n, char *s);

/* v[0..n) joined with sep between them, malloc'ed ("" when n is 0). */
char *strv_join(char *const *v, size_t n, const char *sep);

/* Grows *arr (element size elsz) so that index `need - 1` fits; *cap is updated. */
void xgrow(void *arr, size_t *cap, size_t need, size_t elsz);

/* Reads the whole file `path` (relative to dirfd, or absolute) into a NUL-terminated buffer.
 * Retries EINTR. On success returns 0 and stores a malloc'ed buffer in *out and its length
 * (without the NUL) in *len; the caller frees it. On failure returns -errno and *out is NULL.
 * `limit` caps how much is read (0: no cap); a longer file is truncated, not an error. */
int readfile_at(int dirfd, const char *path, char **out, size_t *len, size_t limit);

/* Monotonic clock in nanoseconds. */
uint64_t now_ns(void);

/* True when s starts with prefix. */
bool str_starts(const char *s, const char *prefix);

/* Parses a non-negative decimal integer that fills the whole string; returns false otherwise. */
bool parse_uint(const char *s, unsigned long long *out);

/* Writes bytes as MiB, rounded to the nearest, with thousands separators ("12,345") into buf
 * (size n; 32 is enough) and returns buf. The unit nvidia-smi and ps show. */
const char *fmt_mib_num(char *buf, size_t n, unsigned long long bytes);

/* The same with the unit: "12,345 MiB". */
const char *fmt_mib(char *buf, size_t n, unsigned long long bytes);

#endif
