/* holder: a test process that holds files in the ways gpuwho must find, then waits to be killed.
 *
 *   holder READY_FILE [OPTIONS]
 *     --open PATH        hold PATH by an open fd (read-write if it can, else read-only)
 *     --ro PATH          hold PATH by a read-only fd
 *     --mmap PATH        map PATH (MAP_SHARED) and close the fd: held by the mapping only
 *     --leader-exit      do the holding in a second thread, then let the main thread exit:
 *                        the group leader becomes a zombie (Zl) while the thread lives on
 *     --fork-exit        after opening, fork; the parent exits at once, the child keeps the fds
 *     --comm NAME        set the process name (prctl PR_SET_NAME), hostile bytes and all
 *     --threads N        start N extra idle threads
 *     --stop             stop itself (SIGSTOP) once ready
 *     --ignore-term      ignore SIGTERM (only SIGKILL ends it), like a server stuck in shutdown
 *   It writes the PID that holds the files to READY_FILE when everything is in place. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static char **g_argv;
static int g_argc;
static const char *g_ready;
static int g_stop, g_fork_exit;

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "holder: %s %s: ", what, arg ? arg : "");
	perror(NULL);
	exit(1);
}

static void ready(void)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", g_ready);
	FILE *f = fopen(tmp, "w");
	if (!f)
		die("open", tmp);
	fprintf(f, "%d\n", getpid());
	fclose(f);
	rename(tmp, g_ready);
	if (g_stop)
		raise(SIGSTOP);
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *hold_all(void *arg)
{
	(void)arg;
	for (int i = 2; i < g_argc; i++) {
		const char *o = g_argv[i];
		if (!strcmp(o, "--open") && i + 1 < g_argc) {
			const char *p = g_argv[++i];
			if (open(p, O_RDWR) < 0 && open(p, O_RDONLY) < 0)
				die("open", p);
		} else if (!strcmp(o, "--ro") && i + 1 < g_argc) {
			if (open(g_argv[++i], O_RDONLY) < 0)
				die("open", g_argv[i]);
		} else if (!strcmp(o, "--mmap") && i + 1 < g_argc) {
			const char *p = g_argv[++i];
			int fd = open(p, O_RDWR);
			if (fd < 0)
				die("open", p);
			if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED)
				die("mmap", p);
			close(fd);
		} else if (!strcmp(o, "--comm") && i + 1 < g_argc) {
			prctl(PR_SET_NAME, g_argv[++i]);
		} else if (!strcmp(o, "--threads") && i + 1 < g_argc) {
			int n = atoi(g_argv[++i]);
			for (int k = 0; k < n; k++) {
				pthread_t t;
				pthread_create(&t, NULL, idle, NULL);
			}
		}
	}
	if (g_fork_exit) {
		pid_t parent = getpid();
		pid_t c = fork();
		if (c < 0)
			die("fork", NULL);
		if (c > 0)
			_exit(0);   /* the parent goes; the child, reparented, keeps the inherited fds */
		/* Ready only once reparented: a test that reads our PPID must see the new one, not the parent
		 * on its way out. */
		while (getppid() == parent) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	ready();
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: holder READY_FILE [--open P] [--ro P] [--mmap P] [--leader-exit] [--fork-exit] "
				"[--comm NAME] [--threads N] [--stop] [--ignore-term]\n");
		return 2;
	}
	g_argv = argv;
	g_argc = argc;
	g_ready = argv[1];
	int leader_exit = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--leader-exit"))
			leader_exit = 1;
		else if (!strcmp(argv[i], "--fork-exit"))
			g_fork_exit = 1;
		else if (!strcmp(argv[i], "--stop"))
			g_stop = 1;
		else if (!strcmp(argv[i], "--ignore-term"))
			signal(SIGTERM, SIG_IGN);   /* before any thread starts: the disposition is per process */
	}
	if (leader_exit) {
		pthread_t t;
		pthread_create(&t, NULL, hold_all, NULL);
		pthread_exit(NULL);   /* the leader exits; the process lives on in thread t */
	}
	hold_all(NULL);
	return 0;
}
