#!/usr/bin/env bash
# Takes real snapshots of incidents on a real NVIDIA host (the device machine), for examples/:
# a zombie leader holding a GPU, orphaned SGLang-like TP workers after a SIGKILLed launcher, leaked
# /dev/shm segments, and the view from inside a container (own PID namespace, bind-mounted
# /dev/nvidia*) while the holders run outside. Writes ${OUT:-.}/example-*.json. Never resets.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
W=$(mktemp -d /tmp/gw-ex.XXXXXX)
pkill -9 -f "^$CH" 2>/dev/null; sleep 0.5
waitfile() { local i; for i in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
snap() { "$GW" snapshot -o "$OUT/example-$1.json" && echo "example-$1: $("$GW" why --from "$OUT/example-$1.json" --json | jq -c '[.findings[] | .verdict]')"; }
# A zombie leader's cmdline is empty, so pkill -f misses it: kill what the ready files name too.
clean() { local f; for f in "$W"/*.ready; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; rm -f "$W"/*.ready
	pkill -9 -f "^$CH" 2>/dev/null; sleep 1; }

# 1. A PyTorch-like process whose main thread exited while its CUDA thread lives on.
"$CH" "$W/z.ready" 3072 --leader-exit --threads 3 --comm python3 & waitfile "$W/z.ready"
snap zombie-leader; clean

# 2. An SGLang-like launch: a launcher with four TP workers (named as SGLang names them), the
#    launcher SIGKILLed: the workers are reparented and keep the GPU.
bash -c "exec -a 'python3 -m sglang.launch_server --model-path /models/Kimi-K2.5 --tp 4' bash -c '
	for i in 0 1 2 3; do \"$CH\" \"$W/tp\$i.ready\" 8192 --comm sglang::scheduler_TP\$i & done; wait'" & L=$!
for i in 0 1 2 3; do waitfile "$W/tp$i.ready"; done
kill -9 "$L"; sleep 0.5
snap orphaned-tp-workers; clean

# 3. Leaked /dev/shm: segments of a PyTorch DataLoader and SGLang whose creators died, one still held.
"$CH" "$W/s.ready" 1024 & waitfile "$W/s.ready"
sh -c 'exit 0' & dead=$!; wait $dead
for n in 1 2 3; do fallocate -l 512M "/dev/shm/torch_${dead}_${n}_$RANDOM"; done
fallocate -l 2G "/dev/shm/psm_${dead}_kvcache"
fallocate -l 64M /dev/shm/held_by_live_process
exec 9</dev/shm/held_by_live_process
snap shm-leak
exec 9<&-; rm -f /dev/shm/torch_${dead}_* /dev/shm/psm_${dead}_kvcache /dev/shm/held_by_live_process; clean

# 4. From inside a container: own PID namespace, /dev/nvidia* bind-mounted, the holders outside.
for i in 0 1; do "$CH" "$W/c$i.ready" 16384 & done; for i in 0 1; do waitfile "$W/c$i.ready"; done
unshare -p -f -m --mount-proc sh -c "mount --make-rprivate / &&
	for n in /dev/nvidia*; do [ -c \$n ] && mount --bind \$n \$n; done;
	for n in /dev/nvidia-caps/*; do [ -c \$n ] && mount --bind \$n \$n; done;
	'$GW' snapshot -o '$OUT/example-container-view.json'; echo '--- fuser -v /dev/nvidia0 in the container:'; fuser -v /dev/nvidia0 2>&1"
echo "example-container-view: $("$GW" why --from "$OUT/example-container-view.json" --json | jq -c '[.findings[] | .verdict]')"
clean
ls -la "$OUT"/example-*.json
