/* Commit policies driven by a fake clock: the adaptive rules (lone writer,
 * fast device, count or deadline, drop-outs, activity window), the
 * group-or-direct controller, jbd2, siblings, fixed, none, and granularity. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

/* policy.c's hold rule: a verdict is held GC_AB_HOLD_EPOCHS << streak epochs,
 * streak being the number of identical verdicts before it, plus 2 for a
 * winner by 50% or more, at most 4. */
#define HOLD_EPOCHS 4
#define MAX_STREAK 4
#define CLEAR_BONUS 2
/* Rates (per second) whose settled requests are whole in a 25 ms probe and a
 * 200 ms hold: CLOSE beats BASE by 36%, a narrow win (more than the 25%
 * grouping needs, less than the 50% of a clear one); BASE beats SLOW by
 * 150%, a clear one. */
#define R_CLOSE 5440
#define R_BASE 4000
#define R_SLOW 1600
#define R_CLEAR 2400	/* R_BASE is 1.67x: clear, but not twice */
#define R_NEAR 4400	/* 1.1x R_BASE: inside grouping's 25% margin */

static struct gc_policy_cfg cfg(enum gc_policy_kind k)
{
	struct gc_policy_cfg pc;

	gc_policy_cfg_defaults(&pc);
	pc.pc_kind = k;
	return pc;
}

/* Records a finished commit whose real calls took @commit_ns after close. */
static void commit(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		   uint64_t start, uint64_t close, uint64_t commit_ns,
		   uint32_t handles, enum gc_close_reason why)
{
	struct gc_commit_sample cs = {
		.cs_handles = handles, .cs_inodes = handles, .cs_close = why,
		.cs_start_ns = start, .cs_close_ns = close,
		.cs_end_ns = close + commit_ns,
	};

	gc_policy_commit_done(ps, pc, &cs);
}

static struct gc_decision decide(const struct gc_policy_state *ps,
				 const struct gc_policy_cfg *pc, uint32_t handles,
				 uint64_t start, uint64_t now, bool new_writer)
{
	struct gc_txn_view tv = {
		.tv_handles = handles, .tv_start_ns = start,
		.tv_leader_new_writer = new_writer,
	};

	return gc_policy_decide(ps, pc, &tv, now);
}

/* Checks a decision against (close, deadline - start, count). */
static void expect_decision(const char *name, struct gc_decision d,
			    enum gc_close_reason close, uint64_t start,
			    uint64_t wait, uint32_t count)
{
	cr_expect_eq(d.d_close, close, "%s: close reason %s, want %s", name,
		     gc_close_reason_name(d.d_close), gc_close_reason_name(close));
	if (close != GC_CLOSE_NONE || d.d_close != GC_CLOSE_NONE)
		return;
	cr_expect_eq(d.d_deadline_ns, start + wait,
		     "%s: deadline start+%llu ns, want start+%llu ns", name,
		     (unsigned long long)(d.d_deadline_ns - start),
		     (unsigned long long)wait);
	cr_expect_eq(d.d_count, count, "%s: count %u, want %u", name, d.d_count, count);
}

/* ---- adaptive decisions ------------------------------------------------- */

struct adaptive_case {
	char name[48];
	uint32_t threads;	/* distinct sync threads, leader included */
	uint64_t commit_ns;	/* measured commit latency; 0 = no sample yet */
	uint64_t gran_ns;	/* measured wait overshoot; 0 = none yet */
	uint32_t pct;		/* LIBGC_WAIT_PCT */
	uint64_t max_wait_ns;	/* LIBGC_MAX_WAIT_US */
	uint32_t handles;	/* joined so far */
	uint64_t at;		/* now - start */
	enum gc_close_reason close;
	uint64_t wait;		/* when waiting: deadline - start */
	uint32_t count;		/* when waiting: expected handles */
};

#define D_PCT 100
#define D_MAX (15 * MS)

ParameterizedTestParameters(adaptive, decisions)
{
	static struct adaptive_case cases[] = {
		/* Wheeler (4): never wait when one thread does all the syncing */
		{ "lone writer, slow device", 1, 4 * MS, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_LONE, 0, 0 },
		{ "lone writer, no sample", 1, 0, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_LONE, 0, 0 },
		{ "lone writer, fast device", 1, 10 * US, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_LONE, 0, 0 },
		/* nothing measured yet: nothing to size a wait with */
		{ "no commit sample", 4, 0, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_NOWAIT, 0, 0 },
		/* Wheeler (5): faster than the smallest wait we can express */
		{ "20us < default gran", 4, 20 * US, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_FAST, 0, 0 },
		{ "commit == default gran", 4, 50 * US, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_FAST, 0, 0 },
		{ "commit just above gran", 4, 51 * US, 0, D_PCT, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 51 * US, 4 },
		{ "coarse measured gran", 4, 150 * US, 200 * US, D_PCT, D_MAX, 1, 0, GC_CLOSE_FAST, 0, 0 },
		{ "fine measured gran", 4, 20 * US, 5 * US, D_PCT, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 20 * US, 4 },
		{ "ramdisk, 16 threads", 16, 20 * US, 0, D_PCT, D_MAX, 1, 0, GC_CLOSE_FAST, 0, 0 },
		/* Dilger + Bacik: wait for the siblings, at most one commit */
		{ "two threads, one joined", 2, 4 * MS, 0, D_PCT, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 4 * MS, 2 },
		{ "two threads, both joined", 2, 4 * MS, 0, D_PCT, D_MAX, 2, 0, GC_CLOSE_COUNT, 0, 0 },
		{ "8 threads, 1 joined", 8, 4 * MS, 0, D_PCT, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 4 * MS, 8 },
		{ "8 threads, 7 joined, 3ms in", 8, 4 * MS, 0, D_PCT, D_MAX, 7, 3 * MS,
		  GC_CLOSE_NONE, 4 * MS, 8 },
		{ "8 threads, 8 joined", 8, 4 * MS, 0, D_PCT, D_MAX, 8, 1 * MS, GC_CLOSE_COUNT, 0, 0 },
		{ "count wins over a late deadline", 8, 4 * MS, 0, D_PCT, D_MAX, 8, 9 * MS,
		  GC_CLOSE_COUNT, 0, 0 },
		{ "more joined than expected", 2, 4 * MS, 0, D_PCT, D_MAX, 3, 0, GC_CLOSE_COUNT, 0, 0 },
		{ "1ns before the deadline", 8, 4 * MS, 0, D_PCT, D_MAX, 5, 4 * MS - 1,
		  GC_CLOSE_NONE, 4 * MS, 8 },
		{ "at the deadline", 8, 4 * MS, 0, D_PCT, D_MAX, 5, 4 * MS, GC_CLOSE_TIMEOUT, 0, 0 },
		{ "past the deadline", 8, 4 * MS, 0, D_PCT, D_MAX, 5, 7 * MS, GC_CLOSE_TIMEOUT, 0, 0 },
		/* the wait is min(max_wait, pct% x commit) */
		{ "pct 50", 4, 4 * MS, 0, 50, D_MAX, 1, 0, GC_CLOSE_NONE, 2 * MS, 4 },
		{ "pct 300", 4, 4 * MS, 0, 300, D_MAX, 1, 0, GC_CLOSE_NONE, 12 * MS, 4 },
		{ "pct 200 of 10ms, capped", 4, 10 * MS, 0, 200, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 15 * MS, 4 },
		{ "slow device, max wait 1ms", 4, 4 * MS, 0, D_PCT, 1 * MS, 1, 0,
		  GC_CLOSE_NONE, 1 * MS, 4 },
		{ "40ms device, default cap", 4, 40 * MS, 0, D_PCT, D_MAX, 1, 0,
		  GC_CLOSE_NONE, 15 * MS, 4 },
	};

	return cr_make_param_array(struct adaptive_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct adaptive_case *c, adaptive, decisions)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t start = T0;
	uint32_t i;

	gc_policy_init(&ps);
	pc.pc_wait_pct = c->pct;
	pc.pc_max_wait_ns = c->max_wait_ns;
	if (c->commit_ns)
		commit(&ps, &pc, start - 50 * MS, start - 50 * MS, c->commit_ns, 1,
		       GC_CLOSE_COUNT);
	if (c->gran_ns)
		gc_policy_wait_overshoot(&ps, start - 60 * MS, start - 60 * MS + c->gran_ns);
	/* the others synced just before; the leader opens the transaction */
	for (i = 1; i < c->threads; i++)
		gc_policy_arrive(&ps, &pc, 1000 + (int32_t)i, start - 100 * US);
	gc_policy_arrive(&ps, &pc, 1000, start);

	expect_decision(c->name, decide(&ps, &pc, c->handles, start, start + c->at, true),
			c->close, start, c->wait, c->count);
}

/* Bacik: the commit time runs from close to the end of the last real call,
 * not from the transaction's first handle; it is an EWMA of 1/4. */
Test(adaptive, commit_latency_is_close_to_end_ewma)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	commit(&ps, &pc, t, t + 3 * MS, 4 * MS, 2, GC_CLOSE_COUNT);
	cr_expect_eq(ps.ps_commit_ns, 4 * MS, "first sample is taken as is");
	t += 10 * MS;
	commit(&ps, &pc, t, t + 1 * MS, 8 * MS, 2, GC_CLOSE_COUNT);
	cr_expect_eq(ps.ps_commit_ns, 5 * MS, "(8 + 3*4) / 4 = 5 ms");

	t += 20 * MS;
	gc_policy_arrive(&ps, &pc, 1, t - 10 * US);
	gc_policy_arrive(&ps, &pc, 2, t);
	expect_decision("after 4ms and 8ms commits", decide(&ps, &pc, 1, t, t, true),
			GC_CLOSE_NONE, t, 5 * MS, 2);
	cr_expect_eq(ps.ps_commit_samples, 2);
	cr_expect_eq(ps.ps_txns, 2);
}

/* The same load of 4 threads on a 4 ms device waits, on a 20 us one it
 * blasts away. */
Test(adaptive, slow_device_waits_fast_device_does_not)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state slow, fast;
	uint64_t t = T0;
	int32_t tid;

	gc_policy_init(&slow);
	gc_policy_init(&fast);
	/* several commits so the EWMA settles on each device's latency */
	for (int k = 0; k < 6; k++) {
		commit(&slow, &pc, t, t, 4 * MS, 4, GC_CLOSE_COUNT);
		commit(&fast, &pc, t, t, 20 * US, 4, GC_CLOSE_COUNT);
		t += 5 * MS;
	}
	for (tid = 1; tid <= 4; tid++) {
		gc_policy_arrive(&slow, &pc, tid, t);
		gc_policy_arrive(&fast, &pc, tid, t);
	}
	expect_decision("slow", decide(&slow, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
			4 * MS, 4);
	expect_decision("fast", decide(&fast, &pc, 1, t, t, true), GC_CLOSE_FAST, t, 0, 0);
}

/* A transaction that filled up behind a longer commit still gets its whole
 * wait once the domain is free: otherwise it times out at once, and the
 * writers still coming back from that commit miss it, split for good into
 * two halves. jbd2 keeps the kernel's rule (its wait counts from the start). */
Test(adaptive, wait_counts_from_when_the_domain_is_free)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_cfg pj = cfg(GC_POL_JBD2);
	struct gc_policy_state ps;
	uint64_t t = T0, start, free_at;
	struct gc_txn_view tv = { .tv_handles = 3, .tv_leader_new_writer = true };
	int32_t tid;

	gc_policy_init(&ps);
	for (int k = 0; k < 6; k++) {
		commit(&ps, &pc, t, t, 10 * MS, 4, GC_CLOSE_COUNT);
		t += 20 * MS;
	}
	for (tid = 1; tid <= 4; tid++)
		gc_policy_arrive(&ps, &pc, tid, t);
	start = t;
	free_at = t + 12 * MS;	/* the commit ahead of it took 12 ms */
	tv.tv_start_ns = start;
	tv.tv_free_ns = free_at;
	expect_decision("free later", gc_policy_decide(&ps, &pc, &tv, free_at), GC_CLOSE_NONE,
			free_at, 10 * MS, 4);
	expect_decision("at its deadline", gc_policy_decide(&ps, &pc, &tv, free_at + 10 * MS),
			GC_CLOSE_TIMEOUT, 0, 0, 0);
	tv.tv_free_ns = 0;
	expect_decision("free from the start", gc_policy_decide(&ps, &pc, &tv, start + 1 * MS),
			GC_CLOSE_NONE, start, 10 * MS, 4);
	tv.tv_free_ns = free_at;
	expect_decision("jbd2 counts from the start",
			gc_policy_decide(&ps, &pj, &tv, free_at), GC_CLOSE_TIMEOUT, 0, 0, 0);
}

/* Dilger: a thread that dropped out costs one timeout, and the next
 * transaction expects one fewer. */
Test(adaptive, dropped_thread_costs_one_timeout)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t s1 = T0, s2, s3;
	struct gc_decision d;

	gc_policy_init(&ps);
	/* A(1), B(2), C(3) commit together; 4 ms commits */
	gc_policy_arrive(&ps, &pc, 1, s1);
	gc_policy_arrive(&ps, &pc, 2, s1 + 10 * US);
	gc_policy_arrive(&ps, &pc, 3, s1 + 20 * US);
	commit(&ps, &pc, s1, s1 + 20 * US, 4 * MS, 3, GC_CLOSE_COUNT);
	cr_assert_eq(gc_policy_active(&ps, s1 + 5 * MS), 3);

	/* C has gone away; A and B sync again and wait for it in vain */
	s2 = s1 + 5 * MS;
	gc_policy_arrive(&ps, &pc, 1, s2);
	expect_decision("txn 2, A alone", decide(&ps, &pc, 1, s2, s2, true),
			GC_CLOSE_NONE, s2, 4 * MS, 3);
	gc_policy_arrive(&ps, &pc, 2, s2 + 100 * US);
	expect_decision("txn 2, A+B", decide(&ps, &pc, 2, s2, s2 + 100 * US, true),
			GC_CLOSE_NONE, s2, 4 * MS, 3);
	d = decide(&ps, &pc, 2, s2, s2 + 4 * MS, true);
	cr_assert_eq(d.d_close, GC_CLOSE_TIMEOUT, "txn 2 must time out, got %s",
		     gc_close_reason_name(d.d_close));
	commit(&ps, &pc, s2, s2 + 4 * MS, 4 * MS, 2, GC_CLOSE_TIMEOUT);
	cr_expect_eq(gc_policy_active(&ps, s2 + 8 * MS), 2,
		     "C is forgotten after the timed-out commit");

	/* the next transaction expects two and closes on count */
	s3 = s2 + 8 * MS;
	gc_policy_arrive(&ps, &pc, 1, s3);
	expect_decision("txn 3, A alone", decide(&ps, &pc, 1, s3, s3, true),
			GC_CLOSE_NONE, s3, 4 * MS, 2);
	gc_policy_arrive(&ps, &pc, 2, s3 + 50 * US);
	expect_decision("txn 3, A+B", decide(&ps, &pc, 2, s3, s3 + 50 * US, true),
			GC_CLOSE_COUNT, s3, 0, 0);

	/* C comes back and is expected again */
	gc_policy_arrive(&ps, &pc, 3, s3 + 60 * US);
	cr_expect_eq(gc_policy_active(&ps, s3 + 60 * US), 3);
}

/* The timeout only forgets threads that did not sync since the timed-out
 * transaction began: those queued for the next one stay. */
Test(adaptive, timeout_keeps_threads_seen_since_its_start)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t s = T0;

	gc_policy_init(&ps);
	commit(&ps, &pc, s - 20 * MS, s - 20 * MS, 4 * MS, 1, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, s - 1 * MS);	/* before: forgotten */
	gc_policy_arrive(&ps, &pc, 2, s);		/* the leader */
	gc_policy_arrive(&ps, &pc, 3, s + 1 * MS);	/* joined */
	gc_policy_arrive(&ps, &pc, 4, s + 6 * MS);	/* queued during the commit */
	commit(&ps, &pc, s, s + 4 * MS, 4 * MS, 2, GC_CLOSE_TIMEOUT);
	cr_expect_eq(gc_policy_active(&ps, s + 8 * MS), 3);
	for (uint32_t i = 0; i < ps.ps_recent_n; i++)
		cr_expect_neq(ps.ps_recent[i].r_tid, 1, "thread 1 should be forgotten");
}

/* Only a timeout is evidence of a drop-out; a count or immediate close
 * forgets nobody. */
Test(adaptive, count_close_forgets_nobody)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t s = T0;

	gc_policy_init(&ps);
	gc_policy_arrive(&ps, &pc, 1, s - 1 * MS);
	gc_policy_arrive(&ps, &pc, 2, s - 1 * MS);
	gc_policy_arrive(&ps, &pc, 3, s);
	commit(&ps, &pc, s, s + 10 * US, 4 * MS, 1, GC_CLOSE_COUNT);
	commit(&ps, &pc, s, s + 10 * US, 4 * MS, 1, GC_CLOSE_LONE);
	commit(&ps, &pc, s, s + 10 * US, 4 * MS, 1, GC_CLOSE_NOWAIT);
	cr_expect_eq(gc_policy_active(&ps, s + 5 * MS), 3);
}

/* The activity window is 8 commit latencies, within [1 ms, 1 s]. */
struct window_case {
	uint64_t commit_ns;	/* 0: no sample */
	uint64_t window_ns;
};

ParameterizedTestParameters(adaptive, activity_window)
{
	static struct window_case cases[] = {
		{ 0, 1 * MS },		{ 50 * US, 1 * MS },	{ 125 * US, 1 * MS },
		{ 4 * MS, 32 * MS },	{ 100 * MS, 800 * MS }, { 500 * MS, 1 * SEC },
	};

	return cr_make_param_array(struct window_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct window_case *c, adaptive, activity_window)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	if (c->commit_ns)
		commit(&ps, &pc, t - 2 * SEC, t - 2 * SEC, c->commit_ns, 1, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 2, t + 1);
	cr_expect_eq(gc_policy_active(&ps, t + 1), 2);
	cr_expect_eq(gc_policy_active(&ps, t + c->window_ns), 2,
		     "commit %llu ns: both still active at the window's edge",
		     (unsigned long long)c->commit_ns);
	cr_expect_eq(gc_policy_active(&ps, t + c->window_ns + 1), 1,
		     "commit %llu ns: window should be %llu ns",
		     (unsigned long long)c->commit_ns, (unsigned long long)c->window_ns);
	cr_expect_eq(gc_policy_active(&ps, t + c->window_ns + 2), 0);
}

/* Threads that stopped syncing leave the window: the survivor is a lone
 * writer again and never waits. */
Test(adaptive, expired_threads_make_a_lone_writer)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, later;

	gc_policy_init(&ps);
	commit(&ps, &pc, t - 10 * MS, t - 10 * MS, 4 * MS, 4, GC_CLOSE_COUNT);
	for (int32_t tid = 1; tid <= 4; tid++)
		gc_policy_arrive(&ps, &pc, tid, t);
	later = t + 32 * MS + 1;	/* one past 8 x 4 ms */
	gc_policy_arrive(&ps, &pc, 1, later);
	cr_expect_eq(gc_policy_active(&ps, later), 1);
	expect_decision("survivor", decide(&ps, &pc, 1, later, later, true),
			GC_CLOSE_LONE, later, 0, 0);
}

/* The recent-thread memory holds GC_RECENT_MAX threads; a newcomer replaces
 * the one seen longest ago. */
Test(adaptive, recent_threads_replace_the_oldest)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;
	int32_t tid;
	bool seen[GC_RECENT_MAX + 8] = { false };

	gc_policy_init(&ps);
	for (tid = 0; tid < GC_RECENT_MAX + 8; tid++)
		gc_policy_arrive(&ps, &pc, tid + 1, t + (uint64_t)tid);
	cr_expect_eq(ps.ps_recent_n, GC_RECENT_MAX);
	cr_expect_eq(gc_policy_active(&ps, t + GC_RECENT_MAX + 8), GC_RECENT_MAX);
	for (uint32_t i = 0; i < ps.ps_recent_n; i++)
		seen[ps.ps_recent[i].r_tid - 1] = true;
	for (tid = 0; tid < GC_RECENT_MAX + 8; tid++)
		cr_expect_eq(seen[tid], tid >= 8, "thread %d kept=%d", tid + 1, seen[tid]);
}

Test(adaptive, arrive_reports_a_new_sync_writer)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	cr_expect(gc_policy_arrive(&ps, &pc, 7, T0), "first writer is new");
	cr_expect_not(gc_policy_arrive(&ps, &pc, 7, T0 + 1), "same thread again");
	cr_expect(gc_policy_arrive(&ps, &pc, 8, T0 + 2), "another thread");
	cr_expect(gc_policy_arrive(&ps, &pc, 7, T0 + 3), "back to the first");
	cr_expect_eq(gc_policy_active(&ps, T0 + 3), 2, "two distinct threads");
}

/* ---- group-or-direct controller ------------------------------------------ */

/* A synthetic workload: requests per second and latency in each mode, and
 * the commit latency while grouped. */
struct world {
	uint64_t per_sec[2];
	uint64_t lat_ns[2];
	uint64_t commit_ns;
};
/* commits per grouped epoch: enough to settle (8 the very first epoch) and
 * then judge (8 more); they all fall in the epoch's first quarter, before
 * its own requests are counted */
#define GROUP_COMMITS 20

static uint32_t mode_now(const struct gc_policy_state *ps,
			 const struct gc_policy_cfg *pc, uint64_t now)
{
	return gc_policy_bypass(ps, pc, now) ? GC_AB_DIRECT : GC_AB_GROUP;
}

/* Opens the first epoch: a direct probe (do no harm before measuring). */
static void ab_open(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		    uint64_t now)
{
	cr_assert(gc_policy_epoch_due(ps, pc, now), "first request opens an epoch");
	cr_assert_not(gc_policy_epoch_end(ps, pc, now), "opening is not a change");
	cr_assert_not(gc_policy_epoch_due(ps, pc, now));
	cr_assert_eq(mode_now(ps, pc, now), GC_AB_DIRECT, "the first probe is direct");
	cr_assert_eq(ps->ps_ab_phase, GC_AB_PROBE);
}

/* Accounts the requests of @per_sec that both begin at or after @from and
 * end by @until, each taking @lat, begun evenly; returns how many. */
static uint64_t serve_evenly(struct gc_policy_state *ps, uint64_t per_sec, uint64_t from,
			     uint64_t until, uint64_t lat)
{
	uint64_t win = until - lat - from, n = per_sec * win / SEC, i;

	for (i = 0; i < n; i++) {
		uint64_t t = from + i * win / n;

		gc_policy_account(ps, (int32_t)i, t, t + lat);
	}
	return n;
}

/* Serves one whole epoch in the current mode and ends it; returns what
 * gc_policy_epoch_end() returned. Requests of the previous mode still
 * finish early in the epoch; the epoch's own requests arrive evenly once it
 * has settled (after its first quarter, policy.h), which makes the
 * measured rate exactly per_sec whenever per_sec x 3/4 epoch is whole. */
static bool ab_step(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		    uint64_t *now, const struct world *w)
{
	uint32_t mode = mode_now(ps, pc, *now);
	uint64_t start = ps->ps_ab_epoch_start, len = ps->ps_ab_epoch_len;
	uint64_t from = start + len / 4, span = len - len / 4;
	uint64_t lat = w->lat_ns[mode] < span / 2 ? w->lat_ns[mode] : span / 2;
	uint64_t n, i;

	cr_assert_eq(start, *now, "epochs follow each other");
	for (i = 0; i < 8; i++)	/* stragglers: slow, and not this epoch's */
		gc_policy_account(ps, 1, start - 1 * SEC, start + i * US);
	for (i = 0; mode == GC_AB_GROUP && i < GROUP_COMMITS; i++) {
		uint64_t t = start + i * (len / 4) / GROUP_COMMITS / 2;

		commit(ps, pc, t, t, w->commit_ns, 4, GC_CLOSE_COUNT);
	}
	/* the requests that both begin and end inside the settled window */
	n = serve_evenly(ps, w->per_sec[mode], from, from + span, lat);
	/* a grouped probe clearly slower than direct may end early (see
	 * losing_group_probe_ends_halfway); the rest run their length */
	if (!(mode == GC_AB_GROUP && ps->ps_ab_stop_below &&
	      w->per_sec[GC_AB_GROUP] * 1000 < ps->ps_ab_stop_below))
		cr_assert_not(gc_policy_epoch_due(ps, pc, *now + len - 1), "epoch ends early");
	*now += len;
	cr_assert(gc_policy_epoch_due(ps, pc, *now), "epoch of %llu ns with %llu requests not due",
		  (unsigned long long)len, (unsigned long long)n);
	return gc_policy_epoch_end(ps, pc, *now);
}

/* Runs the probes up to the next held verdict; returns how many epochs. */
static int ab_to_hold(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		      uint64_t *now, const struct world *w)
{
	int n = 0;

	do {
		cr_assert_lt(n, 3, "a verdict takes at most three probes");
		n++;
		ab_step(ps, pc, now, w);
	} while (ps->ps_ab_phase != GC_AB_HOLD);
	return n;
}

/* Runs epochs while the mode stays what it is now; returns how many. */
static int ab_run_while_same(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			     uint64_t *now, const struct world *w)
{
	uint32_t mode = mode_now(ps, pc, *now);
	int n = 0;

	do {
		cr_assert_lt(n, 1000, "mode never changes");
		n++;
		ab_step(ps, pc, now, w);
	} while (mode_now(ps, pc, *now) == mode);
	return n;
}

Test(ab, first_call_opens_a_direct_probe)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, T0);
	cr_expect_eq(ps.ps_ab_epoch_start, T0);
	cr_expect_eq(ps.ps_ab_epoch_len, 25 * MS, "a probe epoch lasts 25 ms");
}

/* An epoch ends after its length once it has 8 settled requests and, when
 * grouped, 8 commits to judge by after its settling commits (8 in the very
 * first epoch, 2 later); or at 1 s regardless. epoch_end re-checks and does
 * nothing early. */
Test(ab, epoch_needs_time_requests_and_commits)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t settled = T0 + 25 * MS / 4, end = T0 + 25 * MS, end2 = end + 25 * MS;
	uint64_t settled2 = end + 25 * MS / 4;
	int i;

	/* the first epoch is direct: it makes no commits, requests suffice */
	gc_policy_init(&ps);
	ab_open(&ps, &pc, T0);
	for (i = 0; i < 7; i++)
		gc_policy_account(&ps, (int32_t)i, settled + (uint64_t)i * US, settled + 1 * MS);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, end), "7 requests are too few");
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, end));
	cr_expect_eq(gc_policy_epoch_reqs(&ps), 7, "an early epoch_end must not reset the count");
	cr_expect_eq(mode_now(&ps, &pc, end), GC_AB_DIRECT);
	gc_policy_account(&ps, 1, T0, settled + 2 * MS);	/* began unsettled */
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, end), "unsettled one not counted");
	gc_policy_account(&ps, 1, settled, settled + 2 * MS);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, end - 1), "too early");
	cr_expect(gc_policy_epoch_due(&ps, &pc, end), "8 requests, 25 ms");
	cr_expect(gc_policy_epoch_end(&ps, &pc, end), "on to the group probe");
	cr_assert_not(gc_policy_bypass(&ps, &pc, end));

	/* grouped, requests alone are not enough: the very first grouped
	 * epoch settles 8 commits, then needs 8 to judge by */
	for (i = 0; i < 15; i++)
		commit(&ps, &pc, end, end, 1 * MS, 2, GC_CLOSE_COUNT);
	for (i = 0; i < 50; i++)
		gc_policy_account(&ps, (int32_t)i, settled2 + (uint64_t)i * US, settled2 + 1 * MS);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, end2), "15 commits are too few");
	commit(&ps, &pc, end, end, 1 * MS, 2, GC_CLOSE_COUNT);
	cr_expect(gc_policy_epoch_due(&ps, &pc, end2), "8 requests, 8 + 8 commits, 25 ms");

	/* a quiet epoch still ends at the 1 s cap; with no sync thread in
	 * it there is nothing to group */
	gc_policy_init(&ps);
	ab_open(&ps, &pc, T0);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, T0 + SEC - 1));
	cr_expect(gc_policy_epoch_due(&ps, &pc, T0 + SEC));
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, T0 + SEC), "stays direct");
	cr_expect_eq(ps.ps_ab_epoch_start, T0 + SEC, "in a new epoch");
	cr_expect_eq(ps.ps_ab_rate[GC_AB_DIRECT], 0);
	cr_expect_eq(ps.ps_ab_lat[GC_AB_DIRECT], UINT64_MAX, "no requests: no latency");
}

/* Each request notes its thread, settled or not: nobody, one thread (any
 * tid, 0 included), or several. A new epoch forgets them. */
Test(ab, epoch_notes_one_thread_or_several)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, T0);
	cr_expect_eq(ps.ps_ab_threads, 0);
	gc_policy_account(&ps, 0, T0 - 1 * MS, T0 + 1 * MS);	/* unsettled */
	cr_expect_eq(ps.ps_ab_threads, GC_AB_ONE | 0);
	gc_policy_account(&ps, 0, T0 + 10 * MS, T0 + 11 * MS);
	cr_expect_eq(ps.ps_ab_threads, GC_AB_ONE | 0, "the same thread again");
	gc_policy_account(&ps, 8, T0 + 10 * MS, T0 + 11 * MS);	/* same shard */
	cr_expect_eq(ps.ps_ab_threads, GC_AB_MANY);
	gc_policy_account(&ps, 0, T0 + 12 * MS, T0 + 13 * MS);
	cr_expect_eq(ps.ps_ab_threads, GC_AB_MANY, "several stays several");

	gc_policy_init(&ps);
	ab_open(&ps, &pc, T0);
	gc_policy_account(&ps, -5, T0 + 10 * MS, T0 + 11 * MS);
	cr_expect_eq(ps.ps_ab_threads, GC_AB_ONE | (uint32_t)-5);
	gc_policy_account(&ps, 3, T0 + 10 * MS, T0 + 11 * MS);
	cr_expect_eq(ps.ps_ab_threads, GC_AB_MANY);
	for (int i = 0; i < 8; i++)
		gc_policy_account(&ps, 3, T0 + 10 * MS, T0 + 11 * MS);
	cr_expect(gc_policy_epoch_end(&ps, &pc, T0 + 25 * MS), "on to the group probe");
	cr_expect_eq(ps.ps_ab_threads, 0, "forgotten by the new epoch");
}

/* Wheeler (4) for the controller: one sync thread alone is never probed
 * grouped (there is nothing to gather). It stays on direct calls in
 * probe-length epochs, however fast or slow they run, and the epoch in
 * which a second thread syncs is followed by the grouped probe. */
Test(ab, lone_thread_is_not_probed_grouped)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0, from;
	int e, i;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	for (e = 0; e < 20; e++) {
		from = now + 25 * MS / 4;
		for (i = 0; i < 10; i++)
			gc_policy_account(&ps, 4242, from + (uint64_t)i * MS, from + (uint64_t)i * MS + 20 * MS);
		now += e % 2 ? 25 * MS : 1 * SEC;
		cr_assert(gc_policy_epoch_due(&ps, &pc, now));
		cr_assert_not(gc_policy_epoch_end(&ps, &pc, now), "epoch %d: no switch", e);
		cr_assert_eq(mode_now(&ps, &pc, now), GC_AB_DIRECT);
		cr_assert_eq(ps.ps_ab_phase, GC_AB_PROBE);
		cr_assert_eq(ps.ps_ab_epoch_start, now);
		cr_assert_eq(ps.ps_ab_epoch_len, 25 * MS);
		cr_assert_eq(ps.ps_ab_last, GC_AB_NONE, "no verdict");
	}
	cr_expect_gt(ps.ps_ab_rate[GC_AB_DIRECT], 0, "direct is measured all along");

	/* a second thread: the epoch after it is the grouped probe */
	from = now + 25 * MS / 4;
	for (i = 0; i < 10; i++)
		gc_policy_account(&ps, 4242, from + (uint64_t)i * MS, from + (uint64_t)i * MS + 2 * MS);
	gc_policy_account(&ps, 4243, from, from + 2 * MS);
	now += 25 * MS;
	cr_assert(gc_policy_epoch_end(&ps, &pc, now), "on to the group probe");
	cr_expect_eq(mode_now(&ps, &pc, now), GC_AB_GROUP);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE);
}

/* Epochs stretch with the commit latency (probes 8, holds 32 commits; cap
 * 1 s) so slow devices still see many commits per epoch. */
struct epoch_len_case {
	uint64_t commit_ns;
	uint64_t probe_ns;
	uint64_t hold_ns;
};

ParameterizedTestParameters(ab, epoch_length)
{
	static struct epoch_len_case cases[] = {
		{ 0, 25 * MS, 200 * MS },	{ 1 * MS, 25 * MS, 200 * MS },
		{ 2 * MS, 25 * MS, 200 * MS },	{ 4 * MS, 32 * MS, 200 * MS },
		{ 10 * MS, 80 * MS, 320 * MS }, { 50 * MS, 400 * MS, 1 * SEC },
		{ 200 * MS, 1 * SEC, 1 * SEC },
	};

	return cr_make_param_array(struct epoch_len_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct epoch_len_case *c, ab, epoch_length)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 1600 }, { 1 * MS, 1 * MS }, c->commit_ns };
	uint64_t now = T0;

	gc_policy_init(&ps);
	if (c->commit_ns)
		commit(&ps, &pc, now - 5 * SEC, now - 5 * SEC, c->commit_ns, 2, GC_CLOSE_COUNT);
	ab_open(&ps, &pc, now);
	cr_expect_eq(ps.ps_ab_epoch_len, c->probe_ns, "commit %llu: probe epoch %llu",
		     (unsigned long long)c->commit_ns, (unsigned long long)ps.ps_ab_epoch_len);
	/* direct probe, group probe, direct again (group won), then a held
	 * verdict */
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_epoch_len, c->probe_ns);
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_epoch_len, c->probe_ns, "the confirming probe");
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD);
	cr_expect_eq(ps.ps_ab_epoch_len, c->hold_ns, "commit %llu: hold epoch %llu",
		     (unsigned long long)c->commit_ns, (unsigned long long)ps.ps_ab_epoch_len);
}

/* The first probe is direct: before anything is measured the program runs
 * as it would bare; grouping has to earn its place. */
Test(ab, direct_probe_then_group_probe)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 1600 }, { 2 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	cr_expect(ab_step(&ps, &pc, &now, &w), "the direct probe hands over to group");
	cr_expect_not(gc_policy_bypass(&ps, &pc, now), "the second probe groups");
	cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE);
	/* 28 requests began and ended in the 17.75 ms of the settled window
	 * that leaves room for their 1 ms: 1577/s (1600/s but for the
	 * truncation), kept x1000; the slow stragglers of before the epoch
	 * count neither in rate nor latency */
	cr_expect_eq(ps.ps_ab_rate[GC_AB_DIRECT], 28ULL * SEC * 1000 / (17750 * US));
	cr_expect_eq(ps.ps_ab_lat[GC_AB_DIRECT], 1 * MS);
	/* group won: before holding it, direct is measured once more */
	cr_expect(ab_step(&ps, &pc, &now, &w), "group probe -> direct again");
	cr_expect_eq(ps.ps_ab_rate[GC_AB_GROUP], 4000 * 1000);
	cr_expect_eq(ps.ps_ab_lat[GC_AB_GROUP], 2 * MS);
	cr_expect(gc_policy_bypass(&ps, &pc, now), "the confirming probe is direct");
	cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE);
	cr_expect(ab_step(&ps, &pc, &now, &w), "direct probe -> group held");
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD);
	cr_expect_not(gc_policy_bypass(&ps, &pc, now), "group was faster: hold group");
}

/* Grouped must beat direct measured both before and after it (A-B-A): a
 * stall of the device (or of start-up) in one short direct epoch does not
 * make grouping win. */
struct aba_case {
	char name[48];
	uint64_t d_before, g, d_after;
	uint32_t winner;
};

ParameterizedTestParameters(ab, group_must_beat_direct_on_both_sides)
{
	static struct aba_case cases[] = {
		{ "stall before", 1000, 2000, 2400, GC_AB_DIRECT },
		{ "stall after: the better one still loses", 1600, 2400, 1000, GC_AB_GROUP },
		{ "group beats both", 1600, 4000, 1800, GC_AB_GROUP },
		{ "group +20% on the better", 1500, 2400, 2000, GC_AB_DIRECT },
		{ "group +30% on the better", 2000, 2600, 1500, GC_AB_GROUP },
	};

	return cr_make_param_array(struct aba_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct aba_case *c, ab, group_must_beat_direct_on_both_sides)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { c->g, c->d_before }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_step(&ps, &pc, &now, &w);
	ab_step(&ps, &pc, &now, &w);
	cr_assert_eq(ps.ps_ab_phase, GC_AB_PROBE, "%s: group won once, so direct again",
		     c->name);
	cr_assert(gc_policy_bypass(&ps, &pc, now), "%s", c->name);
	w.per_sec[GC_AB_DIRECT] = c->d_after;
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD, "%s", c->name);
	cr_expect_eq(mode_now(&ps, &pc, now), c->winner, "%s: held %s", c->name,
		     mode_now(&ps, &pc, now) == GC_AB_GROUP ? "group" : "direct");
	cr_expect_eq(ps.ps_ab_switches, 0, "%s: a first verdict is no switch", c->name);
}

/* A grouped probe running below 80% of direct's rate halfway through its
 * measured part, with requests taking over 1/0.8 of direct's latency (and
 * with at least 8 requests), ends there with a verdict for direct; one that
 * is slower but not by that much, or whose requests are not slower (a rate
 * read low over few commits), runs its whole length. */
struct early_case {
	char name[48];
	uint64_t g_rate;
	uint64_t g_lat;
	bool early;
};

ParameterizedTestParameters(ab, losing_group_probe_ends_halfway)
{
	static struct early_case cases[] = {
		{ "group at half of direct", 4000, 2 * MS, true },
		{ "group at 75% of direct", 6000, 1340 * US, true },
		{ "group at 85% of direct", 6800, 1180 * US, false },
		{ "group faster", 12000, 670 * US, false },
		{ "half the rate, same latency", 4000, 1 * MS, false },
		{ "half the rate, latency +20%", 4000, 1200 * US, false },
	};

	return cr_make_param_array(struct early_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct early_case *c, ab, losing_group_probe_ends_halfway)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { c->g_rate, 8000 }, { c->g_lat, 1 * MS }, 1 * MS };
	uint64_t now = T0, start, from, end, half, n, i;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_step(&ps, &pc, &now, &w);
	cr_assert_not(gc_policy_bypass(&ps, &pc, now), "the group probe");
	start = ps.ps_ab_epoch_start;
	end = start + ps.ps_ab_epoch_len;
	from = ps.ps_ab_measure_from;
	half = from + (end - from) / 2;
	for (i = 0; i < GROUP_COMMITS; i++) {
		uint64_t t = start + i * (from - start) / GROUP_COMMITS / 2;

		commit(&ps, &pc, t, t, w.commit_ns, 4, GC_CLOSE_COUNT);
	}
	/* requests that ended by halfway, at the group rate */
	n = serve_evenly(&ps, c->g_rate, from, half, c->g_lat);
	cr_assert_geq(n, 8, "%s: enough requests to judge early", c->name);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, half - 1), "%s: not before halfway",
		      c->name);
	cr_expect_eq(gc_policy_epoch_due(&ps, &pc, half), c->early, "%s: due halfway",
		     c->name);
	if (!c->early)
		return;
	cr_expect(gc_policy_epoch_end(&ps, &pc, half), "%s: ends, and changes", c->name);
	cr_expect(gc_policy_bypass(&ps, &pc, half), "%s: direct held", c->name);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD, "%s", c->name);
	cr_expect_lt(ps.ps_ab_rate[GC_AB_GROUP], 8000 * 1000 * 80 / 100, "%s", c->name);
}

/* Past its length, a grouped probe that is losing ends without the commits
 * a verdict for grouping would need (4 of 16 here); one that is not losing
 * waits for them. */
Test(ab, losing_group_probe_needs_no_commits)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 8000 }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0, from, end, i;

	for (int losing = 1; losing >= 0; losing--) {
		uint64_t rate = losing ? 4000 : 7000, lat = 8000 * MS / rate;

		gc_policy_init(&ps);
		now = T0;
		ab_open(&ps, &pc, now);
		ab_step(&ps, &pc, &now, &w);
		cr_assert_not(gc_policy_bypass(&ps, &pc, now), "the group probe");
		from = ps.ps_ab_measure_from;
		end = ps.ps_ab_epoch_start + ps.ps_ab_epoch_len;
		for (i = 0; i < 4; i++)
			commit(&ps, &pc, now, now, w.commit_ns, 4, GC_CLOSE_COUNT);
		serve_evenly(&ps, rate, from, end, lat);
		cr_expect_eq(gc_policy_epoch_due(&ps, &pc, end), (bool)losing,
			     "%llu/s against 8000/s direct, 4 commits: due=%d",
			     (unsigned long long)rate, !losing);
	}
}

/* The first two commits of a grouped probe are not judged: on a slow disk
 * the first one held the thread that arrived alone and the second every
 * other thread's unstaged data, which together read as 0.45x of direct,
 * while the commits after them ran at 1.7x. The probe is judged from the
 * end of its second commit, once two more have ended. */
Test(ab, group_probe_is_judged_after_its_first_commits)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 1600, 1600 }, { 10 * MS, 10 * MS }, 6 * MS };
	uint64_t now = T0, start, t, i, k;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_step(&ps, &pc, &now, &w);	/* direct: 16 threads at 10 ms */
	cr_assert_not(gc_policy_bypass(&ps, &pc, now), "the group probe");
	cr_assert_gt(ps.ps_ab_stop_below, 0, "a probe that may end early");
	start = now;
	/* one thread alone, then the other 15 with unstaged data */
	commit(&ps, &pc, start, start, 19 * MS, 1, GC_CLOSE_NOWAIT);
	gc_policy_account(&ps, 0, start, start + 19 * MS);
	commit(&ps, &pc, start + 7 * MS, start + 19 * MS, 21 * MS, 16, GC_CLOSE_COUNT);
	cr_expect_eq(ps.ps_ab_measure_from, start + 40 * MS,
		     "measured from the end of the second commit");
	for (i = 1; i < 16; i++)
		gc_policy_account(&ps, (int32_t)i, start + 7 * MS + i * US, start + 40 * MS);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, start + 40 * MS),
		      "two commits are not judged");
	/* then commits of 6 ms holding all 16: 2,667/s */
	for (k = 0, t = start + 40 * MS; k < 12; k++, t += 6 * MS) {
		commit(&ps, &pc, t, t, 6 * MS, 16, GC_CLOSE_COUNT);
		for (i = 0; i < 16; i++)
			gc_policy_account(&ps, (int32_t)i, t + i * US, t + 6 * MS);
		cr_expect_not(gc_policy_epoch_due(&ps, &pc, t + 6 * MS),
			      "not losing after %llu commits", (unsigned long long)k + 3);
	}
}

/* A leader still waiting when the controller moves to direct calls closes
 * at once: the threads it counts on now make their own calls. */
Test(ab, direct_epoch_closes_a_waiting_transaction)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 1600 }, { 2 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;
	int32_t tid;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	cr_assert(ab_step(&ps, &pc, &now, &w), "direct probe, then group");
	for (int k = 0; k < 6; k++)	/* the EWMA settles on 1 ms */
		commit(&ps, &pc, now, now, 1 * MS, 4, GC_CLOSE_COUNT);
	for (tid = 1; tid <= 4; tid++)
		gc_policy_arrive(&ps, &pc, tid, now);
	expect_decision("group probe", decide(&ps, &pc, 1, now, now, true), GC_CLOSE_NONE,
			now, 1 * MS, 4);
	w.per_sec[GC_AB_GROUP] = 800;	/* group measures slower: direct held */
	cr_assert(ab_step(&ps, &pc, &now, &w));
	for (tid = 1; tid <= 4; tid++)
		gc_policy_arrive(&ps, &pc, tid, now);
	cr_assert(gc_policy_bypass(&ps, &pc, now));
	expect_decision("direct held", decide(&ps, &pc, 1, now, now, true),
			GC_CLOSE_NOWAIT, now, 0, 0);
}

/* Verdict: group only when its rate is more than 25% higher, or when it is
 * not lower and its mean latency is more than 25% lower; direct otherwise. */
struct verdict_case {
	char name[48];
	uint64_t g_rate, g_lat, d_rate, d_lat;
	uint32_t winner;
};

ParameterizedTestParameters(ab, verdict)
{
	static struct verdict_case cases[] = {
		{ "group twice as fast", 3200, 4 * MS, 1600, 1 * MS, GC_AB_GROUP },
		{ "direct twice as fast", 1600, 1 * MS, 3200, 4 * MS, GC_AB_DIRECT },
		{ "group +30%", 5200, 3 * MS, 4000, 1 * MS, GC_AB_GROUP },
		{ "group +20%: not enough", 4800, 3 * MS, 4000, 1 * MS, GC_AB_DIRECT },
		{ "direct +2%, group quicker", 4000, 1 * MS, 4080, 2 * MS, GC_AB_DIRECT },
		{ "equal rates, group clearly quicker", 4000, 1 * MS, 4000, 3 * MS, GC_AB_GROUP },
		{ "equal rates, group 20% quicker", 4000, 1 * MS, 4000, 1200 * US, GC_AB_DIRECT },
		{ "group +2%, group clearly quicker", 4080, 1 * MS, 4000, 2 * MS, GC_AB_GROUP },
		{ "group +2%, direct quicker", 4080, 2 * MS, 4000, 1 * MS, GC_AB_DIRECT },
	};

	return cr_make_param_array(struct verdict_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct verdict_case *c, ab, verdict)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { c->g_rate, c->d_rate }, { c->g_lat, c->d_lat }, 1 * MS };
	uint64_t now = T0;
	bool changed;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_step(&ps, &pc, &now, &w);
	changed = ab_step(&ps, &pc, &now, &w);
	/* the group probe ends in a change either way: to held direct, or
	 * to the direct probe that confirms a group win */
	cr_expect(changed, "%s: epoch_end result", c->name);
	if (c->winner == GC_AB_GROUP) {
		cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE, "%s: confirming probe", c->name);
		cr_expect(ab_step(&ps, &pc, &now, &w), "%s: confirmed", c->name);
	}
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD, "%s", c->name);
	cr_expect_eq(mode_now(&ps, &pc, now), c->winner, "%s: held %s", c->name,
		     mode_now(&ps, &pc, now) == GC_AB_GROUP ? "group" : "direct");
}

/* A narrow first verdict holds GC_AB_HOLD_EPOCHS epochs, whichever mode
 * won: there were no identical verdicts before it. Then only the other mode is
 * re-probed, for one epoch, and the next verdict follows at once. */
struct first_hold_case {
	uint32_t winner;
};

ParameterizedTestParameters(ab, first_hold)
{
	static struct first_hold_case cases[] = { { GC_AB_GROUP }, { GC_AB_DIRECT } };

	return cr_make_param_array(struct first_hold_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct first_hold_case *c, ab, first_hold)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { R_BASE, R_BASE }, { 1 * MS, 1 * MS }, 1 * MS };
	const char *name = c->winner == GC_AB_GROUP ? "group" : "direct";
	uint64_t now = T0;
	int held;

	w.per_sec[c->winner] = R_CLOSE;
	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	cr_expect_eq(ab_to_hold(&ps, &pc, &now, &w), c->winner == GC_AB_GROUP ? 3 : 2,
		     "%s: direct, group (and direct again if group won)", name);
	cr_assert_eq(mode_now(&ps, &pc, now), c->winner);
	cr_expect_eq(ps.ps_ab_switches, 0, "%s: a first verdict changes no held mode", name);

	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, HOLD_EPOCHS, "first verdict %s held %d epochs, want %d", name,
		     held, HOLD_EPOCHS);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE, "%s: re-probe after the hold", name);
	cr_expect_eq(mode_now(&ps, &pc, now), c->winner ^ 1, "%s: re-probe the other", name);

	/* one epoch of the other mode, then the winner is held again */
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD, "%s: verdict right after one probe", name);
	cr_expect_eq(mode_now(&ps, &pc, now), c->winner, "%s: still the faster", name);
}

/* The same narrow verdict again doubles the hold, up to 4 doublings. */
Test(ab, repeated_verdicts_lengthen_the_hold)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { R_BASE, R_CLOSE }, { 4 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;
	int round, want, held;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_to_hold(&ps, &pc, &now, &w);
	for (round = 0; round < MAX_STREAK + 2; round++) {
		int streak = round < MAX_STREAK ? round : MAX_STREAK;

		cr_assert(gc_policy_bypass(&ps, &pc, now), "round %d: direct is held", round);
		want = HOLD_EPOCHS << streak;
		held = ab_run_while_same(&ps, &pc, &now, &w);
		cr_expect_eq(held, want, "round %d: held %d epochs, want %d", round, held, want);
		cr_assert_not(gc_policy_bypass(&ps, &pc, now), "round %d: group re-probe", round);
		ab_step(&ps, &pc, &now, &w);
	}
}

/* A clear winner (by 50% or more) is re-probed less often: its streak
 * counts CLEAR_BONUS more, up to the longest hold; but not the very first
 * verdict, measured while everything is starting. */
ParameterizedTestParameters(ab, clear_win_holds_longer)
{
	static struct first_hold_case cases[] = { { GC_AB_GROUP }, { GC_AB_DIRECT } };

	return cr_make_param_array(struct first_hold_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct first_hold_case *c, ab, clear_win_holds_longer)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { R_CLEAR, R_CLEAR }, { 1 * MS, 1 * MS }, 1 * MS };
	const char *name = c->winner == GC_AB_GROUP ? "group" : "direct";
	int want, held;
	uint64_t now = T0;

	w.per_sec[c->winner] = R_BASE;
	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_to_hold(&ps, &pc, &now, &w);
	cr_assert_eq(mode_now(&ps, &pc, now), c->winner);
	/* the first verdict is measured while everything starts: no bonus */
	want = HOLD_EPOCHS;
	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, want, "clear first verdict %s held %d epochs, want %d", name,
		     held, want);
	/* the same clear verdict again: one step for agreeing, the bonus */
	ab_step(&ps, &pc, &now, &w);
	cr_assert_eq(mode_now(&ps, &pc, now), c->winner);
	want = HOLD_EPOCHS << (1 + CLEAR_BONUS);
	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, want, "clear again %s held %d epochs, want %d", name, held, want);

	/* narrow first verdict, then a clear one for the same mode */
	gc_policy_init(&ps);
	now = T0;
	w.per_sec[c->winner] = R_CLOSE;
	w.per_sec[c->winner ^ 1] = R_BASE;
	ab_open(&ps, &pc, now);
	ab_to_hold(&ps, &pc, &now, &w);
	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, HOLD_EPOCHS, "%s narrow: held %d", name, held);
	w.per_sec[c->winner ^ 1] = R_SLOW;	/* the loser got much worse */
	ab_step(&ps, &pc, &now, &w);
	cr_assert_eq(mode_now(&ps, &pc, now), c->winner);
	want = HOLD_EPOCHS << (1 + CLEAR_BONUS);
	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, want, "%s, narrow then clear: held %d epochs, want %d", name,
		     held, want);
}

/* Starts a controller in @w and runs it to its first verdict, which must
 * be @want after @probes probe epochs; returns how many epochs that
 * verdict held. */
static int first_verdict_held(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			      uint64_t *now, const struct world *w, uint32_t want, int probes)
{
	gc_policy_init(ps);
	*now = T0;
	ab_open(ps, pc, *now);
	cr_assert_eq(ab_to_hold(ps, pc, now, w), probes, "probe epochs before the first verdict");
	cr_assert_eq(mode_now(ps, pc, *now), want, "first verdict");
	return ab_run_while_same(ps, pc, now, w);
}

/* A first verdict for direct calls at least twice as fast as grouping
 * holds with the clear bonus at once; a first verdict for grouping twice
 * as fast does not (A-B-A confirmed or not, start-up can mislead it). */
Test(ab, first_verdict_direct_twice_as_fast_holds_longer)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { R_SLOW, R_BASE }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now;
	int held;

	held = first_verdict_held(&ps, &pc, &now, &w, GC_AB_DIRECT, 2);
	cr_expect_eq(held, HOLD_EPOCHS << CLEAR_BONUS, "direct 2.5x: held %d epochs, want %d",
		     held, HOLD_EPOCHS << CLEAR_BONUS);

	w = (struct world){ { R_BASE, R_SLOW }, { 1 * MS, 1 * MS }, 1 * MS };
	held = first_verdict_held(&ps, &pc, &now, &w, GC_AB_GROUP, 3);
	cr_expect_eq(held, HOLD_EPOCHS, "group 2.5x first: held %d epochs, want %d", held,
		     HOLD_EPOCHS);
}

/* A first verdict for direct calls won by less than grouping's margin
 * (grouping above 80% of direct) holds one epoch: the start can flatter
 * direct calls. Grouping is then probed again, and the same verdict holds
 * as a second one does. */
Test(ab, first_verdict_inside_the_margin_holds_one_epoch)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { R_BASE, R_NEAR }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now;
	int held;

	/* direct, then group */
	held = first_verdict_held(&ps, &pc, &now, &w, GC_AB_DIRECT, 2);
	cr_expect_eq(held, 1, "direct by 10%% first: held %d epochs, want 1", held);
	cr_assert_eq(ps.ps_ab_phase, GC_AB_PROBE, "then grouping is probed");
	ab_step(&ps, &pc, &now, &w);
	cr_assert(gc_policy_bypass(&ps, &pc, now), "direct held again");
	held = ab_run_while_same(&ps, &pc, &now, &w);
	cr_expect_eq(held, HOLD_EPOCHS << 1, "the same verdict again: held %d epochs, want %d",
		     held, HOLD_EPOCHS << 1);
}

/* The hold epochs of the held mode are its fresh measurement: if it got
 * slower while held, one probe of the other mode is enough to switch. */
Test(ab, held_mode_is_remeasured_while_held)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 1600 }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	ab_to_hold(&ps, &pc, &now, &w);
	cr_assert_not(gc_policy_bypass(&ps, &pc, now), "group held");

	w.per_sec[GC_AB_GROUP] = 800;	/* grouping stopped paying */
	ab_run_while_same(&ps, &pc, &now, &w);
	cr_assert(gc_policy_bypass(&ps, &pc, now), "direct re-probe");
	/* 119 requests began and ended in the last 149 ms of the 200 ms hold
	 * epoch: 800/s but for the truncation */
	cr_expect_eq(ps.ps_ab_rate[GC_AB_GROUP], 119ULL * SEC * 1000 / (149 * MS),
		     "last hold epoch measured");
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD);
	cr_expect(gc_policy_bypass(&ps, &pc, now), "direct (1600/s) beats group (800/s)");
}

/* Bypass in both directions: group faster -> held group; the load changes,
 * direct faster -> switch to direct; back again -> switch to group. */
Test(ab, reprobe_switches_both_ways)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct world w = { { 4000, 1600 }, { 1 * MS, 1 * MS }, 1 * MS };
	uint64_t now = T0;
	uint32_t sw;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, now);
	cr_expect(ab_step(&ps, &pc, &now, &w), "direct probe -> group probe");
	cr_expect(ab_step(&ps, &pc, &now, &w), "group probe -> direct again");
	cr_expect(ab_step(&ps, &pc, &now, &w), "direct again -> group held");
	cr_assert_not(gc_policy_bypass(&ps, &pc, now));
	cr_assert_eq(ps.ps_ab_phase, GC_AB_HOLD);
	sw = ps.ps_ab_switches;
	cr_expect_eq(sw, 0, "the first verdict is no switch");

	/* direct becomes the faster: one re-probe of direct switches */
	w.per_sec[GC_AB_GROUP] = 1600;
	w.per_sec[GC_AB_DIRECT] = 4000;
	ab_run_while_same(&ps, &pc, &now, &w);
	cr_assert(gc_policy_bypass(&ps, &pc, now));
	cr_assert_eq(ps.ps_ab_phase, GC_AB_PROBE, "direct is probed first");
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD);
	cr_expect(gc_policy_bypass(&ps, &pc, now), "direct held");
	cr_expect_eq(ps.ps_ab_switches, sw + 1, "one switch");

	/* and back: held direct is re-probed against group */
	w.per_sec[GC_AB_GROUP] = 4000;
	w.per_sec[GC_AB_DIRECT] = 1600;
	ab_run_while_same(&ps, &pc, &now, &w);
	cr_assert_not(gc_policy_bypass(&ps, &pc, now));
	cr_assert_eq(ps.ps_ab_phase, GC_AB_PROBE, "group is probed");
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_PROBE, "a switch to group is confirmed");
	cr_expect(gc_policy_bypass(&ps, &pc, now), "by direct once more");
	ab_step(&ps, &pc, &now, &w);
	cr_expect_eq(ps.ps_ab_phase, GC_AB_HOLD);
	cr_expect_not(gc_policy_bypass(&ps, &pc, now), "group held again");
	cr_expect_eq(ps.ps_ab_switches, sw + 2, "two switches");
}

/* Only adaptive runs the controller; only none and a direct verdict bypass. */
Test(ab, other_policies_do_not_run_epochs)
{
	static const enum gc_policy_kind kinds[] = { GC_POL_FIXED, GC_POL_JBD2,
						     GC_POL_SIBLINGS };
	struct gc_policy_cfg ad = cfg(GC_POL_ADAPTIVE), none = cfg(GC_POL_NONE);
	struct world w = { { 1600, 8000 }, { 1 * MS, 1 * MS }, 1 * MS };
	struct gc_policy_state ps;
	uint64_t now = T0;

	/* a state whose controller holds direct */
	gc_policy_init(&ps);
	ab_open(&ps, &ad, now);
	ab_step(&ps, &ad, &now, &w);
	ab_step(&ps, &ad, &now, &w);
	cr_assert(gc_policy_bypass(&ps, &ad, now));
	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		struct gc_policy_cfg pc = cfg(kinds[i]);

		cr_expect_not(gc_policy_bypass(&ps, &pc, now), "%s never bypasses",
			      gc_policy_name(kinds[i]));
		cr_expect_not(gc_policy_epoch_due(&ps, &pc, now + 10 * SEC));
	}
	gc_policy_init(&ps);
	for (size_t i = 0; i < ARRAY_LEN(kinds); i++) {
		struct gc_policy_cfg pc = cfg(kinds[i]);

		cr_expect_not(gc_policy_epoch_due(&ps, &pc, now), "%s: no first epoch",
			      gc_policy_name(kinds[i]));
		cr_expect_not(gc_policy_bypass(&ps, &pc, now));
	}
	cr_expect(gc_policy_bypass(&ps, &none, now));
}

/* LIBGC_PROBE=0: adaptive keeps its waiting rules but never probes direct
 * calls, so it never bypasses. */
Test(ab, probe_off_never_bypasses)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	pc.pc_probe = false;
	gc_policy_init(&ps);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, T0), "no first epoch");
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, T0));
	for (int i = 0; i < 100; i++)
		gc_policy_account(&ps, 1, T0 + (uint64_t)i * MS, T0 + (uint64_t)i * MS + 1);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, T0 + 10 * SEC));
	cr_expect_not(gc_policy_bypass(&ps, &pc, T0 + 10 * SEC));
}

/* ---- the device decides ------------------------------------------------ */

/* A flush the observer (or /proc/diskstats) measured under 1 ms: direct
 * calls at once, and no epoch is ever opened to probe grouping. */
Test(device, fast_flush_means_direct_without_probes)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	cr_expect(gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t), "verdict changed");
	for (int i = 0; i < 30; i++, t += 10 * MS) {
		if (gc_policy_device_claim(&ps, t))
			gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t);
		cr_expect(gc_policy_bypass(&ps, &pc, t), "direct at %d", i);
		cr_expect_not(gc_policy_epoch_due(&ps, &pc, t), "a probe epoch at %d", i);
		gc_policy_account(&ps, 1 + i % 4, t, t + 40 * US);
	}
	cr_expect_eq(ps.ps_ab_epoch_start, 0, "the controller never started");
}

/* A flush of 1 ms or more with two or more sync threads: grouped from the
 * very first commit, which waits about one flush for the other threads. */
Test(device, slow_flush_groups_from_the_first_commit)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_DISKSTATS, t);
	cr_expect_not(gc_policy_bypass(&ps, &pc, t));
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, t), "no direct epoch first");
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 2, t);
	cr_assert_eq(ps.ps_commit_samples, 0);
	expect_decision("first commit", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
			4 * MS, 2);
	/* a lone writer still never waits */
	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
	gc_policy_arrive(&ps, &pc, 1, t);
	expect_decision("lone", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_LONE, t, 0, 0);
}

/* Once measured, the commit latency sizes the wait; the device's figure
 * only stands in before the first commit. */
Test(device, measured_commits_size_the_wait)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
	commit(&ps, &pc, t, t, 6 * MS, 2, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 2, t);
	expect_decision("measured", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
			6 * MS, 2);
}

/* Stale (no refresh for a second) or unknown: the self-measuring
 * controller decides, starting afresh with its first (direct) epoch. */
Test(device, stale_or_unknown_falls_back_to_the_controller)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	ab_open(&ps, &pc, t);
	cr_expect_neq(ps.ps_ab_epoch_start, 0);
	gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t);
	cr_expect_eq(ps.ps_ab_epoch_start, 0, "the device idles the controller");
	t += GC_DEVICE_FRESH_NS;
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0, "stale after a second");
	cr_expect(gc_policy_epoch_due(&ps, &pc, t), "a first epoch opens");
	ab_open(&ps, &pc, t);
	cr_expect_eq(ps.ps_ab_epoch_start, t);
	cr_expect(gc_policy_bypass(&ps, &pc, t), "the first epoch is direct");
	/* unknown: no source at all */
	cr_expect(gc_policy_device(&ps, 0, GC_DEV_NONE, t) == false, "was none, is none");
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
	cr_expect_eq(ps.ps_ab_epoch_start, t, "an unknown device leaves the controller be");
	/* a stamp in the future is not fresh */
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t + SEC);
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
	/* a source out of range counts as none */
	gc_policy_device(&ps, 4 * MS, 77, t);
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
}

Test(device, refresh_is_claimed_once_per_interval)
{
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	cr_expect(gc_policy_device_claim(&ps, t));
	cr_expect_not(gc_policy_device_claim(&ps, t), "claimed already");
	cr_expect_not(gc_policy_device_claim(&ps, t + GC_DEVICE_REFRESH_NS - 1));
	cr_expect(gc_policy_device_claim(&ps, t + GC_DEVICE_REFRESH_NS));
}

Test(device, verdict_changes_are_reported)
{
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	cr_expect(gc_policy_device(&ps, 50 * US, GC_DEV_OBSERVER, t), "none -> direct");
	cr_expect_not(gc_policy_device(&ps, 70 * US, GC_DEV_OBSERVER, t + MS), "direct -> direct");
	cr_expect(gc_policy_device(&ps, 1 * MS, GC_DEV_OBSERVER, t + 2 * MS), "direct -> grouped");
	cr_expect_not(gc_policy_device(&ps, 9 * MS, GC_DEV_DISKSTATS, t + 3 * MS));
	cr_expect(gc_policy_device(&ps, 0, GC_DEV_NONE, t + 4 * MS), "grouped -> none");
}

/* Many threads that sync one at a time (PostgreSQL's WAL flush under its
 * own lock): each transaction times out with one handle. After a few, the
 * wait stops; once transactions carry several handles again, it returns. */
Test(device, serialized_writers_stop_waiting_and_batches_bring_it_back)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;
	int k;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
	for (int32_t tid = 1; tid <= 8; tid++)
		gc_policy_arrive(&ps, &pc, tid, t);
	expect_decision("first", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t, 4 * MS, 8);
	for (k = 0; k < 6; k++) {
		commit(&ps, &pc, t, t + 4 * MS, 4 * MS, 1, GC_CLOSE_TIMEOUT);
		t += 8 * MS;
		for (int32_t tid = 1; tid <= 8; tid++)
			gc_policy_arrive(&ps, &pc, tid, t);
	}
	expect_decision("serialized", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NOWAIT, t, 0, 0);
	/* threads overlap again: commits carry six handles */
	for (k = 0; k < 4; k++) {
		commit(&ps, &pc, t, t, 4 * MS, 6, GC_CLOSE_NOWAIT);
		t += 4 * MS;
	}
	for (int32_t tid = 1; tid <= 8; tid++)
		gc_policy_arrive(&ps, &pc, tid, t);
	expect_decision("overlapping again", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
			4 * MS, 8);
}

static bool odd_gone(int32_t tid)
{
	return tid % 2;
}

/* Threads that ended are forgotten: nobody waits for them. */
Test(adaptive, ended_threads_are_forgotten)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	for (int32_t tid = 1; tid <= 8; tid++)
		gc_policy_arrive(&ps, &pc, tid, T0);
	cr_assert_eq(gc_policy_active(&ps, T0), 8);
	gc_policy_forget(&ps, odd_gone);
	cr_expect_eq(gc_policy_active(&ps, T0), 4);
	for (uint32_t i = 0; i < ps.ps_recent_n; i++)
		cr_expect_eq(ps.ps_recent[i].r_tid % 2, 0, "tid %d kept", ps.ps_recent[i].r_tid);
	/* a count out of range (scribbled segment) stays inside the array */
	ps.ps_recent_n = 1000;
	gc_policy_forget(&ps, odd_gone);
	cr_expect_leq(ps.ps_recent_n, GC_RECENT_MAX);
}

/* Other policies and LIBGC_PROBE=0 ignore the device. */
Test(device, only_adaptive_with_probing_listens)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE), fixed = cfg(GC_POL_FIXED);
	struct gc_policy_state ps;

	pc.pc_probe = false;
	gc_policy_init(&ps);
	gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, T0);
	cr_expect_not(gc_policy_bypass(&ps, &pc, T0), "probe off: always grouped");
	cr_expect_not(gc_policy_bypass(&ps, &fixed, T0));
}

/* ---- jbd2 ---------------------------------------------------------------- */

struct jbd2_case {
	char name[48];
	uint32_t nsamples;
	uint64_t samples[3];	/* commit latencies, oldest first */
	uint64_t min_ns, max_ns;
	bool new_writer;
	uint64_t at;
	enum gc_close_reason close;
	uint64_t wait;
};

ParameterizedTestParameters(jbd2, decisions)
{
	static struct jbd2_case cases[] = {
		{ "same pid", 1, { 4 * MS }, 0, 15 * MS, false, 0, GC_CLOSE_NOWAIT, 0 },
		{ "new writer waits the average", 1, { 4 * MS }, 0, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 4 * MS },
		{ "first sample as is", 1, { 12 * MS }, 0, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 12 * MS },
		{ "(new + 3 avg) / 4", 2, { 4 * MS, 8 * MS }, 0, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 5 * MS },
		{ "three samples", 3, { 4 * MS, 8 * MS, 1 * MS }, 0, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 4 * MS },
		{ "clamped to max", 1, { 20 * MS }, 0, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 15 * MS },
		{ "clamped to min", 1, { 1 * MS }, 2 * MS, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 2 * MS },
		{ "no sample, min 3ms", 0, { 0 }, 3 * MS, 15 * MS, true, 0,
		  GC_CLOSE_NONE, 3 * MS },
		{ "max_batch_time 0 disables", 1, { 4 * MS }, 0, 0, true, 0, GC_CLOSE_NOWAIT, 0 },
		{ "1ns before the average", 1, { 4 * MS }, 0, 15 * MS, true, 4 * MS - 1,
		  GC_CLOSE_NONE, 4 * MS },
		{ "older than the average", 1, { 4 * MS }, 0, 15 * MS, true, 5 * MS,
		  GC_CLOSE_TIMEOUT, 0 },
		{ "same pid, old transaction", 1, { 4 * MS }, 0, 15 * MS, false, 1 * MS,
		  GC_CLOSE_NOWAIT, 0 },
	};

	return cr_make_param_array(struct jbd2_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct jbd2_case *c, jbd2, decisions)
{
	struct gc_policy_cfg pc = cfg(GC_POL_JBD2);
	struct gc_policy_state ps;
	uint64_t t = T0 - 1 * SEC;

	gc_policy_init(&ps);
	pc.pc_min_wait_ns = c->min_ns;
	pc.pc_max_wait_ns = c->max_ns;
	for (uint32_t i = 0; i < c->nsamples; i++, t += 50 * MS)
		commit(&ps, &pc, t, t + 1 * MS, c->samples[i], 1, GC_CLOSE_NOWAIT);
	/* jbd2 does not care how many threads sync: a crowd changes nothing */
	for (int32_t tid = 1; tid <= 8; tid++)
		gc_policy_arrive(&ps, &pc, tid, T0);
	expect_decision(c->name, decide(&ps, &pc, 1, T0, T0 + c->at, c->new_writer),
			c->close, T0, c->wait, 0);
}

/* ---- siblings ------------------------------------------------------------ */

struct siblings_case {
	char name[48];
	uint32_t siblings;	/* commit_siblings */
	uint64_t wait_ns;	/* commit_delay */
	uint32_t others;	/* other recent sync threads */
	uint32_t handles;
	uint64_t at;
	enum gc_close_reason close;
};

ParameterizedTestParameters(siblings, decisions)
{
	static struct siblings_case cases[] = {
		{ "5 needed, 5 others", 5, 1 * MS, 5, 1, 0, GC_CLOSE_NONE },
		{ "5 needed, 4 others", 5, 1 * MS, 4, 1, 0, GC_CLOSE_NOWAIT },
		{ "5 needed, 10 others", 5, 1 * MS, 10, 1, 0, GC_CLOSE_NONE },
		{ "1 needed, lone", 1, 1 * MS, 0, 1, 0, GC_CLOSE_NOWAIT },
		{ "1 needed, 1 other", 1, 1 * MS, 1, 1, 0, GC_CLOSE_NONE },
		{ "0 needed: always", 0, 1 * MS, 0, 1, 0, GC_CLOSE_NONE },
		{ "delay 0", 5, 0, 10, 1, 0, GC_CLOSE_NOWAIT },
		{ "joined handles count", 2, 1 * MS, 0, 3, 0, GC_CLOSE_NONE },
		{ "joined handles, too few", 3, 1 * MS, 0, 3, 0, GC_CLOSE_NOWAIT },
		{ "delay over", 5, 1 * MS, 5, 4, 1 * MS, GC_CLOSE_TIMEOUT },
		{ "1ns before the delay ends", 5, 1 * MS, 5, 4, 1 * MS - 1, GC_CLOSE_NONE },
	};

	return cr_make_param_array(struct siblings_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct siblings_case *c, siblings, decisions)
{
	struct gc_policy_cfg pc = cfg(GC_POL_SIBLINGS);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	pc.pc_siblings = c->siblings;
	pc.pc_wait_ns = c->wait_ns;
	for (uint32_t i = 0; i < c->others; i++)
		gc_policy_arrive(&ps, &pc, 2000 + (int32_t)i, T0);
	gc_policy_arrive(&ps, &pc, 1000, T0);
	/* siblings waits the full delay: no count rule */
	expect_decision(c->name, decide(&ps, &pc, c->handles, T0, T0 + c->at, true),
			c->close, T0, c->wait_ns, 0);
}

/* Siblings are recent sync threads: those outside the window do not count. */
Test(siblings, stale_threads_are_not_siblings)
{
	struct gc_policy_cfg pc = cfg(GC_POL_SIBLINGS);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	for (int32_t tid = 1; tid <= 6; tid++)
		gc_policy_arrive(&ps, &pc, tid, T0 - 2 * MS);	/* window is 1 ms */
	gc_policy_arrive(&ps, &pc, 100, T0);
	expect_decision("stale", decide(&ps, &pc, 1, T0, T0, true), GC_CLOSE_NOWAIT, T0,
			0, 0);
	for (int32_t tid = 1; tid <= 5; tid++)
		gc_policy_arrive(&ps, &pc, tid, T0 + 10 * US);
	expect_decision("fresh", decide(&ps, &pc, 1, T0, T0 + 10 * US, true),
			GC_CLOSE_NONE, T0, pc.pc_wait_ns, 0);
}

/* ---- fixed and none ------------------------------------------------------ */

struct fixed_case {
	char name[48];
	uint64_t wait_ns;
	uint32_t threads;
	uint64_t at;
	enum gc_close_reason close;
};

ParameterizedTestParameters(fixed, decisions)
{
	static struct fixed_case cases[] = {
		{ "waits", 2 * MS, 4, 0, GC_CLOSE_NONE },
		{ "even a lone writer", 2 * MS, 1, 0, GC_CLOSE_NONE },
		{ "1ns before", 2 * MS, 4, 2 * MS - 1, GC_CLOSE_NONE },
		{ "over", 2 * MS, 4, 2 * MS, GC_CLOSE_TIMEOUT },
		{ "wait 0", 0, 4, 0, GC_CLOSE_NOWAIT },
	};

	return cr_make_param_array(struct fixed_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct fixed_case *c, fixed, decisions)
{
	struct gc_policy_cfg pc = cfg(GC_POL_FIXED);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	pc.pc_wait_ns = c->wait_ns;
	/* a measured fast device changes nothing for fixed */
	commit(&ps, &pc, T0 - SEC, T0 - SEC, 10 * US, 1, GC_CLOSE_TIMEOUT);
	for (uint32_t i = 0; i < c->threads; i++)
		gc_policy_arrive(&ps, &pc, 1 + (int32_t)i, T0);
	expect_decision(c->name, decide(&ps, &pc, 1, T0, T0 + c->at, true), c->close, T0,
			c->wait_ns, 0);
}

Test(none, always_direct)
{
	struct gc_policy_cfg pc = cfg(GC_POL_NONE);
	struct gc_policy_state ps;
	struct gc_decision d;

	gc_policy_init(&ps);
	for (int32_t tid = 1; tid <= 4; tid++)
		gc_policy_arrive(&ps, &pc, tid, T0);
	commit(&ps, &pc, T0 - SEC, T0 - SEC, 4 * MS, 4, GC_CLOSE_COUNT);
	cr_expect(gc_policy_bypass(&ps, &pc, T0));
	cr_expect(gc_policy_bypass(&ps, &pc, T0 + 10 * SEC));
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, T0));
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, T0));
	cr_expect(gc_policy_bypass(&ps, &pc, T0), "epoch_end must not undo none");
	d = decide(&ps, &pc, 2, T0, T0, true);
	cr_expect_eq(d.d_close, GC_CLOSE_NOWAIT, "a transaction under none closes at once");
}

/* ---- caps and zero waits -------------------------------------------------- */

/* policy.h: pc_max_wait_ns is the "cap on any wait". */
struct cap_case {
	char name[32];
	enum gc_policy_kind kind;
};

ParameterizedTestParameters(caps, max_wait_caps_every_policy)
{
	static struct cap_case cases[] = {
		{ "adaptive", GC_POL_ADAPTIVE }, { "jbd2", GC_POL_JBD2 },
		{ "fixed", GC_POL_FIXED },	 { "siblings", GC_POL_SIBLINGS },
	};

	return cr_make_param_array(struct cap_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct cap_case *c, caps, max_wait_caps_every_policy)
{
	struct gc_policy_cfg pc = cfg(c->kind);
	struct gc_policy_state ps;
	struct gc_decision d;

	gc_policy_init(&ps);
	pc.pc_max_wait_ns = 3 * MS;
	pc.pc_wait_ns = 20 * MS;	/* fixed, siblings */
	pc.pc_siblings = 1;
	commit(&ps, &pc, T0 - SEC, T0 - SEC, 20 * MS, 2, GC_CLOSE_COUNT); /* adaptive, jbd2 */
	gc_policy_arrive(&ps, &pc, 1, T0 - 10 * US);
	gc_policy_arrive(&ps, &pc, 2, T0);
	d = decide(&ps, &pc, 1, T0, T0, true);
	cr_assert_eq(d.d_close, GC_CLOSE_NONE, "%s: should wait", c->name);
	cr_expect_eq(d.d_deadline_ns, T0 + 3 * MS, "%s waits %llu us, max_wait is 3000 us",
		     c->name, (unsigned long long)((d.d_deadline_ns - T0) / US));
}

/* A policy that computes a zero wait does not wait: that is NOWAIT ("policy
 * does not wait here ... no data yet"), not a TIMEOUT, which would count as
 * a timed-out commit and make the adaptive rule forget threads. */
struct zero_case {
	char name[48];
	enum gc_policy_kind kind;
	bool sample;		/* a commit was measured */
	uint32_t pct;
	uint64_t max_ns;
};

ParameterizedTestParameters(caps, zero_wait_is_nowait)
{
	static struct zero_case cases[] = {
		{ "jbd2, no sample, min 0", GC_POL_JBD2, false, 100, 15 * MS },
		{ "adaptive, pct 0", GC_POL_ADAPTIVE, true, 0, 15 * MS },
		{ "adaptive, max wait 0", GC_POL_ADAPTIVE, true, 100, 0 },
	};

	return cr_make_param_array(struct zero_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct zero_case *c, caps, zero_wait_is_nowait)
{
	struct gc_policy_cfg pc = cfg(c->kind);
	struct gc_policy_state ps;
	struct gc_decision d;

	gc_policy_init(&ps);
	pc.pc_wait_pct = c->pct;
	pc.pc_max_wait_ns = c->max_ns;
	if (c->sample)
		commit(&ps, &pc, T0 - SEC, T0 - SEC, 4 * MS, 2, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, T0 - 10 * US);
	gc_policy_arrive(&ps, &pc, 2, T0);
	d = decide(&ps, &pc, 1, T0, T0, true);
	cr_expect_eq(d.d_close, GC_CLOSE_NOWAIT, "%s: closed as %s", c->name,
		     gc_close_reason_name(d.d_close));
}

/* ---- wait granularity ------------------------------------------------------ */

Test(granularity, overshoot_ewma)
{
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	cr_expect_eq(ps.ps_gran_ns, 50 * US, "default: Linux timer slack");
	gc_policy_wait_overshoot(&ps, T0, T0 + 200 * US);
	cr_expect_eq(ps.ps_gran_ns, 200 * US, "first sample as is");
	gc_policy_wait_overshoot(&ps, T0, T0 + 100 * US);
	cr_expect_eq(ps.ps_gran_ns, 175 * US, "(100 + 3*200) / 4");
	gc_policy_wait_overshoot(&ps, T0, T0 - 5 * US);
	cr_expect_eq(ps.ps_gran_ns, 131250, "an early wake counts as 0 overshoot");
	cr_expect_eq(ps.ps_gran_samples, 3);
}

/* The measured granularity moves the fast-device line. */
Test(granularity, decides_fast)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	commit(&ps, &pc, T0 - SEC, T0 - SEC, 120 * US, 2, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, T0 - 10 * US);
	gc_policy_arrive(&ps, &pc, 2, T0);
	expect_decision("default 50us", decide(&ps, &pc, 1, T0, T0, true), GC_CLOSE_NONE,
			T0, 120 * US, 2);
	gc_policy_wait_overshoot(&ps, T0, T0 + 300 * US);
	expect_decision("coarse 300us", decide(&ps, &pc, 1, T0, T0, true), GC_CLOSE_FAST,
			T0, 0, 0);
	for (int i = 0; i < 40; i++)
		gc_policy_wait_overshoot(&ps, T0, T0 + 2 * US);
	expect_decision("fine again", decide(&ps, &pc, 1, T0, T0, true), GC_CLOSE_NONE,
			T0, 120 * US, 2);
}

/* ---- names ----------------------------------------------------------------- */

Test(names, policies_and_reasons)
{
	cr_expect_str_eq(gc_policy_name(GC_POL_ADAPTIVE), "adaptive");
	cr_expect_str_eq(gc_policy_name(GC_POL_NONE), "none");
	cr_expect_str_eq(gc_policy_name(GC_POL_FIXED), "fixed");
	cr_expect_str_eq(gc_policy_name(GC_POL_JBD2), "jbd2");
	cr_expect_str_eq(gc_policy_name(GC_POL_SIBLINGS), "siblings");
	cr_expect_str_eq(gc_policy_name((enum gc_policy_kind)99), "?");
	cr_expect_str_eq(gc_close_reason_name(GC_CLOSE_LONE), "lone");
	cr_expect_str_eq(gc_close_reason_name(GC_CLOSE_TIMEOUT), "timeout");
	cr_expect_str_eq(gc_close_reason_name((enum gc_close_reason)99), "?");
}
