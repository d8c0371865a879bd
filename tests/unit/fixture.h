/* Temp-directory fixtures for unit tests: make a directory, write files into it (parents
 * created), remove it all afterwards. Header-only; included by the test_*.c that need files. */
#ifndef GPUWHO_TESTS_FIXTURE_H
#define GPUWHO_TESTS_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates a fresh directory under $TMPDIR (or /tmp); returns its malloc'ed path. */
static inline char *fx_mkdtemp(void)
{
	const char *t = getenv("TMPDIR");
	char *p = xasprintf("%s/gpuwho-unit-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(p))
		fail_msg("mkdtemp %s: %s", p, strerror(errno));
	return p;
}

/* Creates every missing directory of dir/rel up to (not including) its last component. */
static inline void fx_mkparents(const char *dir, const char *rel)
{
	char *p = xasprintf("%s/%s", dir, rel);
	for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
	free(p);
}

/* Writes len bytes of data to dir/rel (parents created). */
static inline void fx_write(const char *dir, const char *rel, const char *data, size_t len)
{
	fx_mkparents(dir, rel);
	char *p = xasprintf("%s/%s", dir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("open %s: %s", p, strerror(errno));
	if (len && write(fd, data, len) != (ssize_t)len)
		fail_msg("write %s: %s", p, strerror(errno));
	close(fd);
	free(p);
}

/* Writes a NUL-terminated string to dir/rel. */
static inline void fx_puts(const char *dir, const char *rel, const char *text)
{
	fx_write(dir, rel, text, strlen(text));
}

static inline int fx_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

/* Removes dir and everything under it, and frees the path. */
static inline void fx_rmrf(char *dir)
{
	if (dir && nftw(dir, fx_rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fail_msg("rm -rf %s: %s", dir, strerror(errno));
	free(dir);
}

/* Opens dir as a directory fd (what the /proc readers take). */
static inline int fx_open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("open %s: %s", dir, strerror(errno));
	return fd;
}

#endif
