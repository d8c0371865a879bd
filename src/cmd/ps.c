/* ps: every GPU's memory used/total, each holder with its memory, and the memory nobody accounts for. */
#include "cmd/cmd.h"
#include "cmd/common.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] =
	"Usage: gpuwho ps [OPTIONS] [GPU...]\n"
	"\n"
	"One block per GPU: its memory used/total and the memory no process accounts for\n"
	"(\"unattributed\", always shown), then every process that holds it, largest first: pid, user,\n"
	"state, GPU memory, container, command. NVML's process list (host PIDs, memory) is joined with\n"
	"the processes that hold /dev/nvidia* (found through /proc, including those fuser misses):\n"
	"  - a process holding the device with no GPU memory (nvidia-smi, nvidia-persistenced) says so;\n"
	"  - inside a container, a PID NVML names that this PID namespace cannot see is reported as\n"
	"    held outside this PID namespace, with its memory (nvidia-smi drops it);\n"
	"  - on the host, a PID NVML names that has exited points to the processes that inherited\n"
	"    its device files and now hold the memory.\n"
	"When NVML cannot answer (no library, driver not loaded, version mismatch, no permission), ps\n"
	"says why in one line and still lists the holders of each /dev/nvidiaN, memory unknown.\n"
	"\n"
	CLI_GPU_SELECTORS_HELP
	"\n"
	"Options:\n"
	"  --nvml PATH      load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml        do not ask NVML: holders only, memory unknown\n"
	"  --from FILE      show a snapshot (gpuwho snapshot -o FILE) instead of this host\n"
	CLI_GPU_ID_HELP
	CLI_FORMAT_HELP
	CLI_COMMON_HELP
	"\n"
	"Text lines are cut to the terminal's width (or $COLUMNS when set); piped output is not cut.\n"
	"\n"
	"Examples:\n"
	"  gpuwho                         the same as gpuwho ps\n"
	"  gpuwho ps 0 GPU-8c8e6e0c       GPU 0 and the GPU with that UUID\n"
	"  gpuwho ps --json | jq '.gpus[].memory.unattributed_bytes'\n"
	"\n"
	"Exit status: 0 done, 2 bad usage (an unknown GPU selector too), 3 neither NVML nor /proc\n"
	"could be read, or the --from snapshot could not be read.\n";

int cmd_ps(int argc, char **argv)
{
	struct cli c = {.cmd = "ps", .gpus = true, .tables = true};
	int r = cli_parse(&c, argc, argv, "", NULL, NULL, NULL, usage);
	if (r < 0)
		return cli_exit_for(r);
	/* Live or replayed, ps renders from a snapshot: the same data gives the same output. */
	struct snapshot snap;
	if (cmd_get_snapshot(&c, 0, &snap) != 0)
		return EXIT_CANNOT;
	const struct nvml_info *nv = snap.nvml_asked ? &snap.nvml : NULL;
	struct account a;
	account_from_snapshot(&snap, &a);
	bool *sel;
	int code = cmd_select_gpus(&c, &a, argv + r, argc - r, &sel);
	if (code == EXIT_FINE) {
		if (c.json) {
			cmd_print_json(render_ps_json(&a, sel, nv, &snap.scan));
		} else if (c.csv) {
			render_ps_csv(stdout, &a, sel);
		} else {
			struct render_opts ro = cmd_render_opts(&c);
			render_ps_text(stdout, &a, sel, nv, &snap.scan, &ro);
		}
		if (!snap.nvml.loaded && snap.scan.nscanned == 0)
			code = EXIT_CANNOT;
	}
	free(sel);
	account_free(&a);
	snapshot_free(&snap);
	return code;
}
