/* model: what plan needs to know about a model: the attention shape from config.json (nested
 * text configs of multimodal models included), the weights' size from safetensors metadata, and
 * where a Hugging Face model lives in the local cache. Never touches the network. */
#ifndef GPUWHO_PLAN_MODEL_H
#define GPUWHO_PLAN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model_config {
	char *model_type;        /* "deepseek_v3", "llama", ... (NULL when absent) */
	char *section;           /* where the text model's fields were found: NULL (top level), "text_config", ... */
	bool mla;                /* multi-head latent attention: kv_lora_rank is set */
	int layers;              /* num_hidden_layers */
	int kv_lora_rank, qk_rope_head_dim;    /* MLA */
	int heads, kv_heads, head_dim, v_head_dim; /* MHA/GQA; head_dim may come from hidden_size / heads */
	char *torch_dtype;       /* "bfloat16", ... (NULL when absent) */

	/* Optional shape facts for the weights-per-rank and activation estimates (0: absent). Read
	 * leniently: a missing or odd value only makes those estimates fall back to simpler ones. */
	int hidden, intermediate, vocab;
	int experts, experts_per_tok, moe_intermediate, shared_experts, shared_intermediate;
	int first_dense;         /* first_k_dense_replace: leading layers with a dense MLP */
	int q_lora_rank, qk_nope_head_dim;
	int nextn_layers;        /* num_nextn_predict_layers: MTP layers, loaded only for speculative decoding */
	int index_head_dim;      /* DeepSeek-V3.2's indexer key (its own per-token cache) */
	int max_position;        /* max_position_embeddings: vLLM's default max_model_len */
	bool tie_embeddings;
	char *quant_method;      /* quantization_config.quant_method ("fp8", "compressed-tensors", ...) */
	double vision_params;    /* a vision tower's parameters, estimated from vision_config (0: none) */
	int vit_layers, vit_hidden; /* vision_config's layers and width (24 and 1,024 where absent) */
	int sliding_window;      /* sliding_window (0: none) */
	/* Layer kinds, when the config says (layer_types, Gemma's sliding_window_pattern, Llama 4's
	 * no_rope_layers, Qwen3-Next's full_attention_interval, Nemotron-H's hybrid_override_pattern);
	 * all 0 when it does not: every layer is full attention. They sum to layers when set. */
	int full_layers;         /* full (global) attention */
	int swa_layers;          /* sliding-window attention over the last sliding_window tokens */
	int chunked_layers;      /* Llama 4's chunked local attention over attention_chunk_size tokens */
	int linear_layers;       /* linear attention / Mamba / other state-space layers: no per-token KV */
	int attn_chunk;          /* attention_chunk_size (0: none) */
	const char *layer_source;/* where the kinds came from ("layer_types", ...), a literal; NULL: not typed */
};

/* Parses config.json text. Pure. Returns 0, or -EINVAL with *err set to a malloc'ed line naming
 * the missing or bad field (e.g. "text_config.num_hidden_layers: missing"). Free with model_config_free. */
int model_config_parse(const char *json, size_t len, struct model_config *m, char **err);

/* Reads and parses the file `path`. Returns 0 or -errno/-EINVAL with *err set. */
int model_config_read(const char *path, struct model_config *m, char **err);

void model_config_free(struct model_config *m);

/* Sums the tensor bytes of one .safetensors file from its header alone (8-byte little-endian
 * header length, then a JSON object of tensors with data_offsets); tensor data is never read.
 * Returns 0 with *bytes set, or -errno / -EINVAL with *err set (malformed or truncated header). */
int model_safetensors_bytes(const char *path, uint64_t *bytes, char **err);

/* The weights of a model directory: model.safetensors.index.json's metadata.total_size when
 * present, else the sum over *.safetensors headers. Returns 0 with *bytes and *how (malloc'ed,
 * e.g. "model.safetensors.index.json total_size") set, or -ENOENT (no safetensors) / -errno /
 * -EINVAL with *err set. */
int model_weights_bytes(const char *dir, uint64_t *bytes, char **how, char **err);

/* Resolves a launch's model to a local directory holding config.json: the path itself when it is
 * a directory, else the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, or
 * ~/.cache/huggingface/hub)/models--ORG--NAME/snapshots/REV, REV from refs/<revision or main> or
 * else the first snapshot (by name) with a config.json. Returns a malloc'ed path, or NULL. */
char *model_find_dir(const char *model, const char *revision);

#endif
