#!/usr/bin/env bash
# gpuwho plan --log against published engine logs (tests/fixtures/logs): each fixture's header names
# its source, the model (a config under tests/fixtures/models), the checkpoint's size, the GPU as
# nvidia-smi shows it, the launch line, the engine's release where known (`# version:`, passed as
# --engine-version) and the token count the engine printed. plan must predict it within 10%.
# tests/fixtures/logs/retired/ holds logs of engines plan does not model by design (vLLM's V0
# engine, removed in 0.11; an SGLang release with a since-fixed sizing bug), each with the reason
# in its `# retired:` line: --log must still read them and say why they differ.
. "$(dirname "$0")/lib.sh"
LOGS="$TESTS/fixtures/logs"

hdr() { sed -n "s/^# $2: //p" "$1" | head -1; }

# plan_log FIXTURE: runs plan --json --log on it, prints the JSON.
plan_log() {
	local f=$1 model weights gpu version
	model=$(hdr "$f" model | cut -d' ' -f1); weights=$(hdr "$f" weights | cut -d' ' -f1); gpu=$(hdr "$f" gpu | cut -d' ' -f1)
	version=$(hdr "$f" version | cut -d' ' -f1)
	read -r -a launch <<<"$(hdr "$f" launch)"
	"$GPUWHO" plan --json --host-mem 2TB --gpu-mem "$gpu" --weights-gb "$weights" ${version:+--engine-version "$version"} \
		--model-config "$TESTS/fixtures/models/$model/config.json" --log "$f" -- "${launch[@]}"
}

test_every_fixture_is_within_10_percent() {
	local n=0 f out printed
	for f in "$LOGS"/*.log; do
		n=$((n + 1))
		out=$(plan_log "$f"); [ "$?" -le 1 ] || fail "$(basename "$f"): exit $?: $out"
		printed=$(hdr "$f" printed)
		[ -n "$printed" ] || fail "$(basename "$f") has no '# printed:' line"
		[ -z "$(hdr "$f" known-miss)$(hdr "$f" retired)" ] || fail "$(basename "$f"): a retired log belongs in retired/"
		expect_jq "$out" ".log.terms[0].term == \"tokens\" and .log.terms[0].printed == $printed"
		jq -e '.log.tokens_error | fabs <= 0.10' <<<"$out" >/dev/null ||
			fail "$(basename "$f"): predicted $(jq '.log.terms[0].predicted' <<<"$out"), printed $printed: error $(jq '.log.tokens_error' <<<"$out")"
	done
	[ "$n" -ge 8 ] || fail "only $n fixtures"
}

test_retired_logs_are_read_and_say_why_they_differ() {
	local n=0 f out
	for f in "$LOGS"/retired/*.log; do
		n=$((n + 1))
		[ -n "$(hdr "$f" retired)" ] || fail "$(basename "$f") has no '# retired:' reason"
		out=$(plan_log "$f"); [ "$?" -le 1 ] || fail "$(basename "$f"): exit $?: $out"
		expect_jq "$out" ".log.terms[0].printed == $(hdr "$f" printed)"
		expect_jq "$out" '.log.summary | length > 0'
	done
	[ "$n" -ge 3 ] || fail "only $n retired logs"
}

test_v0_logs_are_named_as_v0() {
	local f
	for f in "$LOGS"/retired/vllm-*.log; do
		out=$(plan_log "$f") || [ $? -eq 1 ] || fail "exit $?"
		expect_jq "$out" '[.notes[] | select(test("V0 engine"))] | length == 1'
	done
}

test_text_report_compares_term_by_term() {
	out=$(plan_log "$LOGS/sglang-llama-3.3-70b-tp8-h200.log" | jq -r .log.summary) || fail "exit $?"
	out=$("$GPUWHO" plan --host-mem 2TB --gpu-mem 143771MiB --weights-gb 141.1GB \
		--model-config "$TESTS/fixtures/models/llama-3.1-70b/config.json" \
		--log "$LOGS/sglang-llama-3.3-70b-tp8-h200.log" -- python3 -m sglang.launch_server --model m --tp 8) || fail "exit $?"
	expect_has "$out" "Against the log"
	expect_has "$out" "KV tokens per rank"
	expect_has "$out" "2,795,207"
	expect_has "$out" "free at start (SGLang base)"
	expect_has "$out" "within 10%"
}

test_v0_log_names_the_activation_peak_as_the_difference() {
	out=$(plan_log "$LOGS/retired/vllm-llama-3-8b-a100-40gb-v0.log") || fail "exit $?"
	expect_jq "$out" '.log.summary | test("activation peak")'
	expect_jq "$out" '[.log.terms[] | select(.term == "weights")][0].error | fabs < 0.01'
}

test_broken_logs_are_a_clear_error_never_a_crash() {
	printf 'nothing to see here\n' >"$TMP/empty.log"
	out=$("$GPUWHO" plan --gpu-mem 80 --weights-gb 16 --log "$TMP/empty.log" -- vllm serve m 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
	expect_has "$out" "no SGLang or vLLM KV-cache line found"
	out=$("$GPUWHO" plan --gpu-mem 80 --log "$TMP/does-not-exist.log" -- vllm serve m 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
	head -c 300000 /dev/urandom >"$TMP/noise.log"
	printf '\0KV Cache is allocated. #tokens: 99999999999999999999999, K size: nan GB\n' >>"$TMP/noise.log"
	out=$("$GPUWHO" plan --gpu-mem 80 --weights-gb 16 --log "$TMP/noise.log" -- vllm serve m 2>&1); rc=$?
	[ "$rc" -le 2 ] || fail "exit $rc: $out"
	out=$("$GPUWHO" plan --gpu-mem 80 --weights-gb 16 --log /dev/null -- vllm serve m 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
}

test_hybrid_split_is_in_text_and_json() {
	out=$(plan_log "$LOGS/vllm-gpt-oss-120b-hybrid.log") || fail "exit $?"
	expect_jq "$out" '.kv_cache.hybrid.pool == "vllm_hybrid" and .kv_cache.hybrid.full_layers == 18 and .kv_cache.hybrid.sliding_layers == 18'
	expect_jq "$out" '.kv_cache.hybrid.window == 128 and .kv_cache.hybrid.groups == 2 and .kv_cache.hybrid.group_size == 18'
	out=$("$GPUWHO" plan --host-mem 2TB --gpu-mem 80 --weights-gb 65.25 --overhead 0.5 \
		--model-config "$TESTS/fixtures/models/gpt-oss-120b/config.json" -- \
		python -m sglang.launch_server --model openai/gpt-oss-120b --mem-fraction-static 0.9) || fail "exit $?"
	expect_has "$out" "18 full + 18 sliding layers (window 128): SGLang's SWA pool"
	expect_has "$out" "SWA pool:"
}

test_the_release_a_log_prints_is_the_release_modelled() {
	local m="$TESTS/fixtures/models/llama-3.1-70b/config.json"
	printf '(APIServer pid=1) INFO vLLM API server version 0.10.1\nINFO Available KV cache memory: 50.00 GiB\n' >"$TMP/old.log"
	out=$("$GPUWHO" plan --json --gpu-mem 143771MiB --weights-gb 141GB --model-config "$m" --log "$TMP/old.log" -- \
		vllm serve m -tp 4) || [ $? -eq 1 ] || fail "exit $?: $out"
	expect_jq "$out" '[.notes[] | select(. == "modelled as vLLM 0.10.1")] | length == 1'
	expect_jq "$out" '.log.version == "0.10.1"'
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "cudagraph")] | length == 0'
	sed 's/0\.10\.1/0.21.0/' "$TMP/old.log" >"$TMP/new.log"
	out=$("$GPUWHO" plan --json --gpu-mem 143771MiB --weights-gb 141GB --model-config "$m" --log "$TMP/new.log" -- \
		vllm serve m -tp 4) || [ $? -eq 1 ] || fail "exit $?: $out"
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "cudagraph")] | length == 1'
	# --engine-version wins over the log's banner.
	out=$("$GPUWHO" plan --json --engine-version 0.10 --gpu-mem 143771MiB --weights-gb 141GB --model-config "$m" \
		--log "$TMP/new.log" -- vllm serve m -tp 4) || [ $? -eq 1 ] || fail "exit $?: $out"
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "cudagraph")] | length == 0'
}

test_cuda_graph_profiling_switch_is_read_from_the_launch_and_the_log() {
	local m="$TESTS/fixtures/models/llama-3.1-70b/config.json" a
	for a in "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm serve m -tp 4" \
		"docker run --gpus all -e VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 vllm/vllm-openai --model m -tp 4" \
		"vllm serve m -tp 4 --enforce-eager"; do
		read -r -a launch <<<"$a"
		out=$("$GPUWHO" plan --json --gpu-mem 143771MiB --weights-gb 141GB --model-config "$m" -- "${launch[@]}") ||
			[ $? -eq 1 ] || fail "$a: exit $?: $out"
		expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "cudagraph")] | length == 0'
	done
	printf 'WARNING CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0).\nINFO GPU KV cache size: 100 tokens\n' >"$TMP/off.log"
	out=$("$GPUWHO" plan --json --gpu-mem 143771MiB --weights-gb 141GB --model-config "$m" --log "$TMP/off.log" -- \
		vllm serve m -tp 4) || [ $? -eq 1 ] || fail "exit $?: $out"
	expect_jq "$out" '[.gpu_memory.terms[] | select(.term == "cudagraph")] | length == 0'
}

test_a_bad_engine_version_is_a_usage_error() {
	local v
	for v in banana 0 1. .5 0.1000 100.1 "0.21 " ""; do
		out=$("$GPUWHO" plan --engine-version "$v" --gpu-mem 80 -- vllm serve m 2>&1); rc=$?
		[ "$rc" -eq 2 ] || fail "--engine-version '$v': exit $rc, want 2: $out"
		expect_has "$out" "--engine-version"
	done
}

run_tests
