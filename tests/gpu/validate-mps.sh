#!/usr/bin/env bash
# GPU validation of `gpuwho free` with MPS and with an heir (run on a real NVIDIA host; changes no GPU
# setting: MPS gets its own pipe and log folders under /tmp and is quit at the end):
#   1. an MPS control daemon, its server and one client: what each holds, what nvidia-smi, fuser and
#      gpuwho say, and that free ends the client and spares the daemons; then MPS is stopped with the
#      command gpuwho's note prints;
#   2. a process that forked and exited (the heir keeps its CUDA fds; NVML lists the dead PID): free
#      ends the heir by its evidence (a CUDA context);
#   3. an NVML client (a python3 process that opened GPU 0 through NVML, as monitors and exporters do)
#      next to a CUDA process: free spares the client, whatever its name.
# Writes ${OUT:-.}/mps-validation.txt.
set -u
OUT=${OUT:-.}
GW=${GW:-$PWD/build/gpuwho}
CH=${CH:-$PWD/build/cuda_holder}
W=$(mktemp -d /tmp/gw-mps.XXXXXX)
exec > >(tee "$OUT/mps-validation.txt") 2>&1
waitfile() { local i; for i in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "TIMEOUT $1"; return 1; }
apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | sed 's/^/  /'; }
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader; }
holds() {   # holds PID: its NVIDIA fds and mappings
	echo "  PID $1 ($(tr '\0' ' ' </proc/$1/cmdline)): fds: $(ls -l /proc/$1/fd 2>/dev/null | grep -o '/dev/nvidia[^ ]*' | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
	echo "    maps: $(grep -o '/dev/nvidia[^ ]*' /proc/$1/maps 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
alive() { [ -r /proc/$1/stat ] && [ "$(awk '{print $3}' /proc/$1/stat)" != Z ] && echo ALIVE || echo gone; }
timed() { local t0=$(date +%s%N); "$@" 2>&1 | sed 's/^/  /'; echo "  (exit ${PIPESTATUS[0]}, $(( ($(date +%s%N) - t0) / 1000000 )) ms)"; }

echo "== 1. MPS: control daemon, server, one client"
mkdir -p "$W/pipe" "$W/log"
export CUDA_MPS_PIPE_DIRECTORY="$W/pipe" CUDA_MPS_LOG_DIRECTORY="$W/log"
nvidia-cuda-mps-control -d; sleep 0.5
"$CH" "$W/c.ready" 1024 & waitfile "$W/c.ready"; C=$(cat "$W/c.ready")
for p in $(pgrep -f nvidia-cuda-mps) $C; do holds "$p"; done
echo "nvidia-smi compute apps:"; apps
echo "--- fuser -v /dev/nvidia0 /dev/nvidia-uvm"; fuser -v /dev/nvidia0 /dev/nvidia-uvm 2>&1 | sed 's/^/  /'
echo "--- gpuwho ps"; timed "$GW" ps --no-color
echo "--- gpuwho why"; timed "$GW" why --no-color
echo "--- gpuwho free 0 (dry run)"; timed "$GW" free 0 --no-color
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY   # the note must name the daemon's own folder
echo "--- gpuwho free 0 --yes --grace 2"; "$GW" free 0 --yes --grace 2 --no-color >"$W/free.txt" 2>&1; echo "  (exit $?)"
sed 's/^/  /' "$W/free.txt"
echo "MPS daemons after free: $(pgrep -f nvidia-cuda-mps | tr '\n' ' ')(client $C $(alive "$C"))"
quit=$(grep -o 'echo quit | [^ ]* nvidia-cuda-mps-control' "$W/free.txt" | head -1)
echo "--- the printed stop command: $quit"
sh -c "$quit"; sleep 1
echo "MPS after it: $(pgrep -fa nvidia-cuda-mps | grep -v defunct || echo 'gone')"
echo "memory: $(used)"

echo; echo "== 2. an heir: fork, the parent exits, the child keeps the CUDA context"
"$CH" "$W/f.ready" 2048 --fork-exit & waitfile "$W/f.ready"; H=$(cat "$W/f.ready"); sleep 0.3
holds "$H"
echo "nvidia-smi compute apps (the dead parent's PID):"; apps
echo "--- gpuwho free 0 --json (evidence)"; "$GW" free 0 --json | jq -c '.processes[] | {pid, role, signal, skip, evidence}' | sed 's/^/  /'
echo "--- gpuwho free 0 --yes --grace 2"; timed "$GW" free 0 --yes --grace 2 --no-color
echo "heir $H: $(alive "$H"); memory: $(used)"

echo; echo "== 3. a monitor next to a CUDA process"
"$CH" "$W/a.ready" 1024 & waitfile "$W/a.ready"; A=$(cat "$W/a.ready")
python3 - "$W/mon.pid" <<'PY' &
import ctypes, sys, os, time
nv = ctypes.CDLL("libnvidia-ml.so.1"); nv.nvmlInit_v2()
h = ctypes.c_void_p(); nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
open(sys.argv[1], "w").write(str(os.getpid())); time.sleep(600)
PY
waitfile "$W/mon.pid"; P=$(cat "$W/mon.pid"); sleep 0.5
holds "$P"
echo "--- gpuwho free 0 --json (the NVML client)"; "$GW" free 0 --json | jq -c ".processes[] | select(.pid == $P or .pid == $A) | {pid, signal, skip, skip_why, evidence}" | sed 's/^/  /'
echo "--- gpuwho free 0 --yes --grace 2"; timed "$GW" free 0 --yes --grace 2 --no-color
echo "CUDA process $A: $(alive "$A"); NVML client $P: $(alive "$P")"
kill "$P" 2>/dev/null; pkill -9 -f "^$CH" 2>/dev/null
echo "memory at the end: $(used)"
echo done
