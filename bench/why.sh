#!/usr/bin/env bash
# Benchmark: `gpuwho why` against `gpuwho ps` and `nvidia-smi`, run side by side, REPS times each,
# interleaved, on this host as it is (start CUDA processes first for a realistic host). Prints the
# median wall time of each and the ratios. Without an NVIDIA driver it uses the fake NVML (a healthy
# GPU with one holder) so that why's own cost — and that it takes no second memory sample on a
# healthy host — can still be measured; nvidia-smi is then left out.
#   bench/why.sh [REPS=15]        (from the repo root)
set -euo pipefail
REPS=${1:-15}
cd "$(dirname "$0")/.."
[ -x build/gpuwho ] || make -s build/gpuwho >/dev/null
GW=$PWD/build/gpuwho
TMP=$(mktemp -d /tmp/gpuwho-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
. bench/lib.sh
use_fake_nvml_without_driver

ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); }
median() { sort -n | awk '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "%.1f", m/1000}'; }

: >"$TMP/why"; : >"$TMP/ps"; : >"$TMP/smi"
for ((i = 0; i < REPS; i++)); do
	ms "$GW" why >>"$TMP/why"
	ms "$GW" ps >>"$TMP/ps"
	[ -z "$SMI" ] || ms nvidia-smi >>"$TMP/smi"
done
why=$(median <"$TMP/why"); ps=$(median <"$TMP/ps")
printf 'gpuwho why   %8s ms (median of %d)\n' "$why" "$REPS"
printf 'gpuwho ps    %8s ms\n' "$ps"
if [ -n "$SMI" ]; then
	smi=$(median <"$TMP/smi")
	printf 'nvidia-smi   %8s ms\n' "$smi"
	awk -v w="$why" -v p="$ps" -v s="$smi" 'BEGIN {printf "why/ps %.2f   why/nvidia-smi %.2f\n", w/p, w/s}'
else
	awk -v w="$why" -v p="$ps" 'BEGIN {printf "why/ps %.2f\n", w/p}'
fi
"$GW" why --json | jq -r '"second memory sample: \(.second_sample_s // "none (every MiB has a holder)")"'
