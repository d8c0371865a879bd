/* devices: discovers the NVIDIA device nodes of this host (/proc/devices majors, /dev, and
 * /proc/driver/nvidia/gpus/BUS/information for minor <-> PCI bus id). */
#ifndef GPUWHO_SYS_DEVICES_H
#define GPUWHO_SYS_DEVICES_H

#include "sys/target.h"

#include <stddef.h>

/* Finds every NVIDIA device node under dev_root ("/dev") using proc_root ("/proc"): GPUs
 * /dev/nvidiaN, nvidiactl, nvidia-modeset, nvidia-uvm, nvidia-uvm-tools, the nodes in nvidia-caps/, and any
 * other character device whose major /proc/devices names as nvidia's. Returns a malloc'ed array
 * (sorted: GPUs by minor, then the rest by path) and its length in *n; *n is 0 when none is found,
 * and *note then says why (malloc'ed, or NULL). Never fails otherwise. Test hook: when dev_root is
 * not "/dev", a node named nvidiaN counts as GPU N whatever its major:minor (mknod'ed stand-ins). */
struct target *devices_discover(const char *proc_root, const char *dev_root, size_t *n, char **note);

/* The number of GPUs the driver has probed: the folders of proc_root/driver/nvidia/gpus (one per
 * GPU, named by PCI bus id), or -1 when that folder cannot be read (no driver, or hidden). */
int devices_count_gpus(const char *proc_root);

/* Classifies a device node by its name and major:minor (pure): "gpu" (and *gpu_minor), "ctl",
 * "modeset", "uvm", "uvm-tools", "caps", "nvidia" (some other nvidia node), or NULL when not
 * NVIDIA's. majors: the nvidia majors from /proc/devices (may be empty). */
const char *devices_classify(const char *name, unsigned major, unsigned minor, const unsigned *majors,
			     size_t nmajors, int *gpu_minor);

#endif
