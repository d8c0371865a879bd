/* test_free_act: the checks `gpuwho free --yes` makes right before each signal, on real processes:
 * a child holds a file that stands for a GPU's node, a plan is made from a hand-built snapshot of
 * it, and free_act must signal it only while it is still the planned process and still holds the
 * file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "free/act.h"
#include "free/plan.h"
#include "util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024ULL * 1024ULL)

struct fx {
	char path[64];         /* the file that stands for /dev/nvidia0 */
	pid_t child;
	int cmd;               /* write end: 'c' makes the child close the file */
	int ack;               /* read end: the child says 'c' once it has closed it */
	struct target target;
	struct hold hold;
	struct holder holder;
	struct nvml_proc nproc;
	struct nvml_gpu gpu;
	struct snapshot s;
	struct free_plan plan;
};

/* Forks a child that opens path, says so, then closes it on 'c' and otherwise waits to be killed. */
static void start_child(struct fx *f)
{
	int ready[2], cmd[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(cmd), 0);
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0) {
		close(ready[0]);
		close(cmd[1]);
		int fd = open(f->path, O_RDONLY);
		if (fd < 0 || write(ready[1], "r", 1) != 1)
			_exit(1);
		char c;
		while (read(cmd[0], &c, 1) == 1)
			if (c == 'c') {
				close(fd);
				if (write(ready[1], "c", 1) != 1)
					_exit(1);
			}
		for (;;)
			pause();
	}
	close(ready[1]);
	close(cmd[0]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	f->cmd = cmd[1];
	f->ack = ready[0];
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	snprintf(f->path, sizeof f->path, "/tmp/gpuwho-act.XXXXXX");
	int fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	start_child(f);

	struct stat st;
	assert_int_equal(stat(f->path, &st), 0);
	f->target = (struct target){.path = f->path, .kind = "gpu", .gpu_minor = 0, .ok = true, .dev = st.st_dev,
				    .ino = st.st_ino};
	f->hold = (struct hold){.target = 0, .means = HOLD_FD, .nfd = 1};
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY);
	assert_int_equal(proc_read_info(procfd, f->child, &f->holder.info), 0);
	close(procfd);
	f->holder.holds = &f->hold;
	f->holder.nholds = 1;
	f->nproc = (struct nvml_proc){.pid = (unsigned)f->child, .used_known = true, .used_bytes = 1024 * MIB,
				      .lists = NVML_LIST_COMPUTE};
	f->gpu = (struct nvml_gpu){.index = 0, .minor = 0, .mem_total = 80 * 1024 * MIB, .mem_used = 1100 * MIB,
				   .procs = &f->nproc, .nprocs = 1};
	snprintf(f->gpu.uuid, sizeof f->gpu.uuid, "GPU-0000-act");
	f->s.scan.targets = &f->target;
	f->s.scan.ntargets = 1;
	f->s.scan.holders = &f->holder;
	f->s.scan.nholders = 1;
	f->s.scan.nscanned = 1;
	f->s.host_pidns = true;
	f->s.self_pid = getpid();
	f->s.nvml_asked = true;
	f->s.nvml.loaded = true;
	f->s.nvml.gpus = &f->gpu;
	f->s.nvml.ngpus = 1;

	int self = getpid();
	struct free_plan_opts o = {.uid = geteuid(), .protect = &self, .nprotect = 1};
	const char *sel[] = {"0"};
	char *err = NULL;
	assert_int_equal(free_plan_build(&f->s, sel, 1, &o, &f->plan, &err), 0);
	assert_int_equal(f->plan.nsignal, 1);
	assert_int_equal(f->plan.procs[0].pid, f->child);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	kill(f->child, SIGKILL);
	waitpid(f->child, NULL, 0);
	close(f->cmd);
	close(f->ack);
	free_plan_release(&f->plan);
	proc_info_free(&f->holder.info);
	unlink(f->path);
	free(f);
	return 0;
}

/* True while the child has not exited (it is ours: a dead one stays a zombie until reaped). */
static bool child_alive(pid_t pid)
{
	return waitpid(pid, NULL, WNOHANG) == 0;
}

static enum free_outcome act(struct fx *f)
{
	struct free_act_opts o = {.grace_s = 1, .settle_s = 0, .proc_root = "/proc", .quiet = true};
	struct free_report r;
	free_act(&f->plan, &o, &r);
	enum free_outcome out = r.procs[0].outcome;
	free_report_release(&r);
	return out;
}

static void a_target_that_still_holds_the_gpu_is_signalled(void **state)
{
	struct fx *f = *state;
	assert_int_equal(act(f), FREE_OUT_TERM);
	assert_false(child_alive(f->child));
}

static void a_target_that_closed_its_gpu_files_before_the_signal_is_not_signalled(void **state)
{
	struct fx *f = *state;
	char c;
	assert_int_equal(write(f->cmd, "c", 1), 1);
	assert_int_equal(read(f->ack, &c, 1), 1);   /* closed */
	assert_int_equal(act(f), FREE_OUT_NO_LONGER);
	assert_true(child_alive(f->child));
}

static void a_pid_whose_start_time_differs_is_not_signalled(void **state)
{
	struct fx *f = *state;
	f->holder.info.start_ticks -= 1;   /* the planned process "exited and its PID was taken" */
	assert_int_equal(act(f), FREE_OUT_REUSED);
	assert_true(child_alive(f->child));
}

static void a_process_with_another_name_is_not_signalled(void **state)
{
	struct fx *f = *state;
	free(f->holder.info.comm);
	f->holder.info.comm = xstrdup("python3");   /* it exec'd since the plan */
	assert_int_equal(act(f), FREE_OUT_CHANGED);
	assert_true(child_alive(f->child));
}

static void a_planned_process_without_a_name_is_never_signalled(void **state)
{
	struct fx *f = *state;
	free(f->holder.info.comm);
	f->holder.info.comm = NULL;   /* unreadable when planned: nothing to confirm its identity by */
	assert_int_equal(act(f), FREE_OUT_CHANGED);
	assert_true(child_alive(f->child));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_target_that_still_holds_the_gpu_is_signalled, setup, teardown),
		cmocka_unit_test_setup_teardown(a_target_that_closed_its_gpu_files_before_the_signal_is_not_signalled,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_pid_whose_start_time_differs_is_not_signalled, setup, teardown),
		cmocka_unit_test_setup_teardown(a_process_with_another_name_is_not_signalled, setup, teardown),
		cmocka_unit_test_setup_teardown(a_planned_process_without_a_name_is_never_signalled, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
