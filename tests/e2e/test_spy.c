// SPDX-License-Identifier: LGPL-2.1-or-later
/* The spies and the checker on their own, without the library: a bare
 * program passes, and each way of weakening durability (a deliberately broken
 * sync layer between the spies) is caught. The other suites rely on this. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
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

/* A record of the checker's own making: @role on inode @ino of device 1,
 * over [@start_ms, @end_ms], answering @err (0: success). */
static struct spy_rec rec(int role, uint64_t ino, int rule, double start_ms, double end_ms,
			  int err, int flags)
{
	return (struct spy_rec){
		.r_magic = SPY_MAGIC, .r_role = (uint8_t)role, .r_kind = SPY_FDATASYNC,
		.r_rule = (uint8_t)rule, .r_flags = (uint8_t)flags, .r_pid = 1,
		.r_tid = role == SPY_PROG ? 2 : 3, .r_fd = 3, .r_errno = err,
		.r_ret = err ? -1 : 0, .r_dev = 1, .r_ino = ino,
		.r_start_ns = (uint64_t)(start_ms * 1e6) + 1000000000ull,
		.r_end_ns = (uint64_t)(end_ms * 1e6) + 1000000000ull,
	};
}

static void check_recs(const struct spy_rec *recs, size_t n, struct spy_summary *s)
{
	struct spy_log log = { .l_recs = malloc(n * sizeof(*recs)), .l_n = n };

	cr_assert(log.l_recs);
	memcpy(log.l_recs, recs, n * sizeof(*recs));
	spy_check(&log, s, NULL, 0);
	spy_free(&log);
}

/* Where a failed commit counts as done (ext4), a request held across
 * another inode's failure and covered only after it is not proven durable,
 * and it may fail for that failure; where each sync answers for itself (an
 * xfs file, btrfs), it is, and it may fail only for its own inode's failed
 * call or for a failure the kernel made (not one the spy injected). */
Test(spy, the_failure_rule_follows_the_filesystem)
{
	static const int rules[] = { SPY_RULE_HELD, SPY_RULE_OWN };
	struct spy_summary s;

	for (size_t i = 0; i < 2; i++) {
		int rule = rules[i];
		bool held = rule == SPY_RULE_HELD;
		/* request on 1, held 40 ms; inode 2's real call fails at 10-11 ms;
		 * inode 1's own real call succeeds at 20-30 ms */
		struct spy_rec covered_late[] = {
			rec(SPY_PROG, 1, rule, 0, 40, 0, 0),
			rec(SPY_REAL, 2, rule, 10, 11, EIO, SPY_F_INJECTED),
			rec(SPY_REAL, 1, rule, 20, 30, 0, 0),
		};
		/* a request whose own real call succeeded fails with EIO while
		 * inode 2's real call failed, injected or by the kernel */
		struct spy_rec failed_for_another[] = {
			rec(SPY_PROG, 1, rule, 0, 20, EIO, 0),
			rec(SPY_REAL, 1, rule, 1, 19, 0, 0),
			rec(SPY_REAL, 2, rule, 5, 6, EIO, SPY_F_INJECTED),
		};

		check_recs(covered_late, 3, &s);
		cr_expect_eq(s.s_violations, held ? 1 : 0, "rule %d: violations=%zu", rule,
			     s.s_violations);
		cr_expect_eq(s.s_hidden, held ? 1 : 0, "rule %d: hidden=%zu", rule, s.s_hidden);

		check_recs(failed_for_another, 3, &s);
		cr_expect_eq(s.s_unexplained_fail, held ? 0 : 1,
			     "rule %d, injected failure of another inode: unexplained=%zu", rule,
			     s.s_unexplained_fail);
		failed_for_another[2].r_flags = 0;
		check_recs(failed_for_another, 3, &s);
		cr_expect_eq(s.s_unexplained_fail, 0,
			     "rule %d, the kernel's failure of another inode: unexplained=%zu", rule,
			     s.s_unexplained_fail);
		/* its own inode's failed call explains it everywhere */
		failed_for_another[2].r_ino = 1;
		failed_for_another[2].r_flags = SPY_F_INJECTED;
		check_recs(failed_for_another, 3, &s);
		cr_expect_eq(s.s_unexplained_fail, 0, "rule %d, own inode: unexplained=%zu", rule,
			     s.s_unexplained_fail);
	}
}
