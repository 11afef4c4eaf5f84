/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The spy's log format and the durability checker over it. One record per
 * sync-relevant call, seen from outside the library: the outer spy logs what
 * the program asked, the inner spy logs the real calls the library issued. */
#ifndef GC_E2E_SPY_H
#define GC_E2E_SPY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SPY_MAGIC 0x53505931u	/* "SPY1" */

enum spy_role { SPY_PROG = 0, SPY_REAL = 1 };

enum spy_kind {
	SPY_FSYNC = 1,		/* fsync(fd) */
	SPY_FDATASYNC = 2,	/* fdatasync(fd) */
	SPY_WRITE_SYNC = 3,	/* a write that must be durable with metadata: O_SYNC, RWF_SYNC */
	SPY_WRITE_DSYNC = 4,	/* a write that must be durable as data: O_DSYNC, RWF_DSYNC */
	SPY_SYNCFS = 5,		/* syncfs(fd), real calls only: covers its whole filesystem */
};

/* What the kernel answers a sync of an inode after another sync of its
 * filesystem failed (DESIGN.md "Filesystems"), as the spy saw the inode. */
enum spy_rule {
	/* a failed commit is counted as done: a later sync of a change it
	 * held finds nothing to commit and answers 0 (ext4, f2fs, an xfs
	 * directory). Also every filesystem not examined, and a call whose
	 * inode could not be told: the cautious reading */
	SPY_RULE_HELD = 0,
	/* each sync's own answer is true: a failed commit makes every later
	 * sync fail by itself (xfs shuts down, btrfs turns read-only), and a
	 * failed flush leaves nothing the next call's own flush misses (an
	 * xfs regular file, btrfs) */
	SPY_RULE_OWN = 1,
};

/* The inner spy failed this real call itself (SPY_EIO_*): the kernel never
 * saw it, and the filesystem is as healthy as before. */
#define SPY_F_INJECTED 1
/* The kernel failed this real call with EIO and its filesystem's journal
 * still works (the inner spy's probe, as journal/fs.c's): the error was its
 * file's own, and no other file's change was lost with it. */
#define SPY_F_LOCAL 2

/* Fixed size so that O_APPEND writes of whole records from many threads and
 * processes never interleave. */
struct spy_rec {
	uint32_t r_magic;
	uint8_t r_role;		/* enum spy_role */
	uint8_t r_kind;		/* enum spy_kind */
	uint8_t r_rule;		/* enum spy_rule, of the call's inode */
	uint8_t r_flags;	/* SPY_F_* */
	int32_t r_pid;
	int32_t r_tid;
	int32_t r_fd;
	int32_t r_errno;	/* errno when r_ret < 0, else 0 */
	int64_t r_ret;
	uint64_t r_dev;
	uint64_t r_ino;
	uint64_t r_start_ns;	/* CLOCK_MONOTONIC before the call */
	uint64_t r_end_ns;	/* and after it returned */
};

_Static_assert(sizeof(struct spy_rec) == 64, "spy record must stay 64 bytes");

/* A program call needs a covering real call iff it succeeded (and, for
 * writes, wrote at least one byte: the kernel syncs nothing for 0 bytes). */
static inline bool spy_needs_cover(const struct spy_rec *r)
{
	if (r->r_role != SPY_PROG || r->r_ret < 0)
		return false;
	if (r->r_kind == SPY_WRITE_SYNC || r->r_kind == SPY_WRITE_DSYNC)
		return r->r_ret > 0;
	return true;
}

struct spy_log {
	struct spy_rec *l_recs;
	size_t l_n;
	size_t l_bad;		/* records with a wrong magic or a torn tail */
};

/* Reads a whole log. Returns 0 or -errno. */
int spy_load(const char *path, struct spy_log *log);
void spy_free(struct spy_log *log);

struct spy_summary {
	size_t s_prog;			/* program calls logged */
	size_t s_prog_ok;		/* of which succeeded */
	size_t s_prog_fail;		/* of which failed */
	size_t s_prog_eio;		/* of which failed with EIO */
	size_t s_prog_by_kind[6];
	size_t s_real;			/* real calls logged */
	size_t s_real_ok;
	size_t s_real_fail;
	size_t s_real_by_kind[6];
	size_t s_violations;		/* succeeded program calls without a covering real call */
	size_t s_unexplained_fail;	/* failed sync requests with no failed real call on the inode in their window */
	size_t s_shadowed;		/* succeeded calls whose window also holds a failed adequate real call */
	size_t s_hidden;		/* violations: covered only after a failure of the filesystem
					 * (EIO, EROFS) that ended while the call was held */
	size_t s_bad;			/* malformed records */
};

/* Checks the durability rule over @log: every program call that needs cover
 * has a real call on the same (dev, ino), started at or after the program
 * call began, ended at or before it returned, successful, and strong enough
 * (fsync for fsync/O_SYNC/RWF_SYNC; fdatasync suffices otherwise; a real
 * synchronous write covers only the program write it belongs to, same thread;
 * a real syncfs on the same device covers every call nested around it), and,
 * for an inode of SPY_RULE_HELD, no real sync of its filesystem failed with
 * EIO or EROFS while it was held before the first of those began (give or
 * take SPY_FAIL_SLACK_NS). A failed request must have a failed real call on
 * its inode in its window, or (SPY_RULE_HELD: any; SPY_RULE_OWN: one the
 * kernel made, not injected) a failure of its filesystem while it was held.
 * Prints one line per violation (at most @max_print) to @out when non-NULL.
 * Returns the number of violations. */
size_t spy_check(const struct spy_log *log, struct spy_summary *s, FILE *out,
		 size_t max_print);
void spy_summary_print(const struct spy_summary *s, FILE *out);

/* Counts records matching role/kind (kind 0: any) on one inode (ino 0: any). */
size_t spy_count(const struct spy_log *log, int role, int kind, uint64_t dev,
		 uint64_t ino);

const char *spy_kind_name(int kind);

#endif
