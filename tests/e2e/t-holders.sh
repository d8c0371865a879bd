#!/usr/bin/env bash
# End-to-end tests of `gpuwho holders` against real processes holding files in every way.
# Stand-in device nodes are made with mknod (1:7 is /dev/full, which few processes hold).
. "$(dirname "$0")/lib.sh"



test_fd_holder_is_listed_with_its_access_mode() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0"
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders | map(select(.pid == $HPID)) | length == 1"
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .holds[0].how == [\"fd\"] and .holds[0].access == \"rw\" and .holds[0].fds == 1"
	start_holder b --ro "$TMP/nvidia0"
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .holds[0].access == \"r\""
}

test_mapping_only_holder_is_found_after_the_fd_is_closed() {
	head -c 8192 /dev/zero >"$TMP/weights.bin"
	start_holder a --mmap "$TMP/weights.bin"
	[ -z "$(ls -l /proc/$HPID/fd | grep weights.bin)" ] || fail "helper still has an fd"
	out=$("$GPUWHO" holders --json "$TMP/weights.bin")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .holds[0].how == [\"mmap\"] and .holds[0].maps == 1"
	txt=$("$GPUWHO" holders "$TMP/weights.bin")
	expect_has "$txt" "holds $TMP/weights.bin by a memory mapping only"
}

test_zombie_leader_with_live_thread_is_found_where_fuser_sees_nothing() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0" --leader-exit --threads 2
	wait_state "$HPID" Z   # the leader's pthread_exit may end after the ready file is written
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .state == \"Z\" and (.holds[0].how | index(\"thread\")) and .holds[0].via_tid > $HPID"
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .cmdline[0] | endswith(\"holder\")"
	f=$(fuser "$TMP/nvidia0" 2>/dev/null)
	[[ " $f " != *" $HPID "* ]] || fail "fuser unexpectedly lists $HPID ($f)"
	txt=$("$GPUWHO" holders "$TMP/nvidia0")
	expect_has "$txt" "only through its live thread"
}

test_mknod_copy_of_a_device_is_matched_by_device_number() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	mkdir "$TMP/ctr" && mknod "$TMP/ctr/nvidia0" c 1 7
	start_holder a --open "$TMP/ctr/nvidia0"
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | (.holds[0].how | index(\"copy\")) and .holds[0].copy_path == \"$TMP/ctr/nvidia0\""
	f=$(fuser "$TMP/nvidia0" 2>/dev/null)
	[[ " $f " != *" $HPID "* ]] || fail "fuser unexpectedly lists $HPID ($f)"
}

test_child_that_inherited_fds_from_an_exited_parent_is_the_holder() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0" --fork-exit
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .holds[0].how == [\"fd\"]"
	ppid=$(ps -o ppid= -p "$HPID" | tr -d ' ')
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .ppid == $ppid"
}

test_stopped_holder_shows_state_T() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0" --stop
	wait_state "$HPID" T
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$out" ".holders[] | select(.pid == $HPID) | .state == \"T\""
}

test_process_in_child_pid_namespace_is_shown_with_both_pids() {
	need_root
	command -v unshare >/dev/null || skip "no unshare"
	mknod "$TMP/nvidia0" c 1 7
	spawn unshare -p -f --kill-child --mount-proc "$HOLD" "$TMP/ns.ready" --open "$TMP/nvidia0" >/dev/null 2>&1
	wait_file "$TMP/ns.ready"
	[ "$(cat "$TMP/ns.ready")" = 1 ] || fail "expected PID 1 inside the namespace"
	out=$("$GPUWHO" holders --json "$TMP/nvidia0")
	mine=".holders[] | select(.cmdline[1] == \"$TMP/ns.ready\")"
	expect_jq "$out" "[$mine] | length == 1"
	expect_jq "$out" "$mine | .nspid | length == 2 and .[1] == 1 and .[0] > 1"
}

test_scan_from_inside_a_pid_namespace_says_what_it_cannot_see() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0"
	out=$(unshare -p -f --kill-child --mount-proc "$GPUWHO" holders "$TMP/nvidia0")
	expect_has "$out" "No process holds $TMP/nvidia0"
	expect_has "$out" "PID namespace other than the host's"
	out=$("$GPUWHO" holders "$TMP/nvidia0")
	expect_not "$out" "PID namespace other than the host's"
}

test_bind_mounted_target_is_reported_as_a_mount_not_a_holder() {
	need_root
	command -v unshare >/dev/null || skip "no unshare"
	touch "$TMP/nvidia0"
	out=$(unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/full '$TMP/nvidia0' && '$GPUWHO' holders '$TMP/nvidia0'; echo ===; fuser -v '$TMP/nvidia0' 2>&1")
	gw=${out%%===*}
	fu=${out#*===}
	expect_has "$fu" "kernel mount"
	expect_has "$gw" "$TMP/nvidia0 is a mount point (bind mount of devtmpfs:/full) — NOT a holder"
	expect_has "$gw" "kernel mount"
	json=$(unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/full '$TMP/nvidia0' && '$GPUWHO' holders --json '$TMP/nvidia0'")
	expect_jq "$json" ".mounts | length == 1 and .[0].holder == false and .[0].fstype == \"devtmpfs\""
}

test_unprivileged_scan_counts_and_names_what_it_could_not_inspect() {
	need_root
	command -v setpriv >/dev/null || skip "no setpriv"
	mknod "$TMP/nvidia0" c 1 7
	chmod 755 "$TMP"
	start_holder a --open "$TMP/nvidia0" --comm rootjob
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$GPUWHO" holders "$TMP/nvidia0")
	expect_has "$out" "could not be inspected (permission denied); run as root"
	json=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$json" "[.not_inspected[] | select(.pid == $HPID)] | length == 1"
	expect_jq "$json" "[.not_inspected[] | select(.pid == 2)] | length == 0"   # kthreadd holds nothing
}

test_hostile_process_names_are_escaped() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0" --comm $'x)\n\e[31mevil'
	out=$("$GPUWHO" holders -v "$TMP/nvidia0")
	[[ "$out" != *$'\e'* ]] || fail "raw escape byte reached the output"
	expect_has "$out" 'x)\n\e[31mevil'
	json=$("$GPUWHO" holders --json "$TMP/nvidia0")
	expect_jq "$json" ".holders[] | select(.pid == $HPID) | .comm == \"x)\\n\\u001b[31mevil\" and .state == \"S\""
}

test_processes_starting_and_exiting_during_the_scan_cause_no_error() {
	need_root
	mknod "$TMP/nvidia0" c 1 7
	start_holder a --open "$TMP/nvidia0"
	( for i in $(seq 400); do "$HOLD" "$TMP/churn.ready" --open "$TMP/nvidia0" & sleep 0.002; kill -9 $! 2>/dev/null; done; wait ) >/dev/null 2>&1 &
	churn=$!
	for i in $(seq 10); do
		out=$("$GPUWHO" holders --json "$TMP/nvidia0" 2>"$TMP/err") || fail "exit $? on run $i"
		[ ! -s "$TMP/err" ] || fail "stderr: $(cat "$TMP/err")"
		expect_jq "$out" "[.holders[] | select(.pid == $HPID)] | length == 1"
	done
	kill "$churn" 2>/dev/null; wait "$churn" 2>/dev/null
	return 0
}

test_a_process_whose_maps_blocks_is_named_from_its_fds_or_skipped_within_the_bound() {
	# A stand-in /proc whose PIDs 4242 and 4244 have a maps file that blocks on open (a FIFO nobody
	# writes), like the maps of a process stuck in D state. 4242 holds the file by fd: its fds,
	# read first, name it. 4244 holds something else by fd, so only its maps could have told:
	# it is skipped, and said so. The scan goes on meanwhile (4243).
	mkdir -p "$TMP/proc/4242/fd" "$TMP/proc/4243/fd" "$TMP/proc/4244/fd"
	echo hello >"$TMP/file"
	ln -s "$TMP/file" "$TMP/proc/4242/fd/3"
	ln -s "$TMP/file" "$TMP/proc/4243/fd/3"
	ln -s /dev/null "$TMP/proc/4244/fd/3"
	mkfifo "$TMP/proc/4242/maps" "$TMP/proc/4244/maps"
	: >"$TMP/proc/4243/maps"
	printf '4243 (ok) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n' >"$TMP/proc/4243/stat"
	printf '4242 (stuck) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n' >"$TMP/proc/4242/stat"
	printf '4244 (other) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n' >"$TMP/proc/4244/stat"
	echo stuck >"$TMP/proc/4242/comm"
	echo other >"$TMP/proc/4244/comm"
	start=$(date +%s%N)
	out=$(GPUWHO_PROC_ROOT="$TMP/proc" timeout 20 "$GPUWHO" holders --timeout 0.5 "$TMP/file") || fail "exit $?"
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$ms" -lt 5000 ] || fail "took $ms ms"
	grep -qE "^4242 +1 .* D .*\(fd\) \[stuck\]" <<<"$out" || fail "4242 not listed as a holder: $out"
	expect_has "$out" "note: PID 4242 (stuck) was found by its open fds, but reading /proc/4242/maps took longer than 0.5 s (state D: uninterruptible sleep)"
	expect_has "$out" "skipped PID 4244 (other): reading /proc/4244/maps took longer than 0.5 s (state D: uninterruptible sleep)"
	expect_has "$out" "4243"
}

test_bad_usage_exits_2_and_missing_file_exits_3() {
	"$GPUWHO" holders --no-such-flag >/dev/null 2>"$TMP/err"; rc=$?
	[ $rc -eq 2 ] || fail "bad flag: exit $rc"
	expect_has "$(cat "$TMP/err")" "unknown option '--no-such-flag'"
	"$GPUWHO" holders --timeout -1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "negative timeout accepted"
	"$GPUWHO" holders --threads 100000 >/dev/null 2>&1; [ $? -eq 2 ] || fail "absurd thread count accepted"
	out=$("$GPUWHO" holders "$TMP/does-not-exist"); rc=$?
	[ $rc -eq 3 ] || fail "missing file: exit $rc"
	expect_has "$out" "cannot examine $TMP/does-not-exist: No such file or directory"
	"$GPUWHO" --help | grep -q holders || fail "--help does not list holders"
	"$GPUWHO" holders --help | grep -q "kernel mount" || fail "holders --help does not teach"
	"$GPUWHO" --version | grep -qE '^gpuwho [0-9]+\.[0-9]+' || fail "--version"
}

test_default_targets_on_a_host_without_nvidia_say_so() {
	mkdir -p "$TMP/dev" "$TMP/fakeproc"
	printf 'Character devices:\n  1 mem\n\nBlock devices:\n' >"$TMP/fakeproc/devices"
	out=$(GPUWHO_DEV_ROOT="$TMP/dev" "$GPUWHO" holders)
	expect_has "$out" "no NVIDIA device nodes in $TMP/dev"
}

test_a_hostile_path_nobody_holds_is_escaped_live_and_from_a_snapshot() {
	f="$TMP/x"$'\e]0;PWNED\a'
	: >"$f"
	out=$("$GPUWHO" holders "$f") || fail "exit $?"
	expect_has "$out" 'No process holds'
	expect_has "$out" '\e]0;PWNED\x07'
	expect_not "$out" $'\e'
	# A snapshot whose one target has that path (a snapshot is untrusted input).
	need_root
	mkdir -p "$TMP/dev" && mknod "$TMP/dev/nvidia0" c 1 7
	GPUWHO_DEV_ROOT="$TMP/dev" "$GPUWHO" snapshot --no-nvml -o "$TMP/s.json" || fail "snapshot: exit $?"
	jq --arg p "$f" '.scan.targets[0].path = $p | .scan.holders = []' "$TMP/s.json" >"$TMP/h.json" || fail "jq"
	out=$("$GPUWHO" holders --from "$TMP/h.json" 2>&1) || fail "holders --from: exit $?: $out"
	expect_has "$out" 'No process holds'
	expect_has "$out" '\e]0;PWNED\x07'
	expect_not "$out" $'\e'
}

run_tests
