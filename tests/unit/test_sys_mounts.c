/* Unit tests for mounts: the mountinfo parser, the /proc hidepid lookup, and which targets are
 * mount points (fuser's "kernel mount"), the last against real files in a temp dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "sys/mounts.h"
#include "util.h"
#include "fixture.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Lines as a GPU container's /proc/self/mountinfo shows them. */
static const char container_mountinfo[] =
	"1062 998 0:108 / / rw,relatime master:432 - overlay overlay rw,lowerdir=/var/lib/docker/l1,upperdir=/u,workdir=/w\n"
	"1063 1062 0:111 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
	"1064 1062 0:112 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755,inode64\n"
	"1090 1064 0:5 /nvidia0 /dev/nvidia0 ro,nosuid,noexec shared:1 master:2 - devtmpfs udev rw,size=1016812k,nr_inodes=254203,mode=755\n"
	"1091 1064 0:5 /nvidiactl /dev/nvidiactl ro,nosuid,noexec master:2 - devtmpfs udev rw,size=1016812k\n"
	"1100 1062 259:2 /var/lib/docker/containers/abc/hosts /etc/hosts rw,relatime - ext4 /dev/nvme0n1p2 rw\n";

static void parses_fields_of_real_lines_with_optional_fields(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse(container_mountinfo, &n);
	assert_int_equal(n, 6);
	assert_int_equal(m[0].major, 0);
	assert_int_equal(m[0].minor, 108);
	assert_string_equal(m[0].root, "/");
	assert_string_equal(m[0].mount_point, "/");
	assert_string_equal(m[0].fstype, "overlay");
	assert_string_equal(m[0].source, "overlay");
	assert_string_equal(m[0].super_opts, "rw,lowerdir=/var/lib/docker/l1,upperdir=/u,workdir=/w");
	/* Two optional fields (shared:1 master:2) before the separator. */
	assert_int_equal(m[3].major, 0);
	assert_int_equal(m[3].minor, 5);
	assert_string_equal(m[3].root, "/nvidia0");
	assert_string_equal(m[3].mount_point, "/dev/nvidia0");
	assert_string_equal(m[3].fstype, "devtmpfs");
	assert_string_equal(m[3].source, "udev");
	assert_string_equal(m[3].super_opts, "rw,size=1016812k,nr_inodes=254203,mode=755");
	assert_string_equal(m[4].mount_point, "/dev/nvidiactl");
	assert_int_equal(m[5].major, 259);
	assert_int_equal(m[5].minor, 2);
	assert_string_equal(m[5].root, "/var/lib/docker/containers/abc/hosts");
	assert_string_equal(m[5].source, "/dev/nvme0n1p2");
	mounts_free(m, n);
}

static void octal_escapes_in_mount_points_and_roots_are_decoded(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse(
		"40 1 8:1 /my\\040root /mnt/a\\040b rw - ext4 /dev/sda1 rw\n"
		"41 1 8:1 /t\\011ab /mnt/tab\\011here rw - ext4 /dev/sda1 rw\n"
		"42 1 8:1 / /mnt/new\\012line rw - ext4 /dev/sda1 rw\n"
		"43 1 8:1 /back\\134slash /mnt/c:\\134x rw - ext4 /dev/sda1 rw\n"
		"44 1 0:50 / /mnt/src rw - fuse.sshfs user@host:/with\\040space rw\n",
		&n);
	assert_int_equal(n, 5);
	assert_string_equal(m[0].root, "/my root");
	assert_string_equal(m[0].mount_point, "/mnt/a b");
	assert_string_equal(m[1].root, "/t\tab");
	assert_string_equal(m[1].mount_point, "/mnt/tab\there");
	assert_string_equal(m[2].mount_point, "/mnt/new\nline");
	assert_string_equal(m[3].root, "/back\\slash");
	assert_string_equal(m[3].mount_point, "/mnt/c:\\x");
	assert_string_equal(m[4].fstype, "fuse.sshfs");
	assert_string_equal(m[4].source, "user@host:/with space");
	mounts_free(m, n);
}

static void backslashes_that_are_not_octal_escapes_are_kept(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse("40 1 8:1 / /a\\b\\9\\04 rw - ext4 /dev/sda1 rw\n"
					     "41 1 8:1 / /end\\ rw - ext4 /dev/sda1 rw\n",
					     &n);
	assert_int_equal(n, 2);
	assert_string_equal(m[0].mount_point, "/a\\b\\9\\04");
	assert_string_equal(m[1].mount_point, "/end\\");
	mounts_free(m, n);
}

static void malformed_lines_are_skipped_and_good_ones_kept(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse(
		"\n"
		"garbage\n"
		"36 35 98:0\n"                                          /* too few fields */
		"36 35 x:y / /bad rw - ext4 /dev/sda1 rw\n"             /* major:minor not numbers */
		"36 35 8:1 / /nosep rw shared:1 ext4 /dev/sda1 rw\n"    /* no \" - \" separator */
		"36 35 8:1 / /nofs rw -\n"                              /* nothing after it */
		"36 35 8:1 / /nosrc rw - ext4\n"                        /* no source */
		"37 35 8:1 / /good rw - ext4 /dev/sda1 rw\n"
		"36 35 8:1 / /lastnosep rw ext4 /dev/sda1 rw",
		&n);
	assert_int_equal(n, 1);
	assert_string_equal(m[0].mount_point, "/good");
	mounts_free(m, n);
}

static void missing_separator_does_not_borrow_the_next_line(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse("36 35 8:1 / /first rw shared:1\n"
					     "37 35 8:2 / /second rw - ext4 /dev/sdb rw\n",
					     &n);
	assert_int_equal(n, 1);
	assert_string_equal(m[0].mount_point, "/second");
	assert_string_equal(m[0].source, "/dev/sdb");
	mounts_free(m, n);
}

static void super_options_may_be_absent_and_last_line_needs_no_newline(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse("36 35 8:1 / /a rw - ext4 /dev/sda1", &n);
	assert_int_equal(n, 1);
	assert_string_equal(m[0].super_opts, "");
	mounts_free(m, n);
}

static void empty_text_gives_no_entries(void **state)
{
	(void)state;
	size_t n = 99;
	struct mount_entry *m = mounts_parse("", &n);
	assert_int_equal(n, 0);
	mounts_free(m, n);
	mounts_free(NULL, 0);
}

static void parses_this_process_mountinfo(void **state)
{
	(void)state;
	char *buf;
	assert_int_equal(readfile_at(-1, "/proc/self/mountinfo", &buf, NULL, 0), 0);
	size_t lines = 0;
	for (char *q = buf; *q; q++)
		lines += *q == '\n';
	size_t n;
	struct mount_entry *m = mounts_parse(buf, &n);
	assert_int_equal(n, lines);
	bool root = false;
	for (size_t i = 0; i < n; i++)
		root |= !strcmp(m[i].mount_point, "/");
	assert_true(root);
	mounts_free(m, n);
	free(buf);
}

static void hidepid_of_the_proc_mount(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse(
		"22 1 0:20 / /sys rw - sysfs sysfs rw,hidepid=9\n"
		"23 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,hidepid=2,gid=27\n",
		&n);
	assert_string_equal(mounts_proc_hidepid(m, n, "/proc"), "2");
	assert_null(mounts_proc_hidepid(m, n, "/other/proc"));
	mounts_free(m, n);

	m = mounts_parse("23 1 0:21 / /proc rw - proc proc rw,hidepid=invisible\n", &n);
	assert_string_equal(mounts_proc_hidepid(m, n, "/proc"), "invisible");
	mounts_free(m, n);

	m = mounts_parse("23 1 0:21 / /proc rw - proc proc rw,gid=27,hidepid=noaccess\n", &n);
	assert_string_equal(mounts_proc_hidepid(m, n, "/proc"), "noaccess");
	mounts_free(m, n);
}

/* `unshare -p -f --mount-proc` (or a runtime) mounts a new proc over /proc: mountinfo lists the
 * hidden one first and the visible one, on top, later. */
static void hidepid_of_stacked_proc_mounts_is_the_topmost_ones(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse("23 1 0:21 / /proc rw - proc proc rw\n"
					     "24 1 8:1 / /home rw - ext4 /dev/sda1 rw\n"
					     "512 23 0:60 / /proc rw - proc proc rw,hidepid=invisible\n",
					     &n);
	assert_string_equal(mounts_proc_hidepid(m, n, "/proc"), "invisible");
	mounts_free(m, n);
	m = mounts_parse("23 1 0:21 / /proc rw - proc proc rw,hidepid=2\n"
			 "512 23 0:60 / /proc rw - proc proc rw\n",
			 &n);
	assert_null(mounts_proc_hidepid(m, n, "/proc"));
	mounts_free(m, n);
}

static void hidepid_none_when_the_option_or_the_mount_is_absent(void **state)
{
	(void)state;
	size_t n;
	struct mount_entry *m = mounts_parse("23 1 0:21 / /proc rw - proc proc rw\n", &n);
	assert_null(mounts_proc_hidepid(m, n, "/proc"));
	mounts_free(m, n);
	m = mounts_parse("23 1 0:21 / /proc rw - tmpfs tmpfs rw,hidepid=2\n", &n);   /* not procfs */
	assert_null(mounts_proc_hidepid(m, n, "/proc"));
	mounts_free(m, n);
	assert_null(mounts_proc_hidepid(NULL, 0, "/proc"));
}

/* A temp dir with real files, targets made from them, and hits to free. */
struct fx {
	char *dir;
	struct target t[3];
	struct mount_hit *hits;
	size_t nhits;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof *f);
	f->dir = fx_mkdtemp();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (size_t i = 0; i < f->nhits; i++) {
		free(f->hits[i].mount_point);
		free(f->hits[i].fstype);
		free(f->hits[i].source);
		free(f->hits[i].root);
	}
	free(f->hits);
	for (size_t i = 0; i < 3; i++)
		free(f->t[i].path);
	fx_rmrf(f->dir);
	free(f);
	return 0;
}

/* Makes a file under the fixture dir and a target for it. */
static void make_target(struct fx *f, size_t k, const char *name)
{
	fx_puts(f->dir, name, "x");
	f->t[k].path = xasprintf("%s/%s", f->dir, name);
	struct stat st;
	assert_int_equal(stat(f->t[k].path, &st), 0);
	f->t[k].ok = true;
	f->t[k].dev = st.st_dev;
	f->t[k].ino = st.st_ino;
	f->t[k].gpu_minor = -1;
}

/* A mount entry (pointing into strings the caller keeps alive). */
static struct mount_entry entry(dev_t dev, const char *root, const char *mp)
{
	return (struct mount_entry){.major = major(dev), .minor = minor(dev), .root = (char *)root,
				    .mount_point = (char *)mp, .fstype = "devtmpfs", .source = "udev", .super_opts = ""};
}

static void target_whose_path_is_a_mount_point_is_a_hit(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	/* Path equality, even with a major:minor unlike the file's (a bind mount from elsewhere). */
	struct mount_entry m[] = {entry(makedev(4095, 77), "/", f->t[0].path)};
	mounts_find_targets(m, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 1);
	assert_int_equal(f->hits[0].target, 0);
	assert_string_equal(f->hits[0].mount_point, f->t[0].path);
	assert_string_equal(f->hits[0].fstype, "devtmpfs");
	assert_string_equal(f->hits[0].source, "udev");
	assert_string_equal(f->hits[0].root, "/");
}

static void mount_point_elsewhere_with_the_targets_dev_and_inode_is_a_hit(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	/* The same file under another name (a hard link): same st_dev and st_ino, other path. */
	char *other = xasprintf("%s/bound-nvidia0", f->dir);
	assert_int_equal(link(f->t[0].path, other), 0);
	struct mount_entry m[] = {entry(f->t[0].dev, "/nvidia0", other)};
	mounts_find_targets(m, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 1);
	assert_string_equal(f->hits[0].mount_point, other);
	assert_string_equal(f->hits[0].root, "/nvidia0");
	free(other);
}

static void whole_filesystem_mount_elsewhere_is_not_stated_nor_a_hit(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	char *other = xasprintf("%s/bound-nvidia0", f->dir);
	assert_int_equal(link(f->t[0].path, other), 0);
	/* root "/" on the target's filesystem: a whole-filesystem mount, not a bind of the file. */
	struct mount_entry m[] = {entry(f->t[0].dev, "/", other)};
	mounts_find_targets(m, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 0);
	free(other);
}

static void same_device_but_another_inode_is_not_a_hit(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	make_target(f, 1, "nvidia1");
	struct mount_entry m[] = {entry(f->t[0].dev, "/nvidia1", f->t[1].path)};
	mounts_find_targets(m, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 0);
}

static void missing_mount_point_and_failed_targets_are_skipped(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	f->t[1].path = xasprintf("%s/gone", f->dir);
	f->t[1].ok = false;
	char *gone = xasprintf("%s/no-such-file", f->dir);
	struct mount_entry m[] = {entry(f->t[0].dev, "/nvidia0", gone), entry(0, "/", f->t[1].path)};
	mounts_find_targets(m, 2, f->t, 2, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 0);
	free(gone);
}

static void target_given_through_a_symlink_matches_the_real_mount_point(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "real-nvidia0");
	char *real = f->t[0].path;
	f->t[0].path = xasprintf("%s/link-nvidia0", f->dir);
	assert_int_equal(symlink(real, f->t[0].path), 0);
	struct mount_entry m[] = {entry(makedev(4095, 77), "/", real)};
	mounts_find_targets(m, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 1);
	assert_string_equal(f->hits[0].mount_point, real);
	free(real);
}

static void hits_are_appended_per_target(void **state)
{
	struct fx *f = *state;
	make_target(f, 0, "nvidia0");
	make_target(f, 1, "nvidiactl");
	make_target(f, 2, "unrelated");
	struct mount_entry m[] = {
		entry(makedev(1, 1), "/", "/"),
		entry(f->t[1].dev, "/nvidiactl", f->t[1].path),
		entry(f->t[0].dev, "/nvidia0", f->t[0].path),
	};
	mounts_find_targets(m, 3, f->t, 3, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 2);
	assert_int_equal(f->hits[0].target, 1);
	assert_int_equal(f->hits[1].target, 0);
	/* A second call appends after what is there. */
	mounts_find_targets(m + 2, 1, f->t, 1, &f->hits, &f->nhits);
	assert_int_equal(f->nhits, 3);
	assert_int_equal(f->hits[2].target, 0);
	assert_string_equal(f->hits[0].mount_point, f->t[1].path);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_fields_of_real_lines_with_optional_fields),
		cmocka_unit_test(octal_escapes_in_mount_points_and_roots_are_decoded),
		cmocka_unit_test(backslashes_that_are_not_octal_escapes_are_kept),
		cmocka_unit_test(malformed_lines_are_skipped_and_good_ones_kept),
		cmocka_unit_test(missing_separator_does_not_borrow_the_next_line),
		cmocka_unit_test(super_options_may_be_absent_and_last_line_needs_no_newline),
		cmocka_unit_test(empty_text_gives_no_entries),
		cmocka_unit_test(parses_this_process_mountinfo),
		cmocka_unit_test(hidepid_of_the_proc_mount),
		cmocka_unit_test(hidepid_of_stacked_proc_mounts_is_the_topmost_ones),
		cmocka_unit_test(hidepid_none_when_the_option_or_the_mount_is_absent),
		T(target_whose_path_is_a_mount_point_is_a_hit),
		T(mount_point_elsewhere_with_the_targets_dev_and_inode_is_a_hit),
		T(whole_filesystem_mount_elsewhere_is_not_stated_nor_a_hit),
		T(same_device_but_another_inode_is_not_a_hit),
		T(missing_mount_point_and_failed_targets_are_skipped),
		T(target_given_through_a_symlink_matches_the_real_mount_point),
		T(hits_are_appended_per_target),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
