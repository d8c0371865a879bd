// cuda_holder: a real CUDA process for the GPU validation runs (built with nvcc on the GPU host).
// It allocates MIB MiB on GPU 0 with cudaMalloc, writes its PID to READY, and waits to be killed.
//   cuda_holder READY MIB [--leader-exit] [--fork-exit] [--stop] [--ignore-term] [--threads N]
//   --leader-exit  the CUDA context lives in a second thread; the main thread exits (Zl in ps)
//   --fork-exit    after allocating, fork; the parent exits, the child keeps the inherited fds
//   --stop         SIGSTOP itself once ready
//   --ignore-term  ignore SIGTERM (for `gpuwho free` validation)
//   --comm NAME    set the process name (prctl), e.g. sglang::scheduler_TP0 as SGLang's workers do
//   --pin MIB      also pin MIB MiB of host memory with cudaHostAlloc (SGLang's hierarchical cache does)
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char *ready_path;
static size_t mib, pin_mib;
static int fork_exit, stop_self;

static void ready(void)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", ready_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		exit(1);
	fprintf(f, "%d\n", getpid());
	fclose(f);
	rename(tmp, ready_path);
	if (stop_self)
		raise(SIGSTOP);
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *hold(void *arg)
{
	(void)arg;
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, mib << 20);
	if (e != cudaSuccess) {
		fprintf(stderr, "cudaMalloc: %s\n", cudaGetErrorString(e));
		exit(1);
	}
	cudaMemset(p, 1, mib << 20);
	cudaDeviceSynchronize();
	if (pin_mib) {
		void *h = NULL;
		e = cudaHostAlloc(&h, pin_mib << 20, cudaHostAllocDefault);
		if (e != cudaSuccess) {
			fprintf(stderr, "cudaHostAlloc: %s\n", cudaGetErrorString(e));
			exit(1);
		}
		memset(h, 1, pin_mib << 20);   // touched: resident
	}
	if (fork_exit) {
		pid_t c = fork();
		if (c < 0)
			exit(1);
		if (c > 0)
			_exit(0);   // the CUDA parent goes; the child holds its device fds
	}
	ready();
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cuda_holder READY MIB [--leader-exit] [--fork-exit] [--stop] [--ignore-term] [--threads N]\n");
		return 2;
	}
	ready_path = argv[1];
	mib = strtoull(argv[2], NULL, 10);
	int leader_exit = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--leader-exit"))
			leader_exit = 1;
		else if (!strcmp(argv[i], "--fork-exit"))
			fork_exit = 1;
		else if (!strcmp(argv[i], "--stop"))
			stop_self = 1;
		else if (!strcmp(argv[i], "--comm") && i + 1 < argc)
			prctl(PR_SET_NAME, argv[++i]);
		else if (!strcmp(argv[i], "--pin") && i + 1 < argc)
			pin_mib = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--ignore-term"))
			signal(SIGTERM, SIG_IGN);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			int n = atoi(argv[++i]);
			for (int k = 0; k < n; k++) {
				pthread_t t;
				pthread_create(&t, NULL, idle, NULL);
			}
		}
	}
	if (leader_exit) {
		pthread_t t;
		pthread_create(&t, NULL, hold, NULL);
		pthread_exit(NULL);
	}
	hold(NULL);
	return 0;
}
