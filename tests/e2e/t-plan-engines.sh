#!/usr/bin/env bash
# gpuwho plan across engines: vLLM's total --kv-offloading-size versus SGLang's per-rank
# --hicache-size, vLLM launch forms, CUDA_VISIBLE_DEVICES, models found in the Hugging Face cache.
. "$(dirname "$0")/lib.sh"
LLAMA="$TESTS/fixtures/models/llama-3.1-70b/config.json"
flat() { tr -s ' \n' '  '; }

test_vllm_tp4_kv_offloading_size_is_the_total() {
	out=$("$GPUWHO" plan --json --gpu-mem 80 --host-mem 200GB --weights-gb 141 --model-config "$LLAMA" -- \
		vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 4 --kv-offloading-size 64); rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc, want 0"
	expect_jq "$out" '.engine == "vllm" and .gpus.gpus == 4'
	expect_jq "$out" '.host_memory.items[0] | .flag == "--kv-offloading-size" and .count == 1 and .total_bytes == 68719476736'
	expect_jq "$out" '.kv_cache.bytes_per_token == 81920'
	expect_jq "$out" '[.notes[] | select(test("GiB in total for the engine"))] | length == 1'
}

test_sglang_tp4_hicache_size_is_per_rank() {
	out=$("$GPUWHO" plan --gpu-mem 80 --host-mem 200GB --weights-gb 141 --model-config "$LLAMA" -- \
		python -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 4 \
		--enable-hierarchical-cache --hicache-size 64); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
	expect_has "$out" "--hicache-size 64 is per rank: 4 ranks × 64.0 GB = 256 GB > 200 GB available; at most 47 per rank"
}

test_vllm_api_server_module_and_equals_form() {
	out=$("$GPUWHO" plan --json --gpu-mem 80GiB --host-mem 1TB --weights-gb 141GB --model-config "$LLAMA" -- \
		python3 -m vllm.entrypoints.openai.api_server --model=m --tensor-parallel-size=8 \
		--gpu-memory-utilization=0.9 --unheard-of-flag 3) || fail "exit $?"
	expect_jq "$out" '.gpus.gpus == 8 and .kv_cache.bytes_per_token == 40960 and .gpu_memory.fraction == 0.9'
	expect_jq "$out" '.unknown_flags == ["--unheard-of-flag"]'
}

test_cuda_visible_devices_prefix_too_few_gpus_exits_1() {
	out=$("$GPUWHO" plan --gpu-mem 80 --host-mem 1TB --weights-gb 141 --model-config "$LLAMA" -- \
		CUDA_VISIBLE_DEVICES=2,3 vllm serve m -tp 4); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
	expect_has "$out" "needs 4 GPUs on this node but CUDA_VISIBLE_DEVICES makes 2 visible"
}

test_env_options_before_the_program_are_understood() {
	out=$("$GPUWHO" plan --json --gpu-mem 80 --host-mem 1TB --weights-gb 100 -- \
		env -u VAR -i CUDA_VISIBLE_DEVICES=2,3 python3 -m sglang.launch_server --model-path m --tp 2) || fail "exit $?: $out"
	expect_jq "$out" '.engine == "sglang" and .gpus.gpu_ids == ["2","3"]'
	out=$(CUDA_VISIBLE_DEVICES=4,5 "$GPUWHO" plan --json --gpu-mem 80 --host-mem 1TB --weights-gb 141 -- \
		env -u CUDA_VISIBLE_DEVICES vllm serve m -tp 2); rc=$?
	[ "$rc" -le 1 ] || fail "exit $rc: $out"   # 1 on a host with fewer than 2 GPUs
	expect_jq "$out" '.engine == "vllm" and .gpus.cuda_visible_devices == null'
}

test_cuda_visible_devices_from_our_environment_names_the_gpus() {
	out=$(CUDA_VISIBLE_DEVICES=4,5,6,7 "$GPUWHO" plan --json --gpu-mem 80 --host-mem 1TB --weights-gb 141 \
		--model-config "$LLAMA" -- vllm serve m -tp 4) || fail "exit $?"
	expect_jq "$out" '.gpus.gpu_ids == ["4","5","6","7"] and .gpus.cuda_visible_devices == "4,5,6,7"'
}

test_model_found_in_hf_cache_with_safetensors_sizes() {
	snap="$TMP/hub/models--org--tiny/snapshots/0123abcd"
	mkdir -p "$snap" "$TMP/hub/models--org--tiny/refs"
	printf 0123abcd >"$TMP/hub/models--org--tiny/refs/main"
	cp "$TESTS/fixtures/models/qwen2.5-0.5b/config.json" "$snap/"
	printf '{"metadata":{"total_size":988000000},"weight_map":{}}' >"$snap/model.safetensors.index.json"
	out=$(HF_HUB_CACHE="$TMP/hub" "$GPUWHO" plan --json --gpu-mem 24 --host-mem 64 -- vllm serve org/tiny) || fail "exit $?"
	expect_jq "$out" '.model.weights_bytes == 988000000 and .model.weights_source == "model.safetensors.index.json metadata.total_size"'
	expect_jq "$out" '.kv_cache.bytes_per_token == 12288 and .model.dir != null'
}

test_model_nowhere_asks_for_config_and_never_downloads() {
	out=$(HF_HUB_CACHE="$TMP/empty" "$GPUWHO" plan --gpu-mem 24 --host-mem 64 -- vllm serve org/absent); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 0 ] || fail "exit $rc, want 0 (nothing known does not fit)"
	expect_has "$out" "not a local folder nor in the Hugging Face cache"
	expect_has "$out" "pass --model-config FILE"
}

# Live NVML: CUDA's total is NVML's less the driver's reserve, and memory in use on the GPUs is gone
# for the launch (SGLang measures after it; vLLM refuses when less than total × utilization is free).
test_live_nvml_reserve_and_memory_in_use() {
	printf 'gpu 0 total_mib=81920 reserved_mib=512 used_mib=20480\ngpu 1 total_mib=81920 reserved_mib=512\n' >"$TMP/nv.scn"
	out=$(FAKE_NVML_SCENARIO="$TMP/nv.scn" "$GPUWHO" plan --json --nvml "$TESTBIN/fake_nvml.so" --host-mem 1TB \
		--weights-gb 16 --model-config "$TESTS/fixtures/models/qwen2.5-0.5b/config.json" -- \
		python3 -m sglang.launch_server --model-path m --mem-fraction-static 0.8); rc=$?
	[ "$rc" -le 1 ] || fail "exit $rc: $out"
	expect_jq "$out" '.gpu_memory.total_source == "NVML" and .gpu_memory.total_bytes == 85899345920'
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "driver_reserve" and .bytes == -536870912)] | length == 1'
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "others")] | length == 1'
	out=$(FAKE_NVML_SCENARIO="$TMP/nv.scn" "$GPUWHO" plan --json --nvml "$TESTBIN/fake_nvml.so" --host-mem 1TB \
		--weights-gb 16 --model-config "$TESTS/fixtures/models/qwen2.5-0.5b/config.json" -- vllm serve m); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1: $out"
	expect_jq "$out" '.gpu_memory.message | test("vLLM refuses to start: other processes hold 20.0 GiB")'
	expect_jq "$out" '.kv_cache.verdict == "does_not_fit" and (.kv_cache.message | test("will not start"))'
}

run_tests
