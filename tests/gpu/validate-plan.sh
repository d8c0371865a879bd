#!/usr/bin/env bash
# GPU validation of `gpuwho plan`'s GPU total on a real NVIDIA host (run as root from the repo root,
# after `make`, `nvcc -o build/cuda_total tests/gpu/cuda_total.cu` and
# `nvcc -o build/cuda_holder tests/gpu/cuda_holder.cu`):
#   1. CUDA's total (cudaMemGetInfo, what the engines size from) against nvidia-smi's total and
#      reserve, and the total plan reads live (NVML less its reserve): they must agree within 1 MiB;
#   2. with another process holding HOLD_MIB (default 20480), a vLLM launch does not fit (vLLM
#      refuses to start below total × utilization free) with the largest utilization that starts,
#      and SGLang's pool loses the held memory × its fraction.
# Prints what it measured; exits 1 when plan disagrees.
set -u
GW=${GW:-$PWD/build/gpuwho}
CT=${CT:-$PWD/build/cuda_total}
CH=${CH:-$PWD/build/cuda_holder}
HOLD_MIB=${HOLD_MIB:-20480}
M=${M:-$PWD/tests/fixtures/models/qwen3-0.6b/config.json}
TMP=$(mktemp -d /tmp/gpuwho-plan.XXXXXX)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
bad=0
plan() { "$GW" plan --json --host-mem 1TB --weights-gb 1.5GB --model-config "$M" -- "$@"; }

echo "== 1. the GPU total"
read -r _ cuda_b _ < <("$CT") || { echo "cuda_total failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.reserved --format=csv,noheader -i 0
out=$(plan vllm serve Qwen/Qwen3-0.6B)
live=$(jq '[.gpu_memory.terms[] | select(.term == "gpu_total" or .term == "driver_reserve") | .bytes] | add' <<<"$out")
awk -v c="$cuda_b" -v l="$live" 'BEGIN { printf "CUDA total %.2f MiB; plan (NVML less reserve) %.2f MiB; difference %.2f MiB\n",
	c / 1048576, l / 1048576, (l - c) / 1048576; exit !((l - c) < 1048576 && (c - l) < 1048576) }' || bad=1

echo "== 2. another process holds $HOLD_MIB MiB"
"$CH" "$TMP/ready" "$HOLD_MIB" >/dev/null 2>&1 &
for i in $(seq 600); do [ -s "$TMP/ready" ] && break; sleep 0.05; done
out=$(plan vllm serve Qwen/Qwen3-0.6B); rc=$?
echo "vLLM: exit $rc; $(jq -r '.gpu_memory.message' <<<"$out"); KV: $(jq -r '.kv_cache.verdict' <<<"$out")"
[ "$rc" -eq 1 ] && [ "$(jq -r .kv_cache.verdict <<<"$out")" = does_not_fit ] || bad=1
out=$(plan python -m sglang.launch_server --model-path Qwen/Qwen3-0.6B); rc=$?
echo "SGLang: exit $rc; fraction $(jq .gpu_memory.fraction <<<"$out"); others $(jq '[.gpu_memory.terms[] | select(.term == "others") | .bytes / 1073741824 * 100 | round / 100] | first' <<<"$out") GiB; tokens $(jq .kv_cache.tokens_per_rank <<<"$out")"
[ "$rc" -eq 0 ] || bad=1
exit $bad
