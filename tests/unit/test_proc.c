/* Unit tests for the /proc/PID readers, against fixture directories written to a temp dir (the
 * readers take a directory fd), and proc_read_info against this process through the real /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "proc/proc.h"
#include "util.h"
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ID64 "3e1c4a5b6d7f80912a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091"
#define ID64B "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
#define POD_UID "3f6b5a1e-9c2d-4b7a-8e1f-0a1b2c3d4e5f"
#define POD_UID_ "3f6b5a1e_9c2d_4b7a_8e1f_0a1b2c3d4e5f"

/* A temp dir standing for /proc/PID, and its fd. */
struct fx {
	char *dir;
	int fd;
	struct proc_info p;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->dir = fx_mkdtemp();
	f->fd = fx_open_dir(f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	close(f->fd);
	fx_rmrf(f->dir);
	proc_info_free(&f->p);
	free(f);
	return 0;
}

/* A stat line as the kernel writes it (fields numbered as in proc(5)): comm raw between the
 * parens, then state (3), ppid (4), ..., flags (9), ..., num_threads (20), starttime (22). */
static char *stat_line(int pid, const char *comm, char state, int ppid, unsigned long flags, long nthreads,
		       unsigned long long start)
{
	return xasprintf("%d (%s) %c %d %d %d 34816 %d %lu 1234 0 5 0 250 31 0 0 20 0 %ld 0 %llu "
			 "123456789 4321 18446744073709551615 1 1 0 0 0 0 0 16781312 17922 0 0 0 17 3 0 0 0 0 0\n",
			 pid, comm, state, ppid, pid, pid, -1 * 1, flags, nthreads, start);
}

static int read_stat_of(struct fx *f, const char *text)
{
	fx_puts(f->dir, "stat", text);
	proc_info_free(&f->p);
	return proc_read_stat(f->fd, &f->p);
}

static int read_stat_with_comm(struct fx *f, const char *comm, char state, int ppid)
{
	char *s = stat_line(4242, comm, state, ppid, 0x400100, 1, 98765);
	int r = read_stat_of(f, s);
	free(s);
	return r;
}

static void environ_variable_is_found_by_exact_name(void **state)
{
	struct fx *f = *state;
	static const char env[] = "CUDA_VISIBLE_DEVICES_X=9\0PATH=/bin\0CUDA_VISIBLE_DEVICES=6,7\0HOME=/root";
	fx_write(f->dir, "environ", env, sizeof env - 1);
	assert_int_equal(proc_read_environ(f->fd, "CUDA_VISIBLE_DEVICES", &f->p), 0);
	assert_string_equal(f->p.env_value, "6,7");
	assert_int_equal(proc_read_environ(f->fd, "HOME", &f->p), 0);
	assert_string_equal(f->p.env_value, "/root");   /* the last entry, without a trailing NUL */
}

static void environ_variable_unset_or_empty_file_gives_null(void **state)
{
	struct fx *f = *state;
	static const char env[] = "CUDA_VISIBLE_DEVICES\0X=1\0";   /* a name without '=' is not a value */
	fx_write(f->dir, "environ", env, sizeof env - 1);
	assert_int_equal(proc_read_environ(f->fd, "CUDA_VISIBLE_DEVICES", &f->p), 0);
	assert_null(f->p.env_value);
	fx_write(f->dir, "environ", "", 0);
	assert_int_equal(proc_read_environ(f->fd, "X", &f->p), 0);
	assert_null(f->p.env_value);
}

static void environ_missing_is_enoent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(proc_read_environ(f->fd, "X", &f->p), -ENOENT);
}

static void stat_plain_line_gives_state_ppid_threads_start(void **state)
{
	struct fx *f = *state;
	char *s = stat_line(4242, "python3", 'S', 1, 0x400100, 17, 98765);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_int_equal(f->p.state, 'S');
	assert_int_equal(f->p.ppid, 1);
	assert_int_equal(f->p.nthreads, 17);
	assert_true(f->p.start_ticks == 98765);
	assert_false(f->p.kthread);
}

static void stat_comm_with_close_paren_and_spaces_is_split_at_last_paren(void **state)
{
	struct fx *f = *state;
	/* The name fakes the start of a stat line: ") S 1 2". */
	assert_int_equal(read_stat_with_comm(f, ") S 1 2", 'R', 777), 0);
	assert_int_equal(f->p.state, 'R');
	assert_int_equal(f->p.ppid, 777);
	assert_true(f->p.start_ticks == 98765);
	assert_int_equal(read_stat_with_comm(f, "a) Z 9 (b", 'D', 778), 0);
	assert_int_equal(f->p.state, 'D');
	assert_int_equal(f->p.ppid, 778);
	assert_int_equal(read_stat_with_comm(f, "))))))))))))))", 'T', 779), 0);
	assert_int_equal(f->p.state, 'T');
	assert_int_equal(f->p.ppid, 779);
}

static void stat_comm_with_spaces_and_newlines_parses(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_stat_with_comm(f, "my  proc name", 'S', 5), 0);
	assert_int_equal(f->p.ppid, 5);
	assert_int_equal(read_stat_with_comm(f, "a\nb\n", 'R', 6), 0);
	assert_int_equal(f->p.state, 'R');
	assert_int_equal(f->p.ppid, 6);
	assert_int_equal(read_stat_with_comm(f, " ", 'S', 7), 0);
	assert_int_equal(f->p.ppid, 7);
}

static void stat_comm_of_open_parens_and_empty_comm_parse(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_stat_with_comm(f, "((", 'S', 8), 0);
	assert_int_equal(f->p.ppid, 8);
	assert_int_equal(read_stat_with_comm(f, "(", 'I', 2), 0);
	assert_int_equal(f->p.state, 'I');
	assert_int_equal(read_stat_with_comm(f, "", 'S', 9), 0);
	assert_int_equal(f->p.ppid, 9);
}

static void stat_truncated_or_malformed_lines_are_einval(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_stat_of(f, "4242 (python3"), -EINVAL);        /* no ')' */
	assert_int_equal(read_stat_of(f, "4242 (python3)"), -EINVAL);       /* nothing after it */
	assert_int_equal(read_stat_of(f, "4242 (python3)S 1"), -EINVAL);    /* no space after ')' */
	assert_int_equal(read_stat_of(f, "4242 (python3) S 1 4242 4242 34816 -1 4194560 1 0 0"), -EINVAL);
	assert_int_equal(read_stat_of(f, "4242 (python3) S x 4242"), -EINVAL);
	assert_int_equal(read_stat_of(f, "garbage\n"), -EINVAL);
	/* Cut right before starttime (field 22). */
	assert_int_equal(read_stat_of(f, "4242 (a) S 1 4242 4242 34816 -1 4194560 1 0 0 0 1 1 0 0 20 0 3 0 "),
			 -EINVAL);
}

static void stat_empty_file_means_the_process_is_gone(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_stat_of(f, ""), -ESRCH);
}

static void stat_missing_file_is_enoent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(proc_read_stat(f->fd, &f->p), -ENOENT);
}

static void stat_flags_with_pf_kthread_mark_a_kernel_thread(void **state)
{
	struct fx *f = *state;
	/* kthreadd: flags 0x00208040 (PF_KTHREAD | PF_FORKNOEXEC | PF_NOFREEZE). */
	char *s = stat_line(2, "kthreadd", 'S', 0, 0x00208040, 1, 0);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_true(f->p.kthread);
	s = stat_line(2, "notk", 'S', 0, 0x00200000, 1, 0);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_true(f->p.kthread);
	/* All bits but PF_KTHREAD. */
	s = stat_line(2, "user", 'S', 0, 0xffffffffUL & ~0x00200000UL, 1, 0);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_false(f->p.kthread);
}

static void stat_zombie_leader_keeps_its_thread_count(void **state)
{
	struct fx *f = *state;
	char *s = stat_line(4242, "python3", 'Z', 1, 0x00400144, 4, 98765);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_int_equal(f->p.state, 'Z');
	assert_int_equal(f->p.nthreads, 4);
}

static void stat_large_start_time_is_kept_whole(void **state)
{
	struct fx *f = *state;
	char *s = stat_line(4242, "x", 'S', 1, 0, 1, 123456789012345ULL);
	assert_int_equal(read_stat_of(f, s), 0);
	free(s);
	assert_true(f->p.start_ticks == 123456789012345ULL);
}

static const char status_head[] = "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\n"
				   "Pid:\t4242\nPPid:\t1\nTracerPid:\t0\n";
static const char status_tail[] = "VmPeak:\t  123456 kB\nThreads:\t4\nSigQ:\t0/514497\n";

static int read_status(struct fx *f, const char *uid_line, const char *nspid_line)
{
	char *s = xasprintf("%s%s\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t\n%s%s", status_head, uid_line,
			    nspid_line ? nspid_line : "", status_tail);
	fx_puts(f->dir, "status", s);
	free(s);
	proc_info_free(&f->p);
	return proc_read_status(f->fd, &f->p);
}

static void status_uid_is_the_real_uid_with_a_name(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_status(f, "Uid:\t0\t1000\t1000\t1000", "NSpid:\t4242\n"), 0);
	assert_int_equal(f->p.uid, 0);
	assert_string_equal(f->p.user, "root");
	/* A uid with no passwd entry shows as the number. */
	assert_int_equal(read_status(f, "Uid:\t4000000\t4000000\t4000000\t4000000", NULL), 0);
	assert_int_equal(f->p.uid, 4000000);
	assert_string_equal(f->p.user, "4000000");
}

static void status_nspid_with_one_level(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_status(f, "Uid:\t0\t0\t0\t0", "NStgid:\t4242\nNSpid:\t4242\nNSpgid:\t4242\n"), 0);
	assert_int_equal(f->p.nnspid, 1);
	assert_int_equal(f->p.nspid[0], 4242);
}

static void status_nspid_with_two_and_three_levels_outermost_first(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_status(f, "Uid:\t0\t0\t0\t0", "NSpid:\t4242\t1\n"), 0);
	assert_int_equal(f->p.nnspid, 2);
	assert_int_equal(f->p.nspid[0], 4242);
	assert_int_equal(f->p.nspid[1], 1);
	assert_int_equal(read_status(f, "Uid:\t0\t0\t0\t0", "NSpid:\t98765\t312\t7\n"), 0);
	assert_int_equal(f->p.nnspid, 3);
	assert_int_equal(f->p.nspid[0], 98765);
	assert_int_equal(f->p.nspid[1], 312);
	assert_int_equal(f->p.nspid[2], 7);
}

static void status_nspid_deeper_than_we_record_is_capped(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_status(f, "Uid:\t0\t0\t0\t0", "NSpid:\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n"), 0);
	assert_int_equal(f->p.nnspid, PROC_MAX_NS);
	assert_int_equal(f->p.nspid[PROC_MAX_NS - 1], PROC_MAX_NS);
}

static void status_without_nspid_on_old_kernels_leaves_none(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_status(f, "Uid:\t1000\t1000\t1000\t1000", NULL), 0);
	assert_int_equal(f->p.nnspid, 0);
	assert_int_equal(f->p.uid, 1000);
	assert_non_null(f->p.user);
}

static void status_missing_file_is_enoent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(proc_read_status(f->fd, &f->p), -ENOENT);
	assert_null(f->p.user);
}

static void cmdline_is_nul_separated_with_the_trailing_nul_trimmed(void **state)
{
	struct fx *f = *state;
	fx_write(f->dir, "cmdline", "python3\0-m\0sglang.launch_server\0", 32);
	assert_int_equal(proc_read_cmdline(f->fd, &f->p), 0);
	assert_int_equal(f->p.cmdline_len, 31);
	assert_memory_equal(f->p.cmdline, "python3\0-m\0sglang.launch_server", 32);
	char *j = proc_cmdline_joined(&f->p);
	assert_string_equal(j, "python3 -m sglang.launch_server");
	free(j);
}

static void cmdline_without_trailing_nul_is_kept_whole(void **state)
{
	struct fx *f = *state;
	/* A process that rewrote its argv area (setproctitle). */
	fx_puts(f->dir, "cmdline", "nginx: worker process");
	assert_int_equal(proc_read_cmdline(f->fd, &f->p), 0);
	assert_int_equal(f->p.cmdline_len, 21);
	char *j = proc_cmdline_joined(&f->p);
	assert_string_equal(j, "nginx: worker process");
	free(j);
}

static void cmdline_empty_joins_as_bracketed_comm(void **state)
{
	struct fx *f = *state;
	fx_write(f->dir, "cmdline", "", 0);
	assert_int_equal(proc_read_cmdline(f->fd, &f->p), 0);
	assert_int_equal(f->p.cmdline_len, 0);
	char *j = proc_cmdline_joined(&f->p);
	assert_string_equal(j, "[?]");
	free(j);
	fx_puts(f->dir, "comm", "kworker/0:1\n");
	assert_int_equal(proc_read_comm(f->fd, &f->p), 0);
	assert_string_equal(f->p.comm, "kworker/0:1");
	j = proc_cmdline_joined(&f->p);
	assert_string_equal(j, "[kworker/0:1]");
	free(j);
}

static void cmdline_missing_is_enoent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(proc_read_cmdline(f->fd, &f->p), -ENOENT);
	assert_null(f->p.cmdline);
}

static void comm_keeps_spaces_and_strips_only_the_newline(void **state)
{
	struct fx *f = *state;
	fx_puts(f->dir, "comm", " a) b \n");
	assert_int_equal(proc_read_comm(f->fd, &f->p), 0);
	assert_string_equal(f->p.comm, " a) b ");
}

/* container_from_cgroup on one path. */
struct want {
	const char *runtime, *id, *pod_uid;
};

static void check_container(const char *path, struct want w)
{
	struct container c;
	container_from_cgroup(path, &c);
	if (w.runtime)
		assert_string_equal(c.runtime, w.runtime);
	else if (c.runtime)
		fail_msg("%s: runtime %s, wanted none", path, c.runtime);
	if (w.id)
		assert_string_equal(c.id, w.id);
	else
		assert_null(c.id);
	if (w.pod_uid)
		assert_string_equal(c.pod_uid, w.pod_uid);
	else
		assert_null(c.pod_uid);
	proc_container_free(&c);
	assert_null(c.runtime);
}

static void cgroup_docker_cgroupfs_and_systemd_paths(void **state)
{
	(void)state;
	check_container("/docker/" ID64, (struct want){"docker", ID64, NULL});
	check_container("/system.slice/docker-" ID64 ".scope", (struct want){"docker", ID64, NULL});
	/* dockerd itself is no container. */
	check_container("/system.slice/docker.service", (struct want){0});
}

static void cgroup_containerd_paths(void **state)
{
	(void)state;
	/* containerd's own service cgroup (daemon and shims): no container. */
	check_container("/system.slice/containerd.service", (struct want){0});
	/* containerd's systemd-style cgroup path inside its service, as k3s shows it. */
	check_container("/system.slice/containerd.service/kubepods-burstable-pod" POD_UID_ ".slice:cri-containerd:" ID64,
			(struct want){"kubepods", ID64, POD_UID});
	check_container("/system.slice/cri-containerd-" ID64 ".scope", (struct want){"containerd", ID64, NULL});
}

static void cgroup_crio_and_podman_scopes(void **state)
{
	(void)state;
	check_container("/machine.slice/crio-" ID64 ".scope", (struct want){"cri-o", ID64, NULL});
	check_container("/machine.slice/libpod-" ID64 ".scope", (struct want){"podman", ID64, NULL});
	/* Rootless podman under the user's systemd, with the "container" sub-cgroup. */
	check_container("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope/container",
			(struct want){"podman", ID64, NULL});
}

static void cgroup_kubepods_systemd_driver_gives_pod_uid_with_dashes(void **state)
{
	(void)state;
	check_container("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_
			".slice/cri-containerd-" ID64 ".scope",
			(struct want){"kubepods", ID64, POD_UID});
	check_container("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_UID_
			".slice/crio-" ID64 ".scope",
			(struct want){"kubepods", ID64, POD_UID});
	/* Guaranteed QoS: no QoS slice. */
	check_container("/kubepods.slice/kubepods-pod" POD_UID_ ".slice/cri-containerd-" ID64 ".scope",
			(struct want){"kubepods", ID64, POD_UID});
	/* The pod's own slice (the pause sandbox's parent): the pod but no container. */
	check_container("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_UID_ ".slice",
			(struct want){"kubepods", NULL, POD_UID});
}

static void cgroup_kubepods_cgroupfs_driver(void **state)
{
	(void)state;
	check_container("/kubepods/besteffort/pod" POD_UID "/" ID64, (struct want){"kubepods", ID64, POD_UID});
	check_container("/kubepods/pod" POD_UID "/" ID64, (struct want){"kubepods", ID64, POD_UID});
}

static void cgroup_lxc_payload_names_the_container(void **state)
{
	(void)state;
	check_container("/lxc.payload.gpu-box/system.slice/ssh.service", (struct want){"lxc", "gpu-box", NULL});
	check_container("/lxc.payload.c1", (struct want){"lxc", "c1", NULL});
	/* LXC's monitor process is outside the container. */
	check_container("/lxc.monitor.c1", (struct want){0});
}

static void cgroup_plain_host_paths_are_no_container(void **state)
{
	(void)state;
	check_container("/user.slice/user-1000.slice/session-3.scope", (struct want){0});
	check_container("/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-"
			"5b1c6b0e-6fd5-4a5c-8f55-0d9c2b0f1e2a.scope",
			(struct want){0});
	check_container("/", (struct want){0});
	check_container("", (struct want){0});
	check_container(NULL, (struct want){0});
	/* 63 or 65 hex digits are not a container id. */
	check_container("/docker/" "3e1c4a5b6d7f80912a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809", (struct want){0});
	check_container("/docker/" ID64 "a", (struct want){0});
}

static void cgroup_unknown_runtime_with_an_id_is_a_container(void **state)
{
	(void)state;
	check_container("/k8s.io/" ID64, (struct want){"container", ID64, NULL});
}

static int read_cgroup_of(struct fx *f, const char *text)
{
	fx_puts(f->dir, "cgroup", text);
	proc_info_free(&f->p);
	return proc_read_cgroup(f->fd, &f->p);
}

static void cgroup_file_v2_single_line(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_cgroup_of(f, "0::/system.slice/docker-" ID64 ".scope\n"), 0);
	assert_string_equal(f->p.cgroup, "/system.slice/docker-" ID64 ".scope");
	assert_string_equal(f->p.container.runtime, "docker");
	assert_string_equal(f->p.container.id, ID64);
}

static void cgroup_file_v1_multi_line_prefers_the_unified_line(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_cgroup_of(f, "12:pids:/docker/" ID64B "\n"
					   "11:cpu,cpuacct:/docker/" ID64B "\n"
					   "1:name=systemd:/docker/" ID64B "\n"
					   "0::/docker/" ID64 "\n"),
			 0);
	assert_string_equal(f->p.cgroup, "/docker/" ID64);
	assert_string_equal(f->p.container.id, ID64);
}

static void cgroup_file_v1_without_unified_line_takes_the_first(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_cgroup_of(f, "12:pids:/kubepods/besteffort/pod" POD_UID "/" ID64 "\n"
					   "11:memory:/other\n"
					   "1:name=systemd:/kubepods/besteffort/pod" POD_UID "/" ID64 "\n"),
			 0);
	assert_string_equal(f->p.cgroup, "/kubepods/besteffort/pod" POD_UID "/" ID64);
	assert_string_equal(f->p.container.pod_uid, POD_UID);
}

static void cgroup_file_path_with_colons_is_kept_whole(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_cgroup_of(f, "0::/system.slice/containerd.service/kubepods-besteffort-pod" POD_UID_
					   ".slice:cri-containerd:" ID64 "\n"),
			 0);
	assert_string_equal(f->p.cgroup, "/system.slice/containerd.service/kubepods-besteffort-pod" POD_UID_
					 ".slice:cri-containerd:" ID64);
	assert_string_equal(f->p.container.id, ID64);
}

static void cgroup_file_empty_or_malformed_gives_no_cgroup(void **state)
{
	struct fx *f = *state;
	assert_int_equal(read_cgroup_of(f, ""), 0);
	assert_null(f->p.cgroup);
	assert_null(f->p.container.runtime);
	assert_int_equal(read_cgroup_of(f, "garbage\nno colons here\n"), 0);
	assert_null(f->p.cgroup);
	/* No trailing newline. */
	assert_int_equal(read_cgroup_of(f, "0::/"), 0);
	assert_string_equal(f->p.cgroup, "/");
}

/* Writes task/TID/stat for each (tid, state). */
static void write_task(struct fx *f, int tid, char state)
{
	char *rel = xasprintf("task/%d/stat", tid);
	char *s = stat_line(tid, "pt_main_thread", state, 1, 0x40, 4, 100);
	fx_puts(f->dir, rel, s);
	free(s);
	free(rel);
}

static void threads_differing_from_a_zombie_leader_are_counted_by_state(void **state)
{
	struct fx *f = *state;
	f->p.pid = 4242;
	f->p.state = 'Z';
	write_task(f, 4242, 'Z');
	write_task(f, 4243, 'R');
	write_task(f, 4244, 'S');
	write_task(f, 4245, 'S');
	write_task(f, 4246, 'D');
	fx_puts(f->dir, "task/notatid/stat", "x");
	assert_int_equal(proc_read_threads(f->fd, &f->p), 0);
	assert_string_equal(f->p.thread_states, "leader Z, 1 D, 1 R, 2 S");
}

static void threads_like_the_leader_give_no_summary(void **state)
{
	struct fx *f = *state;
	f->p.pid = 4242;
	f->p.state = 'S';
	f->p.thread_states = xstrdup("stale");
	write_task(f, 4242, 'S');
	write_task(f, 4243, 'S');
	write_task(f, 4244, 'S');
	assert_int_equal(proc_read_threads(f->fd, &f->p), 0);
	assert_null(f->p.thread_states);
}

static void threads_with_unreadable_stat_are_skipped(void **state)
{
	struct fx *f = *state;
	f->p.pid = 10;
	f->p.state = 'S';
	write_task(f, 11, 'T');
	fx_puts(f->dir, "task/12/stat", "");             /* exited meanwhile */
	fx_puts(f->dir, "task/13/stat", "13 (x");        /* malformed */
	fx_mkparents(f->dir, "task/14/");                /* no stat at all */
	assert_int_equal(proc_read_threads(f->fd, &f->p), 0);
	assert_string_equal(f->p.thread_states, "leader S, 1 T");
}

static void threads_without_task_dir_is_enoent(void **state)
{
	struct fx *f = *state;
	assert_int_equal(proc_read_threads(f->fd, &f->p), -ENOENT);
}

static void info_of_this_process_through_real_proc(void **state)
{
	(void)state;
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(procfd >= 0);
	struct proc_info p;
	assert_int_equal(proc_read_info(procfd, getpid(), &p), 0);
	assert_int_equal(p.pid, getpid());
	assert_int_equal(p.ppid, getppid());
	assert_int_equal(p.state, 'R');
	assert_int_equal(p.nthreads, 1);
	assert_false(p.kthread);
	assert_null(p.thread_states);
	assert_int_equal(p.uid, getuid());
	assert_non_null(p.user);
	assert_string_equal(p.comm, "test_proc");
	assert_non_null(p.cmdline);
	assert_true(p.cmdline_len > 0);
	assert_non_null(strstr(p.cmdline, "test_proc"));
	assert_non_null(p.cgroup);
	assert_true(p.nnspid >= 1);
	assert_int_equal(p.nspid[p.nnspid - 1] > 0, 1);
	assert_null(p.missing);
	/* Started within the last hour, by the boot time plus starttime. */
	double now = (double)time(NULL);
	assert_true(p.start_time > now - 3600 && p.start_time < now + 5);
	proc_info_free(&p);
	assert_null(p.comm);
	proc_info_free(NULL);
	close(procfd);
}

static void info_of_a_pid_that_does_not_exist_is_esrch(void **state)
{
	(void)state;
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct proc_info p;
	assert_int_equal(proc_read_info(procfd, 0x3fffffff, &p), -ESRCH);
	proc_info_free(&p);
	close(procfd);
}

/* A fake /proc with one zombie leader whose threads live: the command line comes from a thread,
 * the thread states are summarised, and a missing file is recorded. */
static void info_of_a_zombie_leader_reads_cmdline_from_a_live_thread(void **state)
{
	struct fx *f = *state;
	char *s = stat_line(4242, "python3", 'Z', 1, 0x00400144, 3, 100);
	fx_puts(f->dir, "4242/stat", s);
	free(s);
	fx_puts(f->dir, "4242/status", "Name:\tpython3\nUid:\t0\t0\t0\t0\nNSpid:\t4242\t17\n");
	fx_puts(f->dir, "4242/comm", "python3\n");
	fx_write(f->dir, "4242/cmdline", "", 0);
	s = stat_line(4242, "python3", 'Z', 1, 0x00400144, 3, 100);
	fx_puts(f->dir, "4242/task/4242/stat", s);
	free(s);
	s = stat_line(4243, "python3", 'S', 1, 0x40, 3, 100);
	fx_puts(f->dir, "4242/task/4243/stat", s);
	free(s);
	fx_puts(f->dir, "4242/task/4244/stat", "4244 (cuda-EvtHandlr) D 1 4242 4242 0 -1 64 0 0 0 0 0 0 0 0 20 0 3 0 100\n");
	fx_write(f->dir, "4242/task/4242/cmdline", "", 0);
	fx_write(f->dir, "4242/task/4243/cmdline", "python3\0serve.py\0", 17);
	fx_write(f->dir, "4242/task/4244/cmdline", "python3\0serve.py\0", 17);
	struct proc_info p;
	assert_int_equal(proc_read_info(f->fd, 4242, &p), 0);
	assert_int_equal(p.state, 'Z');
	assert_int_equal(p.nthreads, 3);
	assert_int_equal(p.nnspid, 2);
	assert_int_equal(p.nspid[1], 17);
	assert_int_equal(p.cmdline_len, 16);
	char *j = proc_cmdline_joined(&p);
	assert_string_equal(j, "python3 serve.py");
	free(j);
	assert_string_equal(p.thread_states, "leader Z, 1 D, 1 S");
	assert_non_null(p.missing);
	assert_non_null(strstr(p.missing, "cgroup (No such file or directory)"));
	proc_info_free(&p);
}

static void stack_frame_names_the_innermost_nvidia_function(void **state)
{
	(void)state;
	char *f = proc_stack_nvidia_frame("[<0>] __schedule+0x2d1/0x870\n[<0>] schedule+0x5e/0xd0\n"
					  "[<0>] uvm_spin_loop+0x4f/0x90 [nvidia_uvm]\n"
					  "[<0>] uvm_tracker_wait+0x91/0x1a0 [nvidia_uvm]\n[<0>] do_syscall_64+0x5c/0xc0\n");
	assert_string_equal(f, "uvm_spin_loop");
	free(f);
	/* A binary-core symbol without a recognised prefix still counts by its module tag. */
	f = proc_stack_nvidia_frame("[<0>] schedule+0x5e/0xd0\n[<0>] _raw_q_wait+0x10/0x20 [nvidia]\n");
	assert_string_equal(f, "_raw_q_wait");
	free(f);
	f = proc_stack_nvidia_frame("[<0>] os_acquire_mutex+0x10/0x20 [nvidia]  \n");
	assert_string_equal(f, "os_acquire_mutex");
	free(f);
}

static void stack_frame_is_conservative(void **state)
{
	(void)state;
	/* os_* and rm_* alone, other modules' tags, and a bare "nv_" are not the driver. */
	assert_null(proc_stack_nvidia_frame("[<0>] os_something+0x1/0x2\n[<0>] rm_work+0x1/0x2 [xfs]\n"));
	assert_null(proc_stack_nvidia_frame("[<0>] futex_wait+0x1/0x2\n[<0>] nv_+0x1/0x2\n"));
	assert_null(proc_stack_nvidia_frame("[<0>] foo+0x1/0x2 [nvidia_drm]\n"));
	assert_null(proc_stack_nvidia_frame(""));
	assert_null(proc_stack_nvidia_frame("garbage without brackets\n"));
	assert_true(proc_symbol_is_nvidia("nvidia_ioctl", 12));
	assert_true(proc_symbol_is_nvidia("_nv012345rm", 11));
	assert_true(proc_symbol_is_nvidia("nv_wait_open_complete", 21));
	assert_false(proc_symbol_is_nvidia("nvme_poll", 9));
	assert_false(proc_symbol_is_nvidia("do_poll", 7));
}

static void write_thread(struct fx *f, int tid, char state, const char *wchan, const char *stack)
{
	char rel[64], line[128];
	snprintf(rel, sizeof rel, "task/%d/stat", tid);
	snprintf(line, sizeof line, "%d (py) %c 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", tid, state);
	fx_puts(f->dir, rel, line);
	snprintf(rel, sizeof rel, "task/%d/wchan", tid);
	fx_puts(f->dir, rel, wchan);
	if (stack) {
		snprintf(rel, sizeof rel, "task/%d/stack", tid);
		fx_puts(f->dir, rel, stack);
	}
}

static void waits_prefer_a_d_thread_in_the_driver(void **state)
{
	struct fx *f = *state;
	f->p.pid = 1234;
	fx_puts(f->dir, "wchan", "do_epoll_wait");
	write_thread(f, 1234, 'S', "do_epoll_wait", NULL);
	write_thread(f, 1235, 'S', "nvidia_poll_wait", NULL);
	write_thread(f, 1236, 'D', "0", "[<0>] schedule+0x1/0x2\n[<0>] uvm_spin_loop+0x4f/0x90 [nvidia_uvm]\n");
	write_thread(f, 1237, 'R', "0", "[<0>] _cond_resched+0x1/0x2\n");
	assert_int_equal(proc_read_waits(f->fd, &f->p), 0);
	assert_string_equal(f->p.wchan, "do_epoll_wait");
	assert_string_equal(f->p.driver_wait, "thread 1236 (D) in uvm_spin_loop");
}

static void waits_outside_the_driver_give_none(void **state)
{
	struct fx *f = *state;
	f->p.pid = 1234;
	fx_puts(f->dir, "wchan", "0");
	write_thread(f, 1234, 'R', "0", "[<0>] _cond_resched+0x1/0x2\n");
	write_thread(f, 1235, 'D', "io_schedule", "[<0>] io_schedule+0x1/0x2\n[<0>] folio_wait_bit+0x1/0x2\n");
	f->p.driver_wait = xstrdup("stale");
	assert_int_equal(proc_read_waits(f->fd, &f->p), 0);
	assert_null(f->p.wchan);
	assert_null(f->p.driver_wait);
}

static void status_gives_rss_locked_and_pinned_memory(void **state)
{
	struct fx *f = *state;
	fx_puts(f->dir, "status", "Name:\tpy\nUid:\t0\t0\t0\t0\nVmLck:\t     128 kB\nVmPin:\t    4096 kB\n"
				  "VmRSS:\t  123456 kB\nNSpid:\t7\n");
	assert_int_equal(proc_read_status(f->fd, &f->p), 0);
	assert_int_equal(f->p.vm_rss_kb, 123456);
	assert_int_equal(f->p.vm_lck_kb, 128);
	assert_int_equal(f->p.vm_pin_kb, 4096);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(stat_plain_line_gives_state_ppid_threads_start),
		T(stat_comm_with_close_paren_and_spaces_is_split_at_last_paren),
		T(stat_comm_with_spaces_and_newlines_parses),
		T(stat_comm_of_open_parens_and_empty_comm_parse),
		T(stat_truncated_or_malformed_lines_are_einval),
		T(stat_empty_file_means_the_process_is_gone),
		T(stat_missing_file_is_enoent),
		T(stat_flags_with_pf_kthread_mark_a_kernel_thread),
		T(stat_zombie_leader_keeps_its_thread_count),
		T(stat_large_start_time_is_kept_whole),
		T(status_uid_is_the_real_uid_with_a_name),
		T(status_nspid_with_one_level),
		T(status_nspid_with_two_and_three_levels_outermost_first),
		T(status_nspid_deeper_than_we_record_is_capped),
		T(status_without_nspid_on_old_kernels_leaves_none),
		T(status_missing_file_is_enoent),
		T(cmdline_is_nul_separated_with_the_trailing_nul_trimmed),
		T(cmdline_without_trailing_nul_is_kept_whole),
		T(cmdline_empty_joins_as_bracketed_comm),
		T(cmdline_missing_is_enoent),
		T(environ_variable_is_found_by_exact_name),
		T(environ_variable_unset_or_empty_file_gives_null),
		T(environ_missing_is_enoent),
		T(comm_keeps_spaces_and_strips_only_the_newline),
		cmocka_unit_test(cgroup_docker_cgroupfs_and_systemd_paths),
		cmocka_unit_test(cgroup_containerd_paths),
		cmocka_unit_test(cgroup_crio_and_podman_scopes),
		cmocka_unit_test(cgroup_kubepods_systemd_driver_gives_pod_uid_with_dashes),
		cmocka_unit_test(cgroup_kubepods_cgroupfs_driver),
		cmocka_unit_test(cgroup_lxc_payload_names_the_container),
		cmocka_unit_test(cgroup_plain_host_paths_are_no_container),
		cmocka_unit_test(cgroup_unknown_runtime_with_an_id_is_a_container),
		T(cgroup_file_v2_single_line),
		T(cgroup_file_v1_multi_line_prefers_the_unified_line),
		T(cgroup_file_v1_without_unified_line_takes_the_first),
		T(cgroup_file_path_with_colons_is_kept_whole),
		T(cgroup_file_empty_or_malformed_gives_no_cgroup),
		T(threads_differing_from_a_zombie_leader_are_counted_by_state),
		T(threads_like_the_leader_give_no_summary),
		T(threads_with_unreadable_stat_are_skipped),
		T(threads_without_task_dir_is_enoent),
		cmocka_unit_test(info_of_this_process_through_real_proc),
		cmocka_unit_test(info_of_a_pid_that_does_not_exist_is_esrch),
		T(info_of_a_zombie_leader_reads_cmdline_from_a_live_thread),
		cmocka_unit_test(stack_frame_names_the_innermost_nvidia_function),
		cmocka_unit_test(stack_frame_is_conservative),
		T(waits_prefer_a_d_thread_in_the_driver),
		T(waits_outside_the_driver_give_none),
		T(status_gives_rss_locked_and_pinned_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
