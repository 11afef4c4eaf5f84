/* The process-wide counters, their shards and histograms, the hooks that
 * feed them, and their one-line rendering for the exit report. */
#include "core/stats.h"

#include <string.h>
#include <unistd.h>

#include "core/procstats.h"
#include "core/sites.h"

static struct gc_stats_shard gc_stats_private[GC_STAT_SHARDS];
struct gc_stats_shard *gc_stats_base = gc_stats_private;
__thread unsigned int gc_stat_slot __attribute__((tls_model("initial-exec")));
static unsigned int gc_stat_next;

static struct gc_site_area gc_sites_priv;
struct gc_site_area *gc_sites_base = &gc_sites_priv;
__thread struct gc_req_note gc_req_note __attribute__((tls_model("initial-exec")));
int gc_sites_timing;

struct gc_site_area *gc_sites_private(void)
{
	return &gc_sites_priv;
}

struct gc_stats_shard *gc_stats_private_shards(void)
{
	return gc_stats_private;
}

const char *const gc_stats_names[] = {
#define GC_STAT_NAME(n) #n,
	GC_STATS(GC_STAT_NAME)
#undef GC_STAT_NAME
};

unsigned int gc_stat_slot_assign(void)
{
	unsigned int n = __atomic_fetch_add(&gc_stat_next, 1, __ATOMIC_RELAXED);

	/* a thread's first count: the process's segment is made now, so
	 * processes that never count (most of a shell script's) make none */
	gc_ps_ensure();
	gc_stat_slot = n % GC_STAT_SHARDS + 1;
	return gc_stat_slot;
}

uint64_t gc_hist_bucket_low(unsigned int b)
{
	unsigned int msb;

	if (b < 4)
		return b;
	msb = b / 4 + 1;
	return (uint64_t)(4 | (b & 3)) << (msb - 2);
}

uint64_t gc_hist_total(const uint64_t *h)
{
	uint64_t n = 0;
	unsigned int b;

	for (b = 0; b < GC_HIST_BUCKETS; b++)
		n += h[b];
	return n;
}

uint64_t gc_hist_pct(const uint64_t *h, unsigned int pct)
{
	uint64_t n = gc_hist_total(h), want, seen = 0, lo, hi;
	unsigned int b;

	if (!n)
		return 0;
	want = (n * pct + 99) / 100;
	if (!want)
		want = 1;
	for (b = 0; b < GC_HIST_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want)
			break;
	}
	if (b >= GC_HIST_BUCKETS - 1)
		return gc_hist_bucket_low(GC_HIST_BUCKETS - 1);
	lo = gc_hist_bucket_low(b);
	hi = gc_hist_bucket_low(b + 1);
	return lo + (hi - lo) / 2;
}

void gc_stats_errno(int r)
{
	unsigned int e = r < 0 ? (unsigned int)-r : (unsigned int)r;

	if (e >= GC_ERRNO_SLOTS)
		e = GC_ERRNO_SLOTS - 1;
	__atomic_fetch_add(&gc_stats_shard_mine()->sh_errno[e], 1, __ATOMIC_RELAXED);
}

void gc_stats_request_end(uint64_t ns, int r)
{
	struct gc_stats_shard *sh = gc_stats_shard_mine();

	__atomic_fetch_add(&sh->s.wait_ns, ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->sh_hist[GC_H_WAIT][gc_hist_bucket(ns)], 1, __ATOMIC_RELAXED);
	if (r < 0) {
		__atomic_fetch_add(&sh->s.errors, 1, __ATOMIC_RELAXED);
		gc_stats_errno(r);
	}
}

void gc_stats_handle_served(void)
{
	gc_req_note.rn_served = 1;
	gc_stat_inc(committed);
}

void gc_stats_commit_end(uint32_t handles, uint64_t commit_ns)
{
	gc_hist_add(GC_H_BATCH, handles);
	gc_hist_add(GC_H_COMMIT, commit_ns);
}

void gc_stats_sum_shards(const struct gc_stats_shard *sh, unsigned int n,
			 struct gc_stats *out, uint64_t (*hists)[GC_HIST_BUCKETS],
			 uint64_t *errs)
{
	unsigned int i, k, b;

	for (i = 0; i < n; i++) {
		const uint64_t *src = (const uint64_t *)&sh[i].s;
		uint64_t *dst = (uint64_t *)out;

		for (k = 0; k < GC_STATS_NFIELDS; k++)
			dst[k] += __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		if (hists)
			for (k = 0; k < GC_H_COUNT; k++)
				for (b = 0; b < GC_HIST_BUCKETS; b++)
					hists[k][b] += __atomic_load_n(&sh[i].sh_hist[k][b],
								       __ATOMIC_RELAXED);
		if (errs)
			for (b = 0; b < GC_ERRNO_SLOTS; b++)
				errs[b] += __atomic_load_n(&sh[i].sh_errno[b], __ATOMIC_RELAXED);
	}
}

void gc_stats_sum_all(struct gc_stats *out, uint64_t (*hists)[GC_HIST_BUCKETS],
		      uint64_t *errs)
{
	struct gc_stats_shard *base = __atomic_load_n(&gc_stats_base, __ATOMIC_ACQUIRE);

	memset(out, 0, sizeof(*out));
	if (hists)
		memset(hists, 0, sizeof(uint64_t) * GC_H_COUNT * GC_HIST_BUCKETS);
	if (errs)
		memset(errs, 0, sizeof(uint64_t) * GC_ERRNO_SLOTS);
	/* counts made before the segment existed stay in private memory */
	gc_stats_sum_shards(gc_stats_private, GC_STAT_SHARDS, out, hists, errs);
	if (base != gc_stats_private)
		gc_stats_sum_shards(base, GC_STAT_SHARDS, out, hists, errs);
}

void gc_stats_sum(struct gc_stats *out)
{
	gc_stats_sum_all(out, NULL, NULL);
}

void gc_stats_reset(void)
{
	gc_ps_atfork_child();
	memset(gc_stats_private, 0, sizeof(gc_stats_private));
	memset(&gc_sites_priv, 0, sizeof(gc_sites_priv));
}

int gc_stats_format(char *buf, size_t len)
{
	struct gc_stats st;
	const uint64_t *v = (const uint64_t *)&st;
	int n = snprintf(buf, len, "libgc: pid=%d", (int)getpid());
	size_t k;

	gc_stats_sum(&st);
	for (k = 0; k < GC_STATS_NFIELDS && n >= 0 && (size_t)n < len; k++)
		n += snprintf(buf + n, len - (size_t)n, " %s=%llu", gc_stats_names[k],
			      (unsigned long long)v[k]);
	return n;
}

uint64_t gc_site_hist_pct(const uint64_t *h, unsigned int pct)
{
	uint64_t n = 0, want, seen = 0, lo, hi;
	unsigned int b;

	for (b = 0; b < GC_SITE_HIST; b++)
		n += h[b];
	if (!n)
		return 0;
	want = (n * pct + 99) / 100;
	if (!want)
		want = 1;
	for (b = 0; b < GC_SITE_HIST - 1; b++) {
		seen += h[b];
		if (seen >= want)
			break;
	}
	/* site bucket b holds the stats buckets 2b and 2b + 1 */
	lo = gc_hist_bucket_low(2 * b);
	hi = gc_hist_bucket_low(2 * b + 2);
	return lo + (hi - lo) / 2;
}

void gc_sites_sum(const struct gc_site_area *a, struct gc_site_ctr *out)
{
	unsigned int s, r, k;

	for (s = 0; s < GC_STAT_SHARDS; s++)
		for (r = 0; r < GC_SITE_ROWS; r++) {
			const uint64_t *src = (const uint64_t *)&a->sa_ctr[s][r];
			uint64_t *dst = (uint64_t *)&out[r];

			for (k = 0; k < sizeof(struct gc_site_ctr) / sizeof(uint64_t); k++)
				dst[k] += __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		}
}

int gc_sites_rank(const struct gc_site_ctr *ctr, int *order)
{
	int n = 0, i, j, t;

	for (i = 0; i < GC_SITE_ROWS; i++)
		if (ctr[i].sc_requests)
			order[n++] = i;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && ctr[order[j - 1]].sc_requests < ctr[order[j]].sc_requests; j--) {
			t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	return n;
}
