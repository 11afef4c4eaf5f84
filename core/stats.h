/* Process-wide counters: what the program asked for and what the library
 * really issued; printed by the exit report (LIBGC_REPORT). Every request
 * bumps several, so they are kept in per-thread shards (a cache line or
 * more each, assigned round-robin) and summed when read: one shared set
 * made every request of every thread fight for the same cache line. */
#ifndef GC_STATS_H
#define GC_STATS_H
#include <stdint.h>
#include <stdio.h>

#define GC_STATS(X)                                                                 \
	X(req_fsync)		/* fsync() calls from the program */               \
	X(req_fdatasync)	/* fdatasync() calls */                            \
	X(req_osync)		/* converted O_SYNC/O_DSYNC/RWF_*SYNC writes */    \
	X(real_fsync)		/* real fsync() issued by the library */           \
	X(real_fdatasync)	/* real fdatasync() issued */                      \
	X(direct)		/* requests served by a direct real call */        \
	X(commits)		/* transactions committed */                       \
	X(batched)		/* handles carried by those transactions */        \
	X(close_immediate)	/* closed at once (lone writer, fast device...) */ \
	X(close_count)		/* closed when the expected joiners arrived */     \
	X(close_timeout)	/* closed at the deadline */                       \
	X(staged)		/* sync_file_range staging before a join */        \
	X(commit_ns)		/* summed commit latency: close to last real call */ \
	X(open_ns)		/* summed time transactions stayed open */         \
	X(bypass)		/* requests sent direct by the bypass rule */      \
	X(stalled)		/* commits given up on: a live participant went silent */ \
	X(dirty_started)	/* dirty limiter: writeback started (windows) */ \
	X(dirty_waits)		/* ... waits for a writer's oldest range */        \
	X(dirty_wait_ns)	/* ... their summed time */                        \
	X(dirty_kept)		/* ... writeback errors those waits consumed, kept */ \
	X(dirty_returned)	/* ... kept errors returned by fsync/fdatasync */  \
	X(pass_sync_file_range) X(pass_syncfs) X(pass_sync) X(pass_msync)

struct gc_stats {
#define GC_STAT_FIELD(n) uint64_t n;
	GC_STATS(GC_STAT_FIELD)
#undef GC_STAT_FIELD
};

#define GC_STAT_SHARDS 8

struct gc_stats_shard {
	struct gc_stats s;
} __attribute__((aligned(64)));

extern struct gc_stats_shard gc_stats_shards[GC_STAT_SHARDS];
/* This thread's shard + 1; 0 until its first count. */
extern __thread unsigned int gc_stat_slot __attribute__((tls_model("initial-exec")));
unsigned int gc_stat_slot_assign(void);

static inline struct gc_stats *gc_stats_mine(void)
{
	unsigned int i = gc_stat_slot;

	if (__builtin_expect(!i, 0))
		i = gc_stat_slot_assign();
	return &gc_stats_shards[i - 1].s;
}

#define gc_stat_add(field, v) __atomic_fetch_add(&gc_stats_mine()->field, (v), __ATOMIC_RELAXED)
#define gc_stat_inc(field) gc_stat_add(field, 1)

/* The sum of every shard into *out. */
void gc_stats_sum(struct gc_stats *out);
/* Zero every shard (the child after fork counts only its own calls). */
void gc_stats_reset(void);

/* One line "libgc: pid=N key=value ..." (no trailing newline) into buf. */
int gc_stats_format(char *buf, size_t len);
#endif
