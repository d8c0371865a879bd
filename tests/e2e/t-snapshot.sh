#!/usr/bin/env bash
# End-to-end tests of `gpuwho snapshot` and `--from`: real processes hold mknod'ed stand-ins of the
# NVIDIA nodes (GPUWHO_DEV_ROOT) and files of a stand-in /dev/shm (GPUWHO_SHM_ROOT); the fake
# libnvidia-ml reports memory for them. A snapshot must replay to the same output as the live host,
# survive a round trip unchanged, hide what --redact promises to hide, and broken files must fail
# with exit 3 and one line saying what is wrong.
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8
FAKE="$TESTBIN/fake_nvml.so"
MiB=1048576

mkdevs() {
	need_root
	mkdir -p "$TMP/dev" "$TMP/shm"
	mknod "$TMP/dev/nvidia0" c 1 7
	mknod "$TMP/dev/nvidia1" c 1 8
	mknod "$TMP/dev/nvidiactl" c 1 5
}

scenario() { printf '%s\n' "$@" >"$TMP/scenario"; }

# gw ARGS...: gpuwho with the stand-in /dev, /dev/shm and the fake NVML.
gw() { GPUWHO_DEV_ROOT="$TMP/dev" GPUWHO_SHM_ROOT="$TMP/shm" FAKE_NVML_SCENARIO="$TMP/scenario" \
	GPUWHO_NVML="$FAKE" "$GPUWHO" "$@"; }

# A stable scenario: two holders of GPU 0 with memory, one of nvidiactl only.
setup_scene() {
	mkdevs
	start_holder a --open "$TMP/dev/nvidia0" --open "$TMP/dev/nvidiactl"; A=$HPID
	start_holder b --open "$TMP/dev/nvidia0" --threads 2; B=$HPID
	start_holder c --ro "$TMP/dev/nvidia1" --comm monitor; C=$HPID
	scenario "gpu 0 used_mib=4000 name=\"NVIDIA H200\"" "gpu 1 used_mib=10" \
		"proc gpu=0 pid=$A mib=1000" "proc gpu=0 pid=$B mib=2000"
}

test_snapshot_records_holders_nvml_memory_and_ancestors() {
	setup_scene
	gw snapshot -o "$TMP/s.json" || fail "exit $?"
	s=$(cat "$TMP/s.json")
	expect_jq "$s" '.schema == "gpuwho.snapshot" and .schema_version == 1 and .redacted == false'
	expect_jq "$s" "[.scan.holders[].pid] | index($A) and index($B) and index($C)"
	expect_jq "$s" ".scan.holders[] | select(.pid == $A) | .cmdline[1] == \"$TMP/a.ready\" and (.holds | length) == 2"
	expect_jq "$s" ".scan.holders[] | select(.pid == $B) | .threads == 3 and .vm_rss_kb > 0"
	expect_jq "$s" '.nvml.loaded and .nvml.gpus[0].mem_used == 4000 * 1048576 and .nvml.gpus[0].name == "NVIDIA H200"'
	expect_jq "$s" '.resample.delay_s >= 0.5 and .resample.used_bytes[0] == 4000 * 1048576'
	expect_jq "$s" '.memory.total_bytes > 0 and .host_pid_namespace == true and .self.pid > 0'
	# The holders' parent (this test's shell) and its ancestors up to PID 1 are in `others`, with
	# command lines (read under the holder engine's time bound).
	expect_jq "$s" "[.others[].pid] | index($$) and index(1)"
	expect_jq "$s" ".others[] | select(.pid == $$) | (.cmdline | length) > 0"
	expect_jq "$s" '[.others[].pid] == ([.others[].pid] | sort) and ([.others[].pid] | unique | length) == (.others | length)'
	[ "$(stat -c %a "$TMP/s.json")" = 600 ] || fail "mode $(stat -c %a "$TMP/s.json"), want 600"
	ls "$TMP"/s.json.tmp.* 2>/dev/null && fail "temporary file left behind"
	return 0
}

test_round_trip_is_lossless() {
	setup_scene
	gw snapshot -o "$TMP/s.json" || fail "exit $?"
	gw snapshot --from "$TMP/s.json" -o "$TMP/again.json" || fail "exit $?"
	cmp "$TMP/s.json" "$TMP/again.json" || fail "a round trip changed the snapshot"
	gw snapshot --from "$TMP/s.json" --redact -o "$TMP/r.json" || fail "exit $?"
	gw snapshot --from "$TMP/r.json" >"$TMP/r2.json" || fail "exit $?"
	cmp "$TMP/r.json" "$TMP/r2.json" || fail "a round trip changed the redacted snapshot"
	# The host as it is, without the fake NVML or stand-ins: whatever runs here round-trips too.
	"$GPUWHO" snapshot --no-nvml -o "$TMP/host.json" || fail "exit $?"
	"$GPUWHO" snapshot --from "$TMP/host.json" -o "$TMP/host2.json" || fail "exit $?"
	cmp "$TMP/host.json" "$TMP/host2.json" || fail "a round trip changed the live host's snapshot"
}

# same_live_and_replay CMD [ARGS...]: `gw CMD` (text and --json) and `gw CMD --from` a snapshot taken
# between them print the same. Other test suites running at the same time may hold the same stand-in
# devices (/dev/full, /dev/random) and come and go between two runs: up to 5 attempts, one must match.
# `scanned` (and holders' `vanished`) count the processes of the moment: two runs differ by design.
same_live_and_replay() {
	local i
	for i in 1 2 3 4 5; do
		gw "$@" >"$TMP/live.txt" || fail "exit $?"
		gw "$@" --json >"$TMP/live.json" || fail "exit $?"
		gw snapshot -o "$TMP/s.json" || fail "exit $?"
		gw "$@" --from "$TMP/s.json" >"$TMP/replay.txt" || fail "exit $?"
		gw "$@" --from "$TMP/s.json" --json >"$TMP/replay.json" || fail "exit $?"
		diff "$TMP/live.txt" "$TMP/replay.txt" >"$TMP/diff" &&
			diff <(jq 'del(.scanned, .vanished)' "$TMP/live.json") \
				<(jq 'del(.scanned, .vanished)' "$TMP/replay.json") >>"$TMP/diff" && return 0
		sleep 0.2
	done
	cat "$TMP/diff" >&2
	fail "$* live and replayed differ"
}

test_ps_from_a_snapshot_prints_what_live_ps_prints() {
	setup_scene
	same_live_and_replay ps
	expect_has "$(cat "$TMP/replay.txt")" "GPU 0  NVIDIA H200  4,000 / 81,920 MiB used"
	# Selectors work on a replay too, and an unknown one is still a usage error.
	out=$(gw ps --from "$TMP/s.json" 1) || fail "exit $?"
	expect_not "$out" "GPU 0 "
	gw ps --from "$TMP/s.json" 7 2>/dev/null; [ $? -eq 2 ] || fail "unknown selector on a replay: want exit 2"
}

test_holders_from_a_snapshot_prints_what_live_holders_prints() {
	setup_scene
	same_live_and_replay holders
	# With PATHs: only those targets, with the holders live holders finds (the snapshot knows more
	# of the target itself: discovery named the stand-in GPU 1, a bare path is just a file).
	gw holders --from "$TMP/s.json" "$TMP/dev/nvidia1" --json >"$TMP/replay1.json" || fail "exit $?"
	expect_jq "$(cat "$TMP/replay1.json")" "[.targets[].path] == [\"$TMP/dev/nvidia1\"]"
	expect_jq "$(cat "$TMP/replay1.json")" "[.holders[].pid] | index($C) and (index($A) | not)"
	expect_jq "$(cat "$TMP/replay1.json")" "[.holders[].pid] == ([.holders[].pid] | sort)"
	out=$(gw holders --from "$TMP/s.json" nvidia1 --json) || fail "short name: exit $?"
	expect_jq "$out" "[.targets[].path] == [\"$TMP/dev/nvidia1\"]"
	err=$(gw holders --from "$TMP/s.json" /etc/passwd 2>&1 >/dev/null); rc=$?
	[ $rc -eq 2 ] || fail "a path the snapshot lacks: exit $rc, want 2"
	expect_has "$err" "/etc/passwd"
}

test_redact_hides_command_lines_users_cgroups_and_host_name() {
	setup_scene
	gw snapshot --redact -o "$TMP/r.json" || fail "exit $?"
	expect_not "$(cat "$TMP/r.json")" "$TMP/a.ready"
	expect_not "$(cat "$TMP/r.json")" "\"root\""
	r=$(cat "$TMP/r.json")
	expect_jq "$r" '.redacted == true and .hostname == "<redacted>"'
	expect_jq "$r" ".scan.holders[] | select(.pid == $A) | .cmdline == [\"holder\", \"<redacted>\"] and .user == \"user0\""
	expect_jq "$r" '[.scan.holders[], .others[] | .cgroup | select(. != null and . != "<redacted>")] == []'
	# Still a snapshot: ps replays it.
	out=$(gw ps --from "$TMP/r.json") || fail "exit $?"
	expect_has "$out" "user0"
	expect_not "$out" "$TMP/a.ready"
}

test_broken_snapshots_exit_3_and_say_what_is_wrong() {
	setup_scene
	gw snapshot -o "$TMP/s.json" || fail "exit $?"
	check() {   # check FILE NEEDLE: ps and holders --from FILE exit 3 with NEEDLE on stderr
		local cmd err rc
		for cmd in ps holders snapshot; do
			err=$(gw $cmd --from "$1" 2>&1 >/dev/null); rc=$?
			[ $rc -eq 3 ] || fail "$cmd --from $1: exit $rc, want 3"
			expect_has "$err" "$2"
			[ "$(wc -l <<<"$err")" -eq 1 ] || fail "more than one line: $err"
		done
	}
	head -c 300 "$TMP/s.json" >"$TMP/trunc.json"
	check "$TMP/trunc.json" "not valid JSON: line "
	echo 'hello' >"$TMP/text.json"
	check "$TMP/text.json" "not valid JSON: line 1"
	: >"$TMP/empty.json"
	check "$TMP/empty.json" "empty"
	jq '.schema = "gpuwho.ps"' "$TMP/s.json" >"$TMP/schema.json"
	check "$TMP/schema.json" "not a gpuwho snapshot"
	jq '.schema_version = 7' "$TMP/s.json" >"$TMP/future.json"
	check "$TMP/future.json" "schema_version 7 is newer than this gpuwho understands (1)"
	jq '.scan.holders[0].pid = "12"' "$TMP/s.json" >"$TMP/type.json"
	check "$TMP/type.json" "scan.holders[0].pid: expected an integer, found a string"
	jq '.nvml.gpus[0].mem_used = -5' "$TMP/s.json" >"$TMP/neg.json"
	check "$TMP/neg.json" "nvml.gpus[0].mem_used: -5 is out of range"
	jq '.scan.holders[0].holds[0].target = 99' "$TMP/s.json" >"$TMP/idx.json"
	check "$TMP/idx.json" "scan.holders[0].holds[0].target: 99 is out of range"
	check "$TMP/nonexistent.json" "cannot read $TMP/nonexistent.json: No such file or directory"
	check "$TMP" "cannot read $TMP"
}

test_shm_segments_with_their_holders_and_creators() {
	setup_scene
	dd if=/dev/zero of="$TMP/shm/by_fd" bs=4096 count=2 status=none
	dd if=/dev/zero of="$TMP/shm/by_map" bs=4096 count=1 status=none
	sh -c 'exit 0' & dead=$!; wait $dead
	kill -0 "$dead" 2>/dev/null && skip "pid $dead reused already"
	dd if=/dev/zero of="$TMP/shm/torch_${dead}_1" bs=4096 count=4 status=none
	truncate -s 1M "$TMP/shm/psm_1a2b3c4d"
	: >"$TMP/shm/sem.mp-x1"
	mkdir "$TMP/shm/subdir"
	start_holder f --open "$TMP/shm/by_fd"; F=$HPID
	start_holder m --mmap "$TMP/shm/by_map"; M=$HPID
	dd if=/dev/zero of="$TMP/shm/torch_${F}_2" bs=4096 count=1 status=none
	gw snapshot -o "$TMP/s.json" || fail "exit $?"
	s=$(cat "$TMP/s.json")
	expect_jq "$s" '[.shm.segments[].name] == ["by_fd", "by_map", "psm_1a2b3c4d", "sem.mp-x1", "torch_'"$dead"'_1", "torch_'"$F"'_2"]'
	expect_jq "$s" ".shm.segments[] | select(.name == \"by_fd\") | .holders == [$F] and .size == 8192 and .bytes == 8192 and .uid == 0 and .creator_pid == 0 and .origin == null"
	expect_jq "$s" ".shm.segments[] | select(.name == \"by_map\") | .holders == [$M]"
	expect_jq "$s" ".shm.segments[] | select(.name == \"torch_${dead}_1\") | .holders == [] and .creator_pid == $dead and .creator_alive == false and .origin == \"pytorch\" and .bytes == 16384"
	expect_jq "$s" ".shm.segments[] | select(.name == \"torch_${F}_2\") | .creator_pid == $F and .creator_alive == true"
	expect_jq "$s" '.shm.segments[] | select(.name == "psm_1a2b3c4d") | .creator_pid == 0 and .origin == "python" and .size == 1048576 and .bytes == 0'
	expect_jq "$s" '.shm.segments[] | select(.name == "sem.mp-x1") | .origin == "semaphore"'
	# Holders of segments only are not NVIDIA holders, but their facts are kept in `others`.
	expect_jq "$s" "([.scan.holders[].pid] | index($F) | not) and ([.others[].pid] | index($F) and index($M))"
	expect_jq "$s" ".others[] | select(.pid == $M) | .cmdline[2] == \"--mmap\""
	# An unreadable /dev/shm is recorded, not fatal.
	s=$(GPUWHO_SHM_ROOT="$TMP/nonexistent" "$GPUWHO" snapshot --no-nvml) || fail "exit $?"
	expect_jq "$s" ".shm.error == \"cannot list $TMP/nonexistent: No such file or directory\" and .shm.segments == []"
}

run_tests
