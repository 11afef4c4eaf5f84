/* Dirty limiter state and its slow path (see dirty.h): write-behind with
 * sync_file_range(WRITE) every window, a wait for the oldest range while the
 * device has more than its limit under writeback, and the writeback errors
 * those waits consume, kept until the program's next fsync of the file.
 * Raw system calls, atomics and try-locks only: safe from a signal handler. */
#include "core/dirty.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/devstats.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"

enum { SLOT_NEW, SLOT_TRACK, SLOT_SKIP };

struct gc_dirty_slot gc_dirty_slots[GC_DIRTY_FDS];

struct dirty_dev {
	uint64_t dd_dev1;		/* st_dev + 1; 0: free (appended by CAS, never removed) */
	uint32_t dd_ok;			/* 0 not yet known, 1 sync_file_range useful, 2 not */
	uint32_t dd_lock;		/* try-lock of dd_ps */
	int64_t dd_inflight;		/* bytes under writeback started here (atomic) */
	uint64_t dd_limit, dd_window;	/* published from dd_ps (atomic) */
	uint64_t dd_bw;
	uint64_t dd_aged_at;		/* last sweep for idle slots */
	struct gc_dirty_state dd_ps;
} __attribute__((aligned(64)));

static struct dirty_dev devs[GC_DIRTY_DEVS];

struct kept_err {
	uint64_t ke_dev1;		/* st_dev + 1; 0 free; set last, cleared first */
	uint64_t ke_ino;
	int32_t ke_err;			/* -errno */
	uint32_t ke_any;		/* overflow entry: every inode of the device */
};
static struct kept_err kept[GC_DIRTY_ERRS];
static int kept_n;			/* entries in use (atomic): 0 = fast fsync path */

/* Filesystems whose sync_file_range does nothing useful: FUSE (the daemon
 * decides), NFS and SMB (writeback is the network's), ZFS (not
 * asynchronous, RocksDB turns it off there too), tmpfs and ramfs (no
 * device), 9p, overlayfs (the upper file's pages are not this file's). */
static bool fs_useless(long type)
{
	switch ((unsigned long)type & 0xffffffffUL) {
	case 0x65735546: /* FUSE */
	case 0x6969:	 /* NFS */
	case 0xff534d42: /* CIFS */
	case 0xfe534d42: /* SMB2 */
	case 0x2fc12fc1: /* ZFS */
	case 0x01021994: /* tmpfs */
	case 0x858458f6: /* ramfs */
	case 0x01021997: /* 9p */
	case 0x794c7630: /* overlayfs */
		return true;
	}
	return false;
}

static int dev_index(uint64_t dev)
{
	uint64_t want = dev + 1, cur;
	int i;

	for (i = 0; i < GC_DIRTY_DEVS; i++) {
		cur = __atomic_load_n(&devs[i].dd_dev1, __ATOMIC_ACQUIRE);
		if (cur == want)
			return i;
		if (cur)
			continue;
		if (__atomic_compare_exchange_n(&devs[i].dd_dev1, &cur, want, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			struct gc_dirty_state ps;

			gc_dirty_init(&ps, &gc_cfg.c_dirty);
			__atomic_store_n(&devs[i].dd_limit, ps.ds_limit, __ATOMIC_RELAXED);
			__atomic_store_n(&devs[i].dd_window, ps.ds_window, __ATOMIC_RELAXED);
			return i;
		}
		if (cur == want)
			return i;
	}
	return -1;
}

/* Takes dd_ps; the first time also sets it up. */
static bool dev_lock(struct dirty_dev *dd)
{
	uint32_t free_ = 0;

	if (!__atomic_compare_exchange_n(&dd->dd_lock, &free_, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	if (!dd->dd_ps.ds_scale)
		gc_dirty_init(&dd->dd_ps, &gc_cfg.c_dirty);
	return true;
}

/* Publishes dd_ps's decision and drops the lock. */
static void dev_unlock(struct dirty_dev *dd)
{
	__atomic_store_n(&dd->dd_limit, dd->dd_ps.ds_limit, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_window, dd->dd_ps.ds_window, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_bw, dd->dd_ps.ds_bw, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_lock, 0, __ATOMIC_RELEASE);
}

/* ---- kept errors ------------------------------------------------------ */

void gc_dirty_keep_error(uint64_t dev, uint64_t ino, int err)
{
	uint64_t want = dev + 1, cur;
	int i;

	gc_stat_inc(dirty_kept);
	for (i = 0; i < GC_DIRTY_ERRS; i++) {
		struct kept_err *k = &kept[i];

		cur = __atomic_load_n(&k->ke_dev1, __ATOMIC_ACQUIRE);
		if (cur == want && (k->ke_any || k->ke_ino == ino))
			return; /* one report per file, as the kernel's error cursor */
	}
	for (i = 0; i < GC_DIRTY_ERRS; i++) {
		struct kept_err *k = &kept[i];

		cur = 0;
		/* claim with an odd marker, fill, then publish the device */
		if (!__atomic_compare_exchange_n(&k->ke_dev1, &cur, UINT64_MAX, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		k->ke_ino = ino;
		k->ke_err = err;
		k->ke_any = 0;
		__atomic_add_fetch(&kept_n, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&k->ke_dev1, want, __ATOMIC_RELEASE);
		return;
	}
	/* Full: never drop an error. The last entry stands for every inode of
	 * the device from now on: too many reports rather than one too few. */
	kept[GC_DIRTY_ERRS - 1].ke_err = err;
	__atomic_store_n(&kept[GC_DIRTY_ERRS - 1].ke_any, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&kept_n, 1, __ATOMIC_SEQ_CST); /* never back to 0 */
	__atomic_store_n(&kept[GC_DIRTY_ERRS - 1].ke_dev1, want, __ATOMIC_RELEASE);
}

int gc_dirty_take_error(int fd)
{
	struct stat st;
	int i, saved;

	if (!__atomic_load_n(&kept_n, __ATOMIC_SEQ_CST))
		return 0;
	saved = errno;
	if (syscall(SYS_fstat, fd, &st) < 0) {
		errno = saved;
		return 0; /* the real call reports EBADF */
	}
	errno = saved;
	for (i = 0; i < GC_DIRTY_ERRS; i++) {
		struct kept_err *k = &kept[i];
		uint64_t want = (uint64_t)st.st_dev + 1;
		int err;

		if (__atomic_load_n(&k->ke_dev1, __ATOMIC_ACQUIRE) != want)
			continue;
		err = k->ke_err;
		if (__atomic_load_n(&k->ke_any, __ATOMIC_ACQUIRE)) {
			gc_stat_inc(dirty_returned);
			return err;
		}
		if (k->ke_ino != (uint64_t)st.st_ino)
			continue;
		/* whoever clears the entry reports it */
		if (!__atomic_compare_exchange_n(&k->ke_dev1, &want, 0, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_sub_fetch(&kept_n, 1, __ATOMIC_SEQ_CST);
		gc_stat_inc(dirty_returned);
		return err;
	}
	return 0;
}

/* An error of the file's writeback (its description's error cursor moved
 * past it), not of the call: those are kept. */
static bool wb_error(int r)
{
	return r < 0 && r != -EBADF && r != -EINVAL && r != -ESPIPE && r != -ENOMEM &&
	       r != -EINTR && r != -EAGAIN;
}

/* ---- ranges ----------------------------------------------------------- */

static void ring_drop(struct gc_dirty_slot *s)
{
	uint64_t bytes = 0;
	uint32_t i;

	for (i = 0; i < s->s_n; i++)
		bytes += s->s_ring[(s->s_head + i) % GC_DIRTY_RING].r_len;
	if (bytes && s->s_devi >= 0)
		__atomic_sub_fetch(&devs[s->s_devi].dd_inflight, (int64_t)bytes,
				   __ATOMIC_RELAXED);
	__atomic_store_n(&s->s_n, 0, __ATOMIC_RELAXED); /* read unlocked as a hint by age_idle */
	s->s_head = 0;
}

/* Waits for the oldest range of @s (slot lock held). */
static void wait_oldest(struct gc_dirty_slot *s, int fd)
{
	struct gc_dirty_range *rg = &s->s_ring[s->s_head];
	struct dirty_dev *dd = &devs[s->s_devi];
	uint64_t t0 = gc_now_ns(), t1;
	int r;

	r = gc_sys_sfr(fd, (off64_t)rg->r_off, (off64_t)rg->r_len,
		       SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			       SYNC_FILE_RANGE_WAIT_AFTER);
	t1 = gc_now_ns();
	if (wb_error(r))
		gc_dirty_keep_error(s->s_dev, s->s_ino, r);
	gc_stat_inc(dirty_waits);
	gc_stat_add(dirty_wait_ns, t1 - t0);
	__atomic_sub_fetch(&dd->dd_inflight, (int64_t)rg->r_len, __ATOMIC_RELAXED);
	if (dev_lock(dd)) {
		gc_dirty_waited(&dd->dd_ps, &gc_cfg.c_dirty, rg->r_len, t0, t1);
		dev_unlock(dd);
	}
	s->s_head = (s->s_head + 1) % GC_DIRTY_RING;
	__atomic_sub_fetch(&s->s_n, 1, __ATOMIC_RELAXED);
}

/* Is @fd (still) a file worth limiting? Fills the slot's identity. */
static bool classify(struct gc_dirty_slot *s, int fd)
{
	struct stat st;
	struct statfs sf;
	long fl;
	int i;

	if (syscall(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto skip;
	if (s->s_state != SLOT_NEW &&
	    (s->s_dev != (uint64_t)st.st_dev || s->s_ino != (uint64_t)st.st_ino)) {
		/* the number names another file now: its old ranges are not ours */
		ring_drop(s);
	}
	s->s_dev = (uint64_t)st.st_dev;
	s->s_ino = (uint64_t)st.st_ino;
	fl = syscall(SYS_fcntl, fd, F_GETFL);
	if (fl < 0 || (fl & O_DIRECT) || (fl & O_ACCMODE) == O_RDONLY)
		goto skip;
	i = dev_index(s->s_dev);
	if (i < 0)
		goto skip;
	if (!__atomic_load_n(&devs[i].dd_ok, __ATOMIC_ACQUIRE)) {
		uint32_t ok = syscall(SYS_fstatfs, fd, &sf) == 0 && !fs_useless(sf.f_type) ? 1 : 2;

		__atomic_store_n(&devs[i].dd_ok, ok, __ATOMIC_RELEASE);
	}
	if (__atomic_load_n(&devs[i].dd_ok, __ATOMIC_ACQUIRE) != 1)
		goto skip;
	if (s->s_devi != i)
		ring_drop(s);
	s->s_devi = i;
	s->s_state = SLOT_TRACK;
	return true;
skip:
	ring_drop(s);
	s->s_state = SLOT_SKIP;
	return false;
}

/* Idle descriptors (closed by stdio behind our back, or just quiet) must
 * not keep their device's writeback count up: a range started this long
 * ago is done or none of our business. */
#define AGE_NS (2000ULL * GC_NSEC_PER_MSEC)

static void age_idle(int self, uint64_t now)
{
	int fd;

	for (fd = 0; fd < GC_DIRTY_FDS; fd++) {
		struct gc_dirty_slot *s = &gc_dirty_slots[fd];
		uint32_t free_ = 0;
		uint32_t last;

		if (fd == self || !__atomic_load_n(&s->s_n, __ATOMIC_RELAXED))
			continue;
		if (!__atomic_compare_exchange_n(&s->s_busy, &free_, 1, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		last = (s->s_head + s->s_n - 1) % GC_DIRTY_RING;
		if (s->s_n && now - s->s_ring[last].r_start_ns > AGE_NS)
			ring_drop(s);
		__atomic_store_n(&s->s_busy, 0, __ATOMIC_RELEASE);
	}
}

static void observe(struct gc_dirty_slot *s, int fd, uint64_t now)
{
	struct dirty_dev *dd = &devs[s->s_devi];
	struct gc_devstats_io io;
	struct gc_dirty_obs o = { 0 };
	bool sweep;

	if (!gc_dirty_obs_due(&dd->dd_ps, now) || !dev_lock(dd))
		return;
	if (gc_dirty_obs_due(&dd->dd_ps, now)) {
		if (gc_devstats_io(s->s_dev, now, &io)) {
			o.o_write_bps = io.io_write_bytes_per_s;
			o.o_read_p99_ns = io.io_read_p99_ns;
			o.o_reads = io.io_read_window;
			gc_dirty_observe(&dd->dd_ps, &gc_cfg.c_dirty, &o, now);
		} else {
			/* no observer: look again later */
			__atomic_store_n(&dd->dd_ps.ds_obs_at, now, __ATOMIC_RELAXED);
		}
	}
	sweep = now - dd->dd_aged_at > AGE_NS;
	if (sweep)
		dd->dd_aged_at = now;
	dev_unlock(dd);
	if (sweep)
		age_idle(fd, now);
}

/* Waits (without spinning the CPU) for another thread's slow path on the
 * same descriptor: a writer sharing it is throttled too. */
static bool slot_lock(struct gc_dirty_slot *s)
{
	struct timespec ts = { 0, 100 * 1000 };
	uint64_t until = 0;
	uint32_t free_;

	for (;;) {
		free_ = 0;
		if (__atomic_compare_exchange_n(&s->s_busy, &free_, 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		if (!until)
			until = gc_now_ns() + GC_DIRTY_PAUSE_MAX_NS;
		else if (gc_now_ns() > until)
			return false;
		nanosleep(&ts, NULL);
	}
}

void gc_dirty_slow(int fd, int64_t off, uint64_t n)
{
	struct gc_dirty_slot *s = &gc_dirty_slots[fd];
	uint64_t pending, lo1, hi, start, end, now, t0, limit;
	struct dirty_dev *dd;
	int saved, r;

	(void)n;
	/* Nested, or a signal handler that interrupted library code. */
	if (gc_depth || gc_cfg.c_dirty.dc_mode == GC_DIRTY_OFF)
		return;
	gc_depth++;
	saved = errno;
	if (!slot_lock(s))
		goto out_nolock;
	pending = __atomic_exchange_n(&s->s_pending, 0, __ATOMIC_RELAXED);
	lo1 = __atomic_exchange_n(&s->s_lo1, 0, __ATOMIC_RELAXED);
	hi = __atomic_exchange_n(&s->s_hi, 0, __ATOMIC_RELAXED);
	if (!pending)
		goto out;
	if (s->s_state == SLOT_NEW)
		s->s_devi = -1;
	if (!classify(s, fd)) {
		__atomic_store_n(&s->s_thresh, GC_DIRTY_RECHECK, __ATOMIC_RELAXED);
		goto out;
	}
	dd = &devs[s->s_devi];
	/* The window's range: positioned writes' extent, or the bytes just
	 * before the file position (O_APPEND included: the position is the
	 * end of what it appended). Only a hint to writeback either way. */
	if (lo1 && off >= 0) {
		start = lo1 - 1;
		end = hi > start ? hi : start + pending;
	} else {
		int64_t pos = syscall(SYS_lseek, fd, 0, SEEK_CUR);

		if (pos < 0) {
			__atomic_store_n(&s->s_thresh, GC_DIRTY_RECHECK, __ATOMIC_RELAXED);
			goto out;
		}
		end = (uint64_t)pos;
		start = end > pending ? end - pending : 0;
		if (lo1) { /* positioned writes too in this window */
			if (lo1 - 1 < start)
				start = lo1 - 1;
			if (hi > end)
				end = hi;
		}
	}
	if (end <= start)
		goto out;
	if (s->s_n == GC_DIRTY_RING)
		wait_oldest(s, fd);
	r = gc_sys_sfr(fd, (off64_t)start, (off64_t)(end - start), SYNC_FILE_RANGE_WRITE);
	now = gc_now_ns();
	if (r == -EBADF || r == -EINVAL || r == -ESPIPE) {
		ring_drop(s);
		s->s_state = SLOT_SKIP;
		__atomic_store_n(&s->s_thresh, GC_DIRTY_RECHECK, __ATOMIC_RELAXED);
		goto out;
	}
	gc_stat_inc(dirty_started);
	gc_stat_add(dirty_started_bytes, end - start);
	s->s_ring[(s->s_head + s->s_n) % GC_DIRTY_RING] =
		(struct gc_dirty_range){ .r_off = start, .r_len = end - start, .r_start_ns = now };
	__atomic_add_fetch(&s->s_n, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dd->dd_inflight, (int64_t)(end - start), __ATOMIC_RELAXED);
	t0 = now;
	limit = __atomic_load_n(&dd->dd_limit, __ATOMIC_RELAXED);
	while (s->s_n && __atomic_load_n(&dd->dd_inflight, __ATOMIC_RELAXED) > (int64_t)limit &&
	       now - t0 < GC_DIRTY_PAUSE_MAX_NS) {
		wait_oldest(s, fd);
		now = gc_now_ns();
		limit = __atomic_load_n(&dd->dd_limit, __ATOMIC_RELAXED);
	}
	observe(s, fd, now);
	__atomic_store_n(&s->s_thresh, __atomic_load_n(&dd->dd_window, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
out:
	__atomic_store_n(&s->s_busy, 0, __ATOMIC_RELEASE);
out_nolock:
	errno = saved;
	gc_depth--;
}

void gc_dirty_reset(void)
{
	memset(gc_dirty_slots, 0, sizeof(gc_dirty_slots));
	memset(devs, 0, sizeof(devs));
	memset(kept, 0, sizeof(kept));
	kept_n = 0;
}

bool gc_dirty_dev_info(uint64_t st_dev, uint64_t *limit, uint64_t *window,
		       int64_t *inflight, uint64_t *bw)
{
	int i;

	for (i = 0; i < GC_DIRTY_DEVS; i++) {
		if (__atomic_load_n(&devs[i].dd_dev1, __ATOMIC_ACQUIRE) != st_dev + 1)
			continue;
		*limit = __atomic_load_n(&devs[i].dd_limit, __ATOMIC_RELAXED);
		*window = __atomic_load_n(&devs[i].dd_window, __ATOMIC_RELAXED);
		*inflight = __atomic_load_n(&devs[i].dd_inflight, __ATOMIC_RELAXED);
		*bw = __atomic_load_n(&devs[i].dd_bw, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}
