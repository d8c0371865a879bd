/* fuzz_launch: libFuzzer target for the launch-line parser and plan's arithmetic (`make fuzz`).
 * The input is a command line as /proc/PID/cmdline holds it: words separated by NUL bytes. Any input
 * must parse or fail with a message; a parsed launch is planned on fixed host facts, with no model
 * shape, an MLA shape and a GQA shape, and with every fact unknown; the input is also applied as a
 * --config YAML file under the parsed command line. */
#include "plan/launch.h"
#include "plan/plan.h"

#include <stdint.h>
#include <stdlib.h>

static void plan_once(const struct launch *l, const struct model_config *m, bool known)
{
	struct plan_input in = {
		.launch = l,
		.model = m,
		.has_weights = known,
		.weights_bytes = 141e9,
		.has_gpu_total = known,
		.gpu_total_bytes = 80 * PLAN_GIB,
		.has_host_avail = known,
		.host_avail_bytes = 408e9,
		.overhead_bytes = 0.5 * PLAN_GIB,
		.avg_tokens = 4000,
		.host_gpus = known ? 8 : -1,
		.cuda_visible = l->has_cuda_visible ? l->cuda_visible : NULL,
	};
	struct plan_result r;
	char *err = NULL;
	if (plan_compute(&in, &r, &err) && !err)
		abort();   /* a failure must say why */
	plan_result_free(&r);
	free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int argc;
	char **argv = launch_argv_from_nul((const char *)data, size, &argc);
	struct launch l;
	if (launch_parse(argc, argv, &l) == 0) {
		if (!l.model || l.tp < 1 || l.pp < 1 || l.dp < 1)
			abort();
		static const struct model_config mla = {.mla = true, .layers = 61, .kv_lora_rank = 512,
							.qk_rope_head_dim = 64, .torch_dtype = "bfloat16"};
		static const struct model_config gqa = {.layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 128,
							.v_head_dim = 128};
		plan_once(&l, NULL, true);
		plan_once(&l, &mla, true);
		plan_once(&l, &gqa, true);
		plan_once(&l, &gqa, false);
		/* The same bytes as a --config YAML file under this command line: it must apply or say why. */
		if (launch_apply_config(&l, (const char *)data, size, argc, argv) == 0) {
			if (!l.model || l.tp < 1 || l.pp < 1 || l.dp < 1)
				abort();
			plan_once(&l, &mla, true);
		} else if (!l.error) {
			abort();
		}
	} else if (!l.error) {
		abort();   /* a refusal must name the flag */
	}
	launch_free(&l);
	launch_argv_free(argv, argc);
	return 0;
}
