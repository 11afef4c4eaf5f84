/* Process-wide counters and histograms: what the program asked for and what
 * the library really issued; read by the exit report (LIBGC_REPORT) and, in
 * the per-process stats segment (core/procstats), by gcstat. Every request
 * bumps several, so they are kept in per-thread shards (a cache line or
 * more each, assigned round-robin) and summed when read: one shared set
 * made every request of every thread fight for the same cache line. */
#ifndef GC_STATS_H
#define GC_STATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

#define GC_STAT_SHARDS 8

/* Histograms: 4 sub-buckets per power of two (values below 4 exactly), so
 * a percentile read back is within 25% of the truth; the last bucket
 * holds everything beyond 2^40 (18 minutes in ns). */
enum gc_hist_kind {
	GC_H_WAIT,	/* ns a request spent in the library (as the program waits) */
	GC_H_COMMIT,	/* ns from a transaction's close to its last real call */
	GC_H_BATCH,	/* participants (handles) per transaction */
	GC_H_COUNT
};
#define GC_HIST_BUCKETS 160
/* errno values counted one by one; larger ones land in the last slot */
#define GC_ERRNO_SLOTS 136

struct gc_stats_shard {
	struct gc_stats s;
	uint64_t sh_hist[GC_H_COUNT][GC_HIST_BUCKETS];
	uint64_t sh_errno[GC_ERRNO_SLOTS];
} __attribute__((aligned(64)));

/* The shards in use: the process's stats segment once it exists
 * (core/procstats.h), private memory before that or without one. */
extern struct gc_stats_shard *gc_stats_base;
/* The private shards (the segment's fallback). */
struct gc_stats_shard *gc_stats_private_shards(void);
/* This thread's shard + 1; 0 until its first count. */
extern __thread unsigned int gc_stat_slot __attribute__((tls_model("initial-exec")));
unsigned int gc_stat_slot_assign(void);

static inline struct gc_stats_shard *gc_stats_shard_mine(void)
{
	unsigned int i = gc_stat_slot;

	if (__builtin_expect(!i, 0))
		i = gc_stat_slot_assign();
	return &__atomic_load_n(&gc_stats_base, __ATOMIC_RELAXED)[i - 1];
}

static inline struct gc_stats *gc_stats_mine(void)
{
	return &gc_stats_shard_mine()->s;
}

#define gc_stat_add(field, v) __atomic_fetch_add(&gc_stats_mine()->field, (v), __ATOMIC_RELAXED)
#define gc_stat_inc(field) gc_stat_add(field, 1)

static inline unsigned int gc_hist_bucket(uint64_t v)
{
	unsigned int msb, b;

	if (v < 4)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	b = (msb - 1) * 4 + (unsigned int)((v >> (msb - 2)) & 3);
	return b < GC_HIST_BUCKETS ? b : GC_HIST_BUCKETS - 1;
}
/* The smallest value of bucket @b. */
uint64_t gc_hist_bucket_low(unsigned int b);
static inline void gc_hist_add(enum gc_hist_kind k, uint64_t v)
{
	__atomic_fetch_add(&gc_stats_shard_mine()->sh_hist[k][gc_hist_bucket(v)], 1,
			   __ATOMIC_RELAXED);
}
/* The @pct-th percentile (0-100) of @h, as the middle of its bucket; 0
 * for an empty histogram. */
uint64_t gc_hist_pct(const uint64_t *h, unsigned int pct);
uint64_t gc_hist_total(const uint64_t *h);

/* ---- Hooks: the journal and the shim call these; each is a few relaxed
 * atomic adds on the calling thread's shard, safe with any lock held and
 * in a signal handler. -------------------------------------------------- */

/* A sync request of this process ended after @ns in the library with
 * result @r (0 or -errno). */
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

/* The sum of every shard (segment and private) into *out; @hists, when
 * not NULL, gets the summed histograms, @errs the errno counts. */
void gc_stats_sum(struct gc_stats *out);
void gc_stats_sum_all(struct gc_stats *out, uint64_t (*hists)[GC_HIST_BUCKETS],
		      uint64_t *errs);
void gc_stats_sum_shards(const struct gc_stats_shard *sh, unsigned int n,
			 struct gc_stats *out, uint64_t (*hists)[GC_HIST_BUCKETS],
			 uint64_t *errs);
/* Zero every shard (the child after fork counts only its own calls). */
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
