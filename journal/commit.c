// SPDX-License-Identifier: LGPL-2.1-or-later
/* Real calls: a request's direct call, and the owner's call that a whole
 * transaction's handles of one inode share; which errors may be shared,
 * and releasing a multi-inode transaction's calls together. */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/sites.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "journal/fs.h"
#include "journal/txn.h"
#include "policy/policy.h"

/* One real fsync/fdatasync, counted. Returns 0 or -errno. */
static int real_sync(int fd, bool datasync)
{
	if (datasync)
		gc_stat_inc(real_fdatasync);
	else
		gc_stat_inc(real_fsync);
	return gc_sys_sync(fd, datasync);
}

/* read by every request: on the start page, where it costs no fault */
GC_START bool gc_sfr_refused;

/* Reports (and marks reported) a writeback error @fd's open file description
 * has not seen yet (1: cannot tell, the call refused), without waiting for
 * any writeback: sync_file_range with WAIT_AFTER checks the description's
 * error cursor whatever the range, and a range past any page waits for
 * nothing. Waiting here would make a request that already has its result
 * queue behind the next commit. Only inside a sync request on @fd, whose
 * error it is (DESIGN rule 8). */
int gc_commit_pending_error(int fd)
{
	int r = gc_sys_sfr(fd, INT64_MAX - 1, 1, SYNC_FILE_RANGE_WAIT_AFTER);

	if (r == -EINVAL) /* a kernel that refuses the range: wait for all */
		r = gc_sys_sfr(fd, 0, 0, SYNC_FILE_RANGE_WAIT_AFTER);
	if (gc_sys_refused(r)) {
		/* not the file's answer: a seccomp filter's */
		__atomic_store_n(&gc_sfr_refused, true, __ATOMIC_RELAXED);
		return 1;
	}
	return r;
}

int gc_commit_dead_check(int fd, int r)
{
	struct stat st;
	int e = errno;

	if (r == 0 && gc_sys_fstat(fd, &st) < 0 && errno == EIO)
		r = -EIO;
	errno = e;
	return r;
}

int gc_commit_direct(int fd, bool datasync)
{
	uint64_t t0;
	int r;

	gc_stat_inc(direct);
	gc_req_note.rn_direct = 1;
	if (!__atomic_load_n(&gc_sites_timing, __ATOMIC_RELAXED))
		return real_sync(fd, datasync);
	/* a call site's commit time: the real call */
	t0 = gc_now_ns();
	r = real_sync(fd, datasync);
	gc_req_note.rn_commit_ns = gc_now_ns() - t0;
	return r;
}

/* Errors that belong to the inode, and so to every request the call
 * covered. Any other error (EBADF of an O_PATH descriptor, EINVAL, EINTR,
 * ...) is the owner's descriptor's own: the others make their own call. */
static bool shared_error(int r)
{
	return r == 0 || r == -EIO || r == -ENOSPC || r == -EDQUOT || r == -EROFS;
}

/* The slot's published result, or GC_ORPHAN when nobody produced one. */
int gc_slot_result(const struct gc_txn *t, const struct gc_islot *s)
{
	int32_t r = s->is_err;

	if (r == GC_REJOIN)
		return s->is_seal == gc_result_seal(t->t_seq, s->is_ino, r) ? GC_REJOIN : GC_ORPHAN;
	if (r == GC_ORPHAN || !shared_error(r) ||
	    s->is_seal != gc_result_seal(t->t_seq, s->is_ino, r))
		return GC_ORPHAN;
	return r;
}

/* The real calls of a multi-inode transaction go to the kernel together, so
 * they all find the filesystem's journal commit before it has flushed and
 * none needs a flush of its own afterwards, where the filesystem needs it
 * (GC_FS_RELEASE_WAIT: ext4 without fast commits, btrfs; journal/fs.c). Each owner waits, without the
 * lock, until every live slot has an owner, for a short bounded time.
 *
 * The window is short: ext4 starts its commit at the first fsync, and an
 * fsync that arrives once the commit has written its journal blocks (about
 * 0.1-0.2 ms later on a loop device) pays one more cache flush, during which
 * the device serves no one. Owners asleep on a futex woke one by one on two
 * cores, their fsyncs spread over 0.15-0.3 ms, and 16 processes on 16 files
 * lost a flush every few rounds. Waiting owners therefore stay runnable,
 * yielding the CPU to those still on their way: the release finds them
 * ready, and the spread halves. */
#define GC_RELEASE_MAX_NS (1 * GC_NSEC_PER_MSEC)

static void release_together(struct gc_handle *h)
{
	struct gc_txn *t = h->h_txn;
	uint32_t live = t->t_live, n = __atomic_add_fetch(&t->t_claimed, 1, __ATOMIC_ACQ_REL);
	uint64_t until;

	if (live < 2 || n >= live || !(h->h_fs & GC_FS_RELEASE_WAIT))
		return;
	until = gc_now_ns() + GC_RELEASE_MAX_NS;
	while (n < live && gc_now_ns() < until) {
		sched_yield();
		n = __atomic_load_n(&t->t_claimed, __ATOMIC_ACQUIRE);
	}
}

/* Called with j_lock held, as the slot's owner: drops the lock for the real
 * call and takes it again. Cancellation stays off so the result is always
 * published. Returns false if the lock could not be taken again. */
bool gc_commit_owner_call(struct gc_handle *h, struct gc_islot *s, uint64_t ino)
{
	bool datasync = !(s->is_flags & IS_FSYNC), dead;
	struct stat st;
	int r, pre, fr, oldstate;

	s->is_flags |= IS_CLAIMED;
	s->is_owner = h->h_tid;
	s->is_owner_pid = h->h_pid;
	gc_domain_unlock(h->h_dom);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	/* A writeback error this descriptor has not reported yet belongs to
	 * its own request only: collect it first, so the shared result carries
	 * just what happens during the real call (each open file description
	 * sees an error once, as with the bare kernel). */
	pre = gc_commit_pending_error(h->h_fd);
	release_together(h);
	r = real_sync(h->h_fd, datasync);
	/* The program may have dup2()'d another file over this descriptor
	 * meanwhile: then our call covered some other inode, not this one.
	 * A filesystem that fails fstat with EIO right after the call is
	 * dead (a shut down xfs): its 0 is not believed (journal/fs.h). */
	fr = gc_sys_fstat(h->h_fd, &st) < 0 ? -errno : 0;
	dead = fr == -EIO && r == 0;
	if (dead)
		r = -EIO;
	gc_domain_note_failure(h->h_dom, r);
	h->h_own = pre < 0 ? pre : r;
	if (!dead && (fr < 0 || (uint64_t)st.st_ino != ino))
		r = GC_ORPHAN;
	pthread_setcancelstate(oldstate, NULL);
	if (!gc_domain_lock(h->h_dom))
		return false;
	if (!gc_handle_valid(h))
		return true; /* state was thrown away meanwhile */
	if (!shared_error(r))
		r = GC_ORPHAN;
	s->is_err = r;
	s->is_seal = gc_result_seal(h->h_txn->t_seq, ino, r);
	s->is_flags |= IS_DONE;
	if (!--h->h_txn->t_pending)
		gc_txn_commit_end(h->h_dom, h->h_txn, gc_now_ns());
	/* the other handles of this inode wait on the transaction's queue */
	if (s->is_handles > 1)
		gc_domain_wake(h->h_dom, gc_txn_wq(h->h_dom, h->h_txn));
	return true;
}
