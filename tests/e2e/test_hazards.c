// SPDX-License-Identifier: LGPL-2.1-or-later
/* Hazards around the commit path: fork with commits in flight, writes from a
 * signal handler, cancellation of a waiting thread, and other preload
 * libraries stacked before and after the library. No hang, no lost result. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

TestSuite(hazards, .init = e2e_setup, .fini = e2e_teardown, .timeout = 150);

static const char *const adaptive[] = { "LIBGC_POLICY=adaptive", NULL };
static const char *const fixed2ms[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
static const char *const fixed200ms[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=200000",
					  "LIBGC_MAX_WAIT_US=200000", NULL };
static const char *const slow_fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=20000",
					  "SPY_DELAY_US=20000", NULL };
static const char *const slow_adaptive[] = { "LIBGC_POLICY=adaptive", "SPY_DELAY_US=3000", NULL };

/* Runs @argv under the library alone and between the spies with each of
 * @envs; every run must end cleanly and the spied ones must be durable. */
static void hazard(const char *const *argv, const char *const *const *envs,
		   size_t nenvs, int timeout_s)
{
	for (size_t i = 0; i < nenvs; i++) {
		struct spy_summary s;
		struct e2e_run r;
		char what[160];

		snprintf(what, sizeof(what), "%s under the library (%s)", argv[0], envs[i][0]);
		e2e_run(&r, PRE_GC, envs[i], timeout_s, argv);
		e2e_expect_ok(&r, what);
		e2e_run_free(&r);

		snprintf(what, sizeof(what), "%s between the spies (%s)", argv[0], envs[i][0]);
		e2e_run_spied(&r, &s, PRE_SPY_GC, envs[i], timeout_s, argv, what);
		e2e_expect_ok(&r, what);
		cr_expect(s.s_prog > 0, "%s: no sync request seen", what);
		cr_expect_eq(s.s_violations, 0, "%s: %zu requests not covered", what,
			     s.s_violations);
		cr_expect_eq(s.s_prog_fail, 0, "%s: %zu requests failed", what, s.s_prog_fail);
		cr_log_info("%s: %s", what, r.out);
		e2e_run_free(&r);
	}
}

/* Multi-threaded parent forks while its threads are inside commits; parent
 * and children keep syncing. */
Test(hazards, fork_with_commits_in_flight)
{
	const char *argv[] = { e2e_prog("forker"), "-t", "4", "-k", "6", e2e_dir(), NULL };
	const char *const *envs[] = { adaptive, fixed2ms, slow_adaptive };

	hazard(argv, envs, 3, 20);
}

/* A process's first sync races its forks (100 fresh processes, 4 forks
 * each): the fork handlers quiesce no domain in a process that has none,
 * so a child may copy the first one half made, its lock held by a thread
 * it does not have; it must start without it, not hang on it. */
Test(hazards, fork_while_the_first_domain_is_made)
{
	const char *argv[] = { e2e_prog("firstfork"), e2e_dir(), "100", NULL };
	const char *const *envs[] = { adaptive, fixed2ms };

	hazard(argv, envs, 2, 60);
}

/* SIGALRM, 300 us into each loop iteration, writes to a pipe and an O_DSYNC
 * file while two threads loop in fsync, fdatasync and O_DSYNC writes. */
Test(hazards, write_from_a_signal_handler)
{
	const char *argv[] = { e2e_prog("sigwrite"), "-n", "200", "-i", "300", e2e_dir(), NULL };
	const char *const *envs[] = { adaptive, fixed2ms };

	hazard(argv, envs, 2, 20);
}

/* Threads cancelled while they wait in a 200 ms commit window, while they
 * issue a slow (20 ms) real call for others, and, with the adaptive policy,
 * wherever they happen to be. */
Test(hazards, cancel_a_waiting_thread)
{
	const char *argv[] = { e2e_prog("cancel"), "-r", "12", e2e_dir(), NULL };
	const char *const *envs[] = { fixed200ms, slow_fixed, adaptive, slow_adaptive };

	hazard(argv, envs, 4, 15);
}

/* Processes syncing one file while peers are SIGKILLed at varied moments,
 * perhaps holding the shared lock or owing the others a real call. */
Test(hazards, peer_killed_mid_commit)
{
	static const char *const fixed20ms[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=20000", NULL };
	static const char *const slow_fixed5[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=5000",
						   "SPY_DELAY_US=10000", NULL };
	const char *argv[] = { e2e_prog("peerdeath"), "-w", "3", "-k", "8", e2e_dir(), NULL };
	const char *const *envs[] = { fixed20ms, slow_fixed5, adaptive };

	hazard(argv, envs, 3, 20);
}

/* Other preload libraries that interpose fsync/fdatasync/write, before and
 * after the library: both keep working, and the library reaches the one
 * after it through RTLD_NEXT. */
Test(hazards, stacking_with_other_preloads)
{
	static const char *const stacks[] = {
		"gc inner",			/* a preload after it only */
		"outer gc",			/* a preload before it only */
		"outer cheat gc inner",		/* two before it */
		"outer gc cheat inner",		/* two after it */
	};
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	const char *argv[] = { e2e_prog("durable"), "-D", e2e_dir(), "-m", "fsync", "-f",
			       "shared", "-t", "8", "-n", "4", NULL };

	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		bool has_outer = !strncmp(stacks[i], "outer", 5);
		bool has_inner = strstr(stacks[i], "inner") != NULL;
		struct spy_summary s;
		struct e2e_run r;

		if (has_outer && has_inner) {
			e2e_run_spied(&r, &s, stacks[i], env, 30, argv, stacks[i]);
		} else {
			/* half a pair: the log cannot be judged, only counted */
			char *logenv;
			const char *full[] = { NULL, env[0], env[1], NULL };

			remove(e2e_spy_log());
			cr_assert(asprintf(&logenv, "SPY_LOG=%s", e2e_spy_log()) > 0);
			full[0] = logenv;
			e2e_run(&r, stacks[i], full, 30, argv);
			e2e_spy_check_quiet(e2e_spy_log(), &s);
			free(logenv);
		}
		e2e_expect_ok(&r, stacks[i]);
		cr_expect_eq(e2e_out_long(r.out, "ok"), 32, "%s: %s", stacks[i], r.out);
		if (has_outer)
			cr_expect_eq(s.s_prog, 32, "%s: the preload before the library saw %zu of 32 fsyncs",
				     stacks[i], s.s_prog);
		if (has_inner)
			cr_expect(s.s_real >= 1 && s.s_real <= 32,
				  "%s: the preload after the library saw %zu real fsyncs",
				  stacks[i], s.s_real);
		if (has_outer && has_inner)
			cr_expect_eq(s.s_violations, 0, "%s", stacks[i]);
		e2e_run_free(&r);
	}
}

/* Another thread dup2()s a different file onto a descriptor while a
 * thread's fsync of it waits for its transaction (a fixed 2 ms wait, a
 * second thread syncing beside it), or closes it. Bare, the call holds its
 * file from its first instant, syncs it and returns 0; under libgc every
 * fsync must succeed too, and (dup2) cover the file it was called for,
 * seen by the spies (a syncfs of its filesystem covers it). A close during
 * a real call leaves the spies no inode to log: that case checks results. */
Test(hazards, descriptor_swapped_under_a_waiting_fsync)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	static const char *const hows[] = { NULL, "close" };

	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = { e2e_prog("fdswap"), e2e_dir(), "30", hows[i], NULL };
		const char *how = hows[i] ? hows[i] : "dup2";
		struct spy_summary s;
		struct e2e_run r;

		e2e_run(&r, PRE_NONE, NULL, 60, argv);
		e2e_expect_ok(&r, how);
		cr_expect(strstr(r.out, "rounds=30 failed=0"), "%s bare: %s", how, r.out);
		e2e_run_free(&r);

		if (hows[i])
			e2e_run(&r, PRE_GC, env, 60, argv);
		else
			e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, how);
		e2e_expect_ok(&r, how);
		cr_expect(strstr(r.out, "rounds=30 failed=0"), "%s under libgc: %s", how, r.out);
		if (!hows[i])
			cr_expect_eq(s.s_violations, 0, "%s under libgc: %zu fsyncs not covered", how,
				     s.s_violations);
		cr_log_info("fdswap %s: %s", how, r.out);
		e2e_run_free(&r);
	}
}

/* The same swap while the real sync fails (the inner spy fails every real
 * sync of a regular file, after 2 ms): whatever the number names by then,
 * a failure the library's real call reported is the program's answer. A
 * filesystem-wide sync of the stand-in may not turn it into a success: an
 * O_DSYNC write or a pwritev2 with RWF_DSYNC once came back complete. */
Test(hazards, failed_sync_under_a_swapped_descriptor_stays_failed)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000",
					   "SPY_EIO_EVERY=1", "SPY_DELAY_US=2000", NULL };
	static const char *const modes[] = { "osync", "rwf", NULL };

	for (size_t i = 0; i < 3; i++) {
		const char *argv[] = { e2e_prog("fdswap"), e2e_dir(), "10", modes[i], NULL };
		const char *how = modes[i] ? modes[i] : "fsync";
		struct spy_summary s;
		struct e2e_run r;

		e2e_run(&r, PRE_NONE, NULL, 60, argv);
		e2e_expect_ok(&r, how);
		cr_expect(strstr(r.out, "rounds=10 failed=0"), "%s bare: %s", how, r.out);
		e2e_run_free(&r);

		e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, how);
		e2e_expect_ok(&r, how);
		cr_expect(strstr(r.out, "rounds=10 failed=10"),
			  "%s under libgc, every real sync failing: %s", how, r.out);
		cr_log_info("fdswap %s, failing: %s", how, r.out);
		e2e_run_free(&r);
	}
}

/* A process holds a POSIX record lock on a file (fcntl, as SQLite does)
 * and fsyncs it in shared windows: the lock must outlive every request.
 * Any close of a descriptor of the file in the process releases it, so
 * the library may not close a copy of its own (a build that pinned each
 * waiting request's descriptor by a copy lost the lock 20 times of 20). */
Test(hazards, record_lock_survives_a_waiting_fsync)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	const char *argv[] = { e2e_prog("locksync"), e2e_dir(), "20", NULL };
	struct e2e_run r;

	e2e_run(&r, PRE_NONE, NULL, 60, argv);
	e2e_expect_ok(&r, "locksync bare");
	cr_expect(strstr(r.out, "lost=0 failed=0"), "bare: %s", r.out);
	e2e_run_free(&r);
	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "locksync under libgc");
	cr_expect(strstr(r.out, "rounds=20 lost=0 failed=0"), "under libgc: %s", r.out);
	e2e_run_free(&r);
}

/* A thread moves the library's own descriptors (the program's dup2 onto
 * one: the library's lock for them, around a dup and a close) while the
 * main thread forks. A child forked while that lock was taken spun in its
 * own first dup2 onto one for ever: 55 of 300 children before fork's
 * child handler freed it. */
Test(hazards, fork_while_a_thread_moves_the_librarys_descriptors)
{
	e2e_same_as_bare("ownfork", NULL, "stuck=0\n");
}
