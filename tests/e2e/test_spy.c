// SPDX-License-Identifier: LGPL-2.1-or-later
/* The spies and the checker on their own, without the library: a bare
 * program passes, and each way of weakening durability (a deliberately broken
 * sync layer between the spies) is caught. The other suites rely on this. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

TestSuite(spy, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

/* Runs durable under @stack with @env and checks the spy log. Runs through
 * the broken layer (@broken) check silently: violations are the point. */
static void run_durable(const char *stack, const char *const *env,
			const char *mode, const char *layout, const char *threads,
			const char *count, bool tolerate, struct spy_summary *s,
			struct e2e_run *r)
{
	const char *log = e2e_path("spy.log");
	const char *argv[] = { e2e_prog("durable"), "-D", e2e_dir(), "-m", mode,
			       "-f", layout, "-t", threads, "-n", count,
			       tolerate ? "-e" : NULL, NULL };
	bool broken = stack && strstr(stack, "cheat");
	const char *full[16];
	char *logenv;
	int k = 0;

	remove(log);
	cr_assert(asprintf(&logenv, "SPY_LOG=%s", log) > 0);
	full[k++] = logenv;
	for (const char *const *e = env; e && *e; e++)
		full[k++] = *e;
	full[k] = NULL;
	e2e_run(r, stack, full, 60, argv);
	if (broken)
		e2e_spy_check_quiet(log, s);
	else
		e2e_spy_check(log, s, mode);
	free(logenv);
}

Test(spy, bare_program_covers_itself)
{
	static const char *const modes[] = { "fsync", "fdatasync", "odsync",
					     "osync", "rwf_dsync", "rwf_sync" };
	static const char *const layouts[] = { "shared", "sharedfd", "each" };

	for (size_t m = 0; m < 6; m++)
		for (size_t l = 0; l < 3; l++) {
			struct spy_summary s;
			struct e2e_run r;

			run_durable(PRE_SPY, NULL, modes[m], layouts[l], "3", "4",
				    false, &s, &r);
			e2e_expect_ok(&r, modes[m]);
			cr_expect_eq(s.s_violations, 0, "%s/%s: %zu violations on a bare run",
				     modes[m], layouts[l], s.s_violations);
			cr_expect_eq(s.s_prog, 12, "%s/%s: the outer spy logged %zu requests, want 12",
				     modes[m], layouts[l], s.s_prog);
			cr_expect_eq(s.s_real, s.s_prog, "%s/%s: bare run: %zu real calls for %zu requests",
				     modes[m], layouts[l], s.s_real, s.s_prog);
			cr_expect_eq(s.s_bad, 0);
			e2e_run_free(&r);
		}
}

Test(spy, catches_a_layer_that_skips_fsync)
{
	static const char *const env[] = { "CHEAT_MODE=skip", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable("outer cheat inner", env, "fsync", "shared", "2", "5", false, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_prog, 10);
	cr_expect_eq(s.s_real, 0);
	cr_expect_eq(s.s_violations, 10, "violations=%zu, want every request", s.s_violations);
}

Test(spy, catches_fdatasync_standing_in_for_fsync)
{
	static const char *const env[] = { "CHEAT_MODE=weak", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable("outer cheat inner", env, "fsync", "each", "2", "5", false, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_violations, 10, "violations=%zu, want 10", s.s_violations);
	e2e_run_free(&r);
	/* control: an fdatasync request is covered by fdatasync */
	run_durable("outer cheat inner", env, "fdatasync", "each", "2", "5", false, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_violations, 0, "violations=%zu, want 0", s.s_violations);
}

Test(spy, catches_a_real_call_that_began_too_early)
{
	static const char *const env[] = { "CHEAT_MODE=stale", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable("outer cheat inner", env, "fsync", "shared", "1", "6", false, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_real, 1, "real=%zu", s.s_real);
	cr_expect_eq(s.s_violations, 5, "violations=%zu, want all but the first", s.s_violations);
}

Test(spy, catches_a_swallowed_error)
{
	static const char *const env[] = { "CHEAT_MODE=swallow", "SPY_EIO_NTH=2", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable("outer cheat inner", env, "fsync", "shared", "1", "4", true, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_real_fail, 1);
	cr_expect_eq(s.s_prog_fail, 0);
	cr_expect_eq(s.s_violations, 1, "violations=%zu, want 1", s.s_violations);
}

Test(spy, catches_a_sync_of_another_inode)
{
	static const char *const env[] = { "CHEAT_MODE=otherino", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable("outer cheat inner", env, "fdatasync", "each", "2", "3", false, &s, &r);
	e2e_expect_ok(&r, "durable");
	cr_expect_eq(s.s_real, 6);
	cr_expect_eq(s.s_violations, 6, "violations=%zu, want 6", s.s_violations);
}

Test(spy, injected_eio_reaches_the_bare_program)
{
	static const char *const nth[] = { "SPY_EIO_NTH=3", NULL };
	static const char *const every[] = { "SPY_EIO_EVERY=2", NULL };
	struct spy_summary s;
	struct e2e_run r;

	run_durable(PRE_SPY, nth, "fsync", "shared", "2", "4", true, &s, &r);
	e2e_expect_ok(&r, "durable -e");
	cr_expect_eq(s.s_prog_eio, 1, "prog_eio=%zu", s.s_prog_eio);
	cr_expect_eq(e2e_out_long(r.out, "eio"), 1, "durable saw: %s", r.out);
	cr_expect_eq(s.s_violations + s.s_unexplained_fail, 0);
	e2e_run_free(&r);

	run_durable(PRE_SPY, every, "odsync", "each", "2", "4", true, &s, &r);
	e2e_expect_ok(&r, "durable -e");
	cr_expect_eq(s.s_prog_eio, 0, "kernel O_DSYNC writes are not real syncs: prog_eio=%zu",
		     s.s_prog_eio);
	e2e_run_free(&r);

	run_durable(PRE_SPY, every, "fdatasync", "each", "2", "4", true, &s, &r);
	e2e_expect_ok(&r, "durable -e");
	cr_expect_eq(s.s_prog_eio, 4, "prog_eio=%zu", s.s_prog_eio);
	cr_expect_eq(s.s_violations + s.s_unexplained_fail, 0);
	/* durable -e verified the data read back, so the run itself is sane */
	cr_expect_eq(e2e_out_long(r.out, "ok"), 4, "%s", r.out);
}
