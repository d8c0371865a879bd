/* TEMPORARY: replaced by src/snapshot.c from branch snap — delete this file at the merge.
 * Minimal stand-ins for the snapshot functions `why` calls, so that branch why builds and its
 * tests run before the real collection and loader exist. Weak symbols: should the real ones be
 * linked in beside these, they win. Collection here takes the holders, NVML, the processes NVML
 * names and /proc/meminfo; no /dev/shm, no resample, no ancestors. Loading always fails. */
#include "snapshot.h"
#include "util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WEAK __attribute__((weak))

WEAK int snapshot_collect(const struct snapshot_opts *o, struct snapshot *out)
{
	memset(out, 0, sizeof *out);
	out->schema_version = SNAPSHOT_SCHEMA_VERSION;
	out->self_pid = (int)getpid();
	struct holders_opts ho = {.proc_root = holders_proc_root(), .timeout_ms = o->timeout_ms};
	holders_scan_nvidia(&ho, &out->scan);
	out->nvml_asked = !o->no_nvml;
	if (out->nvml_asked)
		nvml_collect(o->nvml_path, &out->nvml);
	int procfd = open(ho.proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	out->host_pidns = procfd >= 0 && proc_pidns_is_host(procfd);
	size_t cap = 0;
	for (size_t g = 0; procfd >= 0 && out->nvml.loaded && g < out->nvml.ngpus; g++) {
		for (size_t i = 0; i < out->nvml.gpus[g].nprocs; i++) {
			int pid = (int)out->nvml.gpus[g].procs[i].pid;
			if (pid <= 0 || snapshot_find_proc(out, pid))
				continue;
			struct proc_info p;
			if (proc_read_brief(procfd, pid, &p) < 0) {
				proc_info_free(&p);
				continue;
			}
			xgrow(&out->others, &cap, out->nothers + 1, sizeof *out->others);
			out->others[out->nothers++] = p;
		}
	}
	if (procfd >= 0)
		close(procfd);
	out->mem_ok = meminfo_read(NULL, &out->mem) == 0;
	return 0;
}

WEAK int snapshot_load(const char *path, struct snapshot *out, char **err)
{
	(void)path;
	memset(out, 0, sizeof *out);
	*err = xstrdup("snapshot loading is not in this build yet (it comes with src/snapshot.c)");
	return -1;
}

WEAK void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	free(s->gpuwho_version);
	free(s->hostname);
	free(s->self_ancestors);
	holders_scan_free(&s->scan);
	nvml_info_free(&s->nvml);
	free(s->resample.used_bytes);
	free(s->resample.used_ok);
	for (size_t i = 0; i < s->nothers; i++)
		proc_info_free(&s->others[i]);
	free(s->others);
	for (size_t i = 0; i < s->nshm; i++) {
		free(s->shm[i].name);
		free(s->shm[i].holders);
	}
	free(s->shm);
	free(s->shm_error);
	for (size_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	memset(s, 0, sizeof *s);
}

WEAK const struct proc_info *snapshot_find_proc(const struct snapshot *s, int pid)
{
	for (size_t i = 0; i < s->scan.nholders; i++)
		if (s->scan.holders[i].info.pid == pid)
			return &s->scan.holders[i].info;
	for (size_t i = 0; i < s->nothers; i++)
		if (s->others[i].pid == pid)
			return &s->others[i];
	return NULL;
}
