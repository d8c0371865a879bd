#!/usr/bin/env bash
# GPU validation of `gpuwho ps` on a real NVIDIA host: with one, then three CUDA processes of
# known size, gpuwho's JSON must agree with nvidia-smi to the MiB and PID; then gpuwho inside a
# PID namespace; then timings of gpuwho ps against nvidia-smi. Never resets or changes settings.
# Writes ${OUT:-.}/ps-validation.txt.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
W=$(mktemp -d /tmp/gw-ps.XXXXXX)
exec > >(tee "$OUT/ps-validation.txt") 2>&1
pkill -9 -f "^$CH" 2>/dev/null   # leftovers of an earlier run on this machine
pids=()
cleanup() { for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; sleep 1; pids=(); }
trap cleanup EXIT
waitfile() { local i; for i in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
MiB=1048576

compare() {   # gpuwho ps --json vs nvidia-smi, per PID and for the GPU
	local j smi ok=1
	j=$("$GW" ps --json)
	smi=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | tr -d ' ' | sort)
	gw=$(jq -r --argjson m $MiB '.gpus[0].processes[] | select(.in_nvml) | "\(.host_pid),\(.used_bytes / $m | floor)"' <<<"$j" | sort)
	echo "nvidia-smi pid,MiB: $(echo $smi)"
	echo "gpuwho     pid,MiB: $(echo $gw)"
	[ "$smi" = "$gw" ] && echo "processes: AGREE" || { echo "processes: DIFFER"; ok=0; }
	smig=$(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits | tr -d ' ')
	gwg=$(jq -r --argjson m $MiB '.gpus[0].memory | "\(.used_bytes / $m | floor),\(.total_bytes / $m | floor)"' <<<"$j")
	echo "nvidia-smi used,total MiB: $smig   gpuwho: $gwg   unattributed: $(jq '.gpus[0].memory.unattributed_bytes / 1048576' <<<"$j") MiB"
	[ "$smig" = "$gwg" ] && echo "GPU memory: AGREE" || echo "GPU memory: DIFFER (read moments apart?)"
	echo "--- gpuwho ps"; "$GW" ps --no-color | sed 's/^/  /'
}

echo "== one CUDA process, 1024 MiB cudaMalloc"
"$CH" "$W/a.ready" 1024 & pids+=($!); waitfile "$W/a.ready"; sleep 0.5
compare; cleanup

echo; echo "== three CUDA processes: 512, 2048, 4096 MiB"
for m in 512 2048 4096; do "$CH" "$W/b$m.ready" $m & pids+=($!); done
for m in 512 2048 4096; do waitfile "$W/b$m.ready"; done; sleep 0.5
compare

echo; echo "== gpuwho inside unshare -p -f --mount-proc, the CUDA processes outside"
echo "--- gpuwho ps (inside)"; unshare -p -f --mount-proc "$GW" ps --no-color 2>&1 | sed 's/^/  /'
echo "--- gpuwho ps --json (inside): kinds"; unshare -p -f --mount-proc "$GW" ps --json | jq -c '[.pid_namespace, [.gpus[0].processes[] | [.kind, .host_pid, .used_bytes / 1048576]]]'
echo "--- nvidia-smi (inside)"; unshare -p -f --mount-proc nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | sed 's/^/  /'
unshare -p -f --mount-proc nvidia-smi 2>&1 | tail -8 | sed 's/^/  /'

echo; echo "== the inherited case: CUDA parent exited after fork, its child holds the fds"
"$CH" "$W/f.ready" 1024 --fork-exit; waitfile "$W/f.ready"; pids+=("$(cat "$W/f.ready")"); sleep 0.5
"$GW" ps --no-color | sed 's/^/  /'
cleanup

echo; echo "== timings (median of 11, ms), 3 CUDA processes running"
for m in 512 2048 4096; do "$CH" "$W/c$m.ready" $m & pids+=($!); done
for m in 512 2048 4096; do waitfile "$W/c$m.ready"; done
med() { local i t0 ts=(); for i in $(seq 11); do t0=$(date +%s%N); "$@" >/dev/null 2>&1; ts+=($(( ($(date +%s%N) - t0) / 1000 ))); done; printf '%s\n' "${ts[@]}" | sort -n | sed -n 6p | awk '{printf "%.1f", $1/1000}'; }
a=$(med "$GW" ps); b=$(med "$GW" ps --json); c=$(med "$GW" holders); d=$(med nvidia-smi); e=$(med nvidia-smi -q)
f=$(med nvidia-smi --query-compute-apps=pid,used_memory --format=csv); g=$(med "$GW" ps --no-nvml); h=$(med fuser /dev/nvidia0)
printf '%-48s %8s\n' "gpuwho ps" "$a" "gpuwho ps --json" "$b" "gpuwho ps --no-nvml" "$g" "gpuwho holders" "$c" \
	"nvidia-smi" "$d" "nvidia-smi -q (full query)" "$e" "nvidia-smi --query-compute-apps=pid,used_memory" "$f" "fuser /dev/nvidia0" "$h"
cleanup
echo "persistence mode: $(nvidia-smi --query-gpu=persistence_mode --format=csv,noheader)"
echo done
