#!/usr/bin/env bash
# Benchmark: `gpuwho holders TARGET` against `fuser TARGET` and `lsof TARGET` on a host with
# PROCS processes x FDS open fds (a few of them on TARGET), run side by side, REPS times each,
# interleaved. Prints medians and ratios, then gpuwho's time as the fd count grows (linearity).
#   bench/holders.sh [PROCS=1000] [FDS=200] [REPS=9]        (run as root, from the repo root)
#   GROWTH=0 skips the growth part.
set -euo pipefail
PROCS=${1:-1000} FDS=${2:-200} REPS=${3:-9}
cd "$(dirname "$0")/.."
[ -x build/gpuwho ] || make -s build/gpuwho
mkdir -p build/bench
cc -O2 -o build/bench/fdhog bench/fdhog.c
GW=$PWD/build/gpuwho
TMP=$(mktemp -d /tmp/gpuwho-bench.XXXXXX)
TARGET=$TMP/nvidia0
mknod "$TARGET" c 1 7 2>/dev/null || : >"$TARGET"   # a stand-in device node (or a file without root)
pids=()
kill_hogs() { [ ${#pids[@]} -eq 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true; pids=(); sleep 0.5; }
cleanup() { kill_hogs; rm -rf "$TMP"; }
trap cleanup EXIT

spawn_hogs() {   # spawn_hogs COUNT FDS: every 50th process holds the target 3 times
	local i
	for ((i = 0; i < $1; i++)); do
		pids+=("$(build/bench/fdhog "$2" "$TARGET" $((i % 50 == 0 ? 3 : 0)))")
	done
	sleep 1
}

median_ms() {    # median_ms CMD...: runs CMD REPS times, prints the median wall time in ms
	local i t0 t1 ts=()
	for ((i = 0; i < REPS; i++)); do
		t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N)
		ts+=($(( (t1 - t0) / 1000 )))
	done
	printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}

spawn_hogs "$PROCS" "$FDS"
nproc_total=$(ls -d /proc/[0-9]* | wc -l)
nfd_total=$(find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
echo "host: $(nproc) CPUs, $nproc_total processes, $nfd_total open fds; target $TARGET held by $(( (PROCS + 49) / 50 )) processes"
# Same answer first: the benchmark means nothing if the tools disagree.
n_gw=$("$GW" holders --json "$TARGET" | jq '.holders | length')
n_fu=$(fuser "$TARGET" 2>/dev/null | wc -w)
have_lsof=$(command -v lsof >/dev/null && echo 1 || echo 0)
n_ls=$([ "$have_lsof" = 1 ] && lsof -t "$TARGET" 2>/dev/null | wc -l || echo "not installed")
echo "holders found: gpuwho $n_gw, fuser $n_fu, lsof $n_ls"

gw=$(median_ms "$GW" holders "$TARGET")
gw1=$(median_ms "$GW" holders --threads 1 "$TARGET")
fu=$(median_ms fuser "$TARGET")
ls=$([ "$have_lsof" = 1 ] && median_ms lsof "$TARGET" || echo -)
printf '\n%-34s %10s %14s\n' "command (median of $REPS)" "wall ms" "vs fuser"
printf '%-34s %10s %14s\n' "gpuwho holders TARGET" "$gw" "$(echo "$gw $fu" | awk '{printf "%.2fx", $1/$2}')"
printf '%-34s %10s %14s\n' "gpuwho holders --threads 1 TARGET" "$gw1" "$(echo "$gw1 $fu" | awk '{printf "%.2fx", $1/$2}')"
printf '%-34s %10s %14s\n' "fuser TARGET" "$fu" "1.00x"
[ "$ls" = - ] || printf '%-34s %10s %14s\n' "lsof TARGET" "$ls" "$(echo "$ls $fu" | awk '{printf "%.2fx", $1/$2}')"

# Linearity: the same process count with a quarter, half and all of the fds.
[ "${GROWTH:-1}" = 0 ] && exit 0
echo
echo "growth with fds per process ($PROCS processes):"
kill_hogs
for f in $((FDS / 4)) $((FDS / 2)) "$FDS"; do
	spawn_hogs "$PROCS" "$f"
	g=$(median_ms "$GW" holders "$TARGET")
	u=$(median_ms fuser "$TARGET")
	printf '  %4d fds/process (%7d fds): gpuwho %7s ms = %5.2f us/fd   fuser %7s ms = %5.2f us/fd\n' \
		"$f" $((PROCS * f)) "$g" "$(echo "$g $PROCS $f" | awk '{print $1*1000/($2*$3)}')" \
		"$u" "$(echo "$u $PROCS $f" | awk '{print $1*1000/($2*$3)}')"
	kill_hogs
done
