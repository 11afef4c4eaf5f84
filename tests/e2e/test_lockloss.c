// SPDX-License-Identifier: LGPL-2.1-or-later
/* Handles that lose the shared lock: a live process stopped while it holds
 * the segment's lock makes the requests waiting in transactions give up on
 * it and make their own real calls. Once it is gone, the segment must be as
 * usable as before: whatever those handles held is released, and processes
 * still share commits. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/*
 * As in the shared suite: a tmpfs of our own over /dev/shm in a private
 * mount namespace (root only), so the segment of the scratch filesystem is
 * ours alone, the program finds it as the only one there, and stopping a
 * process with its lock disturbs nobody else.
 */
static bool g_isolated;

static void setup(void)
{
	e2e_setup();
	g_isolated = e2e_private_shm();
}

static void teardown(void)
{
	if (g_isolated)
		e2e_private_shm_end();
	e2e_teardown();
}

TestSuite(lockloss, .init = setup, .fini = teardown, .timeout = 100);

/* Sums @key over the report lines of the fresh pair. */
static unsigned long long pair_get(const char *text, int a, int b, const char *key)
{
	unsigned long long va = 0, vb = 0;

	cr_expect(e2e_report_get(text, a, key, &va) && e2e_report_get(text, b, key, &vb),
		  "no %s in the exit report of %d and %d:\n%s", key, a, b, text);
	return va + vb;
}

/*
 * Four workers sync one file with a 20 ms window, so at any moment most of
 * them wait inside a transaction. Six times a process takes the segment's
 * lock and is stopped for 2.5 s, longer than a request waits for the lock
 * (2 s): the waiting handles give up and call directly. The workers then
 * idle, alive; two fresh processes sync the same file with a 3 ms window
 * and must share commits: most of their requests join transactions, and
 * those carry more requests than there are commits.
 */
Test(lockloss, stalled_lock_holder_leaves_the_segment_usable)
{
	const char *report = e2e_path("report");
	char *repenv;
	const char *argv[] = { e2e_prog("lockstall"), "-D", e2e_dir(), "-w", "4", "-n", "6",
			       "-H", "2500", "-g", "300", "-o", "40", "-W", "3000", NULL };
	unsigned long long req, direct, commits, batched;
	struct e2e_run r;
	char *text;
	int a, b;

	if (!g_isolated)
		cr_skip_test("needs root for a private /dev/shm: stopping a process that holds the "
			     "shared segment's lock would stall other processes of this user");
	cr_assert(asprintf(&repenv, "LIBGC_REPORT=%s", report) > 0);
	{
		const char *env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=20000",
				      "LIBGC_MAX_WAIT_US=200000", "LIBGC_SHARE=user", repenv,
				      NULL };

		e2e_run(&r, PRE_GC, env, 50, argv);
	}
	e2e_expect_ok(&r, "lockstall");
	cr_expect(!strstr(r.err, "no shared domain"), "a process did not use the shared segment:\n%s",
		  r.err);
	cr_expect_eq(e2e_out_long(r.out, "stalls"), 6, "lockstall: %s", r.out);
	cr_expect(e2e_out_long(r.out, "worker_ops") > 0, "lockstall: %s", r.out);
	a = (int)e2e_out_long(r.out, "fresh_a");
	b = (int)e2e_out_long(r.out, "fresh_b");
	cr_assert(a > 0 && b > 0, "lockstall: no fresh pair: %s\n%s", r.out, r.err);

	text = e2e_slurp(report);
	req = pair_get(text, a, b, "req_fsync");
	direct = pair_get(text, a, b, "direct");
	commits = pair_get(text, a, b, "commits");
	batched = pair_get(text, a, b, "batched");
	cr_expect_eq(req, 80, "fresh pair: %llu requests, want 80", req);
	cr_expect(direct * 2 < req,
		  "fresh pair after the stalls: %llu of %llu requests found no room in a transaction "
		  "(direct calls); commits=%llu batched=%llu", direct, req, commits, batched);
	cr_expect(batched > commits,
		  "fresh pair after the stalls shared no commit: commits=%llu batched=%llu direct=%llu",
		  commits, batched, direct);
	cr_log_info("%.*s; fresh pair: requests=%llu direct=%llu commits=%llu batched=%llu",
		    (int)strcspn(r.out, "\n"), r.out, req, direct, commits, batched);
	free(text);
	free(repenv);
	e2e_run_free(&r);
}
