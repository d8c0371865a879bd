/* gauges: the numbers a fleet exporter publishes (gpuwho metrics, serve) that the diagnosis decides
 * but does not store as numbers: how much GPU memory a finding says is stuck, how much /dev/shm the
 * dead left behind, how much host memory the GPU holders pin. Pure: no I/O, like the rest of
 * diagnose/; the same criteria as the verdicts in gpu.c and host.c, so a metric and `gpuwho why`
 * never disagree. */
#ifndef GPUWHO_DIAGNOSE_GAUGES_H
#define GPUWHO_DIAGNOSE_GAUGES_H

#include "diagnose/diagnose.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>

/* True when f is about memory that should not be held and that an action frees: stuck_in_driver,
 * zombie_leader, stopped, inherited_holder, orphaned_workers, driver_leak (at any severity: memory
 * no process holds is stuck whether or not gpuwho could look at every process). False for
 * host-wide findings and for verdicts without memory (gpu_health, in_use, idle, ...). */
bool gauge_is_stuck(const struct finding *f);

/* The GPU memory f says is stuck, in bytes (0 when !gauge_is_stuck(f)): for driver_leak the
 * memory no process holds (unattributed, plus what NVML lists for exited PIDs nobody inherited);
 * for inherited_holder the exited PIDs' memory; otherwise the NVML memory of f's PIDs on f's GPU.
 * Memory NVML could not give counts 0 and sets *unknown (when unknown is not NULL). d is the
 * diagnosis f belongs to (its account holds the rows). */
unsigned long long gauge_stuck_bytes(const struct diagnosis *d, const struct finding *f, bool *unknown);

/* /dev/shm bytes in RAM of segments that shm_orphans names: nobody holds them, their name says a
 * GPU stack made them, and the creator the name encodes (if any) is gone. */
unsigned long long gauge_shm_orphan_bytes(const struct snapshot *s);

/* Host memory the GPU holders would give back when they end: per holder the largest of VmPin,
 * VmLck and RssShmem (cudaHostAlloc buffers count as RssShmem), summed, in bytes. */
unsigned long long gauge_pinned_bytes(const struct snapshot *s);

#endif
