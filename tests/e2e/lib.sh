# lib.sh: a tiny harness for end-to-end tests that run the real gpuwho binary against real processes.
# A test file defines functions named test_*; `run_tests` runs each in its own subshell and prints
# "ok - NAME", "not ok - NAME" (with the failing check and its output) or "skip - NAME: REASON".
# Processes a test starts with `spawn` are killed when the test ends, whatever happens.
set -u
: "${GPUWHO:?run through tests/run or make check}"
: "${TESTBIN:?}"
HOLD="$TESTBIN/holder"
# gpuwho writes ASCII stand-ins for its few non-ASCII signs outside a UTF-8 locale (render/ascii.c);
# tests expect the UTF-8 texts unless they set another locale for one command.
export LC_ALL=C.UTF-8

# Starts a command in the background, remembers its pid in $! and for teardown.
spawn() {
	"$@" &
	SPAWNED="${SPAWNED:-} $!"
}

# start_holder NAME ARGS...: runs tests/helpers/holder.c with ARGS, waits until it is ready, and
# sets $HPID (the process that holds: with --fork-exit the child) and $LPID (the process started).
start_holder() {
	local ready="$TMP/$1.ready" log="$TMP/$1.log"; shift
	spawn "$HOLD" "$ready" "$@" >"$log" 2>&1 </dev/null
	LPID=$!
	wait_file "$ready"
	HPID=$(cat "$ready")
	SPAWNED="$SPAWNED $HPID"   # a forked child outlives the parent spawn saw
}

# Waits until FILE exists (a helper writes it when ready); fails the test after 10 s.
wait_file() {
	local i
	for i in $(seq 1 200); do [ -s "$1" ] && return 0; sleep 0.05; done
	fail "timed out waiting for $1"
}

# wait_state PID STATE: waits until PID's state (the letter /proc/PID/stat shows: Z, T, ...) is STATE;
# fails the test after 20 s. Only for states a process stays in (zombie, stopped), not transient ones.
wait_state() {
	local i st
	for i in $(seq 1 400); do
		st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
		[ "$st" = "$2" ] && return 0
		sleep 0.05
	done
	fail "PID $1 never reached state $2 (state: ${st:-gone})"
}

# wait_exec PID COMM FD: waits until PID has exec'd COMM and holds fd FD (a `bash -c "exec N<>...;
# exec -a NAME COMM"` stand-in: its command line names NAME before the exec already, so that is no
# sign); fails the test after 20 s.
wait_exec() {
	local i
	for i in $(seq 1 400); do
		[ -e "/proc/$1/fd/$3" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.05
	done
	fail "PID $1 never ran $2 with fd $3 open"
}

fail() {
	echo "    FAILED: $*" >&2
	exit 1
}

# expect_has TEXT NEEDLE: TEXT contains NEEDLE (fixed string).
expect_has() {
	grep -qF -- "$2" <<<"$1" || { printf '%s\n' "$1" | sed 's/^/    | /' >&2; fail "expected to find: $2"; }
}
expect_not() {
	! grep -qF -- "$2" <<<"$1" || { printf '%s\n' "$1" | sed 's/^/    | /' >&2; fail "expected not to find: $2"; }
}
# expect_jq JSON FILTER: the jq filter (with `--argjson`-free syntax) evaluates to true.
expect_jq() {
	local r
	# jq 1.6 (Debian 12) exits 0 under -e when its input is empty: no output must not pass a check.
	[ -n "${1//[[:space:]]/}" ] || fail "jq: no JSON to test against $2"
	r=$(jq -e "$2" <<<"$1" 2>&1) || { printf '%s\n' "$1" | head -c 4000 | sed 's/^/    | /' >&2; fail "jq: $2 -> $r"; }
}

teardown() {
	local p
	for p in ${SPAWNED:-}; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	# Whatever a test started that mentions its folder (forked children, churn) goes too.
	# pkill reads every process's cmdline, which blocks on a process stuck on its memory-map lock (another
	# suite's, on a shared machine): bounded, so teardown never hangs.
	[ -n "${TMP:-}" ] && { timeout 10 pkill -9 -f -- "$TMP" 2>/dev/null; umount -R "$TMP" 2>/dev/null; rm -rf "$TMP"; }
	return 0
}

run_tests() {
	local t out rc reason
	for t in $(declare -F | awk '{print $3}' | grep '^test_'); do
		out=$( (
			TMP=$(mktemp -d /tmp/gpuwho-test.XXXXXX)
			SPAWNED=""
			trap teardown EXIT
			"$t"
		) 2>&1 )
		rc=$?
		if [ $rc -eq 0 ]; then
			echo "ok - ${t#test_}"
		elif [ $rc -eq 77 ]; then
			# One line, "skip - NAME: REASON" (tests/run reads the reason); what else the test printed follows, indented.
			reason=$(sed -n 's/^SKIP: //p' <<<"$out" | tail -1)
			echo "skip - ${t#test_}: ${reason:-exit 77 without a reason}"
			grep -v '^SKIP: ' <<<"$out" | grep . | sed 's/^/  /'
		else
			echo "not ok - ${t#test_}"
			printf '%s\n' "$out" | sed 's/^/  /'
		fi
	done
}

# skip REASON: ends the test as skipped (exit 77), e.g. when not root. REASON is one line; tests/run
# counts some skips as failures when it runs as root (see the rule at its top): "needs root", "no TOOL".
skip() {
	echo "SKIP: $*"
	exit 77
}

# need_root: skips the test unless running as root (mknod, namespaces, other users).
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }

# GPU stand-ins for ps/why/free tests: under $TMP/dev (GPUWHO_DEV_ROOT, where nvidiaN counts as GPU N by
# name), nodes with device numbers few processes hold: nvidia0 = 1:7 (/dev/full), nvidia1 = 1:8
# (/dev/random), nvidiactl = 1:5 (/dev/zero).
mkdevs() {
	need_root
	mkdir -p "$TMP/dev"
	mknod "$TMP/dev/nvidia0" c 1 7
	mknod "$TMP/dev/nvidia1" c 1 8
	mknod "$TMP/dev/nvidiactl" c 1 5
}

# scenario LINES...: the fake NVML's scenario file (format: tests/lib/fake_nvml.c).
scenario() { printf '%s\n' "$@" >"$TMP/scenario"; }

# gw ARGS...: gpuwho with the stand-in /dev and the fake NVML's scenario.
gw() { GPUWHO_DEV_ROOT="$TMP/dev" FAKE_NVML_SCENARIO="$TMP/scenario" "$GPUWHO" "$@"; }

# free_port: prints a TCP port no socket uses now (IPv4 or IPv6, /proc/net/tcp*), from a random
# start in 20000-59999, for a server a test starts (gpuwho serve, Prometheus). Not reserved: the
# server's own bind error is the check that counts.
free_port() {
	local p used
	# Column 2 is ADDR:PORT with the port in hex. A port in any state counts as used, not only LISTEN:
	# a live outgoing connection from it (20000-59999 overlaps the ephemeral range) makes bind fail.
	used=$(awk 'NR > 1 { n = split($2, a, ":"); print a[n] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
	for p in $(shuf -i 20000-59999 -n 50); do
		grep -qix "$(printf %04X "$p")" <<<"$used" || { echo "$p"; return 0; }
	done
	fail "no free TCP port found"
}

# wait_http URL [SECONDS]: waits until URL answers 200 (curl), failing the test after SECONDS (10).
wait_http() {
	local i
	for i in $(seq 1 $((${2:-10} * 20))); do
		curl -sf -o /dev/null --max-time 2 "$1" && return 0
		sleep 0.05
	done
	fail "no answer from $1 within ${2:-10} s"
}

# help_commands: the commands `gpuwho --help` lists, one a line (t-man, t-completions).
help_commands() {
	"$GPUWHO" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }'
}

# help_options [CMD]: the options of `gpuwho CMD --help` (the top-level --help without CMD), sorted:
# lines indented by two spaces that start with an option, and for the top level the options named
# in its "Common options (...)" sentence.
help_options() {
	local text
	text=$("$GPUWHO" ${1:+"$1"} --help) || fail "gpuwho ${1:+$1 }--help: exit $?"
	{
		grep -E '^  -' <<<"$text" | grep -oE '^  (-[A-Za-z0-9](, --[a-z0-9][a-z0-9-]*)?|--[a-z0-9][a-z0-9-]*)' |
			sed 's/^  //; s/, /\n/'
		[ -z "${1:-}" ] && sed -n 's/^Common options (\([^)]*\)).*/\1/p' <<<"$text" | grep -oE -- '--[a-z0-9][a-z0-9-]*'
	} | sort -u
}
