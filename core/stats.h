/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Process-wide counters and histograms: what the program asked for and what
 * the library really issued; read by the exit report (LIBGC_REPORT) and, in
 * the per-process stats segment (core/procstats), by gcstat. Every request
 * bumps several, so each thread counts in a slot of its own, claimed at its
 * first count, with plain adds (one instruction each: a signal handler on
 * the same thread cannot split one); a reader sums the slots. Threads past
 * GC_STAT_SLOTS share one more slot, with atomic adds. */
#ifndef GC_STATS_H
#define GC_STATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/sys.h"

#define GC_STATS(X)                                                                 \
	X(req_fsync)		/* fsync() calls from the program */               \
	X(req_fdatasync)	/* fdatasync() calls */                            \
	X(req_osync)		/* converted O_SYNC/O_DSYNC/RWF_*SYNC writes */    \
	X(real_fsync)		/* real fsync() issued by the library */           \
	X(real_fdatasync)	/* real fdatasync() issued */                      \
	X(direct)		/* requests served by a direct real call */        \
	X(committed)		/* this process's requests served by a commit */   \
	X(commits)		/* transactions committed */                       \
	X(batched)		/* handles carried by those transactions */        \
	X(close_immediate)	/* closed at once (lone writer, fast device...) */ \
	X(close_count)		/* closed when the expected joiners arrived */     \
	X(close_timeout)	/* closed at the deadline */                       \
	X(staged)		/* sync_file_range staging before a join */        \
	X(deferred)		/* requests handed back to the next transaction */ \
	X(commit_ns)		/* summed commit latency: close to last real call */ \
	X(open_ns)		/* summed time transactions stayed open */         \
	X(wait_ns)		/* summed time requests spent in the library */    \
	X(bypass)		/* requests sent direct by the bypass rule */      \
	X(scoped_out)		/* requests sent direct by LIBGC_SCOPE (core/sites.h) */ \
	X(stalled)		/* commits given up on: a live participant went silent */ \
	X(errors)		/* requests that failed (by errno: gc_stats_errno) */ \
	X(osync_convert)	/* O_SYNC/O_DSYNC descriptors converted at open */ \
	X(bytes_written)	/* bytes of writes made durable (O_SYNC/O_DSYNC, RWF_*SYNC) */ \
	X(bytes_buffered)	/* bytes of the other (buffered) write calls */   \
	X(dirty_started)	/* dirty limiter: writeback started (windows) */ \
	X(dirty_started_bytes)	/* ... their bytes: the write-behind */             \
	X(dirty_waits)		/* ... waits for a writer's oldest range */        \
	X(dirty_wait_ns)	/* ... their summed time */                        \
	X(dirty_polls)		/* ... looks (cachestat) at a range still under writeback */ \
	X(dirty_paced)		/* ... waits paced at the bandwidth (no cachestat) */ \
	X(dirty_busy)		/* ... slow paths given up: the descriptor's slot stayed busy */ \
	X(intent_logged)	/* requests acknowledged through the intent log */ \
	X(intent_real)		/* requests in its scope served by a real call */  \
	X(intent_records)	/* records it wrote */                             \
	X(intent_bytes)		/* their bytes of file data */                     \
	X(intent_retired)	/* RETIRE records (after a real call) */           \
	X(intent_ckpts)		/* checkpoints that retired records */             \
	X(pass_sync_file_range) X(pass_syncfs) X(pass_sync) X(pass_msync)

struct gc_stats {
#define GC_STAT_FIELD(n) uint64_t n;
	GC_STATS(GC_STAT_FIELD)
#undef GC_STAT_FIELD
};

/*
 * Histograms: 4 buckets per power of two (values below 4 exactly), so a
 * percentile read back is within 12% of the truth either way, which is as
 * close as gcstat's two digits show. Times count in units of 128 ns: the
 * first buckets hold anything under 0.5 us, the last anything from 2^36
 * ns (69 s) on. Batch sizes count exactly up to 3, the last from 256.
 */
enum gc_hist_kind {
	GC_H_WAIT,	/* ns a request spent in the library (as the program waits) */
	GC_H_COMMIT,	/* ns from a transaction's close to its last real call */
	GC_H_BATCH,	/* participants (handles) per transaction */
	GC_H_COUNT
};
#define GC_HIST_NS 112
#define GC_HIST_NS_SHIFT 7
#define GC_HIST_BATCH 28

static inline unsigned int gc_hist_bucket(uint64_t v)
{
	unsigned int msb;

	if (v < 4)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	return (msb - 1) * 4 + (unsigned int)((v >> (msb - 2)) & 3);
}
/* The smallest value of generic bucket @b. */
uint64_t gc_hist_bucket_low(unsigned int b);

static inline unsigned int gc_hist_ns_bucket(uint64_t ns)
{
	unsigned int b = gc_hist_bucket(ns >> GC_HIST_NS_SHIFT);

	return b < GC_HIST_NS ? b : GC_HIST_NS - 1;
}

/* The per-request histogram lives in each slot; the per-commit ones are
 * one per process (atomic adds: a commit is rare beside a request). */
struct gc_stat_slot {
	struct gc_stats s;
	uint64_t sl_wait[GC_HIST_NS];
	uint32_t sl_shared;	/* the slot of threads past GC_STAT_SLOTS */
	uint32_t sl_pad;
} __attribute__((aligned(64)));

#define GC_STAT_SLOTS 16
#define GC_STAT_ALL (GC_STAT_SLOTS + 1)

/* errno values of failed requests: the first GC_ERRTAB seen each get an
 * entry; any later one counts in the last. */
#define GC_ERRTAB 15
struct gc_errtab {
	struct {
		int32_t e_err;		/* 0: free, claimed with a compare-and-swap */
		uint32_t e_pad;
		uint64_t e_count;
	} et[GC_ERRTAB + 1];
};

/* Everything a process counts, in private memory or its stats segment. */
struct gc_stat_area {
	/* the process's, first: on the page of the first thread's slot (a
	 * first commit made one page fault less) */
	uint64_t sa_commit[GC_HIST_NS];
	uint64_t sa_batch[GC_HIST_BATCH];
	struct gc_errtab sa_err;
	struct gc_stat_slot sa_slot[GC_STAT_ALL];
};

/* A reader's sums. */
struct gc_hists {
	uint64_t h_wait[GC_HIST_NS];
	uint64_t h_commit[GC_HIST_NS];
	uint64_t h_batch[GC_HIST_BATCH];
};

/* The area in use: the stats segment's once it exists, else private. */
extern struct gc_stat_area *gc_stats_base;
struct gc_stat_area *gc_stats_private(void);
/* Points every thread at the area @a from its next count on (the segment
 * is made, or the fork child forgets it). */
void gc_stats_switch(struct gc_stat_area *a);

/* This thread's slot, and the generation of the process's identity it was
 * found for (gc_sys_gen_peek). */
extern __thread struct gc_stat_slot *gc_ts_slot __attribute__((tls_model("initial-exec")));
extern __thread uint32_t gc_ts_gen __attribute__((tls_model("initial-exec")));
struct gc_stat_slot *gc_stat_slot_slow(void);
/* The slot index (0..GC_STAT_SLOTS) of this thread, claiming one. */
unsigned int gc_stat_slot_index(void);

static inline struct gc_stat_slot *gc_slot(void)
{
	if (__builtin_expect(gc_ts_gen == gc_sys_gen_peek() && gc_ts_slot != NULL, 1))
		return gc_ts_slot;
	return gc_stat_slot_slow();
}

static inline void gc_slot_add(struct gc_stat_slot *sl, uint64_t *p, uint64_t v)
{
	if (__builtin_expect(sl->sl_shared, 0)) {
		__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
		return;
	}
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	__asm__ volatile("addq %1, %0" : "+m"(*p) : "er"(v));
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

#define gc_stat_add_to(sl, field, v) gc_slot_add((sl), &(sl)->s.field, (uint64_t)(v))
#define gc_stat_add(field, v) gc_stat_add_to(gc_slot(), field, v)
#define gc_stat_inc(field) gc_stat_add(field, 1)

/* The @pct-th percentile (0-100) of @h (@n buckets, values in units of
 * 2^@shift), as the middle of its bucket; 0 for an empty histogram. */
uint64_t gc_hist_pct(const uint64_t *h, unsigned int n, unsigned int shift, unsigned int pct);
uint64_t gc_hist_total(const uint64_t *h, unsigned int n);
#define gc_hist_ns_pct(h, pct) gc_hist_pct((h), GC_HIST_NS, GC_HIST_NS_SHIFT, (pct))

/* ---- Hooks: the journal and the shim call these; each is a few adds on
 * the calling thread's slot, safe with any lock held and in a signal
 * handler. -------------------------------------------------------------- */

/* A sync request of this process ended after @ns in the library with
 * result @r (0 or -errno). */
static inline void gc_stats_request_end_in(struct gc_stat_slot *sl, uint64_t ns, int r);
void gc_stats_request_end(uint64_t ns, int r);
/* A request of this process got its result from a commit (its own real
 * call as the inode's owner, or a peer's): once per such handle, in the
 * handle's own process. */
void gc_stats_handle_served(void);
/* A transaction ended: @handles participants, @commit_ns from its close to
 * its last real call. Called by whichever process ends it. */
void gc_stats_commit_end(uint32_t handles, uint64_t commit_ns);
/* @r is a negative errno: counted by errno. */
void gc_stats_errno(int r);

static inline void gc_stats_request_end_in(struct gc_stat_slot *sl, uint64_t ns, int r)
{
	gc_slot_add(sl, &sl->s.wait_ns, ns);
	gc_slot_add(sl, &sl->sl_wait[gc_hist_ns_bucket(ns)], 1);
	if (__builtin_expect(r < 0, 0)) {
		gc_slot_add(sl, &sl->s.errors, 1);
		gc_stats_errno(r);
	}
}

/* The sum of every slot (segment and private) into *out; @h, when not
 * NULL, gets the summed histograms, @e the errno counts. */
void gc_stats_sum(struct gc_stats *out);
void gc_stats_sum_all(struct gc_stats *out, struct gc_hists *h, struct gc_errtab *e);
/* Adds @a's counts to *out, @h and @e (each may be NULL but @out). */
void gc_stats_sum_area(const struct gc_stat_area *a, struct gc_stats *out, struct gc_hists *h,
		       struct gc_errtab *e);
/* Zero every count, give every slot up (the child after fork counts only
 * its own calls). */
void gc_stats_reset(void);

/* Requests of every kind. */
static inline uint64_t gc_stats_requests(const struct gc_stats *s)
{
	return s->req_fsync + s->req_fdatasync + s->req_osync;
}

/* One line "libgc: pid=N key=value ..." (no trailing newline) into buf. */
int gc_stats_format(char *buf, size_t len);
/* The names of the counters, in GC_STATS order. */
extern const char *const gc_stats_names[];
#define GC_STATS_NFIELDS (sizeof(struct gc_stats) / sizeof(uint64_t))
#endif
