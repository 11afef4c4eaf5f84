// SPDX-License-Identifier: LGPL-2.1-or-later
/* Commit policies. Each decision is a pure function of configuration, the
 * domain's policy memory, a view of the running transaction and `now`; the
 * rules and their sources are in REFERENCES (jbd batching discussion, jbd2,
 * PostgreSQL commit_delay). */
#include "policy/policy.h"

#include <string.h>

#include "core/clock.h"

/* Before the first timed wait is measured: Linux's default timer slack. */
#define GC_GRAN_DEFAULT_NS (50 * GC_NSEC_PER_USEC)
/* Transactions carried fewer than 1.5 handles on average (EWMA, x16),
 * over a stretch of them: the sync threads do not overlap. */
#define GC_SERIAL_BATCH_X16 24
/* The library's own timing (docs/policy.md rule 4), while no other source
 * knows the device: it reads the device as rule 0 does, GC_DEVICE_GROUP_NS
 * being the threshold, from the shortest direct call it timed in its last
 * two epochs that timed any. A sync that takes 1 ms or more even when
 * nobody queued before it pays a device flush, which a group shares. The
 * shortest, not the mean: 16 threads on this VM's disk (41 us flush) made
 * calls of 0.68 ms at p50 and 1.6 ms at p99, while the shortest of a 25 ms
 * window was 0.13-0.6 ms, but in 1 of 121 windows 1.3 ms (two in a row:
 * none seen); on the slow disks no call is shorter than a flush. An epoch
 * is the shortest stretch, GC_STRETCH_MIN_NS. Read slow, the device's
 * verdict is grouping, and the outcome check holds and probes as where
 * another source knows the device. The holds of both are GC_FB_HOLD_MIN
 * to GC_FB_HOLD_MAX stretches. */
#define GC_FB_HOLD_MIN 8
#define GC_FB_HOLD_MAX 64

static uint64_t ewma4(uint64_t avg, uint64_t x, bool first)
{
	return first ? x : (x + 3 * avg) / 4;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

void gc_policy_cfg_defaults(struct gc_policy_cfg *pc)
{
	pc->pc_kind = GC_POL_ADAPTIVE;
	pc->pc_max_wait_ns = 15000 * GC_NSEC_PER_USEC;	/* ext4 max_batch_time */
	pc->pc_min_wait_ns = 0;				/* ext4 min_batch_time */
	pc->pc_wait_pct = 100;				/* Bacik: one average commit */
	pc->pc_wait_ns = 1000 * GC_NSEC_PER_USEC;
	pc->pc_siblings = 5;				/* PostgreSQL commit_siblings */
	pc->pc_probe = true;
	pc->pc_device = true;
}

const char *gc_policy_name(enum gc_policy_kind k)
{
	static const char *const names[] = {
		[GC_POL_ADAPTIVE] = "adaptive", [GC_POL_NONE] = "none",
		[GC_POL_FIXED] = "fixed",	[GC_POL_JBD2] = "jbd2",
		[GC_POL_SIBLINGS] = "siblings",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

const char *gc_close_reason_name(enum gc_close_reason r)
{
	static const char *const names[] = {
		[GC_CLOSE_NONE] = "none",     [GC_CLOSE_LONE] = "lone",
		[GC_CLOSE_FAST] = "fast",     [GC_CLOSE_NOWAIT] = "nowait",
		[GC_CLOSE_COUNT] = "count",   [GC_CLOSE_TIMEOUT] = "timeout",
	};
	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}

void gc_policy_init(struct gc_policy_state *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->ps_gran_ns = GC_GRAN_DEFAULT_NS;
	ps->ps_batch_x16 = 32;
	ps->ps_useful_x16 = 32;
	ps->ps_fb_min_ns = UINT64_MAX;
	ps->ps_oc_hold = GC_FB_HOLD_MIN;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* The policy's unit of recent time: GC_STRETCH_COMMITS commits of the
 * domain's commit latency, and at least GC_STRETCH_MIN_NS. The outcome
 * check measures a mode over stretches, the library's own timing times
 * calls in epochs of the shortest, and the threads seen syncing within
 * one (the activity window) are those a transaction waits for. */
static uint64_t stretch(const struct gc_policy_state *ps)
{
	uint64_t by_commits = sat_mul(ps->ps_commit_ns, GC_STRETCH_COMMITS);

	return by_commits > GC_STRETCH_MIN_NS ? by_commits : GC_STRETCH_MIN_NS;
}

/* The count of recent threads, read once and never past the table: the
 * state is in the shared segment, where a peer may scribble on it after
 * the domain's check (gc_policy_check). */
static uint32_t recent_n(const struct gc_policy_state *ps)
{
	uint32_t n = __atomic_load_n(&ps->ps_recent_n, __ATOMIC_RELAXED);

	return n < GC_RECENT_MAX ? n : GC_RECENT_MAX;
}

uint32_t gc_policy_forget(struct gc_policy_state *ps, bool (*gone)(int32_t tid))
{
	uint32_t i, j, n = recent_n(ps);

	for (i = j = 0; i < n; i++)
		if (!gone(ps->ps_recent[i].r_tid))
			ps->ps_recent[j++] = ps->ps_recent[i];
	ps->ps_recent_n = j;
	return n - j;
}

bool gc_policy_check(const struct gc_policy_state *ps)
{
	return ps->ps_recent_n <= GC_RECENT_MAX && ps->ps_oc_mode <= GC_FB_DIRECT &&
	       ps->ps_oc_probe <= 1 && ps->ps_oc_chosen <= 1 && ps->ps_oc_early <= 1 &&
	       ps->ps_oc_paid <= 1 && ps->ps_oc_hold >= GC_FB_HOLD_MIN &&
	       ps->ps_oc_hold <= GC_FB_HOLD_MAX && ps->ps_oc_idle <= GC_FB_HOLD_MAX;
}

bool gc_policy_arrive(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		      int32_t tid, uint64_t now)
{
	bool new_writer = tid != ps->ps_last_sync_tid;
	uint32_t i, oldest = 0, n = recent_n(ps);

	ps->ps_last_sync_tid = tid;
	for (i = 0; i < n; i++) {
		if (ps->ps_recent[i].r_tid == tid) {
			uint32_t gap = ps->ps_commit_samples - ps->ps_recent[i].r_seq;

			/* a sighting older than the last (seen_fold) is no gap;
			 * nor are direct calls, which commit nothing */
			if (now > ps->ps_recent[i].r_seen_ns) {
				ps->ps_recent[i].r_seen_ns = now;
				ps->ps_recent[i].r_out = 0;
				if (gap)
					ps->ps_recent[i].r_every_x16 = (uint32_t)ewma4(
						ps->ps_recent[i].r_every_x16,
						16ULL * (gap < 1024 ? gap : 1024),
						!ps->ps_recent[i].r_every_x16);
				ps->ps_recent[i].r_seq = ps->ps_commit_samples;
			}
			return new_writer;
		}
		if (ps->ps_recent[i].r_seen_ns < ps->ps_recent[oldest].r_seen_ns)
			oldest = i;
	}
	if (n < GC_RECENT_MAX)
		oldest = n++;
	ps->ps_recent_n = n;
	ps->ps_recent[oldest].r_tid = tid;
	ps->ps_recent[oldest].r_seen_ns = now;
	ps->ps_recent[oldest].r_seq = ps->ps_commit_samples;
	ps->ps_recent[oldest].r_every_x16 = 0;
	ps->ps_recent[oldest].r_out = 0;
	return new_writer;
}

/* Recent thread @i syncs within the activity window @w ending at @now, and
 * did not drop out since. */
static bool counted(const struct gc_policy_state *ps, uint32_t i, uint64_t w, uint64_t now)
{
	return ps->ps_recent[i].r_seen_ns + w >= now && !ps->ps_recent[i].r_out;
}

uint32_t gc_policy_active(const struct gc_policy_state *ps, uint64_t now)
{
	uint64_t w = stretch(ps);
	uint32_t i, n = 0, k = recent_n(ps);

	for (i = 0; i < k; i++)
		if (counted(ps, i, w, now))
			n++;
	return n;
}

uint32_t gc_policy_expected(const struct gc_policy_state *ps, uint64_t now, int32_t leader)
{
	uint32_t every[GC_RECENT_MAX], i, j, m = 0, n = 0, k = recent_n(ps);
	uint64_t w = stretch(ps), limit;

	/* the recent threads' paces, sorted (at most GC_RECENT_MAX) */
	for (i = 0; i < k; i++) {
		uint32_t e = ps->ps_recent[i].r_every_x16;

		if (!counted(ps, i, w, now) || !e)
			continue;
		for (j = m++; j > 0 && every[j - 1] > e; j--)
			every[j] = every[j - 1];
		every[j] = e;
	}
	/* the lower median's pace, and at least one commit */
	limit = GC_EXPECT_PACE * (uint64_t)(m && every[(m - 1) / 2] > 16 ? every[(m - 1) / 2] : 16);
	for (i = 0; i < k; i++)
		if (counted(ps, i, w, now) &&
		    (ps->ps_recent[i].r_tid == leader || ps->ps_recent[i].r_every_x16 <= limit))
			n++;
	return n;
}

const char *gc_device_src_name(uint32_t src)
{
	static const char *const names[] = { "none", "observer", "diskstats", "own timing" };

	return src < GC_DEV_SRCS ? names[src] : "?";
}

uint64_t gc_policy_device_flush(const struct gc_policy_state *ps, uint64_t now)
{
	uint64_t at = __atomic_load_n(&ps->ps_device_at_ns, __ATOMIC_RELAXED);
	uint64_t f = __atomic_load_n(&ps->ps_device_flush_ns, __ATOMIC_RELAXED);

	/* a refresh stamped in the future (a peer's clock, or scribbles)
	 * is not fresh either. The library's own reading has no refresh:
	 * it stands until a source knows the device. */
	if (!f || !at || at > now ||
	    (now - at >= GC_STALE_NS &&
	     __atomic_load_n(&ps->ps_device_src, __ATOMIC_RELAXED) != GC_DEV_SELF))
		return 0;
	return f;
}

bool gc_policy_device_claim(struct gc_policy_state *ps, uint64_t now)
{
	uint64_t at = __atomic_load_n(&ps->ps_device_at_ns, __ATOMIC_RELAXED);

	if (!at) {
		/* a new domain asks once GC_DEVICE_FIRST_NS old: a process
		 * that syncs once, alone, pays for no walk of /sys and
		 * /proc/diskstats (its one request is its own real call
		 * either way) */
		uint64_t first = now > GC_DEVICE_REFRESH_NS
					 ? now - GC_DEVICE_REFRESH_NS + GC_DEVICE_FIRST_NS
					 : 1;

		__atomic_compare_exchange_n(&ps->ps_device_at_ns, &at, first, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return false;
	}
	if (at <= now && now - at < GC_DEVICE_REFRESH_NS)
		return false;
	/* claimed by moving the stamp: the flush value stays until the
	 * claimer stores the new one */
	return __atomic_compare_exchange_n(&ps->ps_device_at_ns, &at, now, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* -1 nothing known, 0 grouped, 1 direct */
static int device_verdict(uint64_t flush_ns)
{
	return !flush_ns ? -1 : flush_ns < GC_DEVICE_GROUP_NS;
}

bool gc_policy_device(struct gc_policy_state *ps, uint64_t flush_ns, uint32_t src,
		      uint64_t now)
{
	int was = device_verdict(gc_policy_device_flush(ps, now));

	if (src >= GC_DEV_SRCS || !src)
		flush_ns = 0, src = GC_DEV_NONE;
	/* no source knows the device: the library's own reading stands */
	if (!flush_ns && was >= 0 &&
	    __atomic_load_n(&ps->ps_device_src, __ATOMIC_RELAXED) == GC_DEV_SELF) {
		__atomic_store_n(&ps->ps_device_at_ns, now, __ATOMIC_RELAXED);
		return false;
	}
	__atomic_store_n(&ps->ps_device_flush_ns, flush_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_device_src, src, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_device_at_ns, now, __ATOMIC_RELAXED);
	/* While the device is known, its own timing is idle; when it is
	 * not, timing starts afresh with a first epoch rather than judge
	 * counts gathered meanwhile. */
	if (flush_ns)
		__atomic_store_n(&ps->ps_fb_epoch_start, 0, __ATOMIC_RELAXED);
	if (device_verdict(flush_ns) == was)
		return false;
	/* a device newly slow is grouped first, and its outcome checked
	 * afresh */
	__atomic_store_n(&ps->ps_oc_mode, GC_FB_GROUP, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_start, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_watch, 0, __ATOMIC_RELAXED);
	ps->ps_oc_probe = 0;
	ps->ps_oc_chosen = 0;
	ps->ps_oc_hold = GC_FB_HOLD_MIN;
	ps->ps_oc_idle = 0;
	return true;
}

/* The verdict of @mode (GC_FB_*), held from @start (0: not yet) for
 * @len, at most until @until; past its end, due at once. */
static struct gc_verdict mode_verdict(uint32_t mode, uint64_t start, uint64_t len, uint64_t now,
				      uint64_t until)
{
	if (start && start <= now && now - start < len && start + len < until)
		until = start + len;
	else if (!start || start > now || now - start >= len)
		until = now;
	return (struct gc_verdict){ mode == GC_FB_DIRECT ? GC_V_TIMED : GC_V_GROUP, until };
}

struct gc_verdict gc_policy_verdict(const struct gc_policy_state *ps,
				    const struct gc_policy_cfg *pc, uint64_t now)
{
	uint64_t at, f, until = now + GC_STALE_NS;
	struct gc_verdict v = { GC_V_GROUP, until };

	if (pc->pc_kind == GC_POL_NONE) {
		v.v_kind = GC_V_DIRECT;
		return v;
	}
	if (pc->pc_kind != GC_POL_ADAPTIVE || !pc->pc_probe)
		return v;
	/* the device decides until its next refresh is due */
	if (pc->pc_device) {
		at = __atomic_load_n(&ps->ps_device_at_ns, __ATOMIC_RELAXED);
		if (at <= now && now - at < GC_DEVICE_REFRESH_NS)
			until = at + GC_DEVICE_REFRESH_NS;
		else
			until = now; /* due: the next request refreshes */
	}
	f = gc_policy_device_flush(ps, now);
	if (f && f < GC_DEVICE_GROUP_NS) {
		v.v_kind = GC_V_DIRECT;
		v.v_until_ns = until;
		return v;
	}
	/* grouped or timed direct calls until the outcome check's stretch
	 * ends; the device unknown, timed direct calls until the epoch ends */
	if (f) {
		/* and, a hold watched, until its stretch ends */
		at = __atomic_load_n(&ps->ps_oc_watch, __ATOMIC_RELAXED);
		if (at)
			until = at <= now ? now : min_u64(until, at);
		return mode_verdict(__atomic_load_n(&ps->ps_oc_mode, __ATOMIC_RELAXED),
				    __atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED),
				    __atomic_load_n(&ps->ps_oc_len, __ATOMIC_RELAXED), now, until);
	}
	return mode_verdict(GC_FB_DIRECT, __atomic_load_n(&ps->ps_fb_epoch_start, __ATOMIC_RELAXED),
			    GC_STRETCH_MIN_NS, now, until);
}

void gc_policy_seen(struct gc_policy_state *ps, int32_t tid, uint64_t now)
{
	unsigned int i = ((uint32_t)tid * 2654435761u) >> 28;

	__atomic_store_n(&ps->ps_seen[i % GC_SEEN_SLOTS].sn_tid, tid, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_seen[i % GC_SEEN_SLOTS].sn_ns, now, __ATOMIC_RELAXED);
}

/* Grouping resumes: the threads seen making direct calls within the
 * activity window are its recent sync threads. */
static void seen_fold(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t now)
{
	uint64_t w = stretch(ps);
	unsigned int i;

	for (i = 0; i < GC_SEEN_SLOTS; i++) {
		int32_t tid = __atomic_load_n(&ps->ps_seen[i].sn_tid, __ATOMIC_RELAXED);
		uint64_t at = __atomic_load_n(&ps->ps_seen[i].sn_ns, __ATOMIC_RELAXED);

		/* a time still to come is a peer's scribble */
		if (tid > 0 && at <= now && now - at <= w)
			gc_policy_arrive(ps, pc, tid, at);
	}
}

bool gc_policy_bypass(const struct gc_policy_state *ps,
		      const struct gc_policy_cfg *pc, uint64_t now)
{
	uint64_t f;

	if (pc->pc_kind == GC_POL_NONE)
		return true;
	if (pc->pc_kind != GC_POL_ADAPTIVE || !pc->pc_probe)
		return false;
	f = gc_policy_device_flush(ps, now);
	if (f)
		return f < GC_DEVICE_GROUP_NS ||
		       __atomic_load_n(&ps->ps_oc_mode, __ATOMIC_RELAXED) == GC_FB_DIRECT;
	/* unknown: timed direct calls, from the first epoch on (the first
	 * request opens it) */
	return __atomic_load_n(&ps->ps_fb_epoch_start, __ATOMIC_RELAXED) != 0;
}

/* Notes @tid among the threads of this epoch: the first, or another. */
static void fb_note_thread(struct gc_policy_state *ps, int32_t tid)
{
	uint64_t me = GC_FB_ONE | (uint32_t)tid;
	uint64_t seen = __atomic_load_n(&ps->ps_fb_threads, __ATOMIC_RELAXED);

	if (seen == me || seen == GC_FB_MANY)
		return; /* once several are seen: one load a call */
	if (!seen && __atomic_compare_exchange_n(&ps->ps_fb_threads, &seen, me, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return; /* the epoch's first */
	if (seen != me)
		__atomic_store_n(&ps->ps_fb_threads, GC_FB_MANY, __ATOMIC_RELAXED);
}

void gc_policy_direct_done(struct gc_policy_state *ps, int32_t tid, uint64_t start,
			   uint64_t end)
{
	uint64_t took = end > start ? end - start : 0;
	uint64_t min = __atomic_load_n(&ps->ps_fb_min_ns, __ATOMIC_RELAXED);

	fb_note_thread(ps, tid);
	/* a store only for a new shortest: after the first calls of an
	 * epoch, direct calls write no line that other threads read */
	while (took < min && !__atomic_compare_exchange_n(&ps->ps_fb_min_ns, &min, took, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A span of a mode (the outcome check's stretch, own timing's epoch)
 * that began at @start (0: none yet) and lasts @len is over at @now. By
 * time alone: a span, a probe of direct calls too, never outlasts its
 * length, whatever it measured. A thread that read the clock before
 * another started the span is not past it; a stamp further ahead than a
 * span is scribbles, and the next span starts from now. */
static bool span_due(uint64_t start, uint64_t len, uint64_t now)
{
	if (!start)
		return true;
	if (start > now)
		return start - now > len;
	return now - start >= len;
}

/* The hold after the same verdict again: twice the last, up to the cap. */
static uint32_t hold_doubled(uint32_t hold)
{
	return hold < GC_FB_HOLD_MAX / 2 ? 2 * hold : GC_FB_HOLD_MAX;
}

/*
 * The outcome check, while the device says grouping (rule 0). Grouping
 * holds; where it does not evidently pay (oc_grouping_pays), two
 * stretches of timed direct calls follow each hold, and whichever mode
 * answered the program's calls sooner on average, in the last stretch of
 * each, holds next (probe_wins). A direct hold ends in two grouped
 * stretches, compared the same way. Only the last stretch is measured:
 * grouped, threads need a few commits to come into step. Where grouping
 * evidently pays (the storms it wins), direct calls are never tried: a
 * probe would knock threads that share commits in step out of it. A
 * stretch is stretch().
 */

void gc_policy_latency(struct gc_policy_state *ps, uint64_t start, uint64_t end)
{
	uint64_t from = __atomic_load_n(&ps->ps_oc_from, __ATOMIC_RELAXED), us;
	uint64_t begin = __atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED);

	if (!begin || start < begin || end < start)
		return;
	/* what the span cost, for the hold after a probe */
	__atomic_fetch_add(&ps->ps_oc_all_ns, end - start, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ps->ps_oc_all_n, 1, __ATOMIC_RELAXED);
	/* the first stretch of a hold or a probe is not compared: a request
	 * begun then was served partly the other way, or before the threads
	 * settled into the mode (grouped, into step) */
	if (start < from)
		return;
	us = (end - start) / GC_NSEC_PER_USEC;
	__atomic_fetch_add(&ps->ps_oc_lat_ns, end - start, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ps->ps_oc_lat_n, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&ps->ps_oc_lat_sq, us * us, __ATOMIC_RELAXED);
}

/* Requests that begin from @now on are measured (gc_policy_latency), and
 * compared from @from on. */
static void measure_from(struct gc_policy_state *ps, uint64_t from, uint64_t now)
{
	__atomic_store_n(&ps->ps_oc_lat_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_lat_n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_lat_sq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_all_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_all_n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_from, from, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_start, now, __ATOMIC_RELAXED);
}

static void oc_start(struct gc_policy_state *ps, uint32_t mode, bool probe, uint64_t len,
		     uint64_t now)
{
	uint64_t first = stretch(ps);

	__atomic_store_n(&ps->ps_oc_mode, mode, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_oc_watch, 0, __ATOMIC_RELAXED);
	ps->ps_oc_probe = probe;
	ps->ps_oc_early = 0;
	ps->ps_oc_txns = ps->ps_txns;
	ps->ps_oc_commits = ps->ps_commit_samples;
	__atomic_store_n(&ps->ps_oc_len, len, __ATOMIC_RELAXED);
	/* measured from its second stretch, if it has several */
	measure_from(ps, now + (len > first ? first : 0), now);
}

/* Probes @mode for two stretches against the held mode's requests,
 * answered in @ref on average (its standard error squared @ref_se2). */
static void oc_probe(struct gc_policy_state *ps, uint32_t mode, uint64_t ref, uint64_t ref_se2,
		     uint64_t now)
{
	ps->ps_oc_ref_ns = ref;
	ps->ps_oc_ref_se2 = ref_se2;
	ps->ps_oc_idle = 0;
	oc_start(ps, mode, true, 2 * stretch(ps), now);
}

/* Holds @mode for @hold stretches, chosen over the other mode's requests,
 * answered in @other on average (0: not compared), with the standard
 * error squared @other_se2: then watched from its second stretch on. */
static void oc_hold(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint32_t mode,
		    uint32_t hold, uint64_t other, uint64_t other_se2, bool paid, uint64_t now)
{
	uint64_t first = stretch(ps);

	ps->ps_oc_hold = hold;
	ps->ps_oc_idle = 0;
	if (mode == GC_FB_GROUP && __atomic_load_n(&ps->ps_oc_mode, __ATOMIC_RELAXED) != mode)
		seen_fold(ps, pc, now);
	oc_start(ps, mode, false, sat_mul(first, hold), now);
	ps->ps_oc_other_ns = other;
	ps->ps_oc_other_se2 = other_se2;
	ps->ps_oc_mark_ns = ps->ps_oc_mark_n = ps->ps_oc_mark_sq = 0;
	ps->ps_oc_paid = paid;
	if ((other || paid) && hold > 2)
		__atomic_store_n(&ps->ps_oc_watch, now + 2 * first, __ATOMIC_RELAXED);
}

/* The hold for a mode that answered in @win against the other's @lose
 * (0: not measured; a probe that lost: over both its stretches, the one
 * that settled into the mode too, which cost more than the one compared:
 * 8 threads pausing 5 ms between SQLite-DELETE-like transactions spent 8%
 * of a run in grouped probes, 4 times the budget at what their compared
 * stretches lost by). The next probe runs the loser for two stretches, at
 * (lose - win) / win more a request than the winner: the hold is long
 * enough that probing costs at most 1/GC_OC_BUDGET of the time, and no
 * longer (GC_FB_HOLD_MIN to GC_FB_HOLD_MAX stretches). A loser by 75%
 * (grouping that waits for threads pausing 5 ms, against direct calls) is
 * tried again only after the cap; one that answered alike, soon, but
 * where grouping shares nothing: there, after twice the last hold
 * (oc_end). */
static uint32_t hold_for(uint64_t win, uint64_t lose)
{
	uint64_t h = win && lose > win ? sat_mul(2 * GC_OC_BUDGET, lose - win) / win : 0;

	return h < GC_FB_HOLD_MIN ? GC_FB_HOLD_MIN : h > GC_FB_HOLD_MAX ? GC_FB_HOLD_MAX : (uint32_t)h;
}

/* Do grouped transactions gather next to nobody with something to commit
 * (fewer than the serial rule's 1.5 requests)? Then grouping shares
 * nothing: oc_grouping_pays, probe_wins and oc_end's hold ask. */
static bool shares_nothing(const struct gc_policy_state *ps)
{
	return ps->ps_useful_x16 < GC_SERIAL_BATCH_X16;
}

/* Does grouping evidently pay, so that direct calls need no probe? Not
 * where one transaction in 8 or more (an EWMA of 1/8) waited for peers:
 * closed by its timeout, or by count but past a flush after it could
 * have closed (threads in step that wait for the one that pauses
 * longest). Its first request's own real call would have been answered
 * by then, and the disk idled meanwhile. Nor where transactions gather
 * next to nobody with something to commit (the serial rule's 1.5
 * requests): they wait for no one, but share nothing either (2 threads
 * pausing 5 ms between SQLite-DELETE-like transactions: closed at once,
 * 1.45 requests a commit, 0.92x bare until a probe after a second). A
 * request for a file with nothing to write shares no write: 8 fio jobs
 * that sync after their reads too (90% reads) gathered all 8 in every
 * commit, closed by count, one with data, and ran 0.80x bare held
 * grouped; bare keeps the disk flushing, grouped it idles between the
 * commits of the lockstep. A storm's peers come at once, all of them,
 * each with something to commit. */
static bool oc_grouping_pays(const struct gc_policy_state *ps)
{
	return ps->ps_waited_x256 < 256 / 8 && !shares_nothing(ps);
}

/* The standard error of a mean of @n latencies summing @sum ns, their
 * squares @sq us^2, squared (us^2); UINT64_MAX: fewer than two. */
static uint64_t se2_us2(uint64_t n, uint64_t sum, uint64_t sq)
{
	double m, var;

	if (n < 2)
		return UINT64_MAX;
	m = (double)sum / GC_NSEC_PER_USEC / (double)n;
	var = ((double)sq - (double)n * m * m) / (double)(n - 1);
	var = var > 0 ? var / (double)n : 0;
	return var < 1e18 ? (uint64_t)var : UINT64_MAX;
}

/* Is @mean sooner than @ref by more than twice the standard error of the
 * difference (their errors squared @se2, @ref_se2)? A single stretch is a
 * few dozen requests, whose mean moves by a tenth from one stretch to the
 * next at the same work (8 threads pausing 2 ms between appends: direct
 * 5.4 and 6.2 ms a request in two stretches, grouped 5.8-6.9): read as a
 * win, that noise held the losing mode for a whole hold. */
static bool sooner_beyond_noise(uint64_t mean, uint64_t se2, uint64_t ref, uint64_t ref_se2)
{
	double d;

	if (mean >= ref || se2 == UINT64_MAX || ref_se2 == UINT64_MAX)
		return false;
	d = (double)(ref - mean) / GC_NSEC_PER_USEC;
	return d * d > 4.0 * ((double)se2 + (double)ref_se2);
}

/* @se2 of a mean of @mode's requests, counted by commits where grouped:
 * the requests of one commit are answered together (times the requests a
 * transaction; counted by requests, a stretch of the noise of 16 threads
 * pausing 2 ms read as grouping that lost, and they ran 1.0x bare on
 * direct calls where held grouped they ran 1.1x). */
static uint64_t mode_se2(const struct gc_policy_state *ps, uint32_t mode, uint64_t se2)
{
	if (mode == GC_FB_GROUP && se2 != UINT64_MAX && ps->ps_batch_x16 > 16)
		return sat_mul(se2, ps->ps_batch_x16) / 16;
	return se2;
}

/* Did @mode's requests, answered in @mean on average (@se2), answer
 * sooner than the other mode's @ref (@ref_se2), beyond the noise? */
static bool sooner(const struct gc_policy_state *ps, uint32_t mode, uint64_t mean, uint64_t se2,
		   uint64_t ref, uint64_t ref_se2)
{
	return sooner_beyond_noise(mean, mode_se2(ps, mode, se2), ref, mode_se2(ps, !mode, ref_se2));
}

/* Does a probe of @mode, answered in @mean (@se2), take the place of the
 * held mode's @ref (@ref_se2)? Where grouping shares nothing (its
 * transactions gather fewer than the serial rule's 1.5 requests with
 * something to commit), it cannot win but by the noise, and can only add
 * its own work: it takes the place of direct calls only where it answered
 * sooner beyond the noise, and direct calls take its place unless it did
 * (a tie goes to direct calls). PostgreSQL's backends, whose lock lets one
 * flush the log at a time, send one request a transaction: grouped, about
 * 6% slower, within the noise of a stretch; with ties kept by the mode
 * that held, grouped a third of the time. Where grouping shares, a probe
 * takes the place of the device's first choice on its mean alone (threads
 * pausing 5 ms between SQLite-DELETE-like transactions on the 4 ms disk:
 * 1.09-1.17x bare grouped, within a stretch's noise of direct calls); of
 * a mode that won a comparison, only beyond the noise. */
static bool probe_wins(const struct gc_policy_state *ps, uint32_t mode, uint64_t mean, uint64_t se2,
		       uint64_t ref, uint64_t ref_se2)
{
	if (shares_nothing(ps))
		return mode == GC_FB_GROUP ? sooner(ps, mode, mean, se2, ref, ref_se2)
					   : !sooner(ps, !mode, ref, ref_se2, mean, se2);
	if (!ps->ps_oc_chosen)
		return mean < ref;
	return sooner_beyond_noise(mean, se2, ref, ref_se2);
}

/* The requests measured since measure_from(): how many (returned), their
 * mean latency (0: none) and its standard error squared (se2_us2). */
static uint64_t measured(const struct gc_policy_state *ps, uint64_t *mean, uint64_t *se2)
{
	uint64_t n = __atomic_load_n(&ps->ps_oc_lat_n, __ATOMIC_RELAXED);
	uint64_t sum = __atomic_load_n(&ps->ps_oc_lat_ns, __ATOMIC_RELAXED);

	*mean = n ? sum / n : 0;
	*se2 = se2_us2(n, sum, __atomic_load_n(&ps->ps_oc_lat_sq, __ATOMIC_RELAXED));
	return n;
}

/*
 * A watched hold's stretch ended, not its last: its requests against the
 * mode the hold was chosen over. Where that mode had answered sooner,
 * beyond the noise, the hold stops winning: that mode is probed at once
 * against this stretch (true). Grouping that evidently pays is not (see
 * oc_grouping_pays). A hold is chosen on two stretches and lasts up to
 * 64: threads that start in step (8 threads pausing 5 ms between
 * SQLite-DELETE-like transactions, all begun at once) chose grouping on
 * their start, then were held grouped at half again direct calls'
 * latency for 0.4 s, a quarter of a run.
 */
static bool oc_watch(struct gc_policy_state *ps, uint32_t mode, uint64_t now)
{
	uint64_t n = __atomic_load_n(&ps->ps_oc_lat_n, __ATOMIC_RELAXED);
	uint64_t sum = __atomic_load_n(&ps->ps_oc_lat_ns, __ATOMIC_RELAXED);
	uint64_t sq = __atomic_load_n(&ps->ps_oc_lat_sq, __ATOMIC_RELAXED);
	uint64_t sn = n - ps->ps_oc_mark_n, ssum = sum - ps->ps_oc_mark_ns;
	uint64_t mean = sn && sn <= n ? ssum / sn : 0, se2 = se2_us2(sn, ssum, sq - ps->ps_oc_mark_sq);
	uint64_t next = now + stretch(ps);
	uint64_t end = __atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED) +
		       __atomic_load_n(&ps->ps_oc_len, __ATOMIC_RELAXED);

	ps->ps_oc_mark_n = n;
	ps->ps_oc_mark_ns = sum;
	ps->ps_oc_mark_sq = sq;
	if (mean && !(mode == GC_FB_GROUP && oc_grouping_pays(ps)) &&
	    (ps->ps_oc_paid ||
	     sooner(ps, !mode, ps->ps_oc_other_ns, ps->ps_oc_other_se2, mean, se2))) {
		ps->ps_oc_last_ns = mean;
		oc_probe(ps, !mode, mean, se2, now);
		ps->ps_oc_early = 1;
		return true;
	}
	__atomic_store_n(&ps->ps_oc_watch, next < end ? next : 0, __ATOMIC_RELAXED);
	return false;
}

static bool oc_end(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t now)
{
	uint32_t mode = __atomic_load_n(&ps->ps_oc_mode, __ATOMIC_RELAXED);
	uint64_t mean, se2, n = measured(ps, &mean, &se2);
	uint64_t all_n = __atomic_load_n(&ps->ps_oc_all_n, __ATOMIC_RELAXED);
	uint64_t all = all_n ? __atomic_load_n(&ps->ps_oc_all_ns, __ATOMIC_RELAXED) / all_n : 0;

	if (!__atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED)) {
		/* grouped from the first commit, for two stretches: the
		 * check comes soon, once commits of the work were timed */
		ps->ps_oc_hold = GC_FB_HOLD_MIN;
		oc_start(ps, GC_FB_GROUP, false, 2 * stretch(ps), now);
		return false;
	}
	if (!ps->ps_oc_probe && __atomic_load_n(&ps->ps_oc_watch, __ATOMIC_RELAXED) &&
	    !span_due(__atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED),
		      __atomic_load_n(&ps->ps_oc_len, __ATOMIC_RELAXED), now))
		return oc_watch(ps, mode, now);
	ps->ps_oc_last_ns = mean;
	ps->ps_oc_cost_ns = all;
	if (!ps->ps_oc_probe) {
		/* grouped, yet most transactions closed lone (one thread
		 * syncing alone), or none was gathered (an idle domain): no
		 * evidence either way, and none for a longer hold. One more
		 * stretch. (A program's single-threaded set-up read as
		 * grouping that pays, and its threads, pausing between
		 * syncs, were then held grouped for 16 stretches.) But no
		 * longer than the longest hold: past it the hold ends as any
		 * other, where requests were measured (processes that sync
		 * once, each its own file, a few gathered by chance, were
		 * held grouped for good, never compared with direct calls). */
		uint32_t gathered = ps->ps_txns - ps->ps_oc_txns;
		uint32_t lone = ps->ps_commit_samples - ps->ps_oc_commits - gathered;

		if (mode == GC_FB_GROUP && (!gathered || gathered < lone) &&
		    (!n || ps->ps_oc_idle + 1 < GC_FB_HOLD_MAX)) {
			ps->ps_oc_idle += n != 0;
			oc_start(ps, mode, false, stretch(ps), now);
			return false;
		}
		/* a hold ended: try the other mode for a stretch, unless
		 * grouping waits too little to lose, or nothing was measured */
		if (!n || (mode == GC_FB_GROUP && oc_grouping_pays(ps))) {
			oc_hold(ps, pc, mode, hold_doubled(ps->ps_oc_hold), ps->ps_oc_other_ns,
				ps->ps_oc_other_se2, n != 0, now);
			return false;
		}
		/* the evidence of the domain's first commits is its start-up's
		 * (threads arriving one by one): one more stretch */
		if (mode == GC_FB_GROUP && ps->ps_txns < 2 * GC_STRETCH_COMMITS) {
			oc_start(ps, mode, false, stretch(ps), now);
			return false;
		}
		if (mode == GC_FB_DIRECT)
			seen_fold(ps, pc, now);
		oc_probe(ps, !mode, mean, se2, now);
		return true;
	}
	/* a probe ended: its mode holds if it won (probe_wins); else the
	 * held mode, and where grouping shares nothing, for twice its last
	 * hold at least: a probe that keeps not winning, tried half as often
	 * each time. (Where it shares, a hold kept on a tie is the mode that
	 * won before, by the noise at times: doubled, 16 threads pausing 5 ms
	 * between SQLite-DELETE-like transactions on the 1 ms disk read 0.96x
	 * bare, 0.98x without.) */
	if (n && probe_wins(ps, mode, mean, se2, ps->ps_oc_ref_ns, ps->ps_oc_ref_se2)) {
		oc_hold(ps, pc, mode, hold_for(mean, ps->ps_oc_ref_ns), ps->ps_oc_ref_ns,
			ps->ps_oc_ref_se2, false, now);
	} else {
		uint32_t h = hold_for(ps->ps_oc_ref_ns, n && all > mean ? all : mean);
		uint32_t twice = hold_doubled(ps->ps_oc_hold);

		if (shares_nothing(ps) && twice > h)
			h = twice;
		oc_hold(ps, pc, !mode, h, n ? mean : 0, se2, false, now);
	}
	if (n)
		ps->ps_oc_chosen = 1;
	return true;
}

bool gc_policy_epoch_due(const struct gc_policy_state *ps,
			 const struct gc_policy_cfg *pc, uint64_t now)
{
	uint64_t f;

	if (pc->pc_kind != GC_POL_ADAPTIVE || !pc->pc_probe)
		return false;
	f = gc_policy_device_flush(ps, now);
	if (f) {
		uint64_t w = __atomic_load_n(&ps->ps_oc_watch, __ATOMIC_RELAXED);

		return f >= GC_DEVICE_GROUP_NS &&
		       ((w && w <= now) ||
			span_due(__atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED),
				 __atomic_load_n(&ps->ps_oc_len, __ATOMIC_RELAXED), now));
	}
	return span_due(__atomic_load_n(&ps->ps_fb_epoch_start, __ATOMIC_RELAXED),
			GC_STRETCH_MIN_NS, now);
}

/* An epoch that follows a slow one measures what its direct calls took:
 * should it read slow too, grouping is compared with them. Elsewhere
 * (a fast device, tmpfs) direct calls write nothing more. */
static void fb_start(struct gc_policy_state *ps, uint64_t now)
{
	__atomic_store_n(&ps->ps_fb_min_ns, UINT64_MAX, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_fb_threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_fb_epoch_start, now, __ATOMIC_RELAXED);
	if (ps->ps_fb_call_ns >= GC_DEVICE_GROUP_NS)
		measure_from(ps, now, now);
	else
		__atomic_store_n(&ps->ps_oc_start, 0, __ATOMIC_RELAXED);
}

bool gc_policy_epoch_end(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			 uint64_t now)
{
	uint64_t min, n, mean, se2;
	bool slow, timed;

	if (!gc_policy_epoch_due(ps, pc, now))
		return false;
	if (gc_policy_device_flush(ps, now))
		return oc_end(ps, pc, now);
	min = __atomic_load_n(&ps->ps_fb_min_ns, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&ps->ps_fb_epoch_start, __ATOMIC_RELAXED)) {
		/* The first epoch times direct calls: until they are
		 * measured slow the program runs as it would bare. */
		fb_start(ps, now);
		return false;
	}
	/* Slow when several threads made direct calls and even the shortest
	 * of this epoch and of the last one that timed calls took a device
	 * flush (rule 0's threshold). An epoch without a timed call, or with
	 * one thread alone (Wheeler (4)), says nothing: timed again. */
	slow = min != UINT64_MAX && min >= GC_DEVICE_GROUP_NS &&
	       ps->ps_fb_call_ns >= GC_DEVICE_GROUP_NS &&
	       __atomic_load_n(&ps->ps_fb_threads, __ATOMIC_RELAXED) == GC_FB_MANY;
	if (min != UINT64_MAX)
		ps->ps_fb_call_ns = min;
	if (!slow) {
		fb_start(ps, now);
		return false;
	}
	/* the device's verdict from now: grouped from the next commit, the
	 * threads seen on direct calls waited for, and the outcome checked
	 * as where a source knows the device. Grouping starts as a probe
	 * against this epoch's direct calls: they are what the program got
	 * so far, and grouping holds only if it answers sooner (probe_wins).
	 * (Threads whose transactions sync files and directories start
	 * grouping here a step apart; gathered at once, never waiting, that
	 * grouping looks as if it paid, and held, it ran 0.86-0.95x bare.) */
	timed = __atomic_load_n(&ps->ps_oc_start, __ATOMIC_RELAXED) ==
		__atomic_load_n(&ps->ps_fb_epoch_start, __ATOMIC_RELAXED);
	n = measured(ps, &mean, &se2);
	gc_policy_device(ps, min, GC_DEV_SELF, now);
	seen_fold(ps, pc, now);
	if (timed && n >= 2) {
		/* a stretch is 8 commits: until one is timed, the shortest
		 * direct call is a commit's estimate (25 ms held 2 commits
		 * of 8 threads on the 4 ms disk, and grouping lost its probe
		 * to the start's noise) */
		if (!ps->ps_commit_samples)
			ps->ps_commit_ns = min;
		oc_probe(ps, GC_FB_GROUP, mean, se2, now);
	} else {
		oc_end(ps, pc, now);
	}
	return true;
}

static struct gc_decision close_now(enum gc_close_reason r)
{
	return (struct gc_decision){ .d_close = r };
}

/* Close @wait after @from (never later than the cap on any wait), or once
 * @count handles joined; whichever first. A zero wait is no wait, not a
 * timeout. */
static struct gc_decision wait_for_from(const struct gc_policy_cfg *pc,
					const struct gc_txn_view *tv, uint64_t now,
					uint64_t from, uint64_t wait, uint32_t count)
{
	uint64_t deadline;

	wait = min_u64(wait, pc->pc_max_wait_ns);
	if (!wait)
		return close_now(GC_CLOSE_NOWAIT);
	if (count && tv->tv_handles >= count)
		return close_now(GC_CLOSE_COUNT);
	deadline = from + wait;
	if (now >= deadline)
		return close_now(GC_CLOSE_TIMEOUT);
	return (struct gc_decision){ .d_deadline_ns = deadline, .d_count = count };
}

/* The wait counts from when the first handle joined (jbd2, fixed, siblings). */
static struct gc_decision wait_for(const struct gc_policy_cfg *pc,
				   const struct gc_txn_view *tv, uint64_t now,
				   uint64_t wait, uint32_t count)
{
	return wait_for_from(pc, tv, now, tv->tv_start_ns, wait, count);
}

static struct gc_decision decide_adaptive(const struct gc_policy_state *ps,
					  const struct gc_policy_cfg *pc,
					  const struct gc_txn_view *tv, uint64_t now)
{
	/* Dilger: as many as are syncing, but not a thread that syncs every
	 * few commits of the others: waited for, it would not come, and the
	 * others would pay the whole wait for nothing (one thread that
	 * pauses 20 ms beside one that does not: the head count of all
	 * recent threads made every other transaction wait in vain). */
	uint32_t active = gc_policy_expected(ps, now, tv->tv_leader);
	uint64_t wait, commit = ps->ps_commit_ns, dev = gc_policy_device_flush(ps, now);
	/* Opened while another commit was in flight: it could first commit
	 * when that one ended. */
	bool queued = tv->tv_free_ns > tv->tv_start_ns;

	if (active < tv->tv_handles)
		active = tv->tv_handles;
	/* The domain has just moved to direct calls: the threads counted
	 * above will not join, so waiting for them would only time out. */
	if (gc_policy_bypass(ps, pc, now))
		return close_now(GC_CLOSE_NOWAIT);
	/* Wheeler (4): never wait when one thread does all the syncing. */
	if (active <= 1)
		return close_now(GC_CLOSE_LONE);
	/* Several threads sync, but one at a time (a database flushing its
	 * log under its own lock: the others wait on that lock, not here):
	 * recent transactions carried about one handle each, so waiting for
	 * the others only times out. Commit at once; whoever arrives during
	 * the commit joins the next transaction, whose batch then brings the
	 * wait back. Not a transaction that waited behind a commit: its
	 * writer synced while another's sync was in flight, so the writers
	 * do not take turns; they alternate (two threads, each the other's
	 * only peer), and the one whose commit just ended comes back within
	 * the wait. */
	if (ps->ps_txns >= GC_STRETCH_COMMITS && ps->ps_batch_x16 < GC_SERIAL_BATCH_X16 &&
	    !queued)
		return close_now(GC_CLOSE_NOWAIT);
	/* Before the first commit is timed, the device's flush latency is
	 * the commit's best estimate (Bacik: wait about one commit). */
	if (!ps->ps_commit_samples)
		commit = dev;
	if (!commit)
		return close_now(GC_CLOSE_NOWAIT);
	/* Wheeler (5): a device that commits faster than we can time a wait. */
	if (commit <= ps->ps_gran_ns)
		return close_now(GC_CLOSE_FAST);
	/* Dilger: as many as are syncing; Bacik: no longer than a commit.
	 * The wait counts from when the domain could first commit this
	 * transaction: time spent behind another commit is not waiting, and
	 * counting it lets a commit longer than the wait split the writers in
	 * two halves that miss each other's transactions for good. */
	wait = commit * pc->pc_wait_pct / 100;
	return wait_for_from(pc, tv, now, queued ? tv->tv_free_ns : tv->tv_start_ns,
			     wait, active);
}

static struct gc_decision decide_jbd2(const struct gc_policy_state *ps,
				      const struct gc_policy_cfg *pc,
				      const struct gc_txn_view *tv, uint64_t now)
{
	uint64_t t = ps->ps_jbd2_avg_ns;

	if (!tv->tv_leader_new_writer)
		return close_now(GC_CLOSE_NOWAIT);
	if (t < pc->pc_min_wait_ns)
		t = pc->pc_min_wait_ns;
	return wait_for(pc, tv, now, t, 0);
}

struct gc_decision gc_policy_decide(const struct gc_policy_state *ps,
				    const struct gc_policy_cfg *pc,
				    const struct gc_txn_view *tv, uint64_t now)
{
	switch (pc->pc_kind) {
	case GC_POL_ADAPTIVE:
		return decide_adaptive(ps, pc, tv, now);
	case GC_POL_FIXED:
		return wait_for(pc, tv, now, pc->pc_wait_ns, 0);
	case GC_POL_JBD2:
		return decide_jbd2(ps, pc, tv, now);
	case GC_POL_SIBLINGS: {
		/* PostgreSQL: sleep commit_delay only when at least
		 * commit_siblings other transactions are active. */
		uint32_t active = gc_policy_active(ps, now);

		if (active < tv->tv_handles)
			active = tv->tv_handles;
		if (active <= pc->pc_siblings)
			return close_now(GC_CLOSE_NOWAIT);
		return wait_for(pc, tv, now, pc->pc_wait_ns, 0);
	}
	case GC_POL_NONE:
	default:
		return close_now(GC_CLOSE_NOWAIT);
	}
}

/* Threads that sync a file and then its directory (SQLite's rollback
 * journal) share commits in step, and the directories' commit then costs
 * next to nothing. A thread a step off makes every commit carry a file, and
 * the count rule keeps it off. Handing the fewer kind back puts it in step.
 * On a tie, the directories: a thread syncs its directory right after the
 * file it created, so the one at its directory is a step ahead of the one
 * at a file, or, where it is not, another hand-back a few steps on finds
 * them so; ties handed back by turns undid half of those (2 threads, 0.5 ms
 * pauses: 155 transactions a second by turns, 190 so, 145 bare). Only where
 * directory-only commits in step were timed cheap (under a quarter of a
 * commit): a spool's, which commit its renames, are not, and in step costs
 * it more (5.2 ms a commit against 3.8 ms mixed). Not before one was timed
 * either: handing back to find out put 8 spool threads in step at the
 * start (1.6x bare mixed, 1.2x in step). At most one transaction in
 * GC_DEFER_EVERY, which bounds what a thread that always syncs the other
 * kind pays. */
enum gc_defer gc_policy_defer(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			      uint64_t seq, uint32_t files, uint32_t dirs)
{
	if (pc->pc_kind != GC_POL_ADAPTIVE || !files || !dirs)
		return GC_DEFER_NONE;
	if (!ps->ps_dir_samples || ps->ps_dir_commit_ns > ps->ps_commit_ns / 4)
		return GC_DEFER_NONE;
	if (ps->ps_defer_seq && seq > ps->ps_defer_seq && seq - ps->ps_defer_seq < GC_DEFER_EVERY)
		return GC_DEFER_NONE;
	ps->ps_defer_seq = seq;
	return files < dirs ? GC_DEFER_FILES : GC_DEFER_DIRS;
}

bool gc_policy_procs_once(const struct gc_policy_state *ps, const struct gc_policy_cfg *pc)
{
	return pc->pc_kind == GC_POL_ADAPTIVE && ps->ps_procs_new >= GC_ONCE_EVIDENCE &&
	       2ULL * ps->ps_procs_back < ps->ps_procs_new;
}

bool gc_policy_proc_first(struct gc_policy_state *ps, const struct gc_policy_cfg *pc)
{
	uint32_t n = ps->ps_procs_new, back = ps->ps_procs_back;

	/* a peer may have written anything here: the counts stay in range */
	n = (n < GC_ONCE_WINDOW ? n : GC_ONCE_WINDOW - 1) + 1;
	if (n == GC_ONCE_WINDOW) {
		n /= 2;
		back /= 2;
	}
	if (back > n)
		back = n;
	ps->ps_procs_new = n;
	ps->ps_procs_back = back;
	return gc_policy_procs_once(ps, pc);
}

void gc_policy_proc_back(struct gc_policy_state *ps)
{
	if (ps->ps_procs_back < ps->ps_procs_new)
		ps->ps_procs_back++;
}

void gc_policy_commit_done(struct gc_policy_state *ps,
			   const struct gc_policy_cfg *pc,
			   const struct gc_commit_sample *cs)
{
	uint64_t f, from, commit = cs->cs_end_ns - cs->cs_close_ns;
	bool waited, first = ps->ps_commit_samples == 0;
	uint32_t i;

	ps->ps_commit_ns = ewma4(ps->ps_commit_ns, commit, first);
	f = gc_policy_device_flush(ps, cs->cs_end_ns);
	/* it waited for peers, not for the commit before it, longer than
	 * its first request's own real call would have taken: past a flush */
	from = cs->cs_lead_ns > cs->cs_start_ns ? cs->cs_lead_ns : cs->cs_start_ns;
	waited = cs->cs_close == GC_CLOSE_TIMEOUT ||
		 (f && cs->cs_close_ns > from && cs->cs_close_ns - from >= f);
	ps->ps_waited_x256 = (uint32_t)(((waited ? 256ULL : 0) +
					   7ULL * ps->ps_waited_x256) / 8);
	ps->ps_jbd2_avg_ns = ewma4(ps->ps_jbd2_avg_ns, commit, first);
	ps->ps_commit_samples++;
	if (cs->cs_dirs_only) {
		ps->ps_dir_commit_ns = ewma4(ps->ps_dir_commit_ns, commit, !ps->ps_dir_samples);
		ps->ps_dir_samples = ps->ps_dir_samples < UINT32_MAX ? ps->ps_dir_samples + 1
								      : UINT32_MAX;
	}

	/* The serial rule's evidence: transactions the policy gathered for.
	 * One closed because a thread syncs alone (a domain's first commits,
	 * before its threads were seen) says nothing of writers taking turns;
	 * counted, it sent the domain's early transactions off at once, and
	 * threads that would have shared commits in step were split. */
	if (cs->cs_close != GC_CLOSE_LONE) {
		uint32_t clean = cs->cs_clean < cs->cs_handles ? cs->cs_clean : cs->cs_handles;

		ps->ps_batch_x16 = (uint32_t)ewma4(ps->ps_batch_x16, 16ULL * cs->cs_handles,
						   ps->ps_txns == 0);
		ps->ps_useful_x16 = (uint32_t)ewma4(ps->ps_useful_x16,
						    16ULL * (cs->cs_handles - clean), ps->ps_txns == 0);
		ps->ps_txns++;
	}

	/* Dilger: a thread that dropped out costs one timeout; the next
	 * transaction expects only those that joined since this one began.
	 * The others stay out of the count until they sync again, their
	 * pace remembered. */
	if (cs->cs_close == GC_CLOSE_TIMEOUT) {
		uint32_t n = recent_n(ps);

		for (i = 0; i < n; i++)
			if (ps->ps_recent[i].r_seen_ns < cs->cs_start_ns)
				ps->ps_recent[i].r_out = 1;
		ps->ps_recent_n = n;
	}
}

void gc_policy_wait_overshoot(struct gc_policy_state *ps, uint64_t deadline,
			      uint64_t woke)
{
	uint64_t over = woke > deadline ? woke - deadline : 0;

	ps->ps_gran_ns = ewma4(ps->ps_gran_ns, over, ps->ps_gran_samples == 0);
	ps->ps_gran_samples++;
}
