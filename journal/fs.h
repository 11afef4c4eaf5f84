/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the journal knows of each filesystem it groups requests on, keyed
 * by statfs(2) f_type: one table (fs.c), so that a fact about a
 * filesystem lives in one place. DESIGN.md "Filesystems" says why each is
 * what it is. */
#ifndef GC_FS_H
#define GC_FS_H
#include <stdbool.h>
#include <stdint.h>

enum {
	/* fsync/fdatasync of any descriptor makes the whole inode durable:
	 * requests on one inode may share a real call */
	GC_FS_GROUP = 1,
	/* a failed commit is reported only to the real calls inside it, and
	 * counted as done: a later call whose change it held finds nothing
	 * to commit and returns 0. A request held while a real sync of the
	 * filesystem failed therefore fails too (gc_domain_held_result) */
	GC_FS_HELD_FAIL = 2,
	/* the same for directories only */
	GC_FS_HELD_FAIL_DIR = 4,
	/* a dead (shut down) filesystem answers some syncs 0 for changes it
	 * lost, and fstat EIO: a real call's 0 is checked with fstat
	 * (gc_commit_dead_check) */
	GC_FS_DEAD_EIO = 8,
	/* the real calls of a multi-file transaction wait for each other, so
	 * that they all reach the filesystem before its commit has written
	 * its blocks (journal/commit.c release_together): where a call that
	 * comes later pays a commit of its own */
	GC_FS_RELEASE_WAIT = 16,
	/* the intent log (LIBGC_INTENT) serves files here and may keep its
	 * log here: its power-cut trials passed on this filesystem */
	GC_FS_INTENT = 32,
	/* st_dev is a subvolume's anonymous number: the disk under it is the
	 * mount's source in /proc/self/mountinfo (gc_devstats_alias). Other
	 * anonymous numbers (tmpfs, overlayfs, FUSE, NFS) have no disk there */
	GC_FS_SUBVOL = 64,
	/* a clone of blocks into a file (FICLONE, FICLONERANGE,
	 * FIDEDUPERANGE, and copy_file_range, which clones where it can) is
	 * committed before it returns when the source's description or the
	 * destination's is O_SYNC or O_DSYNC (gc_fs_remap_syncs) */
	GC_FS_REMAP_SYNC = 128,
};

struct gc_fs {
	unsigned long fs_type;	/* statfs f_type */
	const char *fs_name;
	uint32_t fs_flags;	/* GC_FS_* */
};

/* The entry for @fd's filesystem; one with no flags (direct calls only)
 * when it is not in the table or cannot be told. ext4 with fast commits
 * has an entry of its own (one f_type, told by the mount's options). */
const struct gc_fs *gc_fs_of(int fd);
/* Can requests on @fd's filesystem share a real call (GC_FS_GROUP)? One
 * fstatfs: ext4 with fast commits is not told apart (both group). */
bool gc_fs_groups(int fd);
/* Is a clone into @fd committed when its source was opened O_SYNC or
 * O_DSYNC (GC_FS_REMAP_SYNC)? One fstatfs. */
bool gc_fs_remap_syncs(int fd);
/* Does the journal of @fd's filesystem, @dev (its st_dev), still work: no
 * failed commit aborted it, no failure shut it down? Then a failed sync
 * since was its own file's (its data's writeback, its own cache flush) and
 * lost no other file's change. Asked of @fd, then of the directories above
 * it (one of them may let the process change its attributes where the file
 * does not); false where none can tell. */
bool gc_fs_journal_works(int fd, uint64_t dev);
/* The extended attribute that probe replaces, which never exists. */
#define GC_FS_PROBE_XATTR "user.libgc.journal-probe"

#endif
