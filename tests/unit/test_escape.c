/* Unit tests for escape_term (terminal-safe text) and escape_utf8 (valid UTF-8 for JSON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "escape.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Escapes a string literal (which may contain NUL bytes) and compares with want. */
#define TERM(lit, want) check(escape_term, lit, sizeof lit - 1, want)
#define UTF8(lit, want) check(escape_utf8, lit, sizeof lit - 1, want)

static void check(char *(*fn)(const char *, size_t), const char *in, size_t len, const char *want)
{
	char *got = fn(in, len);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* True when s is valid UTF-8 with no NUL (the property escape_utf8 promises). */
static bool valid_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	while (*u) {
		int n = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 : (*u & 0xf8) == 0xf0 ? 4 : 0;
		if (!n || (n == 2 && *u < 0xc2) || (n == 4 && *u > 0xf4))
			return false;
		for (int i = 1; i < n; i++)
			if ((u[i] & 0xc0) != 0x80)
				return false;
		if (n == 3 && ((*u == 0xe0 && u[1] < 0xa0) || (*u == 0xed && u[1] >= 0xa0)))
			return false;   /* overlong, surrogate */
		if (n == 4 && ((*u == 0xf0 && u[1] < 0x90) || (*u == 0xf4 && u[1] >= 0x90)))
			return false;   /* overlong, above U+10FFFF */
		u += n;
	}
	return true;
}

static void term_keeps_plain_ascii_and_empty(void **state)
{
	(void)state;
	TERM("", "");
	TERM("python3 -m sglang.launch_server --tp 8", "python3 -m sglang.launch_server --tp 8");
	TERM("~!@#$%^&*()_+{}|:\"<>?`-=[];',./", "~!@#$%^&*()_+{}|:\"<>?`-=[];',./");
}

static void term_names_c0_controls_and_del(void **state)
{
	(void)state;
	TERM("a\nb", "a\\nb");
	TERM("a\tb", "a\\tb");
	TERM("a\rb", "a\\rb");
	TERM("\x01\x07\x08\x1f", "\\x01\\x07\\x08\\x1f");
	TERM("x\x7fy", "x\\x7fy");
}

static void term_nul_bytes_are_escaped_not_truncating(void **state)
{
	(void)state;
	TERM("a\0b", "a\\x00b");
	TERM("\0", "\\x00");
}

static void term_escape_sequences_cannot_reach_the_terminal(void **state)
{
	(void)state;
	/* A comm that clears the screen and sets the window title. */
	TERM("\x1b[2J\x1b]0;pwned\x07", "\\e[2J\\e]0;pwned\\x07");
	char *s = escape_term("\x1b[31mred", 8);
	assert_null(strchr(s, 0x1b));
	free(s);
}

static void term_c1_controls_as_utf8_become_code_point_escapes(void **state)
{
	(void)state;
	/* U+0085 NEL and U+009B CSI, which some terminals act on. */
	TERM("a\xc2\x85z", "a\\u{0085}z");
	TERM("\xc2\x9b" "2J", "\\u{009b}2J");
	TERM("\xc2\x80\xc2\x9f", "\\u{0080}\\u{009f}");
	/* U+00A0 is the first code point after C1: kept. */
	TERM("\xc2\xa0", "\xc2\xa0");
}

static void term_raw_c1_bytes_are_invalid_utf8_and_hex_escaped(void **state)
{
	(void)state;
	TERM("\x9b" "2J", "\\x9b2J");
	TERM("\x85", "\\x85");
}

static void term_bidi_overrides_and_marks_become_code_point_escapes(void **state)
{
	(void)state;
	/* U+202E RIGHT-TO-LEFT OVERRIDE: "evil\u202Egnp.exe" shows as "evilexe.png". */
	TERM("evil\xe2\x80\xae" "gnp.exe", "evil\\u{202e}gnp.exe");
	TERM("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "\\u{202a}\\u{202b}\\u{202c}\\u{202d}");
	TERM("\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9", "\\u{2066}\\u{2067}\\u{2068}\\u{2069}");
	TERM("\xe2\x80\x8e\xe2\x80\x8f", "\\u{200e}\\u{200f}");
	/* Neighbours that are not bidi controls are kept: U+2030 (per mille), U+200D (zero-width joiner). */
	TERM("\xe2\x80\xb0", "\xe2\x80\xb0");
	TERM("\xe2\x80\x8d", "\xe2\x80\x8d");
}

static void term_keeps_valid_multibyte_text(void **state)
{
	(void)state;
	TERM("caf\xc3\xa9", "caf\xc3\xa9");                             /* é, 2 bytes */
	TERM("\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac");   /* 日本, 3 bytes */
	TERM("\xf0\x9f\x9a\x80", "\xf0\x9f\x9a\x80");                   /* U+1F680, 4 bytes */
	TERM("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");                   /* U+10FFFF, the last */
	TERM("\xc3\x97 \xe2\x80\x94 x", "\xc3\x97 \xe2\x80\x94 x");
}

static void term_invalid_utf8_bytes_are_hex_escaped_one_by_one(void **state)
{
	(void)state;
	TERM("\xff", "\\xff");
	TERM("\xfe\xff", "\\xfe\\xff");
	TERM("a\x80z", "a\\x80z");                  /* lone continuation byte */
	TERM("\xc3", "\\xc3");                      /* truncated at the end */
	TERM("\xe6\x97", "\\xe6\\x97");             /* truncated 3-byte sequence */
	TERM("\xe6\x97" "A", "\\xe6\\x97A");        /* interrupted by ASCII: the ASCII survives */
	TERM("\xf0\x9f\x9a", "\\xf0\\x9f\\x9a");
	TERM("\xf8\x88\x80\x80\x80", "\\xf8\\x88\\x80\\x80\\x80");   /* 5-byte form */
	TERM("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");            /* U+110000, beyond Unicode */
}

static void term_overlong_encodings_are_rejected(void **state)
{
	(void)state;
	TERM("\xc0\xaf", "\\xc0\\xaf");                 /* overlong '/' */
	TERM("\xc1\xbf", "\\xc1\\xbf");
	TERM("\xc0\x80", "\\xc0\\x80");                 /* overlong NUL (modified UTF-8) */
	TERM("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	TERM("\xe0\x9f\xbf", "\\xe0\\x9f\\xbf");        /* U+07FF in 3 bytes */
	TERM("\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf");
	TERM("\xf0\x8f\xbf\xbf", "\\xf0\\x8f\\xbf\\xbf"); /* U+FFFF in 4 bytes */
	/* An overlong ESC must not turn into a real one either. */
	TERM("\xc0\x9b", "\\xc0\\x9b");
}

static void term_surrogates_are_rejected(void **state)
{
	(void)state;
	TERM("\xed\xa0\x80", "\\xed\\xa0\\x80");   /* U+D800 */
	TERM("\xed\xbf\xbf", "\\xed\\xbf\\xbf");   /* U+DFFF */
	TERM("\xed\x9f\xbf", "\xed\x9f\xbf");      /* U+D7FF, just below: kept */
	TERM("\xee\x80\x80", "\xee\x80\x80");      /* U+E000, just above: kept */
}

static void term_backslash_is_doubled_so_escapes_are_unambiguous(void **state)
{
	(void)state;
	TERM("\\", "\\\\");
	TERM("C:\\x41", "C:\\\\x41");
	/* A literal "\n" in a name and a real newline read differently. */
	TERM("a\\nb", "a\\\\nb");
}

static void utf8_keeps_valid_text_and_controls(void **state)
{
	(void)state;
	UTF8("", "");
	UTF8("caf\xc3\xa9 \xf0\x9f\x9a\x80", "caf\xc3\xa9 \xf0\x9f\x9a\x80");
	/* Controls stay: the JSON encoder escapes them. */
	UTF8("a\nb\t\x1b[0m\x7f", "a\nb\t\x1b[0m\x7f");
	UTF8("\xe2\x80\xae", "\xe2\x80\xae");
	UTF8("back\\slash", "back\\slash");
}

static void utf8_nul_bytes_become_text(void **state)
{
	(void)state;
	UTF8("a\0b\0", "a\\x00b\\x00");
}

static void utf8_invalid_bytes_become_hex_text(void **state)
{
	(void)state;
	UTF8("\xff" "a\x80", "\\xffa\\x80");
	UTF8("\xc0\xaf", "\\xc0\\xaf");
	UTF8("\xed\xa0\x80", "\\xed\\xa0\\x80");
	UTF8("\xe6\x97", "\\xe6\\x97");
	UTF8("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
}

/* Every 1- and 2-byte input, and a spread of 3- and 4-byte ones, comes out valid UTF-8 from
 * escape_utf8, and free of control bytes from escape_term. */
static void any_input_gives_valid_output(void **state)
{
	(void)state;
	unsigned char buf[4];
	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			buf[0] = (unsigned char)a;
			buf[1] = (unsigned char)b;
			for (size_t len = 1; len <= 2; len++) {
				char *u = escape_utf8((char *)buf, len);
				if (!valid_utf8(u))
					fail_msg("escape_utf8(%02x %02x, %zu) invalid", a, b, len);
				free(u);
				char *t = escape_term((char *)buf, len);
				if (!valid_utf8(t))
					fail_msg("escape_term(%02x %02x, %zu) invalid", a, b, len);
				for (const unsigned char *q = (unsigned char *)t; *q; q++)
					if (*q < 0x20 || *q == 0x7f)
						fail_msg("escape_term(%02x %02x) kept control %02x", a, b, *q);
				free(t);
			}
		}
	}
	unsigned seed = 12345;
	for (int i = 0; i < 200000; i++) {
		for (int j = 0; j < 4; j++) {
			seed = seed * 1103515245u + 12345u;
			buf[j] = (unsigned char)(seed >> 16);
		}
		char *u = escape_utf8((char *)buf, 4);
		if (!valid_utf8(u))
			fail_msg("escape_utf8(%02x %02x %02x %02x) invalid", buf[0], buf[1], buf[2], buf[3]);
		free(u);
		char *t = escape_term((char *)buf, 4);
		if (!valid_utf8(t))
			fail_msg("escape_term(%02x %02x %02x %02x) invalid", buf[0], buf[1], buf[2], buf[3]);
		free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(term_keeps_plain_ascii_and_empty),
		cmocka_unit_test(term_names_c0_controls_and_del),
		cmocka_unit_test(term_nul_bytes_are_escaped_not_truncating),
		cmocka_unit_test(term_escape_sequences_cannot_reach_the_terminal),
		cmocka_unit_test(term_c1_controls_as_utf8_become_code_point_escapes),
		cmocka_unit_test(term_raw_c1_bytes_are_invalid_utf8_and_hex_escaped),
		cmocka_unit_test(term_bidi_overrides_and_marks_become_code_point_escapes),
		cmocka_unit_test(term_keeps_valid_multibyte_text),
		cmocka_unit_test(term_invalid_utf8_bytes_are_hex_escaped_one_by_one),
		cmocka_unit_test(term_overlong_encodings_are_rejected),
		cmocka_unit_test(term_surrogates_are_rejected),
		cmocka_unit_test(term_backslash_is_doubled_so_escapes_are_unambiguous),
		cmocka_unit_test(utf8_keeps_valid_text_and_controls),
		cmocka_unit_test(utf8_nul_bytes_become_text),
		cmocka_unit_test(utf8_invalid_bytes_become_hex_text),
		cmocka_unit_test(any_input_gives_valid_output),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
