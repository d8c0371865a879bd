#!/usr/bin/env bash
# gpuwho plan refuses malformed launch lines and absurd values with exit 2, naming the flag, and
# never crashes; escape sequences in the command line never reach the terminal raw.
. "$(dirname "$0")/lib.sh"
KIMI="$TESTS/fixtures/models/kimi-k2.5/config.json"
SG=(python3 -m sglang.launch_server --model-path m --tp 8)

# expect_usage NEEDLE ARGS...: gpuwho plan ARGS exits 2 and its stderr contains NEEDLE.
expect_usage() {
	local needle=$1 out rc
	shift
	out=$("$GPUWHO" plan --gpu-mem 96 --host-mem 408GB "$@" 2>&1 >/dev/null); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2 for: $* ($out)"
	expect_has "$out" "$needle"
}

test_absurd_engine_values_name_the_flag() {
	expect_usage "--mem-fraction-static 1.5" -- "${SG[@]}" --mem-fraction-static 1.5
	expect_usage "--mem-fraction-static 0" -- "${SG[@]}" --mem-fraction-static 0
	expect_usage "--mem-fraction-static NaN" -- "${SG[@]}" --mem-fraction-static NaN
	expect_usage "--hicache-size -300" -- "${SG[@]}" --hicache-size -300
	expect_usage "--hicache-size 1e30" -- "${SG[@]}" --hicache-size 1e30
	expect_usage "--tp needs a value" -- python3 -m sglang.launch_server --model-path m --tp
	expect_usage "--tp x8" -- python3 -m sglang.launch_server --model-path m --tp x8
	expect_usage "--gpu-memory-utilization 2" -- vllm serve m --gpu-memory-utilization 2
	expect_usage "--kv-offloading-size -64" -- vllm serve m --kv-offloading-size -64
	expect_usage "--kv-cache-dtype fp7" -- vllm serve m --kv-cache-dtype fp7
}

test_absurd_parallel_product_names_the_flags() {
	expect_usage "-tp 65536 × -pp 65536 is 4294967296 GPUs" -- vllm serve m -tp 65536 -pp 65536 --kv-offloading-size 1
	expect_usage "--tp 256 × --pp 256 × --dp 2" -- python3 -m sglang.launch_server --model-path m --tp 256 --pp 256 --dp 2
}

test_denormal_values_are_out_of_range_not_nan() {
	expect_usage "--mem-fraction-static 1e-320: out of range, too small to be real (a fraction above 0 and at most 1)" \
		-- "${SG[@]}" --mem-fraction-static 1e-320
	expect_usage "--gpu-mem 1e-320: too small to be real (64 MiB to 64 TiB)" --gpu-mem 1e-320 -- "${SG[@]}"
	expect_usage "--host-mem 1e-320GB: too small to be real" --host-mem 1e-320GB -- "${SG[@]}"
	expect_usage "--weights-gb 1e999: absurdly large" --weights-gb 1e999 -- "${SG[@]}"
	expect_usage "--overhead 1e-320: too small to be real (0 to 64 TiB)" --overhead 1e-320 -- "${SG[@]}"
}

test_unknown_engine_and_empty_command() {
	expect_usage "not an SGLang or vLLM launch" -- torchrun --nproc-per-node 8 train.py
	expect_usage "python -m http.server" -- python3 -m http.server
	expect_usage "no launch command"
	expect_usage "no model named" -- vllm serve
}

test_absurd_plan_options_name_the_option() {
	expect_usage "--gpu-mem -96" --gpu-mem -96 -- "${SG[@]}"
	expect_usage "--gpu-mem 1e30" --gpu-mem 1e30 -- "${SG[@]}"
	expect_usage "--host-mem nan" --host-mem nan -- "${SG[@]}"
	expect_usage "--weights-gb 12parsecs" --weights-gb 12parsecs -- "${SG[@]}"
	expect_usage "--avg-tokens" --avg-tokens 0 -- "${SG[@]}"
	expect_usage "--pid" --pid abc
}

test_missing_config_field_is_named() {
	expect_usage "num_hidden_layers: missing" --model-config "$TESTS/fixtures/models/broken-no-layers/config.json" -- "${SG[@]}"
	expect_usage "--model-config $TMP/none.json" --model-config "$TMP/none.json" -- "${SG[@]}"
	printf '{"text_config": {"num_hidden_layers": 61, "kv_lora_rank": 512}}' >"$TMP/c.json"
	expect_usage "text_config.qk_rope_head_dim: missing" --model-config "$TMP/c.json" -- "${SG[@]}"
}

test_config_number_beyond_any_integer_is_out_of_range() {
	printf '{"num_hidden_layers": 1e300, "num_attention_heads": 8, "head_dim": 128}' >"$TMP/c.json"
	expect_usage "num_hidden_layers: 1e300 is out of range" --model-config "$TMP/c.json" -- "${SG[@]}"
}

test_terminal_escapes_in_the_command_are_neutralised() {
	out=$("$GPUWHO" plan --gpu-mem 96 --host-mem 408GB --model-config "$KIMI" -- \
		python3 -m sglang.launch_server --model-path $'evil\e]0;pwned\a' --tp 8 2>&1)
	! grep -q $'\e' <<<"$out" || fail "raw ESC reached the output"
	expect_has "$out" 'evil\e]0;pwned'
	out=$("$GPUWHO" plan --gpu-mem 96 -- python3 -m sglang.launch_server --model-path m --tp $'8\e[2J' 2>&1)
	! grep -q $'\e' <<<"$out" || fail "raw ESC reached stderr"
}

test_unknown_flags_are_ignored_with_a_note() {
	out=$("$GPUWHO" plan --gpu-mem 96 --host-mem 408GB --model-config "$KIMI" -- "${SG[@]}" --frobnicate 3 --chunked-prefill-size 8192 | tr -s ' \n' '  ')
	expect_has "$out" "ignored flags plan does not model: --frobnicate"
	expect_not "$out" "--chunked-prefill-size"
}

run_tests
