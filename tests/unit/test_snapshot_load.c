/* Unit tests for snapshots: lossless round trips of a built snapshot and of this host, redaction,
 * and the loader against hostile input (every truncation, seeded byte flips, a wrong type at every
 * key, future versions, huge numbers, deep nesting): it must fail with a message, never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "snapshot/snapshot.h"
#include "sys/shm.h"
#include "util.h"
#include "fixture.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

static char *dump(const struct snapshot *s, bool redact)
{
	json_t *j = snapshot_to_json(s, redact);
	char *t = json_dumps(j, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	json_decref(j);
	assert_non_null(t);
	return t;
}

static void fill_proc(struct proc_info *p, int pid, int ppid, const char *cmd, size_t cmdlen)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->ppid = ppid;
	p->state = 'S';
	p->nthreads = 4;
	p->thread_states = xstrdup("leader Z, 3 S");
	p->start_ticks = 123456789ull;
	p->start_time = 1712345678.25;
	p->uid = 1000;
	p->user = xstrdup("alice");
	p->nspid[0] = pid;
	p->nspid[1] = 7;
	p->nnspid = 2;
	p->comm = xstrdup("py\xff thon");   /* not UTF-8: stored as hex */
	p->cmdline = xmalloc(cmdlen + 1);
	memcpy(p->cmdline, cmd, cmdlen);
	p->cmdline[cmdlen] = '\0';
	p->cmdline_len = cmdlen;
	p->cgroup = xstrdup("/user.slice/user-1000.slice/session-3.scope");
	p->container.runtime = xstrdup("docker");
	p->container.id = xstrdup("3e1c4a5b6d7f80912a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091");
	p->missing = xstrdup("cgroup (Permission denied)");
	p->wchan = xstrdup("do_epoll_wait");
	p->driver_wait = xstrdup("thread 1236 (D) in uvm_spin_loop");
	p->vm_rss_kb = 1234;
	p->vm_lck_kb = 5;
	p->vm_pin_kb = 1ull << 40;
}

/* A snapshot with every part filled, odd values included. */
static void build(struct snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->schema_version = 1;
	s->gpuwho_version = xstrdup("0.1.0");
	s->hostname = xstrdup("gpu-node-7");
	s->taken_at = 1712345679.123456;
	s->host_pidns = true;
	s->self_pid = 999;
	s->self_ancestors = xcalloc(2, sizeof(int));
	s->self_ancestors[0] = 998;
	s->self_ancestors[1] = 1;
	s->nself_ancestors = 2;

	struct holders_scan *sc = &s->scan;
	sc->ntargets = 2;
	sc->targets = xcalloc(2, sizeof *sc->targets);
	sc->targets[0] = (struct target){.path = xstrdup("/dev/nvidia0"), .kind = xstrdup("gpu"), .gpu_minor = 0,
					 .bus_id = xstrdup("0000:18:00.0"), .ok = true, .dev = makedev(0, 5),
					 .ino = 77, .rdev = makedev(195, 0), .chr = true};
	sc->targets[1] = (struct target){.path = xstrdup("/dev/nvidia-uvm"), .kind = xstrdup("uvm"), .gpu_minor = -1,
					 .ok = false, .err = 2};
	sc->nholders = 1;
	sc->holders = xcalloc(1, sizeof *sc->holders);
	static const char cmd[] = "python\0\0train.py\0--x=\xc3\xa9\xfe";
	fill_proc(&sc->holders[0].info, 1234, 1, cmd, sizeof cmd - 1);
	sc->holders[0].nholds = 1;
	sc->holders[0].holds = xcalloc(1, sizeof(struct hold));
	sc->holders[0].holds[0] = (struct hold){.target = 0, .means = HOLD_FD | HOLD_MMAP | HOLD_COPY, .nfd = 25,
						.nmap = 3, .read = true, .write = true, .via_tid = 1236,
						.copy_path = xstrdup("/x/nvidia0\x80")};
	sc->nmounts = 1;
	sc->mounts = xcalloc(1, sizeof *sc->mounts);
	sc->mounts[0] = (struct mount_hit){.target = 0, .mount_point = xstrdup("/dev/nvidia0"), .fstype = xstrdup("devtmpfs"),
					   .source = xstrdup("udev"), .root = xstrdup("/nvidia0")};
	sc->ndenied = 1;
	sc->denied = xcalloc(1, sizeof *sc->denied);
	sc->denied[0] = (struct unseen){.pid = 55, .comm = NULL, .why = xstrdup("permission denied")};
	sc->ntimed_out = 1;
	sc->timed_out = xcalloc(1, sizeof *sc->timed_out);
	sc->timed_out[0] = (struct unseen){.pid = 56, .comm = xstrdup("stuck"), .why = xstrdup("took too long")};
	sc->nscanned = 812;
	sc->nvanished = 3;
	strv_push(&sc->notes, &sc->nnotes, xstrdup("a note"));

	s->nvml_asked = true;
	struct nvml_info *nv = &s->nvml;
	nv->loaded = true;
	nv->lib_path = xstrdup("/usr/lib/libnvidia-ml.so.1");
	strcpy(nv->driver_version, "580.159.04");
	strcpy(nv->nvml_version, "12.580.159.04");
	nv->proc_api = 3;
	nv->proc_stride = 24;
	nv->ngpus = 2;
	nv->gpus = xcalloc(2, sizeof *nv->gpus);
	struct nvml_gpu *g = &nv->gpus[0];
	g->index = 0;
	g->minor = 0;
	strcpy(g->uuid, "GPU-8c8e6e0c-0000-0000-0000-000000000000");
	strcpy(g->name, "NVIDIA H200");
	strcpy(g->bus_id, "0000:18:00.0");
	g->mem_total = 150754820096ull;
	g->mem_used = 4294967296ull;
	g->mem_free = ~0ull;   /* above json_int_t: a string */
	g->mem_reserved_rc = NVML_E_NOT_SUPPORTED;
	g->mem_api = 1;
	g->persistence = true;
	g->compute_mode = NVML_COMPUTE_EXCLUSIVE_PROCESS;
	g->ecc_rc = NVML_E_NOT_SUPPORTED;
	g->util_gpu = 97;
	g->nprocs = 2;
	g->procs = xcalloc(2, sizeof *g->procs);
	g->procs[0] = (struct nvml_proc){.pid = 1234, .used_bytes = 3221225472ull, .used_known = true, .lists = 1};
	g->procs[1] = (struct nvml_proc){.pid = 4321, .used_bytes = ~0ull, .lists = 5, .instance_known = true, .gi = 1, .ci = 2};
	g->list_rc[1] = NVML_E_NOT_SUPPORTED;
	g->list_api[0] = 3;
	nv->gpus[1] = (struct nvml_gpu){.index = 1, .handle_rc = NVML_E_GPU_IS_LOST, .error = xstrdup("GPU is lost")};

	s->resample.delay_s = 0.5;
	s->resample.ngpus = 2;
	s->resample.used_bytes = xcalloc(2, sizeof(unsigned long long));
	s->resample.used_ok = xcalloc(2, sizeof(bool));
	s->resample.used_bytes[0] = 1ull << 30;
	s->resample.used_ok[0] = true;

	s->nothers = 2;
	s->others = xcalloc(2, sizeof *s->others);
	fill_proc(&s->others[0], 1, 0, "/sbin/init", 10);
	fill_proc(&s->others[1], 4321, 1, "", 0);
	free(s->others[1].cgroup);
	s->others[1].cgroup = NULL;

	s->mem_ok = true;
	s->mem.total = 449ull << 30;
	s->mem.has_total = true;
	s->mem.shmem = 318ull << 30;
	s->mem.has_shmem = true;

	s->nshm = 1;
	s->shm = xcalloc(1, sizeof *s->shm);
	s->shm[0] = (struct shm_segment){.name = xstrdup("torch_4321_7"), .size = 1 << 20, .bytes = 4096,
					 .mtime = 1712345000.5, .uid = 1000, .creator_pid = 4321, .creator_alive = true,
					 .origin = xstrdup("pytorch")};
	s->shm[0].holders = xcalloc(1, sizeof(int));
	s->shm[0].holders[0] = 4321;
	s->shm[0].nholders = 1;
	strv_push(&s->notes, &s->nnotes, xstrdup("PID 5: slow"));
}

static void round_trip_of_a_built_snapshot_is_lossless(void **state)
{
	(void)state;
	struct snapshot s, t;
	build(&s);
	char *a = dump(&s, false), *err = NULL;
	assert_int_equal(snapshot_from_json(a, strlen(a), &t, &err), 0);
	assert_null(err);
	char *b = dump(&t, false);
	assert_string_equal(a, b);
	/* And the fields themselves, where JSON could have hidden a loss. */
	const struct proc_info *p = snapshot_find_proc(&t, 1234);
	assert_non_null(p);
	assert_int_equal(p->cmdline_len, s.scan.holders[0].info.cmdline_len);
	assert_memory_equal(p->cmdline, s.scan.holders[0].info.cmdline, p->cmdline_len);
	assert_string_equal(p->comm, "py\xff thon");
	assert_int_equal(t.nvml.gpus[0].mem_free, ~0ull);
	assert_string_equal(t.scan.holders[0].holds[0].copy_path, "/x/nvidia0\x80");
	assert_int_equal(t.scan.targets[0].rdev, makedev(195, 0));
	assert_non_null(snapshot_find_proc(&t, 4321));
	assert_null(snapshot_find_proc(&t, 4322));
	free(a);
	free(b);
	snapshot_free(&s);
	snapshot_free(&t);
	snapshot_free(NULL);
}

static void round_trip_of_this_host_is_lossless(void **state)
{
	(void)state;
	struct snapshot s, t;
	struct snapshot_opts o = {.no_nvml = true};
	assert_int_equal(snapshot_collect(&o, &s), 0);
	assert_true(s.scan.nscanned > 0);
	char *a = dump(&s, false), *err = NULL;
	assert_int_equal(snapshot_from_json(a, strlen(a), &t, &err), 0);
	char *b = dump(&t, false);
	assert_string_equal(a, b);
	free(a);
	free(b);
	snapshot_free(&s);
	snapshot_free(&t);
}

static void redaction_hides_and_is_idempotent(void **state)
{
	(void)state;
	struct snapshot s, t;
	build(&s);
	char *a = dump(&s, true), *err = NULL;
	assert_null(strstr(a, "alice"));
	assert_null(strstr(a, "train.py"));
	assert_null(strstr(a, "user-1000.slice"));
	assert_null(strstr(a, "gpu-node-7"));
	assert_non_null(strstr(a, "\"user1000\""));
	assert_non_null(strstr(a, "3e1c4a5b6d7f"));   /* container ids are kept */
	assert_int_equal(snapshot_from_json(a, strlen(a), &t, &err), 0);
	assert_true(t.redacted);
	const struct proc_info *p = snapshot_find_proc(&t, 1);
	assert_string_equal(p->cmdline, "init");   /* argv[0]'s base name, no other argument */
	p = snapshot_find_proc(&t, 1234);
	assert_string_equal(p->cmdline, "python");
	assert_string_equal(p->cmdline + 7, "<redacted>");
	char *b = dump(&t, false), *c = dump(&t, true);
	assert_string_equal(a, b);   /* a redacted snapshot stays redacted */
	assert_string_equal(a, c);
	free(a);
	free(b);
	free(c);
	snapshot_free(&s);
	snapshot_free(&t);
}

static void expect_fail(const char *text, size_t len, const char *needle)
{
	struct snapshot t;
	char *err = NULL;
	int r = snapshot_from_json(text, len, &t, &err);
	if (r == 0 || !err || (needle && !strstr(err, needle)))
		fail_msg("want an error with '%s', got %d: %s", needle ? needle : "", r, err ? err : "(none)");
	free(err);
	snapshot_free(&t);
}

static void every_truncation_fails_cleanly(void **state)
{
	(void)state;
	struct snapshot s;
	build(&s);
	char *a = dump(&s, false);
	size_t n = strlen(a);
	for (size_t i = 0; i < n; i++)
		expect_fail(a, i, NULL);
	free(a);
	snapshot_free(&s);
}

/* Loads text: success or a message, never a crash, and a loaded snapshot serializes again. */
static void load_any(const char *text, size_t len)
{
	struct snapshot t;
	char *err = NULL;
	if (snapshot_from_json(text, len, &t, &err) == 0) {
		assert_null(err);
		char *d = dump(&t, false);
		free(d);
	} else {
		assert_non_null(err);
		assert_null(strchr(err, '\n'));
		free(err);
	}
	snapshot_free(&t);
}

static void random_byte_flips_never_crash(void **state)
{
	(void)state;
	struct snapshot s;
	build(&s);
	char *a = dump(&s, false);
	size_t n = strlen(a);
	char *buf = xmalloc(n);
	srand(4242);
	for (int it = 0; it < 5000; it++) {
		memcpy(buf, a, n);
		int flips = 1 + rand() % 4;
		for (int k = 0; k < flips; k++) {
			size_t at = (size_t)rand() % n;
			/* Half the time a JSON-ish character, to get past the parser more often. */
			static const char js[] = "{}[]\",:0123456789-.eEtrufalsn \\";
			buf[at] = rand() % 2 ? js[rand() % (int)(sizeof js - 1)] : (char)(rand() % 256);
		}
		load_any(buf, n);
	}
	free(buf);
	free(a);
	snapshot_free(&s);
}

/* The way from the root to the node being mutated: keys (objects) or indexes (arrays). */
struct step {
	const char *key;
	size_t index;
};

static json_t *follow(json_t *root, const struct step *path, size_t depth)
{
	for (size_t i = 0; i < depth; i++)
		root = path[i].key ? json_object_get(root, path[i].key) : json_array_get(root, path[i].index);
	return root;
}

/* Replaces, one at a time, the value at every key and array slot of the tree with each hostile
 * value, and removes each key (in a copy); loads each document. Integers replaced by a string
 * must fail, naming the key. */
static void mutate(json_t *root, json_t *node, struct step *path, size_t depth, int *count)
{
	json_t *bad[] = {json_string("x"), json_real(1.5), json_integer(-1), json_null(), json_array(), json_object(),
			 json_true(), json_integer(LLONG_MAX), json_string("\xc3\xa9")};
	size_t nbad = sizeof bad / sizeof *bad;
	if (json_is_object(node)) {
		const char *key;
		json_t *v;
		json_object_foreach(node, key, v) {
			json_incref(v);
			for (size_t b = 0; b < nbad; b++) {
				json_object_set(node, key, bad[b]);
				char *t = json_dumps(root, 0);
				load_any(t, strlen(t));
				if (json_is_integer(v) && b == 0)
					expect_fail(t, strlen(t), key);
				free(t);
				(*count)++;
			}
			json_object_set(node, key, v);   /* same key: keeps its place */
			json_t *copy = json_deep_copy(root);
			json_object_del(follow(copy, path, depth), key);
			char *t = json_dumps(copy, 0);
			/* every key is required, but those added after schema 1 was out: older snapshots lack them */
			static const char *const added[] = {"pgid", "sid", "dir", "rss_anon_kb", "rss_file_kb",
							    "rss_shmem_kb", "map_bytes", "limited", "owner", NULL};
			bool optional = false;
			for (size_t a = 0; added[a]; a++)
				optional |= !strcmp(key, added[a]);
			if (!optional)
				expect_fail(t, strlen(t), NULL);
			else
				load_any(t, strlen(t));
			free(t);
			json_decref(copy);
			path[depth] = (struct step){.key = key};
			mutate(root, v, path, depth + 1, count);
			json_decref(v);
		}
	} else if (json_is_array(node)) {
		for (size_t i = 0; i < json_array_size(node); i++) {
			json_t *v = json_incref(json_array_get(node, i));
			for (size_t b = 0; b < nbad; b++) {
				json_array_set(node, i, bad[b]);
				char *t = json_dumps(root, 0);
				load_any(t, strlen(t));
				free(t);
				(*count)++;
			}
			json_array_set(node, i, v);
			path[depth] = (struct step){.index = i};
			mutate(root, v, path, depth + 1, count);
			json_decref(v);
		}
	}
	for (size_t b = 0; b < nbad; b++)
		json_decref(bad[b]);
}

static void wrong_types_at_every_key_fail_cleanly(void **state)
{
	(void)state;
	struct snapshot s;
	build(&s);
	json_t *j = snapshot_to_json(&s, false);
	int count = 0;
	struct step path[32];
	mutate(j, j, path, 0, &count);
	assert_true(count > 500);
	char *a = json_dumps(j, JSON_INDENT(1) | JSON_ENSURE_ASCII), *b = dump(&s, false);
	assert_string_equal(a, b);   /* mutate restored everything */
	free(a);
	free(b);
	json_decref(j);
	snapshot_free(&s);
}

static void messages_name_the_json_path(void **state)
{
	(void)state;
	struct snapshot s;
	build(&s);
	json_t *j = snapshot_to_json(&s, false);
	char *t;
#define EDIT(stmt, needle)                                  \
	do {                                                \
		json_t *c = json_deep_copy(j);              \
		stmt;                                       \
		t = json_dumps(c, 0);                       \
		expect_fail(t, strlen(t), needle);          \
		free(t);                                    \
		json_decref(c);                             \
	} while (0)
	EDIT(json_object_set_new(json_object_get(c, "self"), "pid", json_integer(-3)), "self.pid: -3 is out of range");
	EDIT(json_object_set_new(json_object_get(c, "scan"), "holders", json_string("x")),
	     "scan.holders: expected an array, found a string");
	EDIT(json_object_set_new(json_array_get(json_object_get(json_object_get(c, "scan"), "holders"), 0), "state",
				 json_string("SS")),
	     "scan.holders[0].state: expected one letter");
	EDIT(json_object_set_new(json_array_get(json_object_get(json_object_get(c, "nvml"), "gpus"), 1), "uuid",
				 json_string("GPU-000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000")),
	     "nvml.gpus[1].uuid: longer than 95 bytes");
	EDIT(json_object_set_new(c, "schema_version", json_integer(2)), "schema_version 2 is newer than this gpuwho understands (1)");
	EDIT(json_object_set_new(c, "schema_version", json_integer(0)), "schema_version 0 is not valid");
	EDIT(json_object_del(c, "schema"), "not a gpuwho snapshot");
	EDIT(json_object_del(c, "memory"), "memory: missing");
	EDIT(json_object_set_new(json_object_get(c, "memory"), "hugepages_free_bytes", json_integer(1)),
	     "memory.hugepages_free_bytes");
	EDIT(json_object_set_new(json_array_get(json_object_get(json_object_get(c, "shm"), "segments"), 0), "name",
				 json_pack("{s:s}", "hex", "6100")),
	     "shm.segments[0].name: string holds a NUL byte");
	EDIT(json_array_append_new(json_object_get(json_object_get(c, "self"), "ancestors"), json_integer(1 << 30)),
	     "self.ancestors[2]: 1073741824 is out of range");
#undef EDIT
	json_decref(j);
	snapshot_free(&s);
}

static void odd_documents_fail_with_a_reason(void **state)
{
	(void)state;
	expect_fail("", 0, "empty");
	expect_fail(" \n\t", 3, "white space");
	expect_fail("[]", 2, "a snapshot is a JSON object");
	expect_fail("{\"schema\": \"gpuwho.snapshot\", \"schema_version\": 99999999999999999999}", 69,
		    "not valid JSON: line 1");
	expect_fail("{\"schema\": \"gpuwho.snapshot\", \"schema_version\": 1}", 50, "gpuwho_version: missing");
	expect_fail("{\"a\": 1, \"a\": 2}", 16, "duplicate");
	expect_fail("{\"a\": \"\\u0000\"}", 15, "not valid JSON");
	expect_fail("\xef\xbb\xbf{}", 5, "not valid JSON");
	/* Deep nesting: at the top and inside a key the loader reads. */
	size_t depth = 100000;
	char *deep = xmalloc(2 * depth + 64);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	expect_fail(deep, 2 * depth, "not valid JSON");
	int k = sprintf(deep, "{\"schema\": \"gpuwho.snapshot\", \"schema_version\": 1, \"gpuwho_version\": ");
	memset(deep + k, '[', 1000);
	memset(deep + k + 1000, ']', 1000);
	strcpy(deep + k + 2000, "}");
	expect_fail(deep, strlen(deep), "gpuwho_version: expected a string");
	free(deep);
}

static void shm_names_give_creators_only_when_sure(void **state)
{
	(void)state;
	const char *o;
	assert_int_equal(shm_parse_name("torch_4321_1804289383", &o), 4321);
	assert_string_equal(o, "pytorch");
	assert_int_equal(shm_parse_name("torch_4321", &o), 0);          /* no separator after the digits */
	assert_int_equal(shm_parse_name("torch_0123_1", &o), 0);        /* a leading zero is not a PID */
	assert_int_equal(shm_parse_name("torch_99999999_1", &o), 0);    /* above PID_MAX_LIMIT */
	assert_int_equal(shm_parse_name("psm_1a2b3c4d", &o), 0);        /* CPython's random name */
	assert_string_equal(o, "python");
	assert_int_equal(shm_parse_name("psm_12345678", &o), 0);        /* random hex that is all digits */
	assert_int_equal(shm_parse_name("psm_777_kv", &o), 777);
	assert_int_equal(shm_parse_name("nccl-555-ring", &o), 555);
	assert_string_equal(o, "nccl");
	assert_int_equal(shm_parse_name("nccl-AbC123", &o), 0);         /* mkstemp's suffix */
	assert_int_equal(shm_parse_name("sem.mp-a1b2", &o), 0);
	assert_string_equal(o, "semaphore");
	assert_int_equal(shm_parse_name("sgl_shm_mm_4242_9f3a", &o), 4242);   /* SGLang: kind, PID, random */
	assert_string_equal(o, "sglang");
	assert_int_equal(shm_parse_name("sgl_shm_mm_x1_9f3a", &o), 0);
	assert_int_equal(shm_parse_name("deepspeed_allreduce_buffer_0", &o), 0);
	assert_string_equal(o, "deepspeed");
	assert_int_equal(shm_parse_name("my_segment", &o), 0);
	assert_null(o);
}

static void shm_list_sorts_regular_files_with_sizes(void **state)
{
	(void)state;
	char *dir = fx_mkdtemp();
	fx_write(dir, "b_seg", "12345", 5);
	fx_puts(dir, "a_seg", "");
	fx_puts(dir, "sub/x", "not a segment");
	struct shm_segment *s;
	struct target *t;
	size_t n;
	assert_int_equal(shm_list(dir, &s, &n, &t), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "a_seg");
	assert_string_equal(s[1].name, "b_seg");
	assert_int_equal(s[1].size, 5);
	assert_true(s[1].mtime > 1e9);
	assert_int_equal(s[0].nholders, 0);
	assert_string_equal(t[1].kind, "shm");
	assert_true(t[1].ok && !t[1].chr);
	char *want = xasprintf("%s/b_seg", dir);
	assert_string_equal(t[1].path, want);
	free(want);
	for (size_t i = 0; i < n; i++)
		target_free(&t[i]);
	free(t);
	shm_segments_free(s, n);
	assert_int_equal(shm_list("/nonexistent-gpuwho", &s, &n, NULL), -ENOENT);
	fx_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_of_a_built_snapshot_is_lossless),
		cmocka_unit_test(round_trip_of_this_host_is_lossless),
		cmocka_unit_test(redaction_hides_and_is_idempotent),
		cmocka_unit_test(every_truncation_fails_cleanly),
		cmocka_unit_test(random_byte_flips_never_crash),
		cmocka_unit_test(wrong_types_at_every_key_fail_cleanly),
		cmocka_unit_test(messages_name_the_json_path),
		cmocka_unit_test(odd_documents_fail_with_a_reason),
		cmocka_unit_test(shm_names_give_creators_only_when_sure),
		cmocka_unit_test(shm_list_sorts_regular_files_with_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
