#!/usr/bin/env bash
# gpuwho plan on the seed's host: 8 × 96 GiB GPUs, 408 GB available, Kimi-K2.5 at TP 8 holding
# 74 GiB per GPU before its KV pool (588 GiB of weights / 8 + the default 0.5 GiB overhead).
. "$(dirname "$0")/lib.sh"
# The arithmetic tests: Kimi-K2.5's KV shape alone, the weights split evenly and a fixed 0.5 GiB
# overhead, so that every number below can be checked by hand.
KIMI="$TESTS/fixtures/models/kimi-k2.5-kv/config.json"
SEED=(--gpu-mem 96GiB --host-mem 408GB --weights-gb 588GiB --overhead 0.5 --model-config "$KIMI")
# The prediction test: the model's real config.json, its checkpoint (595 GB: 1.015e12 expert
# parameters in int4 with a bf16 scale per 32, + 28 GB of 16-bit rest) and the seed's GPUs as
# nvidia-smi shows them (97,887 MiB), everything else modelled.
REAL=(--gpu-mem 97887MiB --host-mem 408GB --weights-gb 595GB --model-config "$TESTS/fixtures/models/kimi-k2.5/config.json")
LAUNCH=(python3 -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 --trust-remote-code)
flat() { tr -s ' \n' '  '; }

test_seed_085_fits_with_116k_tokens_and_29_requests() {
	out=$("$GPUWHO" plan "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.85); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 0 ] || fail "exit $rc, want 0"
	expect_has "$out" "Verdict: fits"
	expect_has "$out" "116,126 tokens per rank: 29 requests at once at 4,000 tokens each"
	expect_has "$out" "70,272 bytes a token"
	expect_has "$out" "pool 7.60 GiB"
}

test_seed_prediction_is_within_10_percent_of_what_sglang_printed() {
	# The seed: "approximately 116,000 tokens", "about 28 concurrent requests" of 4,000+ tokens.
	out=$("$GPUWHO" plan --json "${REAL[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.85) || fail "exit $?: $out"
	expect_jq "$out" '.kv_cache.tokens_per_rank >= 104400 and .kv_cache.tokens_per_rank <= 127600'
	expect_jq "$out" '.kv_cache.concurrency >= 26 and .kv_cache.concurrency <= 30'
	expect_jq "$out" '.gpu_memory.replicated_bytes_per_gpu > 2e9 and .gpu_memory.context_bytes > 0'
	expect_jq "$out" '[.gpu_memory.terms[].term] | index("replicated") != null'
}

test_seed_085_json_numbers() {
	out=$("$GPUWHO" plan --json "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.85) || fail "exit $?"
	expect_jq "$out" '.verdict == "fits" and .kv_cache.bytes_per_token == 70272'
	expect_jq "$out" '.kv_cache.tokens_per_rank >= 115000 and .kv_cache.tokens_per_rank <= 117000'
	expect_jq "$out" '.kv_cache.concurrency >= 28 and .kv_cache.concurrency <= 29'
	expect_jq "$out" '.gpus.gpus == 8 and .model.attention == "mla" and .model.layers == 61'
}

test_seed_093_hicache_300_is_per_rank_and_exits_1() {
	out=$("$GPUWHO" plan "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.93 \
		--enable-hierarchical-cache --hicache-size 300); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
	expect_has "$out" "Verdict: DOES NOT FIT — host memory"
	expect_has "$out" "--hicache-size 300 is per rank: 8 ranks × 300 GB = 2,400 GB > 408 GB available; at most 49 per rank (SGLang keeps 10 GiB back)"
	# What the higher fraction buys: 15.28 GiB of pool, twice the tokens.
	expect_has "$out" "233,475 tokens per rank: 58 requests at once"
}

test_seed_093_json_names_the_largest_size_that_fits() {
	out=$("$GPUWHO" plan --json "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.93 \
		--enable-hierarchical-cache --hicache-size 300); rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
	expect_jq "$out" '.verdict == "does_not_fit" and .host_memory.verdict == "does_not_fit"'
	expect_jq "$out" '.host_memory.items[0] | .flag == "--hicache-size" and .count == 8 and .total_bytes == 2400000000000 and .max_value == 49'
	expect_jq "$out" '.kv_cache.tokens_per_rank == 233475 and .gpu_memory.verdict == "fits"'
}

test_suggested_size_49_then_fits() {
	out=$("$GPUWHO" plan "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.93 \
		--enable-hierarchical-cache --hicache-size 49); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 0 ] || fail "exit $rc, want 0: $out"
	expect_has "$out" "8 ranks × 49.0 GB = 392 GB of 408 GB available"
}

test_without_gpu_mem_says_so_and_still_judges_the_host() {
	out=$("$GPUWHO" plan --no-nvml --host-mem 408GB --model-config "$KIMI" -- "${LAUNCH[@]}" \
		--enable-hierarchical-cache --hicache-size 300); rc=$?; out=$(flat <<<"$out")
	[ "$rc" -eq 1 ] || fail "exit $rc, want 1"
	expect_has "$out" "GPU memory unknown: pass --gpu-mem GiB"
	expect_has "$out" "2,400 GB > 408 GB available"
	expect_has "$out" "70,272 bytes a token"
}

test_help_teaches_with_the_seed_example() {
	out=$("$GPUWHO" plan --help) || fail "exit $?"
	expect_has "$out" "Usage: gpuwho plan [OPTIONS] -- LAUNCH COMMAND..."
	expect_has "$out" "--hicache-size 300"
	expect_has "$out" "--gpu-mem SIZE"
	expect_has "$out" "Exit status"
}

test_text_fits_in_80_columns() {
	out=$("$GPUWHO" plan "${SEED[@]}" -- "${LAUNCH[@]}" --mem-fraction-static 0.93 --enable-hierarchical-cache --hicache-size 300)
	long=$(printf '%s\n' "$out" | awk '{ if (length($0) > 80) print }')
	[ -z "$long" ] || fail "lines over 80 columns: $long"
}

run_tests
