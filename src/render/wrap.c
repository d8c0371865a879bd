/* render/wrap: the one text wrapper every report uses: word wrap to the terminal's width, a hanging
 * indent, and escaping of process-controlled bytes on the way. */
#include "escape.h"
#include "render/render.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Terminal columns taken by p[0..n): one per UTF-8 character (escape_term leaves only printable text). */
static int columns(const char *p, size_t n)
{
	int c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xC0) != 0x80;
	return c;
}

void render_wrap(FILE *f, const char *text, int width, const char *indent, int col0)
{
	int used = col0;
	const char *p = text;
	while (*p) {
		const char *sp = strchr(p, ' ');
		/* A number and its unit stay on one line: "96,413 MiB". */
		while (sp && (str_starts(sp + 1, "MiB") || str_starts(sp + 1, "GiB")))
			sp = strchr(sp + 1, ' ');
		/* So does a `command` between backticks: it must copy and paste as printed. */
		const char *tick = memchr(p, '`', sp ? (size_t)(sp - p) : strlen(p));
		if (tick) {
			const char *close = strchr(tick + 1, '`');
			if (close && sp && close > sp)
				sp = strchr(close, ' ');
		}
		int wl = sp ? (int)(sp - p) : (int)strlen(p);
		int wc = columns(p, (size_t)wl);
		if (width > 0 && used > (int)strlen(indent) && used + 1 + wc > width) {
			used = fprintf(f, "\n%s", indent) - 1;
		} else if (p != text) {
			fputc(' ', f);
			used++;
		}
		fwrite(p, 1, (size_t)wl, f);
		used += wc;
		p += wl;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

void render_put(FILE *f, const char *raw, const struct render_opts *o, const char *indent, int col0)
{
	char *e = escape_term(raw, strlen(raw));
	render_wrap(f, e, o->width, indent, col0);
	free(e);
}
