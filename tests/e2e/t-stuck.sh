#!/usr/bin/env bash
# Holders stuck on their memory-map lock (issue 11, item 5). Each stuck process has one thread
# blocked inside the kernel on a FUSE file that never answers while it holds the map lock, and a
# writer queued behind it: from then on /proc/PID/cmdline and environ (and maps, on kernels that
# lock for it) block every reader, while /proc/PID/fd does not. gpuwho must still name them, from
# their fds, and the whole run must end within one time bound however many are stuck.
# Careful here: pgrep, pkill -f and ps read cmdline, and hang on these processes until the FUSE
# server is gone; stall_teardown kills it first.
. "$(dirname "$0")/lib.sh"

FS="$TESTBIN/fusestall"
FSPID="" STUCK=""

# stall_setup N TARGET: mounts the FUSE file system under $TMP/mnt and starts N processes that hold
# TARGET by fd and are stuck on their map lock; sets STUCK to their PIDs.
stall_setup() {
	local n=$1 target=$2 i p w
	need_root
	[ -x "$FS" ] || skip "no fusestall helper: libfuse3-dev was missing when the tests were built (scripts/install-deps installs it)"
	[ -c /dev/fuse ] || skip "no /dev/fuse: this kernel or container offers no FUSE"
	mkdir -p "$TMP/mnt"
	trap stall_teardown EXIT
	"$FS" serve "$TMP/mnt" >"$TMP/serve.log" 2>&1 </dev/null &
	FSPID=$!
	for i in $(seq 1 400); do grep -q mounted "$TMP/serve.log" && break; sleep 0.05; done
	grep -q mounted "$TMP/serve.log" || skip "cannot mount a FUSE file system here: $(tr '\n' ' ' <"$TMP/serve.log")"
	for i in $(seq 1 "$n"); do
		"$FS" hold "$target" "$TMP/mnt/stall" >"$TMP/hold$i.log" 2>&1 </dev/null &
		STUCK="$STUCK $!"
	done
	# Stuck means: the holder said "ready" (its reader holds the lock, blocked) and then its main thread
	# waits for the lock (state D). A D before "ready" proves nothing: a process starting up under load
	# is briefly in D paging its code in (CI once took that for stuck, and the next look saw S).
	i=1
	for p in $STUCK; do
		for w in $(seq 1 400); do
			grep -q ready "$TMP/hold$i.log" && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = D ] && break
			sleep 0.05
		done
		[ $w -lt 400 ] || fail "PID $p never got stuck: $(cat "$TMP/hold$i.log"; thread_states "$p")"
		i=$((i + 1))
	done
}

# thread_states PID: each thread's state and what it waits for in the kernel, for a failure message.
thread_states() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "thread ${t##*/}: state $(cut -d' ' -f3 "$t/stat" 2>/dev/null), waiting in $(cat "$t/wchan" 2>/dev/null)"
	done
}

# Ends the FUSE connection first (the blocked reads fail, the holders become killable), then the rest.
stall_teardown() {
	local p
	[ -n "$FSPID" ] && kill -9 "$FSPID" 2>/dev/null
	for p in $STUCK; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	umount -l "$TMP/mnt" 2>/dev/null
	teardown
}

# ms_since START_NS: milliseconds since START_NS (date +%s%N).
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

test_holders_stuck_on_their_map_lock_are_named_from_their_fds() {
	echo x >"$TMP/target"
	stall_setup 3 "$TMP/target"
	# The situation is the real one: cmdline blocks (bounded here by timeout).
	p=${STUCK# }; p=${p%% *}
	timeout 1 cat "/proc/$p/cmdline" >/dev/null 2>&1 && fail "cmdline of PID $p did not block: the stall is not reproduced"
	out=$(ASAN_OPTIONS=detect_leaks=0 timeout 30 "$GPUWHO" holders --timeout 1 "$TMP/target") || fail "exit $?: $out"
	for p in $STUCK; do
		expect_has "$out" "note: PID $p (fusestall) was found by its open fds, but reading /proc/$p/"
		grep -qE "^$p +[0-9]+ +root +D" <<<"$out" || fail "PID $p is not listed as a D-state holder: $out"
	done
	expect_not "$out" "No process holds"
	json=$(ASAN_OPTIONS=detect_leaks=0 timeout 30 "$GPUWHO" holders --json --timeout 1 "$TMP/target") || fail "json exit $?"
	expect_jq "$json" '.partial == 3 and (.holders | length) == 3 and (.timed_out | length) == 0'
	expect_jq "$json" '[.holders[] | .missing | test("found by its open fds")] | all'
	expect_jq "$json" '[.holders[] | .holds[0].how | index("fd")] | all'
}

test_many_stuck_holders_cost_one_time_bound_not_one_each() {
	echo x >"$TMP/target"
	stall_setup 12 "$TMP/target"
	# One thread and a 2 s bound: one bound per stuck process would take 24 s; one for all, 2 s and
	# the walk (wide margin: a loaded machine under ASan).
	start=$(date +%s%N)
	out=$(ASAN_OPTIONS=detect_leaks=0 timeout 60 "$GPUWHO" holders --threads 1 --timeout 2 "$TMP/target") || fail "exit $?: $out"
	ms=$(ms_since "$start")
	[ "$ms" -lt 12000 ] || fail "12 stuck holders took $ms ms with a 2 s bound"
	for p in $STUCK; do grep -qE "^$p " <<<"$out" || fail "PID $p missing: $out"; done
}

test_ps_names_a_stuck_gpu_holder_within_the_bound() {
	mkdevs
	stall_setup 8 "$TMP/dev/nvidia0"
	first=${STUCK# }; first=${first%% *}
	scenario "gpu 0 used_mib=9000" "proc gpu=0 pid=$first mib=8000"
	start=$(date +%s%N)
	json=$(GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" ASAN_OPTIONS=detect_leaks=0 \
		timeout 60 "$GPUWHO" ps --json --nvml "$TESTBIN/fake_nvml.so") || fail "exit $?"
	ms=$(ms_since "$start")
	[ "$ms" -lt 10000 ] || fail "ps took $ms ms with 8 stuck holders and the default 2 s bound (one bound each: 16 s)"
	for p in $STUCK; do
		expect_jq "$json" "[.gpus[0].processes[] | select(.pid == $p)] | length == 1"
	done
	expect_jq "$json" "[.gpus[0].processes[] | select(.pid == $first) | .used_bytes] == [8388608000]"
}

run_tests
