/* nvml: what NVML says about each GPU and the processes on it, as plain data (no NVML types). */
/* Layer nvml/ (collect): the only code that knows NVML's ABI (dlopen, symbol versions, struct
 * strides); nothing else declares NVML types. May include util, escape, json; never proc/, sys/
 * or anything above. */
#ifndef GPUWHO_NVML_H
#define GPUWHO_NVML_H

#include <stdbool.h>
#include <stddef.h>

/* NVML return codes gpuwho looks at (the values are NVML's nvmlReturn_t). Each field of a GPU
 * carries one: 0 means the value is valid; NOT_SUPPORTED is normal on many GPUs (shown as n/a);
 * FUNCTION_NOT_FOUND also stands for "this libnvidia-ml does not export the function". */
enum {
	NVML_OK = 0,
	NVML_E_UNINITIALIZED = 1,
	NVML_E_INVALID_ARGUMENT = 2,
	NVML_E_NOT_SUPPORTED = 3,
	NVML_E_NO_PERMISSION = 4,
	NVML_E_NOT_FOUND = 6,
	NVML_E_INSUFFICIENT_SIZE = 7,
	NVML_E_DRIVER_NOT_LOADED = 9,
	NVML_E_LIBRARY_NOT_FOUND = 12,
	NVML_E_FUNCTION_NOT_FOUND = 13,
	NVML_E_GPU_IS_LOST = 15,
	NVML_E_RESET_REQUIRED = 16,
	NVML_E_LIB_RM_VERSION_MISMATCH = 18,
	NVML_E_IN_USE = 19,
	NVML_E_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_E_UNKNOWN = 999,
	/* gpuwho's own, never returned by NVML: */
	NVML_E_NO_LIBRARY = -1,  /* dlopen failed */
	NVML_E_NOT_NVML = -2,    /* the library lacks a required symbol */
	NVML_E_BAD_LAYOUT = -3,  /* process entries in no layout we recognise */
	NVML_E_NOT_READ = -4,    /* not asked: the GPU was lost or its handle failed first */
};

/* Which process lists named a process (bits of nvml_proc.lists). */
enum {
	NVML_LIST_COMPUTE = 1,   /* nvmlDeviceGetComputeRunningProcesses */
	NVML_LIST_GRAPHICS = 2,  /* nvmlDeviceGetGraphicsRunningProcesses */
	NVML_LIST_MPS = 4,       /* nvmlDeviceGetMPSComputeRunningProcesses */
};
#define NVML_NLISTS 3

/* NVML's compute modes (nvmlComputeMode_t). */
enum {
	NVML_COMPUTE_DEFAULT = 0,
	NVML_COMPUTE_EXCLUSIVE_THREAD = 1,
	NVML_COMPUTE_PROHIBITED = 2,
	NVML_COMPUTE_EXCLUSIVE_PROCESS = 3,
};

/* A process NVML lists on a GPU. The pid is a host pid, even when gpuwho runs in a container. */
struct nvml_proc {
	unsigned pid;
	unsigned long long used_bytes; /* meaningful only when used_known */
	bool used_known;               /* false: NVML said NVML_VALUE_NOT_AVAILABLE ("unknown", never 0) */
	unsigned lists;                /* NVML_LIST_* bits */
	bool instance_known;           /* gi/ci below are MIG instance ids (v2+ entries, MIG enabled) */
	unsigned gi, ci;
};

/* A MIG device of a GPU in MIG mode: what nvidia-smi -L lists under it and CUDA_VISIBLE_DEVICES takes. */
struct nvml_mig {
	char uuid[96];                 /* "MIG-..." */
	unsigned gi, ci;               /* its GPU instance and compute instance ids */
};

/* One GPU. Each *_rc is 0 when the fields it covers are valid, else the NVML code why not. */
struct nvml_gpu {
	unsigned index;                /* NVML's index (nvmlDeviceGetHandleByIndex) */
	int handle_rc;                 /* the handle itself; when not 0 nothing else was read */
	int minor, minor_rc;           /* /dev/nvidiaN's N */
	char uuid[96];  int uuid_rc;
	char name[96];  int name_rc;
	char bus_id[32]; int bus_id_rc; /* normalised: 0000:65:00.0, lowercase */
	unsigned long long mem_total, mem_reserved, mem_used, mem_free;
	int mem_rc;                    /* total/used/free */
	int mem_reserved_rc;           /* reserved: only nvmlDeviceGetMemoryInfo_v2 reports it */
	int mem_api;                   /* 2 or 1: which nvmlDeviceGetMemoryInfo answered; 0 none */
	bool persistence;    int persistence_rc;
	int compute_mode;    int compute_mode_rc;   /* NVML_COMPUTE_* */
	bool mig_current, mig_pending; int mig_rc;
	struct nvml_mig *migs;         /* with mig_current: its MIG devices (NULL when none or unread) */
	size_t nmigs;
	bool retired_pending; int retired_rc;       /* retired pages waiting for a reset/reload */
	bool remap_pending, remap_failure;          /* row remapping waiting for a reset; a remap failed */
	unsigned remap_correctable, remap_uncorrectable;
	int remap_rc;
	unsigned long long ecc_uncorrected_volatile; int ecc_rc;
	unsigned util_gpu, util_mem; int util_rc;   /* percent */
	struct nvml_proc *procs;       /* one per pid, merged across the lists */
	size_t nprocs;
	int list_rc[NVML_NLISTS];      /* per list (compute, graphics, mps) */
	unsigned list_api[NVML_NLISTS]; /* which function version (3, 2, 1) answered each list; 0 none */
	char *error;                   /* one line when the GPU as a whole failed (lost, no handle), else NULL */
};

struct nvml_info {
	bool loaded;                   /* nvmlInit succeeded: NVML answered */
	int rc;                        /* 0, or the code of the failure that `error` explains */
	char *error;                   /* one human line when NVML could not answer (or could not count GPUs) */
	char *lib_path;                /* the library as loaded (or as asked for, when it could not be) */
	char driver_version[80];       /* "" when unknown */
	char nvml_version[80];
	struct nvml_gpu *gpus;
	size_t ngpus;
	unsigned proc_api;             /* 3, 2 or 1: newest process-list version the library exports; 0 none */
	unsigned proc_stride;          /* bytes per process entry, as measured; 0 when no entry was seen */
};

/* Loads NVML from lib_path (NULL: $GPUWHO_NVML, else libnvidia-ml.so.1), reads every GPU and its
 * processes, shuts NVML down and unloads it. Always fills *out (free with nvml_info_free).
 * Returns 0 when NVML answered (per-GPU failures are in each GPU's error/rc fields), -1 when it
 * could not (out->error says why in one line, out->rc gives the code). */
int nvml_collect(const char *lib_path, struct nvml_info *out);

/* Frees what nvml_collect allocated and zeroes *info; accepts NULL. */
void nvml_info_free(struct nvml_info *info);

/* NVML's name for a return code without its NVML_ERROR_ prefix ("DRIVER_NOT_LOADED"), gpuwho's
 * names for its own negative codes, "UNKNOWN_CODE" for anything else. Static storage. */
const char *nvml_error_name(int code);

/* "default", "exclusive_thread", "prohibited", "exclusive_process", or "unknown". */
const char *nvml_compute_mode_name(int mode);

/* Rewrites a PCI bus id as 0000:65:00.0 (lowercase, at least 4 domain digits, 2-digit bus and
 * device) into out (size n). Returns false, leaving out as the input copied, when it does not parse. */
bool nvml_normalize_bus_id(const char *in, char *out, size_t n);

#endif
