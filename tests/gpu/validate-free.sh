#!/usr/bin/env bash
# GPU validation of `gpuwho free` on a real NVIDIA host: a launcher with three CUDA workers whose
# launcher was killed -9, a process that ignores SIGTERM, a stopped holder. Records memory before
# and after and the time free took. --reset runs only with a stub (GPUWHO_RESET_CMD): never a real
# reset. Writes ${OUT:-.}/free-validation.txt.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
W=$(mktemp -d /tmp/gw-free.XXXXXX)
exec > >(tee "$OUT/free-validation.txt") 2>&1
pkill -9 -f "^$CH" 2>/dev/null
waitfile() { local i; for i in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader; }
printf '#!/bin/sh\necho "reset stub called: $*" >>%s/reset.log\n' "$W" >"$W/reset-stub"; chmod +x "$W/reset-stub"
export GPUWHO_RESET_CMD="$W/reset-stub"
timed_free() {   # timed_free ARGS...: runs gpuwho free, prints its output, exit status and time
	local t0=$(date +%s%N)
	"$GW" free "$@" --no-color 2>&1 | sed 's/^/  /'; local rc=${PIPESTATUS[0]}
	echo "  (exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
}

echo "== 1. launcher with three CUDA workers, launcher killed -9"
sh -c "for i in 1 2 3; do \"$CH\" \"$W/w\$i.ready\" 2048 & done; wait" & L=$!
for i in 1 2 3; do waitfile "$W/w$i.ready"; done
kill -9 "$L"; sleep 0.3
echo "memory before: $(used)"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sed 's/^/  /'
echo "--- gpuwho free 0 (dry run)"; timed_free 0
echo "--- gpuwho free 0 --yes"; timed_free 0 --yes
echo "memory after: $(used)"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sed 's/^/  /'

echo; echo "== 2. a process that ignores SIGTERM"
"$CH" "$W/t.ready" 2048 --ignore-term & waitfile "$W/t.ready"
echo "memory before: $(used)"
echo "--- gpuwho free 0 --yes --grace 2"; timed_free 0 --yes --grace 2
echo "memory after: $(used)"

echo; echo "== 3. a stopped holder"
"$CH" "$W/s.ready" 2048 --stop & waitfile "$W/s.ready"; sleep 0.3
echo "state: $(ps -o stat= -p "$(cat "$W/s.ready")")   memory before: $(used)"
echo "--- gpuwho free 0 --yes --grace 3"; timed_free 0 --yes --grace 3
echo "memory after: $(used)"

echo; echo "== 4. --reset with a stub (no holder left)"
timed_free 0 --yes --reset
echo "stub log: $(cat "$W/reset.log" 2>/dev/null || echo 'not called')"
pkill -9 -f "^$CH" 2>/dev/null
echo done
