#!/usr/bin/env bash
# End-to-end tests of `gpuwho check`, the scheduler's health check: real processes hold mknod'ed
# stand-ins of /dev/nvidia0 and nvidia1 (GPUWHO_DEV_ROOT), the fake libnvidia-ml reports memory from
# a scenario, and check must stay silent with 0 when clean, print one line per bad GPU with 1, pick
# GPUs from the arguments or Slurm's and CUDA's variables, poll with --wait, and walk every process
# only when NVML shows memory it cannot tie to a live process.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
unset SLURM_JOB_GPUS SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_SCRIPT_CONTEXT

test_a_live_holder_is_clean_silent_exit_0_and_needs_no_fd_walk() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	out=$(gw check --nvml "$FAKE" 2>&1); rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc, expected 0: $out"
	[ -z "$out" ] || fail "expected no output, got: $out"
	out=$(gw check --nvml "$FAKE" --json); rc=$?
	[ "$rc" -eq 0 ] || fail "--json exit $rc"
	expect_jq "$out" '.schema == "gpuwho.check" and .ok and .inspected and .selected_by == "all"'
	# NVML explained every MiB: only NVML's PIDs were looked at.
	expect_jq "$out" '.scan == "limited" and ([.gpus[] | .ok] == [true, true])'
}

test_a_zombie_leader_gives_one_line_and_exit_1() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --leader-exit; A=$LPID
	wait_state "$A" Z
	scenario "gpu 0 used_mib=2566" "gpu 1" "proc gpu=0 pid=$A mib=2566"
	out=$(gw check --nvml "$FAKE"); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	[ "$(wc -l <<<"$out")" -eq 1 ] || fail "expected one line, got: $out"
	expect_has "$out" "gpu 0: 2,566 MiB held by PID $A"
	expect_has "$out" "a <defunct> process whose threads still run - gpuwho why 0"
	[ "${#out}" -le 200 ] || fail "line longer than 200 bytes: $out"
	# The line's own fix works as printed.
	gw why --nvml "$FAKE" 0 >/dev/null; [ $? -eq 1 ] || fail "gpuwho why 0 did not find it"
}

test_memory_of_an_exited_pid_triggers_the_full_walk_and_finds_the_heir() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia1" --fork-exit
	for i in $(seq 100); do kill -0 "$LPID" 2>/dev/null || break; sleep 0.05; done
	scenario "gpu 0" "gpu 1 used_mib=3590" "proc gpu=1 pid=$LPID mib=3590"
	out=$(gw check --nvml "$FAKE" --json); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_jq "$out" '.scan == "full" and (.gpus[0].ok) and (.gpus[1].ok | not)'
	expect_jq "$out" ".gpus[1].verdict == \"inherited_holder\" and (.gpus[1].pids | index($HPID))"
	# Another suite's process on this host may hold the same stand-in (/dev/random): the line then
	# names the lowest PID "and others"; the heir is in pids either way.
	expect_jq "$out" ".gpus[1].line | startswith(\"gpu 1: 3,590 MiB of exited PID $LPID held by PID \")"
}

test_gpus_come_from_arguments_then_slurm_then_cuda_variables() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia1" --stop; A=$HPID
	wait_state "$A" T
	scenario "gpu 0" "gpu 1 used_mib=1542 uuid=GPU-11111111-2222-3333-4444-555555555555" "proc gpu=1 pid=$A mib=1542"
	gw check --nvml "$FAKE" 0 >/dev/null || fail "GPU 0 alone is clean, exit $?"
	out=$(gw check --nvml "$FAKE" 0,1); [ $? -eq 1 ] || fail "0,1: expected 1"
	expect_has "$out" "gpu 1: 1,542 MiB held by PID $A"
	SLURM_JOB_GPUS=0 gw check --nvml "$FAKE" >/dev/null || fail "SLURM_JOB_GPUS=0 should be clean"
	SLURM_JOB_GPUS=1 gw check --nvml "$FAKE" >/dev/null; [ $? -eq 1 ] || fail "SLURM_JOB_GPUS=1: expected 1"
	SLURM_STEP_GPUS=0 CUDA_VISIBLE_DEVICES=1 gw check --nvml "$FAKE" >/dev/null || fail "SLURM_STEP_GPUS first"
	out=$(CUDA_VISIBLE_DEVICES=GPU-11111111-2222-3333-4444-555555555555 gw check --nvml "$FAKE" --json); rc=$?
	[ "$rc" -eq 1 ] || fail "CUDA_VISIBLE_DEVICES by UUID: exit $rc"
	expect_jq "$out" '.selected_by == "CUDA_VISIBLE_DEVICES" and ([.gpus[].gpu] == [1])'
	SLURM_JOB_GPUS=1 gw check --nvml "$FAKE" 0 >/dev/null || fail "arguments beat the environment"
	gw check --nvml "$FAKE" all >/dev/null; [ $? -eq 1 ] || fail "all: expected 1"
	gw check --nvml "$FAKE" 7 2>"$TMP/err"; [ $? -eq 2 ] || fail "unknown GPU: expected 2"
	expect_has "$(cat "$TMP/err")" "no GPU matches '7'"
	SLURM_JOB_GPUS=5 gw check --nvml "$FAKE" 2>"$TMP/err"; [ $? -eq 2 ] || fail "unknown GPU from the env: expected 2"
	expect_has "$(cat "$TMP/err")" "SLURM_JOB_GPUS"
}

test_nothing_to_inspect_is_exit_3_and_bad_usage_exit_2() {
	mkdevs
	scenario "gpu 0"
	gw check --nvml "$TMP/no-such-libnvidia-ml.so" >/dev/null 2>"$TMP/err"; rc=$?
	[ "$rc" -eq 3 ] || fail "no NVML: exit $rc, expected 3"
	expect_has "$(cat "$TMP/err")" "gpuwho check: cannot inspect the GPUs"
	out=$(gw check --no-nvml --json); [ $? -eq 3 ] || fail "--no-nvml: expected 3"
	expect_jq "$out" '(.inspected | not) and (.ok | not) and (.error | contains("--no-nvml"))'
	gw check --wait soon >/dev/null 2>&1; [ $? -eq 2 ] || fail "--wait soon: expected 2"
	gw check --ended-job 'x;y' >/dev/null 2>&1; [ $? -eq 2 ] || fail "--ended-job x;y: expected 2"
	"$GPUWHO" check --help | grep -q "SLURM_JOB_GPUS" || fail "--help does not teach the GPU selection"
}

test_wait_polls_until_the_memory_is_back() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --stop; A=$HPID
	wait_state "$A" T
	# live_only: the memory goes with the process, as the driver's does.
	scenario "live_only" "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	gw check --nvml "$FAKE" >/dev/null; [ $? -eq 1 ] || fail "stopped holder: expected 1"
	# The holder dies 2.5 s in: check must have polled (a start-up under ASan on a loaded machine can
	# take a second, so the margins are wide) and end soon after, well before its 20 s.
	( sleep 2.5; kill -9 "$A" ) &
	start=$EPOCHREALTIME
	out=$(gw check --nvml "$FAKE" --wait 20 --json); rc=$?
	took=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
	[ "$rc" -eq 0 ] || fail "--wait 20: exit $rc, expected 0: $out"
	expect_jq "$out" '.ok and .waited_s >= 0.5 and .waited_s < 12'
	awk "BEGIN { exit !($took < 12) }" || fail "took $took s"
	# A clean GPU does not wait out its --wait.
	start=$EPOCHREALTIME
	out=$(gw check --nvml "$FAKE" --wait 20 --json) || fail "clean: exit $?"
	took=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
	expect_jq "$out" '.ok and .waited_s < 5'
	awk "BEGIN { exit !($took < 10) }" || fail "clean check with --wait took $took s"
}

test_a_live_process_of_the_ended_job_fails_with_its_job_id() {
	mkdevs
	SLURM_JOB_ID=4242 start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario "gpu 0 used_mib=1542" "gpu 1" "proc gpu=0 pid=$A mib=1542"
	gw check --nvml "$FAKE" >/dev/null || fail "no ended job: a live holder is clean"
	gw check --nvml "$FAKE" --ended-job 17 >/dev/null || fail "another job ended: clean"
	out=$(gw check --nvml "$FAKE" --ended-job 4242); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect_has "$out" "gpu 0: 1,542 MiB held by PID $A (holder) of job 4242 of user root, which ended - gpuwho why 0"
	# As an epilog: Slurm's variables name the job.
	out=$(SLURM_SCRIPT_CONTEXT=epilog_slurmd SLURM_JOB_ID=4242 gw check --nvml "$FAKE" --json); rc=$?
	[ "$rc" -eq 1 ] || fail "epilog: exit $rc, expected 1"
	expect_jq "$out" ".ended_job == \"4242\" and .gpus[0].ended_job_pid == $A"
	# Inside the job (no epilog context) its own SLURM_JOB_ID is not an ended job.
	SLURM_JOB_ID=4242 gw check --nvml "$FAKE" >/dev/null || fail "inside the job: clean"
	# why names the job too.
	out=$(gw why --nvml "$FAKE" 0)
	expect_has "$out" "job 4242 of user root"
}

test_hostile_names_are_escaped_in_the_line() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --stop --comm $'\e]0;PWN\a'; A=$HPID
	wait_state "$A" T
	scenario "gpu 0 used_mib=1542" "proc gpu=0 pid=$A mib=1542"
	out=$(gw check --nvml "$FAKE"); [ $? -eq 1 ] || fail "expected 1"
	! grep -q $'\e' <<<"$out" || fail "raw escape byte in: $(cat -v <<<"$out")"
	! grep -q $'\a' <<<"$out" || fail "raw BEL byte in: $(cat -v <<<"$out")"
	[ "$(wc -l <<<"$out")" -eq 1 ] || fail "expected one line"
}

test_host_notes_are_reported_with_host_and_never_fail() {
	mkdevs
	mkdir -p "$TMP/shm"
	sh -c 'exit 0' & dead=$!; wait $dead
	head -c 100000000 /dev/zero >"$TMP/shm/sgl_shm_mm_${dead}_9f3a"
	export GPUWHO_SHM_ROOT="$TMP/shm"
	scenario "gpu 0"
	out=$(gw check --nvml "$FAKE"); rc=$?
	[ "$rc" -eq 0 ] && [ -z "$out" ] || fail "without --host: exit $rc, output: $out"
	out=$(gw check --nvml "$FAKE" --host); rc=$?
	[ "$rc" -eq 0 ] || fail "--host: exit $rc, expected 0"
	expect_has "$out" "host: "
	expect_has "$out" "/dev/shm"
}
run_tests
