/* why: a verdict per GPU (why its memory is in use), the evidence behind it and the exact fix. */
#include "cmd/cmd.h"
#include "cmd/common.h"
#include "diagnose/diagnose.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

#define WHY_RESAMPLE_S 0.5

static const char usage[] =
	"Usage: gpuwho why [OPTIONS] [GPU...]\n"
	"\n"
	"Says why each GPU's memory is in use, with the evidence and the exact fix: live processes\n"
	"(nothing to free), orphaned serving workers whose launcher died, a process that inherited an\n"
	"exited process's device files, a <defunct> group leader whose threads still hold the GPU, a\n"
	"stopped holder, a process stuck in the driver, holders outside this container's PID namespace,\n"
	"memory no process holds (a driver-level leak), memory being released, GPU health that needs a\n"
	"reset; and for the host: leaked /dev/shm segments, host memory running low. A bind-mounted\n"
	"device node (fuser's \"kernel mount\") is explained, never taken for a holder.\n"
	"why only looks: it never signals a process or resets a GPU (see gpuwho free).\n"
	"\n"
	CLI_GPU_SELECTORS_HELP
	"Findings about the host are always shown.\n"
	"\n"
	"Options:\n"
	"  --from FILE      diagnose a snapshot (gpuwho snapshot -o FILE; \"-\": stdin) instead of this host\n"
	"  --nvml PATH      load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml        do not ask NVML: holders only, no memory verdicts\n"
	CLI_GPU_ID_HELP
	CLI_COMMON_HELP
	"\n"
	"Examples:\n"
	"  gpuwho why                   every GPU\n"
	"  gpuwho why 0 2               GPUs 0 and 2\n"
	"  gpuwho why --json | jq -r '.findings[] | select(.severity == \"action\") | .fix'\n"
	"\n"
	"Exit status: 0 nothing needs attention (findings are ok or info), 1 a finding is a warning or\n"
	"needs action, 2 bad usage (an unknown GPU selector too), 3 nothing could be inspected (neither\n"
	"NVML nor /proc, or the --from file could not be loaded).\n";

int cmd_why(int argc, char **argv)
{
	struct cli c = {.cmd = "why", .gpus = true};
	int r = cli_parse(&c, argc, argv, "", NULL, NULL, NULL, usage);
	if (r < 0)
		return cli_exit_for(r);
	struct snapshot s;
	if (cmd_get_snapshot(&c, 0, &s) != 0)
		return EXIT_CANNOT;

	struct diagnosis d;
	diagnose(&s, &d);
	/* Memory with no holder: a second sample 0.5 s after the first tells memory being released
	 * from a leak (docs/why.md). Only then is it worth the wait; a healthy host answers at once. */
	if (!c.from && diag_wants_resample(&s, &d)) {
		snapshot_resample(&s, c.nvml_path, WHY_RESAMPLE_S);
		diag_free(&d);
		diagnose(&s, &d);
	}

	bool *gsel, *show = NULL;
	int code = cmd_select_gpus(&c, &d.acct, argv + r, argc - r, &gsel);
	if (gsel) {
		/* Findings about the host are always shown. */
		show = xcalloc(d.nfindings + 1, sizeof *show);
		for (size_t i = 0; i < d.nfindings; i++)
			show[i] = d.findings[i].slot < 0 || gsel[d.findings[i].slot];
		free(gsel);
	}
	if (code == EXIT_FINE) {
		if (c.json) {
			cmd_print_json(render_why_json(&d, show, s.host_pidns, s.resample.ngpus ? s.resample.delay_s : -1));
		} else {
			struct render_opts ro = cmd_render_opts(&c);
			render_why_text(stdout, &d, show, &ro);
		}
		if (!s.nvml.loaded && s.scan.nscanned == 0)
			code = EXIT_CANNOT;
		else if (diag_worst(&d, show) >= DIAG_WARNING)
			code = EXIT_PROBLEM;
	}
	free(show);
	diag_free(&d);
	snapshot_free(&s);
	return code;
}
