/* owner: the Slurm job, Kubernetes pod, docker name and systemd unit of a process (owner.h). */
#include "proc/owner.h"
#include "proc/proc.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A run of decimal digits at s, its length (0 when none). */
static size_t digits(const char *s)
{
	size_t n = 0;
	while (isdigit((unsigned char)s[n]))
		n++;
	return n;
}

/* The Slurm job and step in one cgroup path. Slurm's cgroup plugins lay jobs out as
 * v1: /slurm/uid_<uid>/job_<id>/step_<step>/task_<n>  (one tree per controller)
 * v2: /system.slice/slurmstepd.scope/job_<id>/step_<step>/user/task_<n>  (slurmd's own scope; the
 *     "system.slice/" part and the node name in multi-slurmd setups vary)
 * Both have a "job_<digits>" component right under a component that is Slurm's ("uid_N" under
 * "slurm", or "slurmstepd.scope"); the step is the next component's "step_" suffix. */
static bool slurm_from_path(const char *path, struct owner *o)
{
	for (const char *q = strstr(path, "/job_"); q; q = strstr(q + 1, "/job_")) {
		const char *id = q + 5;
		size_t n = digits(id);
		if (n == 0 || (id[n] != '/' && id[n] != '\0'))
			continue;
		/* The component above: "uid_N" (v1, under /slurm) or "slurmstepd.scope" (v2). */
		const char *above = q;
		while (above > path && above[-1] != '/')
			above--;
		size_t alen = (size_t)(q - above);
		bool v2 = alen >= 16 && !strncmp(q - 16, "slurmstepd.scope", 16);
		bool v1 = alen > 4 && !strncmp(above, "uid_", 4) && above >= path + 6 && !strncmp(above - 6, "slurm/", 6);
		if (!v1 && !v2)
			continue;
		o->slurm_job = xstrndup(id, n);
		o->slurm_source = xstrdup("cgroup");
		if (!strncmp(id + n, "/step_", 6)) {
			const char *st = id + n + 6;
			size_t sl = strcspn(st, "/");
			if (sl > 0)
				o->slurm_step = xstrndup(st, sl);
		}
		return true;
	}
	return false;
}

/* The innermost component ending in ".service" or ".scope": the systemd unit. */
static char *unit_from_path(const char *path)
{
	char *best = NULL;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if ((n > 8 && !strncmp(p + n - 8, ".service", 8)) || (n > 6 && !strncmp(p + n - 6, ".scope", 6))) {
			free(best);
			best = xstrndup(p, n);
		}
		p += n;
	}
	return best;
}

void owner_from_cgroup_text(const char *text, struct owner *o)
{
	memset(o, 0, sizeof *o);
	if (!text)
		return;
	char *unit_v2 = NULL, *unit_first = NULL;
	const char *line = text;
	while (*line) {
		size_t len = strcspn(line, "\n");
		char *l = xstrndup(line, len);
		char *c1 = strchr(l, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2) {
			const char *path = c2 + 1;
			/* v1 has one tree per controller; any of them may carry Slurm's layout (freezer,
			 * cpuset, memory are the ones Slurm uses), so every line is looked at. */
			if (!o->slurm_job)
				slurm_from_path(path, o);
			bool v2 = !strncmp(l, "0::", 3);
			if (v2 && !unit_v2)
				unit_v2 = unit_from_path(path);
			else if (!unit_first)
				unit_first = unit_from_path(path);
		}
		free(l);
		line += len;
		if (*line == '\n')
			line++;
	}
	if (unit_v2) {
		o->unit = unit_v2;
		free(unit_first);
	} else {
		o->unit = unit_first;
	}
}

void owner_from_slurm_env(const char *value, struct owner *o)
{
	if (o->slurm_job || !value)
		return;
	size_t n = digits(value);
	if (n == 0 || n > 19 || value[n] != '\0')
		return;
	o->slurm_job = xstrdup(value);
	o->slurm_source = xstrdup("environ");
}

const char *owner_pods_dir(void)
{
	const char *d = getenv("GPUWHO_PODS_DIR");
	return d && *d ? d : "/var/log/pods";
}

const char *owner_docker_dir(void)
{
	const char *d = getenv("GPUWHO_DOCKER_DIR");
	return d && *d ? d : "/var/lib/docker/containers";
}

int owner_lookup_pod(const char *dir, const char *uid, char **ns, char **name)
{
	*ns = *name = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	size_t ul = strlen(uid);
	int r = -ENOENT;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		size_t nl = strlen(n);
		/* "<namespace>_<name>_<uid>": the UID last, after the second '_'. */
		if (nl <= ul + 1 || strcmp(n + nl - ul, uid) || n[nl - ul - 1] != '_')
			continue;
		const char *us = strchr(n, '_');
		if (!us || us >= n + nl - ul - 1 || us == n)
			continue;
		*ns = xstrndup(n, (size_t)(us - n));
		*name = xstrndup(us + 1, (size_t)(n + nl - ul - 1 - (us + 1)));
		r = 0;
		break;
	}
	closedir(d);
	return r;
}

int owner_lookup_docker(const char *dir, const char *id, char **name)
{
	*name = NULL;
	for (const char *q = id; *q; q++)
		if (!isxdigit((unsigned char)*q))
			return -EINVAL;
	char *path = xasprintf("%s/%s/config.v2.json", dir, id);
	json_error_t e;
	/* docker writes a few KiB here; the cap keeps a hostile file from costing much. */
	json_t *j = NULL;
	FILE *f = fopen(path, "re");
	free(path);
	if (!f)
		return -errno;
	char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	j = json_loadb(buf, n, 0, &e);
	if (!j)
		return -EINVAL;
	const char *s = json_string_value(json_object_get(j, "Name"));
	int r = -EINVAL;
	if (s && *s) {
		*name = xstrdup(s[0] == '/' ? s + 1 : s);
		r = 0;
	}
	json_decref(j);
	return r;
}

char *owner_label(const struct owner *o, const struct container *c)
{
	if (o && o->slurm_job)
		return o->slurm_step ? xasprintf("job %s step %s", o->slurm_job, o->slurm_step)
				     : xasprintf("job %s", o->slurm_job);
	if (o && o->pod_name)
		return xasprintf("pod %s/%s", o->pod_namespace ? o->pod_namespace : "?", o->pod_name);
	if (c && c->pod_uid)
		return xasprintf("pod %s", c->pod_uid);
	if (o && o->container_name)
		return xasprintf("container %s", o->container_name);
	if (c && c->id)
		return xasprintf("container %.12s", c->id);
	if (o && o->unit)
		return xasprintf("unit %s", o->unit);
	return NULL;
}

bool owner_empty(const struct owner *o)
{
	return !o->slurm_job && !o->slurm_step && !o->slurm_source && !o->pod_namespace && !o->pod_name &&
	       !o->container_name && !o->unit;
}

void owner_free(struct owner *o)
{
	if (!o)
		return;
	free(o->slurm_job);
	free(o->slurm_step);
	free(o->slurm_source);
	free(o->pod_namespace);
	free(o->pod_name);
	free(o->container_name);
	free(o->unit);
	memset(o, 0, sizeof *o);
}
