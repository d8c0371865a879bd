/* model: what plan needs to know about a model: the attention shape from config.json (nested
 * text configs of multimodal models included), the weights' size from safetensors metadata, and
 * where a Hugging Face model lives in the local cache. Never touches the network. */
#include "plan/model.h"
#include "util.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The safetensors format caps its header at 100 MB; a bigger one is not a safetensors file. */
#define SAFETENSORS_MAX_HEADER 100000000ull
/* Sanity bounds on config values: anything outside is a broken config, not a big model. */
#define CFG_MAX 1000000

static int set_err(char **err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_err(char **err, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	if (err) {
		free(*err);
		*err = s;
	} else {
		free(s);
	}
	return rc;
}

/* A real as short as it reads back exactly, exponent without '+': 1e300, -1.5e300, 1e-320. */
static void fmt_real(char *buf, size_t n, double d)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	char *plus = strstr(buf, "e+");
	if (plus)
		memmove(plus + 1, plus + 2, strlen(plus + 2) + 1);
}

/* Reads an integer field. Absent or null: returns 0 with *present false (the caller decides
 * whether that is an error). A float with an integral value is accepted (some exporters write
 * 128.0). The range is checked before any conversion: a real as large as 1e300 has no integer. */
static int get_int(json_t *o, const char *sect, const char *key, int *out, bool *present, char **err)
{
	json_t *v = json_object_get(o, key);
	const char *s1 = sect ? sect : "", *s2 = sect ? "." : "";
	*present = false;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 1 || i > CFG_MAX)
			return set_err(err, -EINVAL, "%s%s%s: %" JSON_INTEGER_FORMAT " is out of range (1 to %d)", s1, s2, key, i,
				       CFG_MAX);
		*out = (int)i;
	} else if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= 1 && d <= CFG_MAX)) {
			char b[40];
			fmt_real(b, sizeof b, d);
			return set_err(err, -EINVAL, "%s%s%s: %s is out of range (1 to %d)", s1, s2, key, b, CFG_MAX);
		}
		if (d != floor(d))
			return set_err(err, -EINVAL, "%s%s%s: not a whole number", s1, s2, key);
		*out = (int)d;
	} else {
		return set_err(err, -EINVAL, "%s%s%s: not a whole number", s1, s2, key);
	}
	*present = true;
	return 0;
}

static int need_int(json_t *o, const char *sect, const char *key, int *out, char **err)
{
	bool present;
	int r = get_int(o, sect, key, out, &present, err);
	if (r)
		return r;
	if (!present)
		return set_err(err, -EINVAL, "%s%s%s: missing", sect ? sect : "", sect ? "." : "", key);
	return 0;
}

static char *get_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

/* An optional integer read leniently: 0 when absent, not a positive whole number, or out of the
 * reader's bounds (the estimates that use these fall back rather than refuse the config). */
static int opt_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : 0;
	return d >= 1 && d <= CFG_MAX && d == floor(d) ? (int)d : 0;
}

/* Which layers attend how. transformers' configs spell it several ways: layer_types (GPT-OSS,
 * Gemma 3 in newer exports, Qwen3-Next, ...); Gemma 2 alternates sliding and full layers and Gemma 3
 * makes every sliding_window_pattern-th layer full (configuration_gemma2/3.py derive layer_types
 * so); Llama 4's no_rope_layers marks its RoPE layers, which use chunked local attention
 * (attention_chunk_size), the rest being global NoPE layers, default every 4th
 * (configuration_llama4.py); Qwen3-Next's full_attention_interval; Nemotron-H's
 * hybrid_override_pattern ('*' attention, 'M' Mamba, '-' MLP only). */
static void read_layer_kinds(json_t *o, struct model_config *m)
{
	int L = m->layers;
	json_t *lt = json_object_get(o, "layer_types");
	if (!json_is_array(lt))
		lt = json_object_get(o, "layers_block_type");
	if (json_is_array(lt) && json_array_size(lt) > 0) {
		size_t i;
		json_t *v;
		json_array_foreach(lt, i, v) {
			const char *t = json_is_string(v) ? json_string_value(v) : "";
			if (!strcmp(t, "sliding_attention"))
				m->swa_layers++;
			else if (!strcmp(t, "chunked_attention"))
				m->chunked_layers++;
			else if (!strcmp(t, "full_attention") || !strcmp(t, "attention"))
				m->full_layers++;
			else
				m->linear_layers++;   /* linear_attention, mamba, ...: no per-token KV */
		}
		m->layer_source = json_object_get(o, "layer_types") ? "layer_types" : "layers_block_type";
		return;
	}
	const char *mt = m->model_type ? m->model_type : "";
	int pattern = opt_int(o, "sliding_window_pattern");
	if (!pattern)
		pattern = opt_int(o, "_sliding_window_pattern");
	if (!pattern && !strcmp(mt, "gemma2"))
		pattern = 2;
	if (pattern && m->sliding_window) {
		m->full_layers = L / pattern;   /* layer i is full when (i + 1) % pattern == 0 */
		m->swa_layers = L - m->full_layers;
		m->layer_source = "sliding_window_pattern";
		return;
	}
	m->attn_chunk = opt_int(o, "attention_chunk_size");
	if (m->attn_chunk) {
		json_t *nr = json_object_get(o, "no_rope_layers");
		if (json_is_array(nr) && json_array_size(nr) > 0) {
			size_t i;
			json_t *v;
			json_array_foreach(nr, i, v)
				if (json_is_integer(v) && json_integer_value(v))
					m->chunked_layers++;
		} else {
			m->chunked_layers = L - L / 4;
		}
		m->full_layers = L - m->chunked_layers;
		m->layer_source = "no_rope_layers";
		return;
	}
	int interval = opt_int(o, "full_attention_interval");
	if (interval) {
		m->full_layers = L / interval;
		m->linear_layers = L - m->full_layers;
		m->layer_source = "full_attention_interval";
		return;
	}
	json_t *hp = json_object_get(o, "hybrid_override_pattern");
	if (json_is_string(hp)) {
		for (const char *c = json_string_value(hp); *c; c++) {
			if (*c == '*')
				m->full_layers++;
			else if (*c == 'M')
				m->linear_layers++;
		}
		m->layer_source = "hybrid_override_pattern";
	}
}

/* The facts beyond the KV shape: what the weights-per-rank and activation estimates use. */
static void read_extras(json_t *root, json_t *o, struct model_config *m)
{
	m->hidden = opt_int(o, "hidden_size");
	m->intermediate = opt_int(o, "intermediate_size");
	m->vocab = opt_int(o, "vocab_size");
	m->experts = opt_int(o, "n_routed_experts");
	if (!m->experts)
		m->experts = opt_int(o, "num_experts");
	if (!m->experts)
		m->experts = opt_int(o, "num_local_experts");
	m->experts_per_tok = opt_int(o, "num_experts_per_tok");
	m->moe_intermediate = opt_int(o, "moe_intermediate_size");
	if (!m->moe_intermediate && m->experts)
		m->moe_intermediate = m->intermediate;   /* Mixtral, GPT-OSS: one size for both */
	m->shared_experts = opt_int(o, "n_shared_experts");
	m->shared_intermediate = opt_int(o, "shared_expert_intermediate_size");
	m->first_dense = opt_int(o, "first_k_dense_replace");
	m->q_lora_rank = opt_int(o, "q_lora_rank");
	m->qk_nope_head_dim = opt_int(o, "qk_nope_head_dim");
	m->nextn_layers = opt_int(o, "num_nextn_predict_layers");
	m->index_head_dim = opt_int(o, "index_head_dim");
	m->max_position = opt_int(o, "max_position_embeddings");
	m->sliding_window = opt_int(o, "sliding_window");
	read_layer_kinds(o, m);
	json_t *tie = json_object_get(o, "tie_word_embeddings");
	m->tie_embeddings = json_is_true(tie);
	json_t *q = json_object_get(o, "quantization_config");
	if (!json_is_object(q))
		q = json_object_get(root, "quantization_config");
	if (json_is_object(q))
		m->quant_method = get_str(q, "quant_method");
	/* A ViT layer holds about 12 × hidden² parameters (attention 4h², MLP 8h²). */
	json_t *vc = json_object_get(root, "vision_config");
	if (json_is_object(vc)) {
		int vh = opt_int(vc, "hidden_size"), vl = opt_int(vc, "num_hidden_layers");
		if (!vl)
			vl = opt_int(vc, "depth");
		if (!vh)
			vh = opt_int(vc, "embed_dim");
		/* SGLang's multimodal fraction takes 24 layers and 1,024 wide where these are absent. */
		m->vit_layers = vl ? vl : 24;
		m->vit_hidden = vh ? vh : 1024;
		m->vision_params = 12.0 * m->vit_hidden * m->vit_hidden * m->vit_layers;
	}
}

int model_config_parse(const char *text, size_t len, struct model_config *m, char **err)
{
	memset(m, 0, sizeof *m);
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (!root)
		return set_err(err, -EINVAL, "not JSON (line %d: %s)", je.line, je.text);
	int r = 0;
	if (!json_is_object(root)) {
		r = set_err(err, -EINVAL, "not a JSON object");
		goto out;
	}
	/* Multimodal models (Kimi-K2.5, Llama 4, Qwen-VL, InternVL) keep the language model's shape in
	 * a nested object; its KV cache is the one that matters. */
	json_t *o = root;
	static const char *const nested[] = {"text_config", "language_config", "llm_config", "language_model"};
	if (!json_object_get(root, "num_hidden_layers")) {
		for (size_t i = 0; i < sizeof nested / sizeof nested[0]; i++) {
			json_t *n = json_object_get(root, nested[i]);
			if (json_is_object(n)) {
				o = n;
				m->section = xstrdup(nested[i]);
				break;
			}
		}
	}
	const char *sect = m->section;
	m->model_type = get_str(o, "model_type");
	if (!m->model_type && o != root)
		m->model_type = get_str(root, "model_type");
	m->torch_dtype = get_str(o, "torch_dtype");
	if (!m->torch_dtype)
		m->torch_dtype = get_str(o, "dtype");
	if (!m->torch_dtype && o != root)
		m->torch_dtype = get_str(root, "torch_dtype");
	if ((r = need_int(o, sect, "num_hidden_layers", &m->layers, err)))
		goto out;
	read_extras(root, o, m);
	bool present;
	if ((r = get_int(o, sect, "kv_lora_rank", &m->kv_lora_rank, &present, err)))
		goto out;
	if (present) {
		m->mla = true;
		r = need_int(o, sect, "qk_rope_head_dim", &m->qk_rope_head_dim, err);
		m->heads = opt_int(o, "num_attention_heads");
		m->v_head_dim = opt_int(o, "v_head_dim");
		goto out;
	}
	if ((r = need_int(o, sect, "num_attention_heads", &m->heads, err)))
		goto out;
	if ((r = get_int(o, sect, "num_key_value_heads", &m->kv_heads, &present, err)))
		goto out;
	if (!present)
		m->kv_heads = m->heads;   /* no GQA field: plain multi-head attention */
	if (m->kv_heads > m->heads) {
		r = set_err(err, -EINVAL, "%s%snum_key_value_heads: %d is more than num_attention_heads %d", sect ? sect : "",
			    sect ? "." : "", m->kv_heads, m->heads);
		goto out;
	}
	if ((r = get_int(o, sect, "head_dim", &m->head_dim, &present, err)))
		goto out;
	if (!present) {
		int hidden;
		if ((r = get_int(o, sect, "hidden_size", &hidden, &present, err)))
			goto out;
		if (!present) {
			r = set_err(err, -EINVAL, "%s%shead_dim: missing (and no hidden_size to derive it from)",
				    sect ? sect : "", sect ? "." : "");
			goto out;
		}
		if (hidden % m->heads) {
			r = set_err(err, -EINVAL, "%s%shidden_size %d: not a multiple of num_attention_heads %d",
				    sect ? sect : "", sect ? "." : "", hidden, m->heads);
			goto out;
		}
		m->head_dim = hidden / m->heads;
	}
	if ((r = get_int(o, sect, "v_head_dim", &m->v_head_dim, &present, err)))
		goto out;
	if (!present)
		m->v_head_dim = m->head_dim;
out:
	json_decref(root);
	if (r)
		model_config_free(m);
	return r;
}

int model_config_read(const char *path, struct model_config *m, char **err)
{
	char *buf;
	size_t len;
	memset(m, 0, sizeof *m);
	int r = readfile_at(AT_FDCWD, path, &buf, &len, 16u << 20);
	if (r < 0)
		return set_err(err, r, "%s", strerror(-r));
	r = model_config_parse(buf, len, m, err);
	free(buf);
	return r;
}

void model_config_free(struct model_config *m)
{
	if (!m)
		return;
	free(m->model_type);
	free(m->section);
	free(m->torch_dtype);
	free(m->quant_method);
	memset(m, 0, sizeof *m);
}

static int read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

int model_safetensors_bytes(const char *path, uint64_t *bytes, char **err)
{
	*bytes = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return set_err(err, -errno, "%s", strerror(errno));
	struct stat st;
	unsigned char lenbuf[8];
	char *hdr = NULL;
	json_t *root = NULL;
	int r;
	if (fstat(fd, &st) < 0) {
		r = set_err(err, -errno, "%s", strerror(errno));
		goto out;
	}
	if (read_full(fd, lenbuf, 8) < 0) {
		r = set_err(err, -EINVAL, "shorter than the 8-byte header length");
		goto out;
	}
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | lenbuf[i];
	if (n < 2 || n > SAFETENSORS_MAX_HEADER || n > (uint64_t)st.st_size - 8) {
		r = set_err(err, -EINVAL, "header length %llu is impossible for a %lld-byte file", (unsigned long long)n,
			    (long long)st.st_size);
		goto out;
	}
	hdr = xmalloc(n);
	if (read_full(fd, hdr, n) < 0) {
		r = set_err(err, -EINVAL, "header truncated");
		goto out;
	}
	json_error_t je;
	root = json_loadb(hdr, n, 0, &je);
	if (!json_is_object(root)) {
		r = set_err(err, -EINVAL, "header is not a JSON object");
		goto out;
	}
	uint64_t data = (uint64_t)st.st_size - 8 - n, sum = 0;
	const char *key;
	json_t *t;
	json_object_foreach(root, key, t) {
		if (!strcmp(key, "__metadata__"))
			continue;
		json_t *off = json_object_get(t, "data_offsets");
		json_t *a = json_array_get(off, 0), *b = json_array_get(off, 1);
		if (!json_is_integer(a) || !json_is_integer(b) || json_integer_value(a) < 0 ||
		    json_integer_value(b) < json_integer_value(a)) {
			r = set_err(err, -EINVAL, "tensor %.64s: bad data_offsets", key);
			goto out;
		}
		uint64_t lo = (uint64_t)json_integer_value(a), hi = (uint64_t)json_integer_value(b);
		if (hi > data) {
			r = set_err(err, -EINVAL, "tensor %.64s: data_offsets end %llu past the file's %llu data bytes", key,
				    (unsigned long long)hi, (unsigned long long)data);
			goto out;
		}
		sum += hi - lo;
	}
	*bytes = sum;
	r = 0;
out:
	json_decref(root);
	free(hdr);
	close(fd);
	return r;
}

static int index_total(const char *dir, uint64_t *bytes, char **err)
{
	char *path = xasprintf("%s/model.safetensors.index.json", dir);
	char *buf;
	size_t len;
	int r = readfile_at(AT_FDCWD, path, &buf, &len, 64u << 20);
	free(path);
	if (r < 0)
		return r;
	json_t *root = json_loadb(buf, len, 0, NULL);
	free(buf);
	json_t *ts = json_object_get(json_object_get(root, "metadata"), "total_size");
	if (json_is_integer(ts) && json_integer_value(ts) > 0) {
		*bytes = (uint64_t)json_integer_value(ts);
		r = 0;
	} else if (json_is_real(ts) && json_real_value(ts) > 0 && json_real_value(ts) < 1e18) {
		*bytes = (uint64_t)json_real_value(ts);
		r = 0;
	} else {
		r = set_err(err, -EINVAL, "model.safetensors.index.json: metadata.total_size missing or not a positive number");
	}
	json_decref(root);
	return r;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

int model_weights_bytes(const char *dir, uint64_t *bytes, char **how, char **err)
{
	*bytes = 0;
	*how = NULL;
	int r = index_total(dir, bytes, err);
	if (r == 0) {
		*how = xstrdup("model.safetensors.index.json metadata.total_size");
		return 0;
	}
	if (r != -ENOENT)
		return r;
	DIR *d = opendir(dir);
	if (!d)
		return set_err(err, -errno, "%s", strerror(errno));
	uint64_t sum = 0;
	int files = 0;
	r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!ends_with(e->d_name, ".safetensors"))
			continue;
		char *p = xasprintf("%s/%s", dir, e->d_name);
		uint64_t b;
		char *why = NULL;
		r = model_safetensors_bytes(p, &b, &why);
		free(p);
		if (r) {
			set_err(err, r, "%.200s: %s", e->d_name, why ? why : "unreadable");
			free(why);
			break;
		}
		sum += b;
		files++;
	}
	closedir(d);
	if (r)
		return r;
	if (!files)
		return set_err(err, -ENOENT, "no *.safetensors files");
	*bytes = sum;
	*how = xasprintf("safetensors headers of %d file%s", files, files == 1 ? "" : "s");
	return 0;
}

static bool is_dir_with_config(const char *dir)
{
	char *p = xasprintf("%s/config.json", dir);
	bool ok = access(p, R_OK) == 0;
	free(p);
	return ok;
}

static char *hub_dir(void)
{
	const char *v = getenv("HF_HUB_CACHE");
	if (v && *v)
		return xstrdup(v);
	v = getenv("HUGGINGFACE_HUB_CACHE");
	if (v && *v)
		return xstrdup(v);
	v = getenv("HF_HOME");
	if (v && *v)
		return xasprintf("%s/hub", v);
	v = getenv("XDG_CACHE_HOME");
	if (v && *v)
		return xasprintf("%s/huggingface/hub", v);
	v = getenv("HOME");
	if (v && *v)
		return xasprintf("%s/.cache/huggingface/hub", v);
	return NULL;
}

/* A revision or commit read from refs/ must be one path component. */
static bool safe_component(const char *s)
{
	return *s && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

char *model_find_dir(const char *model, const char *revision)
{
	struct stat st;
	if (!model || !*model)
		return NULL;
	if (stat(model, &st) == 0 && S_ISDIR(st.st_mode))
		return xstrdup(model);
	/* A hub id is ORG/NAME (or NAME): no leading slash, no "..", at most one slash. */
	const char *slash = strchr(model, '/');
	if (model[0] == '/' || model[0] == '.' || strstr(model, "..") || (slash && strchr(slash + 1, '/')))
		return NULL;
	char *hub = hub_dir();
	if (!hub)
		return NULL;
	/* The cache names ORG/NAME's folder models--ORG--NAME. */
	char *repo = slash ? xasprintf("%s/models--%.*s--%s", hub, (int)(slash - model), model, slash + 1)
			   : xasprintf("%s/models--%s", hub, model);
	free(hub);
	char *found = NULL;
	/* refs/main (or refs/REVISION) holds the commit that snapshots/ is named by. */
	char *ref = xasprintf("%s/refs/%s", repo, revision && safe_component(revision) ? revision : "main");
	char *commit;
	if (readfile_at(AT_FDCWD, ref, &commit, NULL, 256) == 0) {
		commit[strcspn(commit, "\r\n")] = '\0';
		if (safe_component(commit)) {
			char *snap = xasprintf("%s/snapshots/%s", repo, commit);
			if (is_dir_with_config(snap))
				found = snap;
			else
				free(snap);
		}
		free(commit);
	}
	free(ref);
	if (!found && revision && safe_component(revision)) {
		char *snap = xasprintf("%s/snapshots/%s", repo, revision);
		if (is_dir_with_config(snap))
			found = snap;
		else
			free(snap);
	}
	if (!found) {
		char *snaps = xasprintf("%s/snapshots", repo);
		struct dirent **list = NULL;
		int n = scandir(snaps, &list, NULL, alphasort);
		for (int i = 0; i < n; i++) {
			if (!found && list[i]->d_name[0] != '.') {
				char *snap = xasprintf("%s/%s", snaps, list[i]->d_name);
				if (is_dir_with_config(snap))
					found = snap;
				else
					free(snap);
			}
			free(list[i]);
		}
		free(list);
		free(snaps);
	}
	free(repo);
	return found;
}
