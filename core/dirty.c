// SPDX-License-Identifier: LGPL-2.1-or-later
/* Dirty limiter state and its slow path (see dirty.h): write-behind with
 * sync_file_range(WRITE) every window, and a wait for the oldest range while
 * the device has more than its limit under writeback, watched with
 * cachestat(2) or paced at the device's bandwidth. Neither reads nor moves a
 * file's writeback-error cursor (DESIGN rule 8): every error stays in the
 * kernel for the program's own syncs, on every description, in every
 * process. Raw system calls, atomics and try-locks only: safe from a signal
 * handler; cancellation is off while a slot is held. */
#include "core/dirty.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
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

struct gc_dirty_slot gc_dirty_slots[GC_DIRTY_FDS] GC_LARGE;

/* The rest of a slot, for the slow path only: mapped at the process's first
 * slow path of a regular file (1 MiB, never a huge page), so that the
 * zeroed data every write touches stays small (core/dirty.h). [the slot's
 * lock] */
struct dirty_cold {
	uint64_t c_dev, c_ino;		/* the file the slot was classified for */
	struct gc_dirty_range c_ring[GC_DIRTY_RING];
};
static struct dirty_cold *cold;		/* [atomic] GC_DIRTY_FDS of them; set once */

static struct dirty_cold *cold_of(const struct gc_dirty_slot *s)
{
	return &cold[s - gc_dirty_slots];
}

/* Maps the slots' other halves, once, at a regular file's first slow path
 * (a stream to /dev/null or a pipe never maps them); false if that cannot
 * be done (the descriptor is then not limited). */
static bool cold_map(void)
{
	size_t len = GC_DIRTY_FDS * sizeof(struct dirty_cold);
	struct dirty_cold *c = NULL, *fresh;

	if (__atomic_load_n(&cold, __ATOMIC_ACQUIRE))
		return true;
	fresh = gc_sys_map_table(len);
	if (!fresh)
		return false;
	if (!__atomic_compare_exchange_n(&cold, &c, fresh, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		munmap(fresh, len);
	return true;
}

/* A bit per slot that may hold ranges: set as a slot's first range is
 * added, cleared as its last goes, both under the slot's lock. The idle
 * sweep visits these slots only; reading all 4096 slots' counts mapped the
 * whole table (then 1.5 MiB: 384 page faults) in every process the limiter
 * saw. A fork child keeps its parent's bits, unwritten (no page copied):
 * its slots are of an older generation, and a stale bit costs a try-lock. */
static uint64_t busy_map[GC_DIRTY_FDS / 64];

static void busy_set(const struct gc_dirty_slot *s, bool on)
{
	size_t i = (size_t)(s - gc_dirty_slots);
	uint64_t bit = 1ULL << (i % 64);

	if (on)
		__atomic_fetch_or(&busy_map[i / 64], bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&busy_map[i / 64], ~bit, __ATOMIC_RELAXED);
}

struct dirty_dev {
	uint64_t dd_dev1;		/* [atomic] st_dev + 1; 0: free (appended by CAS, never removed) */
	uint32_t dd_ok;			/* [atomic] 0 not yet known, 1 sync_file_range useful, 2 not */
	uint32_t dd_lock;		/* [atomic] try-lock of the [dd_lock] fields */
	int64_t dd_inflight;		/* [atomic] bytes under writeback started here */
	uint64_t dd_limit, dd_window;	/* [atomic] published from dd_ps */
	uint64_t dd_bw;			/* [atomic] */
	uint64_t dd_due;		/* [atomic] when the device should have written ours */
	uint64_t dd_aged_at;		/* [dd_lock] last sweep for idle slots */
	uint64_t dd_ws_at;		/* [dd_lock] when dd_ws was read, 0 never */
	struct gc_write_sample dd_ws;	/* [dd_lock] the disk's counters then */
	struct gc_dirty_state dd_ps;	/* [dd_lock] */
} __attribute__((aligned(64)));

static struct dirty_dev devs[GC_DIRTY_DEVS] GC_LARGE;

/* The generation of this process's slot locks and rings, never 0: a child
 * of fork() starts a new one, so a slot another thread of its parent held
 * at the fork, and the ranges the parent started, are seen to be stale. */
static uint32_t dirty_gen = 1;

/* cachestat(2), process-wide: 0 untried, 1 works, -1 cannot. */
static int cs_state;

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* one number on every architecture but alpha */
#endif
struct cs_range {
	uint64_t off, len;
};
struct cs_stat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

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

	gc_made_note(GC_MADE_DIRTY);
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

/* Takes dd_lock; the first time also sets dd_ps up. */
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

/* Publishes dd_ps's decision and drops dd_lock. */
static void dev_unlock(struct dirty_dev *dd)
{
	__atomic_store_n(&dd->dd_limit, dd->dd_ps.ds_limit, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_window, dd->dd_ps.ds_window, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_bw, dd->dd_ps.ds_bw, __ATOMIC_RELAXED);
	__atomic_store_n(&dd->dd_lock, 0, __ATOMIC_RELEASE);
}

/* ---- slots ------------------------------------------------------------ */

/* Takes s_busy without waiting. A lock word of an older generation was
 * taken by a thread of the parent process that this child does not have:
 * it is taken over. A slot whose ring holds another generation's ranges
 * starts with an empty ring (the device counts were reset with them). */
static bool slot_trylock(struct gc_dirty_slot *s)
{
	uint32_t gen, cur = 0;

	gc_made_note(GC_MADE_DIRTY);
	gen = __atomic_load_n(&dirty_gen, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&s->s_busy, &cur, gen, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED) &&
	    (cur == gen || !__atomic_compare_exchange_n(&s->s_busy, &cur, gen, 0,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return false;
	if (s->s_gen != gen) {
		__atomic_store_n(&s->s_n, 0, __ATOMIC_RELAXED);
		s->s_head = 0;
		s->s_gen = gen;
	}
	return true;
}

static void slot_unlock(struct gc_dirty_slot *s)
{
	__atomic_store_n(&s->s_busy, 0, __ATOMIC_RELEASE);
}

/* Waits (without spinning the CPU) for another thread's slow path on the
 * same descriptor: a writer sharing it is throttled too. */
static bool slot_lock(struct gc_dirty_slot *s)
{
	struct timespec ts = { 0, 100 * 1000 };
	uint64_t until = 0;

	for (;;) {
		if (slot_trylock(s))
			return true;
		if (!until)
			until = gc_now_ns() + GC_DIRTY_PAUSE_MAX_NS;
		else if (gc_now_ns() > until)
			return false;
		syscall(SYS_nanosleep, &ts, NULL);
	}
}

/* ---- ranges ----------------------------------------------------------- */

static void ring_drop(struct gc_dirty_slot *s)
{
	uint64_t bytes = 0;
	uint32_t i;

	for (i = 0; i < s->s_n; i++)
		bytes += cold_of(s)->c_ring[(s->s_head + i) % GC_DIRTY_RING].r_len;
	if (bytes && s->s_devi >= 0)
		__atomic_sub_fetch(&devs[s->s_devi].dd_inflight, (int64_t)bytes,
				   __ATOMIC_RELAXED);
	__atomic_store_n(&s->s_n, 0, __ATOMIC_RELAXED); /* read unlocked as a hint by age_idle */
	s->s_head = 0;
	busy_set(s, false);
}

/* cachestat(2) is newer than many seccomp allow-lists, and the program
 * itself never makes it: under a filter that kills at a call it does not
 * know (systemd before 255 with SystemCallFilter= and no
 * SystemCallErrorNumber=), the call would kill the program where bare runs.
 * So it is made only by a thread seen to run under no filter just before:
 * its status file says so the first time, prctl(PR_GET_SECCOMP) each time
 * after (a filter is never lifted, so prctl meets a filter only once the
 * program put one on itself meanwhile). Under one, or where it cannot
 * tell, the process paces its waits, as without cachestat. */
static __thread bool cs_clear __attribute__((tls_model("initial-exec")));

static bool cs_usable(void)
{
	int m;

	if (__atomic_load_n(&cs_state, __ATOMIC_RELAXED) < 0)
		return false;
	m = gc_sys_seccomp(cs_clear);
	if (!m) {
		cs_clear = true;
		return true;
	}
	if (__atomic_exchange_n(&cs_state, -1, __ATOMIC_RELAXED) >= 0)
		gc_log(GC_LOG_DEBUG,
		       "dirty limiter: %s: no cachestat, waits paced at the bandwidth",
		       m < 0 ? "a thread's seccomp mode unknown" : "a seccomp filter");
	return false;
}

/* Pages of @rg still under writeback, from cachestat(2), which reads
 * page-cache state and nothing else; WB_PACED when it cannot tell (then
 * waits are paced), WB_GONE for a descriptor closed meanwhile: nothing left
 * to wait for through it. */
#define WB_PACED (-1)
#define WB_GONE (-2)
static int64_t under_writeback(int fd, const struct gc_dirty_range *rg)
{
	struct cs_range cr = { rg->r_off, rg->r_len };
	struct cs_stat cs;

	if (__atomic_load_n(&cs_state, __ATOMIC_RELAXED) < 0)
		return WB_PACED;
	if (syscall(SYS_cachestat, fd, &cr, &cs, 0) < 0) {
		if (errno == EBADF)
			return WB_GONE;
		/* ENOSYS before Linux 6.5, or what a filter answers */
		if (__atomic_exchange_n(&cs_state, -1, __ATOMIC_RELAXED) >= 0)
			gc_log(GC_LOG_DEBUG,
			       "dirty limiter: no cachestat (errno %d): waits paced at the bandwidth",
			       errno);
		return WB_PACED;
	}
	__atomic_store_n(&cs_state, 1, __ATOMIC_RELAXED);
	return (int64_t)cs.nr_writeback;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / GC_NSEC_PER_SEC), (long)(ns % GC_NSEC_PER_SEC) };

	/* raw: no cancellation point, and no other preload's idea of time */
	syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

static uint64_t page_size(void)
{
	static long ps;

	if (!ps)
		ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (uint64_t)ps : 4096;
}

/* Waits until the oldest range of @s has left writeback, or until
 * @deadline; then it leaves the ring either way (slot lock held). A wait
 * that saw its range written measures the device; a paced one only says
 * that the device held the writer. Pages left dirty and not under
 * writeback were written again after their writeback: a later window's. */
static void wait_oldest(struct gc_dirty_slot *s, int fd, uint64_t deadline)
{
	struct gc_dirty_range *rg = &cold_of(s)->c_ring[s->s_head];
	struct dirty_dev *dd = &devs[s->s_devi];
	uint64_t t0 = gc_now_ns(), now = t0, seen_at = 0, done, ns;
	int64_t left, seen = 0;

	while ((left = cs_usable() ? under_writeback(fd, rg) : WB_PACED) > 0 && now < deadline) {
		/* the rate since the last look, once there was one */
		done = seen > left ? (uint64_t)(seen - left) * page_size() : 0;
		ns = gc_dirty_poll_ns((uint64_t)left * page_size(),
				      __atomic_load_n(&dd->dd_bw, __ATOMIC_RELAXED), done,
				      now - seen_at);
		seen = left;
		seen_at = now;
		gc_stat_inc(dirty_polls);
		nap(ns < deadline - now ? ns : deadline - now);
		now = gc_now_ns();
	}
	if (left == WB_PACED) {
		gc_stat_inc(dirty_paced);
		if (rg->r_due_ns > now)
			nap((rg->r_due_ns < deadline ? rg->r_due_ns : deadline) - now);
	}
	now = gc_now_ns();
	gc_stat_inc(dirty_waits);
	gc_stat_add(dirty_wait_ns, now - t0);
	__atomic_sub_fetch(&dd->dd_inflight, (int64_t)rg->r_len, __ATOMIC_RELAXED);
	if ((left == 0 || left == WB_PACED) && dev_lock(dd)) {
		if (!left)
			gc_dirty_waited(&dd->dd_ps, &gc_cfg.c_dirty, rg->r_len, t0, now);
		else if (now - t0 >= GC_DIRTY_BLOCKED_NS)
			gc_dirty_held(&dd->dd_ps, now);
		dev_unlock(dd);
	}
	s->s_head = (s->s_head + 1) % GC_DIRTY_RING;
	if (!__atomic_sub_fetch(&s->s_n, 1, __ATOMIC_RELAXED))
		busy_set(s, false);
}

/* When a range of @len bytes started at @now should be written: after what
 * the device already has from this process, at its bandwidth. */
static uint64_t range_due(struct dirty_dev *dd, uint64_t len, uint64_t now)
{
	uint64_t d = gc_dirty_pace_ns(len, __atomic_load_n(&dd->dd_bw, __ATOMIC_RELAXED));
	uint64_t prev = __atomic_load_n(&dd->dd_due, __ATOMIC_RELAXED), due;

	do {
		due = (prev > now ? prev : now) + d;
	} while (!__atomic_compare_exchange_n(&dd->dd_due, &prev, due, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return due;
}

/* Is @fd (still) a file worth limiting? Fills the slot's identity. A real
 * O_SYNC/O_DSYNC descriptor (LIBGC_OSYNC=keep, or one we did not convert)
 * is written back by each write already. */
static bool classify(struct gc_dirty_slot *s, int fd)
{
	struct dirty_cold *c;
	struct stat st;
	struct statfs sf;
	long fl;
	int i;

	/* a regular file's slot has its other half (a ring is only ever a
	 * regular file's: a slot with none, s_n 0, reads nothing of it) */
	if (syscall(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode) || !cold_map())
		goto skip;
	c = cold_of(s);
	if (s->s_state != SLOT_NEW &&
	    (c->c_dev != (uint64_t)st.st_dev || c->c_ino != (uint64_t)st.st_ino)) {
		/* the number names another file now: its old ranges are not ours */
		ring_drop(s);
	}
	c->c_dev = (uint64_t)st.st_dev;
	c->c_ino = (uint64_t)st.st_ino;
	fl = syscall(SYS_fcntl, fd, F_GETFL);
	if (fl < 0 || (fl & (O_DIRECT | O_DSYNC)) || (fl & O_ACCMODE) == O_RDONLY)
		goto skip;
	i = dev_index(c->c_dev);
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
	for (int w = 0; w < GC_DIRTY_FDS / 64; w++) {
		uint64_t bits = __atomic_load_n(&busy_map[w], __ATOMIC_RELAXED);

		for (; bits; bits &= bits - 1) {
			int fd = w * 64 + __builtin_ctzll(bits);
			struct gc_dirty_slot *s = &gc_dirty_slots[fd];
			uint32_t last;

			if (fd == self || !__atomic_load_n(&s->s_n, __ATOMIC_RELAXED) ||
			    !slot_trylock(s))
				continue;
			last = (s->s_head + s->s_n - 1) % GC_DIRTY_RING;
			if (s->s_n && now - cold_of(s)->c_ring[last].r_start_ns > AGE_NS)
				ring_drop(s);
			slot_unlock(s);
		}
	}
}

/* Where no wait can see writeback end, the disk's own counters measure its
 * bandwidth: bytes written per time with writes in flight (dd_lock held). */
static void disk_sample(struct dirty_dev *dd, uint64_t st_dev, uint64_t now)
{
	struct gc_write_sample w, *o = &dd->dd_ws;
	uint64_t busy_ms, rw_ms;

	if (__atomic_load_n(&cs_state, __ATOMIC_RELAXED) >= 0 || !gc_devstats_writes(st_dev, &w))
		return;
	if (dd->dd_ws_at && w.ws_sectors >= o->ws_sectors && w.ws_busy_ms >= o->ws_busy_ms &&
	    w.ws_read_ms >= o->ws_read_ms && w.ws_write_ms >= o->ws_write_ms) {
		/* the share of busy time that reads took is not the writes' */
		busy_ms = w.ws_busy_ms - o->ws_busy_ms;
		rw_ms = (w.ws_read_ms - o->ws_read_ms) + (w.ws_write_ms - o->ws_write_ms);
		if (rw_ms)
			busy_ms = gc_muldiv(busy_ms, w.ws_write_ms - o->ws_write_ms, rw_ms);
		gc_dirty_busy_sample(&dd->dd_ps, &gc_cfg.c_dirty,
				     (w.ws_sectors - o->ws_sectors) * 512,
				     busy_ms * GC_NSEC_PER_MSEC, now);
	}
	dd->dd_ws = w;
	dd->dd_ws_at = now;
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
		if (gc_devstats_io(cold_of(s)->c_dev, now, &io)) {
			/* Paced writers write at the bandwidth they believe in, and
			 * the device then does just that: only its counters (bytes
			 * per time busy) can tell it could do more. */
			if (__atomic_load_n(&cs_state, __ATOMIC_RELAXED) >= 0)
				o.o_write_bps = io.io_write_bytes_per_s;
			o.o_read_p99_ns = io.io_read_p99_ns;
			o.o_reads = io.io_read_window;
			gc_dirty_observe(&dd->dd_ps, &gc_cfg.c_dirty, &o, now);
		} else {
			/* no observer: look again later */
			__atomic_store_n(&dd->dd_ps.ds_obs_at, now, __ATOMIC_RELAXED);
		}
		disk_sample(dd, cold_of(s)->c_dev, now);
	}
	sweep = now - dd->dd_aged_at > AGE_NS;
	if (sweep)
		dd->dd_aged_at = now;
	dev_unlock(dd);
	if (sweep)
		age_idle(fd, now);
}

/* The slow path runs in the process the tables belong to: a child made
 * without fork()'s handlers (_Fork, vfork, clone) shares or copied them
 * with its parent's threads' locks, and is not limited. */
static bool dirty_self(void)
{
	return (pid_t)syscall(SYS_getpid) == gc_getpid();
}

void gc_dirty_slow(int fd, int64_t off, uint64_t n)
{
	struct gc_dirty_slot *s = &gc_dirty_slots[fd];
	uint64_t pending, lo1, hi, start, end, now, deadline, limit;
	struct dirty_dev *dd;
	int saved, r, cancel;

	(void)n;
	/* Nested, or a signal handler that interrupted library code. */
	if (gc_depth || gc_cfg.c_dirty.dc_mode == GC_DIRTY_OFF || !dirty_self())
		return;
	gc_depth++;
	saved = errno;
	/* a thread cancelled with the slot held would leave it held */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (!slot_lock(s)) {
		gc_stat_inc(dirty_busy);
		goto out_nolock;
	}
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
	deadline = gc_now_ns() + GC_DIRTY_PAUSE_MAX_NS;
	if (s->s_n == GC_DIRTY_RING)
		wait_oldest(s, fd, deadline);
	/* WRITE alone starts writeback and checks no error: the WAIT flags
	 * would report the file's writeback errors here, to nobody */
	r = gc_sys_sfr(fd, (off64_t)start, (off64_t)(end - start), SYNC_FILE_RANGE_WRITE);
	now = gc_now_ns();
	/* (refused: no writeback started, so nothing to wait for either) */
	if (r == -EBADF || r == -EINVAL || r == -ESPIPE || gc_sys_refused(r)) {
		ring_drop(s);
		s->s_state = SLOT_SKIP;
		__atomic_store_n(&s->s_thresh, GC_DIRTY_RECHECK, __ATOMIC_RELAXED);
		goto out;
	}
	gc_stat_inc(dirty_started);
	gc_stat_add(dirty_started_bytes, end - start);
	cold_of(s)->c_ring[(s->s_head + s->s_n) % GC_DIRTY_RING] = (struct gc_dirty_range){
		.r_off = start,
		.r_len = end - start,
		.r_start_ns = now,
		.r_due_ns = range_due(dd, end - start, now),
	};
	if (__atomic_add_fetch(&s->s_n, 1, __ATOMIC_RELAXED) == 1)
		busy_set(s, true);
	__atomic_add_fetch(&dd->dd_inflight, (int64_t)(end - start), __ATOMIC_RELAXED);
	limit = __atomic_load_n(&dd->dd_limit, __ATOMIC_RELAXED);
	while (s->s_n && __atomic_load_n(&dd->dd_inflight, __ATOMIC_RELAXED) > (int64_t)limit &&
	       now < deadline) {
		wait_oldest(s, fd, deadline);
		now = gc_now_ns();
		limit = __atomic_load_n(&dd->dd_limit, __ATOMIC_RELAXED);
	}
	observe(s, fd, now);
	__atomic_store_n(&s->s_thresh, __atomic_load_n(&dd->dd_window, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
out:
	slot_unlock(s);
out_nolock:
	pthread_setcancelstate(cancel, NULL);
	errno = saved;
	gc_depth--;
}

GC_ONCE void gc_dirty_atfork_child(void)
{
	uint32_t g = dirty_gen + 1;
	int i;

	if (!gc_was_made(GC_MADE_DIRTY))
		return; /* no slot or device was ever taken */
	__atomic_store_n(&dirty_gen, g ? g : 1, __ATOMIC_RELAXED);
	for (i = 0; i < GC_DIRTY_DEVS; i++) {
		devs[i].dd_lock = 0;
		devs[i].dd_inflight = 0;
		devs[i].dd_due = 0;
	}
}

int gc_dirty_cachestat(void)
{
	return __atomic_load_n(&cs_state, __ATOMIC_RELAXED);
}

void gc_dirty_set_cachestat(int state)
{
	__atomic_store_n(&cs_state, state, __ATOMIC_RELAXED);
}

void gc_dirty_reset(void)
{
	memset(gc_dirty_slots, 0, sizeof(gc_dirty_slots));
	if (cold)
		memset(cold, 0, GC_DIRTY_FDS * sizeof(*cold));
	memset(busy_map, 0, sizeof(busy_map));
	memset(devs, 0, sizeof(devs));
	dirty_gen = 1;
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
