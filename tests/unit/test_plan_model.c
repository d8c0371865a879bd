/* Unit tests for config.json reading, the safetensors header parser and the Hugging Face cache lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "plan/model.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *fixture(const char *name)
{
	const char *t = getenv("TESTS");
	return xasprintf("%s/fixtures/models/%s/config.json", t ? t : "tests", name);
}

static void read_fixture(const char *name, struct model_config *m)
{
	char *p = fixture(name), *err = NULL;
	int r = model_config_read(p, m, &err);
	if (r)
		fail_msg("%s: %s", p, err ? err : "?");
	free(p);
	free(err);
}

static void deepseek_v3_is_mla_with_61_layers(void **state)
{
	(void)state;
	struct model_config m;
	read_fixture("deepseek-v3", &m);
	assert_true(m.mla);
	assert_int_equal(m.layers, 61);
	assert_int_equal(m.kv_lora_rank, 512);
	assert_int_equal(m.qk_rope_head_dim, 64);
	assert_string_equal(m.torch_dtype, "bfloat16");
	assert_null(m.section);
	model_config_free(&m);
}

static void kimi_k25_reads_the_nested_text_config(void **state)
{
	(void)state;
	struct model_config m;
	read_fixture("kimi-k2.5", &m);
	assert_string_equal(m.section, "text_config");
	assert_string_equal(m.model_type, "deepseek_v3");
	assert_true(m.mla);
	assert_int_equal(m.layers, 61);   /* the text model's, not the vision tower's 27 */
	assert_int_equal(m.kv_lora_rank + m.qk_rope_head_dim, 576);
	model_config_free(&m);
}

static void llama_70b_is_gqa_with_head_dim_from_hidden_size(void **state)
{
	(void)state;
	struct model_config m;
	read_fixture("llama-3.1-70b", &m);
	assert_false(m.mla);
	assert_int_equal(m.layers, 80);
	assert_int_equal(m.heads, 64);
	assert_int_equal(m.kv_heads, 8);
	assert_int_equal(m.head_dim, 128);
	assert_int_equal(m.v_head_dim, 128);
	model_config_free(&m);
	read_fixture("qwen2.5-0.5b", &m);
	assert_int_equal(m.kv_heads, 2);
	assert_int_equal(m.head_dim, 64);
	model_config_free(&m);
}

static void expect_config_error(const char *json, const char *needle)
{
	struct model_config m;
	char *err = NULL;
	assert_int_equal(model_config_parse(json, strlen(json), &m, &err), -EINVAL);
	assert_non_null(err);
	if (!strstr(err, needle))
		fail_msg("error '%s' does not name '%s'", err, needle);
	free(err);
	model_config_free(&m);
}

static void missing_or_bad_fields_are_named(void **state)
{
	(void)state;
	char *p = fixture("broken-no-layers"), *err = NULL;
	struct model_config m;
	assert_int_equal(model_config_read(p, &m, &err), -EINVAL);
	assert_string_equal(err, "num_hidden_layers: missing");
	free(err);
	free(p);
	expect_config_error("{\"text_config\": {\"num_hidden_layers\": 61, \"kv_lora_rank\": 512}}",
			    "text_config.qk_rope_head_dim: missing");
	expect_config_error("{\"num_hidden_layers\": 32}", "num_attention_heads: missing");
	expect_config_error("{\"num_hidden_layers\": 32, \"num_attention_heads\": 32}", "head_dim: missing");
	expect_config_error("{\"num_hidden_layers\": -1}", "num_hidden_layers: -1 is out of range");
	expect_config_error("{\"num_hidden_layers\": 1e30}", "num_hidden_layers");
	expect_config_error("{\"num_hidden_layers\": \"80\"}", "num_hidden_layers: not a whole number");
	expect_config_error("{\"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"num_key_value_heads\": 16, "
			    "\"head_dim\": 64}", "num_key_value_heads: 16 is more than");
	expect_config_error("{\"num_hidden_layers\": 2, \"num_attention_heads\": 7, \"hidden_size\": 100}",
			    "not a multiple");
	expect_config_error("[1, 2]", "not a JSON object");
	expect_config_error("{\"num_hidden_layers\": 2.5}", "num_hidden_layers: not a whole number");
}

/* A real beyond long long's range was cast to it (undefined behaviour) and then called "not a whole
 * number"; every numeric field says the value, as written, is out of range. */
static void numbers_beyond_any_integer_are_out_of_range(void **state)
{
	(void)state;
	expect_config_error("{\"num_hidden_layers\": 1e300}", "num_hidden_layers: 1e300 is out of range (1 to 1000000)");
	expect_config_error("{\"num_hidden_layers\": -1.5e300}", "num_hidden_layers: -1.5e300 is out of range");
	expect_config_error("{\"num_hidden_layers\": 9223372036854775807}",
			    "num_hidden_layers: 9223372036854775807 is out of range");
	expect_config_error("{\"num_hidden_layers\": 1e-320}", "num_hidden_layers: 1e-320 is out of range");
	expect_config_error("{\"text_config\": {\"num_hidden_layers\": 1e19}}",
			    "text_config.num_hidden_layers: 1e19 is out of range");
	static const char *const fields[] = {"kv_lora_rank", "qk_rope_head_dim", "num_attention_heads",
					     "num_key_value_heads", "head_dim", "hidden_size", "v_head_dim"};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		/* A base that reaches each field: MLA for qk_rope_head_dim, no head_dim for hidden_size. */
		const char *base = i == 1 ? "\"kv_lora_rank\": 512" : i == 5 ? "\"num_attention_heads\": 8"
					: "\"num_attention_heads\": 8, \"head_dim\": 64";
		char *json = xasprintf("{\"num_hidden_layers\": 2, %s, \"%s\": 1e300}", base, fields[i]);
		char *want = xasprintf("%s: 1e300 is out of range", fields[i]);
		expect_config_error(json, want);
		free(json);
		free(want);
	}
	expect_config_error("{not json", "not JSON");
	expect_config_error("", "not JSON");
}

/* Writes a safetensors file: 8-byte little-endian header length, header, `data` bytes of zeros. */
static void write_safetensors(const char *path, const char *header, size_t data, long long fake_len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	unsigned long long n = fake_len >= 0 ? (unsigned long long)fake_len : strlen(header);
	for (int i = 0; i < 8; i++)
		fputc((int)(n >> (8 * i) & 0xff), f);
	fputs(header, f);
	for (size_t i = 0; i < data; i++)
		fputc(0, f);
	fclose(f);
}

static char *tmpdir(void)
{
	char *d = xstrdup("/tmp/gpuwho-unit.XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static void rmtree(const char *d)
{
	char *cmd = xasprintf("rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void safetensors_header_sums_data_offsets_without_reading_data(void **state)
{
	(void)state;
	char *d = tmpdir();
	char *p = xasprintf("%s/model-00001-of-00002.safetensors", d);
	write_safetensors(p,
			  "{\"__metadata__\":{\"format\":\"pt\"},"
			  "\"a.weight\":{\"dtype\":\"BF16\",\"shape\":[4,8],\"data_offsets\":[0,64]},"
			  "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[10],\"data_offsets\":[64,104]}}",
			  104, -1);
	uint64_t b;
	char *err = NULL;
	assert_int_equal(model_safetensors_bytes(p, &b, &err), 0);
	assert_int_equal(b, 104);
	char *p2 = xasprintf("%s/model-00002-of-00002.safetensors", d);
	write_safetensors(p2, "{\"c\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[0,16]}}", 16, -1);
	char *how = NULL;
	assert_int_equal(model_weights_bytes(d, &b, &how, &err), 0);
	assert_int_equal(b, 120);
	assert_string_equal(how, "safetensors headers of 2 files");
	free(how);

	/* The index's total_size wins when present. */
	char *idx = xasprintf("%s/model.safetensors.index.json", d);
	FILE *f = fopen(idx, "w");
	fputs("{\"metadata\": {\"total_size\": 1234567890123}, \"weight_map\": {}}", f);
	fclose(f);
	assert_int_equal(model_weights_bytes(d, &b, &how, &err), 0);
	assert_int_equal(b, 1234567890123ull);
	assert_string_equal(how, "model.safetensors.index.json metadata.total_size");
	free(how);
	free(idx);
	free(p2);
	free(p);
	rmtree(d);
	free(d);
}

static void expect_bad_safetensors(const char *header, size_t data, long long fake_len, const char *needle)
{
	char *d = tmpdir();
	char *p = xasprintf("%s/x.safetensors", d);
	write_safetensors(p, header, data, fake_len);
	uint64_t b;
	char *err = NULL;
	assert_int_equal(model_safetensors_bytes(p, &b, &err), -EINVAL);
	if (!err || !strstr(err, needle))
		fail_msg("error '%s' does not say '%s'", err ? err : "(null)", needle);
	free(err);
	free(p);
	rmtree(d);
	free(d);
}

static void malformed_safetensors_are_refused(void **state)
{
	(void)state;
	expect_bad_safetensors("{}", 0, 1ll << 40, "impossible");              /* header longer than the file */
	expect_bad_safetensors("{}", 0, 200000000, "impossible");              /* over the format's 100 MB cap */
	expect_bad_safetensors("[1]", 0, -1, "not a JSON object");
	expect_bad_safetensors("{\"a\":{\"data_offsets\":[10,2]}}", 10, -1, "bad data_offsets");
	expect_bad_safetensors("{\"a\":{\"data_offsets\":[0,4096]}}", 10, -1, "past the file");
	expect_bad_safetensors("{\"a\":{\"data_offsets\":\"x\"}}", 0, -1, "bad data_offsets");
	/* Shorter than the length prefix itself. */
	char *d = tmpdir();
	char *p = xasprintf("%s/y.safetensors", d);
	FILE *f = fopen(p, "wb");
	fputs("abc", f);
	fclose(f);
	uint64_t b;
	char *err = NULL;
	assert_int_equal(model_safetensors_bytes(p, &b, &err), -EINVAL);
	free(err);
	free(p);
	rmtree(d);
	free(d);
}

static void hf_cache_lookup_follows_refs_main(void **state)
{
	(void)state;
	char *d = tmpdir();
	char *snap = xasprintf("%s/models--org--name/snapshots/abc123", d);
	char *cmd = xasprintf("mkdir -p '%s' '%s/models--org--name/refs' && echo '{}' > '%s/config.json' && "
			      "printf 'abc123' > '%s/models--org--name/refs/main'", snap, d, snap, d);
	assert_int_equal(system(cmd), 0);
	setenv("HF_HUB_CACHE", d, 1);
	char *found = model_find_dir("org/name", NULL);
	assert_non_null(found);
	assert_string_equal(found, snap);
	free(found);
	/* Without a ref, the first snapshot holding a config.json. */
	char *ref = xasprintf("%s/models--org--name/refs/main", d);
	unlink(ref);
	found = model_find_dir("org/name", NULL);
	assert_non_null(found);
	assert_string_equal(found, snap);
	free(found);
	assert_null(model_find_dir("org/other", NULL));
	assert_null(model_find_dir("../etc", NULL));
	assert_null(model_find_dir("a/b/c", NULL));
	/* A local folder is used as is. */
	found = model_find_dir(d, NULL);
	assert_string_equal(found, d);
	free(found);
	unsetenv("HF_HUB_CACHE");
	free(ref);
	free(cmd);
	free(snap);
	rmtree(d);
	free(d);
}

/* The shapes beyond attention that the weights-per-rank and activation estimates read (issue 14). */
static void extras_for_the_weights_estimate(void **state)
{
	(void)state;
	struct model_config m;
	char *err = NULL;
	const char *t = "{\"model_type\":\"kimi_k25\",\"vision_config\":{\"hidden_size\":1152,\"num_hidden_layers\":27},"
			"\"text_config\":{\"num_hidden_layers\":61,\"hidden_size\":7168,\"kv_lora_rank\":512,\"qk_rope_head_dim\":64,"
			"\"num_attention_heads\":64,\"q_lora_rank\":1536,\"n_routed_experts\":384,\"moe_intermediate_size\":2048,"
			"\"first_k_dense_replace\":1,\"vocab_size\":163840,\"num_nextn_predict_layers\":0,\"index_head_dim\":128,"
			"\"quantization_config\":{\"quant_method\":\"compressed-tensors\"},\"tie_word_embeddings\":false,"
			"\"n_shared_experts\":\"one\",\"intermediate_size\":-5}}";
	assert_int_equal(model_config_parse(t, strlen(t), &m, &err), 0);
	assert_true(m.mla);
	assert_int_equal(m.hidden, 7168);
	assert_int_equal(m.heads, 64);
	assert_int_equal(m.experts, 384);
	assert_int_equal(m.moe_intermediate, 2048);
	assert_int_equal(m.first_dense, 1);
	assert_int_equal(m.q_lora_rank, 1536);
	assert_int_equal(m.index_head_dim, 128);
	assert_string_equal(m.quant_method, "compressed-tensors");
	assert_true(m.vision_params == 12.0 * 1152 * 1152 * 27);
	/* Odd optional values are ignored, never fatal. */
	assert_int_equal(m.shared_experts, 0);
	assert_int_equal(m.intermediate, 0);
	model_config_free(&m);
}

static void parse_ok(const char *json, struct model_config *m)
{
	char *err = NULL;
	if (model_config_parse(json, strlen(json), m, &err))
		fail_msg("%s", err);
}

/* Layer kinds, each way configs spell them. */
static void layer_kinds_from_every_spelling(void **state)
{
	(void)state;
	struct model_config m;
	/* GPT-OSS: layer_types, alternating. */
	read_fixture("gpt-oss-120b", &m);
	assert_string_equal(m.layer_source, "layer_types");
	assert_int_equal(m.full_layers, 18);
	assert_int_equal(m.swa_layers, 18);
	assert_int_equal(m.sliding_window, 128);
	model_config_free(&m);
	/* Gemma 3: every 6th layer full (layer i full when (i + 1) % 6 == 0): 62 → 10 + 52. */
	read_fixture("gemma-3-27b", &m);
	assert_string_equal(m.section, "text_config");
	assert_string_equal(m.layer_source, "sliding_window_pattern");
	assert_int_equal(m.full_layers, 10);
	assert_int_equal(m.swa_layers, 52);
	model_config_free(&m);
	/* Gemma 2 has no pattern field: it alternates. */
	parse_ok("{\"model_type\":\"gemma2\",\"num_hidden_layers\":46,\"num_attention_heads\":32,\"num_key_value_heads\":16,"
		 "\"head_dim\":128,\"sliding_window\":4096}", &m);
	assert_int_equal(m.full_layers, 23);
	assert_int_equal(m.swa_layers, 23);
	model_config_free(&m);
	/* Llama 4: chunked local attention on the RoPE layers, every 4th layer global by default. */
	parse_ok("{\"model_type\":\"llama4\",\"text_config\":{\"num_hidden_layers\":48,\"num_attention_heads\":40,"
		 "\"num_key_value_heads\":8,\"head_dim\":128,\"attention_chunk_size\":8192}}", &m);
	assert_string_equal(m.layer_source, "no_rope_layers");
	assert_int_equal(m.attn_chunk, 8192);
	assert_int_equal(m.chunked_layers, 36);
	assert_int_equal(m.full_layers, 12);
	model_config_free(&m);
	parse_ok("{\"num_hidden_layers\":4,\"num_attention_heads\":4,\"head_dim\":64,\"attention_chunk_size\":8192,"
		 "\"no_rope_layers\":[1,1,0,1]}", &m);
	assert_int_equal(m.chunked_layers, 3);
	assert_int_equal(m.full_layers, 1);
	model_config_free(&m);
	/* Qwen3-Next: linear attention with a full layer every 4th. */
	parse_ok("{\"model_type\":\"qwen3_next\",\"num_hidden_layers\":48,\"num_attention_heads\":16,\"num_key_value_heads\":2,"
		 "\"head_dim\":256,\"full_attention_interval\":4}", &m);
	assert_int_equal(m.full_layers, 12);
	assert_int_equal(m.linear_layers, 36);
	model_config_free(&m);
	parse_ok("{\"num_hidden_layers\":4,\"num_attention_heads\":4,\"head_dim\":64,"
		 "\"layer_types\":[\"linear_attention\",\"linear_attention\",\"linear_attention\",\"full_attention\"]}", &m);
	assert_int_equal(m.full_layers, 1);
	assert_int_equal(m.linear_layers, 3);
	model_config_free(&m);
	/* Nemotron-H: '*' attention, 'M' Mamba, '-' MLP only. */
	parse_ok("{\"num_hidden_layers\":6,\"num_attention_heads\":4,\"head_dim\":64,\"hybrid_override_pattern\":\"M-M*-M\"}", &m);
	assert_int_equal(m.full_layers, 1);
	assert_int_equal(m.linear_layers, 3);
	model_config_free(&m);
	/* A plain model and Qwen2's unused sliding_window: no kinds, every layer full. */
	read_fixture("llama-3.1-70b", &m);
	assert_null(m.layer_source);
	assert_int_equal(m.full_layers + m.swa_layers + m.chunked_layers + m.linear_layers, 0);
	model_config_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(extras_for_the_weights_estimate),
		cmocka_unit_test(layer_kinds_from_every_spelling),
		cmocka_unit_test(deepseek_v3_is_mla_with_61_layers),
		cmocka_unit_test(kimi_k25_reads_the_nested_text_config),
		cmocka_unit_test(llama_70b_is_gqa_with_head_dim_from_hidden_size),
		cmocka_unit_test(missing_or_bad_fields_are_named),
		cmocka_unit_test(numbers_beyond_any_integer_are_out_of_range),
		cmocka_unit_test(safetensors_header_sums_data_offsets_without_reading_data),
		cmocka_unit_test(malformed_safetensors_are_refused),
		cmocka_unit_test(hf_cache_lookup_follows_refs_main),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
