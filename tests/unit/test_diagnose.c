/* test_diagnose: one hand-built snapshot per verdict of `gpuwho why`, the seed's container case,
 * and the cases that must not be called a problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "diagnose/diagnose.h"
#include "render/render.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024ULL * 1024ULL)
#define NGPU_MAX 8

/* A host of up to 8 GPUs (/dev/nvidia0..7), nvidiactl and nvidia-uvm, built fresh by each test. */
struct world {
	struct snapshot s;
	struct target targets[NGPU_MAX + 2];
	struct hold holds[64];
	size_t nholds_used;
	struct holder holders[16];
	struct nvml_gpu gpus[NGPU_MAX];
	struct nvml_proc procs[NGPU_MAX][8];
	struct proc_info others[8];
	struct mount_hit mounts[NGPU_MAX + 2];
	struct unseen denied[2];
	struct shm_segment shm[8];
	unsigned long long resample_used[NGPU_MAX];
	bool resample_ok[NGPU_MAX];
	int ngpus;
};

static char paths[NGPU_MAX][32];

static int t_ctl(const struct world *w)
{
	return w->ngpus;
}

static void world_init(struct world *w, int ngpus, bool host)
{
	memset(w, 0, sizeof *w);
	w->ngpus = ngpus;
	for (int i = 0; i < ngpus; i++) {
		snprintf(paths[i], sizeof paths[i], "/dev/nvidia%d", i);
		w->targets[i] = (struct target){.path = paths[i], .kind = "gpu", .gpu_minor = i, .ok = true};
		struct nvml_gpu *g = &w->gpus[i];
		g->index = (unsigned)i;
		g->minor = i;
		snprintf(g->uuid, sizeof g->uuid, "GPU-%d%d%d%d-aaaa", i, i, i, i);
		snprintf(g->name, sizeof g->name, "NVIDIA H200");
		snprintf(g->bus_id, sizeof g->bus_id, "0000:%02x:00.0", 0x18 + i);
		g->mem_total = 143771 * MIB;
		g->mem_used = 0;
		g->procs = w->procs[i];
		g->persistence_rc = g->mig_rc = g->retired_rc = g->remap_rc = g->ecc_rc = NVML_E_NOT_SUPPORTED;
	}
	w->targets[ngpus] = (struct target){.path = "/dev/nvidiactl", .kind = "ctl", .gpu_minor = -1, .ok = true};
	w->targets[ngpus + 1] = (struct target){.path = "/dev/nvidia-uvm", .kind = "uvm", .gpu_minor = -1, .ok = true};
	struct snapshot *s = &w->s;
	s->schema_version = SNAPSHOT_SCHEMA_VERSION;
	s->host_pidns = host;
	s->scan.targets = w->targets;
	s->scan.ntargets = (size_t)ngpus + 2;
	s->scan.holders = w->holders;
	s->scan.nscanned = 400;
	s->nvml_asked = true;
	s->nvml.loaded = true;
	s->nvml.gpus = w->gpus;
	s->nvml.ngpus = (size_t)ngpus;
	s->others = w->others;
	s->shm = w->shm;
}

/* Adds a holder of GPU node `gpu` (and nvidiactl); gpu -1: nvidiactl only. Add pids in increasing order. */
static struct holder *add_holder(struct world *w, int pid, int ppid, char state, const char *comm, const char *cmdline,
				 int gpu)
{
	struct holder *h = &w->holders[w->s.scan.nholders++];
	memset(h, 0, sizeof *h);
	h->info = (struct proc_info){.pid = pid, .ppid = ppid, .state = state, .nthreads = 1, .user = "root",
				     .comm = (char *)comm, .cmdline = (char *)cmdline,
				     .cmdline_len = cmdline ? strlen(cmdline) : 0, .nnspid = 1};
	h->info.nspid[0] = pid;
	h->holds = &w->holds[w->nholds_used];
	if (gpu >= 0) {
		w->holds[w->nholds_used++] = (struct hold){.target = (size_t)gpu, .means = HOLD_FD | HOLD_MMAP, .nfd = 20};
		h->nholds++;
	}
	w->holds[w->nholds_used++] = (struct hold){.target = (size_t)t_ctl(w), .means = HOLD_FD, .nfd = 2};
	h->nholds++;
	return h;
}

/* Adds a process that holds nothing (an ancestor, a zombie's parent). Add pids in increasing order. */
static struct proc_info *add_other(struct world *w, int pid, int ppid, char state, const char *comm,
				   const char *cmdline)
{
	struct proc_info *p = &w->others[w->s.nothers++];
	*p = (struct proc_info){.pid = pid, .ppid = ppid, .state = state, .nthreads = 1, .comm = (char *)comm,
				.cmdline = (char *)cmdline, .cmdline_len = cmdline ? strlen(cmdline) : 0, .nnspid = 1};
	p->nspid[0] = pid;
	return p;
}

static void add_nvml(struct world *w, int gpu, unsigned pid, unsigned long long mib)
{
	struct nvml_gpu *g = &w->gpus[gpu];
	g->procs[g->nprocs++] = (struct nvml_proc){.pid = pid, .used_known = true, .used_bytes = mib * MIB,
						   .lists = NVML_LIST_COMPUTE};
	g->mem_used += mib * MIB;
}

static const struct finding *find(const struct diagnosis *d, const char *verdict, int gpu)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (!strcmp(d->findings[i].verdict, verdict) && d->findings[i].gpu == gpu)
			return &d->findings[i];
	return NULL;
}

static size_t count(const struct diagnosis *d, const char *verdict)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nfindings; i++)
		n += !strcmp(d->findings[i].verdict, verdict);
	return n;
}

static bool evidence_has(const struct finding *f, const char *needle)
{
	for (size_t i = 0; i < f->nevidence; i++)
		if (strstr(f->evidence[i], needle))
			return true;
	return false;
}

static bool has_pid(const struct finding *f, int pid)
{
	for (size_t i = 0; i < f->npids; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}

static bool any_fix_has(const struct diagnosis *d, const char *needle)
{
	for (size_t i = 0; i < d->nfindings; i++)
		if (d->findings[i].fix && strstr(d->findings[i].fix, needle))
			return true;
	return false;
}

/* Renders d as text at `width` columns into a malloc'ed string. */
static char *text_of(const struct diagnosis *d, int width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct render_opts o = {.color = false, .width = width};
	render_why_text(f, d, NULL, &o);
	fclose(f);
	return buf;
}

/* The seed: gpuwho in a container (child PID namespace) on 8 GPUs; GPUs 0 and 2 at 96,413 MiB, NVML
 * lists no process (driver 580 shows a namespace only its own), every /dev/nvidia* a bind mount,
 * 9 GB of 449 GB host memory available. */
static void seed_world(struct world *w)
{
	world_init(w, 8, false);
	for (int i = 0; i < 8; i++) {
		w->gpus[i].mem_total = 97887 * MIB;   /* RTX PRO 6000 Blackwell */
		w->gpus[i].mem_used = (i == 0 || i == 2) ? 96413 * MIB : 0;
		snprintf(w->gpus[i].name, sizeof w->gpus[i].name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
	}
	for (int i = 0; i < 10; i++)
		w->mounts[i] = (struct mount_hit){.target = (size_t)i, .mount_point = w->targets[i].path, .fstype = "tmpfs",
						  .source = "tmpfs", .root = w->targets[i].path + 4};
	w->s.scan.mounts = w->mounts;
	w->s.scan.nmounts = 10;
	w->s.scan.nscanned = 12;
	w->s.mem_ok = true;
	w->s.mem = (struct meminfo){.total = 449000000000ull, .available = 9000000000ull, .has_total = true,
				    .has_available = true};
}

static void test_seed_container_case_is_held_outside_the_pid_namespace_not_a_driver_leak(void **state)
{
	(void)state;
	struct world w;
	seed_world(&w);
	struct diagnosis d;
	diagnose(&w.s, &d);
	for (int gpu = 0; gpu < 8; gpu++) {
		const struct finding *f = find(&d, "outside_pid_namespace", gpu);
		if (gpu == 0 || gpu == 2) {
			assert_non_null(f);
			assert_int_equal(f->severity, DIAG_WARNING);
			assert_non_null(strstr(f->headline, "96,413 MiB"));
			assert_true(evidence_has(f, "bind mount"));
			assert_non_null(strstr(f->fix, "--pid=host"));
		} else {
			assert_null(f);
			assert_non_null(find(&d, "idle", gpu));
		}
	}
	assert_int_equal(count(&d, "outside_pid_namespace"), 2);
	const struct finding *m = find(&d, "bind_mount_not_holder", -1);
	assert_non_null(m);
	assert_int_equal(m->severity, DIAG_INFO);
	assert_non_null(strstr(m->headline, "kernel mount"));
	const struct finding *h = find(&d, "host_memory", -1);
	assert_non_null(h);
	assert_int_equal(h->severity, DIAG_WARNING);
	assert_non_null(strstr(h->headline, "8.4 GiB available of 418.2 GiB"));
	assert_int_equal(count(&d, "driver_leak"), 0);
	assert_false(any_fix_has(&d, "nvidia-smi --gpu-reset"));
	assert_int_equal(diag_worst(&d, NULL), DIAG_WARNING);
	/* GPU findings come first, in GPU order; host-wide ones last. */
	assert_int_equal(d.findings[0].gpu, 0);
	assert_int_equal(d.findings[d.nfindings - 1].gpu, -1);
	char *t = text_of(&d, 80);
	if (getenv("GPUWHO_SHOW_SEED"))
		fputs(t, stdout);
	/* The same verdict on GPUs 0 and 2 is one finding (render/why.c folds it). */
	assert_non_null(strstr(t, "[warning] GPUs 0, 2: 96,413 MiB held by processes outside this PID namespace"));
	free(t);
	diag_free(&d);
}

/* Eight SGLang TP schedulers whose launcher was SIGKILLed: adopted by PID 1 (systemd). */
static void orphan_world(struct world *w)
{
	world_init(w, 8, true);
	add_other(w, 1, 0, 'S', "systemd", "/sbin/init");
	static const char *const titles[] = {"sglang::scheduler_TP0", "sglang::scheduler_TP1", "sglang::scheduler_TP2",
					      "sglang::scheduler_TP3", "sglang::scheduler_TP4", "sglang::scheduler_TP5",
					      "sglang::scheduler_TP6", "sglang::scheduler_TP7"};
	for (int i = 0; i < 8; i++) {
		add_holder(w, 5001 + i, 1, 'S', "sglang::schedul", titles[i], i)->info.nthreads = 40;
		add_nvml(w, i, 5001 + (unsigned)i, 94208);
	}
}

static void test_orphaned_sglang_tp_workers_adopted_by_pid_1_are_killed_as_one_tree(void **state)
{
	(void)state;
	struct world w;
	orphan_world(&w);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(count(&d, "orphaned_workers"), 8);
	assert_int_equal(count(&d, "in_use"), 0);
	const struct finding *f = find(&d, "orphaned_workers", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_string_equal(f->headline, "GPU 0: 94,208 MiB held by 1 orphaned SGLang worker (launcher gone, adopted by "
					 "PID 1 (systemd)) — gpuwho free 0,1,2,3,4,5,6,7");
	assert_true(evidence_has(f, "PID 5001 (sglang::scheduler_TP0)"));
	/* One family on 8 GPUs: each GPU's finding names them all and frees them all. */
	assert_true(evidence_has(f, "8 GPU holders, on GPUs 0,1,2,3,4,5,6,7"));
	assert_non_null(strstr(f->fix, "`gpuwho free 0,1,2,3,4,5,6,7`"));
	assert_non_null(strstr(f->fix, "kill 5001 5002 5003 5004 5005 5006 5007 5008"));
	for (int pid = 5001; pid <= 5008; pid++)
		assert_true(has_pid(f, pid));
	assert_int_equal(diag_worst(&d, NULL), DIAG_ACTION);
	diag_free(&d);
}

static void test_workers_whose_launcher_lives_are_in_use_not_orphaned(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, true);
	add_other(&w, 1, 0, 'S', "systemd", NULL);
	add_other(&w, 4121, 1, 'S', "python3", "python3 -m sglang.launch_server --tp 2");
	add_holder(&w, 5001, 4121, 'S', "sglang::schedul", "sglang::scheduler_TP0", 0);
	add_holder(&w, 5002, 4121, 'S', "sglang::schedul", "sglang::scheduler_TP1", 1);
	add_nvml(&w, 0, 5001, 70000);
	add_nvml(&w, 1, 5002, 70000);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(count(&d, "orphaned_workers"), 0);
	assert_int_equal(count(&d, "in_use"), 2);
	assert_int_equal(find(&d, "in_use", 0)->severity, DIAG_OK);
	assert_int_equal(diag_worst(&d, NULL), DIAG_OK);
	diag_free(&d);
}

static void test_on_the_host_pid_1_adopts_whatever_its_name(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "process_api", "/process_api --firecracker-init");   /* the H200 VM's init */
	add_holder(&w, 3153, 1, 'S', "sglang::schedul", "/work/build/cuda_holder tp0.ready 8192", 0);
	add_holder(&w, 3154, 1, 'S', "sglang::schedul", "/work/build/cuda_holder tp1.ready 8192", 0);
	add_nvml(&w, 0, 3153, 8704);
	add_nvml(&w, 0, 3154, 8704);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_non_null(find(&d, "orphaned_workers", 0));
	assert_int_equal(count(&d, "in_use"), 0);
	diag_free(&d);
}

/* Two CUDA ranks with different command lines, in the process group of a launcher that was
 * SIGKILLed, each adopted by a subreaper shell no name list knows: the kernel's evidence (the dead
 * group leader, two separately adopted subtrees) makes them orphans, and the fix ends the group. */
static void test_ranks_of_a_dead_process_group_are_orphans_whatever_their_names(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "systemd", "/sbin/init");
	add_other(&w, 300, 1, 'S', "bash", "bash ci-agent.sh");   /* a subreaper: adopted the ranks */
	struct holder *a = add_holder(&w, 501, 300, 'S', "python3", "python3 rank0.py --port 1", 0);
	struct holder *b = add_holder(&w, 502, 300, 'S', "python3", "python3 rank1.py --port 2", 0);
	a->info.pgid = b->info.pgid = 500;   /* the launcher's group; PID 500 is gone */
	a->info.sid = b->info.sid = 400;
	add_nvml(&w, 0, 501, 4096);
	add_nvml(&w, 0, 502, 4096);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "orphaned_workers", 0);
	assert_non_null(f);
	assert_non_null(strstr(f->headline, "2 orphaned processes of process group 500"));
	assert_true(evidence_has(f, "process group 500: its leader, PID 500, has exited"));
	assert_non_null(strstr(f->fix, "`kill -TERM -- -500`"));
	assert_true(has_pid(f, 501) && has_pid(f, 502));
	assert_null(find(&d, "in_use", 0));
	diag_free(&d);
}

/* A daemon that called setsid leads its own group; a job whose starter script exited (its group's
 * leader) but whose launcher lives has one subtree: neither is orphaned. */
static void test_a_setsid_daemon_and_a_detached_job_are_not_orphans(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "systemd", "/sbin/init");
	struct holder *d0 = add_holder(&w, 600, 1, 'S', "python3", "python3 daemon.py", 0);
	d0->info.pgid = d0->info.sid = 600;
	struct holder *l = add_holder(&w, 700, 1, 'S', "python3", "python3 launch.py", 0);   /* nohup'd by start.sh */
	struct holder *k = add_holder(&w, 701, 700, 'S', "python3", "python3 worker.py", 0);
	l->info.pgid = k->info.pgid = 650;   /* start.sh, which has exited */
	add_nvml(&w, 0, 600, 1024);
	add_nvml(&w, 0, 700, 1024);
	add_nvml(&w, 0, 701, 1024);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(count(&d, "orphaned_workers"), 0);
	assert_non_null(find(&d, "in_use", 0));
	diag_free(&d);
}

static void test_a_container_whose_pid_1_is_the_launcher_has_no_orphans(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, false);
	add_other(&w, 1, 0, 'S', "python3", "python3 -m sglang.launch_server");
	add_holder(&w, 11, 1, 'S', "sglang::schedul", "sglang::scheduler_TP0", 0);
	add_nvml(&w, 0, 11, 1000);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(count(&d, "orphaned_workers"), 0);
	assert_non_null(find(&d, "in_use", 0));
	diag_free(&d);
}

static void test_an_orphaned_dp_controller_is_the_root_of_its_schedulers(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, true);
	add_other(&w, 1, 0, 'S', "systemd", NULL);
	add_other(&w, 300, 1, 'S', "sglang::data_pa", "sglang::data_parallel_controller");
	add_holder(&w, 301, 300, 'S', "sglang::schedul", "sglang::scheduler_DP0_TP0", 0);
	add_holder(&w, 302, 300, 'S', "sglang::schedul", "sglang::scheduler_DP1_TP0", 1);
	add_nvml(&w, 0, 301, 5000);
	add_nvml(&w, 1, 302, 5000);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "orphaned_workers", 1);
	assert_non_null(f);
	assert_non_null(strstr(f->fix, "kill 300 301 302"));
	assert_true(evidence_has(f, "descends from PID 300 (sglang::data_parallel_controller)"));
	diag_free(&d);
}

static void test_identical_adopted_commands_are_orphaned_ranks_but_one_adopted_daemon_is_not(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 3, true);
	add_holder(&w, 700, 1, 'S', "python", "python train.py --lr 3e-4", 0);
	add_holder(&w, 701, 1, 'S', "python", "python train.py --lr 3e-4", 1);
	add_holder(&w, 900, 1, 'S', "inferd", "/usr/bin/inferd --port 80", 2);
	add_nvml(&w, 0, 700, 3000);
	add_nvml(&w, 1, 701, 3000);
	add_nvml(&w, 2, 900, 3000);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_non_null(find(&d, "orphaned_workers", 0));
	assert_non_null(find(&d, "orphaned_workers", 1));
	assert_non_null(strstr(find(&d, "orphaned_workers", 0)->headline, "1 orphaned rank ("));
	assert_non_null(strstr(find(&d, "orphaned_workers", 0)->fix, "kill 700 701`"));   /* both ranks, not 900 */
	assert_null(find(&d, "orphaned_workers", 2));
	assert_non_null(find(&d, "in_use", 2));
	diag_free(&d);
}

static void test_a_child_holding_an_exited_parents_files_is_an_inherited_holder(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_holder(&w, 5151, 1, 'S', "python3", "python3 worker.py", 0);
	add_nvml(&w, 0, 4242, 3590);   /* the parent, gone */
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "inherited_holder", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_non_null(strstr(f->headline, "3,590 MiB of exited PID 4242 held by PID 5151 (python3)"));
	assert_true(has_pid(f, 5151));
	assert_non_null(strstr(f->fix, "kill 5151"));
	assert_int_equal(count(&d, "driver_leak"), 0);
	assert_int_equal(count(&d, "orphaned_workers"), 0);
	diag_free(&d);
}

static void test_a_zombie_leader_with_a_live_thread_is_killed_with_kill_9_and_its_parent_named(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 6999, 1, 'S', "bash", "bash run.sh");
	struct holder *h = add_holder(&w, 7000, 6999, 'Z', "python", NULL, 0);
	h->info.nthreads = 4;
	h->info.thread_states = "leader Z, 3 S";
	h->holds[0].means = HOLD_THREAD | HOLD_FD;
	h->holds[0].via_tid = 7003;
	add_nvml(&w, 0, 7000, 2566);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "zombie_leader", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_non_null(strstr(f->headline, "2,566 MiB"));
	assert_non_null(strstr(f->headline, "kill -9 7000"));
	assert_true(evidence_has(f, "thread 7003 still holds the GPU"));
	assert_true(evidence_has(f, "PID 6999 (bash)"));
	assert_non_null(strstr(f->fix, "kill -9 7000"));
	assert_int_equal(count(&d, "zombie"), 0);
	diag_free(&d);
}

static void test_a_plain_zombie_is_harmless_and_its_parent_should_reap_it(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 7999, 1, 'S', "python3", "python3 serve.py");
	add_other(&w, 8000, 7999, 'Z', "python3", NULL);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "zombie", -1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_INFO);
	assert_true(evidence_has(f, "its parent PID 7999 (python3) has not reaped it"));
	assert_true(diag_worst(&d, NULL) < DIAG_WARNING);
	diag_free(&d);
}

static void test_a_stopped_holder_keeps_its_memory_until_kill_cont(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 100, 1, 'S', "bash", NULL);
	add_holder(&w, 4000, 100, 'T', "python3", "python3 train.py", 0);
	add_nvml(&w, 0, 4000, 1542);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "stopped", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_non_null(strstr(f->fix, "kill -CONT 4000"));
	assert_int_equal(count(&d, "in_use"), 0);
	diag_free(&d);
}

static void test_a_holder_waiting_in_nvidia_uvm_is_stuck_in_the_driver(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 100, 1, 'S', "bash", NULL);
	struct holder *h = add_holder(&w, 1234, 100, 'S', "python3", "python3 -m vllm.entrypoints.api_server", 0);
	h->info.driver_wait = "thread 1236 (D) in uvm_spin_loop";
	add_holder(&w, 1300, 100, 'D', "nvidia-smi", "nvidia-smi", 0);   /* a hung monitoring tool */
	add_nvml(&w, 0, 1234, 40000);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "stuck_in_driver", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_true(evidence_has(f, "uvm_spin_loop"));
	assert_true(evidence_has(f, "PID 1300 is in state D"));
	assert_true(has_pid(f, 1234));
	assert_true(has_pid(f, 1300));
	assert_non_null(strstr(f->fix, "reboot"));
	assert_non_null(strstr(f->fix, "nvidia-smi --gpu-reset -i 0"));
	assert_int_equal(count(&d, "in_use"), 0);
	diag_free(&d);
}

/* GPU 1 holds 20,000 MiB with no process; nvidia-persistenced holds its node (device only). */
static void leak_world(struct world *w)
{
	world_init(w, 2, true);
	add_holder(w, 900, 1, 'S', "nvidia-persiste", "/usr/bin/nvidia-persistenced --user nvidia-persistenced", 1);
	w->gpus[1].mem_used = 20000 * MIB;
	w->gpus[1].persistence = true;
	w->gpus[1].persistence_rc = 0;
}

static void test_memory_no_process_holds_on_the_host_is_a_driver_leak_with_what_blocks_a_reset(void **state)
{
	(void)state;
	struct world w;
	leak_world(&w);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "driver_leak", 1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_false(f->uncertain);
	assert_non_null(strstr(f->headline, "20,000 MiB held by no process"));
	assert_true(evidence_has(f, "would block a reset: PID 900 (nvidia-persistenced)"));
	assert_true(evidence_has(f, "persistence mode is on"));
	assert_non_null(strstr(f->fix, "nvidia-smi --gpu-reset -i 1"));
	assert_null(find(&d, "driver_leak", 0));
	assert_non_null(find(&d, "idle", 0));
	diag_free(&d);
}

/* A live process plus 900 MiB an exited PID still has: the 900 MiB are not "nothing to free". */
static void test_a_partial_leak_beside_a_live_process_gets_its_own_finding(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "systemd", "/sbin/init");
	add_holder(&w, 4100, 1, 'S', "python3", "python3 serve.py", 0);
	add_nvml(&w, 0, 4100, 1542);
	add_nvml(&w, 0, 4242, 900);   /* exited: not in this /proc, and no process holds its files */
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "driver_leak", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_WARNING);
	assert_non_null(strstr(f->headline, "900 MiB held by no process"));
	assert_non_null(strstr(f->headline, "beside the memory of 1 live process"));
	assert_non_null(strstr(f->fix, "once the live processes have ended"));
	const struct finding *u = find(&d, "in_use", 0);
	assert_non_null(u);
	assert_null(strstr(u->headline, "nothing to free"));
	assert_true(diag_worst(&d, NULL) >= DIAG_WARNING);
	diag_free(&d);
}

static void test_unheld_memory_with_processes_not_inspected_is_not_claimed_a_leak_with_certainty(void **state)
{
	(void)state;
	struct world w;
	leak_world(&w);
	w.denied[0] = (struct unseen){.pid = 3131, .comm = "python3", .why = "permission denied"};
	w.s.scan.denied = w.denied;
	w.s.scan.ndenied = 1;
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_true(d.uncertain);
	const struct finding *f = find(&d, "driver_leak", 1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_WARNING);
	assert_true(f->uncertain);
	assert_non_null(strstr(f->headline, "possibly"));
	assert_true(evidence_has(f, "3131 (python3)"));
	assert_true(str_starts(f->fix, "Run `sudo gpuwho why 1`"));
	const struct finding *n = find(&d, "not_inspected", -1);
	assert_non_null(n);
	assert_int_equal(n->severity, DIAG_INFO);
	diag_free(&d);
}

static void test_unheld_memory_that_falls_between_samples_is_being_released_not_leaked(void **state)
{
	(void)state;
	struct world w;
	leak_world(&w);
	w.resample_used[1] = 6000 * MIB;
	w.resample_ok[0] = w.resample_ok[1] = true;
	w.s.resample = (struct gpu_resample){.delay_s = 0.5, .ngpus = 2, .used_bytes = w.resample_used,
					     .used_ok = w.resample_ok};
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "memory_releasing", 1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_INFO);
	assert_true(evidence_has(f, "fell from 20,000 MiB to 6,000 MiB within 0.5 s"));
	assert_int_equal(count(&d, "driver_leak"), 0);
	assert_true(diag_worst(&d, NULL) < DIAG_WARNING);
	diag_free(&d);
}

static void test_unheld_memory_below_the_threshold_is_idle_not_a_leak(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	w.gpus[0].mem_used = DIAG_UNHELD_MIN_BYTES - MIB;
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(count(&d, "driver_leak"), 0);
	assert_non_null(find(&d, "idle", 0));
	diag_free(&d);
}

static void test_pending_repairs_errors_and_a_lost_gpu_call_for_a_reset(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 3, true);
	w.gpus[0].retired_rc = 0;
	w.gpus[0].retired_pending = true;
	w.gpus[1].handle_rc = NVML_E_GPU_IS_LOST;
	w.gpus[1].error = "GPU is lost (GPU_IS_LOST)";
	w.gpus[2].ecc_rc = 0;
	w.gpus[2].ecc_uncorrected_volatile = 3;
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f0 = find(&d, "gpu_health", 0), *f1 = find(&d, "gpu_health", 1), *f2 = find(&d, "gpu_health", 2);
	assert_non_null(f0);
	assert_int_equal(f0->severity, DIAG_ACTION);
	assert_true(evidence_has(f0, "retired pages pending"));
	assert_non_null(strstr(f0->fix, "nvidia-smi --gpu-reset -i 0"));
	assert_non_null(f1);
	assert_int_equal(f1->severity, DIAG_ACTION);
	assert_true(evidence_has(f1, "GPU is lost"));
	assert_non_null(f2);
	assert_int_equal(f2->severity, DIAG_WARNING);
	assert_true(evidence_has(f2, "3 volatile uncorrectable ECC errors"));
	diag_free(&d);
}

static void test_a_gpu_whose_only_nvml_process_is_an_unreaped_zombie_is_diagnosed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "systemd", "/sbin/init");
	add_other(&w, 3030, 1, 'Z', "python3", NULL);   /* exited, not reaped: no live thread, no files */
	add_nvml(&w, 0, 3030, 1024);
	struct diagnosis d;
	diagnose(&w.s, &d);   /* no live holder: under UBSan this once copied from a NULL array */
	bool about = false;
	for (size_t i = 0; i < d.nfindings; i++)
		about |= d.findings[i].gpu == 0 && has_pid(&d.findings[i], 3030);
	assert_true(about);
	diag_free(&d);
}

static void test_leaked_shm_segments_of_dead_creators_are_removed_by_name_held_and_live_ones_kept(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	static int holder_pid = 77;
	w.shm[0] = (struct shm_segment){.name = "myapp.db", .bytes = 1ull << 30};                   /* not ours */
	w.shm[1] = (struct shm_segment){.name = "nccl-77-0", .bytes = 1ull << 30, .holders = &holder_pid,
					.nholders = 1, .creator_pid = 77, .creator_alive = true,
					.origin = "nccl"};                                            /* in use */
	w.shm[2] = (struct shm_segment){.name = "psm_it's", .bytes = 512 * MIB, .origin = "python"};  /* no creator pid */
	w.shm[3] = (struct shm_segment){.name = "torch_4242_1", .bytes = 2048 * MIB, .creator_pid = 4242,
					.origin = "pytorch"};
	w.shm[4] = (struct shm_segment){.name = "torch_5_2", .bytes = 10 * MIB, .creator_pid = 5,
					.creator_alive = true, .origin = "pytorch"};                  /* creator lives */
	w.s.nshm = 5;
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "shm_orphans", -1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_ACTION);
	assert_non_null(strstr(f->headline, "2 segments nobody holds (2,560 MiB)"));
	assert_true(evidence_has(f, "/dev/shm/torch_4242_1: 2,048 MiB"));
	assert_true(evidence_has(f, "creator PID 4242 is gone"));
	assert_string_equal(f->fix, "`gpuwho free --shm --yes` (checks each again, then removes it); or by hand: "
				    "`rm -- '/dev/shm/psm_it'\\''s' '/dev/shm/torch_4242_1'`");
	assert_true(has_pid(f, 4242));
	diag_free(&d);

	/* A name with control characters cannot be typed as shown: only gpuwho free --shm is offered. */
	w.shm[5] = (struct shm_segment){.name = "sgl_shm_mm_4243_\033]0;x\a", .bytes = 64 * MIB, .creator_pid = 4243,
					.origin = "sglang"};
	w.s.nshm = 6;
	diagnose(&w.s, &d);
	f = find(&d, "shm_orphans", -1);
	assert_non_null(f);
	assert_non_null(strstr(f->fix, "`gpuwho free --shm --yes`"));
	assert_null(strstr(f->fix, "rm --"));
	diag_free(&d);
}

static void test_host_memory_pinned_by_gpu_processes_is_named(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 4121, 1, 'S', "python3", NULL);
	struct holder *h = add_holder(&w, 5001, 4121, 'S', "python3", "python3 serve.py", 0);
	h->info.vm_pin_kb = 300ull << 20;   /* 300 GiB */
	h->info.vm_rss_kb = 310ull << 20;
	add_nvml(&w, 0, 5001, 1000);
	w.s.mem_ok = true;
	w.s.mem = (struct meminfo){.total = 1000ull << 30, .available = 600ull << 30, .has_total = true,
				   .has_available = true};
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "host_memory", -1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_INFO);
	assert_true(evidence_has(f, "VmPin 300.0 GiB"));
	assert_true(has_pid(f, 5001));
	diag_free(&d);
}

/* The H200 case: four CUDA processes pinned ~28 GiB each with cudaHostAlloc; Shmem grew to
 * 112.7 GiB while VmPin and VmLck stayed 0. The holders own it, not /dev/shm. */
static void test_shmem_pinned_by_gpu_holders_is_theirs_not_dev_shm(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	add_other(&w, 1, 0, 'S', "systemd", "/sbin/init");
	for (int i = 0; i < 4; i++) {
		struct holder *h = add_holder(&w, 6001 + i, 1, 'S', "cuda_holder", "cuda_holder --pin", 0);
		h->info.vm_rss_kb = 29ull << 20;
		h->info.rss_anon_kb = 1ull << 20;
		h->info.rss_shmem_kb = 28ull << 20;
		add_nvml(&w, 0, 6001 + (unsigned)i, 1000);
	}
	w.s.mem_ok = true;
	w.s.mem = (struct meminfo){.total = 126ull << 30, .available = 8ull << 30, .shmem = (1127ull << 30) / 10,
				   .has_total = true, .has_available = true, .has_shmem = true};
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "host_memory", -1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_WARNING);
	assert_true(evidence_has(f, "112.0 GiB is the GPU holders' shared RSS"));
	assert_true(evidence_has(f, "0.0 GiB files in /dev/shm"));
	assert_true(evidence_has(f, "gives back 28.0 GiB when it ends"));
	for (int i = 0; i < 4; i++)
		assert_true(has_pid(f, 6001 + i));
	assert_non_null(strstr(f->fix, "the GPU processes above"));
	assert_null(strstr(f->fix, "/dev/shm"));
	assert_null(find(&d, "shm_orphans", -1));
	diag_free(&d);
}

static void test_a_healthy_host_with_a_normal_holder_is_in_use_and_ok(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, true);
	add_other(&w, 1, 0, 'S', "systemd", NULL);
	add_other(&w, 1000, 1, 'S', "bash", "-bash");
	add_holder(&w, 1234, 1000, 'R', "python3", "python3 train.py", 0);
	add_holder(&w, 1300, 1, 'S', "nvidia-persiste", "/usr/bin/nvidia-persistenced", 0);
	add_nvml(&w, 0, 1234, 10000);
	w.s.mem_ok = true;
	w.s.mem = (struct meminfo){.total = 100ull << 30, .available = 80ull << 30, .has_total = true,
				   .has_available = true};
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_int_equal(d.nfindings, 2);
	const struct finding *f = find(&d, "in_use", 0);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_OK);
	assert_string_equal(f->headline, "GPU 0: 10,000 MiB in use by 1 live process — nothing to free");
	assert_true(evidence_has(f, "PID 1234 (python3): state R"));
	assert_true(evidence_has(f, "PID 1300 (nvidia-persistenced) holds the device with no GPU memory"));
	assert_true(has_pid(f, 1234));
	assert_non_null(find(&d, "idle", 1));
	assert_int_equal(diag_worst(&d, NULL), DIAG_OK);
	char *t = text_of(&d, 80);
	assert_non_null(strstr(t, "Nothing needs action."));
	free(t);
	diag_free(&d);
}

static void test_without_nvml_no_memory_verdict_is_made(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	w.s.nvml.loaded = false;
	w.s.nvml.rc = NVML_E_LIB_RM_VERSION_MISMATCH;
	w.s.nvml.error = "Driver/library version mismatch";
	add_holder(&w, 1234, 1, 'S', "python3", "python3 a.py", 0);
	struct diagnosis d;
	diagnose(&w.s, &d);
	const struct finding *f = find(&d, "nvml_unavailable", -1);
	assert_non_null(f);
	assert_int_equal(f->severity, DIAG_WARNING);
	assert_non_null(strstr(f->fix, "reboot"));
	assert_int_equal(count(&d, "driver_leak"), 0);
	/* The GPU comes from /dev; its holder is listed, memory unknown. */
	assert_int_equal(d.findings[0].gpu, -1);
	assert_int_equal(d.findings[0].minor, 0);
	assert_string_equal(d.findings[0].verdict, "in_use");
	diag_free(&d);
}

static void test_text_escapes_process_strings_and_fits_80_columns(void **state)
{
	(void)state;
	struct world w;
	orphan_world(&w);
	w.holders[3].info.comm = "evil\033]0;pwn\007";
	w.holders[3].info.cmdline = "evil\033[2J\nrm -rf /";
	w.holders[3].info.cmdline_len = strlen(w.holders[3].info.cmdline);
	struct diagnosis d;
	diagnose(&w.s, &d);
	char *t = text_of(&d, 80);
	assert_null(strchr(t, '\033'));
	assert_null(strchr(t, '\007'));
	assert_non_null(strstr(t, "evil\\e]0;pwn\\x07"));
	for (char *line = t; *line;) {
		char *nl = strchr(line, '\n');
		size_t cols = 0;
		for (char *p = line; p < nl; p++)
			cols += ((unsigned char)*p & 0xC0) != 0x80;
		if (cols > 80)
			fail_msg("line longer than 80 columns: %.*s", (int)(nl - line), line);
		line = nl + 1;
	}
	free(t);
	diag_free(&d);
}

static void test_json_names_schema_verdicts_and_host_wide_gpu_as_null(void **state)
{
	(void)state;
	struct world w;
	seed_world(&w);
	struct diagnosis d;
	diagnose(&w.s, &d);
	json_t *j = render_why_json(&d, NULL, w.s.host_pidns, -1);
	assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpuwho.why");
	assert_int_equal(json_integer_value(json_object_get(j, "schema_version")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "pid_namespace")), "child");
	assert_string_equal(json_string_value(json_object_get(j, "worst")), "warning");
	json_t *fs = json_object_get(j, "findings");
	assert_int_equal(json_array_size(fs), d.nfindings);
	json_t *first = json_array_get(fs, 0);
	assert_string_equal(json_string_value(json_object_get(first, "verdict")), "outside_pid_namespace");
	assert_int_equal(json_integer_value(json_object_get(first, "gpu")), 0);
	assert_true(json_is_array(json_object_get(first, "evidence")));
	assert_true(json_is_string(json_object_get(first, "fix")));
	json_t *last = json_array_get(fs, json_array_size(fs) - 1);
	assert_true(json_is_null(json_object_get(last, "gpu")));
	/* Selecting GPU 2 keeps its finding and the host-wide ones. */
	bool *show = calloc(d.nfindings, sizeof *show);
	for (size_t i = 0; i < d.nfindings; i++)
		show[i] = d.findings[i].slot < 0 || d.findings[i].gpu == 2;
	json_t *j2 = render_why_json(&d, show, false, -1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(j2, "findings"), 0), "gpu")), 2);
	free(show);
	json_decref(j2);
	json_decref(j);
	diag_free(&d);
}


/* A lazy collection (scan.limited) that NVML explains needs no full walk; memory NVML cannot tie
 * to a live listed process (an exited PID, memory with no row) does, and never reads "no holder". */
static void test_a_limited_scan_asks_for_the_full_walk_only_when_memory_is_unexplained(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, true);
	add_holder(&w, 500, 1, 'S', "python", "python train.py", 0);
	add_nvml(&w, 0, 500, 1542);
	w.s.scan.limited = true;
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_false(diag_wants_full_scan(&w.s, &d));
	assert_non_null(find(&d, "in_use", 0));
	diag_free(&d);

	add_nvml(&w, 1, 777, 4096);   /* PID 777 is not in /proc: exited */
	diagnose(&w.s, &d);
	assert_true(diag_wants_full_scan(&w.s, &d));
	diag_free(&d);

	world_init(&w, 1, true);
	w.gpus[0].mem_used = 20000 * MIB;   /* memory and no process at all */
	w.s.scan.limited = true;
	diagnose(&w.s, &d);
	assert_true(diag_wants_full_scan(&w.s, &d));
	const struct finding *f = find(&d, "driver_leak", 0);
	assert_non_null(f);
	assert_true(f->uncertain);
	assert_int_equal(f->severity, DIAG_WARNING);
	assert_true(evidence_has(f, "only the processes NVML lists were looked at"));
	assert_false(evidence_has(f, "every process on the host was looked at"));
	diag_free(&d);
	w.s.scan.limited = false;   /* a full snapshot never asks */
	diagnose(&w.s, &d);
	assert_false(diag_wants_full_scan(&w.s, &d));
	diag_free(&d);
}

/* The ended job's live process with memory is found by its owner's job id; verdict text names the job. */
static void test_a_process_of_a_job_is_found_by_job_id_and_named_in_verdicts(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, true);
	struct holder *h = add_holder(&w, 500, 1, 'T', "python", "python train.py", 0);
	h->info.owner.slurm_job = "4242";
	h->info.user = "alice";
	add_nvml(&w, 0, 500, 1542);
	struct diagnosis d;
	diagnose(&w.s, &d);
	assert_non_null(diag_job_row(&d.acct.gpus[0], "4242"));
	assert_int_equal(diag_job_row(&d.acct.gpus[0], "4242")->pid, 500);
	assert_null(diag_job_row(&d.acct.gpus[0], "17"));
	assert_null(diag_job_row(&d.acct.gpus[0], NULL));
	const struct finding *f = find(&d, "stopped", 0);
	assert_non_null(f);
	assert_non_null(strstr(f->headline, "PID 500 (python, job 4242 of user alice)"));
	diag_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_container_case_is_held_outside_the_pid_namespace_not_a_driver_leak),
		cmocka_unit_test(test_orphaned_sglang_tp_workers_adopted_by_pid_1_are_killed_as_one_tree),
		cmocka_unit_test(test_workers_whose_launcher_lives_are_in_use_not_orphaned),
		cmocka_unit_test(test_on_the_host_pid_1_adopts_whatever_its_name),
		cmocka_unit_test(test_a_container_whose_pid_1_is_the_launcher_has_no_orphans),
		cmocka_unit_test(test_an_orphaned_dp_controller_is_the_root_of_its_schedulers),
		cmocka_unit_test(test_identical_adopted_commands_are_orphaned_ranks_but_one_adopted_daemon_is_not),
		cmocka_unit_test(test_a_child_holding_an_exited_parents_files_is_an_inherited_holder),
		cmocka_unit_test(test_a_zombie_leader_with_a_live_thread_is_killed_with_kill_9_and_its_parent_named),
		cmocka_unit_test(test_a_plain_zombie_is_harmless_and_its_parent_should_reap_it),
		cmocka_unit_test(test_a_stopped_holder_keeps_its_memory_until_kill_cont),
		cmocka_unit_test(test_a_holder_waiting_in_nvidia_uvm_is_stuck_in_the_driver),
		cmocka_unit_test(test_memory_no_process_holds_on_the_host_is_a_driver_leak_with_what_blocks_a_reset),
		cmocka_unit_test(test_unheld_memory_with_processes_not_inspected_is_not_claimed_a_leak_with_certainty),
		cmocka_unit_test(test_unheld_memory_that_falls_between_samples_is_being_released_not_leaked),
		cmocka_unit_test(test_unheld_memory_below_the_threshold_is_idle_not_a_leak),
		cmocka_unit_test(test_pending_repairs_errors_and_a_lost_gpu_call_for_a_reset),
		cmocka_unit_test(test_leaked_shm_segments_of_dead_creators_are_removed_by_name_held_and_live_ones_kept),
		cmocka_unit_test(test_a_gpu_whose_only_nvml_process_is_an_unreaped_zombie_is_diagnosed),
		cmocka_unit_test(test_a_partial_leak_beside_a_live_process_gets_its_own_finding),
		cmocka_unit_test(test_ranks_of_a_dead_process_group_are_orphans_whatever_their_names),
		cmocka_unit_test(test_a_setsid_daemon_and_a_detached_job_are_not_orphans),
		cmocka_unit_test(test_shmem_pinned_by_gpu_holders_is_theirs_not_dev_shm),
		cmocka_unit_test(test_host_memory_pinned_by_gpu_processes_is_named),
		cmocka_unit_test(test_a_healthy_host_with_a_normal_holder_is_in_use_and_ok),
		cmocka_unit_test(test_without_nvml_no_memory_verdict_is_made),
		cmocka_unit_test(test_text_escapes_process_strings_and_fits_80_columns),
		cmocka_unit_test(test_json_names_schema_verdicts_and_host_wide_gpu_as_null),
		cmocka_unit_test(test_a_limited_scan_asks_for_the_full_walk_only_when_memory_is_unexplained),
		cmocka_unit_test(test_a_process_of_a_job_is_found_by_job_id_and_named_in_verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
