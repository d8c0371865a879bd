/* util: allocation that cannot fail silently, whole-file reads, small string helpers. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die_oom(size_t n)
{
	fprintf(stderr, "gpuwho: out of memory (asked for %zu bytes)\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die_oom(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		die_oom(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die_oom(n);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		die_oom(0);
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void strv_push(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof **v);
	(*v)[(*n)++] = s;
}

void xgrow(void *arr, size_t *cap, size_t need, size_t elsz)
{
	void **a = arr;
	if (need <= *cap)
		return;
	size_t n = *cap ? *cap : 8;
	while (n < need)
		n *= 2;
	*a = xrealloc(*a, n * elsz);
	memset((char *)*a + *cap * elsz, 0, (n - *cap) * elsz);
	*cap = n;
}

int readfile_at(int dirfd, const char *path, char **out, size_t *len, size_t limit)
{
	*out = NULL;
	if (len)
		*len = 0;
	int fd;
	do
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		if (limit && n >= limit)
			break;
		if (n == cap) {
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		size_t want = cap - n;
		if (limit && want > limit - n)
			want = limit - n;
		ssize_t r = read(fd, buf + n, want);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool str_starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool parse_uint(const char *s, unsigned long long *out)
{
	if (!s || !*s)
		return false;
	unsigned long long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		unsigned d = (unsigned)(*p - '0');
		if (v > (~0ull - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

const char *fmt_mib_num(char *buf, size_t n, unsigned long long bytes)
{
	const unsigned long long mib = 1024ull * 1024ull;
	unsigned long long m = bytes / mib + (bytes % mib >= mib / 2);
	char digits[32], out[48];
	int len = snprintf(digits, sizeof digits, "%llu", m), o = 0;
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
	snprintf(buf, n, "%s", out);
	return buf;
}

const char *fmt_mib(char *buf, size_t n, unsigned long long bytes)
{
	char d[48];
	snprintf(buf, n, "%s MiB", fmt_mib_num(d, sizeof d, bytes));
	return buf;
}

char *strv_join(char *const *v, size_t n, const char *sep)
{
	size_t len = 1, ls = strlen(sep);
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + (i ? ls : 0);
	char *out = xmalloc(len), *o = out;
	for (size_t i = 0; i < n; i++) {
		if (i) {
			memcpy(o, sep, ls);
			o += ls;
		}
		size_t l = strlen(v[i]);
		memcpy(o, v[i], l);
		o += l;
	}
	*o = '\0';
	return out;
}
