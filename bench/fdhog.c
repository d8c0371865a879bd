/* fdhog: a benchmark process that holds NFDS open file descriptors, K of them on TARGET, then
 * sleeps until killed. Its other fds are a realistic mix: regular files, a pipe, a socket pair
 * and /dev/null. It forks into the background and prints the holding process's PID, so the
 * benchmark's shell does not track (and report the deaths of) a thousand jobs.
 *   usage: fdhog NFDS TARGET K */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c > 0) {
		printf("%d\n", (int)c);
		return 0;
	}
	int n = atoi(argv[1]), k = atoi(argv[3]), have = 3;
	for (int i = 0; i < k; i++, have++)
		if (open(argv[2], O_RDONLY) < 0)
			return 1;
	int p[2], s[2];
	if (pipe(p) == 0)
		have += 2;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0)
		have += 2;
	static const char *files[] = {"/etc/hostname", "/etc/passwd", "/dev/null", "/proc/self/stat"};
	for (int i = 0; have < n; i++, have++)
		if (open(files[i % 4], O_RDONLY) < 0)
			return 1;
	/* Let go of the benchmark's stdout pipe so $(fdhog ...) returns. */
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	close(null);
	for (;;)
		pause();
}
