/* plan/live: the live facts `gpuwho plan` needs (NVML, /proc/driver/nvidia). */
#include "plan/live.h"
#include "nvml/nvml.h"
#include "proc/holders.h"
#include "sys/devices.h"

bool plan_gpu_live(const char *nvml_path, double *total, double *reserved, double *used)
{
	struct nvml_info nv;
	*total = *reserved = *used = 0;
	if (nvml_collect(nvml_path, &nv) == 0)
		for (size_t i = 0; i < nv.ngpus; i++) {
			const struct nvml_gpu *g = &nv.gpus[i];
			if (g->handle_rc || g->mem_rc || !g->mem_total)
				continue;
			if (*total == 0 || (double)g->mem_total < *total) {
				*total = (double)g->mem_total;
				*reserved = g->mem_reserved_rc == 0 ? (double)g->mem_reserved : 0;
			}
			if ((double)g->mem_used > *used)
				*used = (double)g->mem_used;
		}
	nvml_info_free(&nv);
	return *total > 0;
}

int plan_gpu_count_live(void)
{
	return devices_count_gpus(holders_proc_root());
}
