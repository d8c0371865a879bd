/* snapshot: the data model's own functions — freeing, looking a process up, and the per-GPU
 * account every command builds from a snapshot. */
#include "snapshot/snapshot.h"

#include <stdlib.h>
#include <string.h>

void snapshot_free(struct snapshot *s)
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
	shm_segments_free(s->shm, s->nshm);
	free(s->shm_error);
	free(s->shm_dir);
	for (size_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	memset(s, 0, sizeof *s);
}

const struct proc_info *snapshot_find_proc(const struct snapshot *s, int pid)
{
	for (size_t i = 0; i < s->scan.nholders; i++)
		if (s->scan.holders[i].info.pid == pid)
			return &s->scan.holders[i].info;
	for (size_t i = 0; i < s->nothers; i++)
		if (s->others[i].pid == pid)
			return &s->others[i];
	return NULL;
}
