/* fake_nvml: a stand-in libnvidia-ml for tests, exporting real NVML symbol names with the real ABI, driven by a scenario file. */
/*
 * Built as build/tests/fake_nvml.so (never installed). gpuwho loads it like the real library
 * (`--nvml PATH`, $GPUWHO_NVML, or nvml_collect(PATH)). nvmlInit reads the scenario named by
 * $FAKE_NVML_SCENARIO (unset: a driver with no GPUs). A bad line makes nvmlInit print why to stderr
 * and return UNKNOWN (999), so a broken test scenario is loud.
 *
 * Scenario: one statement a line; '#' starts a comment; values are KEY=VALUE, a value may be
 * "double quoted" to hold spaces. Codes are NVML return codes (9 DRIVER_NOT_LOADED, 15 GPU_IS_LOST...).
 *
 *   driver 580.159.04              nvmlSystemGetDriverVersion (default 999.99.99)
 *   nvml 12.580.159.04             nvmlSystemGetNVMLVersion (default 12.999.99)
 *   init_error CODE                nvmlInit and nvmlInit_v2 return CODE
 *   gpu INDEX [KEY=VALUE...]       a GPU; indexes must run 0, 1, 2... Keys (defaults in brackets):
 *       minor=N [INDEX]  uuid=S [GPU-00000000-0000-0000-0000-00000000000INDEX]  name=S [NVIDIA Fake GPU]
 *       bus=DDDDDDDD:BB:DD.F [00000000:INDEX+1:00.0]  total_mib=N [81920]  used_mib=N [0]
 *       reserved_mib=N [0]  persistence=0|1 [1]  compute_mode=N [0]  mig=0|1 [0]  mig_pending=0|1 [0]
 *       retired_pending=0|1 [0]  remap_pending=0|1 [0]  remap_failure=0|1 [0]  remap_corr=N [0]
 *       remap_unc=N [0]  ecc=N (volatile uncorrected) [0]  util_gpu=N [0]  util_mem=N [0]
 *   gpu_error INDEX CODE           nvmlDeviceGetHandleByIndex{,_v2} fail with CODE for that GPU
 *   fail FUNCTION CODE [gpu=N]     the exported FUNCTION returns CODE (on GPU N only, when given)
 *   missing FUNCTION               same as `fail FUNCTION 13` (FUNCTION_NOT_FOUND). To have a symbol
 *                                  truly absent, load fake_nvml_old.so (built from this file with
 *                                  FAKE_NVML_OLD: only the unversioned v1 symbols, no MIG, no remapping)
 *   proc_api v1|v2|v3              the process functions newer than this answer FUNCTION_NOT_FOUND
 *                                  (shorthand for `missing` on each of them)
 *   mig_device gpu=N uuid=MIG-... gi=N ci=N
 *                                  a MIG device of GPU N (give that GPU mig=1): what
 *                                  nvmlDeviceGetMigDeviceHandleByIndex returns, in line order
 *   proc gpu=N pid=P mib=M|unknown [list=compute|graphics|mps] [gi=N ci=N] [held_by=H]
 *                                  a process; `unknown` is NVML_VALUE_NOT_AVAILABLE; list defaults
 *                                  to compute; gi/ci default to 0xFFFFFFFF (no MIG); held_by: for
 *                                  live_only, the entry lives as long as process H does, as the
 *                                  driver keeps listing an exited creator while an heir holds its
 *                                  memory (seen on an H200, driver 580)
 *   stride 32|40                   _v3 process functions write 32-byte entries (drivers 535.43-535.86),
 *                                  or 40-byte ones (a layout no driver has used: an unknown future one)
 *   grow_between_calls N [TIMES]   each time a process list answers INSUFFICIENT_SIZE, N more
 *                                  processes (pid 40000+) join it, at most TIMES times [1]
 *   init_delay_ms N                nvmlInit sleeps N ms first: a slow driver, for gpuwho serve's tests
 *                                  of a scrape that arrives while a collection runs
 *   live_only                      memory follows the processes' lives, as the driver's does: at
 *                                  nvmlInit, a `proc` (of any line, before or after) whose pid has
 *                                  no live thread in /proc (gone, or a zombie whose threads all
 *                                  exited) is dropped and its memory subtracted from its GPU's used
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The NVML ABI, declared here as gpuwho declares it: independently of nvml.h. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlEnableState_t;
typedef int nvmlComputeMode_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;
typedef struct { /* the v1 layout of nvmlDeviceGetPciInfo */
	char busId[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId, reserved[4];
} nvmlPciInfo_v1_t;
typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

#define EXPORT __attribute__((visibility("default")))
#define MIB (1024ULL * 1024ULL)
#define NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL
#define MAX_GPUS 8
#define MAX_PROCS 1024
#define MAX_FAILS 32
#define NLISTS 3

struct fproc {
	unsigned pid, gi, ci;
	unsigned long long used;
	unsigned held_by;   /* live_only: alive while this PID is (0: while pid is) */
};

struct fgpu {
	int handle_error;
	unsigned minor, dom, bus, dev, fn;
	char uuid[96], name[96];
	unsigned long long total, used, reserved, ecc;
	int persistence, compute_mode, mig, mig_pending, retired, remap_pending, remap_failure;
	unsigned remap_corr, remap_unc, util_gpu, util_mem;
	struct fproc procs[NLISTS][MAX_PROCS];
	unsigned nprocs[NLISTS], grown[NLISTS];
};

struct fmig {
	unsigned gpu, gi, ci;
	char uuid[96];
};

struct ffail {
	char fn[80];
	int code, gpu; /* gpu -1: every GPU */
};

static struct {
	bool init;
	char driver[80], nvml[80];
	int init_error;
	bool live_only;
	unsigned init_delay_ms;
	unsigned ngpus, nfails, stride, grow, grow_times;
	struct fgpu gpus[MAX_GPUS];
	struct ffail fails[MAX_FAILS];
	struct fmig migs[16];
	unsigned nmigs;
} S;

/* ---- scenario ------------------------------------------------------------------------------ */

/* Splits line into tokens in place (a "quoted" stretch may hold spaces; quotes are removed). */
static int tokenize(char *line, char **tok, int max)
{
	int n = 0;
	char *r = line, *w;
	while (n < max) {
		while (*r == ' ' || *r == '\t')
			r++;
		if (!*r || *r == '#' || *r == '\n')
			break;
		tok[n++] = w = r;
		bool q = false;
		while (*r && (q || (*r != ' ' && *r != '\t' && *r != '\n'))) {
			if (*r == '"')
				q = !q;
			else
				*w++ = *r;
			r++;
		}
		if (*r)
			r++;
		*w = '\0';
	}
	return n;
}

static bool num(const char *s, unsigned long long *out)
{
	char *end;
	if (!*s)
		return false;
	*out = strtoull(s, &end, 0);
	return *end == '\0';
}

/* Applies one KEY=VALUE of a `gpu` line. */
static bool gpu_key(struct fgpu *g, const char *k, const char *v)
{
	unsigned long long n = 0;
	if (!strcmp(k, "uuid"))
		snprintf(g->uuid, sizeof g->uuid, "%s", v);
	else if (!strcmp(k, "name"))
		snprintf(g->name, sizeof g->name, "%s", v);
	else if (!strcmp(k, "bus"))
		return sscanf(v, "%x:%x:%x.%x", &g->dom, &g->bus, &g->dev, &g->fn) == 4;
	else if (!num(v, &n))
		return false;
	else if (!strcmp(k, "minor")) g->minor = (unsigned)n;
	else if (!strcmp(k, "total_mib")) g->total = n * MIB;
	else if (!strcmp(k, "used_mib")) g->used = n * MIB;
	else if (!strcmp(k, "reserved_mib")) g->reserved = n * MIB;
	else if (!strcmp(k, "persistence")) g->persistence = (int)n;
	else if (!strcmp(k, "compute_mode")) g->compute_mode = (int)n;
	else if (!strcmp(k, "mig")) g->mig = (int)n;
	else if (!strcmp(k, "mig_pending")) g->mig_pending = (int)n;
	else if (!strcmp(k, "retired_pending")) g->retired = (int)n;
	else if (!strcmp(k, "remap_pending")) g->remap_pending = (int)n;
	else if (!strcmp(k, "remap_failure")) g->remap_failure = (int)n;
	else if (!strcmp(k, "remap_corr")) g->remap_corr = (unsigned)n;
	else if (!strcmp(k, "remap_unc")) g->remap_unc = (unsigned)n;
	else if (!strcmp(k, "ecc")) g->ecc = n;
	else if (!strcmp(k, "util_gpu")) g->util_gpu = (unsigned)n;
	else if (!strcmp(k, "util_mem")) g->util_mem = (unsigned)n;
	else return false;
	return true;
}

static bool add_proc(struct fgpu *g, int list, unsigned pid, unsigned long long used, unsigned gi, unsigned ci,
		     unsigned held_by)
{
	if (g->nprocs[list] >= MAX_PROCS)
		return false;
	g->procs[list][g->nprocs[list]++] =
		(struct fproc){.pid = pid, .used = used, .gi = gi, .ci = ci, .held_by = held_by};
	return true;
}

static bool mig_line(char **tok, int n)
{
	if (S.nmigs >= sizeof S.migs / sizeof S.migs[0])
		return false;
	struct fmig *m = &S.migs[S.nmigs];
	unsigned long long gpu = ~0ULL, gi = 0, ci = 0;
	for (int i = 1; i < n; i++) {
		char *v = strchr(tok[i], '=');
		if (!v)
			return false;
		*v++ = '\0';
		bool ok = true;
		if (!strcmp(tok[i], "gpu")) ok = num(v, &gpu);
		else if (!strcmp(tok[i], "gi")) ok = num(v, &gi);
		else if (!strcmp(tok[i], "ci")) ok = num(v, &ci);
		else if (!strcmp(tok[i], "uuid")) snprintf(m->uuid, sizeof m->uuid, "%s", v);
		else return false;
		if (!ok)
			return false;
	}
	if (gpu >= S.ngpus || !m->uuid[0])
		return false;
	m->gpu = (unsigned)gpu, m->gi = (unsigned)gi, m->ci = (unsigned)ci;
	S.nmigs++;
	return true;
}

static bool proc_line(char **tok, int n)
{
	unsigned long long gpu = ~0ULL, pid = 0, used = 0, gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu, held_by = 0;
	int list = 0;
	for (int i = 1; i < n; i++) {
		char *v = strchr(tok[i], '=');
		if (!v)
			return false;
		*v++ = '\0';
		bool ok = true;
		if (!strcmp(tok[i], "gpu")) ok = num(v, &gpu);
		else if (!strcmp(tok[i], "pid")) ok = num(v, &pid);
		else if (!strcmp(tok[i], "mib")) {
			if (!strcmp(v, "unknown"))
				used = NOT_AVAILABLE;
			else if ((ok = num(v, &used)))
				used *= MIB;
		} else if (!strcmp(tok[i], "gi")) ok = num(v, &gi);
		else if (!strcmp(tok[i], "ci")) ok = num(v, &ci);
		else if (!strcmp(tok[i], "held_by")) ok = num(v, &held_by);
		else if (!strcmp(tok[i], "list")) {
			list = !strcmp(v, "compute") ? 0 : !strcmp(v, "graphics") ? 1 : !strcmp(v, "mps") ? 2 : -1;
			ok = list >= 0;
		} else ok = false;
		if (!ok)
			return false;
	}
	return gpu < S.ngpus &&
	       add_proc(&S.gpus[gpu], list, (unsigned)pid, used, (unsigned)gi, (unsigned)ci, (unsigned)held_by);
}

static bool scenario_line(char *line)
{
	char *tok[32];
	int n = tokenize(line, tok, 32);
	unsigned long long a = 0, b = 0;
	if (n == 0)
		return true;
	if (!strcmp(tok[0], "driver") && n == 2)
		snprintf(S.driver, sizeof S.driver, "%s", tok[1]);
	else if (!strcmp(tok[0], "nvml") && n == 2)
		snprintf(S.nvml, sizeof S.nvml, "%s", tok[1]);
	else if (!strcmp(tok[0], "live_only") && n == 1)
		S.live_only = true;
	else if (!strcmp(tok[0], "init_delay_ms") && n == 2 && num(tok[1], &a) && a <= 600000)
		S.init_delay_ms = (unsigned)a;
	else if (!strcmp(tok[0], "init_error") && n == 2 && num(tok[1], &a))
		S.init_error = (int)a;
	else if (!strcmp(tok[0], "stride") && n == 2 && num(tok[1], &a) && (a == 24 || a == 32 || a == 40))
		S.stride = (unsigned)a;
	else if (!strcmp(tok[0], "grow_between_calls") && (n == 2 || n == 3) && num(tok[1], &a) &&
		 (n == 2 || num(tok[2], &b))) {
		S.grow = (unsigned)a;
		S.grow_times = n == 3 ? (unsigned)b : 1;
	} else if (!strcmp(tok[0], "gpu") && n >= 2 && num(tok[1], &a) && a == S.ngpus && a < MAX_GPUS) {
		struct fgpu *g = &S.gpus[S.ngpus++];
		g->minor = (unsigned)a;
		g->bus = (unsigned)a + 1;
		g->total = 81920 * MIB;
		g->persistence = 1;
		snprintf(g->uuid, sizeof g->uuid, "GPU-00000000-0000-0000-0000-%012llu", a);
		snprintf(g->name, sizeof g->name, "NVIDIA Fake GPU");
		for (int i = 2; i < n; i++) {
			char *v = strchr(tok[i], '=');
			if (!v)
				return false;
			*v++ = '\0';
			if (!gpu_key(g, tok[i], v))
				return false;
		}
	} else if (!strcmp(tok[0], "gpu_error") && n == 3 && num(tok[1], &a) && a < S.ngpus && num(tok[2], &b))
		S.gpus[a].handle_error = (int)b;
	else if ((!strcmp(tok[0], "fail") && (n == 3 || n == 4) && num(tok[2], &b)) ||
		 (!strcmp(tok[0], "missing") && n == 2 && (b = 13))) {
		if (S.nfails >= MAX_FAILS)
			return false;
		struct ffail *f = &S.fails[S.nfails++];
		snprintf(f->fn, sizeof f->fn, "%s", tok[1]);
		f->code = (int)b;
		f->gpu = -1;
		if (n == 4) {
			if (strncmp(tok[3], "gpu=", 4) || !num(tok[3] + 4, &a))
				return false;
			f->gpu = (int)a;
		}
	} else if (!strcmp(tok[0], "proc_api") && n == 2 && tok[1][0] == 'v' && tok[1][1] >= '1' && tok[1][1] <= '3' &&
		   !tok[1][2]) {
		static const char *const lists[] = {"Compute", "Graphics", "MPSCompute"};
		for (int v = tok[1][1] - '0' + 1; v <= 3; v++)
			for (int l = 0; l < NLISTS; l++) {
				if (S.nfails >= MAX_FAILS)
					return false;
				struct ffail *f = &S.fails[S.nfails++];
				snprintf(f->fn, sizeof f->fn, "nvmlDeviceGet%sRunningProcesses_v%d", lists[l], v);
				f->code = 13;
				f->gpu = -1;
			}
	} else if (!strcmp(tok[0], "proc"))
		return proc_line(tok, n);
	else if (!strcmp(tok[0], "mig_device"))
		return mig_line(tok, n);
	else
		return false;
	return true;
}

/* True when some thread of pid is alive: a zombie leader with a live thread still holds its
 * context, a zombie whose threads have all exited has closed its files (the driver freed it). */
static bool pid_alive(unsigned pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool alive = false;
	struct dirent *e;
	while (!alive && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sp[320], buf[512];
		snprintf(sp, sizeof sp, "/proc/%u/task/%s/stat", pid, e->d_name);
		FILE *f = fopen(sp, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		const char *rp = strrchr(buf, ')');
		alive = rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
	}
	closedir(d);
	return alive;
}

/* live_only: drops the processes that are gone, and their memory from used. */
static void drop_dead(void)
{
	for (unsigned g = 0; g < S.ngpus; g++)
		for (int l = 0; l < NLISTS; l++) {
			struct fgpu *G = &S.gpus[g];
			unsigned k = 0;
			for (unsigned i = 0; i < G->nprocs[l]; i++) {
				struct fproc *p = &G->procs[l][i];
				if (pid_alive(p->held_by ? p->held_by : p->pid)) {
					G->procs[l][k++] = *p;
					continue;
				}
				if (p->used != NOT_AVAILABLE)
					G->used = G->used > p->used ? G->used - p->used : 0;
			}
			G->nprocs[l] = k;
		}
}

/* Reads $FAKE_NVML_SCENARIO into S. Returns false (after saying why on stderr) on a bad file. */
static bool scenario_load(void)
{
	memset(&S, 0, sizeof S);
	snprintf(S.driver, sizeof S.driver, "999.99.99");
	snprintf(S.nvml, sizeof S.nvml, "12.999.99");
	const char *path = getenv("FAKE_NVML_SCENARIO");
	if (!path || !*path)
		return true;
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "fake_nvml: cannot open scenario %s\n", path);
		return false;
	}
	char line[1024];
	int lineno = 0;
	bool ok = true;
	while (ok && fgets(line, sizeof line, f)) {
		lineno++;
		char copy[1024];
		snprintf(copy, sizeof copy, "%s", line);
		if (!(ok = scenario_line(line)))
			fprintf(stderr, "fake_nvml: %s:%d: cannot understand: %s", path, lineno, copy);
	}
	fclose(f);
	if (ok && S.live_only)
		drop_dead();
	return ok;
}

/* ---- helpers shared by the exported functions ---------------------------------------------- */

/* The code a `fail`/`missing` line sets for fn on GPU gpu (-1: no GPU involved), or 0. */
static int injected(const char *fn, int gpu)
{
	for (unsigned i = 0; i < S.nfails; i++)
		if (!strcmp(S.fails[i].fn, fn) && (S.fails[i].gpu < 0 || S.fails[i].gpu == gpu))
			return S.fails[i].code;
	return 0;
}

/* The fake GPU behind a handle, or NULL for a handle we did not hand out. */
static struct fgpu *gpu_of(nvmlDevice_t d)
{
	struct fgpu *g = (struct fgpu *)d;
	if (!g || g < S.gpus || g >= S.gpus + S.ngpus)
		return NULL;
	return g;
}

/* The preamble of every device function: initialised, a valid handle, no injected failure. */
#define DEVICE_CALL(d, g)                                          \
	if (!S.init)                                               \
		return 1; /* UNINITIALIZED */                      \
	struct fgpu *g = gpu_of(d);                                \
	if (!g)                                                    \
		return 2; /* INVALID_ARGUMENT */                   \
	{                                                          \
		int inj_ = injected(__func__, (int)(g - S.gpus)); \
		if (inj_)                                          \
			return inj_;                               \
	}

static nvmlReturn_t do_init(const char *fn)
{
	if (!scenario_load())
		return 999;
	if (S.init_delay_ms) {
		struct timespec ts = {.tv_sec = S.init_delay_ms / 1000, .tv_nsec = (long)(S.init_delay_ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	int rc = S.init_error ? S.init_error : injected(fn, -1);
	S.init = rc == 0;
	return rc;
}

static nvmlReturn_t do_count(const char *fn, unsigned int *count)
{
	if (!S.init)
		return 1;
	if (!count)
		return 2;
	int rc = injected(fn, -1);
	if (rc)
		return rc;
	*count = S.ngpus;
	return 0;
}

static nvmlReturn_t do_handle(const char *fn, unsigned int index, nvmlDevice_t *dev)
{
	if (!S.init)
		return 1;
	if (index >= S.ngpus || !dev)
		return 2;
	int rc = S.gpus[index].handle_error ? S.gpus[index].handle_error : injected(fn, (int)index);
	if (rc)
		return rc;
	*dev = (nvmlDevice_t)&S.gpus[index];
	return 0;
}

/* A process list, written with entries of `size` bytes laid out as NVML's (pid at 0, usedGpuMemory
 * at 8, gpuInstanceId at 16, computeInstanceId at 20, usedGpuCcProtectedMemory at 24). */
static nvmlReturn_t do_procs(struct fgpu *g, int list, unsigned size, unsigned int *count, void *buf)
{
	if (!count)
		return 2;
	unsigned n = g->nprocs[list];
	if (*count < n) {
		*count = n;
		/* processes that start between this answer and the caller's next call */
		if (S.grow && g->grown[list] < S.grow_times) {
			g->grown[list]++;
			for (unsigned k = 0; k < S.grow; k++)
				add_proc(g, list, 40000 + g->nprocs[list], MIB, 0xFFFFFFFFu, 0xFFFFFFFFu, 0);
		}
		return 7; /* INSUFFICIENT_SIZE */
	}
	if (n && !buf)
		return 2;
	for (unsigned i = 0; i < n; i++) {
		unsigned char *e = (unsigned char *)buf + (size_t)i * size;
		const struct fproc *p = &g->procs[list][i];
		unsigned long long cc = 0;
		memset(e, 0, size);
		memcpy(e, &p->pid, 4);
		memcpy(e + 8, &p->used, 8);
		if (size >= 24) {
			memcpy(e + 16, &p->gi, 4);
			memcpy(e + 20, &p->ci, 4);
		}
		if (size >= 32)
			memcpy(e + 24, &cc, 8);
	}
	*count = n;
	return 0;
}

/* ---- the exported NVML API ----------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlInit(void) { return do_init(__func__); }
EXPORT nvmlReturn_t nvmlShutdown(void)
{
	if (!S.init)
		return 1;
	S.init = false;
	return 0;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
	if (!S.init)
		return 1;
	int rc = injected(__func__, -1);
	if (rc)
		return rc;
	if (strlen(S.driver) >= len)
		return 7;
	memcpy(buf, S.driver, strlen(S.driver) + 1);
	return 0;
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned int len)
{
	if (!S.init)
		return 1;
	int rc = injected(__func__, -1);
	if (rc)
		return rc;
	if (strlen(S.nvml) >= len)
		return 7;
	memcpy(buf, S.nvml, strlen(S.nvml) + 1);
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return do_count(__func__, count); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return do_handle(__func__, i, d); }

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor)
{
	DEVICE_CALL(d, g);
	*minor = g->minor;
	return 0;
}

static struct fmig *mig_of(nvmlDevice_t d)
{
	struct fmig *m = (struct fmig *)d;
	return m && m >= S.migs && m < S.migs + S.nmigs ? m : NULL;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	struct fmig *m = S.init ? mig_of(d) : NULL;
	if (m) {   /* a MIG device handle answers with its own MIG-... UUID */
		if (strlen(m->uuid) >= len)
			return 7;
		memcpy(buf, m->uuid, strlen(m->uuid) + 1);
		return 0;
	}
	DEVICE_CALL(d, g);
	if (strlen(g->uuid) >= len)
		return 7;
	memcpy(buf, g->uuid, strlen(g->uuid) + 1);
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len)
{
	DEVICE_CALL(d, g);
	if (strlen(g->name) >= len)
		return 7;
	memcpy(buf, g->name, strlen(g->name) + 1);
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_v1_t *pci)
{
	DEVICE_CALL(d, g);
	memset(pci, 0, sizeof *pci);
	snprintf(pci->busId, sizeof pci->busId, "%04X:%02X:%02X.%X", g->dom & 0xffff, g->bus, g->dev, g->fn);
	pci->domain = g->dom;
	pci->bus = g->bus;
	pci->device = g->dev;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	DEVICE_CALL(d, g);
	m->total = g->total;
	m->used = g->used;
	m->free = g->total - g->used;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode)
{
	DEVICE_CALL(d, g);
	*mode = g->persistence;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, nvmlComputeMode_t *mode)
{
	DEVICE_CALL(d, g);
	*mode = g->compute_mode;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, nvmlEnableState_t *pending)
{
	DEVICE_CALL(d, g);
	*pending = g->retired;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n)
{
	DEVICE_CALL(d, g);
	/* only what gpuwho asks: UNCORRECTED (1), VOLATILE (0) */
	*n = type == 1 && counter == 0 ? g->ecc : 0;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	DEVICE_CALL(d, g);
	u->gpu = g->util_gpu;
	u->memory = g->util_mem;
	return 0;
}

#define PROC_FN(sym, list, size)                                                     \
	EXPORT nvmlReturn_t sym(nvmlDevice_t d, unsigned int *count, void *infos)    \
	{                                                                            \
		DEVICE_CALL(d, g);                                                   \
		return do_procs(g, list, (size), count, infos);                      \
	}

PROC_FN(nvmlDeviceGetComputeRunningProcesses, 0, 16)
PROC_FN(nvmlDeviceGetGraphicsRunningProcesses, 1, 16)
PROC_FN(nvmlDeviceGetMPSComputeRunningProcesses, 2, 16)

#ifndef FAKE_NVML_OLD
/* What a current libnvidia-ml adds: the versioned symbols, MIG and row remapping. */
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init(__func__); }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) { return do_count(__func__, count); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) { return do_handle(__func__, i, d); }

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	DEVICE_CALL(d, g);
	memset(pci, 0, sizeof *pci);
	/* NVML writes an 8-digit domain and uppercase hex in busId */
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", g->dom & 0xffff, g->bus, g->dev,
		 g->fn);
	snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", g->dom, g->bus, g->dev, g->fn);
	pci->domain = g->dom;
	pci->bus = g->bus;
	pci->device = g->dev;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	DEVICE_CALL(d, g);
	/* sizeof(nvmlMemory_v2_t) | 2 << 24; the real library refuses a bare 2 (FACTS.md) */
	if (m->version != ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24)))
		return 13;
	m->total = g->total;
	m->reserved = g->reserved;
	m->used = g->used;
	m->free = g->total - g->used;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
	DEVICE_CALL(d, g);
	*current = (unsigned)g->mig;
	*pending = (unsigned)g->mig_pending;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
	DEVICE_CALL(d, g);
	*count = g->mig ? 7 : 0;   /* an H100/H200 has up to 7 MIG slices */
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig)
{
	DEVICE_CALL(d, g);
	unsigned seen = 0;
	for (unsigned k = 0; k < S.nmigs; k++)
		if (S.migs[k].gpu == (unsigned)(g - S.gpus) && seen++ == index) {
			*mig = (nvmlDevice_t)&S.migs[k];
			return 0;
		}
	return 6;   /* NOT_FOUND: an empty slot */
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
	struct fmig *m = S.init ? mig_of(d) : NULL;
	if (!m)
		return 2;
	*id = m->gi;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
	struct fmig *m = S.init ? mig_of(d) : NULL;
	if (!m)
		return 2;
	*id = m->ci;
	return 0;
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
					      unsigned int *pending, unsigned int *failure)
{
	DEVICE_CALL(d, g);
	*corr = g->remap_corr;
	*unc = g->remap_unc;
	*pending = (unsigned)g->remap_pending;
	*failure = (unsigned)g->remap_failure;
	return 0;
}

PROC_FN(nvmlDeviceGetComputeRunningProcesses_v2, 0, 24)
PROC_FN(nvmlDeviceGetGraphicsRunningProcesses_v2, 1, 24)
PROC_FN(nvmlDeviceGetMPSComputeRunningProcesses_v2, 2, 24)
PROC_FN(nvmlDeviceGetComputeRunningProcesses_v3, 0, S.stride ? S.stride : 24)
PROC_FN(nvmlDeviceGetGraphicsRunningProcesses_v3, 1, S.stride ? S.stride : 24)
PROC_FN(nvmlDeviceGetMPSComputeRunningProcesses_v3, 2, S.stride ? S.stride : 24)
#endif
