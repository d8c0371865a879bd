#!/usr/bin/env bash
# GPU validation of `gpuwho why` (issue 11) on a real NVIDIA host; changes no GPU setting:
#   1. pinned host memory: three CUDA processes pin PIN MiB each with cudaHostAlloc; what
#      /proc/meminfo, their status and gpuwho ps/why say (the holders own the Shmem, not /dev/shm);
#   2. orphans in a container: inside `unshare -p -f --mount-proc`, a launcher that leads its process
#      group starts two CUDA ranks with different command lines and is SIGKILLed; why inside it,
#      and the printed group kill run as printed;
#   3. speed on a healthy host with four CUDA processes: bench/why.sh (why, ps, nvidia-smi).
# Writes ${OUT:-.}/why-validation.txt.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
PIN=${PIN:-20480}
W=$(mktemp -d /tmp/gw-why.XXXXXX)
exec > >(tee "$OUT/why-validation.txt") 2>&1
waitfile() { local i; for i in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
mem() { grep -E '^(MemTotal|MemAvailable|Shmem):' /proc/meminfo | tr -s ' ' | tr '\n' ' '; echo; }

echo "== 1. pinned host memory: 3 x $PIN MiB with cudaHostAlloc"
echo "before: $(mem)"
for i in 1 2 3; do "$CH" "$W/p$i.ready" 1024 --pin "$PIN" & done
for i in 1 2 3; do waitfile "$W/p$i.ready"; done
echo "after:  $(mem)"
for i in 1 2 3; do p=$(cat "$W/p$i.ready"); echo "  PID $p: $(grep -E '^(VmRSS|RssAnon|RssFile|RssShmem|VmPin|VmLck):' /proc/$p/status | tr -s ' ' | tr '\n' ' ')"; done
echo "  /dev/shm: $(du -sh /dev/shm 2>/dev/null | cut -f1)"
echo "--- gpuwho ps"; "$GW" ps --no-color | sed 's/^/  /'
echo "--- gpuwho why (host_memory)"; "$GW" why --json | jq -r '.findings[] | select(.verdict == "host_memory") | .headline, (.evidence[] | "  - " + .), "  fix: " + .fix' | sed 's/^/  /'
pkill -f "^$CH $W/p" ; sleep 2
echo "after they end: $(mem)"

echo; echo "== 2. orphans in a container (own PID namespace), different command lines"
unshare -p -f --mount-proc bash -c '
	CH='"$CH"' GW='"$GW"' W='"$W"'
	setsid sh -c "\"$CH\" $W/a.ready 1024 --comm rank0 & \"$CH\" $W/b.ready 1024 --threads 1 & wait" &
	L=$!
	for f in a b; do for i in $(seq 600); do [ -s $W/$f.ready ] && break; sleep 0.1; done; done
	A=$(cat $W/a.ready); B=$(cat $W/b.ready)
	echo "  launcher $L (group $L), ranks $A and $B: pgid $(awk "{print \$5}" /proc/$A/stat) $(awk "{print \$5}" /proc/$B/stat)"
	kill -9 $L; sleep 0.5
	echo "  parents now: $(awk "{print \$4}" /proc/$A/stat) $(awk "{print \$4}" /proc/$B/stat)"
	echo "--- nvidia-smi (inside)"; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sed "s/^/  /"
	echo "--- fuser -v /dev/nvidia0 (inside)"; fuser -v /dev/nvidia0 2>&1 | sed "s/^/  /"
	echo "--- gpuwho why (inside)"; "$GW" why --no-color 2>&1 | sed "s/^/  /"
	fix=$("$GW" why --no-color | sed -n "s/^ *fix: //p" | grep -o "\`kill -TERM -- -[0-9]*\`" | tr -d "\`")
	echo "--- the printed fix: $fix"; bash -c "$fix"; sleep 1
	for p in $A $B; do echo "  rank $p: $([ "$(awk "{print \$3}" /proc/$p/stat 2>/dev/null)" = Z ] || ! kill -0 $p 2>/dev/null && echo gone || echo ALIVE)"; done
'
echo "memory: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"

echo; echo "== 3. speed, healthy host with four CUDA processes"
for i in 1 2 3 4; do "$CH" "$W/h$i.ready" 1024 & done
for i in 1 2 3 4; do waitfile "$W/h$i.ready"; done
bash bench/why.sh 15 | sed 's/^/  /'
pkill -f "^$CH" 2>/dev/null
echo done
