/* Commit policies. Each decision is a pure function of configuration, the
 * domain's policy memory, a view of the running transaction and `now`; the
 * rules and their sources are in REFERENCES (jbd batching discussion, jbd2,
 * PostgreSQL commit_delay). */
#include "policy/policy.h"

#include <string.h>

#include "core/clock.h"

/* Before the first timed wait is measured: Linux's default timer slack. */
#define GC_GRAN_DEFAULT_NS (50 * GC_NSEC_PER_USEC)
/* Activity window for "recent sync threads", in commit latencies. */
#define GC_ACTIVE_COMMITS 8
#define GC_ACTIVE_MIN_NS (1 * GC_NSEC_PER_MSEC)
#define GC_ACTIVE_MAX_NS (1 * GC_NSEC_PER_SEC)
/* Transactions carried fewer than 1.5 handles on average (EWMA, x16)
 * over at least this many: the sync threads do not overlap. */
#define GC_SERIAL_BATCH_X16 24
#define GC_SERIAL_TXNS 4
/* Group-or-direct controller. Probe epochs are short, hold epochs longer;
 * a hold lasts GC_AB_HOLD_EPOCHS << streak epochs. */
#define GC_AB_PROBE_NS (25 * GC_NSEC_PER_MSEC)
#define GC_AB_HOLD_NS (200 * GC_NSEC_PER_MSEC)
#define GC_AB_MAX_EPOCH_NS (1 * GC_NSEC_PER_SEC)
#define GC_AB_MIN_REQS 8
#define GC_AB_MIN_COMMITS 8
#define GC_AB_HOLD_EPOCHS 4
#define GC_AB_MAX_STREAK 4
/* Grouping must beat direct calls by 25% to be chosen: short epochs on a
 * shared machine differ by 10-20% between identical runs, a direct probe
 * that follows grouped epochs starts with every thread released at once
 * (the kernel's own batching needs a while to find its pace again), and a
 * wrong "group" verdict costs more than a wrong "direct" one. Where grouping
 * pays (slow flushes) it wins by 70% and more. A winner by 50% or more gets
 * two more steps of hold at once (probing the loser costs), except on the
 * first verdict, measured while processes may still be starting. */
#define GC_AB_MARGIN_PCT 25
#define GC_AB_CLEAR_PCT 50
/* A grouped probe running below this share of direct's rate, with a mean
 * latency above direct's by the inverse share, halfway through its
 * measurement cannot win: it ends there. It is judged only from its
 * GC_AB_STOP_SETTLE-th commit on, and only once GC_AB_STOP_COMMITS more
 * have ended: the first commit of a grouped epoch holds the one thread that
 * arrived alone, the second every other thread's unstaged data (on a slow
 * disk these two took 40 ms at 0.45x of direct, while the grouped epoch that
 * followed ran at 1.7x). */
#define GC_AB_STOP_PCT 80
#define GC_AB_STOP_SETTLE 2
#define GC_AB_STOP_COMMITS 2

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
	ps->ps_ab_last = GC_AB_NONE;
}

static uint64_t active_window(const struct gc_policy_state *ps)
{
	uint64_t w = GC_ACTIVE_COMMITS * ps->ps_commit_ns;

	if (w < GC_ACTIVE_MIN_NS)
		w = GC_ACTIVE_MIN_NS;
	return min_u64(w, GC_ACTIVE_MAX_NS);
}

void gc_policy_forget(struct gc_policy_state *ps, bool (*gone)(int32_t tid))
{
	uint32_t i, j, n = ps->ps_recent_n < GC_RECENT_MAX ? ps->ps_recent_n : GC_RECENT_MAX;

	for (i = j = 0; i < n; i++)
		if (!gone(ps->ps_recent[i].r_tid))
			ps->ps_recent[j++] = ps->ps_recent[i];
	ps->ps_recent_n = j;
}

bool gc_policy_check(const struct gc_policy_state *ps)
{
	return ps->ps_recent_n <= GC_RECENT_MAX && ps->ps_ab_mode <= GC_AB_DIRECT &&
	       ps->ps_ab_phase <= GC_AB_HOLD && ps->ps_ab_last <= GC_AB_NONE;
}

bool gc_policy_arrive(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		      int32_t tid, uint64_t now)
{
	bool new_writer = tid != ps->ps_last_sync_tid;
	uint32_t i, oldest = 0;

	ps->ps_last_sync_tid = tid;
	for (i = 0; i < ps->ps_recent_n; i++) {
		if (ps->ps_recent[i].r_tid == tid) {
			ps->ps_recent[i].r_seen_ns = now;
			return new_writer;
		}
		if (ps->ps_recent[i].r_seen_ns < ps->ps_recent[oldest].r_seen_ns)
			oldest = i;
	}
	if (ps->ps_recent_n < GC_RECENT_MAX)
		oldest = ps->ps_recent_n++;
	ps->ps_recent[oldest].r_tid = tid;
	ps->ps_recent[oldest].r_seen_ns = now;
	return new_writer;
}

uint32_t gc_policy_active(const struct gc_policy_state *ps, uint64_t now)
{
	uint64_t w = active_window(ps);
	uint32_t i, n = 0;

	for (i = 0; i < ps->ps_recent_n; i++)
		if (ps->ps_recent[i].r_seen_ns + w >= now)
			n++;
	return n;
}

const char *gc_device_src_name(uint32_t src)
{
	static const char *const names[] = { "none", "observer", "diskstats" };

	return src < GC_DEV_SRCS ? names[src] : "?";
}

uint64_t gc_policy_device_flush(const struct gc_policy_state *ps, uint64_t now)
{
	uint64_t at = __atomic_load_n(&ps->ps_device_at_ns, __ATOMIC_RELAXED);
	uint64_t f = __atomic_load_n(&ps->ps_device_flush_ns, __ATOMIC_RELAXED);

	/* a refresh stamped in the future (a peer's clock, or scribbles)
	 * is not fresh either */
	if (!f || !at || at > now || now - at >= GC_DEVICE_FRESH_NS)
		return 0;
	return f;
}

bool gc_policy_device_claim(struct gc_policy_state *ps, uint64_t now)
{
	uint64_t at = __atomic_load_n(&ps->ps_device_at_ns, __ATOMIC_RELAXED);

	if (at && at <= now && now - at < GC_DEVICE_REFRESH_NS)
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
	__atomic_store_n(&ps->ps_device_flush_ns, flush_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_device_src, src, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_device_at_ns, now, __ATOMIC_RELAXED);
	/* While the device decides, the controller is idle; when it stops
	 * deciding, the controller starts afresh with a first epoch rather
	 * than judge counts gathered meanwhile. */
	if (flush_ns)
		__atomic_store_n(&ps->ps_ab_epoch_start, 0, __ATOMIC_RELAXED);
	return device_verdict(flush_ns) != was;
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
		return f < GC_DEVICE_GROUP_NS;
	return __atomic_load_n(&ps->ps_ab_mode, __ATOMIC_RELAXED) == GC_AB_DIRECT;
}

/* Notes @tid among the threads of this epoch: the first, or another. */
static void ab_note_thread(struct gc_policy_state *ps, int32_t tid)
{
	uint64_t me = GC_AB_ONE | (uint32_t)tid;
	uint64_t seen = __atomic_load_n(&ps->ps_ab_threads, __ATOMIC_RELAXED);

	if (seen == me || seen == GC_AB_MANY)
		return; /* once several are seen: one load a request */
	if (!seen && __atomic_compare_exchange_n(&ps->ps_ab_threads, &seen, me, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return; /* the epoch's first */
	if (seen != me)
		__atomic_store_n(&ps->ps_ab_threads, GC_AB_MANY, __ATOMIC_RELAXED);
}

void gc_policy_account(struct gc_policy_state *ps, int32_t tid, uint64_t start,
		       uint64_t end)
{
	struct gc_ab_shard *sh = &ps->ps_ab_shard[(uint32_t)tid % GC_AB_SHARDS];

	ab_note_thread(ps, tid);
	if (start < __atomic_load_n(&ps->ps_ab_measure_from, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&sh->s_reqs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->s_lat_ns, end - start, __ATOMIC_RELAXED);
}

uint64_t gc_policy_epoch_reqs(const struct gc_policy_state *ps)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < GC_AB_SHARDS; i++)
		n += __atomic_load_n(&ps->ps_ab_shard[i].s_reqs, __ATOMIC_RELAXED);
	return n;
}

static uint64_t epoch_lat_ns(const struct gc_policy_state *ps)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < GC_AB_SHARDS; i++)
		n += __atomic_load_n(&ps->ps_ab_shard[i].s_lat_ns, __ATOMIC_RELAXED);
	return n;
}

static void epoch_counts_reset(struct gc_policy_state *ps)
{
	int i;

	for (i = 0; i < GC_AB_SHARDS; i++) {
		__atomic_store_n(&ps->ps_ab_shard[i].s_reqs, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ps->ps_ab_shard[i].s_lat_ns, 0, __ATOMIC_RELAXED);
	}
}

static uint64_t epoch_len(const struct gc_policy_state *ps, uint32_t phase)
{
	uint64_t base = phase == GC_AB_PROBE ? GC_AB_PROBE_NS : GC_AB_HOLD_NS;
	uint64_t by_commit = (phase == GC_AB_PROBE ? 8 : 32) * ps->ps_commit_ns;

	return min_u64(base > by_commit ? base : by_commit, GC_AB_MAX_EPOCH_NS);
}

/* Grouped epochs are measured from their Nth commit on: the first commits
 * after a switch still carry requests (and sync threads not yet counted) of
 * the other mode; the very first grouped epoch, with processes still
 * starting and nothing learned, settles longer. */
static uint32_t ab_settle_commits(const struct gc_policy_state *ps)
{
	return ps->ps_ab_last == GC_AB_NONE ? 8 : 2;
}

/* Requests per second (x1000) of @reqs that began at or after @from and
 * ended by @now with mean latency @lat: only a window shortened by about
 * one latency can hold such requests. */
static uint64_t window_rate(uint64_t reqs, uint64_t lat, uint64_t from, uint64_t now)
{
	uint64_t dur = now > from ? now - from : 0;

	if (reqs)
		dur -= min_u64(lat, dur / 2);
	return reqs * GC_NSEC_PER_SEC * 1000 / (dur ? dur : 1);
}

/* A grouped probe is cut short when, halfway through its measured part
 * and with the requests and commits it needs to be judged, it runs clearly
 * slower than direct calls just did, and its requests take clearly longer
 * (with a fixed set of threads the two go together; a rate measured over a
 * few commits right after a switch can read low on its own): it cannot
 * win, and every millisecond of it costs (on a disk where grouping loses,
 * its epochs ran at 0.25-0.8x). Past its length it then ends without
 * waiting for the commits a verdict for grouping needs (at 16 files a
 * thread, commits of 4-10 ms stretched such probes to 90 ms). */
static bool group_probe_losing(const struct gc_policy_state *ps, uint64_t start,
			       uint64_t now)
{
	uint64_t stop = __atomic_load_n(&ps->ps_ab_stop_below, __ATOMIC_RELAXED);
	uint64_t from, end, reqs, lat;

	if (!stop)
		return false;
	if (__atomic_load_n(&ps->ps_ab_commits, __ATOMIC_RELAXED) <
	    GC_AB_STOP_SETTLE + GC_AB_STOP_COMMITS)
		return false;
	from = __atomic_load_n(&ps->ps_ab_measure_from, __ATOMIC_RELAXED);
	end = start + __atomic_load_n(&ps->ps_ab_epoch_len, __ATOMIC_RELAXED);
	if (from < end && now < from + (end - from) / 2)
		return false;
	reqs = gc_policy_epoch_reqs(ps);
	if (reqs < GC_AB_MIN_REQS)
		return false;
	lat = epoch_lat_ns(ps) / reqs;
	return lat > __atomic_load_n(&ps->ps_ab_stop_lat, __ATOMIC_RELAXED) &&
	       window_rate(reqs, lat, from, now) < stop;
}

bool gc_policy_epoch_due(const struct gc_policy_state *ps,
			 const struct gc_policy_cfg *pc, uint64_t now)
{
	uint64_t start = __atomic_load_n(&ps->ps_ab_epoch_start, __ATOMIC_RELAXED);

	if (pc->pc_kind != GC_POL_ADAPTIVE || !pc->pc_probe)
		return false;
	if (gc_policy_device_flush(ps, now))
		return false; /* the device decides: nothing to probe */
	if (!start)
		return true; /* first request: open the first epoch */
	if (now < start + __atomic_load_n(&ps->ps_ab_epoch_len, __ATOMIC_RELAXED))
		return group_probe_losing(ps, start, now);
	if (now >= start + GC_AB_MAX_EPOCH_NS)
		return true;
	/* Too few requests, or (grouped) too few commits, to judge: go on. */
	if (gc_policy_epoch_reqs(ps) < GC_AB_MIN_REQS)
		return false;
	return __atomic_load_n(&ps->ps_ab_mode, __ATOMIC_RELAXED) == GC_AB_DIRECT ||
	       __atomic_load_n(&ps->ps_ab_commits, __ATOMIC_RELAXED) >=
		       GC_AB_MIN_COMMITS + ab_settle_commits(ps) ||
	       group_probe_losing(ps, start, now);
}

/* Grouped only when it measured clearly faster (or, at equal rates, clearly
 * quicker: fewer waits for the same throughput); direct otherwise. */
static uint32_t ab_winner(const struct gc_policy_state *ps)
{
	uint64_t g = ps->ps_ab_rate[GC_AB_GROUP], d = ps->ps_ab_rate[GC_AB_DIRECT];
	uint64_t gl = ps->ps_ab_lat[GC_AB_GROUP], dl = ps->ps_ab_lat[GC_AB_DIRECT];

	if (g * 100 > d * (100 + GC_AB_MARGIN_PCT))
		return GC_AB_GROUP;
	if (g >= d && gl * (100 + GC_AB_MARGIN_PCT) < dl * 100)
		return GC_AB_GROUP;
	return GC_AB_DIRECT;
}

static void ab_start(struct gc_policy_state *ps, uint32_t mode, uint32_t phase,
		     uint64_t now)
{
	uint64_t len = epoch_len(ps, phase);
	bool stoppable = mode == GC_AB_GROUP && phase == GC_AB_PROBE &&
			 (ps->ps_ab_have & (1u << GC_AB_DIRECT));

	ps->ps_ab_phase = phase;
	__atomic_store_n(&ps->ps_ab_stop_below,
			 stoppable ? ps->ps_ab_rate[GC_AB_DIRECT] * GC_AB_STOP_PCT / 100 : 0,
			 __ATOMIC_RELAXED);
	/* direct's latency is UINT64_MAX after an epoch without requests
	 * (and then its rate, the bound above, is 0: no early end) */
	__atomic_store_n(&ps->ps_ab_stop_lat,
			 stoppable ? min_u64(ps->ps_ab_lat[GC_AB_DIRECT], UINT64_MAX / 100) *
					     100 / GC_AB_STOP_PCT
				   : 0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_ab_mode, mode, __ATOMIC_RELAXED);
	epoch_counts_reset(ps);
	__atomic_store_n(&ps->ps_ab_threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_ab_commits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_ab_epoch_len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_ab_measure_from, now + len / 4, __ATOMIC_RELAXED);
	__atomic_store_n(&ps->ps_ab_epoch_start, now, __ATOMIC_RELAXED);
}

bool gc_policy_epoch_end(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			 uint64_t now)
{
	uint32_t mode = ps->ps_ab_mode, other = mode ^ 1, win;
	uint64_t reqs;

	if (!gc_policy_epoch_due(ps, pc, now))
		return false;
	if (!__atomic_load_n(&ps->ps_ab_epoch_start, __ATOMIC_RELAXED)) {
		/* Direct first: until grouping has measured faster the
		 * program runs as it would bare. */
		ab_start(ps, GC_AB_DIRECT, GC_AB_PROBE, now);
		return false;
	}
	reqs = gc_policy_epoch_reqs(ps);
	ps->ps_ab_lat[mode] = reqs ? epoch_lat_ns(ps) / reqs
				   : UINT64_MAX;
	/* Only requests that both began and ended inside the window are
	 * counted, so a window of length T holds about rate x (T - latency)
	 * of them: without this a short probe reads low against a long hold
	 * epoch (by 5% for a 1 ms request in a 19 ms window). */
	ps->ps_ab_rate[mode] = window_rate(reqs, ps->ps_ab_lat[mode], ps->ps_ab_measure_from, now);
	ps->ps_ab_have |= 1u << mode;

	if (ps->ps_ab_phase == GC_AB_HOLD && --ps->ps_ab_hold) {
		ab_start(ps, mode, GC_AB_HOLD, now);
		return false;
	}
	if (!(ps->ps_ab_have & (1u << other))) {
		/* One thread alone has nothing to gather (Wheeler (4)): its
		 * grouped epoch would only add the commit's own steps to each
		 * request. Direct calls go on in probe-length epochs, and the
		 * first one with a second sync thread is followed by the
		 * grouped probe. */
		if (other == GC_AB_GROUP &&
		    __atomic_load_n(&ps->ps_ab_threads, __ATOMIC_RELAXED) != GC_AB_MANY) {
			ab_start(ps, GC_AB_DIRECT, GC_AB_PROBE, now);
			return false;
		}
		/* The other mode has no fresh number: measure it now. */
		ab_start(ps, other, GC_AB_PROBE, now);
		return true;
	}
	/* Both modes measured back to back: hold the faster one. */
	if (ps->ps_ab_confirm) {
		/* Grouped stands between two direct epochs: it must beat the
		 * better of them (a start-up stall or a slow moment of the
		 * device in one short direct epoch is not a reason to group). */
		ps->ps_ab_confirm = 0;
		if (ps->ps_ab_before_rate > ps->ps_ab_rate[GC_AB_DIRECT])
			ps->ps_ab_rate[GC_AB_DIRECT] = ps->ps_ab_before_rate;
		if (ps->ps_ab_before_lat < ps->ps_ab_lat[GC_AB_DIRECT])
			ps->ps_ab_lat[GC_AB_DIRECT] = ps->ps_ab_before_lat;
	} else if (ab_winner(ps) == GC_AB_GROUP && ps->ps_ab_last != GC_AB_GROUP &&
		   mode == GC_AB_GROUP) {
		/* A switch to grouped is confirmed: direct again, then the
		 * verdict (A-B-A). Grouped keeps its fresh number. */
		ps->ps_ab_confirm = 1;
		ps->ps_ab_before_rate = ps->ps_ab_rate[GC_AB_DIRECT];
		ps->ps_ab_before_lat = ps->ps_ab_lat[GC_AB_DIRECT];
		ps->ps_ab_have = 1u << GC_AB_GROUP;
		ab_start(ps, GC_AB_DIRECT, GC_AB_PROBE, now);
		return true;
	}
	win = ab_winner(ps);
	if (win == ps->ps_ab_last) {
		ps->ps_ab_streak++;
	} else {
		if (ps->ps_ab_last != GC_AB_NONE)
			ps->ps_ab_switches++;
		ps->ps_ab_streak = 0;
	}
	/* A clear winner is re-probed less often: the loser's epochs cost.
	 * The first verdict, measured while everything starts, earns it only
	 * for direct calls at least twice as fast: grouping that slow costs
	 * most per probe (a file per thread on a disk without a journal ran
	 * grouped at 0.25-0.45x), and a start that slows grouping that much
	 * where it pays has not been seen. */
	if (ps->ps_ab_rate[win] * 100 >= ps->ps_ab_rate[win ^ 1] * (100 + GC_AB_CLEAR_PCT) &&
	    (ps->ps_ab_last != GC_AB_NONE ||
	     (win == GC_AB_DIRECT && ps->ps_ab_rate[win] >= 2 * ps->ps_ab_rate[win ^ 1])))
		ps->ps_ab_streak += 2;
	if (ps->ps_ab_streak > GC_AB_MAX_STREAK)
		ps->ps_ab_streak = GC_AB_MAX_STREAK;
	ps->ps_ab_hold = GC_AB_HOLD_EPOCHS << ps->ps_ab_streak;
	/* A first verdict for direct calls by less than grouping's margin
	 * holds one epoch only: the start can flatter direct calls (two
	 * threads on one file on a slow disk began with their fsyncs sharing
	 * the kernel's commits, at 1.9x the rate they settled to, and such a
	 * verdict then held 1.3 s of a 2 s run on direct calls at 0.55x of
	 * grouped). Grouping is probed again after a direct epoch of its own
	 * length. */
	if (ps->ps_ab_last == GC_AB_NONE && win == GC_AB_DIRECT &&
	    ps->ps_ab_rate[GC_AB_GROUP] * (100 + GC_AB_MARGIN_PCT) > ps->ps_ab_rate[GC_AB_DIRECT] * 100)
		ps->ps_ab_hold = 1;
	ps->ps_ab_last = win;
	ps->ps_ab_have = 0;
	ab_start(ps, win, GC_AB_HOLD, now);
	return win != mode;
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
	uint32_t active = gc_policy_active(ps, now);
	uint64_t wait, commit = ps->ps_commit_ns, dev = gc_policy_device_flush(ps, now);

	if (active < tv->tv_handles)
		active = tv->tv_handles;
	/* The controller has just moved to direct calls: the threads counted
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
	 * wait back. */
	if (ps->ps_txns >= GC_SERIAL_TXNS && ps->ps_batch_x16 < GC_SERIAL_BATCH_X16)
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
	return wait_for_from(pc, tv, now,
			     tv->tv_free_ns > tv->tv_start_ns ? tv->tv_free_ns : tv->tv_start_ns,
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

void gc_policy_commit_done(struct gc_policy_state *ps,
			   const struct gc_policy_cfg *pc,
			   const struct gc_commit_sample *cs)
{
	uint64_t commit = cs->cs_end_ns - cs->cs_close_ns;
	bool first = ps->ps_commit_samples == 0;
	uint32_t i, j;

	ps->ps_commit_ns = ewma4(ps->ps_commit_ns, commit, first);
	ps->ps_jbd2_avg_ns = ewma4(ps->ps_jbd2_avg_ns, commit, first);
	ps->ps_commit_samples++;
	__atomic_store_n(&ps->ps_ab_commits, ps->ps_ab_commits + 1, __ATOMIC_RELAXED);
	/* a grouped epoch is measured from its settling commit on; a probe's
	 * early end is judged from GC_AB_STOP_SETTLE on, even where the epoch
	 * settles longer (then measured again from the later one) */
	if ((ps->ps_ab_commits == ab_settle_commits(ps) ||
	     ps->ps_ab_commits == GC_AB_STOP_SETTLE) &&
	    ps->ps_ab_mode == GC_AB_GROUP && ps->ps_ab_measure_from < cs->cs_end_ns) {
		__atomic_store_n(&ps->ps_ab_measure_from, cs->cs_end_ns, __ATOMIC_RELAXED);
		epoch_counts_reset(ps);
	}

	ps->ps_batch_x16 = (uint32_t)ewma4(ps->ps_batch_x16, 16ULL * cs->cs_handles,
					   ps->ps_txns == 0);
	ps->ps_txns++;

	/* Dilger: a thread that dropped out costs one timeout; the next
	 * transaction expects only those that joined since this one began. */
	if (cs->cs_close == GC_CLOSE_TIMEOUT) {
		for (i = j = 0; i < ps->ps_recent_n; i++)
			if (ps->ps_recent[i].r_seen_ns >= cs->cs_start_ns)
				ps->ps_recent[j++] = ps->ps_recent[i];
		ps->ps_recent_n = j;
	}
}

void gc_policy_wait_overshoot(struct gc_policy_state *ps, uint64_t deadline,
			      uint64_t woke)
{
	uint64_t over = woke > deadline ? woke - deadline : 0;

	ps->ps_gran_ns = ewma4(ps->ps_gran_ns, over, ps->ps_gran_samples == 0);
	ps->ps_gran_samples++;
}
