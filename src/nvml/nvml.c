/* nvml: the only file that knows NVML's ABI: loads libnvidia-ml with dlopen, reads each GPU and its processes into plain data. */
#include "nvml/nvml.h"
#include "util.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Our own declarations of the NVML types we use (no nvml.h is installed on most hosts).
 * nvmlReturn_t is an enum: an int on every ABI NVML ships for. */
typedef int nvml_ret;
typedef struct nvml_device_st *nvml_dev; /* nvmlDevice_t: an opaque pointer */

/* nvmlMemory_t (v1): note the order total, free, used. */
struct nvml_memory_v1 {
	unsigned long long total, free, used;
};

/* nvmlMemory_v2_t: adds a version word and the reserved amount. */
struct nvml_memory_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};
/* NVML_STRUCT_VERSION(Memory, 2): sizeof | version << 24; a bare 2 is refused. */
#define NVML_MEMORY_V2_VERSION ((unsigned)sizeof(struct nvml_memory_v2) | (2u << 24))
_Static_assert(sizeof(struct nvml_memory_v2) == 40, "nvmlMemory_v2_t is 40 bytes");

/* nvmlPciInfo_t. In every version the first 16 bytes are a bus id string (busId in v1, busIdLegacy
 * in v2/v3); _v3 adds busId[32] after five uints, which is the one with the full domain. */
struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};
/* Room for any nvmlPciInfo_t layout (the v1 one, with four reserved uints, is 56 bytes). */
union nvml_pci_buf {
	struct nvml_pci_info v3;
	unsigned char raw[128];
};

struct nvml_utilization {
	unsigned int gpu, memory;
};

/* Process-list entries: v1 {uint pid; u64 usedGpuMemory} is 16 bytes; v2 and v3 add
 * {uint gpuInstanceId, computeInstanceId} (24 bytes); drivers 535.43-535.86 wrote v3 entries of
 * 32 bytes (a trailing u64 usedGpuCcProtectedMemory). We never index a typed array: entries are
 * read at a measured stride (proc_detect_stride). */
#define PROC_OFF_PID 0
#define PROC_OFF_USED 8
#define PROC_OFF_GI 16
#define PROC_OFF_CI 20
#define PROC_MAX_STRIDE 32
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL
#define NVML_NO_INSTANCE 0xFFFFFFFFu /* gpuInstanceId/computeInstanceId when MIG is off */
#define SENTINEL 0xAA

/* nvmlMemoryErrorType_t / nvmlEccCounterType_t values for nvmlDeviceGetTotalEccErrors. */
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0

#define NVML_VERSION_BUFFER 80 /* NVML_SYSTEM_{DRIVER,NVML}_VERSION_BUFFER_SIZE */

typedef nvml_ret (*proc_fn)(nvml_dev, unsigned int *, void *);

/* The symbols we resolve. Required ones make the library unusable when absent; an absent optional
 * one leaves its field at FUNCTION_NOT_FOUND. */
struct api {
	void *dl;
	const char *init_name, *count_name, *handle_name;
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*get_count)(unsigned int *);
	nvml_ret (*get_handle)(unsigned int, nvml_dev *);
	/* optional */
	nvml_ret (*driver_version)(char *, unsigned int);
	nvml_ret (*nvml_version)(char *, unsigned int);
	nvml_ret (*minor)(nvml_dev, unsigned int *);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned int);
	nvml_ret (*name)(nvml_dev, char *, unsigned int);
	nvml_ret (*pci)(nvml_dev, void *);
	int pci_api;
	nvml_ret (*mem_v2)(nvml_dev, struct nvml_memory_v2 *);
	nvml_ret (*mem_v1)(nvml_dev, struct nvml_memory_v1 *);
	nvml_ret (*persistence)(nvml_dev, int *);
	nvml_ret (*compute_mode)(nvml_dev, int *);
	nvml_ret (*mig_mode)(nvml_dev, unsigned int *, unsigned int *);
	nvml_ret (*mig_count)(nvml_dev, unsigned int *);
	nvml_ret (*mig_handle)(nvml_dev, unsigned int, nvml_dev *);
	nvml_ret (*gi_id)(nvml_dev, unsigned int *);
	nvml_ret (*ci_id)(nvml_dev, unsigned int *);
	nvml_ret (*retired_pending)(nvml_dev, int *);
	nvml_ret (*remapped_rows)(nvml_dev, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
	nvml_ret (*ecc_total)(nvml_dev, int, int, unsigned long long *);
	nvml_ret (*utilization)(nvml_dev, struct nvml_utilization *);
	/* per list, newest first: [list][0] is _v3, [1] _v2, [2] the unversioned v1 */
	proc_fn procs[NVML_NLISTS][3];
};

static const char *const proc_fn_names[NVML_NLISTS][3] = {
	{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
	 "nvmlDeviceGetComputeRunningProcesses"},
	{"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
	 "nvmlDeviceGetGraphicsRunningProcesses"},
	{"nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
	 "nvmlDeviceGetMPSComputeRunningProcesses"},
};

/* dlsym into a typed function pointer; POSIX guarantees the object-to-function conversion works. */
#define SYM(dst, name) ((dst) = (__typeof__(dst))dlsym(a->dl, (name)))
/* Tries the newest name first; remembers which one answered. */
#define SYM2(dst, used, newer, older) \
	(SYM(dst, newer) ? ((used) = (newer), 1) : SYM(dst, older) ? ((used) = (older), 1) : 0)

const char *nvml_error_name(int code)
{
	switch (code) {
	case 0: return "SUCCESS";
	case 1: return "UNINITIALIZED";
	case 2: return "INVALID_ARGUMENT";
	case 3: return "NOT_SUPPORTED";
	case 4: return "NO_PERMISSION";
	case 5: return "ALREADY_INITIALIZED";
	case 6: return "NOT_FOUND";
	case 7: return "INSUFFICIENT_SIZE";
	case 8: return "INSUFFICIENT_POWER";
	case 9: return "DRIVER_NOT_LOADED";
	case 10: return "TIMEOUT";
	case 11: return "IRQ_ISSUE";
	case 12: return "LIBRARY_NOT_FOUND";
	case 13: return "FUNCTION_NOT_FOUND";
	case 14: return "CORRUPTED_INFOROM";
	case 15: return "GPU_IS_LOST";
	case 16: return "RESET_REQUIRED";
	case 17: return "OPERATING_SYSTEM";
	case 18: return "LIB_RM_VERSION_MISMATCH";
	case 19: return "IN_USE";
	case 20: return "MEMORY";
	case 21: return "NO_DATA";
	case 22: return "VGPU_ECC_NOT_SUPPORTED";
	case 23: return "INSUFFICIENT_RESOURCES";
	case 24: return "FREQ_NOT_SUPPORTED";
	case 25: return "ARGUMENT_VERSION_MISMATCH";
	case 26: return "DEPRECATED";
	case 27: return "NOT_READY";
	case 28: return "GPU_NOT_FOUND";
	case 29: return "INVALID_STATE";
	case 999: return "UNKNOWN";
	case NVML_E_NO_LIBRARY: return "NO_LIBRARY";
	case NVML_E_NOT_NVML: return "NOT_NVML";
	case NVML_E_BAD_LAYOUT: return "BAD_LAYOUT";
	case NVML_E_NOT_READ: return "NOT_READ";
	}
	return "UNKNOWN_CODE";
}

const char *nvml_compute_mode_name(int mode)
{
	switch (mode) {
	case NVML_COMPUTE_DEFAULT: return "default";
	case NVML_COMPUTE_EXCLUSIVE_THREAD: return "exclusive_thread";
	case NVML_COMPUTE_PROHIBITED: return "prohibited";
	case NVML_COMPUTE_EXCLUSIVE_PROCESS: return "exclusive_process";
	}
	return "unknown";
}

/* What a failure of nvmlInit (or of a whole GPU) most likely means, as the tail of a message. */
static const char *explain(int rc)
{
	switch (rc) {
	case NVML_E_DRIVER_NOT_LOADED: return "is the nvidia kernel module loaded?";
	case NVML_E_LIB_RM_VERSION_MISMATCH:
		return "libnvidia-ml and the loaded kernel module are different driver versions "
		       "(a driver upgrade without a reboot or module reload?)";
	case NVML_E_NO_PERMISSION: return "can this user open /dev/nvidiactl and /dev/nvidiaN?";
	case NVML_E_GPU_IS_LOST:
		return "the GPU fell off the bus or stopped responding; see dmesg for Xid errors";
	case NVML_E_RESET_REQUIRED: return "the driver says this GPU needs a reset before it can be used";
	case NVML_E_LIBRARY_NOT_FOUND: return "NVML could not load a library it depends on";
	case NVML_E_UNINITIALIZED: return "NVML was not initialised";
	case NVML_E_IN_USE: return "the GPU is busy with another operation";
	}
	return "NVML gave no further reason";
}

/* A one-line headline for a failed nvmlInit. */
static const char *init_headline(int rc)
{
	switch (rc) {
	case NVML_E_DRIVER_NOT_LOADED: return "NVIDIA driver not loaded";
	case NVML_E_LIB_RM_VERSION_MISMATCH: return "NVML library and NVIDIA driver versions differ";
	case NVML_E_NO_PERMISSION: return "no permission to use the NVIDIA driver";
	}
	return "NVML could not start";
}

/* Parses hex digits up to `stop` (or the end when stop is 0) at *s; advances past the stop. */
static bool hex_part(const char **s, char stop, unsigned *out, size_t maxdigits)
{
	size_t n = strspn(*s, "0123456789abcdefABCDEF");
	if (n == 0 || n > maxdigits || (*s)[n] != stop)
		return false;
	*out = (unsigned)strtoul(*s, NULL, 16);
	*s += n + (stop ? 1 : 0);
	return true;
}

bool nvml_normalize_bus_id(const char *in, char *out, size_t n)
{
	unsigned dom, bus, dev, fn;
	const char *s = in;
	/* NVML writes "00000000:65:00.0" (8-digit domain, uppercase hex); /proc/driver/nvidia and
	 * sysfs say "0000:65:00.0". One spelling makes them comparable. */
	if (!hex_part(&s, ':', &dom, 8) || !hex_part(&s, ':', &bus, 2) || !hex_part(&s, '.', &dev, 2) ||
	    !hex_part(&s, '\0', &fn, 1) || dev > 0x1f || fn > 7) {
		snprintf(out, n, "%s", in);
		return false;
	}
	snprintf(out, n, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

/* Copies an NVML string out of a fixed buffer that NVML may not have terminated. */
static void copy_str(char *dst, size_t n, const char *src, size_t srcn)
{
	size_t len = strnlen(src, srcn);
	if (len >= n)
		len = n - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Resolves every symbol. Returns the name of a missing required one, or NULL when all are there. */
static const char *api_resolve(struct api *a)
{
	if (!SYM2(a->init, a->init_name, "nvmlInit_v2", "nvmlInit"))
		return "nvmlInit_v2";
	if (!SYM(a->shutdown, "nvmlShutdown"))
		return "nvmlShutdown";
	if (!SYM2(a->get_count, a->count_name, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"))
		return "nvmlDeviceGetCount_v2";
	if (!SYM2(a->get_handle, a->handle_name, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"))
		return "nvmlDeviceGetHandleByIndex_v2";

	SYM(a->driver_version, "nvmlSystemGetDriverVersion");
	SYM(a->nvml_version, "nvmlSystemGetNVMLVersion");
	SYM(a->minor, "nvmlDeviceGetMinorNumber");
	SYM(a->uuid, "nvmlDeviceGetUUID");
	SYM(a->name, "nvmlDeviceGetName");
	if (SYM(a->pci, "nvmlDeviceGetPciInfo_v3"))
		a->pci_api = 3;
	else if (SYM(a->pci, "nvmlDeviceGetPciInfo_v2"))
		a->pci_api = 2;
	else if (SYM(a->pci, "nvmlDeviceGetPciInfo"))
		a->pci_api = 1;
	SYM(a->mem_v2, "nvmlDeviceGetMemoryInfo_v2");
	SYM(a->mem_v1, "nvmlDeviceGetMemoryInfo");
	SYM(a->persistence, "nvmlDeviceGetPersistenceMode");
	SYM(a->compute_mode, "nvmlDeviceGetComputeMode");
	SYM(a->mig_mode, "nvmlDeviceGetMigMode");
	SYM(a->mig_count, "nvmlDeviceGetMaxMigDeviceCount");
	SYM(a->mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
	SYM(a->gi_id, "nvmlDeviceGetGpuInstanceId");
	SYM(a->ci_id, "nvmlDeviceGetComputeInstanceId");
	SYM(a->retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
	SYM(a->remapped_rows, "nvmlDeviceGetRemappedRows");
	SYM(a->ecc_total, "nvmlDeviceGetTotalEccErrors");
	SYM(a->utilization, "nvmlDeviceGetUtilizationRates");
	for (int l = 0; l < NVML_NLISTS; l++)
		for (int v = 0; v < 3; v++)
			SYM(a->procs[l][v], proc_fn_names[l][v]);
	return NULL;
}

/* Finds the stride of n entries NVML wrote into buf (cap entries of PROC_MAX_STRIDE bytes, filled
 * with SENTINEL beforehand), trying the nominal size first. A stride fits when every entry's pid
 * and usedGpuMemory are written (a pid's top byte is 0, never the sentinel: pid_max <= 2^22)
 * and nothing past the n-th entry was touched. Drivers 535.43-535.86 wrote 32-byte entries for
 * _v3, so the version alone cannot be trusted. Returns 0 when no stride fits. */
static unsigned proc_detect_stride(const unsigned char *buf, size_t n, size_t cap, unsigned nominal)
{
	size_t bytes = cap * PROC_MAX_STRIDE;
	for (unsigned s = nominal; s <= PROC_MAX_STRIDE; s += 8) {
		bool fits = n * s <= bytes;
		for (size_t i = 0; fits && i < n; i++) {
			uint32_t pid;
			uint64_t used;
			memcpy(&pid, buf + i * s + PROC_OFF_PID, sizeof pid);
			memcpy(&used, buf + i * s + PROC_OFF_USED, sizeof used);
			fits = (pid >> 24) == 0 && used != 0xAAAAAAAAAAAAAAAAULL;
		}
		for (size_t b = n * s; fits && b < bytes; b++)
			fits = buf[b] == SENTINEL;
		if (fits)
			return s;
	}
	return 0;
}

/* Entries read from one list, before merging. */
struct raw_list {
	struct nvml_proc *p;
	size_t n;
};

/* Reads one process list with fn (an entry `version`, 1-3): asks for the count with an empty buffer
 * (NVML answers INSUFFICIENT_SIZE and the number needed), then fills a buffer with headroom; when
 * processes appeared in between and it is still too small, asks again, a few times. Returns the
 * NVML code; on success *out holds the entries and *stride the measured entry size (0 if none). */
static int proc_read(proc_fn fn, unsigned version, nvml_dev dev, unsigned list_bit, struct raw_list *out,
		     unsigned *stride)
{
	unsigned int count = 0;
	int rc = fn(dev, &count, NULL);
	*stride = 0;
	out->p = NULL;
	out->n = 0;
	if (rc == NVML_OK)
		return NVML_OK; /* no processes */
	if (rc != NVML_E_INSUFFICIENT_SIZE)
		return rc;
	for (int tries = 0; tries < 5; tries++) {
		size_t cap = (size_t)count + count / 2 + 8;
		unsigned char *buf = xmalloc(cap * PROC_MAX_STRIDE);
		memset(buf, SENTINEL, cap * PROC_MAX_STRIDE);
		unsigned int n = (unsigned int)cap;
		rc = fn(dev, &n, buf);
		if (rc == NVML_E_INSUFFICIENT_SIZE) {
			count = n > cap ? n : (unsigned)(cap * 2); /* it grew: ask for more next time */
			free(buf);
			continue;
		}
		if (rc != NVML_OK) {
			free(buf);
			return rc;
		}
		if (n > cap) {
			free(buf);
			return NVML_E_BAD_LAYOUT;
		}
		unsigned s = proc_detect_stride(buf, n, cap, version == 1 ? 16 : 24);
		if (!s) {
			free(buf);
			return NVML_E_BAD_LAYOUT;
		}
		out->p = n ? xcalloc(n, sizeof *out->p) : NULL;
		out->n = n;
		for (size_t i = 0; i < n; i++) {
			const unsigned char *e = buf + i * s;
			struct nvml_proc *p = &out->p[i];
			uint32_t pid, gi = NVML_NO_INSTANCE, ci = NVML_NO_INSTANCE;
			uint64_t used;
			memcpy(&pid, e + PROC_OFF_PID, sizeof pid);
			memcpy(&used, e + PROC_OFF_USED, sizeof used);
			if (version >= 2) {
				memcpy(&gi, e + PROC_OFF_GI, sizeof gi);
				memcpy(&ci, e + PROC_OFF_CI, sizeof ci);
			}
			p->pid = pid;
			p->used_known = used != NVML_VALUE_NOT_AVAILABLE;
			p->used_bytes = p->used_known ? used : 0;
			p->lists = list_bit;
			p->instance_known = gi != NVML_NO_INSTANCE;
			p->gi = p->instance_known ? gi : 0;
			p->ci = p->instance_known ? ci : 0;
		}
		*stride = n ? s : 0;
		free(buf);
		return NVML_OK;
	}
	return NVML_E_INSUFFICIENT_SIZE; /* the list kept growing faster than we could ask */
}

/* Adds one list's entries to the GPU's merged list: a pid in several lists (compute and graphics
 * contexts of one process) is one entry with both bits and the larger amount; the same pid twice in
 * one list (contexts on two MIG instances) adds up. */
static void proc_merge(struct nvml_gpu *g, size_t *cap, const struct raw_list *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct nvml_proc *p = &r->p[i];
		struct nvml_proc *q = NULL;
		for (size_t j = 0; j < g->nprocs && !q; j++)
			if (g->procs[j].pid == p->pid)
				q = &g->procs[j];
		if (!q) {
			xgrow(&g->procs, cap, g->nprocs + 1, sizeof *g->procs);
			g->procs[g->nprocs++] = *p;
			continue;
		}
		bool same_list = q->lists & p->lists;
		q->lists |= p->lists;
		if (!p->used_known)
			continue;
		if (!q->used_known)
			q->used_bytes = p->used_bytes;
		else if (same_list)
			q->used_bytes += p->used_bytes;
		else if (p->used_bytes > q->used_bytes)
			q->used_bytes = p->used_bytes;
		q->used_known = true;
	}
}

/* Records a GPU-wide failure once; returns true when the GPU is lost and reading should stop. */
static bool gpu_failed(struct nvml_gpu *g, const char *call, int rc)
{
	if (rc != NVML_E_GPU_IS_LOST)
		return false;
	if (!g->error)
		g->error = xasprintf("GPU %u: %s failed with %s (%d): %s", g->index, call, nvml_error_name(rc), rc,
				     explain(rc));
	return true;
}

/* Reads the three process lists of one GPU, each with the newest function version the library has,
 * falling back to an older one when a newer answers FUNCTION_NOT_FOUND or writes entries in a
 * layout we do not recognise (a future driver's, say). */
static void gpu_read_procs(const struct api *a, nvml_dev dev, struct nvml_gpu *g, struct nvml_info *info)
{
	size_t cap = 0;
	for (int l = 0; l < NVML_NLISTS; l++) {
		int rc = NVML_E_FUNCTION_NOT_FOUND;
		bool bad_layout = false;
		for (int v = 0; v < 3 && (rc == NVML_E_FUNCTION_NOT_FOUND || rc == NVML_E_BAD_LAYOUT); v++) {
			if (!a->procs[l][v])
				continue;
			struct raw_list r;
			unsigned stride;
			rc = proc_read(a->procs[l][v], 3 - (unsigned)v, dev, 1u << l, &r, &stride);
			if (rc == NVML_OK) {
				g->list_api[l] = 3 - (unsigned)v;
				proc_merge(g, &cap, &r);
				if (stride && !info->proc_stride)
					info->proc_stride = stride;
			}
			free(r.p);
			bad_layout |= rc == NVML_E_BAD_LAYOUT;
			if (gpu_failed(g, proc_fn_names[l][v], rc))
				break;
		}
		/* an unreadable answer says more than the older versions' absence */
		g->list_rc[l] = rc == NVML_E_FUNCTION_NOT_FOUND && bad_layout ? NVML_E_BAD_LAYOUT : rc;
		if (g->error)
			break;
	}
}

/* The MIG devices of a GPU in MIG mode (the slots that answer; an empty slot is not an error), for
 * the MIG-UUID and GPU:GI:CI selectors. Any function missing: none, the GPU is still selectable. */
static void read_migs(const struct api *a, nvml_dev dev, struct nvml_gpu *g)
{
	unsigned int max = 0;
	if (!a->mig_count || !a->mig_handle || !a->uuid || a->mig_count(dev, &max) != NVML_OK || max > 64)
		return;
	for (unsigned int i = 0; i < max; i++) {
		nvml_dev m = NULL;
		char buf[96] = "";
		unsigned int gi = 0, ci = 0;
		if (a->mig_handle(dev, i, &m) != NVML_OK || !m || a->uuid(m, buf, sizeof buf) != NVML_OK)
			continue;
		if (a->gi_id && a->gi_id(m, &gi) != NVML_OK)
			continue;
		if (a->ci_id && a->ci_id(m, &ci) != NVML_OK)
			continue;
		g->migs = xrealloc(g->migs, (g->nmigs + 1) * sizeof *g->migs);
		struct nvml_mig *x = &g->migs[g->nmigs++];
		copy_str(x->uuid, sizeof x->uuid, buf, sizeof buf);
		x->gi = gi;
		x->ci = ci;
	}
}

/* Reads every field of one GPU; a GPU_IS_LOST answer stops at that point (the rest stays NOT_READ). */
static void gpu_read(const struct api *a, unsigned index, struct nvml_gpu *g, struct nvml_info *info)
{
	nvml_dev dev = NULL;
	g->index = index;
	g->minor = -1;
	g->minor_rc = g->uuid_rc = g->name_rc = g->bus_id_rc = g->mem_rc = g->mem_reserved_rc = NVML_E_NOT_READ;
	g->persistence_rc = g->compute_mode_rc = g->mig_rc = g->retired_rc = g->remap_rc = NVML_E_NOT_READ;
	g->ecc_rc = g->util_rc = NVML_E_NOT_READ;
	for (int l = 0; l < NVML_NLISTS; l++)
		g->list_rc[l] = NVML_E_NOT_READ;

	g->handle_rc = a->get_handle(index, &dev);
	if (g->handle_rc != NVML_OK) {
		g->error = xasprintf("GPU %u: %s failed with %s (%d): %s", index, a->handle_name,
				     nvml_error_name(g->handle_rc), g->handle_rc, explain(g->handle_rc));
		return;
	}
/* Calls an optional function when the library has it; FUNCTION_NOT_FOUND when it does not.
 * Stops reading this GPU when the answer is GPU_IS_LOST. */
#define CALL(field, fn, name, ...)                                              \
	do {                                                                    \
		g->field = a->fn ? a->fn(dev, __VA_ARGS__) : NVML_E_FUNCTION_NOT_FOUND; \
		if (gpu_failed(g, name, g->field))                              \
			return;                                                 \
	} while (0)

	unsigned int minor = 0;
	CALL(minor_rc, minor, "nvmlDeviceGetMinorNumber", &minor);
	if (g->minor_rc == NVML_OK)
		g->minor = (int)minor;

	char buf[96];
	memset(buf, 0, sizeof buf);
	CALL(uuid_rc, uuid, "nvmlDeviceGetUUID", buf, sizeof buf);
	if (g->uuid_rc == NVML_OK)
		copy_str(g->uuid, sizeof g->uuid, buf, sizeof buf);
	memset(buf, 0, sizeof buf);
	CALL(name_rc, name, "nvmlDeviceGetName", buf, sizeof buf);
	if (g->name_rc == NVML_OK)
		copy_str(g->name, sizeof g->name, buf, sizeof buf);

	union nvml_pci_buf pci;
	memset(&pci, 0, sizeof pci);
	CALL(bus_id_rc, pci, "nvmlDeviceGetPciInfo", &pci);
	if (g->bus_id_rc == NVML_OK) {
		char raw[33];
		/* _v3's busId has the full domain; older layouts start with a 16-byte bus id. */
		if (a->pci_api == 3)
			copy_str(raw, sizeof raw, pci.v3.bus_id, sizeof pci.v3.bus_id);
		else
			copy_str(raw, sizeof raw, (const char *)pci.raw, 16);
		nvml_normalize_bus_id(raw, g->bus_id, sizeof g->bus_id);
	}

	/* nvmlDeviceGetMemoryInfo_v2 adds `reserved`; it needs the version word, and on any answer but
	 * success (an older driver, a version it refuses) v1 still gives total/used/free. */
	struct nvml_memory_v2 m2 = {.version = NVML_MEMORY_V2_VERSION};
	CALL(mem_rc, mem_v2, "nvmlDeviceGetMemoryInfo_v2", &m2);
	if (g->mem_rc == NVML_OK) {
		g->mem_api = 2;
		g->mem_total = m2.total;
		g->mem_reserved = m2.reserved;
		g->mem_used = m2.used;
		g->mem_free = m2.free;
		g->mem_reserved_rc = NVML_OK;
	} else {
		g->mem_reserved_rc = g->mem_rc;
		struct nvml_memory_v1 m1 = {0};
		CALL(mem_rc, mem_v1, "nvmlDeviceGetMemoryInfo", &m1);
		if (g->mem_rc == NVML_OK) {
			g->mem_api = 1;
			g->mem_total = m1.total;
			g->mem_used = m1.used;
			g->mem_free = m1.free;
		}
	}

	int state = 0;
	CALL(persistence_rc, persistence, "nvmlDeviceGetPersistenceMode", &state);
	g->persistence = g->persistence_rc == NVML_OK && state == 1;
	int mode = 0;
	CALL(compute_mode_rc, compute_mode, "nvmlDeviceGetComputeMode", &mode);
	g->compute_mode = g->compute_mode_rc == NVML_OK ? mode : 0;
	unsigned int cur = 0, pend = 0;
	CALL(mig_rc, mig_mode, "nvmlDeviceGetMigMode", &cur, &pend);
	g->mig_current = g->mig_rc == NVML_OK && cur == 1;
	g->mig_pending = g->mig_rc == NVML_OK && pend == 1;
	if (g->mig_current)
		read_migs(a, dev, g);
	state = 0;
	CALL(retired_rc, retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus", &state);
	g->retired_pending = g->retired_rc == NVML_OK && state == 1;
	unsigned int corr = 0, unc = 0, pending = 0, failure = 0;
	CALL(remap_rc, remapped_rows, "nvmlDeviceGetRemappedRows", &corr, &unc, &pending, &failure);
	if (g->remap_rc == NVML_OK) {
		g->remap_correctable = corr;
		g->remap_uncorrectable = unc;
		g->remap_pending = pending != 0;
		g->remap_failure = failure != 0;
	}
	unsigned long long ecc = 0;
	CALL(ecc_rc, ecc_total, "nvmlDeviceGetTotalEccErrors", NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
	     NVML_VOLATILE_ECC, &ecc);
	g->ecc_uncorrected_volatile = g->ecc_rc == NVML_OK ? ecc : 0;
	struct nvml_utilization u = {0};
	CALL(util_rc, utilization, "nvmlDeviceGetUtilizationRates", &u);
	if (g->util_rc == NVML_OK) {
		g->util_gpu = u.gpu;
		g->util_mem = u.memory;
	}
#undef CALL
	gpu_read_procs(a, dev, g, info);
}

/* Fills info->error and info->rc; returns -1 for nvml_collect. */
static int fail(struct nvml_info *info, int rc, char *msg)
{
	info->rc = rc;
	info->error = msg;
	return -1;
}

int nvml_collect(const char *lib_path, struct nvml_info *out)
{
	memset(out, 0, sizeof *out);
	if (!lib_path || !*lib_path)
		lib_path = getenv("GPUWHO_NVML");
	if (!lib_path || !*lib_path)
		lib_path = "libnvidia-ml.so.1";
	out->lib_path = xstrdup(lib_path);

	struct api a = {0};
	/* RTLD_LOCAL: NVML's symbols stay out of the global namespace; RTLD_NOW: a broken library fails
	 * here rather than at a later call. */
	a.dl = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!a.dl) {
		const char *why = dlerror();
		return fail(out, NVML_E_NO_LIBRARY,
			    xasprintf("NVML library not found: dlopen(%s) failed: %s; is the NVIDIA driver installed "
				      "(in a container: is it started with the NVIDIA container runtime)?",
				      lib_path, why ? why : "unknown error"));
	}
	const char *missing = api_resolve(&a);
	if (missing) {
		dlclose(a.dl);
		return fail(out, NVML_E_NOT_NVML,
			    xasprintf("%s is not a usable NVML library: it has no %s", lib_path, missing));
	}
	Dl_info dli;
	if (dladdr((void *)a.init, &dli) && dli.dli_fname && *dli.dli_fname) {
		free(out->lib_path);
		out->lib_path = xstrdup(dli.dli_fname);
	}

	int rc = a.init();
	if (rc != NVML_OK) {
		/* nvmlShutdown is only for a successful init. */
		dlclose(a.dl);
		return fail(out, rc,
			    xasprintf("%s: %s failed with %s (%d); %s", init_headline(rc), a.init_name,
				      nvml_error_name(rc), rc, explain(rc)));
	}
	out->loaded = true;
	for (int v = 0; v < 3 && !out->proc_api; v++)
		if (a.procs[0][v])
			out->proc_api = 3 - (unsigned)v;

	char buf[NVML_VERSION_BUFFER];
	memset(buf, 0, sizeof buf);
	if (a.driver_version && a.driver_version(buf, sizeof buf) == NVML_OK)
		copy_str(out->driver_version, sizeof out->driver_version, buf, sizeof buf);
	memset(buf, 0, sizeof buf);
	if (a.nvml_version && a.nvml_version(buf, sizeof buf) == NVML_OK)
		copy_str(out->nvml_version, sizeof out->nvml_version, buf, sizeof buf);

	unsigned int count = 0;
	int ret = 0;
	rc = a.get_count(&count);
	if (rc != NVML_OK) {
		ret = fail(out, rc,
			   xasprintf("NVML cannot count GPUs: %s failed with %s (%d); %s", a.count_name,
				     nvml_error_name(rc), rc, explain(rc)));
	} else if (count) {
		out->gpus = xcalloc(count, sizeof *out->gpus);
		out->ngpus = count;
		for (unsigned i = 0; i < count; i++)
			gpu_read(&a, i, &out->gpus[i], out);
	}
	a.shutdown();
	dlclose(a.dl);
	return ret;
}

void nvml_info_free(struct nvml_info *info)
{
	if (!info)
		return;
	for (size_t i = 0; i < info->ngpus; i++) {
		free(info->gpus[i].procs);
		free(info->gpus[i].migs);
		free(info->gpus[i].error);
	}
	free(info->gpus);
	free(info->error);
	free(info->lib_path);
	memset(info, 0, sizeof *info);
}
