/* Process-wide counters: what the program asked for and what the library
 * really issued. Relaxed atomics; printed by the exit report (LIBGC_REPORT). */
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
	X(pass_sync_file_range) X(pass_syncfs) X(pass_sync) X(pass_msync)

struct gc_stats {
#define GC_STAT_FIELD(n) uint64_t n;
	GC_STATS(GC_STAT_FIELD)
#undef GC_STAT_FIELD
};

extern struct gc_stats gc_stats;

#define gc_stat_add(field, v) __atomic_fetch_add(&gc_stats.field, (v), __ATOMIC_RELAXED)
#define gc_stat_inc(field) gc_stat_add(field, 1)

/* One line "libgc: pid=N key=value ..." (no trailing newline) into buf. */
int gc_stats_format(char *buf, size_t len);
#endif
