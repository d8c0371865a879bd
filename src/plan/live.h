/* plan/live: the live facts `gpuwho plan` needs from this host — a GPU's total memory (NVML) and
 * the number of GPUs (/proc/driver/nvidia) — kept apart so that plan.c stays pure arithmetic. */
#ifndef GPUWHO_PLAN_LIVE_H
#define GPUWHO_PLAN_LIVE_H

#include <stdbool.h>

/* Live GPU memory from NVML (nvml_collect with nvml_path; NULL: $GPUWHO_NVML, else
 * libnvidia-ml.so.1) for the GPU with the smallest total, since every rank must fit on its GPU:
 * *total is NVML's, *reserved what the driver keeps back of it (NVML v2; 0 when only v1 answers:
 * CUDA's total is the difference), *used the most any GPU has in use by processes now (gone for a
 * new launch too). Returns false (all 0) when NVML cannot answer or reports no GPU memory; callers
 * then fall back to --gpu-mem. */
bool plan_gpu_live(const char *nvml_path, double *total, double *reserved, double *used);

/* GPUs on this host (devices_count_gpus over holders_proc_root()), or -1 when unknown. */
int plan_gpu_count_live(void);

#endif
