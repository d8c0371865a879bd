/* fuzz_model_config: libFuzzer target for the config.json reader (model_config_parse, which
 * model_config_read calls on the file's text) and the KV arithmetic over what it accepts (`make
 * fuzz`). Any input must load or fail with a message; a loaded shape is within the reader's bounds
 * and is planned for a vLLM and an SGLang DP-attention launch. */
#include "plan/model.h"
#include "plan/plan.h"

#include <stdint.h>
#include <stdlib.h>

static void plan_with(const struct model_config *m, int argc, char **argv)
{
	struct launch l;
	if (launch_parse(argc, argv, &l))
		abort();
	struct plan_input in = {
		.launch = &l,
		.model = m,
		.has_weights = true,
		.weights_bytes = 16e9,
		.has_gpu_total = true,
		.gpu_total_bytes = 80 * PLAN_GIB,
		.has_host_avail = true,
		.host_avail_bytes = 408e9,
		.overhead_bytes = 0.5 * PLAN_GIB,
		.avg_tokens = 4000,
		.host_gpus = 8,
	};
	struct plan_result r;
	char *err = NULL;
	if (plan_compute(&in, &r, &err) && !err)
		abort();
	if (r.has_cell && !(r.cell_bytes > 0))
		abort();
	plan_result_free(&r);
	free(err);
	launch_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_config m;
	char *err = NULL;
	if (model_config_parse((const char *)data, size, &m, &err) == 0) {
		if (m.layers < 1 || (m.mla ? m.kv_lora_rank < 1 || m.qk_rope_head_dim < 1
					   : m.heads < 1 || m.kv_heads < 1 || m.kv_heads > m.heads || m.head_dim < 1 ||
						     m.v_head_dim < 1))
			abort();
		char *vllm[] = {"vllm", "serve", "m", "-tp", "8", "--kv-cache-dtype", "fp8"};
		char *sglang[] = {"python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "16", "--dp", "16",
				  "--enable-dp-attention", "--enable-hierarchical-cache"};
		plan_with(&m, sizeof vllm / sizeof vllm[0], vllm);
		plan_with(&m, sizeof sglang / sizeof sglang[0], sglang);
	} else if (!err) {
		abort();   /* a failure must say why */
	}
	free(err);
	model_config_free(&m);
	return 0;
}
