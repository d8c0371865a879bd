#!/usr/bin/env bash
# End-to-end tests of `gpuwho free`: real process trees hold stand-in GPU nodes, the fake NVML's memory
# follows their lives (`live_only`), and free must signal exactly the processes it should — never a
# protected one, another user's, or a process that took a planned PID. --reset only ever runs a stub.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
MiB=1048576
# Memory that never comes back here (a stand-in GPU, a spared holder) need not be waited for 10 s.
export GPUWHO_FREE_SETTLE_S=2

# The selected GPU's stand-in must be a device nobody else on this host holds, since free signals its
# holders: nvidia0 is a copy of /dev/net/tun (10:200), not /dev/full, which other tests' holders use.
# nvidia1 (1:8, /dev/random) is never selected. nvidia-uvm, whose holders have a CUDA context, is
# /dev/urandom (1:9): only a process that also reaches a job or a selected GPU can be planned for it.
# Skips when anything else holds nvidia0.
mkdevs_free() {
	need_root
	mkdir -p "$TMP/dev"
	mknod -m 0666 "$TMP/dev/nvidia0" c 10 200
	mknod "$TMP/dev/nvidia1" c 1 8
	mknod "$TMP/dev/nvidiactl" c 1 5
	mknod -m 0666 "$TMP/dev/nvidia-uvm" c 1 9
	export GPUWHO_RESET_CMD="$TMP/reset-stub"   # never a real reset, whatever a test does
	printf '#!/bin/sh\necho "$*" >>"%s/reset.log"\n' "$TMP" >"$TMP/reset-stub"
	chmod +x "$TMP/reset-stub"
	local n
	n=$(GPUWHO_DEV_ROOT="$TMP/dev" "$GPUWHO" holders --json "$TMP/dev/nvidia0" | jq '.holders | length')
	[ "$n" = 0 ] || skip "another process holds 10:200 here; free would signal it"
}


alive() { kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
gone_within() {   # gone_within PID: waits up to 20 s for PID to be gone (or a zombie)
	local i
	for i in $(seq 400); do alive "$1" || return 0; sleep 0.05; done
	fail "PID $1 still alive"
}

test_dry_run_is_the_default_and_signals_nothing() {
	mkdevs_free
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario live_only "gpu 0 used_mib=2100" "gpu 1" "proc gpu=0 pid=$A mib=2000"
	out=$(gw free 0 --nvml "$FAKE"); rc=$?
	[ $rc -eq 0 ] || fail "dry run exit $rc"
	expect_has "$out" "Would signal 1 process"
	expect_has "$out" "should come back: 2,000 MiB"
	expect_has "$out" "Dry run: nothing was signalled."
	alive "$A" || fail "dry run killed $A"
	json=$(gw free 0 --nvml "$FAKE" --json)
	expect_jq "$json" ".schema == \"gpuwho.free\" and .dry_run == true"
	expect_jq "$json" ".processes[] | select(.pid == $A) | .signal == true and .role == \"holder\" and .used_bytes == 2000 * $MiB"
	expect_jq "$json" ".gpus[0].expected_back_bytes == 2000 * $MiB"
	alive "$A" || fail "dry run killed $A"
}

test_yes_terms_then_kills_continues_stopped_and_verifies_memory() {
	mkdevs_free
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	start_holder t --open "$TMP/dev/nvidia0" --ignore-term; T=$HPID
	start_holder s --open "$TMP/dev/nvidia0" --stop; S=$HPID
	wait_state "$S" T
	scenario live_only "gpu 0 used_mib=3100" "gpu 1" "proc gpu=0 pid=$A mib=1000" \
		"proc gpu=0 pid=$T mib=1000" "proc gpu=0 pid=$S mib=1000"
	json=$(gw free 0 --nvml "$FAKE" --yes --grace 1 --json); rc=$?
	[ $rc -eq 0 ] || { echo "$json" | head -c 3000 >&2; fail "exit $rc"; }
	expect_jq "$json" ".dry_run == false and .all_free == true"
	expect_jq "$json" ".processes[] | select(.pid == $A) | .result.outcome == \"exited_on_sigterm\""
	expect_jq "$json" ".processes[] | select(.pid == $T) | .result.outcome == \"exited_on_sigkill\""
	expect_jq "$json" ".processes[] | select(.pid == $S) | .result.outcome == \"exited_on_sigterm\" and .result.sent_sigcont == true and .stopped == true"
	expect_jq "$json" ".gpus[0].used_bytes == 3100 * $MiB and .gpus[0].after.used_bytes == 100 * $MiB and .gpus[0].after.free"
	for p in $A $T $S; do gone_within $p; done
}

test_zombie_leader_with_a_live_thread_is_freed() {
	mkdevs_free
	start_holder z --open "$TMP/dev/nvidia0" --leader-exit; Z=$HPID
	wait_state "$Z" Z
	scenario live_only "gpu 0 used_mib=2666" "gpu 1" "proc gpu=0 pid=$Z mib=2566"
	out=$(gw free 0 --nvml "$FAKE" --yes --grace 2); rc=$?
	[ $rc -eq 0 ] || { echo "$out" >&2; fail "exit $rc"; }
	expect_has "$out" "exited on SIGTERM"
	expect_has "$out" "1 of 1 GPU free"
	[ -d /proc/$Z/task ] && [ -n "$(ls /proc/$Z/task 2>/dev/null | grep -v "^$Z$")" ] && fail "threads of $Z live on"
	return 0
}

test_another_users_process_and_a_protected_daemon_are_never_signalled() {
	mkdevs_free
	command -v setpriv >/dev/null || skip "no setpriv"
	chmod 0777 "$TMP"   # before the spawn: nobody writes its ready file there
	spawn setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOLD" "$TMP/n.ready" --ro "$TMP/dev/nvidia0"
	N=$!
	wait_file "$TMP/n.ready"
	start_holder p --ro "$TMP/dev/nvidia0" --comm nvidia-persistenced; P=$HPID
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario live_only "gpu 0 used_mib=1600" "gpu 1" "proc gpu=0 pid=$N mib=500" "proc gpu=0 pid=$A mib=1000"
	json=$(gw free 0 --nvml "$FAKE" --yes --grace 1 --json); rc=$?
	[ $rc -eq 1 ] || fail "exit $rc, want 1: nobody's memory stays"
	expect_jq "$json" ".processes[] | select(.pid == $N) | .signal == false and .skip == \"other_user\" and (.skip_why | test(\"--all-users\"))"
	expect_jq "$json" ".processes[] | select(.pid == $P) | .signal == false and .skip == \"protected\""
	expect_jq "$json" ".processes[] | select(.pid == $A) | .result.outcome == \"exited_on_sigterm\""
	expect_jq "$json" ".all_free == false and (.gpus[0].after.memory_holders | index($N))"
	alive "$N" || fail "another user's process was signalled"
	alive "$P" || fail "the protected daemon was signalled"
	gone_within "$A"
	# --reset refuses while a process still holds the GPU; the stub is not run.
	out=$(gw free 0 --nvml "$FAKE" --yes --grace 0 --reset); rc=$?
	[ $rc -eq 1 ] || fail "reset with holders: exit $rc"
	expect_has "$out" "reset not run"
	[ ! -e "$TMP/reset.log" ] || fail "reset stub ran with holders left: $(cat "$TMP/reset.log")"
	alive "$N" && alive "$P" || fail "a spared process died"
}

test_reset_runs_the_configured_command_once_nothing_holds_the_gpu() {
	mkdevs_free
	start_holder a --open "$TMP/dev/nvidia0"; A=$HPID
	scenario live_only "gpu 0 used_mib=1100" "gpu 1" "proc gpu=0 pid=$A mib=1000"
	out=$(gw free 0 --nvml "$FAKE" --yes --grace 1 --reset); rc=$?
	[ $rc -eq 0 ] || { echo "$out" >&2; fail "exit $rc"; }
	[ "$(cat "$TMP/reset.log")" = "--gpu-reset -i 0" ] || fail "stub argv: $(cat "$TMP/reset.log" 2>&1)"
	expect_has "$out" "reset: $TMP/reset-stub --gpu-reset -i 0 succeeded"
	# A failing reset command is a failure of free.
	printf '#!/bin/sh\nexit 3\n' >"$TMP/reset-stub"
	gw free 0 --nvml "$FAKE" --yes --reset >/dev/null 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "failed reset: exit $rc"
}

test_shm_removes_only_unheld_segments_of_dead_creators_and_only_with_yes() {
	mkdevs_free
	mkdir -p "$TMP/shm"
	sh -c 'exit 0' & dead=$!; wait $dead
	head -c 65536 /dev/zero >"$TMP/shm/torch_${dead}_1_42"        # creator dead, nobody holds it
	head -c 65536 /dev/zero >"$TMP/shm/psm_${dead}_kv"            # the same, SGLang's name
	head -c 65536 /dev/zero >"$TMP/shm/torch_${dead}_2_43"        # creator dead, but held by fd
	head -c 65536 /dev/zero >"$TMP/shm/torch_$$_1_44"             # creator alive (this shell)
	head -c 65536 /dev/zero >"$TMP/shm/unrelated"                 # no creator in its name
	start_holder h --ro "$TMP/shm/torch_${dead}_2_43"
	scenario live_only "gpu 0 used_mib=10" "gpu 1"
	export GPUWHO_SHM_ROOT="$TMP/shm"
	out=$(gw free 0 --nvml "$FAKE" --shm) || fail "dry run: exit $?"
	[ -e "$TMP/shm/torch_${dead}_1_42" ] || fail "the dry run removed a segment"
	expect_has "$out" "torch_${dead}_1_42"
	gw free 0 --nvml "$FAKE" --shm --yes >/dev/null || fail "--yes: exit $?"
	[ ! -e "$TMP/shm/torch_${dead}_1_42" ] || fail "orphan torch segment still there"
	[ ! -e "$TMP/shm/psm_${dead}_kv" ] || fail "orphan psm segment still there"
	for f in "torch_${dead}_2_43" "torch_$$_1_44" unrelated; do
		[ -e "$TMP/shm/$f" ] || fail "$f was removed"
	done
}

test_yes_with_from_is_refused_and_signals_nothing() {
	# A snapshot's PIDs are history: acting on them could hit whoever has the PIDs now. The checks a
	# live --yes makes right before each signal (start time, owner, name, still holding the GPU) are
	# pinned by tests/unit/test_free_act.c with real processes.
	mkdevs_free
	start_holder a --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidia-uvm"; A=$HPID
	scenario live_only "gpu 0 used_mib=2100" "gpu 1" "proc gpu=0 pid=$A mib=2000"
	gw snapshot --nvml "$FAKE" -o "$TMP/snap.json" || fail "snapshot: exit $?"
	out=$(gw free 0 --nvml "$FAKE" --from "$TMP/snap.json" --yes --grace 1 2>&1); rc=$?
	[ $rc -eq 2 ] || fail "exit $rc, want 2: $out"
	expect_has "$out" "refusing --yes with --from"
	alive "$A" || fail "PID $A was signalled"
	json=$(gw free 0 --nvml "$FAKE" --from "$TMP/snap.json" --json) || fail "dry run from a snapshot: exit $?"
	expect_jq "$json" ".dry_run == true and ([.processes[] | select(.pid == $A and .signal)] | length == 1)"
}

test_a_snapshot_cannot_point_shm_removal_outside_its_folder() {
	mkdevs_free
	mkdir -p "$TMP/shm" "$TMP/victim"
	sh -c 'exit 0' & dead=$!; wait $dead
	head -c 4096 /dev/zero >"$TMP/shm/torch_${dead}_1_1"
	echo precious >"$TMP/victim/data"
	export GPUWHO_SHM_ROOT="$TMP/shm"
	scenario live_only "gpu 0 used_mib=10" "gpu 1"
	gw snapshot --nvml "$FAKE" -o "$TMP/snap.json" || fail "snapshot: exit $?"
	jq '(.shm.segments[] | select(.name | startswith("torch_")) | .name) = "../victim/data"' "$TMP/snap.json" >"$TMP/evil.json"
	gw free 0 --nvml "$FAKE" --from "$TMP/evil.json" --shm >/dev/null 2>"$TMP/err"; rc=$?
	[ $rc -eq 3 ] || fail "exit $rc"
	expect_has "$(cat "$TMP/err")" "name: not a file name in /dev/shm"
	[ -e "$TMP/victim/data" ] || fail "the file outside the shm folder was removed"
}

test_a_launcher_and_its_workers_go_together() {
	mkdevs_free
	spawn sh -c "'$HOLD' '$TMP/w1.ready' --open '$TMP/dev/nvidia0' & '$HOLD' '$TMP/w2.ready' --open '$TMP/dev/nvidia0' & wait"
	L=$!
	wait_file "$TMP/w1.ready"; wait_file "$TMP/w2.ready"
	W1=$(cat "$TMP/w1.ready"); W2=$(cat "$TMP/w2.ready")
	scenario live_only "gpu 0 used_mib=2100" "gpu 1" "proc gpu=0 pid=$W1 mib=1000" "proc gpu=0 pid=$W2 mib=1000"
	json=$(gw free 0 --nvml "$FAKE" --json)
	expect_jq "$json" ".processes[] | select(.pid == $L) | .role == \"launcher\" and .signal"
	expect_jq "$json" ".processes[] | select(.pid == $W1) | .job_root == $L"
	gw free 0 --nvml "$FAKE" --yes --grace 2 >/dev/null || fail "exit $?"
	for p in $L $W1 $W2; do gone_within $p; done
}

test_workers_reparented_after_the_launcher_was_killed_are_freed() {
	mkdevs_free
	spawn sh -c "'$HOLD' '$TMP/w1.ready' --open '$TMP/dev/nvidia0' & '$HOLD' '$TMP/w2.ready' --open '$TMP/dev/nvidia0' & wait"
	L=$!
	wait_file "$TMP/w1.ready"; wait_file "$TMP/w2.ready"
	W1=$(cat "$TMP/w1.ready"); W2=$(cat "$TMP/w2.ready")
	SPAWNED="$SPAWNED $W1 $W2"
	kill -9 $L; wait $L 2>/dev/null
	scenario live_only "gpu 0 used_mib=2100" "gpu 1" "proc gpu=0 pid=$W1 mib=1000" "proc gpu=0 pid=$W2 mib=1000"
	out=$(gw free 0 --nvml "$FAKE" --yes --grace 2) || fail "exit $?: $out"
	for p in $W1 $W2; do gone_within $p; done
	alive 1 || fail "PID 1?"
}

test_usage_errors_exit_2() {
	mkdevs_free
	scenario "gpu 0" "gpu 1"
	gw free --nvml "$FAKE" 2>"$TMP/err"; rc=$?
	[ $rc -eq 2 ] || fail "no GPU: exit $rc"
	expect_has "$(cat "$TMP/err")" "name the GPUs to free"
	gw free 0 --grace 3601 --nvml "$FAKE" 2>"$TMP/err"; [ $? -eq 2 ] || fail "--grace 3601 accepted"
	expect_has "$(cat "$TMP/err")" "--grace wants whole seconds from 0 to 3600"
	gw free 0 --grace -1 --nvml "$FAKE" 2>/dev/null; [ $? -eq 2 ] || fail "--grace -1 accepted"
	gw free 7 --nvml "$FAKE" 2>"$TMP/err"; [ $? -eq 2 ] || fail "unknown GPU accepted"
	expect_has "$(cat "$TMP/err")" "no GPU matches '7'"
	"$GPUWHO" free --help | grep -q -- "--all-users" || fail "--help"
}

test_an_nvml_listed_pid_that_holds_no_gpu_file_is_never_signalled() {
	# What a reused PID looks like: NVML still names it, with memory, but the process there now (a
	# copy of sleep named sshd) holds no NVIDIA file. It must survive --yes; the real holder must not.
	mkdevs_free
	cp "$(command -v sleep)" "$TMP/sshd"
	spawn "$TMP/sshd" 1000; V=$!
	start_holder a --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidia-uvm"; A=$HPID
	scenario live_only "gpu 0 used_mib=3100" "gpu 1" "proc gpu=0 pid=$A mib=2000" "proc gpu=0 pid=$V mib=1000"
	json=$(gw free 0 --nvml "$FAKE" --json)
	expect_jq "$json" ".processes[] | select(.pid == $V) | .signal == false and .skip == \"no_evidence\""
	expect_jq "$json" ".processes[] | select(.pid == $A) | .signal and (.evidence | index(\"holds $TMP/dev/nvidia0 (fd)\"))"
	json=$(gw free 0 --nvml "$FAKE" --yes --grace 1 --json); rc=$?
	[ $rc -eq 1 ] || fail "exit $rc, want 1 (the 1,000 MiB NVML gives to $V stay)"
	gone_within "$A"
	alive "$V" || fail "PID $V ($TMP/sshd), which holds no GPU file, was signalled"
}

test_monitors_and_mps_daemons_are_spared_while_the_heir_in_the_exited_pids_group_is_ended() {
	# The creator (a session and group leader, as a launcher started by setsid is) forks an heir and
	# exits; the driver keeps listing the creator's PID. The heir holds the node through fds it
	# inherited and is in the creator's process group. Next to it: an nvitop-like, a sleep and an
	# NVML client that hold the node without a CUDA context, and MPS-like daemons. Only the heir may
	# be ended.
	mkdevs_free
	command -v setsid >/dev/null || skip "no setsid"
	spawn setsid "$HOLD" "$TMP/h.ready" --open "$TMP/dev/nvidia0" --fork-exit; C=$!
	wait_file "$TMP/h.ready"; H=$(cat "$TMP/h.ready"); SPAWNED="$SPAWNED $H"
	[ "$(awk '{print $5}' /proc/$H/stat)" = "$C" ] || fail "the heir is not in the creator's process group"
	start_holder m --ro "$TMP/dev/nvidia0" --comm nvitop; M=$HPID
	start_holder s --ro "$TMP/dev/nvidia0" --comm sleep; S=$HPID
	# An NVML client (an exporter in Python) holds the node and nvidia-uvm by fd, maps neither.
	start_holder n --ro "$TMP/dev/nvidia0" --ro "$TMP/dev/nvidia-uvm" --comm python3; N=$HPID
	start_holder c --open "$TMP/dev/nvidia0" --comm nvidia-cuda-mps; D=$HPID
	start_holder v --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidia-uvm" --comm nvidia-cuda-mps; V=$HPID
	scenario live_only "gpu 0 used_mib=3700" "gpu 1" "proc gpu=0 pid=$C mib=3590 held_by=$H" "proc gpu=0 pid=$V mib=66"
	json=$(gw free 0 --nvml "$FAKE" --json)
	expect_jq "$json" ".processes[] | select(.pid == $H) | .signal and (.evidence | map(test(\"pgid $C\")) | any)"
	expect_jq "$json" ".processes[] | select(.pid == $M) | .skip == \"protected\""
	expect_jq "$json" ".processes[] | select(.pid == $S) | .skip == \"monitor\" and (.skip_why | test(\"--include $S\"))"
	expect_jq "$json" ".processes[] | select(.pid == $N) | .skip == \"monitor\""
	expect_jq "$json" ".processes[] | select(.pid == $D) | .skip == \"protected\""
	expect_jq "$json" ".processes[] | select(.pid == $V) | .skip == \"protected\""
	gw free 0 --nvml "$FAKE" --yes --grace 1 >/dev/null
	gone_within "$H"
	for p in $M $S $N $D $V; do alive "$p" || fail "PID $p was signalled"; done
	# Named by PID, a monitor is signalled after all.
	json=$(gw free 0 --nvml "$FAKE" --include "$S" --json)
	expect_jq "$json" ".processes[] | select(.pid == $S) | .signal"
}

run_tests
