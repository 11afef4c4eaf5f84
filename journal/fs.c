/* The filesystems the journal groups requests on, and what each does with
 * a sync: whether one call covers the inode, and how a failed commit is
 * reported to the calls that come after it (see journal/fs.h). */
#include "journal/fs.h"

#include <stddef.h>
#include <sys/vfs.h>

static const struct gc_fs gc_fs_table[] = {
	/* ext2/3/4, with or without fast commits (one f_type): a failed jbd2
	 * commit aborts the journal, but the commit is counted as done and a
	 * later fsync of a change it held returns 0 (the next write then
	 * finds the filesystem read-only). A failed fast commit falls back to
	 * a full commit, and only that one's failure is reported. */
	{ 0xEF53, "ext4", GC_FS_GROUP | GC_FS_HELD_FAIL },
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
	{ 0x58465342, "xfs", GC_FS_GROUP | GC_FS_HELD_FAIL_DIR | GC_FS_DEAD_EIO },
	/* btrfs: a failed log-tree commit is reported to every fsync that
	 * joined it, which then commits the whole transaction; a failed
	 * transaction commit aborts it and the filesystem turns read-only:
	 * every later sync fails (EROFS). A copy-on-write sync always writes
	 * metadata, so no flush failure is the call's alone. */
	{ 0x9123683E, "btrfs", GC_FS_GROUP },
	/* f2fs: not examined here; the cautious rule */
	{ 0xF2F52010, "f2fs", GC_FS_GROUP | GC_FS_HELD_FAIL },
	/* tmpfs: nothing to flush, nothing that fails */
	{ 0x01021994, "tmpfs", GC_FS_GROUP },
};

/* Elsewhere (FUSE passes the caller's file handle, NFS and CIFS sync what
 * that open file wrote) one call may not cover another descriptor's data:
 * nothing is shared. */
static const struct gc_fs gc_fs_other = { 0, "other", 0 };

const struct gc_fs *gc_fs_of(int fd)
{
	struct statfs sf;
	size_t i;

	if (fstatfs(fd, &sf) < 0)
		return &gc_fs_other;
	for (i = 0; i < sizeof(gc_fs_table) / sizeof(gc_fs_table[0]); i++)
		if (gc_fs_table[i].fs_type == (unsigned long)sf.f_type)
			return &gc_fs_table[i];
	return &gc_fs_other;
}
