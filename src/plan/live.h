/* plan/live: the live facts `gpuwho plan` needs from this host — a GPU's total memory (NVML) and
 * the number of GPUs (/proc/driver/nvidia) — kept apart so that plan.c stays pure arithmetic. */
#ifndef GPUWHO_PLAN_LIVE_H
#define GPUWHO_PLAN_LIVE_H

#include <stdbool.h>

/* Live GPU memory from NVML (nvml_collect with nvml_path; NULL: $GPUWHO_NVML, else
 * libnvidia-ml.so.1): the smallest total among the GPUs NVML reports, since every rank must fit on
 * its GPU. Returns false (unknown, *bytes 0) when NVML cannot answer or reports no GPU memory;
 * callers then fall back to --gpu-mem. */
bool plan_gpu_total_live(const char *nvml_path, double *bytes);

/* GPUs on this host (devices_count_gpus over holders_proc_root()), or -1 when unknown. */
int plan_gpu_count_live(void);

#endif
