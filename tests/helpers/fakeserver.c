/* fakeserver: a process whose command line is whatever it is given (argv[0] included), so that
 * `gpuwho plan --pid` can read a real SGLang/vLLM-looking /proc/PID/cmdline without Python.
 * Usage: fakeserver READY_FILE PROGRAM ARGS... — re-executes itself as PROGRAM ARGS..., writes its
 * pid to READY_FILE, then sleeps until killed (at most 10 minutes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *ready = getenv("FAKESERVER_READY");
	if (!ready) {
		if (argc < 3) {
			fprintf(stderr, "usage: fakeserver READY_FILE PROGRAM ARGS...\n");
			return 2;
		}
		/* Re-exec through /proc/self/exe so argv[0] is exactly PROGRAM. */
		setenv("FAKESERVER_READY", argv[1], 1);
		execv("/proc/self/exe", argv + 2);
		perror("fakeserver: execv");
		return 1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", ready);
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, ready)) {
		perror("fakeserver: ready file");
		return 1;
	}
	for (int i = 0; i < 600; i++)
		sleep(1);
	return 0;
}
