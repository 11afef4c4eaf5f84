// SPDX-License-Identifier: LGPL-2.1-or-later
/* The filesystems the journal groups requests on, and what each does with
 * a sync: whether one call covers the inode, and how a failed commit is
 * reported to the calls that come after it (see journal/fs.h). */
#include "journal/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/name.h"
#include "core/sys.h"

static const struct gc_fs gc_fs_table[] = {
	/* ext2/3/4, with or without fast commits (one f_type): a failed jbd2
	 * commit aborts the journal, but the commit is counted as done and a
	 * later fsync of a change it held returns 0 (the next write then
	 * finds the filesystem read-only). A failed fast commit falls back to
	 * a full commit, and only that one's failure is reported. */
	{ 0xEF53, "ext4", GC_FS_GROUP | GC_FS_HELD_FAIL | GC_FS_RELEASE_WAIT | GC_FS_INTENT },
	/* xfs: a failed log write shuts the filesystem down, and every later
	 * fsync of a file fails with EIO by itself; a failed cache flush
	 * alone (an fdatasync that logged nothing, or the flush after another
	 * call's log force) is that call's only, leaves nothing behind, and
	 * the next call's own flush covers what it had to: a file's answer
	 * is true as it stands. A directory's fsync (xfs_dir_fsync) checks
	 * for no shutdown: its log items aborted, it finds nothing pinned and
	 * returns 0, the entries its change made lost. A shut down xfs fails
	 * fstat with EIO: that tells such a 0 from a true one, also when the
	 * shutdown came from a log write libgc did not make (the kernel's
	 * own, another program's). */
	{ 0x58465342, "xfs",
	  GC_FS_GROUP | GC_FS_HELD_FAIL_DIR | GC_FS_DEAD_EIO | GC_FS_INTENT | GC_FS_REMAP_SYNC },
	/* (xfs, no GC_FS_RELEASE_WAIT: the first log force pushes the whole
	 * checkpoint, every file written back before it included, whenever
	 * the other calls come: 4.05 flushes a round both ways) */
	/* btrfs: a failed log-tree commit is reported to every fsync that
	 * joined it, which then commits the whole transaction; a failed
	 * transaction commit aborts it and the filesystem turns read-only:
	 * every later sync fails (EROFS). A copy-on-write sync always writes
	 * metadata, so no flush failure is the call's alone. No intent log:
	 * under it a power cut lost acknowledged records (1 trial in 100,
	 * then 1 in 3 of that seed), not yet understood. */
	{ 0x9123683E, "btrfs", GC_FS_GROUP | GC_FS_RELEASE_WAIT | GC_FS_SUBVOL | GC_FS_REMAP_SYNC },
	/* (xfs and btrfs, GC_FS_REMAP_SYNC: a reflink or dedupe, or a
	 * copy_file_range made as one, took 9-11 ms on the 4 ms disk with
	 * either description O_DSYNC, 0.03-0.2 ms with neither; ext4 clones
	 * nothing, and its copy_file_range honours the destination's flag
	 * only, as a write) */
	/* f2fs: not examined here; the cautious rule */
	{ 0xF2F52010, "f2fs", GC_FS_GROUP | GC_FS_HELD_FAIL | GC_FS_RELEASE_WAIT },
	/* tmpfs: nothing to flush, nothing that fails */
	{ 0x01021994, "tmpfs", GC_FS_GROUP | GC_FS_INTENT },
};

/* ext4 with fast commits: an fsync that comes while a fast commit runs
 * waits for it and returns if its change was in it, and the fast commit
 * carries every inode changed before it began: the calls need not wait
 * for each other, a fast commit lasts two flushes (4 flushes a round when
 * they come after it). The failure rule is ext4's. */
static const struct gc_fs gc_fs_ext4_fc = {
	0xEF53, "ext4-fc", GC_FS_GROUP | GC_FS_HELD_FAIL | GC_FS_INTENT
};

/* Is the ext4 filesystem of @fd (on @dev) using fast commits? Linux 6.18
 * answers EXT4_IOC_GET_TUNE_SB_PARAM (no privilege needed) with the
 * superblock's feature words; its struct was 228 bytes in 6.18.0 and 232
 * since, and the size is part of the request's number. Older kernels list
 * the feature among the options in /proc/fs/ext4/NAME/options (as
 * fc_debug_force, the option that also turns it on), NAME being the block
 * device's name; 6.18 lists it only in kernels built with CONFIG_EXT4_DEBUG.
 * Raw system calls: open, read and ioctl are not called through the shim. */
#define EXT4_TUNE_SB_GET(size) _IOC(_IOC_READ, 'f', 45, size)
#define EXT4_TUNE_SB_COMPAT 64	/* offset of feature_compat */
#define EXT4_COMPAT_FAST_COMMIT 0x400
/* The options file's line for the option that shows fast commits. */
static int fc_line(const char *line, void *ctx)
{
	(void)ctx;
	return !strcmp(line, "fc_debug_force");
}

static bool ext4_fast_commit(int fd)
{
	char link[256], path[320];
	unsigned char sb[256];
	struct gc_name b;
	const char *name;
	ssize_t n;
	uint32_t compat;
	struct stat st;
	size_t size;

	for (size = 232; size >= 228; size -= 4) {
		memset(sb, 0, sizeof(sb));
		if (syscall(SYS_ioctl, fd, EXT4_TUNE_SB_GET(size), sb) == 0) {
			memcpy(&compat, sb + EXT4_TUNE_SB_COMPAT, sizeof(compat));
			return compat & EXT4_COMPAT_FAST_COMMIT;
		}
	}
	/* the device only here: where the ioctl answers, no fstat */
	if (gc_sys_fstat(fd, &st) != 0)
		return false;
	b = gc_name_in(path, sizeof(path));
	gc_name_str(&b, "/sys/dev/block/");
	gc_name_num(&b, major(st.st_dev), 10);
	gc_name_char(&b, ':');
	gc_name_num(&b, minor(st.st_dev), 10);
	gc_name_end(&b);
	n = syscall(SYS_readlinkat, AT_FDCWD, path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	b = gc_name_in(path, sizeof(path));
	gc_name_str(&b, "/proc/fs/ext4/");
	gc_name_str(&b, name);
	gc_name_str(&b, "/options");
	if (gc_name_end(&b) >= (int)sizeof(path))
		return false;
	/* one option a line */
	return gc_proc_lines(path, fc_line, NULL) > 0;
}

/* Elsewhere (FUSE passes the caller's file handle, NFS and CIFS sync what
 * that open file wrote) one call may not cover another descriptor's data:
 * nothing is shared. */
static const struct gc_fs gc_fs_other = { 0, "other", 0 };

/* @fd's entry in the table, before ext4's fast commits are told apart */
static const struct gc_fs *table_of(int fd)
{
	struct statfs sf;
	size_t i;

	if (gc_sys_fstatfs(fd, &sf) < 0)
		return &gc_fs_other;
	for (i = 0; i < sizeof(gc_fs_table) / sizeof(gc_fs_table[0]); i++)
		if (gc_fs_table[i].fs_type == (unsigned long)sf.f_type)
			return &gc_fs_table[i];
	return &gc_fs_other;
}

bool gc_fs_groups(int fd)
{
	return table_of(fd)->fs_flags & GC_FS_GROUP;
}

bool gc_fs_remap_syncs(int fd)
{
	return table_of(fd)->fs_flags & GC_FS_REMAP_SYNC;
}

/*
 * A sync fails for one file alone where its data's writeback failed
 * (ext4_sync_file returns before it commits anything), where the error was
 * recorded for its file earlier, or where its own cache flush failed: the
 * journal goes on working and no other file's change is lost. It fails for
 * the whole filesystem where a journal commit failed: jbd2 then aborts the
 * journal (an fsync is told EIO by a commit only with it aborted), xfs
 * shuts down, btrfs aborts its transaction; each for good. The probe:
 * replacing an extended attribute that does not exist starts a journal
 * transaction (ext4_xattr_set, xfs_attr_change, btrfs_setxattr_trans) and
 * changes nothing: ENODATA while the journal works; EROFS once it aborted
 * (ext4, btrfs; ext4 then turns read-only, as its next write anywhere
 * would have made it), EIO once shut down (xfs). Made only where a request
 * would otherwise be failed for another file's failure. Through the libc
 * names, which a test's spy may answer for a failure it made up.
 */
enum { PROBE_WORKS, PROBE_DOWN, PROBE_NOTHING };

static int probe_answer(int r)
{
	if (r == 0 || errno == ENODATA)
		return PROBE_WORKS; /* (0: someone made the attribute; replaced) */
	if (errno == EROFS || errno == EIO)
		return PROBE_DOWN;
	/* No right to change this object's attributes: an append-only or
	 * immutable file, one the process may not write, a sticky directory
	 * of another owner; none on this filesystem; not a file. */
	return PROBE_NOTHING;
}

/* The directories above @fd's file, up to its filesystem's root, until one
 * answers: a log the process may only append to (chattr +a) tells nothing
 * itself, its directory does. Through /proc's name of the descriptor: a
 * rename since, or a file with no name left, can only leave fewer of them
 * asked. Each is stat'ed first: one on another filesystem (a mount point
 * crossed, a name that moved) is not asked, and ends the walk. The name is
 * kept in a page of its own, not on the stack: this may run in a signal
 * handler's sync, on a small alternate stack. */
#define PROBE_PATH 4096

static int probe_above(int fd, uint64_t dev)
{
	char link[40], *path, *slash;
	int r = PROBE_NOTHING;
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	path = gc_sys_mmap(NULL, PROBE_PATH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	if (path == MAP_FAILED)
		return PROBE_NOTHING;
	n = readlink(link, path, PROBE_PATH - 1);
	/* none: no /proc, a pipe, a socket */
	if (n > 0 && path[0] == '/') {
		path[n] = '\0';
		while (r == PROBE_NOTHING && (slash = strrchr(path, '/')) != NULL) {
			bool root = slash == path;

			if (root)
				slash[1] = '\0'; /* the root itself, last */
			else
				*slash = '\0';
			if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) ||
			    (uint64_t)st.st_dev != dev)
				break;
			r = probe_answer(lsetxattr(path, GC_FS_PROBE_XATTR, "", 0, XATTR_REPLACE));
			if (root)
				break;
		}
	}
	munmap(path, PROBE_PATH);
	return r;
}

bool gc_fs_journal_works(int fd, uint64_t dev)
{
	struct stat st;
	int e = errno, r = PROBE_NOTHING;

	/* the number may name a file of another filesystem now */
	if (gc_sys_fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev) {
		r = probe_answer(fsetxattr(fd, GC_FS_PROBE_XATTR, "", 0, XATTR_REPLACE));
		if (r == PROBE_NOTHING)
			r = probe_above(fd, dev);
	}
	errno = e;
	/* nothing told: as if it did not work (the request gets the failure) */
	return r == PROBE_WORKS;
}

const struct gc_fs *gc_fs_of(int fd)
{
	const struct gc_fs *f = table_of(fd);

	if (f->fs_type == 0xEF53 && ext4_fast_commit(fd))
		return &gc_fs_ext4_fc;
	return f;
}
