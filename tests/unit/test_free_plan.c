/* test_free_plan: whom `gpuwho free` signals and whom it spares, on hand-built snapshots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "free/plan.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)

/* Two GPU nodes, nvidiactl and nvidia-uvm; processes are added as holders (of targets) or others. */
struct world {
	struct target targets[4];
	struct hold holds[64];
	size_t nholds;
	struct holder holders[32];
	struct proc_info others[32];
	char cmd[64][160];
	size_t ncmd;
	struct nvml_proc procs[2][16];
	struct nvml_gpu gpus[2];
	int ancestors[2];
	struct shm_segment shm[3];
	int shm_holder;
	struct snapshot s;
};

enum { T_GPU0, T_GPU1, T_CTL, T_UVM };
enum { ROOT = 0, ALICE = 1000 };

static void world_init(struct world *w)
{
	memset(w, 0, sizeof *w);
	w->targets[T_GPU0] = (struct target){.path = "/dev/nvidia0", .kind = "gpu", .gpu_minor = 0, .ok = true};
	w->targets[T_GPU1] = (struct target){.path = "/dev/nvidia1", .kind = "gpu", .gpu_minor = 1, .ok = true};
	w->targets[T_CTL] = (struct target){.path = "/dev/nvidiactl", .kind = "ctl", .gpu_minor = -1, .ok = true};
	w->targets[T_UVM] = (struct target){.path = "/dev/nvidia-uvm", .kind = "uvm", .gpu_minor = -1, .ok = true};
	struct snapshot *s = &w->s;
	s->scan.targets = w->targets;
	s->scan.ntargets = 4;
	s->scan.holders = w->holders;
	s->scan.nscanned = 100;
	s->host_pidns = true;
	s->self_pid = 9000;
	w->ancestors[0] = 8999;   /* gpuwho's shell */
	w->ancestors[1] = 1;
	s->self_ancestors = w->ancestors;
	s->nself_ancestors = 2;
	s->others = w->others;
	s->nvml_asked = true;
	s->nvml.loaded = true;
	s->nvml.gpus = w->gpus;
	s->nvml.ngpus = 2;
	for (int i = 0; i < 2; i++) {
		struct nvml_gpu *g = &w->gpus[i];
		g->index = (unsigned)i;
		g->minor = i;
		snprintf(g->uuid, sizeof g->uuid, "GPU-%d%d%d%d-aaaa", i, i, i, i);
		g->mem_total = 143771 * MIB;
		g->procs = w->procs[i];
	}
}

/* Fills a proc_info; cmd is the command line with spaces between arguments. */
static void fill(struct world *w, struct proc_info *p, int pid, int ppid, unsigned uid, const char *comm,
		 const char *cmd)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->ppid = ppid;
	p->uid = uid;
	p->user = uid ? "alice" : "root";
	p->state = 'S';
	p->nthreads = 1;
	p->start_ticks = 1000 + (unsigned long long)pid;
	p->comm = (char *)comm;
	char *c = w->cmd[w->ncmd++];
	snprintf(c, sizeof w->cmd[0], "%s", cmd);
	p->cmdline_len = strlen(c);
	for (char *x = c; *x; x++)
		if (*x == ' ')
			*x = '\0';
	p->cmdline = c;
}

/* A holder of up to two targets (-1: none); with `cuda`, a CUDA context as an H200 shows one: the
 * GPU nodes mapped as well as open, and /dev/nvidia-uvm held. Pids in increasing order. */
static struct proc_info *holder_of(struct world *w, int pid, int ppid, unsigned uid, const char *comm, const char *cmd,
				   int t0, int t1, bool cuda)
{
	struct holder *h = &w->holders[w->s.scan.nholders++];
	memset(h, 0, sizeof *h);
	fill(w, &h->info, pid, ppid, uid, comm, cmd);
	h->holds = &w->holds[w->nholds];
	int ts[3] = {t0, t1, cuda ? T_UVM : -1};
	for (int i = 0; i < 3; i++)
		if (ts[i] >= 0) {
			bool node = ts[i] == T_GPU0 || ts[i] == T_GPU1;
			w->holds[w->nholds++] = (struct hold){.target = (size_t)ts[i], .nfd = 1, .nmap = cuda && node,
							      .means = HOLD_FD | (cuda && node ? HOLD_MMAP : 0)};
			h->nholds++;
		}
	return &h->info;
}

/* A CUDA process holding up to two targets besides /dev/nvidia-uvm when it holds a GPU node. */
static struct proc_info *holder(struct world *w, int pid, int ppid, unsigned uid, const char *comm, const char *cmd,
				int t0, int t1)
{
	bool gpu = t0 == T_GPU0 || t0 == T_GPU1 || t1 == T_GPU0 || t1 == T_GPU1;
	return holder_of(w, pid, ppid, uid, comm, cmd, t0, t1, gpu);
}

/* A process that holds nothing (an ancestor); pids in increasing order. */
static struct proc_info *other(struct world *w, int pid, int ppid, unsigned uid, const char *comm, const char *cmd)
{
	struct proc_info *p = &w->others[w->s.nothers++];
	fill(w, p, pid, ppid, uid, comm, cmd);
	return p;
}

static void nvml(struct world *w, int gpu, unsigned pid, long long mib)
{
	struct nvml_gpu *g = &w->gpus[gpu];
	g->procs[g->nprocs++] = (struct nvml_proc){.pid = pid, .used_known = mib >= 0,
						   .used_bytes = mib >= 0 ? (unsigned long long)mib * MIB : 0,
						   .lists = NVML_LIST_COMPUTE};
	g->mem_used += mib >= 0 ? (unsigned long long)mib * MIB : 0;
}

static const struct free_proc *find(const struct free_plan *p, int pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	return NULL;
}

static bool signalled(const struct free_plan *p, int pid)
{
	const struct free_proc *f = find(p, pid);
	return f && f->skip == FREE_SIGNAL;
}

static void build(struct world *w, const char *sel, const struct free_plan_opts *o, struct free_plan *p)
{
	struct free_plan_opts def = {.uid = ROOT};
	char *err = NULL;
	const char *sels[1] = {sel};
	int r = free_plan_build(&w->s, sels, 1, o ? o : &def, p, &err);
	if (r != 0)
		fail_msg("free_plan_build: %s", err);
	/* the signalled ones come first, and nsignal counts them */
	for (size_t i = 0; i < p->nprocs; i++)
		assert_int_equal(p->procs[i].skip == FREE_SIGNAL, i < p->nsignal);
}

static void test_a_launcher_and_its_workers_are_one_job_and_the_interactive_shell_is_not(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	other(&w, 1, 0, ROOT, "systemd", "/sbin/init");
	other(&w, 40, 1, ROOT, "sshd", "sshd: root@pts/0");
	other(&w, 50, 40, ROOT, "bash", "-bash");
	other(&w, 100, 50, ROOT, "sh", "sh -c python -m sglang.launch_server --tp 2");
	holder(&w, 101, 100, ROOT, "python3", "python3 -m sglang.launch_server --tp 2", T_GPU0, T_CTL);
	holder(&w, 102, 100, ROOT, "python3", "python3 -m sglang.launch_server --tp 2", T_GPU0, T_CTL);
	holder(&w, 103, 100, ROOT, "python3", "python3 tokenizer", T_CTL, -1);   /* control node only: no CUDA context */
	holder(&w, 104, 50, ROOT, "python3", "python3 other.py", T_GPU1, -1);    /* another job, on GPU 1 */
	nvml(&w, 0, 101, 40000);
	nvml(&w, 0, 102, 40000);
	nvml(&w, 1, 104, 1000);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_int_equal(p.ngpus, 1);
	assert_true(signalled(&p, 101) && signalled(&p, 102));
	assert_int_equal(find(&p, 101)->role, FREE_ROLE_HOLDER);
	assert_true(signalled(&p, 100));
	assert_int_equal(find(&p, 100)->role, FREE_ROLE_LAUNCHER);
	/* In the job by its parent chain, but with no CUDA context: an NVML client, spared as a monitor
	 * (its launcher's SIGTERM reaches it anyway). */
	assert_int_equal(find(&p, 103)->skip, FREE_SKIP_MONITOR);
	assert_int_equal(find(&p, 103)->role, FREE_ROLE_PEER);
	assert_int_equal(find(&p, 101)->job_root, 100);
	assert_int_equal(find(&p, 103)->job_root, 100);
	assert_null(find(&p, 50));   /* the login shell the job was typed into */
	assert_null(find(&p, 40));
	assert_null(find(&p, 1));
	assert_null(find(&p, 104));  /* GPU 1's job is not touched */
	assert_int_equal(p.nsignal, 3);
	assert_int_equal(p.gpus[0].expect_back, 80000 * MIB);
	assert_false(p.gpus[0].expect_partial);
	assert_int_equal(p.gpus[0].nsignal, 2);
	free_plan_release(&p);
}

static void test_workers_reparented_to_pid_1_are_signalled_and_pid_1_never(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 1, 0, ROOT, "python3", "python3 serve.py", T_GPU0, -1);   /* a container's main process */
	holder(&w, 201, 1, ROOT, "python3", "python3 worker", T_GPU0, -1);
	holder(&w, 202, 1, ROOT, "python3", "python3 worker", T_GPU0, -1);
	nvml(&w, 0, 1, 100);
	nvml(&w, 0, 201, 2048);
	nvml(&w, 0, 202, 2048);
	struct free_plan p;
	build(&w, "/dev/nvidia0", NULL, &p);
	assert_true(signalled(&p, 201) && signalled(&p, 202));
	assert_int_equal(find(&p, 201)->job_root, 201);   /* nothing above but PID 1 */
	assert_int_equal(find(&p, 1)->skip, FREE_SKIP_PID1);
	assert_non_null(strstr(find(&p, 1)->skip_why, "PID 1"));
	assert_int_equal(p.nsignal, 2);
	assert_int_equal(p.gpus[0].expect_back, 4096 * MIB);
	assert_true(p.gpus[0].expect_partial);   /* PID 1's 100 MiB stays */
	free_plan_release(&p);
}

static void test_system_gpu_daemons_are_protected_unless_included(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 300, 1, ROOT, "nvidia-persiste", "/usr/bin/nvidia-persistenced --user nvidia-persistenced", T_GPU0,
	       T_GPU1);
	holder(&w, 301, 1, ROOT, "Xorg", "/usr/lib/xorg/Xorg :0", T_GPU0, -1);
	holder(&w, 302, 1, ROOT, "dcgm-exporter", "/usr/bin/dcgm-exporter", T_GPU0, -1);
	holder(&w, 303, 1, ROOT, "nv-hostengine", "nv-hostengine -n", T_GPU0, -1);
	holder_of(&w, 304, 1, ROOT, "nvidia-smi", "nvidia-smi -l 1", T_GPU0, -1, false);   /* a monitor */
	nvml(&w, 0, 301, 30);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	for (int pid = 300; pid <= 304; pid++)
		assert_int_equal(find(&p, pid)->skip, FREE_SKIP_PROTECTED);
	assert_non_null(strstr(find(&p, 300)->skip_why, "--include nvidia-persistenced"));
	free_plan_release(&p);

	const char *inc[] = {"nvidia-persistenced", "dcgm*"};
	struct free_plan_opts o = {.uid = ROOT, .include = inc, .ninclude = 2};
	build(&w, "0", &o, &p);
	assert_true(signalled(&p, 300));
	assert_true(signalled(&p, 302));
	assert_int_equal(find(&p, 301)->skip, FREE_SKIP_PROTECTED);
	free_plan_release(&p);
	assert_string_equal(free_protected_name(&w.holders[0].info), "nvidia-persistenced");
}

static void test_gpuwho_and_its_ancestors_are_never_signalled_nor_walked_into(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 500, 8999, ROOT, "python3", "python3 job.py", T_GPU0, -1);   /* started from gpuwho's shell */
	other(&w, 8999, 1, ROOT, "sh", "sh -c ./run.sh");                       /* a script, but ours */
	holder(&w, 9000, 8999, ROOT, "gpuwho", "gpuwho free 0", T_GPU0, -1);
	holder(&w, 9100, 1, ROOT, "python3", "python3 acting-parent.py", T_GPU0, -1);
	nvml(&w, 0, 500, 1000);
	int protect[] = {9100};
	struct free_plan_opts o = {.uid = ROOT, .protect = protect, .nprotect = 1};
	struct free_plan p;
	build(&w, "0", &o, &p);
	assert_true(signalled(&p, 500));
	assert_int_equal(find(&p, 500)->job_root, 500);
	assert_null(find(&p, 8999));
	assert_int_equal(find(&p, 9000)->skip, FREE_SKIP_SELF);
	assert_int_equal(find(&p, 9100)->skip, FREE_SKIP_SELF);
	free_plan_release(&p);
}

static void test_other_users_need_all_users_and_root(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 600, 1, ALICE, "python3", "python3 train.py", T_GPU0, -1);
	holder(&w, 601, 1, ROOT, "python3", "python3 serve.py", T_GPU0, -1);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_int_equal(find(&p, 600)->skip, FREE_SKIP_OTHER_USER);
	assert_non_null(strstr(find(&p, 600)->skip_why, "--all-users"));
	assert_true(signalled(&p, 601));
	free_plan_release(&p);

	struct free_plan_opts o = {.uid = ROOT, .all_users = true};
	build(&w, "0", &o, &p);
	assert_true(signalled(&p, 600) && signalled(&p, 601));
	free_plan_release(&p);

	/* Not root: --all-users cannot help, and root's processes are another user's too. */
	struct free_plan_opts alice = {.uid = ALICE, .all_users = true};
	build(&w, "0", &alice, &p);
	assert_true(signalled(&p, 600));
	assert_int_equal(find(&p, 601)->skip, FREE_SKIP_OTHER_USER);
	assert_non_null(strstr(find(&p, 601)->skip_why, "only root"));
	free_plan_release(&p);
}

static void test_a_job_that_also_uses_a_gpu_not_selected_spills_unless_asked(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	other(&w, 50, 1, ROOT, "bash", "bash");
	other(&w, 700, 50, ROOT, "torchrun", "torchrun --nproc-per-node 2 train.py");
	holder(&w, 701, 700, ROOT, "python3", "python3 train.py", T_GPU0, T_GPU1);   /* rank 0 */
	holder(&w, 702, 700, ROOT, "python3", "python3 train.py", T_GPU1, T_GPU0);   /* rank 1 */
	holder(&w, 710, 1, ROOT, "python3", "python3 both.py", T_GPU0, T_GPU1);
	nvml(&w, 0, 701, 1000);
	nvml(&w, 1, 702, 1000);
	nvml(&w, 0, 710, 500);
	nvml(&w, 1, 710, 500);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	/* rank 0 only holds GPU 1's node (CUDA opens every node): not a spill */
	assert_true(signalled(&p, 701));
	assert_int_equal(find(&p, 702)->skip, FREE_SKIP_SPILL);   /* device only on GPU 0, memory on 1 */
	assert_int_equal(find(&p, 700)->skip, FREE_SKIP_SPILL);   /* its launcher would end rank 1 too */
	assert_non_null(strstr(find(&p, 700)->skip_why, "--spill"));
	assert_int_equal(find(&p, 710)->skip, FREE_SKIP_SPILL);
	assert_non_null(strstr(find(&p, 710)->skip_why, "GPU 1"));
	assert_true(p.gpus[0].expect_partial);
	assert_int_equal(p.gpus[0].expect_back, 1000 * MIB);
	free_plan_release(&p);

	struct free_plan_opts o = {.uid = ROOT, .spill = true};
	build(&w, "0", &o, &p);
	assert_true(signalled(&p, 700) && signalled(&p, 701) && signalled(&p, 702) && signalled(&p, 710));
	assert_null(find(&p, 50));
	free_plan_release(&p);
}

static void test_outside_the_namespace_rows_are_reported_with_advice(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	w.s.host_pidns = false;
	holder(&w, 12, 1, ROOT, "python3", "python3 local.py", T_GPU0, -1);
	nvml(&w, 0, 4242, 96413);   /* a host PID this /proc cannot see */
	struct free_plan p;
	build(&w, "0", NULL, &p);
	const struct free_proc *f = find(&p, 4242);
	assert_non_null(f);
	assert_int_equal(f->role, FREE_ROLE_OUTSIDE);
	assert_int_equal(f->skip, FREE_SKIP_OUTSIDE);
	assert_int_equal(f->used_bytes, 96413 * MIB);
	assert_non_null(strstr(f->skip_why, "run gpuwho free on the host"));
	assert_true(signalled(&p, 12));   /* UNMATCHED: ours to signal */
	bool noted = false;
	for (size_t i = 0; i < p.nnotes; i++)
		noted = noted || strstr(p.notes[i], "child PID namespace");
	assert_true(noted);
	assert_true(p.gpus[0].expect_partial);
	free_plan_release(&p);
}

static void test_an_exited_creator_is_reported_and_its_heirs_signalled(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 5151, 1, ROOT, "python3", "python3 child", T_GPU1, -1);
	nvml(&w, 1, 4242, 3590);
	struct free_plan p;
	build(&w, "1", NULL, &p);
	assert_true(signalled(&p, 5151));
	assert_int_equal(find(&p, 4242)->skip, FREE_SKIP_EXITED);
	assert_int_equal(p.gpus[0].expect_back, 3590 * MIB);   /* the heirs are all signalled */
	assert_false(p.gpus[0].expect_partial);
	free_plan_release(&p);
}

static void test_zombie_leader_with_live_threads_is_signalled_a_plain_zombie_is_not(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	struct proc_info *z = holder(&w, 800, 1, ROOT, "python3", "", T_GPU0, -1);
	z->state = 'Z';
	z->nthreads = 4;
	w.holds[w.nholds - 1].means = HOLD_THREAD;
	w.holds[w.nholds - 1].via_tid = 803;
	struct proc_info *d = other(&w, 850, 1, ROOT, "python3", "");
	d->state = 'Z';
	nvml(&w, 0, 800, 2566);
	nvml(&w, 0, 850, 10);
	struct proc_info *st = holder(&w, 860, 1, ROOT, "python3", "python3 stopped.py", T_GPU0, -1);
	st->state = 'T';
	struct proc_info *k = holder(&w, 870, 2, ROOT, "kworker/0:1", "", T_GPU0, -1);
	k->kthread = true;
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 800));
	assert_int_equal(find(&p, 850)->skip, FREE_SKIP_ZOMBIE);
	assert_non_null(strstr(find(&p, 850)->skip_why, "parent (PID 1)"));
	assert_true(signalled(&p, 860));
	assert_true(find(&p, 860)->stopped);
	assert_int_equal(find(&p, 870)->skip, FREE_SKIP_KTHREAD);
	free_plan_release(&p);
}

static void test_a_bad_selector_is_an_error_naming_it(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	struct free_plan p;
	struct free_plan_opts o = {.uid = ROOT};
	char *err = NULL;
	const char *sels[] = {"0", "7"};
	assert_int_equal(free_plan_build(&w.s, sels, 2, &o, &p, &err), -1);
	assert_non_null(strstr(err, "no GPU matches '7'"));
	free(err);
	free_plan_release(&p);
	const char *uuid[] = {"GPU-1111"};
	assert_int_equal(free_plan_build(&w.s, uuid, 1, &o, &p, &err), 0);
	assert_int_equal(p.ngpus, 1);
	assert_int_equal(p.acct.gpus[p.gpus[0].slot].index, 1);
	assert_int_equal(p.nprocs, 0);
	free_plan_release(&p);
}

static void test_shm_plans_only_unheld_segments_of_dead_creators(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	w.shm_holder = 77;
	w.shm[0] = (struct shm_segment){.name = "torch_111_0", .creator_pid = 111, .bytes = 1 << 20};
	w.shm[1] = (struct shm_segment){.name = "torch_222_0", .creator_pid = 222, .creator_alive = true};
	w.shm[2] = (struct shm_segment){.name = "torch_333_0", .creator_pid = 333, .holders = &w.shm_holder,
					.nholders = 1};
	w.s.shm = w.shm;
	w.s.nshm = 3;
	struct free_plan_opts o = {.uid = ROOT, .shm = true};
	struct free_plan p;
	build(&w, "0", &o, &p);
	assert_int_equal(p.nshm, 2);
	assert_true(p.shm[0].remove);
	assert_string_equal(p.shm[0].seg->name, "torch_111_0");
	assert_false(p.shm[1].remove);
	assert_non_null(strstr(p.shm[1].why, "PID 77 still holds it"));
	free_plan_release(&p);
	build(&w, "0", NULL, &p);
	assert_int_equal(p.nshm, 0);
	free_plan_release(&p);
}

static void test_the_walk_stops_at_other_users_and_services(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	other(&w, 60, 1, ROOT, "containerd-shim", "/usr/bin/containerd-shim-runc-v2 -namespace moby");
	other(&w, 61, 60, ROOT, "python3", "python3 -m vllm.entrypoints.openai.api_server");
	other(&w, 70, 1, ALICE, "sudo", "sudo python3 x.py");
	other(&w, 80, 1, ROOT, "jupyter-lab", "/usr/bin/python3 /usr/local/bin/jupyter-lab");
	holder(&w, 610, 61, ROOT, "python3", "python3 EngineCore", T_GPU0, -1);
	holder(&w, 710, 70, ROOT, "python3", "python3 x.py", T_GPU0, -1);
	holder(&w, 810, 80, ROOT, "python3", "python3 -m ipykernel_launcher", T_GPU0, -1);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 61));              /* the API server: the job's root */
	assert_int_equal(find(&p, 610)->job_root, 61);
	assert_null(find(&p, 60));                   /* the container runtime's shim */
	assert_null(find(&p, 70));                   /* sudo (another user) */
	assert_null(find(&p, 80));                   /* the notebook server */
	assert_int_equal(find(&p, 810)->job_root, 810);
	free_plan_release(&p);
}

static void test_the_walk_takes_a_launching_script_but_not_what_started_it(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	/* make -> sh -c (recipe) -> bash run.sh -> python3 launcher -> 2 workers, as in a CI job. */
	other(&w, 90, 1, ROOT, "make", "make experiments");
	other(&w, 91, 90, ROOT, "sh", "/bin/sh -c ./run.sh");
	other(&w, 92, 91, ROOT, "bash", "bash ./run.sh");
	other(&w, 93, 92, ROOT, "python3", "python3 -m sglang.launch_server --tp 2");
	holder(&w, 930, 93, ROOT, "sglang::schedul", "sglang::scheduler_TP0", T_GPU0, -1);
	holder(&w, 931, 93, ROOT, "sglang::schedul", "sglang::scheduler_TP1", T_GPU0, -1);
	/* timeout -> a worker: timeout is neither a GPU process nor a launcher. */
	other(&w, 95, 1, ROOT, "timeout", "timeout 600 ./worker");
	holder(&w, 950, 95, ROOT, "worker", "./worker", T_GPU0, -1);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 93));              /* the Python launcher */
	assert_true(signalled(&p, 92));              /* the script that started it: the job's root */
	assert_int_equal(find(&p, 930)->job_root, 92);
	assert_null(find(&p, 91));                   /* above a shell: not the job */
	assert_null(find(&p, 90));                   /* make */
	assert_null(find(&p, 95));                   /* timeout */
	assert_int_equal(find(&p, 950)->job_root, 950);
	free_plan_release(&p);
}

/* A PID NVML lists that holds no NVIDIA file (what a reused PID looks like) is never a target. */
static void test_an_nvml_pid_holding_no_nvidia_file_is_spared_for_lack_of_evidence(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 700, 1, ROOT, "python3", "python3 train.py", T_GPU0, T_CTL);
	other(&w, 710, 1, ROOT, "sshd", "/usr/sbin/sshd -D");   /* took a PID NVML still names */
	nvml(&w, 0, 700, 4096);
	nvml(&w, 0, 710, 1024);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 700));
	assert_int_equal(find(&p, 710)->skip, FREE_SKIP_NO_EVIDENCE);
	assert_non_null(strstr(find(&p, 710)->skip_why, "holds no NVIDIA device file"));
	assert_non_null(strstr(find(&p, 710)->skip_why, "--include 710"));
	assert_true(p.gpus[0].expect_partial);
	free_plan_release(&p);

	const char *inc[] = {"710"};
	struct free_plan_opts o = {.uid = ROOT, .include = inc, .ninclude = 1};
	build(&w, "0", &o, &p);
	assert_true(signalled(&p, 710));
	free_plan_release(&p);
}

/* After the creator exited, only processes with evidence of descent are its heirs: a CUDA context,
 * or its PID as their process group; a process that merely holds the node is a monitor. */
static void test_heirs_need_a_cuda_context_or_the_exited_pid_as_group_and_monitors_are_spared(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder(&w, 5151, 1, ROOT, "python3", "python3 child", T_GPU0, -1);                 /* node + uvm */
	struct proc_info *g = holder_of(&w, 5152, 1, ROOT, "python3", "python3 child2", T_GPU0, -1, false);
	g->pgid = 4242;                                                                     /* the exited PID's group */
	holder_of(&w, 5160, 1, ROOT, "nvitop", "nvitop", T_GPU0, T_CTL, false);            /* a monitor by name */
	holder_of(&w, 5161, 1, ROOT, "sleep", "sleep 1000", T_GPU0, -1, false);            /* a monitor by evidence */
	holder_of(&w, 5162, 1, ROOT, "python3", "python3 exporter.py", T_GPU0, T_UVM, false); /* an NVML client:
											    * node and uvm by fd */
	nvml(&w, 0, 4242, 3590);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 5151));
	assert_true(signalled(&p, 5152));
	const struct free_proc *h = find(&p, 5152);
	bool pg = false;
	for (size_t i = 0; i < h->nevidence; i++)
		pg |= strstr(h->evidence[i], "pgid 4242") != NULL;
	assert_true(pg);
	assert_int_equal(find(&p, 5160)->skip, FREE_SKIP_PROTECTED);
	assert_int_equal(find(&p, 5161)->skip, FREE_SKIP_MONITOR);
	assert_non_null(strstr(find(&p, 5161)->skip_why, "--include 5161"));
	assert_int_equal(find(&p, 5162)->skip, FREE_SKIP_MONITOR);
	free_plan_release(&p);
}

/* With MPS, the clients are ended and the daemons, which serve every client, are not. */
static void test_mps_clients_are_signalled_and_the_mps_daemons_spared(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	holder_of(&w, 756, 1, ROOT, "nvidia-cuda-mps", "nvidia-cuda-mps-control -d", T_GPU0, T_CTL, false);
	holder(&w, 759, 428, ROOT, "cuda_holder", "./cuda_holder c.ready 1024", T_GPU0, T_CTL);
	holder(&w, 763, 756, ROOT, "nvidia-cuda-mps", "nvidia-cuda-mps-server", T_GPU0, T_CTL);
	other(&w, 428, 1, ROOT, "bash", "bash run.sh");
	nvml(&w, 0, 759, 1540);
	nvml(&w, 0, 763, 66);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	assert_true(signalled(&p, 759));
	assert_int_equal(find(&p, 756)->skip, FREE_SKIP_PROTECTED);
	assert_int_equal(find(&p, 763)->skip, FREE_SKIP_PROTECTED);
	assert_non_null(strstr(find(&p, 763)->skip_why, "nvidia-cuda-mps-server"));   /* its own name, by argv[0] */
	assert_int_equal(p.mps_control, 756);
	free_plan_release(&p);
}

/* Every target carries the facts that made it one, and what act must find it still holding. */
static void test_each_target_names_its_evidence(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	other(&w, 100, 1, ROOT, "python3", "python3 launch.py");
	holder(&w, 101, 100, ROOT, "python3", "python3 worker", T_GPU0, -1);
	nvml(&w, 0, 101, 40000);
	struct free_plan p;
	build(&w, "0", NULL, &p);
	const struct free_proc *h = find(&p, 101), *l = find(&p, 100);
	assert_int_equal(h->nevidence, 4);
	assert_string_equal(h->evidence[0], "holds /dev/nvidia0 (fd+mmap)");
	assert_string_equal(h->evidence[1], "holds /dev/nvidia-uvm (fd)");
	assert_string_equal(h->evidence[2], "NVML lists it on GPU 0 with 40,000 MiB");
	assert_string_equal(h->evidence[3], "a CUDA context: it maps the GPU's device file and holds /dev/nvidia-uvm");
	assert_int_equal(h->nheld, 2);
	assert_int_equal(l->role, FREE_ROLE_LAUNCHER);
	assert_int_equal(l->nheld, 0);
	assert_non_null(strstr(l->evidence[0], "an ancestor of PID 101"));
	free_plan_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_launcher_and_its_workers_are_one_job_and_the_interactive_shell_is_not),
		cmocka_unit_test(test_workers_reparented_to_pid_1_are_signalled_and_pid_1_never),
		cmocka_unit_test(test_system_gpu_daemons_are_protected_unless_included),
		cmocka_unit_test(test_gpuwho_and_its_ancestors_are_never_signalled_nor_walked_into),
		cmocka_unit_test(test_other_users_need_all_users_and_root),
		cmocka_unit_test(test_a_job_that_also_uses_a_gpu_not_selected_spills_unless_asked),
		cmocka_unit_test(test_outside_the_namespace_rows_are_reported_with_advice),
		cmocka_unit_test(test_an_exited_creator_is_reported_and_its_heirs_signalled),
		cmocka_unit_test(test_zombie_leader_with_live_threads_is_signalled_a_plain_zombie_is_not),
		cmocka_unit_test(test_a_bad_selector_is_an_error_naming_it),
		cmocka_unit_test(test_shm_plans_only_unheld_segments_of_dead_creators),
		cmocka_unit_test(test_the_walk_stops_at_other_users_and_services),
		cmocka_unit_test(test_the_walk_takes_a_launching_script_but_not_what_started_it),
		cmocka_unit_test(test_an_nvml_pid_holding_no_nvidia_file_is_spared_for_lack_of_evidence),
		cmocka_unit_test(test_heirs_need_a_cuda_context_or_the_exited_pid_as_group_and_monitors_are_spared),
		cmocka_unit_test(test_mps_clients_are_signalled_and_the_mps_daemons_spared),
		cmocka_unit_test(test_each_target_names_its_evidence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
