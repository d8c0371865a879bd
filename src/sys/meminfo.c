/* meminfo: the one reader of /proc/meminfo (host memory totals, in bytes). */
#include "sys/meminfo.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* "Name:   12345 kB" -> 12345 × 1024 (or × 1 with no unit: HugePages_* are counts). */
static bool parse_line(const char *line, const char *name, uint64_t *out)
{
	size_t n = strlen(name);
	if (strncmp(line, name, n) || line[n] != ':')
		return false;
	const char *p = line + n + 1;
	while (*p == ' ' || *p == '\t')
		p++;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno)
		return false;
	while (*end == ' ')
		end++;
	/* Saturate rather than wrap: a corrupt value must not turn into a small one. */
	if (!strncmp(end, "kB", 2))
		*out = v > UINT64_MAX / 1024 ? UINT64_MAX : v * 1024;
	else
		*out = v;
	return true;
}

int meminfo_parse(const char *text, struct meminfo *m)
{
	memset(m, 0, sizeof *m);
	uint64_t hp_total = 0, hp_free = 0, hp_size = 0;
	bool has_hp_total = false, has_hp_size = false;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		uint64_t v;
		if (parse_line(line, "MemTotal", &v)) m->total = v, m->has_total = true;
		else if (parse_line(line, "MemFree", &v)) m->free = v, m->has_free = true;
		else if (parse_line(line, "MemAvailable", &v)) m->available = v, m->has_available = true;
		else if (parse_line(line, "Buffers", &v)) m->buffers = v, m->has_buffers = true;
		else if (parse_line(line, "Cached", &v)) m->cached = v, m->has_cached = true;
		else if (parse_line(line, "Shmem", &v)) m->shmem = v, m->has_shmem = true;
		else if (parse_line(line, "Mlocked", &v)) m->mlocked = v, m->has_mlocked = true;
		else if (parse_line(line, "SwapTotal", &v)) m->swap_total = v, m->has_swap_total = true;
		else if (parse_line(line, "SwapFree", &v)) m->swap_free = v, m->has_swap_free = true;
		else if (parse_line(line, "HugePages_Total", &v)) hp_total = v, has_hp_total = true;
		else if (parse_line(line, "HugePages_Free", &v)) hp_free = v;
		else if (parse_line(line, "Hugepagesize", &v)) hp_size = v, has_hp_size = true;
		line = nl ? nl + 1 : NULL;
	}
	if (has_hp_total && has_hp_size) {
		m->has_hugepages = true;
		m->hugepages_total = hp_size && hp_total > UINT64_MAX / hp_size ? UINT64_MAX : hp_total * hp_size;
		m->hugepages_free = hp_size && hp_free > UINT64_MAX / hp_size ? UINT64_MAX : hp_free * hp_size;
	}
	return m->has_total ? 0 : -EINVAL;
}

int meminfo_read(const char *path, struct meminfo *m)
{
	char *buf;
	int r = readfile_at(AT_FDCWD, path ? path : "/proc/meminfo", &buf, NULL, 1 << 20);
	if (r < 0) {
		memset(m, 0, sizeof *m);
		return r;
	}
	r = meminfo_parse(buf, m);
	free(buf);
	return r;
}
