#!/usr/bin/env bash
# Benchmark: `gpuwho check` (lazy: NVML first, no fd walk while NVML explains every MiB) against
# `gpuwho why` (the full fd walk) and `nvidia-smi`, REPS times each, interleaved; prints the median
# wall time and the median CPU time (user + system) of each. PROCS background processes with FDS
# fds each (bench/fdhog) make the fd walk cost what it costs on a busy node. Without an NVIDIA driver
# the fake NVML stands in for one GPU with one holder, and nvidia-smi is left out.
#   bench/check.sh [REPS=15] [PROCS=500] [FDS=200]        (from the repo root)
set -euo pipefail
REPS=${1:-15} PROCS=${2:-500} FDS=${3:-200}
cd "$(dirname "$0")/.."
[ -x build/gpuwho ] || make -s build/gpuwho >/dev/null
mkdir -p build/bench
cc -O2 -o build/bench/fdhog bench/fdhog.c
GW=$PWD/build/gpuwho
TMP=$(mktemp -d /tmp/gpuwho-bench.XXXXXX)
pids=()
cleanup() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
. bench/lib.sh
use_fake_nvml_without_driver
touch "$TMP/target"
for ((i = 0; i < PROCS; i++)); do pids+=("$(build/bench/fdhog "$FDS" "$TMP/target" 0)"); done
echo "host: $(nproc) CPUs, $(ls /proc | grep -c '^[0-9]') processes (of them $PROCS x $FDS fds for this run)"

# One run: "wall_us cpu_us" (CPU: the waited-for children's user + system time, stat fields 16 and 17).
run() {
	local t0 t1 c0 c1 me=$BASHPID   # read here: inside $( ) BASHPID is the substitution's own
	c0=$(awk '{print $16 + $17}' /proc/$me/stat)
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	t1=$(date +%s%N)
	c1=$(awk '{print $16 + $17}' /proc/$me/stat)
	echo "$(( (t1 - t0) / 1000 )) $(( (c1 - c0) * 1000000 / $(getconf CLK_TCK) ))"
}
median() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'; }

: >"$TMP/check"; : >"$TMP/why"; : >"$TMP/smi"
for ((i = 0; i < REPS; i++)); do
	(run "$GW" check) >>"$TMP/check"
	(run "$GW" why) >>"$TMP/why"
	[ -z "$SMI" ] || (run nvidia-smi) >>"$TMP/smi"
done
printf '%-28s %10s %10s\n' "command (median of $REPS)" "wall ms" "CPU ms"
for n in check why; do
	printf '%-28s %10s %10s\n' "gpuwho $n" "$(cut -d' ' -f1 "$TMP/$n" | median)" "$(cut -d' ' -f2 "$TMP/$n" | median)"
done
[ -z "$SMI" ] || printf '%-28s %10s %10s\n' "nvidia-smi" "$(cut -d' ' -f1 "$TMP/smi" | median)" "$(cut -d' ' -f2 "$TMP/smi" | median)"
