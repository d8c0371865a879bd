#!/usr/bin/env bash
# GPU validation of `gpuwho check` on a real NVIDIA host (run as root from the repo root, after
# `make` and `nvcc -o build/cuda_holder tests/gpu/cuda_holder.cu`):
#   1. a healthy GPU with a live 1 GiB holder: check is silent, exits 0, walks no fds (scan "limited");
#   2. how long the driver takes to free an 8 GiB holder's memory after SIGKILL (NVML's used, polled
#      every 10 ms; REPS times), and that `check --wait 10` right after the kill exits 0 once it is back;
#   3. a zombie leader holding 1 GiB: check exits 1 with one line.
# Prints what it measured; exits 1 when a check misbehaves.
set -u
REPS=${REPS:-3}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
TMP=$(mktemp -d /tmp/gpuwho-check.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
bad=0
used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0; }
start() { # NAME MIB ARGS... -> PID in $P
	local r="$TMP/$1.ready"; shift
	"$CH" "$r" "$@" >/dev/null 2>&1 &
	for i in $(seq 600); do [ -s "$r" ] && break; sleep 0.05; done
	P=$(cat "$r")
}

echo "== 1. healthy: a live 1 GiB holder"
start live 1024
out=$("$GW" check --json); rc=$?
echo "exit $rc; scan $(jq -r .scan <<<"$out"); ok $(jq -r .ok <<<"$out")"
[ "$rc" -eq 0 ] && [ "$(jq -r .scan <<<"$out")" = limited ] || bad=1
kill -9 "$P"; wait "$P" 2>/dev/null; sleep 2

echo "== 2. release time of an 8 GiB holder after SIGKILL (NVML memory.used polled)"
base=$(used_mib)
for r in $(seq "$REPS"); do
	start big$r 8192
	held=$(used_mib)
	t0=$(date +%s%N)
	kill -9 "$P"
	while [ "$(used_mib)" -gt $((base + 256)) ]; do :; done
	t1=$(date +%s%N)
	wait "$P" 2>/dev/null
	echo "run $r: used $held MiB held, back to <= base+256 MiB after $(( (t1 - t0) / 1000000 )) ms"
	sleep 1
done
start big 8192
kill -9 "$P"
t0=$(date +%s%N)
out=$("$GW" check --wait 10 --json); rc=$?
t1=$(date +%s%N)
echo "check --wait 10 right after SIGKILL: exit $rc after $(( (t1 - t0) / 1000000 )) ms, waited_s $(jq -r .waited_s <<<"$out")"
[ "$rc" -eq 0 ] || { bad=1; jq . <<<"$out"; }
wait 2>/dev/null; sleep 2

echo "== 3. a zombie leader holding 1 GiB"
start zombie 1024 --leader-exit
sleep 1
out=$("$GW" check); rc=$?
echo "exit $rc: $out"
[ "$rc" -eq 1 ] || bad=1
kill -9 "$P" 2>/dev/null
exit $bad
