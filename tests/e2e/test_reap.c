// SPDX-License-Identifier: LGPL-2.1-or-later
/* Peers taken for dead while alive: a process whose identity as the library
 * cached it is stale (a _Fork child: no atfork handler ran) looks dead to
 * its peers, which may undo its part of a transaction. Whatever they do,
 * its requests must stay durable: each success covered by a real call on
 * its own inode, seen from outside by the spies. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

/* A tmpfs of our own over /dev/shm in a private mount namespace (root
 * only), as in the shared suite: the segment is ours alone. */
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

TestSuite(reap, .init = setup, .fini = teardown, .timeout = 60);

/* The parent and a child fsync a file each, together, 10 rounds, through
 * the shared segment with a window long enough (20 and 50 ms) for each to
 * look for dead peers while both wait in one transaction. */
static void pair_case(const char *mode, const char *name, const char *left)
{
	static const char *const w20[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=20000",
					   "LIBGC_MAX_WAIT_US=200000", "LIBGC_SHARE=user", NULL };
	static const char *const w50[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=50000",
					   "LIBGC_MAX_WAIT_US=200000", "LIBGC_SHARE=user", NULL };
	static const char *const *const envs[] = { w20, w50 };
	const char *argv[] = { e2e_prog("forkraw"), "-n", "10", e2e_dir(), mode, NULL };

	if (!g_isolated)
		cr_skip_test("needs root for a private /dev/shm: other processes of this user "
			     "would join the transactions");
	for (size_t i = 0; i < 2; i++) {
		struct spy_summary s;
		struct e2e_run r;
		char what[96];

		snprintf(what, sizeof(what), "%s (%s)", name, envs[i][1]);
		e2e_run_spied(&r, &s, PRE_SPY_GC, envs[i], 20, argv, what);
		e2e_expect_ok(&r, what);
		/* the first request, then 10 rounds of two */
		cr_expect_eq(s.s_prog, 21, "%s: the spy saw %zu requests, want 21", what, s.s_prog);
		cr_expect_eq(s.s_violations, 0,
			     "%s: %zu requests reported durable without a covering real call",
			     what, s.s_violations);
		cr_expect_eq(s.s_prog_fail + s.s_real_fail + s.s_bad, 0,
			     "%s: failed requests %zu, failed real calls %zu, bad records %zu",
			     what, s.s_prog_fail, s.s_real_fail, s.s_bad);
		/* its first request, not the fork, finds the segment not its
		 * own: it leaves it then, and says so */
		if (left)
			cr_expect(r.err && strstr(r.err, left),
				  "%s: the child did not leave the parent's segment (\"%s\"): %s",
				  what, left, r.err ? r.err : "");
		cr_log_info("%s: %.*s; %zu requests, %zu real calls", what,
			    (int)strcspn(r.out, "\n"), r.out, s.s_prog, s.s_real);
		e2e_run_free(&r);
	}
}

/* The child is made with _Fork: its cached thread id is its parent's. */
Test(reap, raw_fork_child_requests_stay_durable)
{
	pair_case(NULL, "_Fork child", NULL);
}

/* The child lives in a pid namespace of its own, sharing /dev/shm and the
 * filesystem: the parent's pid names no process there. */
Test(reap, peer_in_another_pid_namespace_requests_stay_durable)
{
	pair_case("-p", "child in a new pid namespace", "another pid namespace after fork");
}

/* The child lives in a time namespace a day ahead: the times the members
 * write in the segment would mean another instant there. */
Test(reap, peer_in_another_time_namespace_requests_stay_durable)
{
	pair_case("-t", "child in a new time namespace", "another time namespace after fork");
}
