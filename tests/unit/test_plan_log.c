/* Unit tests for plan --log's reader: the lines SGLang and vLLM print, odd bytes, and the
 * term-by-term comparison with a plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/enginelog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB 1073741824.0

static void sglang_lines(void **state)
{
	(void)state;
	const char *t = "[2025-10-16 09:06:09 TP0] Init torch distributed ends. mem usage=1.96 GB\n"
			"[2025-10-16 09:06:10 TP0] Load weight begin. avail mem=137.34 GB\n"
			"[2025-10-16 09:06:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=120.91 GB, mem usage=16.43 GB.\n"
			"[2025-10-16 09:06:22 TP0] KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB\n"
			"[2025-10-16 09:06:22 TP1] KV Cache is allocated. #tokens: 1, K size: 1 GB, V size: 1 GB\n";
	struct engine_log lg;
	char *err = NULL;
	assert_int_equal(engine_log_parse(t, strlen(t), &lg, &err), 0);
	assert_int_equal(lg.engine, LAUNCH_SGLANG);
	assert_int_equal(lg.tokens, 2795207);   /* the first rank's line */
	assert_true(fabs(lg.kv_bytes - 106.62 * GIB) < 1e6);
	assert_true(fabs(lg.weights - 16.43 * GIB) < 1e6);
	assert_true(fabs(lg.free_before - 137.34 * GIB) < 1e6);
	assert_true(fabs(lg.comm - 1.96 * GIB) < 1e6);
	assert_int_equal(lg.lines, 5);
}

static void vllm_lines_v1_v0_and_refusals(void **state)
{
	(void)state;
	struct engine_log lg;
	char *err = NULL;
	const char *v1 = "(EngineCore_DP0 pid=1) INFO [gpu_model_runner.py:2007] Model loading took 65.9651 GiB and 12.8 seconds\n"
			 "(EngineCore_DP0 pid=1) INFO [gpu_worker.py:298] Available KV cache memory: 8.11 GiB\n"
			 "(EngineCore_DP0 pid=1) INFO [kv_cache_utils.py:864] GPU KV cache size: 178,880 tokens\r\n";
	assert_int_equal(engine_log_parse(v1, strlen(v1), &lg, &err), 0);
	assert_int_equal(lg.engine, LAUNCH_VLLM);
	assert_int_equal(lg.tokens, 178880);
	assert_false(lg.tokens_from_blocks);
	assert_true(fabs(lg.kv_bytes - 8.11 * GIB) < 1e6);
	assert_true(fabs(lg.weights - 65.9651 * GIB) < 1e6);
	const char *v0 = "INFO worker.py:241] the current vLLM instance can use total_gpu_memory (39.50GiB) x gpu_memory_utilization (0.90) = 35.55GiB\n"
			 "INFO worker.py:241] model weights take 14.96GiB; non_torch_memory takes 0.10GiB; PyTorch activation peak memory takes 9.37GiB\n"
			 "INFO gpu_executor.py:76] # GPU blocks: 5691, # CPU blocks: 2048";
	assert_int_equal(engine_log_parse(v0, strlen(v0), &lg, &err), 0);
	assert_int_equal(lg.tokens, 5691 * 16);
	assert_true(lg.tokens_from_blocks);
	assert_true(fabs(lg.total - 39.5 * GIB) < 1e6);
	assert_true(fabs(lg.activation - 9.37 * GIB) < 1e6);
	assert_true(fabs(lg.non_torch - 0.10 * GIB) < 1e6);
	const char *no = "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
			 "stored in KV cache (81536). Try increasing `gpu_memory_utilization`";
	assert_int_equal(engine_log_parse(no, strlen(no), &lg, &err), 0);
	assert_true(lg.refused);
	assert_int_equal(lg.tokens, 81536);
}

static void hostile_input_fails_with_a_message(void **state)
{
	(void)state;
	struct engine_log lg;
	char *err = NULL;
	assert_int_equal(engine_log_parse("", 0, &lg, &err), -22);
	assert_non_null(err);
	free(err);
	err = NULL;
	/* NULs inside a line, an absurd number, a comma without digits, no newline at the end. */
	const char t[] = "KV Cache\0 is allocated. #tokens: 1e999\nGPU KV cache size: ,5 tokens\nGPU KV cache size: 99999999999999999999";
	assert_int_equal(engine_log_parse(t, sizeof t - 1, &lg, &err), -22);
	free(err);
	err = NULL;
	/* A very long line is cut for matching, never overflowed. */
	size_t n = 200000;
	char *big = malloc(n + 64);
	memset(big, 'x', n);
	strcpy(big + n, "GPU KV cache size: 12 tokens\n");
	assert_int_equal(engine_log_parse(big, strlen(big), &lg, &err), -22);
	free(err);
	err = NULL;
	strcpy(big + 100, "\nGPU KV cache size: 12 tokens\n");
	assert_int_equal(engine_log_parse(big, strlen(big), &lg, &err), 0);
	assert_int_equal(lg.tokens, 12);
	free(big);
}

static void comparison_names_the_largest_term(void **state)
{
	(void)state;
	struct engine_log lg = {.engine = LAUNCH_VLLM, .has_tokens = true, .tokens = 91056, .has_weights = true,
				.weights = 14.96 * GIB, .has_activation = true, .activation = 9.37 * GIB};
	struct plan_result r = {.has_tokens = true, .tokens = 165008, .has_kv_pool = true, .kv_pool = 20.14 * GIB,
				.has_cell = true, .cell_bytes = 131072, .has_weights = true, .weights_per_gpu = 14.96 * GIB,
				.activation = 0.75 * GIB, .fraction = 0.9};
	struct log_compare c;
	engine_log_compare(&lg, &r, &c);
	assert_true(c.has_error);
	assert_true(fabs(c.error - (165008.0 - 91056) / 91056) < 1e-9);
	assert_string_equal(c.rows[1].key, "kv_pool");
	assert_true(c.rows[1].has_logged);   /* derived: 91,056 tokens × 128 KiB */
	assert_non_null(strstr(c.summary, "activation peak"));
	log_compare_free(&c);
}

/* vLLM 0.21+: the profiled CUDA graphs, the switch that turns them off, and the release banner. */
static void vllm_cuda_graph_and_version_lines(void **state)
{
	(void)state;
	struct engine_log lg;
	char *err = NULL;
	const char *t = "(APIServer pid=1) INFO 07-05 08:55:01 [api_server.py:1] vLLM API server version 0.21.1\n"
			"(Worker_TP0 pid=79) INFO [gpu_model_runner.py:6654] Estimated CUDA graph memory: 1.58 GiB total\n"
			"(Worker_TP1 pid=80) INFO [gpu_model_runner.py:6654] Estimated CUDA graph memory: 9.99 GiB total\n"
			"(Worker_TP0 pid=79) INFO [gpu_worker.py:466] Available KV cache memory: 20.36 GiB\n"
			"(EngineCore pid=58) INFO [kv_cache_utils.py:1733] GPU KV cache size: 3,076,565 tokens\n";
	assert_int_equal(engine_log_parse(t, strlen(t), &lg, &err), 0);
	assert_true(lg.has_cudagraph);
	assert_true(fabs(lg.cudagraph - 1.58 * GIB) < 1e6);   /* rank 0's, the first */
	assert_int_equal(lg.version, 21001);
	assert_false(lg.cudagraph_off);
	const char *off = "WARNING [gpu_worker.py:498] CUDA graph memory profiling is disabled "
			  "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, ...\n"
			  "INFO GPU KV cache size: 100 tokens\n";
	assert_int_equal(engine_log_parse(off, strlen(off), &lg, &err), 0);
	assert_true(lg.cudagraph_off);
	assert_int_equal(lg.version, 0);
	const char *v0 = "INFO 01-13 11:35:20 llm_engine.py:234] Initializing a V0 LLM engine (v0.6.6.post1) with config\n"
			 "INFO # GPU blocks: 5691, # CPU blocks: 2048\n";
	assert_int_equal(engine_log_parse(v0, strlen(v0), &lg, &err), 0);
	assert_int_equal(lg.version, 6006);
}

/* SGLang's SWA pool: the full pool's tokens come from "full_layer_tokens=", not from the first
 * "KV Cache is allocated" line (the SWA pool's); vLLM's concurrency line is read with its length. */
static void hybrid_pool_lines(void **state)
{
	(void)state;
	struct engine_log lg;
	char *err = NULL;
	const char *t = "[TP0] Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n"
			"[TP0] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB\n";
	assert_int_equal(engine_log_parse(t, strlen(t), &lg, &err), 0);
	assert_int_equal(lg.engine, LAUNCH_SGLANG);
	assert_int_equal(lg.tokens, 375360);
	assert_true(lg.has_swa_tokens);
	assert_int_equal(lg.swa_tokens, 300288);
	const char *v = "INFO [kv_cache_utils.py:1319] GPU KV cache size: 290,864 tokens\n"
			"INFO [kv_cache_utils.py:1324] Maximum concurrency for 32,768 tokens per request: 33.04x\n";
	assert_int_equal(engine_log_parse(v, strlen(v), &lg, &err), 0);
	assert_int_equal(lg.tokens, 290864);
	assert_true(lg.has_concurrency);
	assert_true(lg.concurrency_len == 32768);
	assert_true(fabs(lg.concurrency - 33.04) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sglang_lines),
		cmocka_unit_test(hybrid_pool_lines),
		cmocka_unit_test(vllm_lines_v1_v0_and_refusals),
		cmocka_unit_test(hostile_input_fails_with_a_message),
		cmocka_unit_test(vllm_cuda_graph_and_version_lines),
		cmocka_unit_test(comparison_names_the_largest_term),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
