// SPDX-License-Identifier: LGPL-2.1-or-later
/* The process-wide counters, their per-thread slots and histograms, the
 * hooks that feed them, and their one-line rendering for the exit report. */
#include "core/stats.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/procstats.h"
#include "core/sites.h"
#include "core/sys.h"

/* page-aligned: a fork child clears the slots in use from the start, one
 * page for a few threads wherever the other tables fall */
static struct gc_stat_area gc_stats_priv GC_LARGE __attribute__((aligned(4096)));
struct gc_stat_area *gc_stats_base = &gc_stats_priv;
__thread struct gc_stat_slot *gc_ts_slot __attribute__((tls_model("initial-exec")));
__thread uint32_t gc_ts_gen __attribute__((tls_model("initial-exec")));
/* this thread's slot index + 1; 0 before its first count */
static __thread unsigned int gc_ts_ix __attribute__((tls_model("initial-exec")));
static __thread char gc_ts_mark __attribute__((tls_model("initial-exec")));

/* Who holds each exclusive slot (a thread's mark): private memory, so that
 * nothing written into a segment can make two threads share one. */
GC_START static void *slot_owner[GC_STAT_SLOTS];
/* One more than the highest slot index ever taken (GC_STAT_ALL once the
 * shared slot was). */
GC_START static unsigned int slot_hw;
/* Counts of a child made without atfork handlers, which must not land in
 * its parent's segment: kept, never read. */
static struct gc_stat_slot gc_stats_void;

static struct gc_site_area gc_sites_priv GC_LARGE;
struct gc_site_area *gc_sites_base = &gc_sites_priv;
__thread struct gc_req_note gc_req_note __attribute__((tls_model("initial-exec")));
GC_START int gc_sites_timing;

struct gc_site_area *gc_sites_private(void)
{
	return &gc_sites_priv;
}

struct gc_stat_area *gc_stats_private(void)
{
	return &gc_stats_priv;
}

const char *const gc_stats_names[] = {
#define GC_STAT_NAME(n) #n,
	GC_STATS(GC_STAT_NAME)
#undef GC_STAT_NAME
};

/* A thread that ends gives its slot up (its counts stay in it). The key
 * is made once; a key past glibc's first block would make the first count
 * of each thread allocate, so there threads keep their slot for good. */
GC_START static pthread_key_t slot_key;
GC_START static int slot_key_ok;
GC_START static struct gc_once slot_key_once;

static void slot_release(void *v)
{
	unsigned int ix = (unsigned int)(uintptr_t)v;

	if (ix && ix <= GC_STAT_SLOTS)
		__atomic_compare_exchange_n(&slot_owner[ix - 1], &(void *){ &gc_ts_mark }, NULL,
					    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	gc_ts_ix = 0;
	gc_ts_slot = NULL;
}

static void slot_key_make(void)
{
	slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0 && slot_key < 32;
}

unsigned int gc_stat_slot_index(void)
{
	unsigned int i;

	if (gc_ts_ix)
		return gc_ts_ix - 1;
	for (i = 0; i < GC_STAT_SLOTS; i++) {
		void *free_ = NULL;

		if (__atomic_compare_exchange_n(&slot_owner[i], &free_, &gc_ts_mark, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
	}
	gc_ts_ix = i + 1; /* GC_STAT_SLOTS: the shared slot */
	/* the slots a fork child zeroes: those below the highest taken */
	for (unsigned int hw = __atomic_load_n(&slot_hw, __ATOMIC_RELAXED); hw < i + 1;)
		if (__atomic_compare_exchange_n(&slot_hw, &hw, i + 1, false, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			break;
	if (i < GC_STAT_SLOTS && gc_once(&slot_key_once, slot_key_make) && slot_key_ok)
		pthread_setspecific(slot_key, (void *)(uintptr_t)gc_ts_ix);
	return i;
}

/* The thread's counts made in private memory before its process's segment
 * existed go into the segment's slot of the same index, its own too: from
 * then on gcstat sees them. Only the thread that owns the index moves it
 * (a reader summing meanwhile may count some twice, once). */
static void slot_move(struct gc_stat_slot *from, struct gc_stat_slot *to)
{
	uint64_t *f = (uint64_t *)&from->s, *t = (uint64_t *)&to->s;
	size_t k, n = (offsetof(struct gc_stat_slot, sl_wait) + sizeof(from->sl_wait)) /
		      sizeof(uint64_t);

	for (k = 0; k < n; k++) {
		uint64_t v = __atomic_load_n(&f[k], __ATOMIC_RELAXED);

		if (v) {
			gc_slot_add(to, &t[k], v);
			__atomic_store_n(&f[k], 0, __ATOMIC_RELAXED);
		}
	}
}

struct gc_stat_slot *gc_stat_slot_slow(void)
{
	uint32_t gen = gc_sys_gen_peek();
	struct gc_stat_slot *was = gc_ts_slot;
	struct gc_stat_area *a;

	gc_made_note(GC_MADE_COUNTS);
	if (!gen) {
		/* a child made without atfork: the area may be its parent's */
		__atomic_store_n(&gc_stats_void.sl_shared, 1, __ATOMIC_RELAXED);
		gc_ts_gen = 0;
		gc_ts_slot = &gc_stats_void;
		return gc_ts_slot;
	}
	a = __atomic_load_n(&gc_stats_base, __ATOMIC_ACQUIRE);
	gc_ts_slot = &a->sa_slot[gc_stat_slot_index()];
	/* the shared slot says so itself; a private one is written before it
	 * is read (one page fault, where a read first maps the zero page and
	 * costs two); nothing is written to a segment's others (a fresh
	 * segment's pages stay untouched until counted in) */
	if (gc_ts_slot == &a->sa_slot[GC_STAT_SLOTS])
		__atomic_store_n(&gc_ts_slot->sl_shared, 1, __ATOMIC_RELAXED);
	else if (a == &gc_stats_priv)
		__atomic_store_n(&gc_ts_slot->sl_shared, 0, __ATOMIC_RELAXED);
	else if (was && was >= gc_stats_priv.sa_slot &&
		 was < gc_stats_priv.sa_slot + GC_STAT_SLOTS && was - gc_stats_priv.sa_slot ==
								  gc_ts_slot - a->sa_slot)
		slot_move(was, gc_ts_slot);
	gc_ts_gen = gen;
	return gc_ts_slot;
}

void gc_stats_switch(struct gc_stat_area *a)
{
	/* stored only when it changes: a fork child of a process without a
	 * stats segment would copy the page for the same value */
	if (__atomic_load_n(&gc_stats_base, __ATOMIC_RELAXED) != a)
		__atomic_store_n(&gc_stats_base, a, __ATOMIC_RELEASE);
	gc_sys_gen_bump();
}

uint64_t gc_hist_bucket_low(unsigned int b)
{
	unsigned int msb;

	if (b < 4)
		return b;
	msb = b / 4 + 1;
	return (uint64_t)(4 | (b & 3)) << (msb - 2);
}

uint64_t gc_hist_total(const uint64_t *h, unsigned int n)
{
	uint64_t t = 0;
	unsigned int b;

	for (b = 0; b < n; b++)
		t += h[b];
	return t;
}

uint64_t gc_hist_pct(const uint64_t *h, unsigned int n, unsigned int shift, unsigned int pct)
{
	uint64_t total = gc_hist_total(h, n), want, seen = 0, lo, hi;
	unsigned int b;

	if (!total)
		return 0;
	want = (total * pct + 99) / 100;
	if (!want)
		want = 1;
	for (b = 0; b < n; b++) {
		seen += h[b];
		if (seen >= want)
			break;
	}
	if (b >= n - 1)
		return gc_hist_bucket_low(n - 1) << shift;
	lo = gc_hist_bucket_low(b) << shift;
	hi = gc_hist_bucket_low(b + 1) << shift;
	return lo + (hi - lo) / 2;
}

void gc_stats_errno(int r)
{
	struct gc_errtab *t = &__atomic_load_n(&gc_stats_base, __ATOMIC_ACQUIRE)->sa_err;
	int32_t e = r < 0 ? -r : r;
	int i;

	/* a child made without atfork counts nothing of its parent's */
	if (!gc_sys_gen_peek())
		return;
	gc_made_note(GC_MADE_TOTALS);
	for (i = 0; i < GC_ERRTAB; i++) {
		int32_t cur = __atomic_load_n(&t->et[i].e_err, __ATOMIC_ACQUIRE);

		if (!cur && __atomic_compare_exchange_n(&t->et[i].e_err, &cur, e, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			cur = e;
		if (cur == e)
			break;
	}
	__atomic_fetch_add(&t->et[i].e_count, 1, __ATOMIC_RELAXED);
}

void gc_stats_request_end(uint64_t ns, int r)
{
	gc_stats_request_end_in(gc_slot(), ns, r);
}

void gc_stats_handle_served(void)
{
	gc_req_note.rn_served = 1;
	gc_stat_inc(committed);
}

void gc_stats_commit_end(uint32_t handles, uint64_t commit_ns)
{
	struct gc_stat_area *a = __atomic_load_n(&gc_stats_base, __ATOMIC_ACQUIRE);
	unsigned int b = gc_hist_bucket(handles);

	if (!gc_sys_gen_peek())
		return;
	gc_made_note(GC_MADE_TOTALS);
	__atomic_fetch_add(&a->sa_batch[b < GC_HIST_BATCH ? b : GC_HIST_BATCH - 1], 1,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sa_commit[gc_hist_ns_bucket(commit_ns)], 1, __ATOMIC_RELAXED);
}

static void add_hist(uint64_t *dst, const uint64_t *src, unsigned int n)
{
	unsigned int b;

	for (b = 0; b < n; b++)
		dst[b] += __atomic_load_n(&src[b], __ATOMIC_RELAXED);
}

void gc_stats_sum_area(const struct gc_stat_area *a, struct gc_stats *out, struct gc_hists *h,
		       struct gc_errtab *e)
{
	unsigned int i, k;

	for (i = 0; i < GC_STAT_ALL; i++) {
		const uint64_t *src = (const uint64_t *)&a->sa_slot[i].s;
		uint64_t *dst = (uint64_t *)out;

		for (k = 0; k < GC_STATS_NFIELDS; k++)
			dst[k] += __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		if (h)
			add_hist(h->h_wait, a->sa_slot[i].sl_wait, GC_HIST_NS);
	}
	if (h) {
		add_hist(h->h_commit, a->sa_commit, GC_HIST_NS);
		add_hist(h->h_batch, a->sa_batch, GC_HIST_BATCH);
	}
	/* by errno value; entries of the same value (two areas) add up */
	for (i = 0; e && i <= GC_ERRTAB; i++) {
		int32_t err = __atomic_load_n(&a->sa_err.et[i].e_err, __ATOMIC_ACQUIRE);
		uint64_t n = __atomic_load_n(&a->sa_err.et[i].e_count, __ATOMIC_RELAXED);

		if (!n)
			continue;
		if (i == GC_ERRTAB)
			err = 0;
		for (k = 0; k < GC_ERRTAB && err; k++)
			if (!e->et[k].e_err || e->et[k].e_err == err)
				break;
		if (!err || k == GC_ERRTAB)
			k = GC_ERRTAB; /* the "other" entry */
		e->et[k].e_err = k == GC_ERRTAB ? 0 : err;
		e->et[k].e_count += n;
	}
}

void gc_stats_sum_all(struct gc_stats *out, struct gc_hists *h, struct gc_errtab *e)
{
	struct gc_stat_area *base = __atomic_load_n(&gc_stats_base, __ATOMIC_ACQUIRE);

	memset(out, 0, sizeof(*out));
	if (h)
		memset(h, 0, sizeof(*h));
	if (e)
		memset(e, 0, sizeof(*e));
	/* counts made before the segment existed stay in private memory */
	gc_stats_sum_area(&gc_stats_priv, out, h, e);
	if (base != &gc_stats_priv)
		gc_stats_sum_area(base, out, h, e);
}

void gc_stats_sum(struct gc_stats *out)
{
	gc_stats_sum_all(out, NULL, NULL);
}

GC_ONCE void gc_stats_reset(void)
{
	gc_ps_atfork_child();
	/* only what was counted in: a memset of the whole 190 KB cost each
	 * fork child about 50 page faults (gc_made) */
	if (gc_was_made(GC_MADE_TOTALS)) {
		memset(&gc_stats_priv, 0, offsetof(struct gc_stat_area, sa_slot));
	}
	if (gc_was_made(GC_MADE_SITES))
		memset(&gc_sites_priv, 0, sizeof(gc_sites_priv));
	if (!gc_was_made(GC_MADE_COUNTS))
		return; /* no thread counted: all zero, and left unwritten */
	memset(gc_stats_priv.sa_slot, 0,
	       __atomic_load_n(&slot_hw, __ATOMIC_RELAXED) * sizeof(gc_stats_priv.sa_slot[0]));
	memset(slot_owner, 0, sizeof(slot_owner));
	gc_ts_ix = 0;
	gc_ts_slot = NULL;
	gc_stats_switch(&gc_stats_priv);
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
	/* site bucket b holds the generic buckets 2b and 2b + 1 */
	lo = gc_hist_bucket_low(2 * b);
	hi = gc_hist_bucket_low(2 * b + 2);
	return lo + (hi - lo) / 2;
}

void gc_sites_sum(const struct gc_site_area *a, struct gc_site_ctr *out)
{
	unsigned int s, r, k;

	for (s = 0; s < GC_SITE_SHARDS; s++)
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
