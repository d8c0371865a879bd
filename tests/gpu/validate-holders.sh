#!/usr/bin/env bash
# GPU validation of `gpuwho holders` on a real NVIDIA host (the device machine): real CUDA
# processes in each way of holding a GPU, with gpuwho, fuser -v and nvidia-smi side by side.
# Never resets the GPU or changes its settings. Writes its log to ${OUT:-.}/holders-validation.txt.
#   tests/gpu/validate-holders.sh            (as root, from the repo root, after building)
set -u
OUT=${OUT:-.}
LOG=$OUT/holders-validation.txt
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
W=$(mktemp -d /tmp/gw-val.XXXXXX)
exec > >(tee "$LOG") 2>&1
pkill -9 -f "^$CH" 2>/dev/null   # leftovers of an earlier run on this machine
pids=()
cleanup() { for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; sleep 1; }
trap cleanup EXIT

waitfile() { local i; for i in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT waiting for $1"; return 1; }
show() { echo "\$ $*"; "$@" 2>&1; echo "(exit $?)"; }
side_by_side() {
	echo "--- gpuwho holders"; "$GW" holders --no-color 2>&1 | sed 's/^/  /'
	if "$GW" why --help >/dev/null 2>&1; then
		echo "--- gpuwho why"; "$GW" why --no-color 2>&1 | sed 's/^/  /'; echo "  (exit ${PIPESTATUS[0]})"
	fi
	echo "--- fuser -v /dev/nvidia*"; fuser -v /dev/nvidia* 2>&1 | sed 's/^/  /'
	echo "--- nvidia-smi --query-compute-apps=pid,used_memory"
	nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1 | sed 's/^/  /'
	echo "--- nvidia-smi memory.used"; nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/  /'
}
scenario() { echo; echo "=================== $*"; }
stop_all() { cleanup; pids=(); sleep 1; }

echo "host: $(uname -r); $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
ls -l /dev/nvidia* /dev/nvidia-caps 2>&1
grep -i nvidia /proc/devices
cat /proc/driver/nvidia/gpus/*/information 2>&1 | head -20

scenario "1. PyTorch process holding 1 GiB"
python3 -c "
import torch, time, os
x = torch.empty(1 << 30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize()
open('$W/py.ready', 'w').write(str(os.getpid())); time.sleep(600)" &
pids+=($!); waitfile "$W/py.ready"; P=$(cat "$W/py.ready")
side_by_side
echo "--- gpuwho holders -v (PID $P only)"; "$GW" holders -v --no-color | sed -n "/^PID $P /,/^\$/p"
"$GW" holders --json >"$OUT/holders-pytorch.json"
stop_all

scenario "2. zombie leader: CUDA context in a live thread, main thread exited (Zl)"
"$CH" "$W/z.ready" 1024 --leader-exit --threads 2 & pids+=($!); waitfile "$W/z.ready"; P=$(cat "$W/z.ready")
show ps -o pid,ppid,stat,nlwp,comm -p "$P"; echo "ls /proc/$P/fd: $(ls /proc/$P/fd | wc -l) entries"
side_by_side; stop_all

scenario "3. child inherited the GPU fds after fork; the CUDA parent exited"
"$CH" "$W/f.ready" 1024 --fork-exit; waitfile "$W/f.ready"; P=$(cat "$W/f.ready"); pids+=("$P")
show ps -o pid,ppid,stat,comm -p "$P"
side_by_side; stop_all

scenario "4. stopped holder (T)"
"$CH" "$W/s.ready" 1024 --stop & pids+=($!); waitfile "$W/s.ready"; sleep 0.5
side_by_side; stop_all

scenario "5. holder outside gpuwho's PID namespace (gpuwho under unshare -p -f --mount-proc)"
"$CH" "$W/o.ready" 1024 & pids+=($!); waitfile "$W/o.ready"
echo "--- inside the namespace: gpuwho holders"; unshare -p -f --mount-proc "$GW" holders --no-color 2>&1 | sed 's/^/  /'
echo "--- inside the namespace: fuser -v /dev/nvidia0"; unshare -p -f --mount-proc fuser -v /dev/nvidia0 2>&1 | sed 's/^/  /'
echo "--- inside the namespace: nvidia-smi"; unshare -p -f --mount-proc nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | sed 's/^/  /'
stop_all

scenario "6. the seed's view: a container (PID namespace + bind-mounted /dev/nvidia0), holder outside"
"$CH" "$W/c.ready" 1024 & pids+=($!); waitfile "$W/c.ready"
unshare -p -f -m --mount-proc sh -c "mount --make-rprivate / && mount --bind /dev/nvidia0 /dev/nvidia0 &&
	echo '--- fuser -v /dev/nvidia0 (in the container)'; fuser -v /dev/nvidia0 2>&1 | sed 's/^/  /';
	echo '--- gpuwho holders /dev/nvidia0 (in the container)'; '$GW' holders --no-color /dev/nvidia0 2>&1 | sed 's/^/  /';
	echo '--- nvidia-smi (in the container)'; nvidia-smi --query-compute-apps=pid,used_memory --format=csv 2>&1 | sed 's/^/  /';
	echo '--- gpuwho ps (in the container)'; '$GW' ps --no-color 2>&1 | sed 's/^/  /';
	if '$GW' why --help >/dev/null 2>&1; then echo '--- gpuwho why (in the container)'; '$GW' why --no-color 2>&1 | sed 's/^/  /'; fi"
echo "--- on the host: gpuwho holders /dev/nvidia0"; "$GW" holders --no-color /dev/nvidia0 | sed 's/^/  /'
stop_all

scenario "7. holder through mknod'ed copies of the nodes (as runc makes them), seen from the host"
uvm=$(awk '$2=="nvidia-uvm"{print $1}' /proc/devices)
unshare -m sh -c "mount --make-rprivate / && mkdir -p $W/dev && mount -t tmpfs none $W/dev &&
	for n in /dev/nvidia*; do [ -c \$n ] || continue; set -- \$(stat -c '%t %T' \$n); mknod $W/dev/\${n#/dev/} c \$((0x\$1)) \$((0x\$2)); mount --bind $W/dev/\${n#/dev/} \$n; done;
	exec '$CH' '$W/m.ready' 1024" & pids+=($!); waitfile "$W/m.ready"; P=$(cat "$W/m.ready")
echo "holder $P opened: $(ls -l /proc/$P/fd | grep -c nvidia) nvidia fds, e.g. $(readlink /proc/$P/fd/* | grep nvidia | sort -u | head -3 | tr '\n' ' ')"
side_by_side; stop_all

scenario "8. launcher SIGKILLed, three CUDA workers reparented"
sh -c "for i in 1 2 3; do \"$CH\" \"$W/w\$i.ready\" 512 & done; wait" & L=$!; pids+=($L)
for i in 1 2 3; do waitfile "$W/w$i.ready"; pids+=("$(cat "$W/w$i.ready")"); done
kill -9 "$L"; sleep 0.5
side_by_side; stop_all

scenario "9. no holder left"
side_by_side
echo; echo "validation done"
