/* Unit tests for cli_parse: common and own options, errors, permutation, "--". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_LIMIT = 0x2000 };

static const struct option own[] = {
	{"pid", required_argument, NULL, 'p'},
	{"verbose", no_argument, NULL, 'v'},
	{"limit", required_argument, NULL, OPT_LIMIT},
	{0, 0, 0, 0},
};

/* What the own-option callback saw. */
struct seen {
	const char *pid;
	int verbose;
	const char *limit;
	int refuse;   /* 1: the callback refuses every option */
};

static int on_opt(int opt, const char *arg, void *ctx)
{
	struct seen *s = ctx;
	if (s->refuse)
		return -1;
	switch (opt) {
	case 'p': s->pid = arg; return 0;
	case 'v': s->verbose++; return 0;
	case OPT_LIMIT: s->limit = arg; return 0;
	}
	return -1;
}

/* Output captured from one cli_parse call. */
struct run {
	int r;
	struct cli c;
	struct seen s;
	char out[4096], err[4096];
};

static void capture_start(int fd, int *saved, FILE **f)
{
	fflush(fd == 1 ? stdout : stderr);
	*f = tmpfile();
	assert_non_null(*f);
	*saved = dup(fd);
	dup2(fileno(*f), fd);
}

static void capture_end(int fd, int saved, FILE *f, char *buf, size_t n)
{
	fflush(fd == 1 ? stdout : stderr);
	dup2(saved, fd);
	close(saved);
	rewind(f);
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	fclose(f);
}

static void parse(struct run *x, int argc, char **argv)
{
	memset(x, 0, sizeof *x);
	x->c.cmd = "test";
	int so, se;
	FILE *fo, *fe;
	capture_start(1, &so, &fo);
	capture_start(2, &se, &fe);
	x->r = cli_parse(&x->c, argc, argv, "p:v", own, on_opt, &x->s, "usage: gpuwho test [-v] [-p PID]\n");
	capture_end(2, se, fe, x->err, sizeof x->err);
	capture_end(1, so, fo, x->out, sizeof x->out);
}

#define PARSE(x, ...)                                                           \
	char *argv_[] = {"test", __VA_ARGS__, NULL};                             \
	parse((x), (int)(sizeof argv_ / sizeof argv_[0]) - 1, argv_)

static void no_arguments_returns_index_one(void **state)
{
	(void)state;
	struct run x;
	char *argv[] = {"test", NULL};
	parse(&x, 1, argv);
	assert_int_equal(x.r, 1);
	assert_false(x.c.json);
	assert_false(x.c.no_color);
	assert_null(x.c.from);
	assert_string_equal(x.err, "");
}

static void common_options_set_their_fields(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "--json", "--no-color", "--from", "snap.json", "--nvml=/lib/libnvidia-ml.so.1", "--no-nvml");
	assert_int_equal(x.r, 7);
	assert_true(x.c.json);
	assert_true(x.c.no_color);
	assert_true(x.c.no_nvml);
	assert_string_equal(x.c.from, "snap.json");
	assert_string_equal(x.c.nvml_path, "/lib/libnvidia-ml.so.1");
	assert_null(x.s.pid);
	assert_string_equal(x.err, "");
}

static void no_colour_spelling_is_accepted(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "--no-colour");
	assert_int_equal(x.r, 2);
	assert_true(x.c.no_color);
}

static void own_options_reach_the_callback_short_long_and_grouped(void **state)
{
	(void)state;
	struct run x;
	{
		PARSE(&x, "-p", "42", "--verbose", "--limit", "10", "-vv");
		assert_int_equal(x.r, 7);
		assert_string_equal(x.s.pid, "42");
		assert_string_equal(x.s.limit, "10");
		assert_int_equal(x.s.verbose, 3);
	}
	{
		PARSE(&x, "-p7", "--pid=8");
		assert_string_equal(x.s.pid, "8");
	}
	{
		PARSE(&x, "-vp9");
		assert_int_equal(x.s.verbose, 1);
		assert_string_equal(x.s.pid, "9");
	}
}

static void options_after_operands_are_permuted_to_the_front(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "/dev/nvidia0", "--json", "/dev/nvidia1", "-v");
	assert_int_equal(x.r, 3);
	assert_true(x.c.json);
	assert_int_equal(x.s.verbose, 1);
	assert_string_equal(argv_[3], "/dev/nvidia0");
	assert_string_equal(argv_[4], "/dev/nvidia1");
}

static void double_dash_ends_options_and_leaves_the_rest_as_operands(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "--json", "--", "python3", "-m", "sglang.launch_server", "--tp", "8", "--json");
	assert_int_equal(x.r, 3);
	assert_true(x.c.json);
	assert_string_equal(argv_[3], "python3");
	assert_string_equal(argv_[4], "-m");
	assert_string_equal(argv_[8], "--json");
	assert_string_equal(x.err, "");
}

static void operands_before_double_dash_stay_ahead_of_it(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "a", "--no-color", "--", "-v");
	/* getopt moves "a" after "--"'s options; the operands are "a" and "-v". */
	assert_true(x.c.no_color);
	assert_int_equal(x.s.verbose, 0);
	assert_int_equal(x.r, 3);
	assert_string_equal(argv_[x.r], "a");
	assert_string_equal(argv_[x.r + 1], "-v");
}

static void a_lone_dash_is_an_operand(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "-", "--json");
	assert_int_equal(x.r, 2);
	assert_string_equal(argv_[2], "-");
}

static void help_prints_usage_to_stdout_and_returns_cli_help(void **state)
{
	(void)state;
	struct run x;
	{
		PARSE(&x, "-h");
		assert_int_equal(x.r, CLI_HELP);
		assert_string_equal(x.out, "usage: gpuwho test [-v] [-p PID]\n");
		assert_string_equal(x.err, "");
	}
	{
		PARSE(&x, "/dev/nvidia0", "--help");
		assert_int_equal(x.r, CLI_HELP);
	}
	assert_int_equal(cli_exit_for(CLI_HELP), EXIT_FINE);
}

static void missing_value_is_cli_bad_and_names_the_option(void **state)
{
	(void)state;
	struct run x;
	{
		PARSE(&x, "--from");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "option '--from' needs a value"));
		assert_non_null(strstr(x.err, "Try 'gpuwho test --help'."));
	}
	{
		PARSE(&x, "--json", "-p");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "option '-p' needs a value"));
	}
	{
		PARSE(&x, "--limit");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "'--limit'"));
	}
	assert_int_equal(cli_exit_for(CLI_BAD), EXIT_USAGE);
}

static void unknown_options_are_cli_bad_and_named(void **state)
{
	(void)state;
	struct run x;
	{
		PARSE(&x, "--frobnicate");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "gpuwho test: unknown option '--frobnicate'"));
	}
	{
		PARSE(&x, "-x");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "unknown option '-x'"));
	}
	{
		PARSE(&x, "-vx");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "unknown option '-x'"));
	}
	{
		/* Ambiguous abbreviation of --no-nvml / --no-color / --no-colour. */
		PARSE(&x, "--no");
		assert_int_equal(x.r, CLI_BAD);
	}
}

/* getopt_long reports "--json=1" as '?' with optopt set to the option's value (0x1000 here, a
 * NUL when printed with %c): the message must name the option, not print "-\0". */
static void value_given_to_a_flag_is_cli_bad_and_names_the_flag(void **state)
{
	(void)state;
	struct run x;
	{
		PARSE(&x, "--json=1");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "gpuwho test: option '--json' takes no value"));
	}
	{
		/* An own flag whose value is a letter: not "unknown option '-v'". */
		PARSE(&x, "--verbose=yes");
		assert_int_equal(x.r, CLI_BAD);
		assert_non_null(strstr(x.err, "option '--verbose' takes no value"));
	}
}

/* A parse that stops inside a group of short options ("-hv" stops at h) must not leak its
 * position into the next parse (getopt keeps it in static state unless optind is set to 0). */
static void a_parse_stopped_inside_a_group_does_not_leak_into_the_next(void **state)
{
	(void)state;
	struct run x;
	char *first[] = {"test", "-hv", NULL};
	parse(&x, 2, first);
	assert_int_equal(x.r, CLI_HELP);
	char *second[] = {"test", "op", NULL};
	parse(&x, 2, second);
	assert_int_equal(x.s.verbose, 0);
	assert_int_equal(x.r, 1);
}

static void unique_abbreviations_of_long_options_are_accepted(void **state)
{
	(void)state;
	struct run x;
	PARSE(&x, "--js", "--verb");
	assert_int_equal(x.r, 3);
	assert_true(x.c.json);
	assert_int_equal(x.s.verbose, 1);
}

static void callback_refusal_is_cli_bad(void **state)
{
	(void)state;
	struct run x;
	char *argv[] = {"test", "-v", NULL};
	memset(&x, 0, sizeof x);
	x.c.cmd = "test";
	x.s.refuse = 1;
	int se;
	FILE *fe;
	capture_start(2, &se, &fe);
	x.r = cli_parse(&x.c, 2, argv, "p:v", own, on_opt, &x.s, "usage\n");
	capture_end(2, se, fe, x.err, sizeof x.err);
	assert_int_equal(x.r, CLI_BAD);
	assert_non_null(strstr(x.err, "Try 'gpuwho test --help'."));
}

static void own_options_may_be_absent(void **state)
{
	(void)state;
	struct cli c = {.cmd = "t"};
	char *argv[] = {"t", "op", "--json", NULL};
	assert_int_equal(cli_parse(&c, 3, argv, NULL, NULL, NULL, NULL, "u\n"), 2);
	assert_true(c.json);
	assert_string_equal(argv[2], "op");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_arguments_returns_index_one),
		cmocka_unit_test(common_options_set_their_fields),
		cmocka_unit_test(no_colour_spelling_is_accepted),
		cmocka_unit_test(own_options_reach_the_callback_short_long_and_grouped),
		cmocka_unit_test(options_after_operands_are_permuted_to_the_front),
		cmocka_unit_test(double_dash_ends_options_and_leaves_the_rest_as_operands),
		cmocka_unit_test(operands_before_double_dash_stay_ahead_of_it),
		cmocka_unit_test(a_lone_dash_is_an_operand),
		cmocka_unit_test(help_prints_usage_to_stdout_and_returns_cli_help),
		cmocka_unit_test(missing_value_is_cli_bad_and_names_the_option),
		cmocka_unit_test(unknown_options_are_cli_bad_and_named),
		cmocka_unit_test(value_given_to_a_flag_is_cli_bad_and_names_the_flag),
		cmocka_unit_test(a_parse_stopped_inside_a_group_does_not_leak_into_the_next),
		cmocka_unit_test(unique_abbreviations_of_long_options_are_accepted),
		cmocka_unit_test(callback_refusal_is_cli_bad),
		cmocka_unit_test(own_options_may_be_absent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
