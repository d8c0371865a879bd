/* ps: every GPU's memory used/total, each holder with its memory, and the memory nobody accounts for. */
#include "cmd/cmd.h"
#include "cmd/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	"  --visible        only the GPUs $CUDA_VISIBLE_DEVICES names, when no GPU is given (read as\n"
	"                   NVML indexes, PCI order: CUDA's own order differs unless\n"
	"                   CUDA_DEVICE_ORDER=PCI_BUS_ID; UUIDs are unambiguous)\n"
	CLI_GPU_ID_HELP
	CLI_FORMAT_HELP
	CLI_COMMON_HELP
	"\n"
	"Text lines are cut to the terminal's width (or $COLUMNS when set); piped output keeps whole\n"
	"command lines and wraps the rest at 100 columns.\n"
	"\n"
	"Examples:\n"
	"  gpuwho                         the same as gpuwho ps\n"
	"  gpuwho ps 0 GPU-8c8e6e0c       GPU 0 and the GPU with that UUID\n"
	"  gpuwho ps --json | jq '.gpus[].memory.unattributed_bytes'\n"
	"\n"
	"Exit status: 0 done, 2 bad usage (an unknown GPU selector too), 3 neither NVML nor /proc\n"
	"could be read, or the --from snapshot could not be read.\n";

enum { OPT_VISIBLE = 0x100 };

static int on_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	if (opt != OPT_VISIBLE)
		return -1;
	*(bool *)ctx = true;
	return 0;
}

int cmd_ps(int argc, char **argv)
{
	static const struct option own[] = {{"visible", no_argument, NULL, OPT_VISIBLE}, {0}};
	struct cli c = {.cmd = "ps", .gpus = true, .tables = true};
	bool visible = false;
	int r = cli_parse(&c, argc, argv, "", own, on_opt, &visible, usage);
	if (r < 0)
		return cli_exit_for(r);
	/* --visible: a process's view of the GPUs, only when asked (CUDA_VISIBLE_DEVICES set in this
	 * shell for another purpose must not hide GPUs from an admin). "NoDevFiles" or a negative index
	 * hide every GPU from CUDA; ps then shows all, as without it. */
	char *env_sel[1];
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (visible && r >= argc && !c.nids && cvd && *cvd && strcmp(cvd, "NoDevFiles") && cvd[0] != '-') {
		env_sel[0] = (char *)cvd;
		argv = env_sel;
		argc = 1;
		r = 0;
	}
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
