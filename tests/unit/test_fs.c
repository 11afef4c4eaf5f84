/* The table of filesystems (journal/fs.c): which ones group requests and
 * which keep the held-request error rule, looked up by a descriptor's
 * statfs type, here on the filesystems this machine has at hand. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "journal/fs.h"
#include "unit.h"

GC_UNIT_GLOBALS;

static const struct gc_fs *of_path(const char *path, unsigned long *type)
{
	struct statfs sf;
	const struct gc_fs *fs;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0, "open %s", path);
	cr_assert_eq(fstatfs(fd, &sf), 0);
	*type = (unsigned long)sf.f_type;
	fs = gc_fs_of(fd);
	close(fd);
	return fs;
}

Test(fs, tmpfs_groups_and_needs_no_held_rule)
{
	unsigned long t;
	const struct gc_fs *fs = of_path("/dev/shm", &t);

	if (t != 0x01021994)
		cr_skip_test("/dev/shm is not tmpfs here");
	cr_expect_str_eq(fs->fs_name, "tmpfs");
	cr_expect(fs->fs_flags & GC_FS_GROUP);
	cr_expect(!(fs->fs_flags & (GC_FS_HELD_FAIL | GC_FS_HELD_FAIL_DIR)));
}

Test(fs, procfs_makes_direct_calls)
{
	unsigned long t;
	const struct gc_fs *fs = of_path("/proc/self/stat", &t);

	cr_expect_eq(fs->fs_flags, 0, "%s (f_type %lx) must not group", fs->fs_name, t);
}

Test(fs, bad_descriptor_makes_direct_calls)
{
	cr_expect_eq(gc_fs_of(-1)->fs_flags, 0);
}

/* The rule each filesystem keeps, whichever one /var/tmp is on. */
Test(fs, rules_by_type)
{
	unsigned long t;
	const struct gc_fs *fs = of_path("/var/tmp", &t);

	switch (t) {
	case 0xEF53:
		cr_expect_eq(fs->fs_flags, GC_FS_GROUP | GC_FS_HELD_FAIL);
		break;
	case 0x58465342:
		cr_expect_eq(fs->fs_flags, GC_FS_GROUP | GC_FS_HELD_FAIL_DIR);
		break;
	case 0x9123683E:
		cr_expect_eq(fs->fs_flags, GC_FS_GROUP);
		break;
	default:
		cr_log_info("/var/tmp is f_type %lx (%s)", t, fs->fs_name);
	}
}
