/* escape: make process-controlled strings (comm, cmdline, paths, cgroup names) safe to show. */
#ifndef GPUWHO_ESCAPE_H
#define GPUWHO_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Returns a malloc'ed copy of s[0..len) safe for a terminal: control characters (C0, DEL, C1),
 * Unicode bidi overrides and invalid UTF-8 bytes become visible escapes (\n, \t, \e, \xNN,
 * \u{NNNN}); a backslash becomes "\\". Valid printable UTF-8 is kept as is. */
char *escape_term(const char *s, size_t len);

/* escape_term of a NUL-terminated string; NULL gives "?". */
char *escape_str(const char *s);

/* Returns a malloc'ed copy of s[0..len) that is valid UTF-8, for JSON: each byte that is not part
 * of a valid UTF-8 sequence, and each NUL, becomes the text \xNN. Control characters are kept
 * (the JSON encoder escapes them). */
char *escape_utf8(const char *s, size_t len);

/* True when s is printable text that escape_term shows unchanged: valid UTF-8, no control, C1 or
 * bidi character, no backslash. Only such a word can go into a command printed to be pasted. */
bool escape_is_plain(const char *s);

/* s as one single-quoted shell word ('it'\''s'), malloc'ed. Works as printed only for a plain s
 * (escape_is_plain): other bytes would reach the terminal escaped. */
char *escape_shell(const char *s);

#endif
