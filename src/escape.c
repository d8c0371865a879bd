/* escape: make process-controlled strings (comm, cmdline, paths, cgroup names) safe to show. */
#include "escape.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Decodes one UTF-8 sequence at s (n bytes left). Returns its length and stores the code point,
 * or returns 0 when the bytes there are not a valid, shortest-form sequence. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t len;
	uint32_t c, min;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2; c = s[0] & 0x1f; min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3; c = s[0] & 0x0f; min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4; c = s[0] & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static void put(char **out, size_t *n, size_t *cap, const char *s, size_t len)
{
	xgrow(out, cap, *n + len + 1, 1);
	memcpy(*out + *n, s, len);
	*n += len;
}

static int is_bidi_or_c1(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f;
}

char *escape_term(const char *s, size_t len)
{
	char *out = NULL;
	size_t n = 0, cap = 0;
	char tmp[16];
	const unsigned char *u = (const unsigned char *)s;
	xgrow(&out, &cap, len + 1, 1);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t l = utf8_decode(u + i, len - i, &cp);
		if (l == 0) {
			snprintf(tmp, sizeof tmp, "\\x%02x", u[i]);
			put(&out, &n, &cap, tmp, 4);
			i++;
			continue;
		}
		if (cp == '\\')
			put(&out, &n, &cap, "\\\\", 2);
		else if (cp == '\n')
			put(&out, &n, &cap, "\\n", 2);
		else if (cp == '\t')
			put(&out, &n, &cap, "\\t", 2);
		else if (cp == '\r')
			put(&out, &n, &cap, "\\r", 2);
		else if (cp == 0x1b)
			put(&out, &n, &cap, "\\e", 2);
		else if (cp < 0x20 || cp == 0x7f) {
			snprintf(tmp, sizeof tmp, "\\x%02x", (unsigned)cp);
			put(&out, &n, &cap, tmp, 4);
		} else if (is_bidi_or_c1(cp)) {
			int k = snprintf(tmp, sizeof tmp, "\\u{%04x}", (unsigned)cp);
			put(&out, &n, &cap, tmp, (size_t)k);
		} else {
			put(&out, &n, &cap, s + i, l);
		}
		i += l;
	}
	out[n] = '\0';
	return out;
}

char *escape_str(const char *s)
{
	return s ? escape_term(s, strlen(s)) : xstrdup("?");
}

char *escape_utf8(const char *s, size_t len)
{
	char *out = NULL;
	size_t n = 0, cap = 0;
	char tmp[8];
	const unsigned char *u = (const unsigned char *)s;
	xgrow(&out, &cap, len + 1, 1);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t l = utf8_decode(u + i, len - i, &cp);
		if (l == 0 || cp == 0) {
			snprintf(tmp, sizeof tmp, "\\x%02x", u[i]);
			put(&out, &n, &cap, tmp, 4);
			i++;
			continue;
		}
		put(&out, &n, &cap, s + i, l);
		i += l;
	}
	out[n] = '\0';
	return out;
}

bool escape_is_plain(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t l = utf8_decode(u + i, len - i, &cp);
		if (l == 0 || cp < 0x20 || cp == 0x7f || is_bidi_or_c1(cp) || cp == '\\')
			return false;
		i += l;
	}
	return true;
}

char *escape_shell(const char *s)
{
	size_t n = 3;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *q = xmalloc(n), *o = q;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}
