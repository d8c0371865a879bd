#!/usr/bin/env bash
# Benchmark: what a Prometheus scrape of `gpuwho serve` costs, and `gpuwho metrics` run alone, on a
# host with PROCS processes x FDS open fds — CPU seconds per scrape (the server's utime+stime from
# /proc/PID/stat, over REPS sequential scrapes) and the server's RSS, for
#   healthy:  GPU 0 held by 8 of the processes, every byte accounted for by NVML's list (the lazy
#             collection: NVML, then the fds of NVML's PIDs only);
#   leak:     4 GiB on GPU 1 that no process holds (memory unexplained: the full fd walk), with
#             --scan-interval 0 (a full walk on every scrape) and the default 60 s (one full walk,
#             then the lazy collection).
# Without an NVIDIA driver the fake NVML stands in (stand-in /dev/nvidia* under GPUWHO_DEV_ROOT);
# with one, nvidia-smi's own cost per query is printed beside it.
#   bench/metrics.sh [PROCS=2000] [FDS=200] [REPS=30]        (root, from the repo root)
set -euo pipefail
PROCS=${1:-2000} FDS=${2:-200} REPS=${3:-30}
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "bench/metrics.sh: needs root (mknod for the stand-in GPUs)" >&2; exit 2; }
[ -x build/gpuwho ] && [ -f build/tests/fake_nvml.so ] || make -s build/gpuwho build/tests/fake_nvml.so >/dev/null
mkdir -p build/bench
cc -O2 -o build/bench/fdhog bench/fdhog.c
GW=$PWD/build/gpuwho
TMP=$(mktemp -d /tmp/gpuwho-bench.XXXXXX)
pids=()
cleanup() {
	[ -z "${SPID:-}" ] || kill "$SPID" 2>/dev/null || true
	[ ${#pids[@]} -eq 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir "$TMP/dev"
mknod "$TMP/dev/nvidia0" c 1 7
mknod "$TMP/dev/nvidia1" c 1 8
mknod "$TMP/dev/nvidiactl" c 1 5
export GPUWHO_DEV_ROOT=$TMP/dev FAKE_NVML_SCENARIO=$TMP/scenario
for ((i = 0; i < PROCS; i++)); do
	pids+=("$(build/bench/fdhog "$FDS" "$TMP/dev/nvidia0" $((i % (PROCS / 8) == 0 ? 1 : 0)))")
done
sleep 1
holders=()
for ((i = 0; i < PROCS; i += PROCS / 8)); do holders+=("${pids[$i]}"); done
echo "host: $(nproc) CPUs, $(ls -d /proc/[0-9]* 2>/dev/null | wc -l) processes, $(find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) open fds; ${#holders[@]} hold GPU 0"

scenario() { # scenario healthy|leak
	{
		echo "gpu 0 used_mib=$((${#holders[@]} * 1000))"
		[ "$1" = leak ] && echo "gpu 1 used_mib=4096" || echo "gpu 1"
		for p in "${holders[@]}"; do echo "proc gpu=0 pid=$p mib=1000"; done
	} >"$TMP/scenario"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss() { awk '/^'"$2"':/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)

# serve_run NAME ARGS...: starts serve, one warm-up scrape, REPS scrapes; prints CPU ms per scrape,
# wall ms per scrape, RSS after (and peak).
serve_run() {
	local name=$1 port t0 t1 c0 c1; shift
	port=$((20000 + RANDOM % 30000))
	"$GW" serve --nvml "$PWD/build/tests/fake_nvml.so" --listen "127.0.0.1:$port" "$@" 2>/dev/null & SPID=$!
	for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.05; done
	curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"
	local rss0; rss0=$(rss "$SPID" VmRSS)
	c0=$(cpu_ticks "$SPID"); t0=$(date +%s%N)
	for ((i = 0; i < REPS; i++)); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics"; done
	t1=$(date +%s%N); c1=$(cpu_ticks "$SPID")
	printf '%-40s %9.1f %9.1f %9s %9s %9s\n' "$name" "$(echo "$c0 $c1 $HZ $REPS" | awk '{print ($2-$1)*1000/$3/$4}')" \
		"$(( (t1 - t0) / REPS / 1000 ))e-3" "$rss0" "$(rss "$SPID" VmRSS)" "$(rss "$SPID" VmHWM)"
	kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=
}

# The CPU ticks of this shell's waited-for children: cutime + cstime (stat fields 16 and 17,
# the 14th and 15th after the ") " that ends the command name).
children_ticks() { sed 's/.*) //' /proc/$$/stat | awk '{print $14 + $15}'; }

# oneshot NAME: `gpuwho metrics` REPS times; CPU ms per run (user+sys of the children).
oneshot() {
	local t0 t1 before after
	before=$(children_ticks)
	t0=$(date +%s%N)
	for ((i = 0; i < REPS; i++)); do "$GW" metrics --nvml "$PWD/build/tests/fake_nvml.so" >/dev/null; done
	t1=$(date +%s%N)
	after=$(children_ticks)
	printf '%-40s %9.1f %9.1f\n' "$1" "$(echo "$before $after $HZ $REPS" | awk '{print ($2-$1)*1000/$3/$4}')" \
		"$(echo "$t0 $t1 $REPS" | awk '{print ($2-$1)/$3/1e6}')"
}

printf '\n%-40s %9s %9s %9s %9s %9s\n' "serve, $REPS scrapes after a warm-up" "CPU ms" "wall ms" "RSS MiB" "after" "peak"
scenario healthy
serve_run "healthy (lazy collection)"
scenario leak
serve_run "leak, --scan-interval 0 (full walk each)" --scan-interval 0
serve_run "leak, --scan-interval 60 (default)"
printf '\n%-40s %9s %9s\n' "gpuwho metrics, $REPS runs" "CPU ms" "wall ms"
scenario healthy
oneshot "healthy (lazy collection)"
scenario leak
oneshot "leak (full walk and a 0.5 s resample)"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	oneshot_smi() {
		local before after
		before=$(children_ticks)
		for ((i = 0; i < REPS; i++)); do nvidia-smi --query-gpu=memory.used --format=csv >/dev/null; done
		after=$(children_ticks)
		printf '%-40s %9.1f\n' "nvidia-smi --query-gpu=memory.used" "$(echo "$before $after $HZ $REPS" | awk '{print ($2-$1)*1000/$3/$4}')"
	}
	oneshot_smi
else
	echo "nvidia-smi: not here (no NVIDIA driver on this host): no comparison"
fi
