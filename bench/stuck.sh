#!/usr/bin/env bash
# Benchmark: `gpuwho holders TARGET` when N holders of TARGET are stuck on their memory-map lock (a
# thread blocked in the kernel on a FUSE file that never answers, a writer queued behind it: their
# cmdline blocks every reader), against `fuser TARGET` run side by side. Prints, for each N, the
# wall time of each and how many holders each named; then gpuwho with one thread and a 1 s bound.
#   bench/stuck.sh [COUNTS="1 4 12 14"] [REPS=3]     (root, from the repo root; needs libfuse3-dev)
# Reads of these processes' cmdline hang until the FUSE server is gone: do not run ps or pgrep
# while it runs; the cleanup kills the server first.
set -euo pipefail
COUNTS=${1:-1 4 12 14} REPS=${2:-3}
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "bench/stuck.sh: needs root (FUSE mounts)" >&2; exit 2; }
make -s build/gpuwho build/tests/fusestall
GW=$PWD/build/gpuwho FS=$PWD/build/tests/fusestall
TMP=$(mktemp -d /tmp/gpuwho-bench.XXXXXX)
mkdir -p "$TMP/mnt"
echo x >"$TMP/target"
srv="" stuck=()
cleanup() {
	[ -z "$srv" ] || kill -9 "$srv" 2>/dev/null || true
	[ ${#stuck[@]} -eq 0 ] || kill -9 "${stuck[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	umount -l "$TMP/mnt" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
"$FS" serve "$TMP/mnt" >"$TMP/serve.log" 2>&1 &
srv=$!
for _ in $(seq 1 100); do grep -q mounted "$TMP/serve.log" && break; sleep 0.05; done

add_stuck() {   # add_stuck N: N more stuck holders of the target
	local i p
	for ((i = 0; i < $1; i++)); do
		"$FS" hold "$TMP/target" "$TMP/mnt/stall" >/dev/null 2>&1 </dev/null &
		stuck+=($!)
	done
	for p in "${stuck[@]}"; do
		for _ in $(seq 1 100); do [ "$(cut -d' ' -f3 "/proc/$p/stat")" = D ] && break; sleep 0.05; done
	done
}

# run_timed CMD...: prints "SECONDS HOLDERS" (the median of REPS runs; holders named by the last run)
run_timed() {
	local i t0 t1 ts=() out
	for ((i = 0; i < REPS; i++)); do
		t0=$(date +%s%N); out=$(timeout 120 "$@" 2>&1 || true); t1=$(date +%s%N)
		ts+=($(( (t1 - t0) / 1000000 )))
	done
	local named=0 p
	for p in "${stuck[@]}"; do grep -qw -- "$p" <<<"$out" && named=$((named + 1)); done
	printf '%s %s\n' "$(printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}')" "$named"
}

printf '%-8s %-24s %-24s %-24s\n' stuck "gpuwho holders (s, named)" "gpuwho --threads 1 --timeout 1" "fuser (s, named)"
have=0
for n in $COUNTS; do
	add_stuck $((n - have)); have=$n
	read -r gs gn < <(run_timed "$GW" holders "$TMP/target")
	read -r g1s g1n < <(run_timed "$GW" holders --threads 1 --timeout 1 "$TMP/target")
	read -r fs fn < <(run_timed fuser "$TMP/target")
	printf '%-8s %-24s %-24s %-24s\n' "$n" "$gs s, $gn/$n" "$g1s s, $g1n/$n" "$fs s, $fn/$n"
done
echo "processes on this host: $(ls -d /proc/[0-9]* | wc -l); kernel $(uname -r); $(nproc) CPUs"
