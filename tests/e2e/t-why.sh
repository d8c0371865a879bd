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
	wait_state "$A" T
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw why --nvml "$FAKE" --no-color 0); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_has "$out" "[action] GPU 0: 1,542 MiB held by PID $A"
	expect_has "$out" "kill -CONT $A"
}

test_a_zombie_leader_with_live_threads_gets_kill_9() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --leader-exit; A=$LPID
	wait_state "$A" Z
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

# shm_leak_setup: leaked segments of a dead creator under $TMP/shm (GPUWHO_SHM_ROOT): SGLang's,
# PyTorch's, and (with "hostile") one whose name holds an escape sequence and a newline.
shm_leak_setup() {
	mkdevs
	mkdir -p "$TMP/shm" "$TMP/bin"
	sh -c 'exit 0' & dead=$!; wait $dead
	head -c 1048576 /dev/zero >"$TMP/shm/sgl_shm_mm_${dead}_9f3a"
	head -c 1048576 /dev/zero >"$TMP/shm/torch_${dead}_1_42"
	[ "${1:-}" = hostile ] && head -c 1048576 /dev/zero >"$TMP/shm/psm_${dead}_"$'\e]0;PWNED\a\nx'
	export GPUWHO_SHM_ROOT="$TMP/shm"
	ln -s "$GPUWHO" "$TMP/bin/gpuwho"   # the printed `gpuwho` is the binary under test
	scenario "gpu 0" "gpu 1"
}

# The commands between backticks in the shm_orphans finding's fix (its line and the wrapped lines
# under it), as the terminal shows them. A command is never split across lines.
shm_fix_commands() {
	gw why --nvml "$FAKE" --no-color |
		awk '/^ *fix: .*free --shm/ { on = 1; print; next } on && /^    / { print; next } { on = 0 }' |
		grep -o '`[^`]*`' | tr -d '`'
}

test_the_shm_fixes_work_exactly_as_printed() {
	shm_leak_setup
	mapfile -t cmds < <(shm_fix_commands)
	[ "${#cmds[@]}" -eq 2 ] || fail "want two commands, got: ${cmds[*]}"
	[ "${cmds[0]}" = "gpuwho free --shm --yes" ] || fail "first: ${cmds[0]}"
	expect_has "${cmds[1]}" "rm -- "
	# The rm, as printed:
	bash -c "${cmds[1]}" || fail "rm as printed: exit $?"
	[ -z "$(ls "$TMP/shm")" ] || fail "left: $(ls "$TMP/shm")"
	# gpuwho free --shm --yes, as printed, on a new leak:
	head -c 1048576 /dev/zero >"$TMP/shm/sgl_shm_mm_${dead}_77aa"
	PATH="$TMP/bin:$PATH" GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" GPUWHO_NVML="$FAKE" \
		bash -c "$(shm_fix_commands | head -1)" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "free as printed: exit $?"; }
	[ -z "$(ls "$TMP/shm")" ] || fail "left: $(ls "$TMP/shm")"
}

test_a_hostile_shm_name_gets_only_a_fix_that_works_as_printed() {
	shm_leak_setup hostile
	mapfile -t cmds < <(shm_fix_commands)
	[ "${#cmds[@]}" -eq 1 ] && [ "${cmds[0]}" = "gpuwho free --shm --yes" ] || fail "got: ${cmds[*]}"
	out=$(gw why --nvml "$FAKE" --no-color)
	expect_not "$out" $'\e'
	PATH="$TMP/bin:$PATH" GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" GPUWHO_NVML="$FAKE" \
		bash -c "${cmds[0]}" >"$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "free as printed: exit $?"; }
	[ -z "$(ls -A "$TMP/shm")" ] || fail "left: $(ls -A "$TMP/shm" | od -c | head -3)"
}

test_ranks_of_a_killed_launchers_process_group_are_orphans_and_the_fix_works_as_printed() {
	# A launcher that leads its process group (as setsid, a login shell or docker exec makes it) starts
	# two ranks with different command lines, then dies of SIGKILL: the ranks are adopted, each on its
	# own. No name tells; the kernel does: their group's leader is gone.
	mkdevs
	command -v setsid >/dev/null || skip "no setsid"
	spawn setsid sh -c "'$HOLD' '$TMP/a.ready' --open '$TMP/dev/nvidia0' --comm rank0 &
		'$HOLD' '$TMP/b.ready' --open '$TMP/dev/nvidia0' --threads 1 & wait"
	L=$!
	wait_file "$TMP/a.ready"; wait_file "$TMP/b.ready"
	A=$(cat "$TMP/a.ready"); B=$(cat "$TMP/b.ready"); SPAWNED="$SPAWNED $A $B"
	[ "$(awk '{print $5}' /proc/$A/stat)" = "$L" ] || fail "rank $A is not in the launcher's group $L"
	kill -9 "$L"; wait "$L" 2>/dev/null
	scenario "gpu 0 used_mib=4200" "gpu 1" "proc gpu=0 pid=$A mib=2048" "proc gpu=0 pid=$B mib=2048"
	out=$(gw why --nvml "$FAKE" --no-color 0); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1: $out"
	expect_has "$out" "2 orphaned processes of process group $L"
	fix=$(printf '%s\n' "$out" | sed -n 's/^ *fix: //p' | grep -o '`kill -TERM -- -[0-9]*`' | tr -d '`')
	[ "$fix" = "kill -TERM -- -$L" ] || fail "fix: $fix"
	bash -c "$fix" || fail "the fix as printed: exit $?"
	for p in $A $B; do
		for i in $(seq 100); do [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = Z ] || ! kill -0 $p 2>/dev/null && break; sleep 0.05; done
		kill -0 $p 2>/dev/null && [ "$(awk '{print $3}' /proc/$p/stat)" != Z ] && fail "rank $p still runs"
	done
	return 0
}

test_a_setsid_daemon_holding_the_gpu_is_not_an_orphan() {
	mkdevs
	command -v setsid >/dev/null || skip "no setsid"
	spawn setsid "$HOLD" "$TMP/d.ready" --open "$TMP/dev/nvidia0"
	wait_file "$TMP/d.ready"; D=$(cat "$TMP/d.ready")
	scenario "gpu 0 used_mib=1100" "gpu 1" "proc gpu=0 pid=$D mib=1024"
	out=$(gw why --nvml "$FAKE" --json 0)
	expect_jq "$out" '[.findings[] | select(.verdict == "orphaned_workers")] == []'
	expect_jq "$out" "[.findings[] | select(.gpu == 0)][0].verdict == \"in_use\""
}

test_the_second_memory_sample_is_taken_only_when_memory_has_no_holder() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw why --nvml "$FAKE" --json)
	expect_jq "$out" '.second_sample_s == null'
	# 2 GiB that no process holds: only a second look tells a leak from memory being released.
	scenario "gpu 0 used_mib=3590" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw why --nvml "$FAKE" --json)
	expect_jq "$out" '.second_sample_s >= 0.5 and ([.findings[] | select(.verdict == "driver_leak")] | length == 1)'
	expect_jq "$out" '[.findings[] | select(.verdict == "driver_leak") | .evidence[] | select(test("second sample"))] | length == 1'
}

run_tests
