/* owner: who a process belongs to on a fleet node — the Slurm job and step, the Kubernetes pod
 * (namespace and name beside the UID that proc's container parsing finds), the docker container's
 * name, the systemd unit. Parsed from /proc/PID/cgroup's text (pure), else from SLURM_JOB_ID in the
 * environment; the names are looked up in the kubelet's pod log folders and docker's container
 * folder (owner_lookup_*), once per pod or container, by the snapshot's collection. */
#ifndef GPUWHO_PROC_OWNER_H
#define GPUWHO_PROC_OWNER_H

#include <stdbool.h>

struct container;

/* Every string raw (cgroup names and pod names are chosen by users: escape them to show). */
struct owner {
	char *slurm_job;          /* job id ("4242"; an array task's own id), or NULL */
	char *slurm_step;         /* "0", "batch", "extern", "interactive"; NULL: unknown */
	char *slurm_source;       /* "cgroup" or "environ" (SLURM_JOB_ID: proctrack without cgroups) */
	char *pod_namespace;      /* Kubernetes pod namespace and name (from the kubelet's log folders) */
	char *pod_name;
	char *container_name;     /* docker's name for container.id (its config.v2.json), without the '/' */
	char *unit;               /* the systemd unit: the innermost *.service or *.scope, or NULL */
};

/* Parses the text of /proc/PID/cgroup (every line: cgroup v1's "N:controllers:path" and v2's
 * "0::path") into o: the Slurm job and step (v1 ".../slurm/uid_U/job_J/step_S", v2
 * ".../slurmstepd.scope/job_J/step_S/..."; "step_batch" is "batch") and the systemd unit (from the
 * v2 line, else the first). Pure; fills o with malloc'ed strings, or leaves it zeroed. */
void owner_from_cgroup_text(const char *text, struct owner *o);

/* Takes a Slurm job id from the environment's SLURM_JOB_ID value (digits only; anything else is
 * ignored) when o has none from the cgroup. Pure. */
void owner_from_slurm_env(const char *value, struct owner *o);

/* The kubelet's pod log folder root: $GPUWHO_PODS_DIR (tests), else /var/log/pods. */
const char *owner_pods_dir(void);

/* docker's container folder: $GPUWHO_DOCKER_DIR (tests), else /var/lib/docker/containers. */
const char *owner_docker_dir(void);

/* Finds the pod whose UID is uid among dir's folders "<namespace>_<name>_<uid>" and sets *ns and
 * *name (malloc'ed). Returns 0, -ENOENT when no folder has that UID, or -errno when dir cannot be
 * listed. Names cannot hold '_' (DNS labels), so the split is unambiguous. */
int owner_lookup_pod(const char *dir, const char *uid, char **ns, char **name);

/* Reads dir/<id>/config.v2.json and sets *name to its "Name" without the leading '/'
 * (malloc'ed). Returns 0 or -errno (-EINVAL: no name in it). id must be hex (no '/'). */
int owner_lookup_docker(const char *dir, const char *id, char **name);

/* One short phrase for the owner, for text and verdicts: "job 4242 step 0", "pod ns/name",
 * "container NAME" (or the container id's first 12 characters), "unit foo.service"; the most
 * specific first (a Slurm job, then a pod, a container, a unit). c may be NULL. NULL when nothing
 * is known. Malloc'ed, raw. */
char *owner_label(const struct owner *o, const struct container *c);

/* True when o has nothing in it. */
bool owner_empty(const struct owner *o);

/* Frees o's strings and zeroes it; accepts NULL. */
void owner_free(struct owner *o);

#endif
