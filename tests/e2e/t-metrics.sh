#!/usr/bin/env bash
# End-to-end tests of `gpuwho metrics`: real processes hold stand-ins of /dev/nvidia0 and nvidia1
# (GPUWHO_DEV_ROOT), the fake libnvidia-ml reports memory from the test's scenario, and the output
# must be exposition that promtool accepts — hostile process names included — with the numbers of
# the scenario.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
GIB=1073741824

need_promtool() { command -v promtool >/dev/null || skip "no promtool (Debian: prometheus)"; }

# value TEXT SERIES: the value of the sample whose name and labels are exactly SERIES.
value() { awk -v s="$2" 'index($0, s " ") == 1 { print $NF }' <<<"$1"; }

test_hostile_process_names_give_valid_exposition() {
	need_promtool
	mkdevs
	# A name that tries to close its label and inject a series, with a backslash, an escape and a
	# byte that is not UTF-8 (comm keeps 15 bytes).
	start_holder a --open "$TMP/dev/nvidia0" --comm $'"}\n1\\\e[31m\xff'; A=$HPID
	scenario "gpu 0 used_mib=2048" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	gw metrics --nvml "$FAKE" >"$TMP/out" || fail "exit $?"
	promtool check metrics <"$TMP/out" >"$TMP/lint" 2>&1 || { cat "$TMP/lint" >&2; fail "promtool check metrics"; }
	out=$(cat "$TMP/out")
	expect_has "$out" "gpuwho_process_gpu_memory_bytes{gpu=\"0\",pid=\"$A\",user=\"root\",comm="
	# The name as gpuwho shows it everywhere (\n, \\, \e, \xff as text), then the format's escaping.
	expect_has "$out" 'comm="\"}\\n1\\\\\\e[31m\\xff",job=""'
	expect_has "$out" "} $((1542 * 1048576))"
	[ "$(grep -c '^gpuwho_up ' <<<"$out")" = 1 ] || fail "gpuwho_up is not one sample"
	expect_has "$out" "gpuwho_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-00000000-0000-0000-0000-000000000000\"} $((2048 * 1048576))"
	expect_has "$out" "gpuwho_findings{verdict=\"in_use\",severity=\"ok\",gpu=\"0\"} 1"
}

test_a_leak_is_unattributed_and_stuck_memory() {
	need_promtool
	mkdevs
	scenario "gpu 0" "gpu 1 used_mib=4096"
	out=$(gw metrics --nvml "$FAKE") || fail "exit $?"
	promtool check metrics <<<"$out" >/dev/null 2>&1 || fail "promtool check metrics"
	[ "$(value "$out" 'gpuwho_gpu_memory_unattributed_bytes{gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001"}')" = $((4 * GIB)) ] ||
		fail "unattributed on GPU 1 is not 4 GiB: $(grep unattributed <<<"$out")"
	[ "$(value "$out" 'gpuwho_gpu_memory_stuck_bytes{gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001",verdict="driver_leak"}')" = $((4 * GIB)) ] ||
		fail "stuck driver_leak on GPU 1 is not 4 GiB: $(grep stuck <<<"$out")"
	[ "$(value "$out" 'gpuwho_gpu_memory_unattributed_bytes{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000"}')" = 0 ] ||
		fail "GPU 0 has unattributed memory"
	expect_has "$out" 'gpuwho_findings{verdict="driver_leak",severity="action",gpu="1"} 1'
	# The collection looked at every process: the memory is unexplained, so the lazy walk is not enough.
	expect_has "$out" "gpuwho_scan_limited 0"
}

test_a_healthy_host_is_answered_by_the_lazy_collection() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw metrics --nvml "$FAKE") || fail "exit $?"
	expect_has "$out" "gpuwho_scan_limited 1"
	expect_has "$out" "pid=\"$A\""
	expect_has "$out" 'gpuwho_gpu_memory_stuck_bytes{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",verdict="orphaned_workers"} 0'
}

test_output_file_is_replaced_whole_and_world_readable() {
	mkdevs
	scenario "gpu 0" "gpu 1"
	mkdir "$TMP/textfile"
	echo stale >"$TMP/textfile/gpuwho.prom"
	gw metrics --nvml "$FAKE" -o "$TMP/textfile/gpuwho.prom" || fail "exit $?"
	[ "$(stat -c %a "$TMP/textfile/gpuwho.prom")" = 644 ] || fail "mode $(stat -c %a "$TMP/textfile/gpuwho.prom"), expected 644 (node_exporter reads it as another user)"
	expect_has "$(cat "$TMP/textfile/gpuwho.prom")" "gpuwho_up 1"
	[ "$(ls "$TMP/textfile")" = gpuwho.prom ] || fail "left behind: $(ls "$TMP/textfile")"
	gw metrics --nvml "$FAKE" -o "$TMP/nonexistent/x.prom" 2>"$TMP/err"; rc=$?
	[ "$rc" -eq 3 ] || fail "unwritable output: exit $rc, expected 3"
	expect_has "$(cat "$TMP/err")" "cannot write $TMP/nonexistent/x.prom"
}

test_max_processes_bounds_the_series_and_bad_usage_exits_2() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	start_holder b --open "$TMP/dev/nvidia0"; B=$HPID
	scenario "gpu 0 used_mib=3000" "gpu 1" "proc gpu=0 pid=$A mib=1000" "proc gpu=0 pid=$B mib=2000"
	out=$(gw metrics --nvml "$FAKE" --max-processes 1) || fail "exit $?"
	[ "$(grep -c '^gpuwho_process_gpu_memory_bytes{' <<<"$out")" = 1 ] || fail "not one process series"
	expect_has "$out" "pid=\"$B\""   # the larger
	expect_has "$out" 'gpuwho_gpu_processes{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000"} 2'
	gw metrics --max-processes x >/dev/null 2>&1; [ $? -eq 2 ] || fail "--max-processes x: not exit 2"
	err=$(gw metrics --max-processes $'\e]0;PWN\a' 2>&1 >/dev/null); [ $? -eq 2 ] || fail "hostile --max-processes: not exit 2"
	! grep -q $'\e' <<<"$err" || fail "raw escape byte in: $(cat -v <<<"$err")"
	gw metrics extra >/dev/null 2>&1; [ $? -eq 2 ] || fail "an operand: not exit 2"
	gw metrics --json >/dev/null 2>&1; [ $? -eq 2 ] || fail "--json: not exit 2"
	"$GPUWHO" metrics --help | grep -q -- '--max-processes' || fail "--help"
}

test_a_snapshot_replays_as_metrics() {
	need_promtool
	out=$("$GPUWHO" metrics --from "$TESTS/../examples/zombie-leader.json") || fail "exit $?"
	promtool check metrics <<<"$out" >/dev/null 2>&1 || fail "promtool check metrics"
	expect_has "$out" 'verdict="zombie_leader",severity="action"'
}

run_tests
