/* fusestall: a FUSE file system whose one file never answers a read, to put real processes in the
 * state issue 11 describes: a thread blocked inside the kernel while it holds the process's
 * memory-map lock, so that /proc/PID/cmdline, environ (and maps, on kernels that lock for it)
 * block every reader, while /proc/PID/fd does not.
 *
 *   fusestall serve MOUNTPOINT      mounts the file system (root) and serves until killed; the
 *                                   file is MOUNTPOINT/stall (4096 bytes; reads never answered)
 *   fusestall hold TARGET FILE      opens TARGET (held by fd), maps FILE, reads the mapping through
 *                                   /proc/self/mem in one thread (the kernel faults the page in
 *                                   with the map lock held and waits on FUSE), waits until that
 *                                   thread is blocked (state D), prints "ready", then calls mmap()
 *                                   in the main thread, which queues for that lock for writing: from
 *                                   then on every reader of the lock waits. Stuck means: "ready"
 *                                   printed and the main thread in state D (before "ready" it can
 *                                   be in D for other reasons, e.g. paging its own code in).
 *
 * Killing the server ends the FUSE connection: the blocked reads fail and the holders can exit. */
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FILE_INO 2
#define FILE_SIZE 4096

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = FILE_SIZE;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (parent != FUSE_ROOT_ID || strcmp(name, "stall") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof e);
	e.ino = FILE_INO;
	e.attr_timeout = e.entry_timeout = 3600;
	fill_attr(FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != FILE_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct stat st;
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 1;   /* no direct_io: the file must be mappable */
	fuse_reply_open(req, fi);
}

/* The point of the file system: a read is never answered (the request is dropped, not replied). */
static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)req, (void)ino, (void)size, (void)off, (void)fi;
}

static int serve(const char *mountpoint)
{
	static const struct fuse_lowlevel_ops ops = {
		.lookup = op_lookup, .getattr = op_getattr, .open = op_open, .read = op_read,
	};
	char *argv[] = {"fusestall", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mountpoint) != 0) {
		fuse_session_destroy(se);
		return 1;
	}
	printf("mounted\n");
	fflush(stdout);
	int r = fuse_session_loop(se);   /* one thread: unanswered reads do not stop the others */
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return r ? 1 : 0;
}

static volatile char *mapped;
static volatile pid_t reader_tid;

static void *reader(void *arg)
{
	(void)arg;
	reader_tid = (pid_t)syscall(SYS_gettid);
	/* Through /proc/self/mem the kernel pins the page with get_user_pages and no way to drop the
	 * map lock while FUSE answers (a plain fault would drop and retry). */
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	char c;
	if (fd >= 0)
		(void)!pread(fd, &c, 1, (off_t)(unsigned long)mapped);
	return NULL;
}

/* Waits (up to 30 s) until the thread whose id *tid will hold has been in state D for 50 ms on end:
 * blocked in the kernel, here on the FUSE read it made with the map lock held (a D of a moment can
 * be anything, e.g. a page of its own stack faulted in). Plain system calls and stack buffers only:
 * an allocation (ASan's allocator maps memory) would queue for the map lock before "ready" is said. */
static int wait_blocked(volatile pid_t *tid)
{
	struct timespec ts = {0, 10 * 1000000};
	int in_d = 0;
	for (int i = 0; i < 3000; i++, nanosleep(&ts, NULL)) {
		if (*tid == 0)
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)*tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		const char *rp = strrchr(buf, ')');
		in_d = rp && rp[1] == ' ' && rp[2] == 'D' ? in_d + 1 : 0;
		if (in_d == 5)
			return 1;
	}
	return 0;
}

static int hold(const char *target, const char *file)
{
	int t = open(target, O_RDONLY | O_CLOEXEC);
	int f = open(file, O_RDONLY | O_CLOEXEC);
	if (t < 0 || f < 0) {
		perror("fusestall hold: open");
		return 1;
	}
	void *m = mmap(NULL, FILE_SIZE, PROT_READ, MAP_PRIVATE, f, 0);
	if (m == MAP_FAILED) {
		perror("fusestall hold: mmap");
		return 1;
	}
	mapped = m;
	pthread_t th;
	if (pthread_create(&th, NULL, reader, NULL) != 0)
		return 1;
	/* The writer must queue only once the reader holds the lock and waits on FUSE: after a fixed
	 * sleep, on a loaded machine, the mmap below could go first, and nothing would get stuck. */
	if (!wait_blocked(&reader_tid)) {
		fprintf(stderr, "fusestall hold: the reader thread never blocked on the FUSE read\n");
		return 1;
	}
	(void)!write(STDOUT_FILENO, "ready\n", 6);   /* no stdio buffer to allocate: see wait_blocked */
	/* Queues behind the reader for the lock in write mode; readers after us wait too. */
	void *q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	(void)q;
	pause();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	if (argc == 4 && strcmp(argv[1], "hold") == 0)
		return hold(argv[2], argv[3]);
	fprintf(stderr, "usage: fusestall serve MOUNTPOINT | fusestall hold TARGET FILE\n");
	return 2;
}
