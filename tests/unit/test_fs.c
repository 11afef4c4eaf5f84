// SPDX-License-Identifier: LGPL-2.1-or-later
/* The table of filesystems (journal/fs.c): which ones group requests and
 * which keep the held-request error rule, looked up by a descriptor's
 * statfs type, here on the filesystems this machine has at hand. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
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
		cr_expect(fs->fs_flags & GC_FS_HELD_FAIL);
		break;
	case 0x58465342:
		cr_expect_eq(fs->fs_flags, GC_FS_GROUP | GC_FS_HELD_FAIL_DIR | GC_FS_DEAD_EIO | GC_FS_INTENT);
		break;
	case 0x9123683E:
		cr_expect_eq(fs->fs_flags, GC_FS_GROUP | GC_FS_RELEASE_WAIT);
		break;
	default:
		cr_log_info("/var/tmp is f_type %lx (%s)", t, fs->fs_name);
	}
}

/* Each filesystem of the slow disk is told apart, ext4 with fast commits
 * from ext4 (one f_type) by its mount's options. */
struct fs_case {
	char fs[16];
	char name[16];
	uint32_t flags;
};

ParameterizedTestParameters(fs, slowdisk)
{
	static struct fs_case cases[] = {
		{ "ext4", "ext4", GC_FS_GROUP | GC_FS_HELD_FAIL | GC_FS_RELEASE_WAIT | GC_FS_INTENT },
		{ "ext4-fc", "ext4-fc", GC_FS_GROUP | GC_FS_HELD_FAIL | GC_FS_INTENT },
		{ "xfs", "xfs",
		  GC_FS_GROUP | GC_FS_HELD_FAIL_DIR | GC_FS_DEAD_EIO | GC_FS_INTENT | GC_FS_REMAP_SYNC },
		{ "btrfs", "btrfs", GC_FS_GROUP | GC_FS_RELEASE_WAIT | GC_FS_SUBVOL | GC_FS_REMAP_SYNC },
	};

	return cr_make_param_array(struct fs_case, cases, ARRAY_LEN(cases));
}

static char g_name[64];

static void down(void)
{
	char cmd[160];

	if (g_name[0]) {
		snprintf(cmd, sizeof(cmd), "tests/slowdisk/slowdisk down --name %s >/dev/null 2>&1",
			 g_name);
		if (system(cmd) != 0)
			cr_log_warn("%s failed", cmd);
	}
}

ParameterizedTest(struct fs_case *c, fs, slowdisk, .fini = down, .timeout = 120)
{
	char cmd[256], mnt[512] = "";
	unsigned long t;
	const struct gc_fs *fs;
	FILE *p;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip_test("needs root and /dev/fuse for the slow disk");
	if (access("build/tests/slowdisk/slowdiskd", X_OK) != 0)
		cr_skip_test("run from the project root after make (slowdiskd missing)");
	snprintf(g_name, sizeof(g_name), "fs-%s-%d", c->fs, getpid());
	snprintf(cmd, sizeof(cmd),
		 "tests/slowdisk/slowdisk up --name %s --fs %s --flush-us 0 2>/dev/null | tail -n 1",
		 g_name, c->fs);
	p = popen(cmd, "r");
	cr_assert(p);
	if (!fgets(mnt, sizeof(mnt), p))
		mnt[0] = '\0';
	pclose(p);
	mnt[strcspn(mnt, "\n")] = '\0';
	if (!mnt[0] || access(mnt, W_OK) != 0)
		cr_skip_test("slowdisk up --fs %s did not come up (mkfs missing?)", c->fs);
	fs = of_path(mnt, &t);
	cr_expect_str_eq(fs->fs_name, c->name, "%s: %s", c->fs, fs->fs_name);
	cr_expect_eq(fs->fs_flags, c->flags, "%s: flags %x", c->fs, fs->fs_flags);
}

/* The journal probe on a healthy filesystem: a file's and a directory's
 * descriptor say it works, and nothing about them changes (the attribute
 * it replaces never exists; no ctime moves). A descriptor whose device is
 * not the one asked about, a pipe, and a closed number tell nothing. (An
 * aborted journal's answer is tests/crash/eio.sh's, on the slow disk.) */
Test(fs, journal_probe_works_and_changes_nothing)
{
	char dir[] = "/tmp/gc-fs-probe.XXXXXX", path[64];
	struct stat before, after, ds;
	int fd, dfd, p[2];

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0 && dfd >= 0);
	cr_assert_eq(fstat(fd, &before), 0);
	cr_assert_eq(fstat(dfd, &ds), 0);
	usleep(20000); /* a ctime moved by the probe would differ */
	cr_expect(gc_fs_journal_works(fd, (uint64_t)before.st_dev), "a file of %s", dir);
	cr_expect(gc_fs_journal_works(dfd, (uint64_t)ds.st_dev), "the directory %s", dir);
	cr_assert_eq(fstat(fd, &after), 0);
	cr_expect(before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
		  before.st_ctim.tv_nsec == after.st_ctim.tv_nsec, "the probe changed the file");
	cr_expect_not(gc_fs_journal_works(fd, (uint64_t)before.st_dev + 1), "another device");
	cr_assert_eq(pipe(p), 0);
	cr_expect_not(gc_fs_journal_works(p[0], 0), "a pipe");
	close(p[0]);
	close(p[1]);
	close(fd);
	cr_expect_not(gc_fs_journal_works(fd, (uint64_t)before.st_dev), "a closed number");
	close(dfd);
	unlink(path);
	rmdir(dir);
}

/* Sets (@on) or clears an inode flag (chattr +a, +i); false if it cannot. */
static bool set_flag(int fd, int flag, bool on)
{
	int fl;

	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) < 0)
		return false;
	fl = on ? fl | flag : fl & ~flag;
	return ioctl(fd, FS_IOC_SETFLAGS, &fl) == 0;
}

/* A file whose attributes the process may not change tells nothing itself
 * (an append-only log, an immutable file: EPERM): the directory above it
 * answers, and nothing about either changes. A file of a filesystem with no
 * user attributes (/proc) has nothing above it that can tell: not known to
 * work. (A probe answering for an aborted journal: tests/crash/eio.sh.) */
Test(fs, journal_probe_asks_the_directory_above_a_file_that_cannot_tell)
{
	char dir[] = "/tmp/gc-fs-probe.XXXXXX", path[64];
	struct stat before, after, dbefore, dafter;
	int fd, flags[] = { FS_APPEND_FL, FS_IMMUTABLE_FL };

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/log", dir);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		cr_assert(fd >= 0);
		if (!set_flag(fd, flags[i], true)) {
			close(fd);
			unlink(path);
			rmdir(dir);
			cr_skip_test("chattr +a/+i refused here (not root, or %s cannot)", dir);
		}
		/* expectations only until the flag is off again: an immutable
		 * file left behind could not be removed */
		cr_expect_eq(fstat(fd, &before), 0);
		cr_expect_eq(stat(dir, &dbefore), 0);
		usleep(20000); /* a ctime moved by the probe would differ */
		errno = 0;
		cr_expect(fsetxattr(fd, GC_FS_PROBE_XATTR, "", 0, XATTR_REPLACE) < 0 &&
				  errno == EPERM,
			  "the file itself tells nothing (flag %d: %s)", (int)i, strerror(errno));
		cr_expect(gc_fs_journal_works(fd, (uint64_t)before.st_dev), "flag %d", (int)i);
		cr_expect_eq(fstat(fd, &after), 0);
		cr_expect_eq(stat(dir, &dafter), 0);
		cr_expect(before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
			  before.st_ctim.tv_nsec == after.st_ctim.tv_nsec &&
			  dbefore.st_ctim.tv_sec == dafter.st_ctim.tv_sec &&
			  dbefore.st_ctim.tv_nsec == dafter.st_ctim.tv_nsec,
			  "the probe changed something (flag %d)", (int)i);
		cr_assert(set_flag(fd, flags[i], false));
		close(fd);
	}
	unlink(path);
	rmdir(dir);

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(fstat(fd, &before), 0);
	cr_expect_not(gc_fs_journal_works(fd, (uint64_t)before.st_dev), "a file of /proc");
	close(fd);
}
