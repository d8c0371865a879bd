/* ascii: text output for a locale that is not UTF-8 (LANG=C on a minimal node image, a serial
 * console). gpuwho's own texts use a few non-ASCII signs (— × … − ±), which such a terminal shows
 * as mojibake; this stream writes ASCII stand-ins for them and passes every other byte through.
 * It sits under stdout and stderr, so that no renderer has to know. */
#include "render/render.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct {
	const char *utf8, *ascii;
} signs[] = {
	{"\xe2\x80\x94", "-"},    /* — em dash */
	{"\xe2\x80\x93", "-"},    /* – en dash */
	{"\xc3\x97", "x"},        /* × multiplication sign */
	{"\xe2\x80\xa6", "..."},  /* … ellipsis */
	{"\xe2\x88\x92", "-"},    /* − minus sign */
	{"\xc2\xb1", "+/-"},      /* ± */
	{"\xe2\x89\xa4", "<="},   /* ≤ */
	{"\xe2\x89\xa5", ">="},   /* ≥ */
	{"\xe2\x86\x92", "->"},   /* → */
};

struct ascii_out {
	int fd;
	char pending[4];   /* the start of a sign split between two writes */
	size_t npending;
};

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes buf[0..n) with the signs replaced; keeps a trailing partial sign for the next call. */
static ssize_t ascii_write(void *cookie, const char *buf, size_t n)
{
	struct ascii_out *a = cookie;
	char *in = xmalloc(a->npending + n), *out = xmalloc((a->npending + n) * 3 + 1);
	memcpy(in, a->pending, a->npending);
	memcpy(in + a->npending, buf, n);
	size_t len = a->npending + n, o = 0, i = 0;
	a->npending = 0;
	while (i < len) {
		unsigned char c = (unsigned char)in[i];
		if (c < 0x80) {
			out[o++] = in[i++];
			continue;
		}
		size_t k, want = c >= 0xe0 ? 3 : 2;
		if (len - i < want) {   /* maybe a sign cut by the buffer: wait for the rest */
			memcpy(a->pending, in + i, len - i);
			a->npending = len - i;
			break;
		}
		for (k = 0; k < sizeof signs / sizeof *signs; k++)
			if (!memcmp(in + i, signs[k].utf8, strlen(signs[k].utf8)))
				break;
		if (k < sizeof signs / sizeof *signs) {
			size_t l = strlen(signs[k].ascii);
			memcpy(out + o, signs[k].ascii, l);
			o += l;
			i += strlen(signs[k].utf8);
		} else {
			out[o++] = in[i++];
		}
	}
	int r = write_all(a->fd, out, o);
	free(in);
	free(out);
	return r < 0 ? -1 : (ssize_t)n;
}

static int ascii_close(void *cookie)
{
	struct ascii_out *a = cookie;
	int r = a->npending ? write_all(a->fd, a->pending, a->npending) : 0;
	free(a);
	return r;
}

bool render_locale_is_utf8(void)
{
	const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
	for (size_t i = 0; i < 3; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
	}
	return false;   /* none set: the C locale */
}

FILE *render_ascii_stream(int fd, int mode)
{
	struct ascii_out *a = xcalloc(1, sizeof *a);
	a->fd = fd;
	FILE *f = fopencookie(a, "w", (cookie_io_functions_t){.write = ascii_write, .close = ascii_close});
	if (!f) {
		free(a);
		return NULL;
	}
	setvbuf(f, NULL, mode, BUFSIZ);
	return f;
}
