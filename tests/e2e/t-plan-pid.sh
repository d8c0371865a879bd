#!/usr/bin/env bash
# gpuwho plan --pid reads a running server's command line (/proc/PID/cmdline) and its
# CUDA_VISIBLE_DEVICES (/proc/PID/environ).
. "$(dirname "$0")/lib.sh"
FAKE="$TESTBIN/fakeserver"
KIMI="$TESTS/fixtures/models/kimi-k2.5-kv/config.json"

test_pid_of_an_sglang_launch_is_planned() {
	CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 spawn "$FAKE" "$TMP/ready" python3 -m sglang.launch_server \
		--model-path moonshotai/Kimi-K2.5 --tp 8 --mem-fraction-static 0.93 --enable-hierarchical-cache --hicache-size 300
	wait_file "$TMP/ready"
	pid=$(cat "$TMP/ready")
	out=$("$GPUWHO" plan --json --pid "$pid" --gpu-mem 96 --host-mem 408GB --weights-gb 588GiB --overhead 0.5 --model-config "$KIMI"); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1: $out"
	expect_jq "$out" ".pid == $pid and .engine == \"sglang\" and .command[0] == \"python3\""
	expect_jq "$out" '.host_memory.items[0].max_value == 49 and .kv_cache.tokens_per_rank == 233475'
	expect_jq "$out" '.gpus.cuda_visible_devices == "0,1,2,3,4,5,6,7" and (.gpus.gpu_ids | length) == 8'
}

test_pid_environ_overrides_our_own_cuda_visible_devices() {
	CUDA_VISIBLE_DEVICES=6,7 spawn "$FAKE" "$TMP/ready" vllm serve org/m -tp 2
	wait_file "$TMP/ready"
	out=$(CUDA_VISIBLE_DEVICES=0 "$GPUWHO" plan --json --pid "$(cat "$TMP/ready")" --gpu-mem 80 --host-mem 64) || fail "exit $?"
	expect_jq "$out" '.gpus.gpu_ids == ["6","7"] and .engine == "vllm"'
}

test_pid_of_something_else_is_a_usage_error() {
	spawn "$FAKE" "$TMP/ready" nginx -g daemon-off
	wait_file "$TMP/ready"
	out=$("$GPUWHO" plan --pid "$(cat "$TMP/ready")" 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2"
	expect_has "$out" "not an SGLang or vLLM launch"
}

test_pid_with_an_absurd_parallel_product_is_a_usage_error() {
	spawn "$FAKE" "$TMP/ready" vllm serve m -tp 65536 -pp 65536 --kv-offloading-size 1
	wait_file "$TMP/ready"
	out=$("$GPUWHO" plan --pid "$(cat "$TMP/ready")" --gpu-mem 80 --host-mem 64 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
	expect_has "$out" "-tp 65536 × -pp 65536"
}

test_pid_that_does_not_exist_cannot_be_inspected() {
	out=$("$GPUWHO" plan --pid 4194303 2>&1); rc=$?
	[ "$rc" -eq 3 ] || fail "exit $rc, want 3"
	expect_has "$out" "no such process"
}

test_pid_and_a_command_together_is_a_usage_error() {
	out=$("$GPUWHO" plan --pid 1 -- vllm serve m 2>&1); rc=$?
	[ "$rc" -eq 2 ] || fail "exit $rc, want 2"
}

run_tests
