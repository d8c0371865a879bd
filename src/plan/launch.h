/* launch: parse an SGLang or vLLM launch command line (without running it) into the facts that
 * decide its memory use: parallelism, memory fraction, KV dtype, host-memory flags. */
#ifndef GPUWHO_PLAN_LAUNCH_H
#define GPUWHO_PLAN_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

enum launch_engine { LAUNCH_UNKNOWN, LAUNCH_SGLANG, LAUNCH_VLLM };

/* One parsed launch. Counts default to 1; each optional value has a has_* flag; strings are
 * malloc'ed copies of what the command line said (raw: escape before printing). */
struct launch {
	enum launch_engine engine;
	char *entry;             /* how it was recognised, e.g. "python -m sglang.launch_server" */
	char *model;             /* --model-path / --model / vllm serve's positional */
	char *revision;          /* --revision */
	char *cuda_visible;      /* CUDA_VISIBLE_DEVICES=... given before the command, or NULL */
	bool has_cuda_visible;   /* the command sets it, or unsets it (env -u / -i: cuda_visible NULL) */

	int tp, dp, pp, ep;      /* tensor, data, pipeline, expert parallel sizes */
	int nnodes;              /* SGLang --nnodes */
	int dp_local;            /* vLLM --data-parallel-size-local (0: not given) */
	bool dp_attention;       /* SGLang --enable-dp-attention */
	bool expert_parallel;    /* vLLM --enable-expert-parallel */
	int base_gpu_id, gpu_id_step;   /* SGLang --base-gpu-id, --gpu-id-step */

	double mem_fraction;     /* SGLang --mem-fraction-static / vLLM --gpu-memory-utilization */
	bool has_mem_fraction;
	char *kv_dtype;          /* --kv-cache-dtype (NULL: auto) */
	char *dtype;             /* --dtype (NULL: auto) */
	int page_size;           /* SGLang --page-size / vLLM --block-size (0: not given) */
	long context_len;        /* --context-length / --max-model-len (0: not given) */
	long max_running;        /* --max-running-requests / --max-num-seqs (0: not given) */

	bool hicache;            /* SGLang --enable-hierarchical-cache */
	double hicache_size_gb;  /* SGLang --hicache-size: GB (10^9) per rank */
	bool has_hicache_size;
	double hicache_ratio;    /* SGLang --hicache-ratio: host pool / device pool, per rank */
	bool has_hicache_ratio;
	double swap_space_gib;   /* vLLM --swap-space: GiB per GPU */
	bool has_swap_space;
	double cpu_offload_gib;  /* --cpu-offload-gb: GiB per GPU (both engines) */
	bool has_cpu_offload;
	double kv_offload_gib;   /* vLLM --kv-offloading-size: GiB, total across TP ranks */
	bool has_kv_offload;
	bool speculative;        /* a speculative-decoding flag was given (a draft model takes memory) */
	bool quantization;       /* --quantization was given (weights may differ from the checkpoint) */
	char *spec_algo;         /* SGLang --speculative-algorithm / vLLM speculative-config "method" (NULL: none named) */
	long max_total_tokens;   /* SGLang --max-total-tokens: caps the pool (0: not given) */
	double kv_cache_memory;  /* vLLM --kv-cache-memory: the KV pool in bytes, bypassing the fraction */
	bool has_kv_cache_memory;
	long chunked_prefill;    /* SGLang --chunked-prefill-size (0: not given; -1: disabled) */
	long max_prefill;        /* SGLang --max-prefill-tokens (0: not given) */
	long max_batched;        /* vLLM --max-num-batched-tokens (0: not given) */
	int cuda_graph_max_bs;   /* SGLang --cuda-graph-max-bs (0: not given) */
	bool no_cuda_graph;      /* SGLang --disable-cuda-graph / vLLM --enforce-eager */
	bool has_cg_profile_env; /* VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is set by the launch (VAR=, docker -e) */
	bool cg_profile_env;     /* ... and not "0" */
	bool has_use_v1;         /* VLLM_USE_V1 is set by the launch */
	bool use_v1;             /* ... and not "0" */
	char *config_file;       /* --config FILE (its settings are read by the caller, see launch_apply_config) */

	/* Sliding-window / hybrid models' pools. */
	int hybrid_kv_manager;   /* vLLM: 1 --no-disable-hybrid-kv-cache-manager, -1 --disable-..., 0 not given */
	bool kv_transfer;        /* vLLM --kv-transfer-config (a KV connector: turns the hybrid manager off by default) */
	bool disable_hybrid_swa; /* SGLang --disable-hybrid-swa-memory */
	double swa_full_ratio;   /* SGLang --swa-full-tokens-ratio (SWA tokens / full tokens) */
	bool has_swa_full_ratio;
	char *attention_backend; /* SGLang --attention-backend (NULL: the engine's choice) */

	char **unknown;          /* flags we did not recognise, as written (name only) */
	size_t nunknown;
	char **notes;            /* explanations worth showing (flags whose meaning changed, ...) */
	size_t nnotes;
	char *error;             /* on failure: one line naming the flag */
};

/* Parses argv[0..argc) (the launch command itself: program first). Leading VAR=value words and an
 * `env` prefix with GNU env's options (-i, -u NAME, -C DIR, -S STRING, --, ...) are honoured
 * (CUDA_VISIBLE_DEVICES as set or unset is kept). Accepts `--flag value` and
 * `--flag=value`. Returns 0, or -EINVAL with l->error set: unknown engine, a flag's missing,
 * malformed or absurd value (negative, NaN, 1e30, a fraction outside (0, 1]). The caller frees
 * with launch_free, also on failure. */
int launch_parse(int argc, char *const *argv, struct launch *l);

/* Applies a --config YAML file's text (flat `key: value` lines, as both engines accept) to a
 * parsed launch: each key is read as if given as --key value before the command line's own flags,
 * so flags on the command line win. Returns 0, or -EINVAL with l->error set. */
int launch_apply_config(struct launch *l, const char *yaml, size_t len, int argc, char *const *argv);

/* Frees what l owns (not l); accepts NULL. */
void launch_free(struct launch *l);

/* "SGLang", "vLLM" or "unknown". */
const char *launch_engine_name(enum launch_engine e);

/* Splits a NUL-separated buffer (as /proc/PID/cmdline) into a malloc'ed, NULL-terminated argv of
 * malloc'ed strings; *argc gets the count. A trailing NUL does not make an empty last argument.
 * Free with launch_argv_free. */
char **launch_argv_from_nul(const char *buf, size_t len, int *argc);
void launch_argv_free(char **argv, int argc);

#endif
