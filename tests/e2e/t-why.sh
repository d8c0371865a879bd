#!/usr/bin/env bash
# End-to-end tests of `gpuwho why`: real processes hold mknod'ed stand-ins of /dev/nvidia0, nvidia1 and
# nvidiactl (under GPUWHO_DEV_ROOT), the fake libnvidia-ml reports memory from a scenario the test
# writes, and why must name the verdict, its PIDs and the exit status.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"


test_a_live_holder_is_in_use_and_exit_0() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	# Exit status 0 unless this host itself has a host-wide warning (low memory): checked through worst.
	out=$(gw why --nvml "$FAKE" --json 0); rc=$?
	expect_jq "$out" '.schema == "gpuwho.why" and .schema_version == 1'
	expect_jq "$out" "(.worst == \"ok\" or .worst == \"info\") == ($rc == 0)"
	expect_jq "$out" '[.findings[] | select(.gpu == 0) | .severity] == ["ok"]'
	expect_jq "$out" "[.findings[] | select(.gpu == 0)][0] | .verdict == \"in_use\" and .severity == \"ok\" and (.pids | index($A))"
	expect_jq "$out" '[.findings[] | select(.gpu == 1)] == []'
}

test_a_stopped_holder_needs_kill_cont_and_exit_1() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --stop; A=$HPID
	for i in $(seq 100); do [ "$(awk '{print $3}' /proc/$A/stat)" = T ] && break; sleep 0.05; done
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw why --nvml "$FAKE" --no-color 0); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_has "$out" "[action] GPU 0: 1,542 MiB held by PID $A"
	expect_has "$out" "kill -CONT $A"
}

test_a_zombie_leader_with_live_threads_gets_kill_9() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --leader-exit; A=$LPID
	for i in $(seq 100); do [ "$(awk '{print $3}' /proc/$A/stat)" = Z ] && break; sleep 0.05; done
	scenario "gpu 0 used_mib=2566" "gpu 1" "proc gpu=0 pid=$A mib=2566"
	out=$(gw why --nvml "$FAKE" --json 0); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_jq "$out" ".findings[] | select(.verdict == \"zombie_leader\") | .gpu == 0 and (.fix | contains(\"kill -9 $A\"))"
}

test_a_child_holding_an_exited_parents_files_is_an_inherited_holder() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia1" --fork-exit
	for i in $(seq 100); do kill -0 "$LPID" 2>/dev/null || break; sleep 0.05; done
	scenario "gpu 0" "gpu 1 used_mib=3590" "proc gpu=1 pid=$LPID mib=3590"
	out=$(gw why --nvml "$FAKE" --json 1); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_jq "$out" ".findings[] | select(.verdict == \"inherited_holder\") | .gpu == 1 and (.pids | index($HPID)) and (.headline | contains(\"exited PID $LPID\"))"
	expect_jq "$out" '[.findings[] | select(.verdict == "driver_leak")] == []'
}

test_bad_selectors_and_unreadable_snapshots_have_their_exit_codes() {
	mkdevs
	scenario "gpu 0" "gpu 1"
	gw why --nvml "$FAKE" 7 >/dev/null 2>"$TMP/err"; rc=$?
	[ "$rc" -eq 2 ] || fail "unknown GPU: exit $rc, expected 2"
	expect_has "$(cat "$TMP/err")" "no GPU matches '7'"
	"$GPUWHO" why --from "$TMP/nonexistent.json" >/dev/null 2>&1; rc=$?
	[ "$rc" -eq 3 ] || fail "--from a missing file: exit $rc, expected 3"
	"$GPUWHO" why --help >/dev/null || fail "--help exit $?"
}

run_tests
