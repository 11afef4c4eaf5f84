/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Dirty limiter state: per descriptor, the bytes written since writeback was
 * last started and the ranges under writeback; per device, the bytes under
 * writeback and the policy's limit. It never looks at a file's error state:
 * writeback is started with SYNC_FILE_RANGE_WRITE alone and watched with
 * cachestat(2), or paced from the measured bandwidth where that is missing.
 * Fixed tables, atomics: the write path takes no lock and allocates nothing.
 * Per process. */
#ifndef GC_CORE_DIRTY_H
#define GC_CORE_DIRTY_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/dirty.h"

/* Descriptors at or above this number are not limited. */
#define GC_DIRTY_FDS 4096
#define GC_DIRTY_RING 8
#define GC_DIRTY_DEVS 16
/* The first slow path of a descriptor runs after this many bytes: files
 * smaller than that never cost a system call. */
#define GC_DIRTY_FIRST GC_DIRTY_WIN_MIN
/* A descriptor found unsuitable (not a regular file, O_DIRECT, a filesystem
 * where sync_file_range does nothing) is looked at again after this much. */
#define GC_DIRTY_RECHECK (64ULL << 20)

struct gc_dirty_range {
	uint64_t r_off, r_len;
	uint64_t r_start_ns;		/* when its writeback was started */
	uint64_t r_due_ns;		/* when the device should have written it */
};

/* What a write reads and writes, one cache line a descriptor. The file the
 * slot was classified for and its ring of ranges, which only the slow path
 * reads, are kept apart (dirty.c): in the zeroed data they made the table
 * 1.5 MiB and the library's zeroed mapping large enough for a transparent
 * huge page, which the first write then allocated and cleared whole. */
struct gc_dirty_slot {
	uint64_t s_pending;		/* bytes written since the last window (atomic) */
	uint64_t s_thresh;		/* s_pending that calls the slow path; 0 = GC_DIRTY_FIRST */
	uint64_t s_lo1;			/* positioned writes in this window: lowest offset + 1, 0 none */
	uint64_t s_hi;			/* ... and highest end */
	uint32_t s_busy;		/* slow-path try-lock: 0 free, else its taker's generation */
	uint32_t s_gen;			/* generation whose ranges the ring holds */
	uint32_t s_state;		/* SLOT_* in dirty.c */
	int32_t s_devi;			/* index in the device table */
	uint32_t s_head, s_n;		/* ring of ranges under writeback */
	uint64_t s_quiet_ino;		/* the file a sync request left with nothing
					 * written through this number since (0: none;
					 * a write clears it, atomic) */
} __attribute__((aligned(64)));

extern struct gc_dirty_slot gc_dirty_slots[GC_DIRTY_FDS];

/* The slow path: classify, start writeback of the window, wait while the
 * device has more than its limit in flight. @off is the offset a
 * positioned write used, -1 for write()/writev(). */
void gc_dirty_slow(int fd, int64_t off, uint64_t n);

/* A write went through the descriptor of @s: not quiet any more
 * (gc_dirty_synced). Read first, so that a write to a descriptor that was
 * never synced leaves the slot's line as it is. */
static inline void gc_dirty_slot_unquiet(struct gc_dirty_slot *s)
{
	if (__atomic_load_n(&s->s_quiet_ino, __ATOMIC_RELAXED))
		__atomic_store_n(&s->s_quiet_ino, 0, __ATOMIC_RELAXED);
}

/* The same for @fd: a converted descriptor's write says so before its
 * request; the others' through gc_dirty_count. */
static inline void gc_dirty_unquiet(int fd)
{
	if ((unsigned)fd < GC_DIRTY_FDS)
		gc_dirty_slot_unquiet(&gc_dirty_slots[fd]);
}

/* The counting half of gc_dirty_wrote: true when the slow path is due. It
 * needs no configuration, so that a program's small writes (a shell's echo
 * to a pipe) never set the library up. */
static inline bool gc_dirty_count(int fd, int64_t off, uint64_t n)
{
	struct gc_dirty_slot *s;
	uint64_t p, t;

	if ((unsigned)fd >= GC_DIRTY_FDS)
		return false;
	s = &gc_dirty_slots[fd];
	/* the add first: a first touch of the slot's page that reads maps
	 * the zero page, and the write after it copies it, two faults */
	p = __atomic_add_fetch(&s->s_pending, n, __ATOMIC_RELAXED);
	gc_dirty_slot_unquiet(s);
	if (off >= 0) {
		uint64_t lo1 = __atomic_load_n(&s->s_lo1, __ATOMIC_RELAXED);

		if (!lo1 || (uint64_t)off + 1 < lo1)
			__atomic_store_n(&s->s_lo1, (uint64_t)off + 1, __ATOMIC_RELAXED);
		if ((uint64_t)off + n > __atomic_load_n(&s->s_hi, __ATOMIC_RELAXED))
			__atomic_store_n(&s->s_hi, (uint64_t)off + n, __ATOMIC_RELAXED);
	}
	t = __atomic_load_n(&s->s_thresh, __ATOMIC_RELAXED);
	return __builtin_expect(p >= (t ? t : GC_DIRTY_FIRST), 0);
}

/* A sync request of inode @ino through @fd, before its real call: true
 * when it has nothing to write as far as the library can tell (the last
 * request through @fd was of that file, and no write went through @fd
 * since); @fd is quiet for @ino from now on. A hint for the policy only:
 * writes the library does not see (stdio's, mmap stores, another
 * descriptor's or process's) are not counted. */
static inline bool gc_dirty_synced(int fd, uint64_t ino)
{
	return (unsigned)fd < GC_DIRTY_FDS && ino &&
	       __atomic_exchange_n(&gc_dirty_slots[fd].s_quiet_ino, ino, __ATOMIC_RELAXED) == ino;
}

/* A buffered write of @n > 0 bytes at @off (-1: the file position) went to
 * @fd, which has no conversion entry. */
static inline void gc_dirty_wrote(int fd, int64_t off, uint64_t n)
{
	if (gc_dirty_count(fd, off, n))
		gc_dirty_slow(fd, off, n);
}

/* In the child of fork(): the slow-path locks that the parent's other
 * threads held, and the ranges the parent started, are not the child's. */
void gc_dirty_atfork_child(void);

/* Tests and introspection. */
void gc_dirty_reset(void);
/* The device's limit, window and bytes in flight; false if not seen. */
bool gc_dirty_dev_info(uint64_t st_dev, uint64_t *limit, uint64_t *window,
		       int64_t *inflight, uint64_t *bw);
/* Whether cachestat(2) watches writeback (1), has not been tried (0), or
 * cannot (-1: ENOSYS, a seccomp filter): then waits are paced. Tests set
 * -1 to take the paced path, 0 to probe again. */
int gc_dirty_cachestat(void);
void gc_dirty_set_cachestat(int state);
#endif
