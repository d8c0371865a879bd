/* Unit tests for the launch-command parser: engines, aliases, value forms, and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/launch.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define PARSE(l, ...)                                                                  \
	({                                                                             \
		char *argv_[] = {__VA_ARGS__};                                         \
		launch_parse((int)(sizeof argv_ / sizeof argv_[0]), argv_, (l));       \
	})

static void sglang_module_with_aliases_and_equals(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "python3", "-u", "-m", "sglang.launch_server", "--model-path", "/m", "--tp=8",
			       "--mem-fraction-static", "0.85", "--enable-hierarchical-cache", "--hicache-size", "300"),
			 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_string_equal(l.model, "/m");
	assert_int_equal(l.tp, 8);
	assert_true(l.has_mem_fraction);
	assert_true(l.mem_fraction > 0.849 && l.mem_fraction < 0.851);
	assert_true(l.hicache);
	assert_true(l.has_hicache_size);
	assert_true(l.hicache_size_gb == 300);
	launch_free(&l);

	assert_int_equal(PARSE(&l, "sglang", "serve", "--model", "x/y", "--tp-size", "4", "--dp-size", "2",
			       "--pp-size=2"), 0);
	assert_int_equal(l.tp, 4);
	assert_int_equal(l.dp, 2);
	assert_int_equal(l.pp, 2);
	launch_free(&l);

	assert_int_equal(PARSE(&l, "/usr/bin/python3.11", "-m", "sglang.launch_server", "--model-path", "m",
			       "--tensor-parallel-size", "2"), 0);
	assert_int_equal(l.tp, 2);
	launch_free(&l);
}

static void vllm_forms_positional_model_and_short_flags(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "meta-llama/Llama-3.1-70B", "-tp", "4", "--gpu-memory-utilization=0.9",
			       "--kv-offloading-size", "64", "--swap-space", "8", "--cpu-offload-gb", "2"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_string_equal(l.model, "meta-llama/Llama-3.1-70B");
	assert_int_equal(l.tp, 4);
	assert_true(l.has_kv_offload && l.kv_offload_gib == 64);
	assert_true(l.has_swap_space && l.swap_space_gib == 8);
	assert_true(l.has_cpu_offload && l.cpu_offload_gib == 2);
	launch_free(&l);

	assert_int_equal(PARSE(&l, "python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m",
			       "--tensor-parallel-size", "2", "--max-model-len", "32k"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_int_equal(l.tp, 2);
	assert_int_equal(l.context_len, 32000);
	launch_free(&l);

	/* How a console script shows in /proc/PID/cmdline. */
	assert_int_equal(PARSE(&l, "/usr/bin/python3", "/usr/local/bin/vllm", "serve", "m", "--max-model-len", "8K"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_int_equal(l.context_len, 8192);
	launch_free(&l);
}

static void env_prefix_sets_cuda_visible_devices(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "env", "CUDA_VISIBLE_DEVICES=4,5", "NCCL_DEBUG=INFO", "vllm", "serve", "m", "-tp", "2"), 0);
	assert_true(l.has_cuda_visible);
	assert_string_equal(l.cuda_visible, "4,5");
	launch_free(&l);
}

/* GNU env's options come before its assignments and the program: `env -u VAR python3 ...` runs
 * python3 (VAR was taken for the program). */
static void env_options_before_the_program_are_skipped(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "env", "-u", "VAR", "python3", "-m", "sglang.launch_server", "--model-path", "m"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_false(l.has_cuda_visible);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "/usr/bin/env", "-i", "-uVAR", "--unset=X", "--unset", "Y", "-0v", "--", "A=1",
			       "vllm", "serve", "m"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_string_equal(l.model, "m");
	launch_free(&l);
	/* Clusters (-iu NAME), getopt's unambiguous abbreviations, optional-value signal options, -C. */
	assert_int_equal(PARSE(&l, "env", "-iu", "VAR", "--un=Z", "--ignore-env", "--block-signal=PIPE", "--default-signal",
			       "-C", "/srv", "--chdir=/srv", "-C/srv", "vllm", "serve", "m"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	/* The working directory changes where a relative model path is: said in a note. */
	assert_int_equal(l.nnotes, 1);
	assert_non_null(strstr(l.notes[0], "env -C /srv"));
	launch_free(&l);
	/* A lone "-" is -i. */
	assert_int_equal(PARSE(&l, "env", "-", "CUDA_VISIBLE_DEVICES=1", "vllm", "serve", "m"), 0);
	assert_string_equal(l.cuda_visible, "1");
	launch_free(&l);
}

/* -u CUDA_VISIBLE_DEVICES and -i leave the launch without it: that is known, not "not given". */
static void env_unset_and_ignore_environment_clear_cuda_visible_devices(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "env", "-u", "CUDA_VISIBLE_DEVICES", "vllm", "serve", "m"), 0);
	assert_true(l.has_cuda_visible);
	assert_null(l.cuda_visible);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "CUDA_VISIBLE_DEVICES=3", "env", "-i", "vllm", "serve", "m"), 0);
	assert_true(l.has_cuda_visible);
	assert_null(l.cuda_visible);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "env", "CUDA_VISIBLE_DEVICES=1", "env", "--unset=CUDA_VISIBLE_DEVICES", "vllm", "serve", "m"), 0);
	assert_true(l.has_cuda_visible);
	assert_null(l.cuda_visible);
	launch_free(&l);
	/* Unset first, then assigned: the assignment wins, as env applies them in order. */
	assert_int_equal(PARSE(&l, "env", "-u", "CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES=2,3", "vllm", "serve", "m"), 0);
	assert_string_equal(l.cuda_visible, "2,3");
	launch_free(&l);
}

/* -S splits its string into words that env then reads as if given separately (options,
 * assignments, the program): the shebang form. */
static void env_split_string_is_split_into_words(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "env", "-S", "CUDA_VISIBLE_DEVICES=5,6  python3 -m\tsglang.launch_server", "--model-path",
			       "m", "--tp", "2"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_string_equal(l.cuda_visible, "5,6");
	assert_int_equal(l.tp, 2);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "env", "-v", "-S-u X vllm serve", "m"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_string_equal(l.model, "m");
	launch_free(&l);
	assert_int_equal(PARSE(&l, "env", "--split-string=vllm serve m -tp 4"), 0);
	assert_int_equal(l.tp, 4);
	launch_free(&l);
}

static void unknown_flags_are_recorded_with_their_values_skipped(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--frobnicate", "7", "--wobble", "--tp", "2"), 0);
	/* vLLM has no --tp: it is unknown too, and "2" is taken as its value. */
	assert_int_equal(l.nunknown, 3);
	assert_string_equal(l.unknown[0], "--frobnicate");
	assert_string_equal(l.unknown[1], "--wobble");
	assert_int_equal(l.tp, 1);
	launch_free(&l);
}

static void vllm_no_prefix_clears_a_boolean(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--enable-expert-parallel", "--no-enable-expert-parallel"), 0);
	assert_false(l.expert_parallel);
	launch_free(&l);
}

/* Each malformed line fails with an error naming the flag. */
static void expect_error(const char *needle, int argc, char **argv)
{
	struct launch l;
	assert_int_equal(launch_parse(argc, argv, &l), -EINVAL);
	assert_non_null(l.error);
	if (!strstr(l.error, needle))
		fail_msg("error '%s' does not name '%s'", l.error, needle);
	launch_free(&l);
}
#define EXPECT_ERROR(needle, ...)                                                   \
	do {                                                                        \
		char *argv_[] = {__VA_ARGS__};                                      \
		expect_error(needle, (int)(sizeof argv_ / sizeof argv_[0]), argv_); \
	} while (0)

static void malformed_values_name_the_flag(void **state)
{
	(void)state;
	EXPECT_ERROR("--tp abc", "sglang", "serve", "--model-path", "m", "--tp", "abc");
	EXPECT_ERROR("--tp needs a value", "sglang", "serve", "--model-path", "m", "--tp");
	EXPECT_ERROR("--tp needs a value", "sglang", "serve", "--model-path", "m", "--tp", "--dp", "2");
	EXPECT_ERROR("--tp 0", "sglang", "serve", "--model-path", "m", "--tp", "0");
	EXPECT_ERROR("--tp -8", "sglang", "serve", "--model-path", "m", "--tp", "-8");
	EXPECT_ERROR("--tp 2.5", "sglang", "serve", "--model-path", "m", "--tp", "2.5");
	EXPECT_ERROR("--tp 1e30", "sglang", "serve", "--model-path", "m", "--tp", "1e30");
	EXPECT_ERROR("--mem-fraction-static 1.5", "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "1.5");
	EXPECT_ERROR("--mem-fraction-static 0", "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "0");
	EXPECT_ERROR("--mem-fraction-static -0.2", "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "-0.2");
	EXPECT_ERROR("--mem-fraction-static nan", "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "nan");
	EXPECT_ERROR("--gpu-memory-utilization inf", "vllm", "serve", "m", "--gpu-memory-utilization", "inf");
	EXPECT_ERROR("--gpu-memory-utilization needs a value", "vllm", "serve", "m", "--gpu-memory-utilization=");
	EXPECT_ERROR("--hicache-size -5", "sglang", "serve", "--model-path", "m", "--hicache-size", "-5");
	EXPECT_ERROR("--hicache-size 1e30", "sglang", "serve", "--model-path", "m", "--hicache-size", "1e30");
	EXPECT_ERROR("--hicache-size 37.5", "sglang", "serve", "--model-path", "m", "--hicache-size", "37.5");
	EXPECT_ERROR("--hicache-size 0x10", "sglang", "serve", "--model-path", "m", "--hicache-size", "0x10");
	EXPECT_ERROR("--hicache-ratio 0", "sglang", "serve", "--model-path", "m", "--hicache-ratio", "0");
	EXPECT_ERROR("--kv-offloading-size -1", "vllm", "serve", "m", "--kv-offloading-size", "-1");
	EXPECT_ERROR("--swap-space 1e30", "vllm", "serve", "m", "--swap-space", "1e30");
	EXPECT_ERROR("--enable-dp-attention takes no value", "sglang", "serve", "--model-path", "m", "--enable-dp-attention=1");
	EXPECT_ERROR("--dp 3", "sglang", "serve", "--model-path", "m", "--tp", "8", "--dp", "3", "--enable-dp-attention");
	EXPECT_ERROR("--model-path", "python", "-m", "sglang.launch_server", "--tp", "8");
}

/* tp × pp × dp is a GPU count: each size alone may be within bounds and the product absurd (it
 * overflowed an int and divided by zero). The error names each factor as the command spelled it. */
static void parallel_sizes_whose_product_is_absurd_name_each_flag(void **state)
{
	(void)state;
	EXPECT_ERROR("-tp 65536 × -pp 65536 is 4294967296 GPUs", "vllm", "serve", "m", "-tp", "65536", "-pp", "65536",
		     "--kv-offloading-size", "1");
	EXPECT_ERROR("--tensor-parallel-size 65536 × --pipeline-parallel-size 65536", "vllm", "serve", "m",
		     "--tensor-parallel-size", "65536", "--pipeline-parallel-size", "65536");
	EXPECT_ERROR("--tp 256 × --pp 256 × --dp 2 is 131072 GPUs", "sglang", "serve", "--model-path", "m", "--tp", "256",
		     "--pp", "256", "--dp", "2");
	EXPECT_ERROR("--tp 65536 × --pp 65536", "sglang", "serve", "--model-path", "m", "--tp", "65536", "--pp", "65536",
		     "--nnodes", "2");
	EXPECT_ERROR("-dpl 65536 × -tp 2", "vllm", "serve", "m", "-tp", "2", "-dp", "2", "-dpl", "65536");
	/* At the bound it is a plan, and DP attention's DP ranks share the TP group's GPUs. */
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "-tp", "256", "-pp", "256"), 0);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "sglang", "serve", "--model-path", "m", "--tp", "65536", "--dp", "65536",
			       "--enable-dp-attention"), 0);
	launch_free(&l);
}

/* strtod says ERANGE for a value a double cannot hold: 1e-320 (a denormal) and 1e-400 (0) are
 * too small to be real, 1e999 too large; none of them is "not a number". */
static void values_beyond_a_double_are_out_of_range(void **state)
{
	(void)state;
	EXPECT_ERROR("--mem-fraction-static 1e-320: out of range, too small to be real (a fraction above 0 and at most 1)",
		     "sglang", "serve", "--model-path", "m", "--mem-fraction-static", "1e-320");
	EXPECT_ERROR("--gpu-memory-utilization 1e-400: out of range, too small to be real", "vllm", "serve", "m",
		     "--gpu-memory-utilization", "1e-400");
	EXPECT_ERROR("--hicache-ratio 1e-320: out of range, too small to be real (above 0 and at most 10000)", "sglang",
		     "serve", "--model-path", "m", "--hicache-ratio", "1e-320");
	EXPECT_ERROR("--hicache-size 1e-320: out of range, too small to be real (0 to 1,000,000)", "sglang", "serve",
		     "--model-path", "m", "--hicache-size", "1e-320");
	EXPECT_ERROR("--swap-space -1e-400: out of range, too small to be real", "vllm", "serve", "m", "--swap-space",
		     "-1e-400");
	EXPECT_ERROR("--cpu-offload-gb 2e-310: out of range", "vllm", "serve", "m", "--cpu-offload-gb", "2e-310");
	EXPECT_ERROR("--kv-offloading-size 1e-320: out of range", "vllm", "serve", "m", "--kv-offloading-size", "1e-320");
	EXPECT_ERROR("--swap-space 1e999: absurd (above 1,000,000", "vllm", "serve", "m", "--swap-space", "1e999");
	EXPECT_ERROR("--mem-fraction-static 1e999: a fraction must be above 0 and at most 1", "sglang", "serve",
		     "--model-path", "m", "--mem-fraction-static", "1e999");
	EXPECT_ERROR("--hicache-ratio -1e999: must be above 0", "sglang", "serve", "--model-path", "m", "--hicache-ratio",
		     "-1e999");
	EXPECT_ERROR("--tp 1e999: out of range (1 to 65536)", "sglang", "serve", "--model-path", "m", "--tp", "1e999");
	EXPECT_ERROR("--tp 1e-320: not a whole number", "sglang", "serve", "--model-path", "m", "--tp", "1e-320");
	EXPECT_ERROR("--base-gpu-id 1e-400: not a whole number", "sglang", "serve", "--model-path", "m", "--base-gpu-id",
		     "1e-400");
	EXPECT_ERROR("--max-model-len 1e999: out of range (1 to", "vllm", "serve", "m", "--max-model-len", "1e999");
	EXPECT_ERROR("--max-model-len 1e-400k: not a token count", "vllm", "serve", "m", "--max-model-len", "1e-400k");
}

static void unknown_engines_are_refused(void **state)
{
	(void)state;
	EXPECT_ERROR("not an SGLang or vLLM", "torchrun", "train.py");
	EXPECT_ERROR("python -m http.server", "python3", "-m", "http.server");
	EXPECT_ERROR("inline code", "python3", "-c", "print(1)");
	EXPECT_ERROR("only the 'serve'", "vllm", "bench", "m");
	EXPECT_ERROR("empty", "CUDA_VISIBLE_DEVICES=0");
	EXPECT_ERROR("empty", "env", "-u", "VAR");
	EXPECT_ERROR("env -u needs a value", "env", "-u");
	EXPECT_ERROR("env --unset needs a value", "env", "--unset");
	EXPECT_ERROR("env --frob: not an option env takes", "env", "--frob", "vllm", "serve", "m");
	EXPECT_ERROR("env -x: not an option env takes", "env", "-x", "vllm", "serve", "m");
	EXPECT_ERROR("env --ignore-environment takes no value", "env", "--ignore-environment=1", "vllm", "serve", "m");
	EXPECT_ERROR("env --help runs no command", "env", "--help");
	EXPECT_ERROR("env --i is ambiguous", "env", "--i", "vllm", "serve", "m");
	EXPECT_ERROR("env -S", "env", "-S", "vllm serve 'my model'");
	struct launch l;
	assert_int_equal(launch_parse(0, NULL, &l), -EINVAL);
	launch_free(&l);
}

static void nul_separated_cmdline_splits_into_argv(void **state)
{
	(void)state;
	static const char buf[] = "python3\0-m\0sglang.launch_server\0--tp\0008\0";
	int argc;
	char **argv = launch_argv_from_nul(buf, sizeof buf - 1, &argc);
	assert_int_equal(argc, 5);
	assert_string_equal(argv[0], "python3");
	assert_string_equal(argv[4], "8");
	assert_null(argv[5]);
	launch_argv_free(argv, argc);
	/* No trailing NUL (a process that rewrote its argv) still gives the last word. */
	argv = launch_argv_from_nul("a\0b", 3, &argc);
	assert_int_equal(argc, 2);
	assert_string_equal(argv[1], "b");
	launch_argv_free(argv, argc);
	argv = launch_argv_from_nul("", 0, &argc);
	assert_int_equal(argc, 0);
	launch_argv_free(argv, argc);
}

/* Launch lines as people paste them (issue 14): none of these may be refused. */
static void vllm_underscores_and_argparse_prefixes(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--tensor_parallel_size", "2", "--gpu_memory_utilization=0.8",
			       "--max_model_len", "32k", "--tensor-para", "4", "--max-num-batched", "4096"), 0);
	assert_int_equal(l.tp, 4);   /* the later spelling wins, as in argparse */
	assert_true(l.mem_fraction > 0.79 && l.mem_fraction < 0.81);
	assert_int_equal(l.context_len, 32000);
	assert_int_equal(l.max_batched, 4096);
	bool noted = false;
	for (size_t i = 0; i < l.nnotes; i++)
		noted |= strstr(l.notes[i], "--tensor-para taken as --tensor-parallel-size") != NULL;
	assert_true(noted);
	launch_free(&l);
	/* An ambiguous prefix (--max-num-s... vs --max-num-b...) is no abbreviation: unknown, not refused. */
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--max-num", "8"), 0);
	assert_int_equal(l.nunknown, 1);
	launch_free(&l);
}

static void containers_and_wrappers(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "docker", "run", "--rm", "--gpus", "all", "-e", "CUDA_VISIBLE_DEVICES=4,5", "--ipc=host",
			       "-p", "8000:8000", "-v", "/data:/data", "vllm/vllm-openai:v0.10.0", "--model", "m",
			       "--tensor-parallel-size", "2"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	assert_string_equal(l.model, "m");
	assert_string_equal(l.cuda_visible, "4,5");
	launch_free(&l);
	/* The newer image's entrypoint is `vllm serve`: a positional model. */
	assert_int_equal(PARSE(&l, "docker", "run", "--gpus", "\"device=2,3\"", "vllm/vllm-openai", "org/model", "-tp", "2"), 0);
	assert_string_equal(l.model, "org/model");
	assert_string_equal(l.cuda_visible, "0,1");   /* the container sees its two devices as 0 and 1 */
	launch_free(&l);
	assert_int_equal(PARSE(&l, "podman", "run", "-d", "lmsysorg/sglang:latest", "python3", "-m", "sglang.launch_server",
			       "--model-path", "m", "--tp", "8"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_int_equal(l.tp, 8);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "docker", "run", "lmsysorg/sglang:v0.5.4", "--model-path", "m", "--tp", "2"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_int_equal(l.tp, 2);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "torchrun", "--nproc-per-node", "8", "--master_port", "29500", "-m",
			       "sglang.launch_server", "--model-path", "m", "--tp", "8"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_string_equal(l.entry, "torchrun -m sglang.launch_server");
	launch_free(&l);
	assert_int_equal(PARSE(&l, "nohup", "numactl", "--cpunodebind=0", "-m", "0", "taskset", "-c", "0-31", "nice", "-n",
			       "5", "uv", "run", "--with", "x", "python", "-m", "sglang_router.launch_server", "--model-path",
			       "m", "--dp", "2"), 0);
	assert_int_equal(l.engine, LAUNCH_SGLANG);
	assert_int_equal(l.dp, 2);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "sudo", "-E", "-u", "svc", "CUDA_VISIBLE_DEVICES=3", "vllm", "serve", "m"), 0);
	assert_string_equal(l.cuda_visible, "3");
	launch_free(&l);
	assert_int_equal(PARSE(&l, "env", "-u", "CUDA_VISIBLE_DEVICES", "stdbuf", "-oL", "vllm", "serve", "m"), 0);
	assert_true(l.has_cuda_visible && !l.cuda_visible);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "torchrun", "--standalone", "/opt/vllm/vllm/entrypoints/openai/api_server.py", "--model", "m"), 0);
	assert_int_equal(l.engine, LAUNCH_VLLM);
	launch_free(&l);
}

static void memory_flags_of_issue_14(void **state)
{
	(void)state;
	struct launch l;
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--kv-cache-memory", "8G", "--kv-cache-dtype", "fp8_ds_mla",
			       "--speculative-config", "{\"method\": \"mtp\", \"num_speculative_tokens\": 1}"), 0);
	assert_true(l.has_kv_cache_memory && l.kv_cache_memory == 8.0 * 1073741824);
	assert_string_equal(l.kv_dtype, "fp8_ds_mla");
	assert_true(l.speculative);
	assert_string_equal(l.spec_algo, "mtp");
	launch_free(&l);
	assert_int_equal(PARSE(&l, "python3", "-m", "sglang.launch_server", "--model-path", "m", "--max-total-tokens",
			       "100000", "--chunked-prefill-size", "-1", "--cuda-graph-max-bs", "64", "--speculative-algo",
			       "EAGLE", "--disable-cuda-graph"), 0);
	assert_int_equal(l.max_total_tokens, 100000);
	assert_int_equal(l.chunked_prefill, -1);
	assert_int_equal(l.cuda_graph_max_bs, 64);
	assert_string_equal(l.spec_algo, "EAGLE");
	assert_true(l.no_cuda_graph);
	launch_free(&l);
	assert_int_equal(PARSE(&l, "vllm", "serve", "m", "--kv-cache-memory", "lots"), -EINVAL);
	assert_non_null(strstr(l.error, "--kv-cache-memory lots"));
	launch_free(&l);
}

static void config_yaml_sits_under_the_command_line(void **state)
{
	(void)state;
	struct launch l;
	char *argv[] = {"vllm", "serve", "m", "--config", "c.yaml", "-tp", "8"};
	assert_int_equal(launch_parse(7, argv, &l), 0);
	assert_string_equal(l.config_file, "c.yaml");
	const char *yaml = "# served by ops\ntensor_parallel_size: 2\ngpu-memory-utilization: 0.75\n"
			   "enable_expert_parallel: true\nenforce_eager: false\nserved-model-name: \"x y\"\n  nested: 1\n";
	assert_int_equal(launch_apply_config(&l, yaml, strlen(yaml), 7, argv), 0);
	assert_int_equal(l.tp, 8);   /* the command line wins */
	assert_true(l.mem_fraction > 0.74 && l.mem_fraction < 0.76);
	assert_true(l.expert_parallel);
	assert_false(l.no_cuda_graph);
	assert_string_equal(l.config_file, "c.yaml");
	launch_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sglang_module_with_aliases_and_equals),
		cmocka_unit_test(vllm_forms_positional_model_and_short_flags),
		cmocka_unit_test(env_prefix_sets_cuda_visible_devices),
		cmocka_unit_test(env_options_before_the_program_are_skipped),
		cmocka_unit_test(env_unset_and_ignore_environment_clear_cuda_visible_devices),
		cmocka_unit_test(env_split_string_is_split_into_words),
		cmocka_unit_test(unknown_flags_are_recorded_with_their_values_skipped),
		cmocka_unit_test(vllm_no_prefix_clears_a_boolean),
		cmocka_unit_test(malformed_values_name_the_flag),
		cmocka_unit_test(parallel_sizes_whose_product_is_absurd_name_each_flag),
		cmocka_unit_test(values_beyond_a_double_are_out_of_range),
		cmocka_unit_test(unknown_engines_are_refused),
		cmocka_unit_test(nul_separated_cmdline_splits_into_argv),
		cmocka_unit_test(vllm_underscores_and_argparse_prefixes),
		cmocka_unit_test(containers_and_wrappers),
		cmocka_unit_test(memory_flags_of_issue_14),
		cmocka_unit_test(config_yaml_sits_under_the_command_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
