#!/usr/bin/env bash
# GPU validation of `gpuwho metrics` / `gpuwho serve` (issue 13) on a real NVIDIA host; changes no
# GPU setting:
#   1. a real scrape of `gpuwho serve` with four healthy CUDA holders (one named like an SGLang
#      rank), then with a <defunct> leader whose thread holds 2 GiB (zombie_leader: stuck memory);
#   2. the cost of a scrape with the real NVML: serve's CPU per scrape and RSS, `gpuwho metrics`
#      run alone, and nvidia-smi's own query beside them;
#   3. bench/metrics.sh (2,000 processes x 200 fds, fake NVML on stand-in nodes) on this host's CPUs.
# Writes ${OUT:-.}/metrics-validation.txt and the scrapes as ${OUT:-.}/scrape-*.prom.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
REPS=${REPS:-30}
W=$(mktemp -d /tmp/gw-metrics.XXXXXX)
exec > >(tee "$OUT/metrics-validation.txt") 2>&1
waitfile() { local i; for i in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
HZ=$(getconf CLK_TCK)
children_ticks() { sed 's/.*) //' /proc/$$/stat | awk '{print $14 + $15}'; }

echo "== 1. a real scrape: four CUDA processes of 1 GiB"
"$CH" "$W/h1.ready" 1024 --comm sglang::schedul & "$CH" "$W/h2.ready" 1024 & "$CH" "$W/h3.ready" 1024 & "$CH" "$W/h4.ready" 1024 &
for i in 1 2 3 4; do waitfile "$W/h$i.ready"; done
"$GW" serve 2>"$W/serve.err" & S=$!
for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:9835/healthz && break; sleep 0.05; done
curl -s http://127.0.0.1:9835/metrics >"$OUT/scrape-healthy.prom"
grep -v '^#' "$OUT/scrape-healthy.prom" | sed 's/^/  /'

echo; echo "== 2. cost with the real NVML ($REPS scrapes after a warm-up, $(nproc) CPUs, $(ls -d /proc/[0-9]* 2>/dev/null | wc -l) processes)"
c0=$(awk '{print $14 + $15}' /proc/$S/stat); t0=$(date +%s%N)
for ((i = 0; i < REPS; i++)); do curl -sf -o /dev/null http://127.0.0.1:9835/metrics; done
t1=$(date +%s%N); c1=$(awk '{print $14 + $15}' /proc/$S/stat)
echo "  serve: $(echo "$c0 $c1 $HZ $REPS" | awk '{printf "%.1f", ($2-$1)*1000/$3/$4}') ms CPU per scrape, $(( (t1 - t0) / REPS / 1000000 )) ms wall; RSS $(awk '/^VmRSS/ {print $2}' /proc/$S/status) kB, peak $(awk '/^VmHWM/ {print $2}' /proc/$S/status) kB"
b=$(children_ticks); t0=$(date +%s%N)
for ((i = 0; i < REPS; i++)); do "$GW" metrics >/dev/null; done
t1=$(date +%s%N); a=$(children_ticks)
echo "  gpuwho metrics alone: $(echo "$b $a $HZ $REPS" | awk '{printf "%.1f", ($2-$1)*1000/$3/$4}') ms CPU per run, $(( (t1 - t0) / REPS / 1000000 )) ms wall"
b=$(children_ticks); t0=$(date +%s%N)
for ((i = 0; i < REPS; i++)); do nvidia-smi --query-gpu=memory.used,memory.total --format=csv >/dev/null; done
t1=$(date +%s%N); a=$(children_ticks)
echo "  nvidia-smi --query-gpu=memory.used,memory.total: $(echo "$b $a $HZ $REPS" | awk '{printf "%.1f", ($2-$1)*1000/$3/$4}') ms CPU per run, $(( (t1 - t0) / REPS / 1000000 )) ms wall"
b=$(children_ticks); t0=$(date +%s%N)
for ((i = 0; i < REPS; i++)); do nvidia-smi --query-compute-apps=pid,used_memory --format=csv >/dev/null; done
t1=$(date +%s%N); a=$(children_ticks)
echo "  nvidia-smi --query-compute-apps=pid,used_memory: $(echo "$b $a $HZ $REPS" | awk '{printf "%.1f", ($2-$1)*1000/$3/$4}') ms CPU per run, $(( (t1 - t0) / REPS / 1000000 )) ms wall"

echo; echo "== 1b. a <defunct> leader whose thread holds 2 GiB"
"$CH" "$W/z.ready" 2048 --leader-exit & Z=$!
waitfile "$W/z.ready"
for i in $(seq 50); do [ "$(awk '{print $3}' /proc/$Z/stat)" = Z ] && break; sleep 0.1; done
echo "  PID $Z state $(awk '{print $3}' /proc/$Z/stat)"
curl -s http://127.0.0.1:9835/metrics >"$OUT/scrape-zombie.prom"
grep -E '^gpuwho_(gpu_memory_(used|unattributed|stuck)_bytes|findings|scan_limited|scrape_duration)' "$OUT/scrape-zombie.prom" | grep -v '} 0$' | sed 's/^/  /'
kill -9 "$Z" 2>/dev/null
kill "$S"; wait "$S"; echo "  serve exit $? after SIGTERM: $(tail -1 "$W/serve.err")"
pkill -f "^$CH $W/" 2>/dev/null; sleep 1

echo; echo "== 3. bench/metrics.sh 2000 200 $REPS"
bash bench/metrics.sh 2000 200 "$REPS" 2>&1 | sed 's/^/  /'
rm -rf "$W"
echo done
