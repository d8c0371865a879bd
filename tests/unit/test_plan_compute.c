/* Unit tests for plan's arithmetic, checked against hand-computed numbers (docs/plan.md), and for
 * the /proc/meminfo parser it relies on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/plan.h"
#include "sys/meminfo.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB PLAN_GIB

static void load_model(const char *name, struct model_config *m)
{
	const char *t = getenv("TESTS");
	char *p = xasprintf("%s/fixtures/models/%s/config.json", t ? t : "tests", name);
	char *err = NULL;
	if (model_config_read(p, m, &err))
		fail_msg("%s: %s", p, err);
	free(p);
}

/* Parses argv, computes a plan with the given GPU/host facts. */
struct setup {
	struct launch l;
	struct model_config m;
	struct plan_result r;
};

static void run_plan(struct setup *s, const char *model, double gpu_gib, double host_bytes, double weights_bytes,
		     double overhead_gib, const char *cvd, int argc, char **argv)
{
	memset(s, 0, sizeof *s);
	if (launch_parse(argc, argv, &s->l))
		fail_msg("launch_parse: %s", s->l.error);
	if (model)
		load_model(model, &s->m);
	struct plan_input in = {
		.launch = &s->l,
		.model = model ? &s->m : NULL,
		.has_weights = weights_bytes > 0,
		.weights_bytes = weights_bytes,
		.has_gpu_total = gpu_gib > 0,
		.gpu_total_bytes = gpu_gib * GIB,
		.has_host_avail = host_bytes > 0,
		.host_avail_bytes = host_bytes,
		.overhead_bytes = overhead_gib * GIB,
		.avg_tokens = 4000,
		.host_gpus = 8,
		.cuda_visible = cvd,
	};
	char *err = NULL;
	if (plan_compute(&in, &s->r, &err))
		fail_msg("plan_compute: %s", err);
}

static void done(struct setup *s)
{
	plan_result_free(&s->r);
	model_config_free(&s->m);
	launch_free(&s->l);
}

#define RUN(s, model, gpu, host, weights, overhead, cvd, ...)                                              \
	do {                                                                                                \
		char *argv_[] = {__VA_ARGS__};                                                               \
		run_plan(s, model, gpu, host, weights, overhead, cvd, (int)(sizeof argv_ / sizeof argv_[0]), argv_); \
	} while (0)

/* The seed: 8 × 96 GiB, 74 GiB per GPU held before the KV pool (73.5 GiB weights + 0.5 overhead),
 * fraction 0.85: pool = 96 × 0.85 − 74 = 7.6 GiB = 8,160,437,862 bytes / 70,272 = 116,126 tokens;
 * 116,126 / 4,000 = 29 requests. */
static void seed_at_085_holds_116k_tokens_and_29_requests(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "kimi-k2.5-kv", 96, 408e9, 588 * GIB, 0.5, NULL, "python3", "-m", "sglang.launch_server", "--model-path",
	    "moonshotai/Kimi-K2.5", "--tp", "8", "--mem-fraction-static", "0.85");
	assert_true(s.r.has_cell);
	assert_true(s.r.cell_bytes == 70272);
	assert_true(fabs(s.r.kv_pool - 7.6 * GIB) < 1024);
	assert_int_equal(s.r.tokens, 116126);
	assert_int_equal(s.r.concurrency, 29);
	assert_int_equal(s.r.gpus, 8);
	assert_int_equal(s.r.gpu_verdict, PLAN_FITS);
	assert_int_equal(s.r.kv_verdict, PLAN_FITS);
	assert_int_equal(s.r.host_verdict, PLAN_FITS);
	assert_int_equal(s.r.verdict, PLAN_FITS);
	/* 0.01 × 96 GiB = 1,030,792,151 bytes / 70,272 = 14,668 tokens per hundredth of the fraction. */
	assert_int_equal(s.r.tokens_per_point, 14668);
	done(&s);
}

/* 0.93 with --hicache-size 300: pool = 96 × 0.93 − 74 = 15.28 GiB → 233,475 tokens, 58 requests;
 * host: 8 × 300 GB = 2,400 GB > 408 GB; (408 GB − 10 GiB) / 8 = 49.66 → at most 49 GB per rank. */
static void seed_at_093_with_hicache_300_does_not_fit_and_says_49(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "kimi-k2.5-kv", 96, 408e9, 588 * GIB, 0.5, NULL, "python3", "-m", "sglang.launch_server", "--model-path",
	    "moonshotai/Kimi-K2.5", "--tp", "8", "--mem-fraction-static", "0.93", "--enable-hierarchical-cache",
	    "--hicache-size", "300");
	assert_int_equal(s.r.tokens, 233475);
	assert_int_equal(s.r.concurrency, 58);
	assert_int_equal(s.r.nhost, 1);
	struct plan_host_item *it = &s.r.host[0];
	assert_string_equal(it->flag, "--hicache-size");
	assert_int_equal(it->count, 8);
	assert_true(it->total_bytes == 2400e9);
	assert_int_equal(it->verdict, PLAN_NO_FIT);
	assert_true(it->has_max);
	assert_true(it->max_value == 49);
	assert_string_equal(it->message, "--hicache-size 300 is per rank: 8 ranks × 300 GB = 2,400 GB > 408 GB available; "
					 "at most 49 per rank (SGLang keeps 10 GiB back)");
	assert_int_equal(s.r.host_verdict, PLAN_NO_FIT);
	assert_int_equal(s.r.verdict, PLAN_NO_FIT);
	done(&s);
}

/* Without a size, the host pool is --hicache-ratio (default 2) × the device pool per rank:
 * 2 × 15.28 GiB × 8 = 262.5 GB of 408: fits. */
static void hicache_ratio_scales_the_device_pool(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "kimi-k2.5-kv", 96, 408e9, 588 * GIB, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "8",
	    "--mem-fraction-static", "0.93", "--enable-hierarchical-cache");
	assert_int_equal(s.r.nhost, 1);
	assert_string_equal(s.r.host[0].flag, "--hicache-ratio");
	assert_true(fabs(s.r.host[0].total_bytes - 2 * 8 * (96 * 0.93 - 74) * GIB) < 1e4);
	assert_int_equal(s.r.host_verdict, PLAN_FITS);
	done(&s);
	/* Ratio 4 asks 525 GB: does not fit; (408 GB − 10 GiB) / 8 / 16.4 GB = 3.0. */
	RUN(&s, "kimi-k2.5-kv", 96, 408e9, 588 * GIB, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "8",
	    "--mem-fraction-static", "0.93", "--enable-hierarchical-cache", "--hicache-ratio", "4");
	assert_int_equal(s.r.host[0].verdict, PLAN_NO_FIT);
	assert_true(fabs(s.r.host[0].max_value - 3.0) < 1e-9);
	done(&s);
}

/* Llama-3.1-70B: 8 KV heads × (128 + 128) × 80 layers × 2 bytes = 327,680 per token at TP 1,
 * 40,960 per rank at TP 8, and still 40,960 at TP 16 (one head replicated per rank). */
static void llama_70b_kv_bytes_per_token_by_tp(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "llama-3.1-70b", 0, 0, 0, 0.5, NULL, "vllm", "serve", "m");
	assert_true(s.r.cell_bytes == 327680);
	assert_int_equal(s.r.gpu_verdict, PLAN_UNKNOWN);
	assert_int_equal(s.r.kv_verdict, PLAN_UNKNOWN);
	done(&s);
	RUN(&s, "llama-3.1-70b", 0, 0, 0, 0.5, NULL, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cell_bytes == 40960);
	done(&s);
	RUN(&s, "llama-3.1-70b", 0, 0, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "16");
	assert_true(s.r.cell_bytes == 40960);
	done(&s);
	/* SGLang DP attention: TP 8 with DP 8 leaves attention TP 1, so every rank holds all 8 heads. */
	RUN(&s, "llama-3.1-70b", 0, 0, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "8", "--dp", "8",
	    "--enable-dp-attention");
	assert_int_equal(s.r.attn_tp, 1);
	assert_int_equal(s.r.gpus, 8);
	assert_true(s.r.cell_bytes == 327680);
	done(&s);
}

static void kv_dtype_changes_bytes_per_token(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "deepseek-v3", 0, 0, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "8",
	    "--kv-cache-dtype", "fp8_e4m3");
	assert_true(s.r.cell_bytes == 35136);
	done(&s);
	RUN(&s, "qwen2.5-0.5b", 0, 0, 0, 0.5, NULL, "vllm", "serve", "m", "--dtype", "float32");
	/* 2 KV heads × (64 + 64) × 24 layers × 4 bytes. */
	assert_true(s.r.cell_bytes == 24576);
	done(&s);
	/* An unknown dtype is refused, naming the flag. */
	struct launch l;
	char *argv[] = {"vllm", "serve", "m", "--kv-cache-dtype", "fp7"};
	assert_int_equal(launch_parse(5, argv, &l), 0);
	struct plan_input in = {.launch = &l, .avg_tokens = 4000, .host_gpus = -1};
	struct plan_result r;
	char *err = NULL;
	assert_int_not_equal(plan_compute(&in, &r, &err), 0);
	assert_non_null(strstr(err, "--kv-cache-dtype fp7"));
	free(err);
	plan_result_free(&r);
	launch_free(&l);
}

/* vLLM's --kv-offloading-size is the total across TP ranks: 64 GiB at TP 4 is 64 GiB for the node;
 * SGLang's --hicache-size 64 at TP 4 is 4 × 64 GB = 256 GB. */
static void vllm_kv_offloading_is_total_while_sglang_hicache_is_per_rank(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "llama-3.1-70b", 80, 200e9, 141e9, 0.5, NULL, "vllm", "serve", "m", "-tp", "4", "--kv-offloading-size", "64");
	assert_int_equal(s.r.nhost, 1);
	assert_int_equal(s.r.host[0].count, 1);
	assert_true(s.r.host[0].total_bytes == 64 * GIB);
	assert_int_equal(s.r.host_verdict, PLAN_FITS);
	done(&s);
	RUN(&s, "llama-3.1-70b", 80, 200e9, 141e9, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "4",
	    "--enable-hierarchical-cache", "--hicache-size", "64");
	assert_int_equal(s.r.host[0].count, 4);
	assert_true(s.r.host[0].total_bytes == 256e9);
	assert_int_equal(s.r.host_verdict, PLAN_NO_FIT);
	/* (200 GB − 10 GiB) / 4 = 47.3 → 47. */
	assert_true(s.r.host[0].max_value == 47);
	done(&s);
	/* vLLM per-GPU flags multiply by the GPUs: 4 × 60 GiB = 258 GB > 200 GB; --swap-space is
	 * listed but V1 allocates none of it. */
	RUN(&s, "llama-3.1-70b", 80, 200e9, 141e9, 0.5, NULL, "vllm", "serve", "m", "-tp", "4", "--swap-space", "100",
	    "--cpu-offload-gb", "60");
	assert_int_equal(s.r.nhost, 2);
	assert_true(s.r.host_total == 4 * 60 * GIB);
	assert_int_equal(s.r.host_verdict, PLAN_NO_FIT);
	done(&s);
}

static void weights_larger_than_the_budget_do_not_fit(void **state)
{
	(void)state;
	struct setup s;
	/* 141 GB on one 80 GiB GPU at 0.9: 131 GiB > 72 GiB; 141 GB / (72 − 0.5) GiB → at least 2 GPUs. */
	RUN(&s, "llama-3.1-70b", 80, 200e9, 141e9, 0.5, NULL, "vllm", "serve", "m");
	assert_int_equal(s.r.gpu_verdict, PLAN_NO_FIT);
	assert_non_null(strstr(s.r.gpu_message, "at least 2 GPUs"));
	assert_int_equal(s.r.kv_verdict, PLAN_NO_FIT);
	assert_int_equal(s.r.verdict, PLAN_NO_FIT);
	done(&s);
	/* At TP 2 the 0.9 fraction fits, and --max-model-len beyond the pool does not. */
	RUN(&s, "llama-3.1-70b", 80, 200e9, 141e9, 0.5, NULL, "vllm", "serve", "m", "-tp", "2", "--max-model-len", "10000000");
	assert_int_equal(s.r.gpu_verdict, PLAN_FITS);
	assert_int_equal(s.r.kv_verdict, PLAN_NO_FIT);
	done(&s);
}

static void cuda_visible_devices_limits_and_names_the_gpus(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, NULL, 0, 0, 0, 0.5, "4,5,6,7", "vllm", "serve", "m", "-tp", "4");
	assert_int_equal(s.r.gpus_verdict, PLAN_FITS);
	assert_int_equal(s.r.ngpu_ids, 4);
	assert_string_equal(s.r.gpu_ids[0], "4");
	assert_string_equal(s.r.gpu_ids[3], "7");
	done(&s);
	RUN(&s, NULL, 0, 0, 0, 0.5, "0,1,2,3", "sglang", "serve", "--model-path", "m", "--tp", "8");
	assert_int_equal(s.r.gpus_verdict, PLAN_NO_FIT);
	assert_int_equal(s.r.verdict, PLAN_NO_FIT);
	done(&s);
	/* SGLang --base-gpu-id 4 on an 8-GPU host with no CUDA_VISIBLE_DEVICES: GPUs 4..7. */
	RUN(&s, NULL, 0, 0, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "4", "--base-gpu-id", "4");
	assert_int_equal(s.r.gpus_verdict, PLAN_FITS);
	assert_string_equal(s.r.gpu_ids[0], "4");
	done(&s);
	/* TP 4 × DP 2 without DP attention is 8 GPUs. */
	RUN(&s, NULL, 0, 0, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "4", "--dp", "2");
	assert_int_equal(s.r.gpus, 8);
	done(&s);
}

static void unknown_gpu_memory_still_judges_the_host(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "kimi-k2.5-kv", 0, 408e9, 0, 0.5, NULL, "sglang", "serve", "--model-path", "m", "--tp", "8",
	    "--enable-hierarchical-cache", "--hicache-size", "300");
	assert_int_equal(s.r.gpu_verdict, PLAN_UNKNOWN);
	assert_string_equal(s.r.gpu_message, "GPU memory unknown: pass --gpu-mem GiB");
	assert_true(s.r.cell_bytes == 70272);
	assert_int_equal(s.r.host_verdict, PLAN_NO_FIT);
	assert_int_equal(s.r.verdict, PLAN_NO_FIT);
	done(&s);
}

/* plan_compute divides by products of the launch's sizes: a launch built by hand (not by
 * launch_parse, which refuses these) must still not overflow or divide by zero. */
static void absurd_parallel_sizes_neither_overflow_nor_divide_by_zero(void **state)
{
	(void)state;
	struct launch l = {.engine = LAUNCH_VLLM, .model = "m", .tp = 65536, .pp = 65536, .dp = 1, .ep = 1, .nnodes = 1,
			   .gpu_id_step = 1, .has_kv_offload = true, .kv_offload_gib = 1};
	struct model_config m = {.layers = 2, .heads = 8, .kv_heads = 8, .head_dim = 64, .v_head_dim = 64};
	struct plan_input in = {.launch = &l, .model = &m, .has_weights = true, .weights_bytes = 1e9,
				.has_gpu_total = true, .gpu_total_bytes = 80 * GIB, .has_host_avail = true,
				.host_avail_bytes = 100e9, .overhead_bytes = 0.5 * GIB, .avg_tokens = 4000, .host_gpus = 8};
	struct plan_result r;
	char *err = NULL;
	assert_int_equal(plan_compute(&in, &r, &err), 0);
	assert_int_equal(r.gpus_verdict, PLAN_NO_FIT);
	assert_int_equal(r.host[0].count, 1);
	plan_result_free(&r);
	/* DP attention with more DP ranks than TP, and no tokens per request. */
	l = (struct launch){.engine = LAUNCH_SGLANG, .model = "m", .tp = 2, .pp = 1, .dp = 4, .ep = 1, .nnodes = 1,
			    .gpu_id_step = 1, .dp_attention = true};
	in.avg_tokens = 0;
	assert_int_equal(plan_compute(&in, &r, &err), 0);
	assert_int_equal(r.attn_tp, 1);
	assert_int_equal(r.concurrency, 0);
	plan_result_free(&r);
}

static void fmt_groups_thousands(void **state)
{
	(void)state;
	char b[40];
	assert_string_equal(plan_fmt(b, 2400, 0), "2,400");
	assert_string_equal(plan_fmt(b, 116126, 0), "116,126");
	assert_string_equal(plan_fmt(b, 1234567.891, 2), "1,234,567.89");
	assert_string_equal(plan_fmt(b, 49, 0), "49");
	assert_string_equal(plan_fmt(b, -1992, 0), "-1,992");
	assert_string_equal(plan_fmt(b, -0.01, 0), "0");
	assert_string_equal(plan_fmt(b, 999.96, 1), "1,000.0");
}

static void meminfo_parses_kb_and_needs_memtotal(void **state)
{
	(void)state;
	struct meminfo m;
	const char *text = "MemTotal:       471859200 kB\nMemFree:         9437184 kB\n"
			   "MemAvailable:   398437500 kB\nShmem:   1024 kB\nHugePages_Total:       4\n"
			   "HugePages_Free:        2\nHugepagesize:       2048 kB\n";
	assert_int_equal(meminfo_parse(text, &m), 0);
	assert_true(m.has_available);
	assert_int_equal(m.total, 471859200ull * 1024);
	assert_int_equal(m.available, 398437500ull * 1024);
	assert_int_equal(m.shmem, 1024 * 1024);
	assert_true(m.has_hugepages);
	assert_int_equal(m.hugepages_total, 4 * 2048 * 1024);
	assert_false(m.has_swap_total);
	assert_int_equal(meminfo_parse("MemFree: 10 kB\n", &m), -EINVAL);
	assert_int_equal(meminfo_parse("", &m), -EINVAL);
	/* An absurd value saturates instead of wrapping. */
	assert_int_equal(meminfo_parse("MemTotal: 99999999999999999999 kB\n", &m), -EINVAL);
	assert_int_equal(meminfo_parse("MemTotal: 18446744073709551 kB\n", &m), 0);
	assert_int_equal(m.total, UINT64_MAX);
	/* The live file parses, with MemAvailable on any kernel from 3.14. */
	assert_int_equal(meminfo_read(NULL, &m), 0);
	assert_true(m.total > 0);
}

/* The engines' own accounting (issue 14): the overhead modelled, not given. */
static int run_version;   /* --engine-version for the next run_model, 0: current */

static void run_model(struct setup *s, const char *model, double gpu_bytes, double weights_bytes, int argc, char **argv)
{
	memset(s, 0, sizeof *s);
	if (launch_parse(argc, argv, &s->l))
		fail_msg("launch_parse: %s", s->l.error);
	if (model)
		load_model(model, &s->m);
	struct plan_input in = {
		.launch = &s->l, .model = model ? &s->m : NULL, .has_weights = weights_bytes > 0, .weights_bytes = weights_bytes,
		.has_gpu_total = gpu_bytes > 0, .gpu_total_bytes = gpu_bytes, .has_host_avail = true, .host_avail_bytes = 2e12,
		.estimate_overhead = true, .avg_tokens = 4000, .host_gpus = 8, .engine_version = run_version,
	};
	char *err = NULL;
	if (plan_compute(&in, &s->r, &err))
		fail_msg("plan_compute: %s", err);
}

#define RUNM(s, model, gpu, weights, ...)                                                           \
	do {                                                                                         \
		char *argv_[] = {__VA_ARGS__};                                                        \
		run_model(s, model, gpu, weights, (int)(sizeof argv_ / sizeof argv_[0]), argv_);      \
	} while (0)

#define MIB 1048576.0

/* The seed: Kimi-K2.5, TP 8, 0.85, 97,887 MiB GPUs, the 595 GB checkpoint: SGLang printed about
 * 116,000 tokens, about 28 requests of 4,000+ tokens. */
static void seed_predicts_116k_tokens_within_10_percent(void **state)
{
	(void)state;
	struct setup s;
	RUNM(&s, "kimi-k2.5", 97887 * MIB, 595e9, "python3", "-m", "sglang.launch_server", "--model-path", "k", "--tp", "8",
	     "--mem-fraction-static", "0.85");
	assert_true(s.r.tokens > 104400 && s.r.tokens < 127600);
	assert_true(s.r.concurrency >= 26 && s.r.concurrency <= 30);
	assert_true(s.r.weights_estimated);
	assert_true(s.r.replicated > 2 * GIB && s.r.replicated < 4 * GIB);   /* MLA q_a/kv_a, routers, MoonViT */
	assert_true(s.r.context > 0 && s.r.comm > 0);
	done(&s);
}

/* Pipeline parallelism: a rank holds its stage's layers' KV, so the per-token cell halves with PP 2
 * and the tokens do not. */
static void pipeline_stage_keeps_the_tokens(void **state)
{
	(void)state;
	struct setup a, b;
	RUNM(&a, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "4", "--max-model-len", "8192");
	RUNM(&b, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "4", "-pp", "2", "--max-model-len", "8192");
	assert_int_equal(a.r.stage_layers, 80);
	assert_int_equal(b.r.stage_layers, 40);
	assert_true(b.r.cell_bytes * 2 == a.r.cell_bytes);
	assert_true(b.r.weights_per_gpu < a.r.weights_per_gpu * 0.55);
	assert_true(b.r.tokens > a.r.tokens * 2);   /* half the weights per GPU and half the cell */
	done(&a);
	done(&b);
}

/* vllm serve DeepSeek-V3 --data-parallel-size 8 --enable-expert-parallel on 8 x H200: experts over
 * all 8 ranks, attention whole on each: about 100 GiB a GPU, not 641. */
static void vllm_dp8_expert_parallel_deepseek_fits_on_h200(void **state)
{
	(void)state;
	struct setup s;
	RUNM(&s, "deepseek-v3", 143771 * MIB, 688.6e9, "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--data-parallel-size", "8",
	     "--enable-expert-parallel", "--max-model-len", "32768");
	assert_true(s.r.weights_per_gpu > 70 * GIB && s.r.weights_per_gpu < 100 * GIB);
	assert_int_equal(s.r.gpu_verdict, PLAN_FITS);
	assert_true(s.r.tokens > 32768);
	done(&s);
	/* Without expert parallelism each DP replica would hold every expert: it does not fit. */
	RUNM(&s, "deepseek-v3", 143771 * MIB, 688.6e9, "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--data-parallel-size", "8");
	assert_int_equal(s.r.gpu_verdict, PLAN_NO_FIT);
	done(&s);
}

/* vLLM refuses to start when one max_model_len request does not fit; SGLang starts. */
static void vllm_refuses_what_one_request_cannot_fill(void **state)
{
	(void)state;
	struct setup s;
	RUNM(&s, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "2");
	assert_int_equal(s.r.max_model_len, 131072);
	assert_int_equal(s.r.kv_verdict, PLAN_NO_FIT);
	assert_non_null(strstr(s.r.kv_message, "vLLM refuses to start"));
	done(&s);
	RUNM(&s, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "2", "--max-model-len", "8192");
	assert_int_equal(s.r.kv_verdict, PLAN_FITS);
	done(&s);
	/* --kv-cache-memory sets the pool outright. */
	RUNM(&s, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "2", "--max-model-len", "8192",
	     "--kv-cache-memory", "4G");
	assert_true(s.r.kv_fixed);
	assert_int_equal(s.r.tokens, (uint64_t)(4 * GIB / 163840) / 16 * 16);
	done(&s);
}

/* SGLang's default fraction (server_args.py): on an H200, TP 8: (143,771 − 14,848) / 143,771. */
static void sglang_default_fraction_follows_its_formula(void **state)
{
	(void)state;
	struct setup s;
	/* 512 + 1.5 × 8,192 + 8 / 8 × 1,024 + CUDA graphs (2 × 512 decode, 58 prefill graphs × 8)
	 * = 15,312 MB reserved: (143,771 − 15,312) / 143,771 = 0.893 */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "python3", "-m", "sglang.launch_server", "--model", "m", "--tp", "8");
	assert_true(fabs(s.r.fraction - 0.893) < 1e-9);
	assert_true(s.r.fraction_assumed);
	/* sglang#11716 printed 2,795,207 tokens for this launch. */
	assert_true(fabs((double)s.r.tokens - 2795207) < 0.1 * 2795207);
	done(&s);
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "python3", "-m", "sglang.launch_server", "--model", "m", "--tp", "8",
	     "--max-total-tokens", "500000");
	assert_int_equal(s.r.tokens, 500000);
	done(&s);
	/* MLA: prefill graphs reserve a flat 1.5 GiB; an EAGLE draft 2 GiB more, and its layer joins
	 * the cell: 512 + 12,288 + 1,024 + 1,024 + 1,536 + 2,048 = 18,432 MB. */
	RUNM(&s, "deepseek-v3", 143771 * MIB, 688.6e9, "python3", "-m", "sglang.launch_server", "--model", "m", "--tp", "8",
	     "--speculative-algorithm", "EAGLE");
	assert_true(fabs(s.r.fraction - 0.872) < 1e-9);   /* (143,771 − 18,432) / 143,771 */
	assert_int_equal(s.r.stage_layers, 62);
	done(&s);
	/* A 24 GB GPU: chunked prefill 4,096, decode graphs to 48, 50 prefill graphs, no 10 GiB floor:
	 * 512 + 6,144 + 128 + 96 + 400 = 7,280 MB: (24,564 − 7,280) / 24,564 = 0.704. */
	RUNM(&s, "llama-3-8b", 24564 * MIB, 16.06e9, "python3", "-m", "sglang.launch_server", "--model", "m");
	assert_true(fabs(s.r.fraction - 0.704) < 1e-9);
	done(&s);
	/* --disable-cuda-graph drops the graphs' share: 512 + 6,144 + 128 = 6,784: 0.724. */
	RUNM(&s, "llama-3-8b", 24564 * MIB, 16.06e9, "python3", "-m", "sglang.launch_server", "--model", "m",
	     "--disable-cuda-graph");
	assert_true(fabs(s.r.fraction - 0.724) < 1e-9);
	done(&s);
	/* A multimodal model: Kimi-K2.5 (MLA) on 97,887 MiB GPUs, TP 8: 512 + 12,288 + 1,024 + 1,024 + 1,536
	 * = 16,384 MB: 0.833; MoonViT's 27 layers of 1,152 against ViT-L's 24 of 1,024 is a complexity
	 * ratio of 1.4238, so × 0.95 × (1 − 0.1 × 0.4238) = 0.833 × 0.90974. */
	RUNM(&s, "kimi-k2.5", 97887 * MIB, 595e9, "python3", "-m", "sglang.launch_server", "--model", "m", "--tp", "8");
	assert_true(fabs(s.r.fraction - 0.833 * 0.95 * (1 - 0.1 * (27.0 * 1152 * 1152 / (24.0 * 1024 * 1024) - 1))) < 1e-9);
	done(&s);
}

/* Published SGLang start-up logs print the resolved default in ServerArgs(... mem_fraction_static=...).
 * Current-release rows, by hand (H100 80GB: nvidia-smi's 81,559 MiB; chunked prefill 8,192, decode
 * graphs to 256 below TP 4, 58 prefill graphs × 8 MB = 464):
 *   docs CI (offline_engine_api, qwen2.5-0.5b, 2026-03-08), TP 1: 512 + 12,288 + 128 + 512 + 464
 *     = 13,904: (81,559 − 13,904) / 81,559 = 0.830, printed "mem_fraction_static=0.83";
 *   sglang#29092 (Qwen3-32B on H100, 2026-06), printed 0.828: TP 2 adds 128 MB: 14,032 → 0.828.
 * The same docs page built 2026-02-05 printed 0.835 (no prefill graphs yet: 13,440) and an
 * unflagged v0.5.2rc2 grok-2 on 8 × H100 (2025-09-11) 0.831 (512 + 12,288 + 1,024, no graph term):
 * older formulas, not modelled. */
static void sglang_default_fraction_matches_published_logs(void **state)
{
	(void)state;
	struct setup s;
	RUNM(&s, "qwen3-0.6b", 81559 * MIB, 1e9, "python3", "-m", "sglang.launch_server", "--model", "m");
	assert_true(fabs(s.r.fraction - 0.830) < 1e-9);
	done(&s);
	RUNM(&s, "qwen3-0.6b", 81559 * MIB, 1e9, "python3", "-m", "sglang.launch_server", "--model", "m", "--tp", "2");
	assert_true(fabs(s.r.fraction - 0.828) < 1e-9);
	done(&s);
}

/* vLLM 0.20+ keeps its CUDA graphs' memory out of the pool (PR 38284, in the 0.20.0 release): the
 * first graph 0.25 GiB, each other 8 MiB. Graphs: PIECEWISE at 1, 2, 4, 8..248 by 8, 256.. by 16 up to min(2 × max_num_seqs, 512),
 * FULL up to max_num_seqs. */
static void vllm_counts_cuda_graphs_since_0_20(void **state)
{
	(void)state;
	struct setup s;
	/* H200: 1,024 sequences: 51 + 51 graphs. */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cudagraph == 0.25 * GIB + 101 * 8 * MIB);
	double pool = s.r.kv_pool;
	done(&s);
	/* 32 sequences: PIECEWISE up to 64 (1, 2, 4, 8 .. 64: 11), FULL up to 32 (7). */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8", "--max-num-seqs", "32");
	assert_true(s.r.cudagraph == 0.25 * GIB + 17 * 8 * MIB);
	done(&s);
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8", "--enforce-eager");
	assert_true(s.r.cudagraph == 0);
	done(&s);
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0", "vllm", "serve", "m",
	     "-tp", "8");
	assert_true(s.r.cudagraph == 0);
	assert_true(fabs(s.r.kv_pool - pool - (0.25 * GIB + 101 * 8 * MIB)) < 1);   /* the pool gets it back */
	done(&s);
	run_version = 10000;   /* vLLM 0.10: not counted */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cudagraph == 0);
	done(&s);
	run_version = 19001;   /* 0.19 counted them only when asked */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cudagraph == 0);
	done(&s);
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1", "vllm", "serve", "m",
	     "-tp", "8");
	assert_true(s.r.cudagraph > 0);
	done(&s);
	run_version = 20000;   /* 0.20.0: counted by default */
	RUNM(&s, "llama-3.1-70b", 143771 * MIB, 141.1e9, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cudagraph == 0.25 * GIB + 101 * 8 * MIB);
	done(&s);
	run_version = 0;
}

/* The same PR raised vLLM's default --gpu-memory-utilization from 0.9 to 0.92 (vllm/config/cache.py).
 * The pool moves by 0.02 of the GPU's CUDA total: on an 80 GiB A100 (81,920 MiB, less plan's
 * 0.5 GiB estimate of the driver's reserve) 0.02 × 79.5 GiB = 1.59 GiB, every other term the same
 * (0.19 does not count the graphs: the variable makes both releases count them). */
static void vllm_default_utilization_is_0_92_since_0_20(void **state)
{
	(void)state;
	struct setup s;
	double pool[3];
	int versions[3] = {19001, 20000, 0};
	for (int i = 0; i < 3; i++) {
		run_version = versions[i];
		RUNM(&s, "llama-3-8b", 81920 * MIB, 16.06e9, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1", "vllm", "serve",
		     "m");
		assert_true(s.r.fraction_assumed);
		assert_true(s.r.fraction == (i == 0 ? 0.9 : 0.92));
		pool[i] = s.r.kv_pool;
		done(&s);
	}
	run_version = 0;
	assert_true(fabs(pool[1] - pool[0] - 0.02 * (81920 * MIB - 0.5 * GIB)) < 1);
	assert_true(pool[2] == pool[1]);   /* an unknown release is the current one */
	/* The flag given is the flag taken, whatever the release. */
	run_version = 20000;
	RUNM(&s, "llama-3-8b", 81920 * MIB, 16.06e9, "vllm", "serve", "m", "--gpu-memory-utilization", "0.9");
	assert_true(s.r.fraction == 0.9 && !s.r.fraction_assumed);
	done(&s);
	run_version = 0;
}

static void engine_versions_read_as_engines_print_them(void **state)
{
	(void)state;
	int v = -1;
	assert_int_equal(plan_parse_version("0.21", &v), 4);
	assert_int_equal(v, 21000);
	assert_int_equal(plan_parse_version("v0.7.2 rest", &v), 6);
	assert_int_equal(v, 7002);
	assert_int_equal(plan_parse_version("0.5.8.post1", &v), 11);
	assert_int_equal(v, 5008);
	assert_true(plan_parse_version("0.19.2rc1.dev8+g4b7f5ea1a", &v) > 0);
	assert_int_equal(v, 19002);
	assert_int_equal(plan_parse_version("1.0", &v), 3);
	assert_int_equal(v, 1000000);
	assert_int_equal(plan_parse_version("0.11.", &v), 5);   /* a trailing dot is not a patch */
	assert_int_equal(v, 11000);
	v = -1;
	assert_int_equal(plan_parse_version("", &v), 0);
	assert_int_equal(plan_parse_version("0", &v), 0);
	assert_int_equal(plan_parse_version(".5", &v), 0);
	assert_int_equal(plan_parse_version("100.1", &v), 0);
	assert_int_equal(plan_parse_version("0.1000", &v), 0);
	assert_int_equal(plan_parse_version("0.1.1000", &v), 0);
	assert_int_equal(plan_parse_version("0.99999999999999999999", &v), 0);
	assert_int_equal(v, -1);
}

/* KV dtypes: nvfp4 (0.5 + 1/16 bytes), fp8_ds_mla (656 bytes a layer), DeepSeek-V3.2's indexer. */
static void kv_dtypes_of_issue_14(void **state)
{
	(void)state;
	struct setup s;
	RUNM(&s, "llama-3.1-70b", 80 * GIB, 141e9, "vllm", "serve", "m", "-tp", "8", "--kv-cache-dtype", "nvfp4");
	assert_true(s.r.cell_bytes == 1 * 256 * 80 * 0.5625);
	done(&s);
	RUNM(&s, "deepseek-v3", 143771 * MIB, 688.6e9, "vllm", "serve", "m", "-tp", "8", "--kv-cache-dtype", "fp8_ds_mla");
	assert_true(s.r.cell_bytes == 656.0 * 61);
	done(&s);
	RUNM(&s, "deepseek-v3.2-exp", 143771 * MIB, 689e9, "vllm", "serve", "m", "-tp", "8", "--kv-cache-dtype", "fp8");
	assert_true(s.r.cell_bytes == (656.0 + 132) * 61);
	done(&s);
	RUNM(&s, "deepseek-v3.2-exp", 143771 * MIB, 689e9, "vllm", "serve", "m", "-tp", "8");
	assert_true(s.r.cell_bytes == (576.0 * 2 + 132) * 61);
	done(&s);
}

/* GPT-OSS-120B on vLLM with a 6 GiB pool (--kv-cache-memory 6G): 18 full + 18 sliding layers of
 * 8 KV heads × (64 + 64) × 2 bytes = 2,048 bytes a token and layer. The hybrid manager makes two
 * groups of 18 (18 < 1.5 × 18); a block is 16 tokens × 2,048 × 18 layers = 589,824 bytes:
 * 6,442,450,944 / 589,824 = 10,922 blocks; "GPU KV cache size" = 10,922 // 2 × 16 = 87,376. A
 * 131,072-token request reserves 8,192 full blocks + cdiv(127 + 8,192, 16) + 1 = 521 sliding ones:
 * 10,922 / 8,713 = 1.2535 requests, × 131,072 = 164,302 tokens (vLLM after 0.19). A 4,000-token
 * request: 250 + 251 = 501 blocks: 21 at once. */
static void gpt_oss_on_vllm_shares_one_block_pool_between_two_groups(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "gpt-oss-120b", 141, 0, 65.25e9, 0, NULL, "vllm", "serve", "openai/gpt-oss-120b", "--kv-cache-memory", "6G");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_VLLM_HYBRID);
	assert_int_equal(s.r.hy_full, 18);
	assert_int_equal(s.r.hy_swa, 18);
	assert_int_equal(s.r.hy_window, 128);
	assert_int_equal(s.r.hy_group_size, 18);
	assert_int_equal(s.r.hy_groups, 2);
	assert_true(s.r.layer_bytes == 2048);
	assert_int_equal(s.r.hy_blocks, 10922);
	assert_int_equal(s.r.tokens, 87376);
	assert_int_equal(s.r.hy_blocks_per_req, 8713);
	assert_int_equal(s.r.hy_capacity, 164302);
	assert_int_equal(s.r.concurrency, 21);
	assert_non_null(strstr(s.r.hy_formula, "18 full + 18 sliding"));
	done(&s);
}

/* Gemma 3 27B (62 layers, every 6th full: 10 full + 52 sliding, 16 KV heads × 256 × 2 = 8,192
 * bytes a token and layer) on vLLM with 10 GiB: groups of 10, the sliding ones 6 (the last padded
 * to 10), 7 in all; a block is 16 × 8,192 × 10 = 1,310,720 bytes: 8,192 blocks, 8,192 // 7 × 16 =
 * 18,720 tokens. With the manager off every layer holds every token: 10 GiB / (62 × 8,192) =
 * 21,140 → 21,136 in whole blocks, 13% more, as the padding costs. */
static void gemma3_on_vllm_pads_the_sliding_groups(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "gemma-3-27b", 141, 0, 54.8e9, 0, NULL, "vllm", "serve", "google/gemma-3-27b-it", "--kv-cache-memory", "10G");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_VLLM_HYBRID);
	assert_int_equal(s.r.hy_full, 10);
	assert_int_equal(s.r.hy_swa, 52);
	assert_int_equal(s.r.hy_group_size, 10);
	assert_int_equal(s.r.hy_groups, 7);
	assert_int_equal(s.r.hy_blocks, 8192);
	assert_int_equal(s.r.tokens, 18720);
	done(&s);
	RUN(&s, "gemma-3-27b", 141, 0, 54.8e9, 0, NULL, "vllm", "serve", "google/gemma-3-27b-it", "--kv-cache-memory", "10G",
	    "--disable-hybrid-kv-cache-manager");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_FULL);
	assert_int_equal(s.r.tokens, 21136);
	assert_non_null(strstr(s.r.hy_formula, "--disable-hybrid-kv-cache-manager"));
	done(&s);
	/* A KV connector turns the manager off too (config/vllm.py). */
	RUN(&s, "gemma-3-27b", 141, 0, 54.8e9, 0, NULL, "vllm", "serve", "google/gemma-3-27b-it", "--kv-cache-memory", "10G",
	    "--kv-transfer-config", "{\"kv_connector\":\"LMCacheConnectorV1\"}");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_FULL);
	assert_int_equal(s.r.tokens, 21136);
	done(&s);
}

/* GPT-OSS-120B on SGLang, one 80 GiB GPU at 0.9 with --overhead 0.5 and 64.5 GiB of weights:
 * pool 72 − 64.5 − 0.5 = 7 GiB = 7,516,192,768 bytes; the profile divides by all 36 layers
 * (73,728 bytes): 101,944 tokens. The SWA pool: full = 101,944 × 36 / (18 + 0.8 × 18) = 113,271,
 * SWA = 0.8 × 113,271 = 90,616. Off with --disable-hybrid-swa-memory or trtllm_mha: 101,944. */
static void gpt_oss_on_sglang_splits_full_and_swa_pools(void **state)
{
	(void)state;
	struct setup s;
	double w = 64.5 * GIB;
	RUN(&s, "gpt-oss-120b", 80, 0, w, 0.5, NULL, "python", "-m", "sglang.launch_server", "--model", "openai/gpt-oss-120b",
	    "--mem-fraction-static", "0.9");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_SGLANG_SWA);
	assert_true(fabs(s.r.kv_pool - 7 * GIB) < 1);
	assert_int_equal(s.r.tokens, 113271);
	assert_int_equal(s.r.swa_tokens, 90616);
	assert_true(s.r.swa_ratio == 0.8);
	done(&s);
	RUN(&s, "gpt-oss-120b", 80, 0, w, 0.5, NULL, "python", "-m", "sglang.launch_server", "--model", "openai/gpt-oss-120b",
	    "--mem-fraction-static", "0.9", "--swa-full-tokens-ratio", "0.5");
	/* 101,944 × 36 / (18 + 9) = 135,925; SWA 67,962. */
	assert_int_equal(s.r.tokens, 135925);
	assert_int_equal(s.r.swa_tokens, 67962);
	done(&s);
	RUN(&s, "gpt-oss-120b", 80, 0, w, 0.5, NULL, "python", "-m", "sglang.launch_server", "--model", "openai/gpt-oss-120b",
	    "--mem-fraction-static", "0.9", "--disable-hybrid-swa-memory");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_FULL);
	assert_int_equal(s.r.tokens, 101944);
	done(&s);
	RUN(&s, "gpt-oss-120b", 80, 0, w, 0.5, NULL, "python", "-m", "sglang.launch_server", "--model", "openai/gpt-oss-120b",
	    "--mem-fraction-static", "0.9", "--attention-backend", "trtllm_mha");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_FULL);
	assert_int_equal(s.r.tokens, 101944);
	done(&s);
}

/* SGLang keeps its SWA pool off for Gemma 2/3 (server_args.py): every layer counted. */
static void gemma3_on_sglang_counts_every_layer(void **state)
{
	(void)state;
	struct setup s;
	RUN(&s, "gemma-3-27b", 80, 0, 54.8e9, 0.5, NULL, "python", "-m", "sglang.launch_server", "--model", "google/gemma-3-27b-it",
	    "--mem-fraction-static", "0.9");
	assert_int_equal(s.r.pool_kind, PLAN_POOL_FULL);
	assert_true(s.r.cell_bytes == 62 * 8192);
	assert_non_null(strstr(s.r.hy_formula, "Gemma"));
	done(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seed_at_085_holds_116k_tokens_and_29_requests),
		cmocka_unit_test(seed_at_093_with_hicache_300_does_not_fit_and_says_49),
		cmocka_unit_test(hicache_ratio_scales_the_device_pool),
		cmocka_unit_test(llama_70b_kv_bytes_per_token_by_tp),
		cmocka_unit_test(kv_dtype_changes_bytes_per_token),
		cmocka_unit_test(vllm_kv_offloading_is_total_while_sglang_hicache_is_per_rank),
		cmocka_unit_test(weights_larger_than_the_budget_do_not_fit),
		cmocka_unit_test(seed_predicts_116k_tokens_within_10_percent),
		cmocka_unit_test(pipeline_stage_keeps_the_tokens),
		cmocka_unit_test(vllm_dp8_expert_parallel_deepseek_fits_on_h200),
		cmocka_unit_test(vllm_refuses_what_one_request_cannot_fill),
		cmocka_unit_test(sglang_default_fraction_follows_its_formula),
		cmocka_unit_test(sglang_default_fraction_matches_published_logs),
		cmocka_unit_test(kv_dtypes_of_issue_14),
		cmocka_unit_test(vllm_counts_cuda_graphs_since_0_20),
		cmocka_unit_test(vllm_default_utilization_is_0_92_since_0_20),
		cmocka_unit_test(engine_versions_read_as_engines_print_them),
		cmocka_unit_test(cuda_visible_devices_limits_and_names_the_gpus),
		cmocka_unit_test(unknown_gpu_memory_still_judges_the_host),
		cmocka_unit_test(absurd_parallel_sizes_neither_overflow_nor_divide_by_zero),
		cmocka_unit_test(fmt_groups_thousands),
		cmocka_unit_test(gpt_oss_on_vllm_shares_one_block_pool_between_two_groups),
		cmocka_unit_test(gemma3_on_vllm_pads_the_sliding_groups),
		cmocka_unit_test(gpt_oss_on_sglang_splits_full_and_swa_pools),
		cmocka_unit_test(gemma3_on_sglang_counts_every_layer),
		cmocka_unit_test(meminfo_parses_kb_and_needs_memtotal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
