/* Unit tests for util: readfile_at, parse_uint, xgrow, str_starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util.h"
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int setup_dir(void **state)
{
	*state = fx_mkdtemp();
	return 0;
}

static int teardown_dir(void **state)
{
	fx_rmrf(*state);
	return 0;
}

static void readfile_reads_whole_file_nul_terminated(void **state)
{
	const char *dir = *state;
	fx_write(dir, "f", "ab\0cd", 5);
	int dfd = fx_open_dir(dir);
	char *buf = (char *)1;
	size_t len = 99;
	assert_int_equal(readfile_at(dfd, "f", &buf, &len, 0), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(buf, "ab\0cd", 6);   /* includes the terminating NUL */
	free(buf);
	close(dfd);
}

static void readfile_empty_file_gives_empty_string(void **state)
{
	const char *dir = *state;
	fx_write(dir, "empty", "", 0);
	int dfd = fx_open_dir(dir);
	char *buf;
	size_t len = 99;
	assert_int_equal(readfile_at(dfd, "empty", &buf, &len, 0), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	close(dfd);
}

static void readfile_missing_file_returns_enoent_and_null(void **state)
{
	const char *dir = *state;
	int dfd = fx_open_dir(dir);
	char *buf = (char *)1;
	size_t len = 99;
	assert_int_equal(readfile_at(dfd, "nope", &buf, &len, 0), -ENOENT);
	assert_null(buf);
	assert_int_equal(len, 0);
	close(dfd);
}

static void readfile_directory_returns_eisdir(void **state)
{
	const char *dir = *state;
	fx_puts(dir, "sub/x", "x");
	int dfd = fx_open_dir(dir);
	char *buf = (char *)1;
	assert_int_equal(readfile_at(dfd, "sub", &buf, NULL, 0), -EISDIR);
	assert_null(buf);
	close(dfd);
}

static void readfile_limit_truncates_without_error(void **state)
{
	const char *dir = *state;
	fx_puts(dir, "f", "0123456789");
	int dfd = fx_open_dir(dir);
	char *buf;
	size_t len;
	assert_int_equal(readfile_at(dfd, "f", &buf, &len, 4), 0);
	assert_int_equal(len, 4);
	assert_string_equal(buf, "0123");
	free(buf);
	/* A limit equal to or above the size reads it all. */
	assert_int_equal(readfile_at(dfd, "f", &buf, &len, 10), 0);
	assert_string_equal(buf, "0123456789");
	free(buf);
	assert_int_equal(readfile_at(dfd, "f", &buf, &len, 11), 0);
	assert_int_equal(len, 10);
	free(buf);
	close(dfd);
}

static void readfile_grows_past_its_first_buffer(void **state)
{
	const char *dir = *state;
	size_t n = 3 * 4096 + 17;
	char *data = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)('a' + i % 26);
	fx_write(dir, "big", data, n);
	int dfd = fx_open_dir(dir);
	char *buf;
	size_t len;
	assert_int_equal(readfile_at(dfd, "big", &buf, &len, 0), 0);
	assert_int_equal(len, n);
	assert_memory_equal(buf, data, n);
	assert_int_equal(buf[n], '\0');
	free(buf);
	/* A limit that falls after a growth step. */
	assert_int_equal(readfile_at(dfd, "big", &buf, &len, 4096 + 5), 0);
	assert_int_equal(len, 4096 + 5);
	assert_memory_equal(buf, data, 4096 + 5);
	free(buf);
	close(dfd);
	free(data);
}

static void readfile_absolute_path_ignores_dirfd(void **state)
{
	const char *dir = *state;
	fx_puts(dir, "abs", "hello");
	char *p = xasprintf("%s/abs", dir);
	char *buf;
	assert_int_equal(readfile_at(-1, p, &buf, NULL, 0), 0);
	assert_string_equal(buf, "hello");
	free(buf);
	free(p);
}

static void readfile_reads_proc_files_whose_size_is_zero(void **state)
{
	(void)state;
	char *buf;
	size_t len;
	assert_int_equal(readfile_at(AT_FDCWD, "/proc/self/status", &buf, &len, 0), 0);
	assert_true(len > 0);
	assert_non_null(strstr(buf, "Pid:"));
	free(buf);
}

static void parse_uint_accepts_plain_decimal(void **state)
{
	(void)state;
	unsigned long long v = 7;
	assert_true(parse_uint("0", &v));
	assert_int_equal(v, 0);
	assert_true(parse_uint("195", &v));
	assert_int_equal(v, 195);
	assert_true(parse_uint("007", &v));
	assert_int_equal(v, 7);
	assert_true(parse_uint("18446744073709551615", &v));
	assert_true(v == ULLONG_MAX);
}

static void parse_uint_rejects_overflow_and_leaves_out_alone(void **state)
{
	(void)state;
	unsigned long long v = 42;
	assert_false(parse_uint("18446744073709551616", &v));
	assert_false(parse_uint("99999999999999999999", &v));
	assert_false(parse_uint("184467440737095516150", &v));
	assert_int_equal(v, 42);
}

static void parse_uint_rejects_empty_signs_spaces_and_junk(void **state)
{
	(void)state;
	unsigned long long v = 42;
	assert_false(parse_uint("", &v));
	assert_false(parse_uint(NULL, &v));
	assert_false(parse_uint("-1", &v));
	assert_false(parse_uint("+1", &v));
	assert_false(parse_uint(" 1", &v));
	assert_false(parse_uint("1 ", &v));
	assert_false(parse_uint("1\n", &v));
	assert_false(parse_uint("0x10", &v));
	assert_false(parse_uint("1e3", &v));
	assert_false(parse_uint("12a", &v));
	assert_int_equal(v, 42);
}

static void xgrow_grows_to_fit_and_zeroes_the_new_part(void **state)
{
	(void)state;
	int *a = NULL;
	size_t cap = 0;
	xgrow(&a, &cap, 1, sizeof *a);
	assert_non_null(a);
	assert_true(cap >= 1);
	for (size_t i = 0; i < cap; i++)
		assert_int_equal(a[i], 0);
	size_t old = cap;
	for (size_t i = 0; i < old; i++)
		a[i] = (int)i + 1;
	xgrow(&a, &cap, 1000, sizeof *a);
	assert_true(cap >= 1000);
	for (size_t i = 0; i < old; i++)
		assert_int_equal(a[i], (int)i + 1);   /* kept */
	for (size_t i = old; i < cap; i++)
		assert_int_equal(a[i], 0);            /* zeroed */
	a[999] = 5;
	free(a);
}

static void xgrow_does_nothing_when_it_already_fits(void **state)
{
	(void)state;
	char *a = NULL;
	size_t cap = 0;
	xgrow(&a, &cap, 16, 1);
	char *before = a;
	size_t c = cap;
	a[0] = 'x';
	xgrow(&a, &cap, c, 1);
	assert_ptr_equal(a, before);
	assert_int_equal(cap, c);
	assert_int_equal(a[0], 'x');
	xgrow(&a, &cap, 0, 1);
	assert_int_equal(cap, c);
	free(a);
}

static void xgrow_of_structs_appends_one_at_a_time(void **state)
{
	(void)state;
	struct pair { long a; char *b; } *arr = NULL;
	size_t cap = 0, n = 0;
	for (int i = 0; i < 100; i++) {
		xgrow(&arr, &cap, n + 1, sizeof *arr);
		assert_null(arr[n].b);
		arr[n].a = i;
		arr[n++].b = NULL;
	}
	for (int i = 0; i < 100; i++)
		assert_int_equal(arr[i].a, i);
	free(arr);
}

static void str_starts_and_xstrndup(void **state)
{
	(void)state;
	assert_true(str_starts("nvidia-uvm", "nvidia"));
	assert_true(str_starts("x", ""));
	assert_false(str_starts("nvidi", "nvidia"));
	char *s = xstrndup("abcdef", 3);
	assert_string_equal(s, "abc");
	free(s);
	s = xasprintf("%s-%d", "a", 7);
	assert_string_equal(s, "a-7");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(readfile_reads_whole_file_nul_terminated, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_empty_file_gives_empty_string, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_missing_file_returns_enoent_and_null, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_directory_returns_eisdir, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_limit_truncates_without_error, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_grows_past_its_first_buffer, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(readfile_absolute_path_ignores_dirfd, setup_dir, teardown_dir),
		cmocka_unit_test(readfile_reads_proc_files_whose_size_is_zero),
		cmocka_unit_test(parse_uint_accepts_plain_decimal),
		cmocka_unit_test(parse_uint_rejects_overflow_and_leaves_out_alone),
		cmocka_unit_test(parse_uint_rejects_empty_signs_spaces_and_junk),
		cmocka_unit_test(xgrow_grows_to_fit_and_zeroes_the_new_part),
		cmocka_unit_test(xgrow_does_nothing_when_it_already_fits),
		cmocka_unit_test(xgrow_of_structs_appends_one_at_a_time),
		cmocka_unit_test(str_starts_and_xstrndup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
