#!/usr/bin/env bash
# tests/run itself: it counts passes, failures and skips of cmocka binaries and e2e scripts, lists each
# skip with its reason, and, as root, counts the skips root has no excuse for ("needs root", a missing
# tool scripts/install-deps installs) as failures (the rule at the top of tests/run).
. "$(dirname "$0")/lib.sh"

# A stand-in e2e script with one test of each kind, and a cmocka binary that passes one test and skips one.
fakes() {
	cat >"$TMP/t-fake.sh" <<-EOF
		. "$TESTS/e2e/lib.sh"
		test_passes() { true; }
		test_fails() { fail "on purpose"; }
		test_says_it_needs_root() { skip "needs root"; }
		test_says_unshare_is_missing() { skip "no unshare"; }
		test_meets_a_busy_host() { echo "noise before the skip"; skip "another process holds 10:200 here; free would signal it"; }
		run_tests
	EOF
	cc -x c -o "$TMP/test_fake" - -lcmocka <<-'EOF' || fail "cannot build a cmocka stand-in"
		#include <stdarg.h>
		#include <stddef.h>
		#include <stdint.h>
		#include <setjmp.h>
		#include <cmocka.h>
		static void passes(void **s) { (void)s; }
		static void skips(void **s) { (void)s; skip(); }
		int main(void)
		{
			const struct CMUnitTest t[] = { cmocka_unit_test(passes), cmocka_unit_test(skips) };
			return cmocka_run_group_tests(t, NULL, NULL);
		}
	EOF
}

test_counts_per_file_lists_skips_with_reasons_and_fails_root_skips_as_root() {
	local out rc
	fakes
	out=$("$TESTS/run" "$TMP/t-fake.sh" "$TMP/test_fake" 2>&1); rc=$?
	[ "$rc" -ne 0 ] || fail "exit 0 with a failing test"
	expect_has "$out" "skip - meets_a_busy_host: another process holds 10:200 here; free would signal it"
	expect_has "$out" "    t-fake meets_a_busy_host: another process holds 10:200 here; free would signal it"
	expect_has "$out" "    test_fake skips: (no reason given)"
	expect_has "$out" "failing: t-fake"
	if [ "$(id -u)" -eq 0 ]; then
		expect_has "$out" 'not ok - says_it_needs_root: skipped as root: "needs root"'
		expect_has "$out" 'not ok - says_unshare_is_missing: skipped as root: "no unshare"'
		expect_not "$out" "    t-fake says_it_needs_root:"
		[ "$(grep -c '^t-fake  .* 1 passed, 3 failed, 1 skipped$' <<<"$out")" = 1 ] || fail "t-fake's line: $out"
		[ "$(tail -1 <<<"$out")" = "2 passed, 3 failed, 2 skipped" ] || fail "last line: $(tail -1 <<<"$out")"
	else
		expect_has "$out" "    t-fake says_it_needs_root: needs root"
		expect_has "$out" "    t-fake says_unshare_is_missing: no unshare"
		[ "$(grep -c '^t-fake  .* 1 passed, 1 failed, 3 skipped$' <<<"$out")" = 1 ] || fail "t-fake's line: $out"
		[ "$(tail -1 <<<"$out")" = "2 passed, 1 failed, 4 skipped" ] || fail "last line: $(tail -1 <<<"$out")"
	fi
	[ "$(grep -c '^test_fake  .* 1 passed, 0 failed, 1 skipped$' <<<"$out")" = 1 ] || fail "test_fake's line: $out"
}

test_environmental_skips_alone_pass() {
	local out rc
	cat >"$TMP/t-busy.sh" <<-EOF
		. "$TESTS/e2e/lib.sh"
		test_passes() { true; }
		test_reused_pid() { skip "pid 4242 reused already"; }
		run_tests
	EOF
	out=$("$TESTS/run" "$TMP/t-busy.sh" 2>&1); rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc: $out"
	expect_has "$out" "    t-busy reused_pid: pid 4242 reused already"
	[ "$(tail -1 <<<"$out")" = "1 passed, 0 failed, 1 skipped" ] || fail "last line: $(tail -1 <<<"$out")"
}

test_a_script_that_replaces_dev_null_fails_and_dev_null_is_restored() {
	local out rc
	need_root
	# What holder.c did when /dev/null was its ready file: a rename over it. Here over a stand-in
	# (TESTS_DEV_NULL), a node of the same device, that tests/run watches instead.
	mknod -m 666 "$TMP/null" c 1 3
	cat >"$TMP/t-vandal.sh" <<-EOF
		. "$TESTS/e2e/lib.sh"
		test_passes() { echo x >"$TMP/null.tmp"; mv -f "$TMP/null.tmp" "$TMP/null"; }
		run_tests
	EOF
	out=$(TESTS_DEV_NULL="$TMP/null" "$TESTS/run" "$TMP/t-vandal.sh" 2>&1); rc=$?
	[ "$rc" -ne 0 ] || fail "exit 0 with /dev/null replaced: $out"
	expect_has "$out" "not ok - t-vandal replaced $TMP/null (regular file); restored"
	[ "$(stat -c '%F %t:%T' "$TMP/null")" = "character special file 1:3" ] || fail "not restored: $(stat "$TMP/null")"
}

run_tests
