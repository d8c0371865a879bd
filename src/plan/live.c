/* plan/live: the live facts `gpuwho plan` needs (NVML, /proc/driver/nvidia). */
#include "plan/live.h"
#include "nvml/nvml.h"
#include "proc/holders.h"
#include "sys/devices.h"

bool plan_gpu_total_live(const char *nvml_path, double *bytes)
{
	struct nvml_info nv;
	*bytes = 0;
	if (nvml_collect(nvml_path, &nv) == 0)
		for (size_t i = 0; i < nv.ngpus; i++) {
			const struct nvml_gpu *g = &nv.gpus[i];
			if (g->handle_rc == 0 && g->mem_rc == 0 && g->mem_total > 0 &&
			    (*bytes == 0 || (double)g->mem_total < *bytes))
				*bytes = (double)g->mem_total;
		}
	nvml_info_free(&nv);
	return *bytes > 0;
}

int plan_gpu_count_live(void)
{
	return devices_count_gpus(holders_proc_root());
}
