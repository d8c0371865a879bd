/* Unit tests for proc/owner: Slurm job and step from cgroup v1 and v2 texts, the systemd unit,
 * SLURM_JOB_ID, the pod and docker name look-ups against fixture folders, and the label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "proc/owner.h"
#include "proc/proc.h"
#include "util.h"
#include "fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ID64 "3e1c4a5b6d7f80912a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091"
#define POD_UID "3f6b5a1e-9c2d-4b7a-8e1f-0a1b2c3d4e5f"
#define POD_UID_ "3f6b5a1e_9c2d_4b7a_8e1f_0a1b2c3d4e5f"

static void slurm_v2_job_and_step_from_slurmstepd_scope(void **state)
{
	(void)state;
	struct owner o;
	owner_from_cgroup_text("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", &o);
	assert_string_equal(o.slurm_job, "4242");
	assert_string_equal(o.slurm_step, "0");
	assert_string_equal(o.slurm_source, "cgroup");
	assert_string_equal(o.unit, "slurmstepd.scope");
	owner_free(&o);
	owner_from_cgroup_text("0::/system.slice/slurmstepd.scope/job_17/step_batch/user/task_0\n", &o);
	assert_string_equal(o.slurm_job, "17");
	assert_string_equal(o.slurm_step, "batch");
	owner_free(&o);
	/* slurmstepd's own cgroup for the job (no step yet) */
	owner_from_cgroup_text("0::/system.slice/slurmstepd.scope/job_99/slurm\n", &o);
	assert_string_equal(o.slurm_job, "99");
	assert_null(o.slurm_step);
	owner_free(&o);
}

static void slurm_v1_job_and_step_from_any_controller_line(void **state)
{
	(void)state;
	struct owner o;
	owner_from_cgroup_text("12:pids:/\n"
			       "7:memory:/slurm/uid_1000/job_4242/step_extern/task_0\n"
			       "4:freezer:/slurm/uid_1000/job_4242/step_extern\n"
			       "1:name=systemd:/system.slice/slurmd.service\n"
			       "0::/\n",
			       &o);
	assert_string_equal(o.slurm_job, "4242");
	assert_string_equal(o.slurm_step, "extern");
	assert_string_equal(o.unit, "slurmd.service");   /* v2 is the root: the first unit of v1 */
	owner_free(&o);
}

static void look_alikes_are_not_slurm_jobs(void **state)
{
	(void)state;
	struct owner o;
	/* "job_" outside Slurm's layout, a non-numeric id, a job under another parent */
	owner_from_cgroup_text("0::/user.slice/user-1000.slice/job_12/step_0\n", &o);
	assert_null(o.slurm_job);
	owner_free(&o);
	owner_from_cgroup_text("0::/system.slice/slurmstepd.scope/job_x1/step_0\n", &o);
	assert_null(o.slurm_job);
	owner_free(&o);
	owner_from_cgroup_text("4:freezer:/other/uid_0/job_5/step_0\n", &o);
	assert_null(o.slurm_job);
	owner_free(&o);
	owner_from_cgroup_text("", &o);
	assert_true(owner_empty(&o));
	owner_from_cgroup_text("garbage without colons\n::\n0::\n", &o);
	assert_null(o.slurm_job);
	owner_free(&o);
}

static void kubernetes_systemd_and_cgroupfs_paths_name_the_pod_and_container(void **state)
{
	(void)state;
	struct container c;
	struct owner o;
	const char *sysd = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_
			   ".slice/cri-containerd-" ID64 ".scope\n";
	container_from_cgroup(strchr(sysd, '/'), &c);
	assert_string_equal(c.pod_uid, POD_UID);
	assert_string_equal(c.id, ID64);
	owner_from_cgroup_text(sysd, &o);
	assert_null(o.slurm_job);
	assert_string_equal(o.unit, "cri-containerd-" ID64 ".scope");
	owner_free(&o);
	proc_container_free(&c);
	container_from_cgroup("/kubepods/burstable/pod" POD_UID "/" ID64, &c);
	assert_string_equal(c.pod_uid, POD_UID);
	assert_string_equal(c.id, ID64);
	proc_container_free(&c);
	container_from_cgroup("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_UID_
			      ".slice/crio-" ID64 ".scope",
			      &c);
	assert_string_equal(c.pod_uid, POD_UID);
	assert_string_equal(c.id, ID64);
	proc_container_free(&c);
	container_from_cgroup("/system.slice/docker-" ID64 ".scope", &c);
	assert_string_equal(c.runtime, "docker");
	assert_string_equal(c.id, ID64);
	proc_container_free(&c);
}

static void slurm_env_only_when_the_cgroup_named_no_job(void **state)
{
	(void)state;
	struct owner o = {0};
	owner_from_slurm_env("4242", &o);
	assert_string_equal(o.slurm_job, "4242");
	assert_string_equal(o.slurm_source, "environ");
	owner_from_slurm_env("17", &o);
	assert_string_equal(o.slurm_job, "4242");
	owner_free(&o);
	owner_from_slurm_env("42; rm -rf /", &o);
	assert_null(o.slurm_job);
	owner_from_slurm_env("", &o);
	assert_null(o.slurm_job);
	owner_from_slurm_env(NULL, &o);
	assert_null(o.slurm_job);
}

static void pod_and_docker_names_from_their_folders(void **state)
{
	(void)state;
	char *dir = fx_mkdtemp();
	char *p = xasprintf("%s/ml-team_trainer-7f9c_" POD_UID, dir);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = xasprintf("%s/other_pod_11111111-2222-3333-4444-555555555555", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	char *ns, *name;
	assert_int_equal(owner_lookup_pod(dir, POD_UID, &ns, &name), 0);
	assert_string_equal(ns, "ml-team");
	assert_string_equal(name, "trainer-7f9c");
	free(ns);
	free(name);
	assert_int_equal(owner_lookup_pod(dir, "99999999-2222-3333-4444-555555555555", &ns, &name), -ENOENT);
	assert_null(ns);

	p = xasprintf("%s/" ID64, dir);
	assert_int_equal(mkdir(p, 0755), 0);
	char *f = xasprintf("%s/config.v2.json", p);
	FILE *fp = fopen(f, "w");
	fputs("{\"ID\":\"" ID64 "\",\"Name\":\"/vllm-server\",\"State\":{}}", fp);
	fclose(fp);
	assert_int_equal(owner_lookup_docker(dir, ID64, &name), 0);
	assert_string_equal(name, "vllm-server");
	free(name);
	assert_int_equal(owner_lookup_docker(dir, "../etc", &name), -EINVAL);
	fp = fopen(f, "w");
	fputs("not json", fp);
	fclose(fp);
	assert_int_equal(owner_lookup_docker(dir, ID64, &name), -EINVAL);
	free(f);
	free(p);
	fx_rmrf(dir);   /* frees dir */
}

static void label_prefers_job_then_pod_then_container_then_unit(void **state)
{
	(void)state;
	struct owner o = {0};
	struct container c = {.runtime = "docker", .id = ID64};
	assert_null(owner_label(&o, NULL));
	o.unit = "docker-x.scope";
	char *l = owner_label(&o, &c);
	assert_string_equal(l, "container 3e1c4a5b6d7f");
	free(l);
	o.container_name = "vllm";
	l = owner_label(&o, &c);
	assert_string_equal(l, "container vllm");
	free(l);
	o.pod_namespace = "ns";
	o.pod_name = "p";
	l = owner_label(&o, &c);
	assert_string_equal(l, "pod ns/p");
	free(l);
	o.slurm_job = "4242";
	o.slurm_step = "0";
	l = owner_label(&o, &c);
	assert_string_equal(l, "job 4242 step 0");
	free(l);
	o = (struct owner){.unit = "sshd.service"};
	l = owner_label(&o, NULL);
	assert_string_equal(l, "unit sshd.service");
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slurm_v2_job_and_step_from_slurmstepd_scope),
		cmocka_unit_test(slurm_v1_job_and_step_from_any_controller_line),
		cmocka_unit_test(look_alikes_are_not_slurm_jobs),
		cmocka_unit_test(kubernetes_systemd_and_cgroupfs_paths_name_the_pod_and_container),
		cmocka_unit_test(slurm_env_only_when_the_cgroup_named_no_job),
		cmocka_unit_test(pod_and_docker_names_from_their_folders),
		cmocka_unit_test(label_prefers_job_then_pod_then_container_then_unit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
