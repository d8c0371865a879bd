/* plan: the pure arithmetic of `gpuwho plan`: from a parsed launch, a model's shape and weights,
 * and the GPU and host memory, compute per-rank and per-node memory, KV tokens, concurrency and a
 * verdict per resource, with the largest value that would fit. No I/O: the host and GPU facts it
 * needs come in plan_input, read by plan/live.c (live) or given on the command line. Formulas and
 * their sources: docs/plan.md. */
/* Layer plan/: `gpuwho plan` — the launch parser (launch.c), the model reader (model.c), the
 * arithmetic (plan.c, pure), the engine-log reader and comparison (enginelog.c, pure) and the live
 * facts it needs (live.c). May include nvml/, proc/, sys/, util; never snapshot/, diagnose/,
 * free/, render/ or cmd/. */
#ifndef GPUWHO_PLAN_PLAN_H
#define GPUWHO_PLAN_PLAN_H

#include "plan/launch.h"
#include "plan/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLAN_GIB 1073741824.0
#define PLAN_GB 1e9

enum plan_verdict { PLAN_UNKNOWN, PLAN_FITS, PLAN_TIGHT, PLAN_NO_FIT };

struct plan_input {
	const struct launch *launch;
	const struct model_config *model;  /* NULL: shape unknown */
	bool has_weights;
	double weights_bytes;              /* the whole checkpoint, all shards */
	bool has_gpu_total;
	double gpu_total_bytes;            /* one GPU's total memory as NVML and nvidia-smi show it */
	bool has_driver_reserve;           /* false: estimated (DRIVER_RESERVE_BYTES) */
	double driver_reserve_bytes;       /* what the driver keeps back of it (NVML memory.reserved);
					    * CUDA's total is the difference */
	bool has_host_avail;
	double host_avail_bytes;           /* MemAvailable, or --host-mem */
	double overhead_bytes;             /* per GPU besides weights and KV, when given (--overhead) */
	bool estimate_overhead;            /* true: model the CUDA context, communication buffers and vLLM's
					    * activation peak instead of overhead_bytes */
	double gpu_used_bytes;             /* memory other processes hold on the fullest GPU (live NVML), 0 if none */
	bool has_gpu_used;                 /* false: unknown, assumed none */
	long avg_tokens;                   /* tokens per request, for concurrency */
	int engine_version;                /* the engine's release as plan_parse_version encodes it (vLLM
					    * 0.21 → 21000); 0: unknown, plan models the current release */
	int host_gpus;                     /* GPUs on this host; -1: unknown */
	const char *cuda_visible;          /* CUDA_VISIBLE_DEVICES, or NULL when unset */
};

/* One host-memory ask (a flag), multiplied out to the node. */
struct plan_host_item {
	const char *flag;        /* "--hicache-size", "--hicache-ratio", "--swap-space", ... */
	char *value;             /* the flag's value as a number, e.g. "300" */
	const char *scope;       /* "per rank", "per GPU", "the total across TP ranks" */
	const char *what;        /* what the memory is for */
	bool known;              /* false: it depends on GPU facts we do not have */
	double each_bytes;       /* per rank / GPU / engine instance */
	int count;               /* how many of those on this node */
	double total_bytes;      /* each × count */
	enum plan_verdict verdict;
	char *message;           /* one sentence; for "does not fit" it ends with the largest value that would */
	bool has_max;
	double max_value;        /* in the flag's own unit */
	const char *max_unit;    /* "GB per rank", "GiB per GPU", ... */
};

/* One term of the per-GPU memory account, for the term-by-term report and --log comparison. */
struct plan_term {
	const char *key;         /* "cuda_total", "context", "comm", "weights", "activation", ... */
	double bytes;            /* signed contribution as the engine counts it */
	char *how;               /* where the number comes from, one line */
};

struct plan_result {
	/* GPUs */
	int gpus;                /* all ranks: tp × dp × pp (tp × pp with SGLang DP attention) */
	int local_gpus;          /* ranks on this node */
	int attn_tp;             /* tensor-parallel degree of attention (splits the KV heads) */
	char **gpu_ids;          /* which GPUs of this host the ranks take (as CUDA_VISIBLE_DEVICES names them) */
	int ngpu_ids;
	bool gpu_ids_assumed;    /* host GPU count unknown: 0..N-1 assumed */
	enum plan_verdict gpus_verdict;
	char *gpus_message;

	/* GPU memory, per GPU */
	bool has_gpu_total;
	double gpu_total;
	double fraction;
	bool fraction_assumed;   /* the flag was not given: the engine's default */
	const char *fraction_flag;
	double budget;           /* total × fraction */
	double reserve;          /* total × (1 − fraction): activations, CUDA graphs */
	bool has_weights;
	double weights_per_gpu;  /* weights / (tp × pp) − --cpu-offload-gb */
	double overhead;
	bool has_kv_pool;
	bool start_refused;      /* vLLM will not start: other processes hold more than 1 − utilization */
	double kv_pool;          /* budget − weights − overhead (may be negative) */
	enum plan_verdict gpu_verdict;
	char *gpu_message;
	double cuda_total;       /* what torch.cuda.mem_get_info reports (gpu_total less the driver's reserve) */
	double context;          /* CUDA context (+ for SGLang: communication buffers) before the engine measures */
	double comm;             /* NCCL / custom all-reduce buffers */
	double activation;       /* vLLM: the profiled activation peak, estimated */
	double cudagraph;        /* vLLM ≥ 0.21: the CUDA graphs' memory its profile estimates, estimated */
	double replicated;       /* weights every rank holds in full (MLA q/kv-a projections, routers, vision tower) */
	bool weights_estimated;  /* weights per rank from the model's shapes (else total / (tp × pp)) */
	bool kv_fixed;           /* vLLM --kv-cache-memory: the pool is given, not derived */
	int stage_layers;        /* layers whose KV one rank holds (its pipeline stage) */
	long max_model_len;      /* vLLM: the length one request must fit (flag, else the model's); 0 unknown */
	struct plan_term terms[16];
	int nterms;

	/* KV cache */
	bool has_cell;
	double cell_bytes;       /* KV bytes per token on one rank */
	char *kv_dtype;          /* "bfloat16", "fp8_e4m3", ... */
	double kv_dtype_bytes;
	char *cell_formula;      /* the formula with this model's numbers */
	bool has_tokens;
	uint64_t tokens;         /* KV tokens per rank (the pool's capacity) */
	long avg_tokens;
	uint64_t concurrency;    /* requests of avg_tokens per KV pool */
	uint64_t concurrency_total; /* × DP: every DP replica / DP-attention rank has its own pool */
	bool concurrency_capped; /* by --max-running-requests / --max-num-seqs */
	uint64_t tokens_per_point; /* KV tokens per rank that each 0.01 of the fraction buys (0: unknown) */
	enum plan_verdict kv_verdict;
	char *kv_message;

	/* Sliding-window and hybrid models (docs/plan.md "Sliding-window and hybrid models"). */
	enum plan_pool {
		PLAN_POOL_FULL,        /* one pool, every attention layer holds every token */
		PLAN_POOL_VLLM_HYBRID, /* vLLM's hybrid KV cache manager: groups sharing one block pool */
		PLAN_POOL_SGLANG_SWA,  /* SGLang's SWA pool: a full pool and a smaller sliding-window pool */
	} pool_kind;
	int hy_full, hy_swa, hy_chunked, hy_linear;   /* this stage's layers of each kind (0s: not typed) */
	int hy_window;           /* sliding_window, or Llama 4's attention_chunk_size */
	double layer_bytes;      /* KV bytes a token takes in one attention layer on this rank */
	int hy_group_size;       /* vLLM: layers per KV cache group */
	int hy_groups;           /* vLLM: groups (full + sliding + chunked), padded to hy_group_size layers */
	uint64_t hy_blocks;      /* vLLM: blocks in the shared pool (each one page in every group) */
	uint64_t hy_blocks_per_req; /* vLLM: blocks one max_model_len request reserves over all groups */
	double hy_max_concurrency; /* vLLM: blocks / blocks per request ("Maximum concurrency for ...") */
	uint64_t hy_capacity;    /* vLLM after 0.19: max concurrency × max_model_len, its "GPU KV cache size" */
	uint64_t swa_tokens;     /* SGLang: the sliding-window pool's tokens */
	double swa_ratio;        /* SGLang: --swa-full-tokens-ratio */
	char *hy_formula;        /* the split in words, NULL for plain full attention */

	/* Host memory, for the node */
	struct plan_host_item *host;
	size_t nhost;
	bool has_host_avail;
	double host_avail;
	double host_total;       /* sum of the known asks */
	enum plan_verdict host_verdict;
	char *host_message;

	enum plan_verdict verdict;   /* the worst known verdict */
	char **notes;
	size_t nnotes;
};

/* Computes the plan. Pure. Returns 0, or -EINVAL with *err set (malloc'ed, naming the flag) when
 * the launch asks for something plan cannot model (an unknown --kv-cache-dtype). Free r with
 * plan_result_free, also on failure. */
int plan_compute(const struct plan_input *in, struct plan_result *r, char **err);

void plan_result_free(struct plan_result *r);

/* "fits", "tight", "does not fit", "unknown". */
const char *plan_verdict_text(enum plan_verdict v);
/* The JSON spelling: "fits", "tight", "does_not_fit", "unknown". */
const char *plan_verdict_key(enum plan_verdict v);

/* Bytes per element of a KV or model dtype name: 0 for "auto", -1 for a name we do not know. */
double plan_dtype_bytes(const char *name);

/* Formats v with thousands separators and `decimals` digits after the point into buf (40 bytes). */
char *plan_fmt(char *buf, double v, int decimals);

/* Where `gpuwho plan`'s inputs came from, for the report (gathered by cmd/plan.c). */
struct plan_facts {
	const char *model_dir;
	const char *config_path;
	const struct model_config *model;
	const char *weights_source;
	double weights_total;   /* the whole checkpoint's bytes, when known */
	const char *gpu_source;
	const char *host_source;
	const char *cuda_visible;
	long pid;
	char **argv;
	int argc;
	char **notes;   /* gathered by cmd_plan (model lookup, environ) */
	size_t nnotes;
};

/* Reads a release number as engines print it ("0.21", "0.21.0", "v0.7.2", "0.5.8.post1",
 * "0.11.0rc1") into major × 1,000,000 + minor × 1,000 + patch (0.5.8 → 5008; a missing patch is 0).
 * Returns the length read (> 0), or 0 when s does not start with major.minor or a part is out of
 * range (major 0..99, minor and patch 0..999). Pure. */
int plan_parse_version(const char *s, int *out);

#endif
