// SPDX-License-Identifier: LGPL-2.1-or-later
/* Commit policies driven by a fake clock: the adaptive rules (lone writer,
 * fast device, count or deadline, drop-outs, activity window), the
 * library's own timing of the device, jbd2, siblings, fixed, none, and granularity. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy/policy.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

static struct gc_policy_cfg cfg(enum gc_policy_kind k)
{
	struct gc_policy_cfg pc;

	gc_policy_cfg_defaults(&pc);
	pc.pc_kind = k;
	return pc;
}

/* Of each commit's handles, how many were for files with nothing to write. */
static uint32_t oc_clean;

/* Records a finished commit whose real calls took @commit_ns after close. */
static void commit(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		   uint64_t start, uint64_t close, uint64_t commit_ns,
		   uint32_t handles, enum gc_close_reason why)
{
	struct gc_commit_sample cs = {
		.cs_handles = handles, .cs_clean = oc_clean, .cs_inodes = handles, .cs_close = why,
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
		cr_expect(ps.ps_recent[i].r_tid != 1 || ps.ps_recent[i].r_out,
			  "thread 1 should be out of the count");
}

/* Rounds of 10 ms commits: threads 1 and 3 sync in every one (in step),
 * thread 2 in every third (it pauses 20 ms between its syncs). Leaves the
 * clock at the end of the last commit. */
static uint64_t two_fast_one_slow(struct gc_policy_state *ps, const struct gc_policy_cfg *pc)
{
	uint64_t t = T0;

	for (int k = 0; k < 9; k++) {
		gc_policy_arrive(ps, pc, 1, t);
		gc_policy_arrive(ps, pc, 3, t + 50 * US);
		if (k % 3 == 0)
			gc_policy_arrive(ps, pc, 2, t + 100 * US);
		commit(ps, pc, t, t + 200 * US, 10 * MS, k % 3 == 0 ? 3 : 2, GC_CLOSE_COUNT);
		t += 10 * MS + 200 * US;
	}
	return t;
}

/* A thread that syncs every third commit of the others is not waited for:
 * it would not come within the wait, and every transaction of the others
 * would pay the whole wait for nothing (the code before waited for 3 with
 * both frequent threads in). Where it leads, it waits for those that sync
 * in every commit: they come back as soon as theirs ends. */
Test(adaptive, a_thread_that_syncs_every_few_commits_is_not_waited_for)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct gc_txn_view tv = { .tv_handles = 1, .tv_leader_new_writer = true };
	uint64_t t;

	gc_policy_init(&ps);
	t = two_fast_one_slow(&ps, &pc);
	cr_assert_eq(gc_policy_active(&ps, t), 3, "all three threads are recent");
	gc_policy_arrive(&ps, &pc, 1, t);
	tv.tv_start_ns = t;
	tv.tv_leader = 1;
	expect_decision("a frequent thread leads", gc_policy_decide(&ps, &pc, &tv, t),
			GC_CLOSE_NONE, t, 10 * MS, 2);
	gc_policy_arrive(&ps, &pc, 3, t + 100 * US);
	tv.tv_handles = 2;
	expect_decision("both frequent threads in",
			gc_policy_decide(&ps, &pc, &tv, t + 100 * US), GC_CLOSE_COUNT, t, 0, 0);
	/* the pausing thread arrives while that commit runs and leads the next */
	gc_policy_arrive(&ps, &pc, 2, t + 5 * MS);
	tv.tv_handles = 1;
	tv.tv_start_ns = t + 5 * MS;
	tv.tv_free_ns = t + 10 * MS;
	tv.tv_leader = 2;
	expect_decision("the pausing thread leads", gc_policy_decide(&ps, &pc, &tv, t + 10 * MS),
			GC_CLOSE_NONE, t + 10 * MS, 10 * MS, 3);
}

/* Threads in step sync once a commit, and threads that all pause alike
 * (6 threads, two of them in each commit, each in every third)
 * are all waited for: the rule compares a thread with the median thread,
 * not with a fixed number of commits. */
Test(adaptive, threads_that_sync_alike_are_all_waited_for)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	int every[] = { 1, 3 };

	for (unsigned int c = 0; c < ARRAY_LEN(every); c++) {
		uint64_t t = T0;

		gc_policy_init(&ps);
		for (int k = 0; k < 18; k++) {
			for (int32_t tid = 1; tid <= 6; tid++)
				if (every[c] == 1 || tid % 3 == k % 3)
					gc_policy_arrive(&ps, &pc, tid,
							 t + (uint64_t)tid * 50 * US);
			commit(&ps, &pc, t, t + 250 * US, 10 * MS, every[c] == 1 ? 6 : 2,
			       GC_CLOSE_COUNT);
			t += 10 * MS + 300 * US;
		}
		gc_policy_arrive(&ps, &pc, 1, t);
		cr_expect_eq(gc_policy_expected(&ps, t, 1), 6,
			     "in every %d commits: all 6 expected", every[c]);
		expect_decision("alike", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
				10 * MS, 6);
	}
}

/* A thread that dropped out (a wait for it timed out) keeps its pace: back,
 * it is still one that syncs every few commits, not a new thread waited for
 * until it drops out again. */
Test(adaptive, a_thread_back_from_a_drop_out_keeps_its_pace)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t;

	gc_policy_init(&ps);
	t = two_fast_one_slow(&ps, &pc);
	/* a transaction of threads 1 and 3 waited for 2 and timed out */
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 3, t + 50 * US);
	commit(&ps, &pc, t, t + 10 * MS, 10 * MS, 2, GC_CLOSE_TIMEOUT);
	cr_expect_eq(gc_policy_active(&ps, t + 20 * MS), 2, "thread 2 is out");
	t += 20 * MS;
	gc_policy_arrive(&ps, &pc, 2, t);
	gc_policy_arrive(&ps, &pc, 1, t + 100 * US);
	cr_expect_eq(gc_policy_active(&ps, t + 100 * US), 3, "back in the window");
	cr_expect_eq(gc_policy_expected(&ps, t + 100 * US, 1), 2,
		     "but not waited for");
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

/* The activity window is a stretch: 8 commit latencies, at least 25 ms. */
struct window_case {
	uint64_t commit_ns;	/* 0: no sample */
	uint64_t window_ns;
};

ParameterizedTestParameters(adaptive, activity_window)
{
	static struct window_case cases[] = {
		{ 0, 25 * MS },		{ 50 * US, 25 * MS },	{ 3 * MS, 25 * MS },
		{ 4 * MS, 32 * MS },	{ 100 * MS, 800 * MS }, { 500 * MS, 4 * SEC },
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

/* ---- the library's own timing (no device source) -------------------------- */

/* policy.c's numbers: an epoch lasts 25 ms (the shortest stretch); the
 * outcome check's holds are 8 to 64 stretches. */
#define EPOCH (25 * MS)
#define HOLD_MIN 8
#define HOLD_MAX 64
/* direct calls as measured: the 4 ms slow disk (append + fsync, two
 * flushes; 18 ms at the start of 16 threads), and this VM's disk */
#define CALL_SLOW (9 * MS)
#define CALL_FAST (280 * US)

static uint32_t mode_now(const struct gc_policy_state *ps,
			 const struct gc_policy_cfg *pc, uint64_t now)
{
	return gc_policy_bypass(ps, pc, now) ? GC_FB_DIRECT : GC_FB_GROUP;
}

/* Opens the first epoch: direct calls (do no harm before measuring). */
static void fb_open(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		    uint64_t now)
{
	cr_assert(gc_policy_epoch_due(ps, pc, now), "first request opens an epoch");
	cr_assert_not(gc_policy_epoch_end(ps, pc, now), "opening is not a change");
	cr_assert_not(gc_policy_epoch_due(ps, pc, now));
	cr_assert_eq(mode_now(ps, pc, now), GC_FB_DIRECT, "the first epoch is direct");
	cr_assert_eq(ps->ps_fb_epoch_start, now);
}

/* Threads 1..@threads each make back-to-back direct calls of @call_ns
 * from @from on (thread k starting k us late); those that end by @until
 * are reported, as the journal reports a timed call: its shortest and
 * its latency. Returns how many. */
static int serve(struct gc_policy_state *ps, int threads, uint64_t call_ns, uint64_t from,
		 uint64_t until)
{
	int n = 0;

	for (int k = 1; k <= threads; k++)
		for (uint64_t t = from + (uint64_t)k * US; t + call_ns <= until; t += call_ns, n++) {
			gc_policy_direct_done(ps, k, t, t + call_ns);
			gc_policy_latency(ps, t, t + call_ns);
		}
	return n;
}

/* Runs the current epoch to its end: direct calls of @call_ns by @threads
 * while the domain is on direct calls (grouped, none are made). Checks
 * that it is not due a nanosecond early and due on time, whatever was
 * served; returns what gc_policy_epoch_end() returned. */
static bool fb_step(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		    uint64_t *now, int threads, uint64_t call_ns)
{
	uint64_t start = ps->ps_fb_epoch_start, len = EPOCH;

	cr_assert_eq(start, *now, "epochs follow each other");
	if (mode_now(ps, pc, *now) == GC_FB_DIRECT)
		serve(ps, threads, call_ns, start, start + len);
	cr_assert_not(gc_policy_epoch_due(ps, pc, start + len - 1), "epoch ends early");
	cr_assert_not(gc_policy_epoch_end(ps, pc, start + len - 1), "epoch_end re-checks");
	*now = start + len;
	cr_assert(gc_policy_epoch_due(ps, pc, *now), "epoch of %llu ns not due at its end",
		  (unsigned long long)len);
	return gc_policy_epoch_end(ps, pc, *now);
}

/* The current epoch lasts @len: not due a nanosecond before its end, due
 * at it. */
static bool epoch_lasts(const struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			uint64_t len)
{
	uint64_t start = ps->ps_fb_epoch_start;

	return start && !gc_policy_epoch_due(ps, pc, start + len - 1) &&
	       gc_policy_epoch_due(ps, pc, start + len);
}

Test(fallback, first_call_opens_a_direct_epoch)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, T0);
	cr_expect(epoch_lasts(&ps, &pc, EPOCH), "an epoch lasts 25 ms");
}

/* Opens own timing and runs direct epochs of @threads making calls of
 * @call_ns until grouped: the second epoch, since a verdict for grouping
 * needs the shortest call of two timed epochs slow. */
static void fb_to_group(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			uint64_t *now, int threads, uint64_t call_ns)
{
	fb_open(ps, pc, *now);
	cr_assert_not(fb_step(ps, pc, now, threads, call_ns), "grouped after one epoch");
	cr_assert(fb_step(ps, pc, now, threads, call_ns), "not grouped after two epochs");
	cr_assert_eq(mode_now(ps, pc, *now), GC_FB_GROUP);
}

/* The verdict at the end of a direct epoch: grouped when several threads
 * made direct calls and even the shortest of this epoch and of the last
 * one that timed calls took 1 ms (rule 0's threshold); direct otherwise. */
struct verdict_case {
	char name[56];
	uint64_t prev_ns;	/* the shortest call of the epoch before (0: none) */
	int threads;		/* threads making calls of call_ns in this one */
	uint64_t call_ns;
	uint64_t shortest_ns;	/* one more call of this length (0: none) */
	uint32_t mode;
};

ParameterizedTestParameters(fallback, verdict)
{
	static struct verdict_case cases[] = {
		{ "slow disk, 2 threads", CALL_SLOW, 2, CALL_SLOW, 0, GC_FB_GROUP },
		{ "slow disk, 16 threads", 4 * MS, 16, 4 * MS, 0, GC_FB_GROUP },
		{ "exactly 1 ms", 1 * MS, 2, 2 * MS, 1 * MS, GC_FB_GROUP },
		{ "just under 1 ms", 2 * MS, 2, 2 * MS, 999 * US, GC_FB_DIRECT },
		{ "the epoch before under 1 ms", 999 * US, 2, CALL_SLOW, 0, GC_FB_DIRECT },
		{ "no epoch before timed a call", 0, 2, CALL_SLOW, 0, GC_FB_DIRECT },
		{ "fast disk, one call shorter than the rest", CALL_FAST, 16, 1600 * US,
		  CALL_FAST, GC_FB_DIRECT },
		{ "fast disk", CALL_FAST, 8, CALL_FAST, 0, GC_FB_DIRECT },
		{ "tmpfs", 2 * US, 8, 2 * US, 0, GC_FB_DIRECT },
		{ "lone thread, slow disk", CALL_SLOW, 1, CALL_SLOW, 0, GC_FB_DIRECT },
		{ "no call ended in the epoch", CALL_SLOW, 0, 0, 0, GC_FB_DIRECT },
	};

	return cr_make_param_array(struct verdict_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct verdict_case *c, fallback, verdict)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;
	bool changed;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	/* the epoch before: one thread (no verdict for grouping on its own) */
	if (c->prev_ns)
		gc_policy_direct_done(&ps, 1, now + US, now + US + c->prev_ns);
	cr_assert_not(fb_step(&ps, &pc, &now, 0, 0));
	if (c->shortest_ns)
		gc_policy_direct_done(&ps, 1, now + US, now + US + c->shortest_ns);
	changed = fb_step(&ps, &pc, &now, c->threads, c->call_ns);
	cr_expect_eq(mode_now(&ps, &pc, now), c->mode, "%s: %s", c->name,
		     c->mode == GC_FB_GROUP ? "not grouped" : "grouped");
	cr_expect_eq(changed, c->mode == GC_FB_GROUP, "%s: change reported", c->name);
}

/* One slow epoch on a fast disk (a moment of someone else's load) does
 * not group: the next epoch's shortest call is fast again. */
Test(fallback, one_slow_epoch_does_not_group)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	for (int k = 0; k < 20; k++) {
		uint64_t call = k % 2 ? 1300 * US : CALL_FAST;

		cr_assert_not(fb_step(&ps, &pc, &now, 16, call), "grouped at epoch %d", k);
		cr_assert_eq(ps.ps_fb_call_ns, call);
	}
}

/* Only the shortest call counts, whatever the order; a clock that ran
 * backwards makes a call of zero length, never a slow one. */
Test(fallback, shortest_call_and_threads_are_noted)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, T0);
	cr_expect_eq(ps.ps_fb_min_ns, UINT64_MAX, "nothing timed yet");
	cr_expect_eq(ps.ps_fb_threads, 0);
	gc_policy_direct_done(&ps, 7, T0, T0 + 5 * MS);
	cr_expect_eq(ps.ps_fb_min_ns, 5 * MS);
	cr_expect_eq(ps.ps_fb_threads, GC_FB_ONE | 7, "one thread");
	gc_policy_direct_done(&ps, 7, T0, T0 + 3 * MS);
	gc_policy_direct_done(&ps, 7, T0, T0 + 4 * MS);
	cr_expect_eq(ps.ps_fb_min_ns, 3 * MS);
	cr_expect_eq(ps.ps_fb_threads, GC_FB_ONE | 7, "still one thread");
	gc_policy_direct_done(&ps, 8, T0 + 2, T0 + 1);
	cr_expect_eq(ps.ps_fb_min_ns, 0);
	cr_expect_eq(ps.ps_fb_threads, GC_FB_MANY, "two threads");
	gc_policy_direct_done(&ps, 9, T0, T0 + 1 * SEC);
	cr_expect_eq(ps.ps_fb_threads, GC_FB_MANY);
}

/* A fast device: direct calls for 10 s of epochs at 16 threads, none
 * grouped, so grouping is never probed (the old controller's grouped
 * probes cost up to 2x on such a disk). */
Test(fallback, fast_device_is_never_grouped)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	while (now < T0 + 10 * SEC) {
		cr_assert_not(fb_step(&ps, &pc, &now, 16, CALL_FAST), "grouped at %llu ms",
			      (unsigned long long)((now - T0) / MS));
		cr_assert(gc_policy_bypass(&ps, &pc, now));
		cr_assert(epoch_lasts(&ps, &pc, EPOCH));
	}
}

/* One thread alone on a slow device is never grouped, however slow its
 * calls; the first epoch in which a second thread syncs groups. */
Test(fallback, lone_thread_is_never_grouped)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	while (now < T0 + 5 * SEC) {
		cr_assert_not(fb_step(&ps, &pc, &now, 1, CALL_SLOW));
		cr_assert(gc_policy_bypass(&ps, &pc, now), "a lone thread grouped");
	}
	cr_expect(fb_step(&ps, &pc, &now, 2, CALL_SLOW),
		  "a second thread groups at once (the calls were slow before)");
	cr_expect_not(gc_policy_bypass(&ps, &pc, now));
}

/* An epoch is the shortest stretch, 25 ms, however long the calls: one
 * that times none says nothing, and the next times them again. */
struct len_case {
	uint64_t call_ns;
	uint64_t len_ns;
};

ParameterizedTestParameters(fallback, epoch_length)
{
	static struct len_case cases[] = {
		{ CALL_FAST, EPOCH },
		{ CALL_SLOW, EPOCH },
		{ 18 * MS, EPOCH },
		{ 40 * MS, EPOCH },
	};

	return cr_make_param_array(struct len_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct len_case *c, fallback, epoch_length)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	gc_policy_direct_done(&ps, 1, now, now + c->call_ns);
	fb_step(&ps, &pc, &now, 0, 0);
	cr_expect_eq(ps.ps_fb_call_ns, c->call_ns);
	cr_expect(epoch_lasts(&ps, &pc, c->len_ns), "call %llu us: epoch not %llu us",
		  (unsigned long long)(c->call_ns / US), (unsigned long long)(c->len_ns / US));
	/* an epoch that timed nothing keeps the length */
	fb_step(&ps, &pc, &now, 0, 0);
	cr_expect(epoch_lasts(&ps, &pc, c->len_ns));
}

/* Read slow, the library's own timing is the device's source: grouped
 * from then on, and it stands with no refresh (no epoch of direct calls
 * re-times it, which would knock threads in step out of it). A refresh
 * that finds no source leaves it; a source that knows the device takes
 * its place. */
Test(fallback, own_timing_is_the_device_source)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_to_group(&ps, &pc, &now, 2, CALL_SLOW);
	cr_expect_eq(ps.ps_device_src, GC_DEV_SELF);
	cr_expect_eq(gc_policy_device_flush(&ps, now), CALL_SLOW, "the shortest call");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, now).v_kind, GC_V_GROUP);
	now += 10 * SEC;
	cr_expect_eq(gc_policy_device_flush(&ps, now), CALL_SLOW, "no refresh, no expiry");
	cr_expect_not(gc_policy_device(&ps, 0, GC_DEV_NONE, now), "no source: it stands");
	cr_expect_eq(gc_policy_device_flush(&ps, now), CALL_SLOW);
	cr_expect_eq(ps.ps_device_src, GC_DEV_SELF);
	cr_expect(gc_policy_device(&ps, 45 * US, GC_DEV_DISKSTATS, now), "diskstats: fast");
	cr_expect(gc_policy_bypass(&ps, &pc, now));
	now += GC_STALE_NS;
	cr_expect_eq(gc_policy_device_flush(&ps, now), 0, "diskstats' reading expires");
}

/* Runs a domain on own timing from *@t to @end, a step a millisecond, 4
 * threads: on direct calls, each step a call answered in @direct_ns;
 * grouped, each step a request answered in @grouped_ns, and every 4 steps
 * a commit of 4 ms of all 4, closed by @why. Returns the time grouped. */
static uint64_t fb_run(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t *t,
		       uint64_t end, uint64_t direct_ns, uint64_t grouped_ns,
		       enum gc_close_reason why)
{
	uint64_t grouped = 0, lat;

	for (int k = 0; *t < end; *t += MS, k++) {
		if (gc_policy_epoch_due(ps, pc, *t))
			gc_policy_epoch_end(ps, pc, *t);
		if (gc_policy_bypass(ps, pc, *t)) {
			lat = direct_ns;
			gc_policy_direct_done(ps, 1 + k % 4, *t - lat, *t);
		} else {
			lat = grouped_ns;
			grouped += MS;
			if (k % 4 == 0)
				commit(ps, pc, *t - lat, *t - 4 * MS, 4 * MS, 4, why);
		}
		gc_policy_latency(ps, *t - lat, *t);
	}
	return grouped;
}

/* Once read slow, grouping whose peers come at once (closed by count) is
 * never probed: over 10 s of 4 threads, no request is sent to direct
 * calls. The controller that decided here before probed each hold with
 * an epoch of them. */
Test(fallback, storms_on_own_timing_are_never_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, grouped;

	pc.pc_device = false;
	gc_policy_init(&ps);
	fb_to_group(&ps, &pc, &t, 4, CALL_SLOW);
	grouped = fb_run(&ps, &pc, &t, t + 10 * SEC, CALL_SLOW, 4 * MS, GC_CLOSE_COUNT);
	cr_expect_eq(grouped, 10 * SEC, "direct calls for %llu ms",
		     (unsigned long long)((10 * SEC - grouped) / MS));
}

/* A thread whose clock reading is older than the epoch's start (it read
 * the clock, then waited for the lock while another thread started the
 * epoch) does not end it; a stamp further ahead than an epoch (scribbles)
 * ends at once, and the next epoch starts from now. */
Test(fallback, epoch_from_the_future)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, now);
	cr_assert_not(fb_step(&ps, &pc, &now, 2, CALL_SLOW));
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, now - 3 * MS), "a stale reading");
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, now - 3 * MS));
	cr_expect_eq(ps.ps_fb_epoch_start, now, "the epoch goes on");
	ps.ps_fb_epoch_start = now + 100 * SEC;
	cr_expect(gc_policy_epoch_due(&ps, &pc, now + MS));
	gc_policy_epoch_end(&ps, &pc, now + MS);
	cr_expect_eq(ps.ps_fb_epoch_start, now + MS);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, now + 2 * MS));
	now += MS;
	cr_expect(fb_step(&ps, &pc, &now, 2, CALL_SLOW), "and groups at the end of the next");
}


/* Threads that pause between syncs on a slow disk, no source for the
 * device (LIBGC_DEVICE=off): once the library's own timing reads the
 * device slow, the outcome check decides as where the device is known.
 * Here grouped requests are answered in 9 ms (their transactions wait for
 * peers and close by timeout) and direct ones in 5 ms: over 10 s the
 * domain spends under a tenth of the time grouped. The controller that
 * decided here before (grouped holds, each ended by one epoch of direct
 * calls) grouped whatever the outcome, 97% of the time. */
Test(fallback, own_timing_hands_over_to_the_outcome_check)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, grouped;

	pc.pc_device = false;
	gc_policy_init(&ps);
	fb_to_group(&ps, &pc, &t, 4, CALL_SLOW);
	grouped = fb_run(&ps, &pc, &t, T0 + 10 * SEC, 5 * MS, 9 * MS, GC_CLOSE_TIMEOUT);
	cr_expect_lt(grouped, 10 * SEC / 10, "grouped %llu ms of 10 s",
		     (unsigned long long)(grouped / MS));
}
/* Own timing reads the device slow from direct calls of 5 ms by 4
 * threads; grouped, their peers then come at once (closed by count, never
 * waiting: grouping that looks as if it paid), yet each request is
 * answered in 6 ms. Grouping starts as a probe against the direct calls
 * that read the device slow (two stretches of 8 commits, estimated by the
 * shortest call until one is timed), and over 10 s the domain spends under a
 * tenth of the time grouped. Before, grouping that looked as if it paid
 * was held for good (threads syncing a file and then their directory,
 * grouped a step apart: 0.86-0.95x bare). */
Test(fallback, own_timing_compares_grouping_with_the_calls_it_timed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, grouped;

	pc.pc_device = false;
	gc_policy_init(&ps);
	fb_to_group(&ps, &pc, &t, 4, 5 * MS);
	cr_expect(ps.ps_oc_probe, "grouping starts as a probe");
	cr_expect_eq(ps.ps_oc_ref_ns, 5 * MS, "against the direct calls of the epoch");
	cr_expect_eq(ps.ps_oc_len, 2 * GC_STRETCH_COMMITS * 5 * MS,
		     "two stretches of 8 commits, the shortest call a commit's estimate: %llu ms",
		     (unsigned long long)(ps.ps_oc_len / MS));
	grouped = fb_run(&ps, &pc, &t, T0 + 10 * SEC, 5 * MS, 6 * MS, GC_CLOSE_COUNT);
	cr_expect_lt(grouped, 10 * SEC / 10, "grouped %llu ms of 10 s",
		     (unsigned long long)(grouped / MS));
}

/* The same storm answered in 4 ms grouped, against direct calls of 9 ms:
 * grouping wins its first probe, and is held from then on (the storms
 * test above: never probed again). */
Test(fallback, own_timing_holds_grouping_that_answers_sooner)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, start, grouped;

	pc.pc_device = false;
	gc_policy_init(&ps);
	fb_to_group(&ps, &pc, &t, 4, CALL_SLOW);
	cr_expect(ps.ps_oc_probe, "grouping starts as a probe");
	start = t;
	grouped = fb_run(&ps, &pc, &t, T0 + 10 * SEC, CALL_SLOW, 4 * MS, GC_CLOSE_COUNT);
	cr_expect_not(ps.ps_oc_probe);
	cr_expect_eq(grouped, t - start, "direct calls for %llu ms",
		     (unsigned long long)((t - start - grouped) / MS));
}

/* A state from a shared segment is checked: the mode and the hold in range. */
Test(fallback, scribbled_state_is_rejected)
{
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	cr_expect(gc_policy_check(&ps));
	ps.ps_oc_mode = 2;
	cr_expect_not(gc_policy_check(&ps), "mode out of range");
	gc_policy_init(&ps);
	ps.ps_oc_hold = 0;
	cr_expect_not(gc_policy_check(&ps), "hold 0");
	ps.ps_oc_hold = HOLD_MAX + 1;
	cr_expect_not(gc_policy_check(&ps), "hold above the cap");
	ps.ps_oc_hold = HOLD_MAX;
	cr_expect(gc_policy_check(&ps));
}

/* Only adaptive times epochs; only none and a direct verdict bypass. */
Test(fallback, other_policies_do_not_run_epochs)
{
	static const enum gc_policy_kind kinds[] = { GC_POL_FIXED, GC_POL_JBD2,
						     GC_POL_SIBLINGS };
	struct gc_policy_cfg ad = cfg(GC_POL_ADAPTIVE), none = cfg(GC_POL_NONE);
	struct gc_policy_state ps;
	uint64_t now = T0;

	/* a state on timed direct calls */
	gc_policy_init(&ps);
	fb_open(&ps, &ad, now);
	fb_step(&ps, &ad, &now, 4, CALL_FAST);
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

/* LIBGC_PROBE=0: adaptive keeps its waiting rules but never times direct
 * calls, so it never bypasses. */
Test(fallback, probe_off_never_bypasses)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;

	pc.pc_probe = false;
	gc_policy_init(&ps);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, T0), "no first epoch");
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, T0));
	for (int i = 0; i < 100; i++)
		gc_policy_direct_done(&ps, 1 + i % 2, T0 + (uint64_t)i * MS,
				      T0 + (uint64_t)i * MS + 1);
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
	}
	cr_expect_eq(ps.ps_fb_epoch_start, 0, "no epoch of own timing started");
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
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "no direct epoch first");
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, t), "a grouped hold opens");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, t + MS));
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

/* Stale (no refresh for a second) or unknown: the library's own timing
 * reads the device, starting afresh with its first (direct) epoch. */
Test(device, stale_or_unknown_falls_back_to_own_timing)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, t);
	cr_expect_neq(ps.ps_fb_epoch_start, 0);
	gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t);
	cr_expect_eq(ps.ps_fb_epoch_start, 0, "the device idles own timing");
	t += GC_STALE_NS;
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0, "stale after a second");
	cr_expect(gc_policy_epoch_due(&ps, &pc, t), "a first epoch opens");
	fb_open(&ps, &pc, t);
	cr_expect_eq(ps.ps_fb_epoch_start, t);
	cr_expect(gc_policy_bypass(&ps, &pc, t), "the first epoch is direct");
	/* unknown: no source at all */
	cr_expect(gc_policy_device(&ps, 0, GC_DEV_NONE, t) == false, "was none, is none");
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
	cr_expect_eq(ps.ps_fb_epoch_start, t, "an unknown device leaves own timing be");
	/* a stamp in the future is not fresh */
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t + SEC);
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
	/* a source out of range counts as none */
	gc_policy_device(&ps, 4 * MS, 77, t);
	cr_expect_eq(gc_policy_device_flush(&ps, t), 0);
}

/* A new domain asks the device only once GC_DEVICE_FIRST_NS old: a
 * process that syncs once, alone, walks neither /sys nor /proc/diskstats.
 * Until then the verdict holds no longer than that. */
Test(device, a_new_domain_asks_once_it_is_a_millisecond_old)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	cr_expect_not(gc_policy_device_claim(&ps, t), "asked at the first request");
	cr_expect_not(gc_policy_device_claim(&ps, t + GC_DEVICE_FIRST_NS - 1), "asked too soon");
	cr_expect_leq(gc_policy_verdict(&ps, &pc, t).v_until_ns, t + GC_DEVICE_FIRST_NS);
	cr_expect(gc_policy_device_claim(&ps, t + GC_DEVICE_FIRST_NS));
	cr_expect_not(gc_policy_device_claim(&ps, t + GC_DEVICE_FIRST_NS), "claimed already");
}

Test(device, refresh_is_claimed_once_per_interval)
{
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
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

/* @n commits of 4 ms, one after the other from *@t, each of @handles closed
 * for @why as soon as it opened; *@t ends past the last. */
static void commits_4ms(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t *t,
			int n, uint32_t handles, enum gc_close_reason why)
{
	for (int k = 0; k < n; k++, *t += 4 * MS)
		commit(ps, pc, *t, *t, 4 * MS, handles, why);
}

/* Many threads that sync one at a time (PostgreSQL's WAL flush under its
 * own lock): each transaction times out with one handle. After a stretch
 * of them (8), the wait stops; once transactions carry several handles
 * again, it returns. */
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
	for (k = 0; k < GC_STRETCH_COMMITS; k++) {
		if (k == GC_STRETCH_COMMITS - 1) {
			for (int32_t tid = 1; tid <= 8; tid++)
				gc_policy_arrive(&ps, &pc, tid, t);
			expect_decision("a stretch not yet over", decide(&ps, &pc, 1, t, t, true),
					GC_CLOSE_NONE, t, 4 * MS, 8);
		}
		commit(&ps, &pc, t, t + 4 * MS, 4 * MS, 1, GC_CLOSE_TIMEOUT);
		t += 8 * MS;
		for (int32_t tid = 1; tid <= 8; tid++)
			gc_policy_arrive(&ps, &pc, tid, t);
	}
	expect_decision("serialized", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NOWAIT, t, 0, 0);
	/* threads overlap again: commits carry six handles */
	commits_4ms(&ps, &pc, &t, 4, 6, GC_CLOSE_NOWAIT);
	for (int32_t tid = 1; tid <= 8; tid++)
		gc_policy_arrive(&ps, &pc, tid, t);
	expect_decision("overlapping again", decide(&ps, &pc, 1, t, t, true), GC_CLOSE_NONE, t,
			4 * MS, 8);
}

/* A domain's first transactions close alone, before its threads were seen:
 * they are no evidence of writers taking turns under a lock. Counted, they
 * made the serial rule send the next transactions off at once, and split
 * two threads that share commits in step. */
Test(device, lone_closes_are_no_evidence_of_writers_taking_turns)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
	commits_4ms(&ps, &pc, &t, 4, 1, GC_CLOSE_LONE);
	commits_4ms(&ps, &pc, &t, 2, 2, GC_CLOSE_COUNT);
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 2, t);
	expect_decision("two threads, on a free domain", decide(&ps, &pc, 1, t, t, true),
			GC_CLOSE_NONE, t, 4 * MS, 2);
}

/* Two threads, each the other's only peer, that alternate: one's request
 * waits behind the other's commit, so each transaction carries one handle,
 * which looks like writers taking turns under a lock. But a transaction that
 * waited behind a commit was opened while another sync was in flight: it
 * waits, from when the domain is free, for the thread whose commit just
 * ended. One opened on a free domain still commits at once. */
Test(device, alternating_writers_queued_behind_a_commit_wait_for_each_other)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct gc_txn_view tv = { .tv_handles = 1, .tv_leader_new_writer = true };
	uint64_t t = T0;
	int k;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 4 * MS, GC_DEV_OBSERVER, t);
	for (k = 0; k < GC_STRETCH_COMMITS; k++) {
		gc_policy_arrive(&ps, &pc, 1 + k % 2, t);
		commit(&ps, &pc, t, t, 4 * MS, 1, GC_CLOSE_NOWAIT);
		t += 4 * MS;
	}
	gc_policy_arrive(&ps, &pc, 1, t);
	gc_policy_arrive(&ps, &pc, 2, t);
	expect_decision("opened on a free domain", decide(&ps, &pc, 1, t, t, true),
			GC_CLOSE_NOWAIT, t, 0, 0);
	/* opened 3 ms ago, behind the commit that ended now */
	tv.tv_start_ns = t - 3 * MS;
	tv.tv_free_ns = t;
	expect_decision("queued behind a commit", gc_policy_decide(&ps, &pc, &tv, t),
			GC_CLOSE_NONE, t, 4 * MS, 2);
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
	cr_expect_eq(gc_policy_forget(&ps, odd_gone), 4, "forgot other than the 4 ended");
	cr_expect_eq(gc_policy_active(&ps, T0), 4);
	cr_expect_eq(gc_policy_forget(&ps, odd_gone), 0, "forgot the living");
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
		gc_policy_arrive(&ps, &pc, tid, T0 - 26 * MS);	/* window is 25 ms */
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

/* ---- hand-back of the fewer kind ------------------------------------------- */

static void dir_commit(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		       uint64_t commit_ns)
{
	struct gc_commit_sample cs = {
		.cs_handles = 8, .cs_inodes = 1, .cs_close = GC_CLOSE_COUNT,
		.cs_start_ns = T0, .cs_close_ns = T0, .cs_end_ns = T0 + commit_ns,
		.cs_dirs_only = true,
	};

	gc_policy_commit_done(ps, pc, &cs);
}

/* Only the adaptive policy hands back, only a mix of both kinds, and only
 * once a directory-only commit was timed and found cheap (under a quarter
 * of a commit); at most one transaction in GC_DEFER_EVERY. */
/* Processes that sync once: a first request goes alone once
 * GC_ONCE_EVIDENCE processes came and fewer than half came back. */
Test(adaptive, a_first_request_goes_alone_where_processes_sync_once)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE), fixed = cfg(GC_POL_FIXED);
	struct gc_policy_state ps;
	int i;

	gc_policy_init(&ps);
	for (i = 1; i < GC_ONCE_EVIDENCE; i++)
		cr_expect(!gc_policy_proc_first(&ps, &pc), "only %d processes seen", i);
	cr_expect(gc_policy_proc_first(&ps, &pc), "%d came, none came back", GC_ONCE_EVIDENCE);
	cr_expect(!gc_policy_proc_first(&ps, &fixed), "the other policies never");
	/* 9 came (the other policy's request counted too) */
	for (i = 0; i < 4; i++)
		gc_policy_proc_back(&ps);
	cr_expect(gc_policy_proc_first(&ps, &pc), "4 of 10 came back");
	gc_policy_proc_back(&ps);
	gc_policy_proc_back(&ps);
	cr_expect(!gc_policy_proc_first(&ps, &pc), "6 of 11 came back");
	cr_expect(!gc_policy_proc_first(&ps, &pc), "6 of 12 came back: half");
	cr_expect(gc_policy_proc_first(&ps, &pc), "6 of 13 came back");

	/* Processes that come back (a server's): every one of them */
	gc_policy_init(&ps);
	for (i = 0; i < 1000; i++) {
		cr_expect(!gc_policy_proc_first(&ps, &pc), "process %d, all came back", i);
		gc_policy_proc_back(&ps);
	}
	/* ... then a spool's agents, which do not: the counts halve at
	 * GC_ONCE_WINDOW, so the old processes stop weighing after a window */
	for (i = 0; i < GC_ONCE_WINDOW && !gc_policy_proc_first(&ps, &pc); i++)
		;
	cr_expect_lt(i, GC_ONCE_WINDOW, "still waiting after %d processes that synced once", i);
	cr_expect_leq(ps.ps_procs_new, GC_ONCE_WINDOW);

	/* nor does a peer's scribble put the counts out of range */
	ps.ps_procs_new = UINT32_MAX;
	ps.ps_procs_back = UINT32_MAX;
	cr_expect(!gc_policy_proc_first(&ps, &pc), "back clamped to the processes that came");
	cr_expect_lt(ps.ps_procs_new, GC_ONCE_WINDOW);
	cr_expect_leq(ps.ps_procs_back, ps.ps_procs_new);
	gc_policy_proc_back(&ps);
	cr_expect_leq(ps.ps_procs_back, ps.ps_procs_new);
}

Test(adaptive, hands_back_the_fewer_kind_while_directory_commits_are_cheap)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE), fixed = cfg(GC_POL_FIXED);
	struct gc_policy_state ps;
	uint64_t seq = 10;

	gc_policy_init(&ps);
	commit(&ps, &pc, T0, T0, 4 * MS, 8, GC_CLOSE_COUNT);
	cr_expect_eq(gc_policy_defer(&ps, &pc, 2, 7, 1), GC_DEFER_NONE,
		     "no directory-only commit timed yet");
	dir_commit(&ps, &pc, 100 * US);
	commit(&ps, &pc, T0, T0, 4 * MS, 8, GC_CLOSE_COUNT);
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq, 8, 0), GC_DEFER_NONE, "one kind only");
	cr_expect_eq(gc_policy_defer(&ps, &fixed, seq, 7, 1), GC_DEFER_NONE, "fixed never");
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq, 7, 1), GC_DEFER_DIRS, "the one directory");
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq + GC_DEFER_EVERY - 1, 1, 7), GC_DEFER_NONE,
		     "too soon after the last");
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq + GC_DEFER_EVERY, 3, 5), GC_DEFER_FILES,
		     "the three files");
	seq += GC_DEFER_EVERY;
	/* a tie: the directories, whatever the transaction's number */
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq + GC_DEFER_EVERY, 4, 4), GC_DEFER_DIRS);
	seq += GC_DEFER_EVERY;
	cr_expect_eq(gc_policy_defer(&ps, &pc, seq + GC_DEFER_EVERY + 1, 1, 1), GC_DEFER_DIRS);
	/* a scribbled last hand-back still to come does not stop it for good */
	ps.ps_defer_seq = UINT64_MAX;
	cr_expect_eq(gc_policy_defer(&ps, &pc, 100, 7, 1), GC_DEFER_DIRS);
	/* directories whose commits cost what the files' do: never */
	for (int i = 0; i < 8; i++)
		dir_commit(&ps, &pc, 4 * MS);
	cr_expect_eq(gc_policy_defer(&ps, &pc, 200, 7, 1), GC_DEFER_NONE,
		     "directory commits of %llu us against %llu us",
		     (unsigned long long)(ps.ps_dir_commit_ns / US),
		     (unsigned long long)(ps.ps_commit_ns / US));
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

/* ---- the direct path's verdict ------------------------------------------ */

/* What requests do until when: the device's verdict until its next
 * refresh is due, own timing's until its epoch ends, grouping for the
 * other policies, direct calls for none; never longer than a second. */
Test(verdict, device_own_timing_and_other_policies)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	struct gc_verdict v;
	uint64_t t = T0;

	gc_policy_init(&ps);
	gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t);
	v = gc_policy_verdict(&ps, &pc, t + 10 * MS);
	cr_expect_eq(v.v_kind, GC_V_DIRECT, "a fast flush: direct, untimed");
	cr_expect_eq(v.v_until_ns, t + GC_DEVICE_REFRESH_NS, "until the next refresh is due");
	v = gc_policy_verdict(&ps, &pc, t + GC_DEVICE_REFRESH_NS);
	cr_expect_eq(v.v_until_ns, t + GC_DEVICE_REFRESH_NS, "due: the next request asks");

	gc_policy_device(&ps, 4 * MS, GC_DEV_DISKSTATS, t);
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "a slow flush: grouped");

	gc_policy_init(&ps);
	gc_policy_device(&ps, 0, GC_DEV_NONE, t);
	v = gc_policy_verdict(&ps, &pc, t);
	cr_expect_eq(v.v_until_ns, t, "no epoch yet: ask now");
	fb_open(&ps, &pc, t);
	v = gc_policy_verdict(&ps, &pc, t + MS);
	cr_expect_eq(v.v_kind, GC_V_TIMED, "own timing's direct epoch: timed calls");
	cr_expect_eq(v.v_until_ns, t + EPOCH, "until the epoch ends");

	pc = cfg(GC_POL_FIXED);
	v = gc_policy_verdict(&ps, &pc, t);
	cr_expect_eq(v.v_kind, GC_V_GROUP);
	cr_expect(v.v_until_ns > t && v.v_until_ns <= t + SEC, "at most a second");
	pc = cfg(GC_POL_NONE);
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_DIRECT);
}

/* Threads seen making direct calls are the ones a transaction waits for
 * when own timing reads the device slow; one seen long ago, or at a time
 * still to come (a peer's scribble), is not. */
Test(verdict, threads_seen_on_direct_calls_are_waited_for)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0;

	gc_policy_init(&ps);
	fb_open(&ps, &pc, t);
	cr_assert_not(fb_step(&ps, &pc, &t, 4, CALL_SLOW));
	/* the activity window is a millisecond while no commit was timed */
	gc_policy_seen(&ps, 11, t - 5 * SEC);
	gc_policy_seen(&ps, 12, t + EPOCH - 100 * US);
	for (int32_t tid = 1; tid <= 4; tid++)
		gc_policy_seen(&ps, tid, t + EPOCH - 200 * US);
	gc_policy_seen(&ps, 13, t + 10 * SEC);
	cr_assert(fb_step(&ps, &pc, &t, 4, CALL_SLOW), "not grouped");
	cr_expect_eq(gc_policy_active(&ps, t), 5, "threads 1-4 and 12 are recent");
}

/* ---- the outcome check (the device says grouping) ---------------------- */

#define OC_COMMIT (4 * MS)
#define OC_STRETCH (GC_STRETCH_COMMITS * OC_COMMIT)

/* @n commits of OC_COMMIT (the device's flush too), closed for @why. */
static void oc_commits(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t t,
		       enum gc_close_reason why, int n)
{
	for (int i = 0; i < n; i++)
		commit(ps, pc, t, t + MS, OC_COMMIT, 8, why);
}

/* How oc_run's grouped transactions close (GC_CLOSE_NONE: it makes none). */
static enum gc_close_reason oc_why = GC_CLOSE_NONE;
/* oc_run's requests take @lat_ns this much longer and shorter, by turns */
static uint64_t oc_spread;

/* Runs the domain until its stretch ends: a request every millisecond
 * taking @lat_ns, +- oc_spread (the device refreshed as the journal does), grouped a
 * commit every OC_COMMIT closed for oc_why, then the end of the stretch.
 * Returns epoch_end's answer; *@t is the end. A hold runs to its end, or to
 * the stretch its watch ends it at (oc_watched counts the stretches
 * watched). */
static unsigned oc_watched;

/* Is the watch, not the hold's end, due at @t? */
static bool oc_watch_due(const struct gc_policy_state *ps, uint64_t t)
{
	return ps->ps_oc_watch && ps->ps_oc_watch <= t && t - ps->ps_oc_start < ps->ps_oc_len;
}

static bool oc_step(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t *t,
		    uint64_t lat_ns, bool *mid)
{
	while (!gc_policy_epoch_due(ps, pc, *t)) {
		if (gc_policy_device_claim(ps, *t))
			gc_policy_device(ps, OC_COMMIT, GC_DEV_OBSERVER, *t);
		uint64_t l = (*t / MS) % 2 ? lat_ns + oc_spread : lat_ns - oc_spread;

		if (*t >= l)
			gc_policy_latency(ps, *t - l, *t);
		if (oc_why != GC_CLOSE_NONE && (*t - T0) % OC_COMMIT == 0 &&
		    gc_policy_verdict(ps, pc, *t).v_kind == GC_V_GROUP)
			oc_commits(ps, pc, *t, oc_why, 1);
		*t += MS;
	}
	if (gc_policy_device_claim(ps, *t))
		gc_policy_device(ps, OC_COMMIT, GC_DEV_OBSERVER, *t);
	*mid = oc_watch_due(ps, *t);
	return gc_policy_epoch_end(ps, pc, *t);
}

static bool oc_run(struct gc_policy_state *ps, const struct gc_policy_cfg *pc, uint64_t *t,
		   uint64_t lat_ns)
{
	bool mid, r;

	for (oc_watched = 0;; oc_watched++) {
		r = oc_step(ps, pc, t, lat_ns, &mid);
		if (r || !mid)
			return r;
	}
}

static struct gc_policy_state oc_open(const struct gc_policy_cfg *pc, uint64_t t,
				      enum gc_close_reason why)
{
	struct gc_policy_state ps;

	gc_policy_init(&ps);
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	oc_commits(&ps, pc, t, why, 4 * GC_STRETCH_COMMITS);
	cr_assert_not(gc_policy_epoch_end(&ps, pc, t), "the first hold is grouped");
	oc_why = why;
	oc_spread = 0;
	return ps;
}

/* Where fewer than one transaction in 8 waits for peers (a storm
 * closes by count), direct calls are never tried, and each hold is twice
 * the last, up to the cap. At the edge: one timeout, then one close by
 * count (7/8 of 1/8). */
Test(outcome, grouping_whose_peers_come_at_once_is_never_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_COUNT);

	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	oc_commits(&ps, &pc, t, GC_CLOSE_COUNT, 1);
	uint32_t holds[] = { 16, 32, 64, 64 };

	for (unsigned i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
		uint64_t from = t;

		cr_expect_not(oc_run(&ps, &pc, &t, 20 * MS), "hold %u", i);
		/* the first hold is two stretches: the check comes soon */
		cr_expect_geq(t - from, (i ? holds[i - 1] : 2) * OC_STRETCH, "hold %u lasted", i);
		cr_expect_lt(t - from, (i ? holds[i - 1] : 2) * OC_STRETCH + 2 * MS, "hold %u", i);
		cr_expect_eq(ps.ps_oc_hold, holds[i], "hold %u", i);
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "hold %u", i);
		cr_expect_not(gc_policy_bypass(&ps, &pc, t));
	}
}

/* Transactions that gather next to nobody (closed at once by the serial
 * rule, one request each) wait for no one, but share nothing: grouping
 * does not evidently pay, and the hold ends in a probe of direct calls. */
Test(outcome, grouping_that_gathers_nobody_is_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, c = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_NOWAIT);

	oc_why = GC_CLOSE_NONE;
	commits_4ms(&ps, &pc, &c, 16, 1, GC_CLOSE_NOWAIT);
	cr_assert_lt(ps.ps_batch_x16, 24, "1.5 requests a commit (x16)");
	cr_expect(oc_run(&ps, &pc, &t, 5 * MS), "a probe at the hold's end");
	cr_expect(gc_policy_bypass(&ps, &pc, t), "of direct calls");
}

/* Transactions that gather every thread at once, closed by count, whose
 * requests are mostly for files with nothing to write (fio syncing after
 * its reads too) share next to no write: grouping does not evidently pay,
 * and the hold ends in a probe of direct calls. With something to write in
 * each, the same transactions are a storm, never probed. */
Test(outcome, grouping_of_files_with_nothing_to_write_is_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, s = T0;
	struct gc_policy_state ps, storm = oc_open(&pc, s, GC_CLOSE_COUNT);

	oc_clean = 7;
	ps = oc_open(&pc, t, GC_CLOSE_COUNT);
	cr_assert_geq(ps.ps_batch_x16, 8 * 16 - 8, "about 8 requests a commit");
	cr_assert_lt(ps.ps_useful_x16, 24, "one of them with something to write (x16)");
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "a probe at the hold's end");
	cr_expect(gc_policy_bypass(&ps, &pc, t), "of direct calls");
	oc_clean = 0;
	cr_expect_not(oc_run(&storm, &pc, &s, 20 * MS), "the storm: no probe");
	cr_expect_not(gc_policy_bypass(&storm, &pc, s));
}

/* Closed by count, a transaction still waited for its peers past a flush
 * (threads in step that wait for the one that pauses longest): its first
 * request could have had its own real call answered by then. That counts
 * as a timeout does, and the hold ends in a probe of direct calls. Time
 * behind the commit in flight (before the lead) is not waiting for peers. */
static void commit_led(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		       uint64_t start, uint64_t lead, uint64_t close, int n)
{
	for (int i = 0; i < n; i++) {
		struct gc_commit_sample cs = {
			.cs_handles = 8, .cs_inodes = 8, .cs_close = GC_CLOSE_COUNT,
			.cs_start_ns = start, .cs_lead_ns = lead, .cs_close_ns = close,
			.cs_end_ns = close + OC_COMMIT,
		};

		gc_policy_commit_done(ps, pc, &cs);
	}
}

Test(outcome, waiting_for_peers_past_a_flush_is_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_COUNT);

	oc_why = GC_CLOSE_NONE;
	commit_led(&ps, &pc, t, t + MS, t + MS + OC_COMMIT, 8);
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "a probe at the hold's end");
	cr_expect(gc_policy_bypass(&ps, &pc, t), "of direct calls");
}

Test(outcome, waiting_behind_the_commit_in_flight_is_not_probed)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_COUNT);

	/* open 5 ms, all but half a millisecond of it behind the commit */
	oc_why = GC_CLOSE_NONE;
	commit_led(&ps, &pc, t, t + 4 * MS + MS / 2, t + 5 * MS, 8);
	cr_expect_not(oc_run(&ps, &pc, &t, 20 * MS), "no probe");
	cr_expect_not(gc_policy_bypass(&ps, &pc, t));
}

/* Where one transaction in 8 or more waits for peers (threads that
 * pause: here all of them), two stretches of timed direct calls follow the
 * hold; the mode that answered sooner holds next, and a probe of grouping
 * ends each direct hold the same way. */
Test(outcome, the_mode_that_answers_sooner_holds)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "the hold ends in a probe");
	cr_expect_eq(ps.ps_oc_ref_ns, 10 * MS, "the held mode's mean");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "direct, timed");
	cr_expect(gc_policy_bypass(&ps, &pc, t), "a waiting leader closes");
	cr_expect(decide(&ps, &pc, 2, t, t, true).d_close != GC_CLOSE_NONE);
	from = t;
	cr_expect(oc_run(&ps, &pc, &t, 4 * MS), "direct answered sooner: chosen");
	cr_expect_lt(t - from, 2 * OC_STRETCH + 2 * MS, "a probe lasts two stretches");
	cr_expect_geq(t - from, 2 * OC_STRETCH);
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "direct holds");
	cr_expect_eq(ps.ps_oc_hold, HOLD_MAX, "grouped lost by 150%%: the longest hold");
	/* the direct hold ends in a grouped stretch, which answers slower */
	cr_expect(oc_run(&ps, &pc, &t, 4 * MS));
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "a grouped probe");
	cr_expect(oc_run(&ps, &pc, &t, 9 * MS), "grouped lost: direct again");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
	cr_expect_eq(ps.ps_oc_hold, HOLD_MAX);
	/* the work changes: grouped now answers sooner, by a third */
	cr_expect(oc_run(&ps, &pc, &t, 4 * MS));
	cr_expect(oc_run(&ps, &pc, &t, 3 * MS), "grouped won: chosen");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
	cr_expect_eq(ps.ps_oc_hold, 2 * GC_OC_BUDGET / 3, "a third: %u stretches", ps.ps_oc_hold);
}

/* A hold chosen by a comparison is watched: from its second stretch on,
 * each stretch's requests against the mode it was chosen over. Once they
 * answer later than that mode did, beyond the noise, the hold ends in a
 * probe of it at once, not after the rest of its 64 stretches. */
Test(outcome, a_chosen_hold_steps_aside_once_it_stops_winning)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);
	bool mid;

	cr_expect_eq(ps.ps_oc_watch, 0, "the device's first choice is not watched");
	cr_assert(oc_run(&ps, &pc, &t, 10 * MS), "the first hold ends in a probe");
	cr_assert(oc_run(&ps, &pc, &t, 4 * MS), "direct answered sooner: chosen");
	cr_assert_eq(ps.ps_oc_hold, HOLD_MAX);
	cr_expect_eq(ps.ps_oc_other_ns, 10 * MS, "over grouping's 10 ms");
	cr_expect_eq(ps.ps_oc_watch, ps.ps_oc_start + 2 * OC_STRETCH,
		     "watched from its second stretch's end");
	from = t;
	/* the first stretch settles, the second still wins */
	cr_expect_not(oc_step(&ps, &pc, &t, 4 * MS, &mid), "the second stretch: still sooner");
	cr_expect(mid);
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "direct holds");
	cr_expect_eq(ps.ps_oc_watch, t + OC_STRETCH, "the next stretch is watched");
	/* the work changes: direct calls now take 12 ms */
	cr_expect(oc_step(&ps, &pc, &t, 12 * MS, &mid), "the third: later than grouping was");
	cr_expect_lt(t - from, 3 * OC_STRETCH + 2 * MS, "within a stretch of the change");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "grouping probed");
	cr_expect(ps.ps_oc_probe && ps.ps_oc_early);
	cr_expect_eq(ps.ps_oc_ref_ns, 12 * MS, "against the stretch that lost, not the hold");
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "grouping answers sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "and holds");
	cr_expect_eq(ps.ps_oc_other_ns, 12 * MS);
}

/* A stretch that answers later than the other mode did, but within the
 * noise (each request 5 ms longer or shorter than the mean, by turns),
 * does not end the hold; a hold whose grouping evidently pays is not
 * ended either, however late its requests (a probe of direct calls would
 * knock threads that share commits in step out of it). */
Test(outcome, the_watch_ends_no_hold_on_noise_nor_grouping_that_pays)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	oc_spread = 5 * MS;
	cr_assert(oc_run(&ps, &pc, &t, 10 * MS));
	cr_assert(oc_run(&ps, &pc, &t, 7 * MS), "direct chosen");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
	from = t;
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS + MS / 2), "the hold ends");
	cr_expect_eq(oc_watched, ps.ps_oc_hold - 2, "every stretch but two watched: %u", oc_watched);
	cr_expect_geq(t - from, (uint64_t)(ps.ps_oc_hold) * OC_STRETCH, "at its end");
	cr_expect_not(ps.ps_oc_early);
	/* grouped, chosen over direct calls of 12 ms */
	oc_spread = 0;
	cr_assert(oc_run(&ps, &pc, &t, 6 * MS), "grouping won its probe");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
	cr_assert_neq(ps.ps_oc_watch, 0);
	/* its transactions now close by count: it evidently pays */
	oc_commits(&ps, &pc, t, GC_CLOSE_COUNT, 4 * GC_STRETCH_COMMITS);
	oc_why = GC_CLOSE_COUNT;
	from = t;
	cr_expect_not(oc_run(&ps, &pc, &t, 20 * MS), "no probe, however late");
	cr_expect_gt(oc_watched, 0);
	cr_expect_geq(t - from, 8 * OC_STRETCH, "the whole hold");
}

/* A grouped hold held unprobed because grouping evidently paid (a storm)
 * is watched too: once its transactions wait for peers (the threads begin
 * to pause), direct calls are probed at the next stretch's end, not after
 * the rest of a hold of up to 64 stretches. (A storm that turned into
 * threads pausing 5 ms between SQLite-DELETE-like transactions ran
 * 0.75-0.85x bare after the change, held grouped; 0.97-1.0x watched.) */
Test(outcome, grouping_that_stops_paying_is_probed_within_a_stretch)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_COUNT);
	bool mid;

	cr_assert_not(oc_run(&ps, &pc, &t, 20 * MS), "the first hold: no probe");
	cr_assert_not(oc_run(&ps, &pc, &t, 20 * MS), "nor the second");
	cr_assert_eq(ps.ps_oc_hold, 32);
	cr_expect(ps.ps_oc_paid, "held because grouping paid");
	cr_expect_neq(ps.ps_oc_watch, 0, "and watched");
	cr_expect_not(oc_step(&ps, &pc, &t, 20 * MS, &mid), "still paying");
	cr_expect(mid);
	/* the threads now pause: every transaction times out */
	oc_why = GC_CLOSE_TIMEOUT;
	from = t;
	while (!oc_step(&ps, &pc, &t, 20 * MS, &mid))
		cr_assert(mid, "the hold ended before the watch saw it");
	cr_expect_lt(t - from, 3 * OC_STRETCH + 2 * MS, "within the stretches the EWMA takes: %llu ms",
		     (unsigned long long)((t - from) / MS));
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "direct calls probed");
	cr_expect(ps.ps_oc_early);
}

/* Grouped, the requests of one commit are answered together: a stretch
 * has as many samples as commits, not requests, and the watch counts
 * them so. A grouped stretch later than the direct calls it was chosen
 * over by more than twice the error of its requests, but within twice
 * that of its commits (8 requests a commit), does not end the hold; one
 * later beyond both does. */
Test(outcome, the_watch_counts_a_grouped_stretch_by_its_commits)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	cr_assert(oc_run(&ps, &pc, &t, 10 * MS), "the first hold ends in a probe");
	cr_assert(oc_run(&ps, &pc, &t, 12 * MS), "direct lost");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
	cr_assert_eq(ps.ps_oc_other_ns, 12 * MS);
	cr_assert_geq(ps.ps_batch_x16, 8 * 16 - 8, "about 8 requests a commit");
	/* +-5 ms by turns: the error of a stretch's mean is about 0.9 ms
	 * by requests, 2.5 ms by commits; 14 ms is 2 ms later */
	oc_spread = 5 * MS;
	cr_expect(oc_run(&ps, &pc, &t, 14 * MS), "the hold ends");
	cr_expect_not(ps.ps_oc_early, "at its end, not by the watch");
	cr_expect_eq(oc_watched, ps.ps_oc_hold - 2);
	cr_assert(oc_run(&ps, &pc, &t, 13 * MS), "direct calls, 1 ms sooner: noise");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "grouped holds");
	cr_assert(ps.ps_oc_other_ns > 11 * MS && ps.ps_oc_other_ns < 14 * MS, "over direct's %llu us",
		  (unsigned long long)(ps.ps_oc_other_ns / US));
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "later beyond both");
	cr_expect(ps.ps_oc_early, "the watch ended it");
	cr_expect_eq(oc_watched, 1, "at the first stretch it watched");
}

/* A probe that answers slower hands back to the held mode, for a hold long
 * enough that the next probe costs at most 1/GC_OC_BUDGET of the time at
 * what it lost by (two stretches at that loss), within the bounds: modes
 * that answer alike are compared again soon, a clear loser seldom. */
Test(outcome, a_losing_probe_returns_for_a_hold_its_loss_pays_for)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from, len;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);
	static const struct {
		uint64_t probe_ns;
		uint32_t hold;
	} c[] = {
		{ 10 * MS + 100 * US, HOLD_MIN },	/* 1%: as good as a tie */
		{ 12 * MS, 2 * GC_OC_BUDGET / 5 },	/* 20% */
		{ 13 * MS, 3 * GC_OC_BUDGET / 5 },	/* 30% */
		{ 30 * MS, HOLD_MAX },			/* 200%: the cap */
	};

	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "probe %u", i);
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
		from = t;
		cr_expect(oc_run(&ps, &pc, &t, c[i].probe_ns), "back %u", i);
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
		cr_expect_eq(ps.ps_oc_hold, c[i].hold, "case %u: hold %u", i, ps.ps_oc_hold);
		/* what the probe lost, against the time of the probe and the
		 * hold: at most 1/GC_OC_BUDGET, but at the cap */
		len = ps.ps_oc_len;
		cr_expect_eq(len, (uint64_t)c[i].hold * OC_STRETCH);
		if (c[i].hold < HOLD_MAX)
			cr_expect_leq((t - from) * (c[i].probe_ns - 10 * MS) * GC_OC_BUDGET,
				      (len + t - from) * 10 * MS, "case %u: a probe of %llu ns, a hold of %llu ns",
				      i, (unsigned long long)(t - from), (unsigned long long)len);
	}
	/* a probe that measured nothing says nothing: compared again soon */
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS));
	ps.ps_oc_lat_n = 0;
	while (!gc_policy_epoch_due(&ps, &pc, t))
		t += MS;
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	cr_expect(gc_policy_epoch_end(&ps, &pc, t));
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "the held mode");
	cr_expect_eq(ps.ps_oc_hold, HOLD_MIN);
}

/* A probe that keeps not winning is tried half as often each time, up to
 * the cap: PostgreSQL's backends, whose requests share nothing, spent a
 * fifth of their time in grouped probes that each lost a few percent,
 * within the noise, when every tie brought the next probe after 8
 * stretches. */
Test(outcome, a_probe_that_keeps_not_winning_is_tried_half_as_often)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);
	uint32_t holds[] = { 2 * HOLD_MIN, 4 * HOLD_MIN, HOLD_MAX, HOLD_MAX };

	oc_clean = 7; /* one request of 8 with something to commit */
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 4 * GC_STRETCH_COMMITS);
	oc_spread = 5 * MS;
	cr_assert(oc_run(&ps, &pc, &t, 20 * MS), "the first hold ends in a probe");
	cr_assert(oc_run(&ps, &pc, &t, 20 * MS), "direct calls answer alike");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "a tie: direct calls");
	cr_assert_eq(ps.ps_oc_hold, HOLD_MIN);
	for (unsigned i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
		cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "the hold ends %u", i);
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "in a probe %u", i);
		cr_expect(oc_run(&ps, &pc, &t, 19 * MS), "5%% sooner, within the noise");
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "direct calls %u", i);
		cr_expect_eq(ps.ps_oc_hold, holds[i], "probe %u: hold %u", i, ps.ps_oc_hold);
	}
	/* a probe that wins is held for what its win pays for */
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS));
	cr_expect(oc_run(&ps, &pc, &t, 12 * MS), "40%% sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "beyond the noise");
	cr_expect_eq(ps.ps_oc_hold, HOLD_MAX, "a loser by 67%%: the cap, %u", ps.ps_oc_hold);
	oc_clean = 0;
}

/* Where grouping shares nothing (one request of 8 in its commits with
 * something to commit), it takes the place of direct calls only where it
 * answered sooner by more than twice the standard error of the
 * difference; direct calls take its place unless it did. A tie goes to
 * direct calls, from the device's first choice on. Here each request is
 * 5 ms longer or shorter than the mean, by turns: a stretch's mean is
 * known to about a millisecond. */
Test(outcome, a_tie_goes_to_direct_calls)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	oc_clean = 7; /* one request of 8 with something to commit */
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 4 * GC_STRETCH_COMMITS);
	oc_spread = 5 * MS;
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "the first hold ends in a probe");
	cr_expect_neq(ps.ps_oc_ref_se2, UINT64_MAX);
	cr_expect(oc_run(&ps, &pc, &t, 21 * MS), "5%% later");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED,
		     "is a tie, against the device's first choice too");
	cr_expect(oc_run(&ps, &pc, &t, 21 * MS), "the direct hold ends");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "in a grouped probe");
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "5%% sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "is a tie: direct holds");
	cr_expect(oc_run(&ps, &pc, &t, 21 * MS));
	cr_expect(oc_run(&ps, &pc, &t, 8 * MS), "60%% sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "is beyond it");
	cr_expect(oc_run(&ps, &pc, &t, 8 * MS), "the grouped hold ends");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "in a probe");
	cr_expect(oc_run(&ps, &pc, &t, 20 * MS), "2.5 times later");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "grouped holds");
	oc_clean = 0;
}

/* Where grouping shares (here 8 requests a commit, each with something
 * to commit), a probe that answers sooner takes the place of the
 * device's first choice on its mean alone; of a mode that won a
 * comparison, only by more than twice the standard error of the
 * difference. Here each request is 5 ms longer or shorter than the
 * mean, by turns: a stretch's mean is known to about a millisecond. */
Test(outcome, a_probe_displaces_a_chosen_mode_only_beyond_the_noise)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	oc_spread = 5 * MS;
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "the first hold ends in a probe");
	cr_expect_eq(ps.ps_oc_chosen, 0, "grouped by the device's word");
	cr_expect_neq(ps.ps_oc_ref_se2, UINT64_MAX);
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS - MS / 2), "5%% sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "is enough against it");
	cr_expect_eq(ps.ps_oc_chosen, 1);
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS - MS / 2), "the direct hold ends");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "in a grouped probe");
	cr_expect(oc_run(&ps, &pc, &t, 9 * MS), "5%% sooner again");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "is noise now: direct holds");
	cr_expect_eq(ps.ps_oc_hold, HOLD_MIN, "and is compared again soon");
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS - MS / 2));
	cr_expect(oc_run(&ps, &pc, &t, 6 * MS), "40%% sooner");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "is beyond it");
	/* a new verdict of the device starts afresh: its choice again */
	gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t);
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t + MS);
	cr_expect_eq(ps.ps_oc_chosen, 0);
	gc_policy_init(&ps);
	ps.ps_oc_chosen = 2;
	cr_expect_not(gc_policy_check(&ps), "flag out of range");
}

/* A probe that lost returns for a hold sized by what it cost over both its
 * stretches: its first, settling into the mode, is not compared, but it
 * was paid for. */
Test(outcome, a_lost_probe_is_paid_for_with_its_first_stretch)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, s, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	cr_assert(oc_run(&ps, &pc, &t, 10 * MS));
	cr_assert(oc_run(&ps, &pc, &t, 10 * MS + 100 * US), "direct lost by 1%%");
	cr_assert_eq(ps.ps_oc_hold, HOLD_MIN);
	cr_assert(oc_run(&ps, &pc, &t, 10 * MS), "the grouped hold ends in a probe");
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
	/* settling, 30 ms a request; compared, 11 ms: a loss of 10% */
	from = ps.ps_oc_from;
	for (s = ps.ps_oc_start; s < ps.ps_oc_start + ps.ps_oc_len; s += MS)
		gc_policy_latency(&ps, s, s + (s < from ? 30 * MS : 11 * MS));
	t = ps.ps_oc_start + ps.ps_oc_len;
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	cr_assert(gc_policy_epoch_end(&ps, &pc, t));
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "grouped holds");
	cr_expect_eq(ps.ps_oc_last_ns, 11 * MS, "compared: the second stretch");
	cr_expect_eq(ps.ps_oc_cost_ns, (30 + 11) * MS / 2, "paid: both");
	cr_expect_eq(ps.ps_oc_hold, HOLD_MAX, "a loss of 105%%, not 10%%: %u", ps.ps_oc_hold);
}

/* A hold of several stretches is measured from its second: the first is
 * the threads settling into the mode. */
Test(outcome, a_hold_is_measured_but_its_first_stretch)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	cr_assert(oc_run(&ps, &pc, &t, 10 * MS));
	cr_assert(oc_run(&ps, &pc, &t, 4 * MS), "direct chosen");
	cr_assert_eq(ps.ps_oc_len, (uint64_t)HOLD_MAX * OC_STRETCH);
	cr_expect_eq(ps.ps_oc_from, ps.ps_oc_start + OC_STRETCH);
}

/* Evidence is transactions gathered, however few a stretch holds (threads
 * pausing long, or LIBGC_WAIT_PCT=1000: a commit every few stretches' worth
 * of commits): two that waited for their peers end the hold in a probe.
 * A stretch mostly of lone commits, one gathered among them, is held
 * again. */
Test(outcome, few_gathered_transactions_are_evidence_many_lone_ones_are_not)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	oc_why = GC_CLOSE_NONE;
	oc_commits(&ps, &pc, t, GC_CLOSE_LONE, 3);
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	cr_expect_not(oc_run(&ps, &pc, &t, 10 * MS), "3 lone, 1 gathered: held again");
	cr_expect_eq(ps.ps_oc_len, OC_STRETCH, "for one stretch");
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 2);
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "2 gathered that waited: a probe");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
}

/* The domain's first commits are its start-up's (threads arriving one by
 * one): before 2 stretches' worth (16 transactions) were gathered, a hold
 * ends in one more grouped stretch, not a probe. */
Test(outcome, no_probe_on_the_evidence_of_the_start)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, from;

	gc_policy_init(&ps);
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 2 * GC_STRETCH_COMMITS - 3);
	cr_assert_not(gc_policy_epoch_end(&ps, &pc, t));
	/* one gathered a stretch: evidence, but not yet enough of it */
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	cr_expect_not(oc_run(&ps, &pc, &t, 10 * MS), "too few commits to probe");
	from = t;
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	cr_expect_not(oc_run(&ps, &pc, &t, 10 * MS), "still too few");
	cr_expect_lt(t - from, OC_STRETCH + 2 * MS, "one stretch more");
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	cr_expect(oc_run(&ps, &pc, &t, 10 * MS), "enough: a probe");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
}

/* A program's set-up, one thread syncing its files one by one (each
 * transaction closed lone), gathers nobody: no evidence that grouping
 * pays, so its holds grow no longer. Once its threads run, pausing
 * between syncs (transactions time out), the start's evidence is
 * gathered in a few stretches and direct calls are probed. (Read as
 * grouping that pays, the set-up made the next hold 16 stretches.) */
Test(outcome, a_thread_syncing_alone_is_no_evidence_for_a_longer_hold)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	struct gc_policy_state ps;
	uint64_t t = T0, from = t;
	int i;

	gc_policy_init(&ps);
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	cr_assert_not(gc_policy_epoch_end(&ps, &pc, t), "the first hold is grouped");
	oc_why = GC_CLOSE_LONE;
	for (i = 0; i < 4; i++) {
		cr_expect_not(oc_run(&ps, &pc, &t, 4 * MS), "set-up, stretch %d", i);
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
		cr_expect_eq(ps.ps_oc_hold, HOLD_MIN, "stretch %d: hold %u", i, ps.ps_oc_hold);
		cr_expect_eq(ps.ps_oc_len, OC_STRETCH, "stretch %d: one more", i);
	}
	oc_why = GC_CLOSE_TIMEOUT;
	for (i = 0, from = t; i < 6 && !oc_run(&ps, &pc, &t, 10 * MS); i++)
		;
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "a probe of direct calls");
	cr_expect_leq(t - from, 2 * OC_STRETCH + 2 * MS,
		      "after %llu ms", (unsigned long long)((t - from) / MS));
}

/* Past the start, grouped stretches whose transactions mostly close lone
 * (processes that sync once, each on a file of its own, a few gathered
 * by chance) are evidence of nothing, but not for ever: after as many in
 * a row as the longest hold (GC_FB_HOLD_MAX), the hold ends as any other
 * does, in a probe of direct calls (before, such a domain stayed grouped
 * for good). A domain with no request to measure is not probed. */
Test(outcome, grouping_that_keeps_closing_lone_is_probed_within_the_cap)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, from;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);
	struct gc_policy_state idle;
	int i;

	oc_why = GC_CLOSE_NONE;
	oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
	idle = ps;
	for (i = 0, from = t; i < 2 * HOLD_MAX; i++) {
		oc_commits(&ps, &pc, t, GC_CLOSE_LONE, 3);
		oc_commits(&ps, &pc, t, GC_CLOSE_TIMEOUT, 1);
		if (oc_run(&ps, &pc, &t, 10 * MS))
			break;
		cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP, "stretch %d", i);
	}
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED, "a probe of direct calls");
	cr_expect_leq(t - from, (HOLD_MAX + 2) * OC_STRETCH + 2 * MS,
		      "after %llu stretches", (unsigned long long)((t - from) / OC_STRETCH));
	cr_expect_geq(t - from, HOLD_MAX * OC_STRETCH, "not before the cap");

	/* nothing measured: one more stretch, however many */
	t = from;
	for (i = 0; i < 2 * HOLD_MAX; i++) {
		oc_commits(&idle, &pc, t, GC_CLOSE_LONE, 3);
		t += OC_STRETCH + MS;
		if (gc_policy_device_claim(&idle, t))
			gc_policy_device(&idle, OC_COMMIT, GC_DEV_OBSERVER, t);
		cr_expect_not(gc_policy_epoch_end(&idle, &pc, t), "idle stretch %d", i);
	}
	cr_expect_eq(gc_policy_verdict(&idle, &pc, t).v_kind, GC_V_GROUP);

	/* a peer's count past the bound is a scribble */
	cr_expect(gc_policy_check(&ps));
	ps.ps_oc_idle = HOLD_MAX + 1;
	cr_expect_not(gc_policy_check(&ps), "a count past the longest hold");
}

/* Only the last stretch of a hold or a probe is measured: a request begun
 * before it is not counted; nor is one with no measure at all (an idle
 * stretch). */
Test(outcome, only_requests_of_the_last_stretch_count)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0, s;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	s = ps.ps_oc_from;
	cr_expect_eq(s, ps.ps_oc_start + ps.ps_oc_len - OC_STRETCH, "the first hold's second stretch");
	gc_policy_latency(&ps, ps.ps_oc_start + MS, ps.ps_oc_start + 2 * MS);
	cr_expect_eq(ps.ps_oc_lat_n, 0, "its first stretch");
	gc_policy_latency(&ps, s - 1, s + 5 * MS);
	cr_expect_eq(ps.ps_oc_lat_n, 0);
	gc_policy_latency(&ps, s + MS, s);
	cr_expect_eq(ps.ps_oc_lat_n, 0, "an end before the start");
	gc_policy_latency(&ps, s + MS, s + 3 * MS);
	cr_expect_eq(ps.ps_oc_lat_n, 1);
	cr_expect_eq(ps.ps_oc_lat_ns, 2 * MS);
	/* an idle hold (nothing measured) is held again, never probed */
	ps.ps_oc_lat_n = 0;
	while (!gc_policy_epoch_due(&ps, &pc, t))
		t += MS;
	gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t);
	cr_expect_not(gc_policy_epoch_end(&ps, &pc, t));
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_GROUP);
}

/* A change of the device's verdict starts the check afresh, grouped; a
 * fast device never runs it; scribbled fields are rejected. */
Test(outcome, the_device_changing_starts_afresh)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	uint64_t t = T0;
	struct gc_policy_state ps = oc_open(&pc, t, GC_CLOSE_TIMEOUT);

	cr_assert(oc_run(&ps, &pc, &t, 10 * MS));
	cr_assert_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_TIMED);
	cr_expect(gc_policy_device(&ps, 45 * US, GC_DEV_OBSERVER, t), "now fast");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t).v_kind, GC_V_DIRECT, "untimed");
	cr_expect_not(gc_policy_epoch_due(&ps, &pc, t + SEC / 2));
	cr_expect(gc_policy_device(&ps, OC_COMMIT, GC_DEV_OBSERVER, t + MS), "slow again");
	cr_expect_eq(gc_policy_verdict(&ps, &pc, t + MS).v_kind, GC_V_GROUP);
	cr_expect_eq(ps.ps_oc_start, 0, "a check afresh");

	gc_policy_init(&ps);
	ps.ps_oc_mode = 2;
	cr_expect_not(gc_policy_check(&ps), "mode out of range");
	gc_policy_init(&ps);
	ps.ps_oc_hold = HOLD_MAX + 1;
	cr_expect_not(gc_policy_check(&ps), "hold above the cap");
	gc_policy_init(&ps);
	ps.ps_oc_probe = 7;
	cr_expect_not(gc_policy_check(&ps), "probe flag");
}

/* The state lives in the shared segment, which a peer may scribble on
 * between the domain's check and the policy's next read: a count of recent
 * threads out of range must never index past the table. The state is put
 * at the end of a mapping with an unmapped page after it, so that a read
 * past it faults (a scribbled count once killed a process there). */
Test(adaptive, a_scribbled_thread_count_reads_nothing_past_the_table)
{
	struct gc_policy_cfg pc = cfg(GC_POL_ADAPTIVE);
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (sizeof(struct gc_policy_state) + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	char *map = mmap(NULL, len + (size_t)pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct gc_policy_state *ps;
	struct gc_commit_sample cs = { .cs_handles = 2, .cs_inodes = 1,
				       .cs_close = GC_CLOSE_TIMEOUT };
	uint64_t t = T0;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + len, (size_t)pg, PROT_NONE), 0);
	ps = (struct gc_policy_state *)(map + len - sizeof(*ps));
	gc_policy_init(ps);
	for (uint32_t n = GC_RECENT_MAX + 1; n < (1u << 20); n *= 4) {
		ps->ps_recent_n = n;
		gc_policy_arrive(ps, &pc, 7, t);
		ps->ps_recent_n = n;
		(void)gc_policy_active(ps, t);
		ps->ps_recent_n = n;
		(void)gc_policy_expected(ps, t, 7);
		ps->ps_recent_n = n;
		cs.cs_start_ns = t;
		cs.cs_close_ns = t + MS;
		cs.cs_end_ns = t + 2 * MS;
		gc_policy_commit_done(ps, &pc, &cs);
		cr_expect_leq(ps->ps_recent_n, GC_RECENT_MAX, "count %u left at %u", n,
			      ps->ps_recent_n);
		t += 3 * MS;
	}
	munmap(map, len + (size_t)pg);
}
