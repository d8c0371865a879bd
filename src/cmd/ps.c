/* ps: every GPU's memory used/total, each holder with its memory, and the memory nobody accounts for. */
#include "account.h"
#include "cli.h"
#include "cmd/cmd.h"
#include "escape.h"
#include "nvml/nvml.h"
#include "proc/holders.h"
#include "render.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	"GPU selectors: an index (0), a UUID (GPU-..., a unique prefix will do), a PCI bus id\n"
	"(0000:65:00.0 or 00000000:65:00.0, any case) or a device path (/dev/nvidia0).\n"
	"\n"
	"Options:\n"
	"  --nvml PATH      load this libnvidia-ml instead of libnvidia-ml.so.1 (also $GPUWHO_NVML)\n"
	"  --no-nvml        do not ask NVML: holders only, memory unknown\n"
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
	"could be read.\n";

/* Reads the processes NVML names that hold no scanned node (host namespace only), with readers
 * that cannot block: they are outside the holder engine's time bound. */
static struct proc_info *read_extras(int procfd, const struct nvml_info *nv, const struct holders_scan *s,
				     size_t *n)
{
	struct proc_info *arr = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t g = 0; g < nv->ngpus; g++) {
		for (size_t i = 0; i < nv->gpus[g].nprocs; i++) {
			int pid = (int)nv->gpus[g].procs[i].pid;
			bool known = false;
			for (size_t h = 0; h < s->nholders && !known; h++)
				known = s->holders[h].info.pid == pid;
			for (size_t k = 0; k < *n && !known; k++)
				known = arr[k].pid == pid;
			if (known || pid <= 0)
				continue;
			struct proc_info p;
			if (proc_read_brief(procfd, pid, &p) < 0) {
				proc_info_free(&p);
				continue;
			}
			xgrow(&arr, &cap, *n + 1, sizeof *arr);
			arr[(*n)++] = p;
		}
	}
	return arr;
}

int cmd_ps(int argc, char **argv)
{
	struct cli c = {.cmd = "ps"};
	int r = cli_parse(&c, argc, argv, "", NULL, NULL, NULL, usage);
	if (r < 0)
		return cli_exit_for(r);
	if (c.from) {
		cli_error(&c, "--from needs snapshots, which this version of gpuwho cannot read yet");
		return EXIT_USAGE;
	}
	struct holders_opts ho = {.proc_root = holders_proc_root()};
	struct holders_scan s;
	holders_scan_nvidia(&ho, &s);

	struct nvml_info nv = {0};
	bool asked = !c.no_nvml;
	if (asked)
		nvml_collect(c.nvml_path, &nv);

	int procfd = open(ho.proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool host = procfd >= 0 && proc_pidns_is_host(procfd);
	struct proc_info *extra = NULL;
	size_t nextra = 0;
	if (host && nv.loaded)
		extra = read_extras(procfd, &nv, &s, &nextra);
	if (procfd >= 0)
		close(procfd);

	struct acct a;
	account_build(asked ? &nv : NULL, &s, extra, nextra, host, &a);

	int code = EXIT_FINE;
	bool *sel = NULL;
	if (r < argc) {
		sel = xcalloc(a.ngpus + 1, sizeof *sel);
		for (int i = r; i < argc; i++) {
			int k = account_select(&a, argv[i]);
			if (k >= 0) {
				sel[k] = true;
				continue;
			}
			char *e = escape_term(argv[i], strlen(argv[i]));
			if (k == -2)
				cli_error(&c, "'%s' matches more than one GPU's UUID; give more of it", e);
			else
				cli_error(&c, "no GPU matches '%s' (%zu GPU%s here; selectors: index, UUID GPU-..., "
					  "PCI bus id 0000:65:00.0, /dev/nvidiaN)", e, a.ngpus, a.ngpus == 1 ? "" : "s");
			free(e);
			code = EXIT_USAGE;
		}
	}
	if (code == EXIT_FINE) {
		if (c.json) {
			json_t *j = render_ps_json(&a, sel, asked ? &nv : NULL, &s);
			json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII);
			fputc('\n', stdout);
			json_decref(j);
		} else {
			struct render_opts ro = {.color = cli_color(&c), .width = cli_text_width()};
			render_ps_text(stdout, &a, sel, asked ? &nv : NULL, &s, &ro);
		}
		if (!nv.loaded && s.nscanned == 0)
			code = EXIT_CANNOT;
	}
	free(sel);
	account_free(&a);
	for (size_t i = 0; i < nextra; i++)
		proc_info_free(&extra[i]);
	free(extra);
	nvml_info_free(&nv);
	holders_scan_free(&s);
	return code;
}
