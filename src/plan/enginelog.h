/* enginelog: read what an SGLang or vLLM server printed about its memory at start-up (weights
 * loaded, memory free, the KV pool's size and token count) and set it against plan's prediction,
 * term by term. Pure: the caller reads the file. */
#ifndef GPUWHO_PLAN_ENGINELOG_H
#define GPUWHO_PLAN_ENGINELOG_H

#include "plan/launch.h"
#include "plan/plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one log says. Each value has a has_* flag; the first occurrence wins (every rank prints
 * the same lines, rank 0 first). Byte values are as the engine meant them: SGLang's "GB" and
 * vLLM's "GiB"/"GB" are all 2^30 bytes. */
struct engine_log {
	enum launch_engine engine;   /* from the lines' shapes; LAUNCH_UNKNOWN when neither */
	bool has_tokens;
	uint64_t tokens;             /* SGLang "#tokens: N" / max_total_num_tokens; vLLM "GPU KV cache size: N tokens"
				      * or "# GPU blocks: N" × 16 or the max-seq-len error's token count */
	bool tokens_from_blocks;
	bool has_kv_bytes;
	double kv_bytes;             /* vLLM "Available KV cache memory"; SGLang K size + V size, or KV size */
	bool has_weights;
	double weights;              /* SGLang "Load weight end ... mem usage"; vLLM "Model loading took" */
	bool has_free_before;
	double free_before;          /* SGLang "Load weight begin. avail mem": what its fraction applies to */
	bool has_comm;
	double comm;                 /* SGLang "Init torch distributed ends. mem usage" */
	bool has_activation;
	double activation;           /* vLLM "activation peak memory takes" (V0) */
	bool has_non_torch;
	double non_torch;            /* vLLM "non_torch_memory takes" (V0) */
	bool has_total;
	double total;                /* vLLM "total_gpu_memory (X GiB)" */
	bool has_cudagraph;
	double cudagraph;            /* vLLM ≥ 0.21 "Estimated CUDA graph memory: X GiB total" */
	bool cudagraph_off;          /* vLLM "CUDA graph memory profiling is disabled" */
	int version;                 /* the engine's release as plan_parse_version reads it, 0: not printed */
	bool has_swa_tokens;
	uint64_t swa_tokens;         /* SGLang "Use sliding window memory pool. ... swa_layer_tokens=N" */
	bool has_concurrency;
	double concurrency;          /* vLLM "Maximum concurrency for L tokens per request: Cx" */
	double concurrency_len;      /* its L */
	bool refused;                /* vLLM refused to start: one max_model_len request does not fit */
	int lines;                   /* lines that matched */
};

/* Parses a server log (any bytes: NULs, no newline at the end, lines of any length). Returns 0, or
 * -EINVAL with *err set (malloc'ed) when no line says anything about the KV cache. */
int engine_log_parse(const char *text, size_t len, struct engine_log *lg, char **err);

/* One row of the comparison: a quantity plan predicts and the log states. */
struct log_row {
	const char *key;       /* "tokens", "kv_pool", "weights", "free_at_start", "activation", ... */
	const char *what;      /* in words */
	bool has_predicted, has_logged;
	double predicted, logged;   /* bytes, or tokens for "tokens" */
	double error;          /* (predicted − logged) / logged, when both */
};

struct log_compare {
	struct log_row rows[12];
	int nrows;
	bool has_error;
	double error;          /* the token count's relative error */
	char *summary;         /* one sentence: which term explains most of the difference */
};

/* Sets the log against a computed plan. Pure. Free with log_compare_free. */
void engine_log_compare(const struct engine_log *lg, const struct plan_result *r, struct log_compare *c);
void log_compare_free(struct log_compare *c);

#endif
