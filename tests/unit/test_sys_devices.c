/* Unit tests for devices: devices_classify (pure), and devices_discover against a fake proc root
 * (devices, driver/nvidia/gpus/BUS/information) and a fake dev root of mknod'ed nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sys/devices.h"
#include "util.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const unsigned majors[] = {195, 238, 241, 510};   /* nvidia, nvidia-uvm, nvidia-caps, nvswitch */
#define NM (sizeof majors / sizeof majors[0])

static const char *classify(const char *name, unsigned ma, unsigned mi, int *gm)
{
	*gm = 12345;
	return devices_classify(name, ma, mi, majors, NM, gm);
}

static void gpu_nodes_are_nvidia_n_on_major_195_with_their_minor(void **state)
{
	(void)state;
	int gm;
	assert_string_equal(classify("nvidia0", 195, 0, &gm), "gpu");
	assert_int_equal(gm, 0);
	assert_string_equal(classify("nvidia7", 195, 7, &gm), "gpu");
	assert_int_equal(gm, 7);
	assert_string_equal(classify("nvidia253", 195, 253, &gm), "gpu");
	assert_int_equal(gm, 253);
	/* Without /proc/devices (an empty majors list) 195 is still known. */
	gm = 99;
	assert_string_equal(devices_classify("nvidia3", 195, 3, NULL, 0, &gm), "gpu");
	assert_int_equal(gm, 3);
}

static void control_modeset_uvm_and_caps_nodes_have_their_kinds(void **state)
{
	(void)state;
	int gm;
	assert_string_equal(classify("nvidiactl", 195, 255, &gm), "ctl");
	assert_int_equal(gm, -1);
	assert_string_equal(classify("nvidia-modeset", 195, 254, &gm), "modeset");
	assert_int_equal(gm, -1);
	assert_string_equal(classify("nvidia-uvm", 238, 0, &gm), "uvm");
	assert_string_equal(classify("nvidia-uvm-tools", 238, 1, &gm), "uvm-tools");
	assert_string_equal(classify("nvidia-cap1", 241, 1, &gm), "caps");
	assert_string_equal(classify("nvidia-cap2", 241, 2, &gm), "caps");
	assert_int_equal(gm, -1);
}

static void minors_254_and_255_are_not_gpus_even_if_named_so(void **state)
{
	(void)state;
	int gm;
	assert_string_equal(classify("nvidia254", 195, 254, &gm), "nvidia");
	assert_int_equal(gm, -1);
	assert_string_equal(classify("nvidia255", 195, 255, &gm), "nvidia");
	assert_int_equal(gm, -1);
}

static void other_names_on_an_nvidia_major_are_nvidia(void **state)
{
	(void)state;
	int gm;
	assert_string_equal(classify("gpu0", 195, 0, &gm), "nvidia");      /* a renamed copy of nvidia0 */
	assert_int_equal(gm, -1);
	assert_string_equal(classify("nvidia-nvswitch0", 510, 0, &gm), "nvidia");
	assert_string_equal(classify("uvm-copy", 238, 0, &gm), "nvidia");
	/* nvidiaN whose number is not its minor. */
	assert_string_equal(classify("nvidia1", 195, 0, &gm), "nvidia");
	assert_int_equal(gm, -1);
}

static void nvidia_names_on_other_majors_are_not_gpus(void **state)
{
	(void)state;
	int gm;
	assert_null(classify("nvidia0", 10, 0, &gm));
	assert_int_equal(gm, -1);
	assert_null(classify("nvidia0", 1, 3, &gm));
	assert_null(classify("nvidia", 195 + 1, 0, &gm));
	assert_null(classify("nvidiafoo", 4, 1, &gm));
}

static void unrelated_devices_are_null(void **state)
{
	(void)state;
	int gm;
	assert_null(classify("null", 1, 3, &gm));
	assert_int_equal(gm, -1);
	assert_null(classify("tty0", 4, 0, &gm));
	assert_null(classify("nvme0", 259, 0, &gm));
	assert_null(classify("", 0, 0, &gm));
	assert_null(devices_classify("fuse", 10, 229, NULL, 0, &gm));
}

/* Fake proc and dev roots. */
struct fx {
	char *proc, *dev;
	struct target *t;
	size_t n;
	char *note;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->proc = fx_mkdtemp();
	f->dev = fx_mkdtemp();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (size_t i = 0; i < f->n; i++) {
		free(f->t[i].path);
		free(f->t[i].kind);
		free(f->t[i].bus_id);
	}
	free(f->t);
	free(f->note);
	fx_rmrf(f->proc);
	fx_rmrf(f->dev);
	free(f);
	return 0;
}

static const char proc_devices[] = "Character devices:\n"
				   "  1 mem\n"
				   "  4 /dev/vc/0\n"
				   " 10 misc\n"
				   "195 nvidia-frontend\n"
				   "195 nvidia\n"
				   "195 nvidiactl\n"
				   "238 nvidia-uvm\n"
				   "241 nvidia-caps\n"
				   "\n"
				   "Block devices:\n"
				   "  8 sd\n"
				   "259 blkext\n";

static void mknod_chr(const char *dir, const char *rel, unsigned ma, unsigned mi)
{
	fx_mkparents(dir, rel);
	char *p = xasprintf("%s/%s", dir, rel);
	if (mknod(p, S_IFCHR | 0600, makedev(ma, mi)) < 0)
		fail_msg("mknod %s: %s", p, strerror(errno));
	free(p);
}

static void gpu_info(struct fx *f, const char *bus, int minor)
{
	char *rel = xasprintf("driver/nvidia/gpus/%s/information", bus);
	char *text = xasprintf("Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"
			       "Video BIOS: \t 97.00.9f.00.04\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
			       "Bus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n",
			       bus, minor);
	fx_puts(f->proc, rel, text);
	free(text);
	free(rel);
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip();
}

static void discover(struct fx *f)
{
	f->t = devices_discover(f->proc, f->dev, &f->n, &f->note);
}

static void discovers_kinds_minors_and_bus_ids_gpus_first(void **state)
{
	struct fx *f = *state;
	need_root();
	fx_puts(f->proc, "devices", proc_devices);
	gpu_info(f, "0000:18:00.0", 0);
	gpu_info(f, "0000:2a:00.0", 1);
	mknod_chr(f->dev, "nvidia10", 195, 10);
	mknod_chr(f->dev, "nvidia1", 195, 1);
	mknod_chr(f->dev, "nvidia0", 195, 0);
	mknod_chr(f->dev, "nvidiactl", 195, 255);
	mknod_chr(f->dev, "nvidia-modeset", 195, 254);
	mknod_chr(f->dev, "nvidia-uvm", 238, 0);
	mknod_chr(f->dev, "nvidia-uvm-tools", 238, 1);
	mknod_chr(f->dev, "nvidia-caps/nvidia-cap1", 241, 1);
	mknod_chr(f->dev, "nvidia-caps/nvidia-cap2", 241, 2);
	mknod_chr(f->dev, "gpu-copy", 195, 0);      /* a mknod'ed copy under another name */
	mknod_chr(f->dev, "null", 1, 3);
	mknod_chr(f->dev, "nvidia5x", 10, 200);     /* nvidia-like name, unrelated major */
	fx_puts(f->dev, "nvidia9", "not a device");
	char *link = xasprintf("%s/nvidia8", f->dev);
	assert_int_equal(symlink("nvidia0", link), 0);
	free(link);
	discover(f);
	assert_null(f->note);
	const struct {
		const char *name, *kind;
		int minor;
		const char *bus;
	} want[] = {
		{"nvidia0", "gpu", 0, "0000:18:00.0"},
		{"nvidia1", "gpu", 1, "0000:2a:00.0"},
		{"nvidia10", "gpu", 10, NULL},
		{"gpu-copy", "nvidia", -1, NULL},
		{"nvidia-caps/nvidia-cap1", "caps", -1, NULL},
		{"nvidia-caps/nvidia-cap2", "caps", -1, NULL},
		{"nvidia-modeset", "modeset", -1, NULL},
		{"nvidia-uvm", "uvm", -1, NULL},
		{"nvidia-uvm-tools", "uvm-tools", -1, NULL},
		{"nvidiactl", "ctl", -1, NULL},
	};
	size_t nw = sizeof want / sizeof want[0];
	assert_int_equal(f->n, nw);
	for (size_t i = 0; i < nw; i++) {
		char *p = xasprintf("%s/%s", f->dev, want[i].name);
		assert_string_equal(f->t[i].path, p);
		free(p);
		assert_string_equal(f->t[i].kind, want[i].kind);
		assert_int_equal(f->t[i].gpu_minor, want[i].minor);
		if (want[i].bus)
			assert_string_equal(f->t[i].bus_id, want[i].bus);
		else
			assert_null(f->t[i].bus_id);
		assert_true(f->t[i].ok);
		assert_true(f->t[i].chr);
		struct stat st;
		assert_int_equal(stat(f->t[i].path, &st), 0);
		assert_true(f->t[i].rdev == st.st_rdev);
		assert_true(f->t[i].dev == st.st_dev);
		assert_true(f->t[i].ino == st.st_ino);
	}
}

static void without_proc_devices_only_nvidia_names_and_major_195_count(void **state)
{
	struct fx *f = *state;
	need_root();
	mknod_chr(f->dev, "nvidia0", 195, 0);
	mknod_chr(f->dev, "nvidia-uvm", 238, 0);
	mknod_chr(f->dev, "uvm-copy", 238, 0);       /* unknown major without /proc/devices */
	discover(f);
	assert_null(f->note);
	assert_int_equal(f->n, 2);
	assert_string_equal(f->t[0].kind, "gpu");
	assert_null(f->t[0].bus_id);
	assert_string_equal(f->t[1].kind, "uvm");
}

static void no_nvidia_at_all_gives_a_note_and_nothing(void **state)
{
	struct fx *f = *state;
	fx_puts(f->proc, "devices", "Character devices:\n  1 mem\n  4 tty\n\nBlock devices:\n  8 sd\n");
	fx_puts(f->dev, "nvidia-not-a-node", "x");
	discover(f);
	assert_int_equal(f->n, 0);
	assert_non_null(f->note);
	assert_non_null(strstr(f->note, "no NVIDIA device nodes in"));
	assert_non_null(strstr(f->note, f->dev));
	assert_non_null(strstr(f->note, "no nvidia driver"));
}

static void driver_loaded_but_no_nodes_gives_its_own_note(void **state)
{
	struct fx *f = *state;
	fx_puts(f->proc, "devices", proc_devices);
	discover(f);
	assert_int_equal(f->n, 0);
	assert_non_null(f->note);
	assert_non_null(strstr(f->note, "the nvidia driver is loaded"));
}

static void missing_roots_give_the_no_nvidia_note(void **state)
{
	struct fx *f = *state;
	f->t = devices_discover("/nonexistent/proc", "/nonexistent/dev", &f->n, &f->note);
	assert_int_equal(f->n, 0);
	assert_non_null(f->note);
}

static void block_devices_named_nvidia_are_not_majors(void **state)
{
	struct fx *f = *state;
	need_root();
	fx_puts(f->proc, "devices", "Character devices:\n  1 mem\n\nBlock devices:\n 77 nvidia-blk\n");
	mknod_chr(f->dev, "other", 77, 0);
	discover(f);
	assert_int_equal(f->n, 0);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gpu_nodes_are_nvidia_n_on_major_195_with_their_minor),
		cmocka_unit_test(control_modeset_uvm_and_caps_nodes_have_their_kinds),
		cmocka_unit_test(minors_254_and_255_are_not_gpus_even_if_named_so),
		cmocka_unit_test(other_names_on_an_nvidia_major_are_nvidia),
		cmocka_unit_test(nvidia_names_on_other_majors_are_not_gpus),
		cmocka_unit_test(unrelated_devices_are_null),
		T(discovers_kinds_minors_and_bus_ids_gpus_first),
		T(without_proc_devices_only_nvidia_names_and_major_195_count),
		T(no_nvidia_at_all_gives_a_note_and_nothing),
		T(driver_loaded_but_no_nodes_gives_its_own_note),
		T(missing_roots_give_the_no_nvidia_note),
		T(block_devices_named_nvidia_are_not_majors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
