/* fuzz_log: libFuzzer target for plan --log's reader (engine_log_parse) and the comparison with a
 * plan (`make fuzz`). Any bytes must parse or fail with a message; what parses has finite,
 * non-negative numbers and compares against a computed plan without trouble. */
#include "plan/enginelog.h"
#include "plan/launch.h"
#include "plan/plan.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_log lg;
	char *err = NULL;
	if (engine_log_parse((const char *)data, size, &lg, &err)) {
		if (!err)
			abort();   /* a failure must say why */
		free(err);
		return 0;
	}
	if (!lg.has_tokens && !lg.has_kv_bytes)
		abort();
	const double v[] = {lg.kv_bytes, lg.weights, lg.free_before, lg.comm, lg.activation, lg.non_torch, lg.total};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (!isfinite(v[i]) || v[i] < 0)
			abort();
	char *argv[] = {"vllm", "serve", "m", "-tp", "2"};
	struct launch l;
	if (launch_parse(5, argv, &l))
		abort();
	static const struct model_config gqa = {.layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 128,
						.v_head_dim = 128, .hidden = 8192, .vocab = 128256, .intermediate = 28672};
	struct plan_input in = {.launch = &l, .model = &gqa, .has_weights = true, .weights_bytes = 141e9,
				.has_gpu_total = true, .gpu_total_bytes = 80 * PLAN_GIB, .estimate_overhead = true,
				.avg_tokens = 4000, .host_gpus = 8};
	struct plan_result r;
	if (plan_compute(&in, &r, &err))
		abort();
	struct log_compare c;
	engine_log_compare(&lg, &r, &c);
	if (!c.summary || c.nrows < 2)
		abort();
	log_compare_free(&c);
	plan_result_free(&r);
	launch_free(&l);
	return 0;
}
