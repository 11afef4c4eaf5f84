// SPDX-License-Identifier: LGPL-2.1-or-later
/* A signal handler that syncs while its thread forks: the handler may run
 * between the atfork handlers (the kernel even runs it in the middle of
 * fork, then restarts the fork), where the library must not hold a lock its
 * own request would wait for. Never hang: the run must end in time. And a
 * handler that syncs on its alternate stack, which the library's calls
 * must not outgrow. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

TestSuite(forksig, .init = e2e_setup, .fini = e2e_teardown, .timeout = 120);

/* Each run loops 1.5 s; a clean one takes about that long. */
#define RUN_DEADLINE_S 8

static void forksig_case(const char *const *env, const char *how, const char *what)
{
	const char *timer[] = { e2e_prog("forksig"), "-s", "1500", "-i", how, e2e_dir(), NULL };
	const char *kill[] = { e2e_prog("forksig"), "-s", "1500", "-k", e2e_dir(), NULL };
	const char *const *argv = strcmp(how, "kill") ? timer : kill;
	struct e2e_run r;

	e2e_run(&r, PRE_GC, env, RUN_DEADLINE_S, argv);
	e2e_expect_ok(&r, what);
	if (r.timed_out) {
		e2e_run_free(&r);
		return;
	}
	cr_expect(e2e_out_long(r.out, "forks") > 0, "%s: no fork completed: %s", what, r.out);
	cr_expect(e2e_out_long(r.out, "handler_syncs") > 0, "%s: the handler never synced: %s",
		  what, r.out);
	cr_log_info("%s: %s", what, r.out);
	e2e_run_free(&r);
}

/* Private domains (LIBGC_SHARE=process) are the ones quiesced for fork; the
 * fixed policy makes every request take the domain's lock. One signal each
 * round, 0-300 us (0-150 us) after it starts: from a one-shot timer, or
 * from another thread with pthread_kill. */
Test(forksig, fsync_in_a_signal_handler_during_fork)
{
	static const char *const priv_fixed[] = { "LIBGC_SHARE=process", "LIBGC_POLICY=fixed",
						  "LIBGC_WAIT_US=200", NULL };
	static const char *const priv_adaptive[] = { "LIBGC_SHARE=process",
						     "LIBGC_POLICY=adaptive", NULL };
	static const struct {
		const char *const *env;
		const char *how;
	} cases[] = { { priv_fixed, "300" }, { priv_fixed, "kill" }, { priv_adaptive, "150" } };
	char what[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool timer = strcmp(cases[i].how, "kill") != 0;

		snprintf(what, sizeof(what), "forksig (%s, %s, %s%s%s)", cases[i].env[0],
			 cases[i].env[1], timer ? "SIGALRM 0-" : "SIGUSR1 by pthread_kill",
			 timer ? cases[i].how : "", timer ? " us into each round" : "");
		forksig_case(cases[i].env, cases[i].how, what);
	}
}

/* The depth the deepest step of tests/e2e/progs/altstack reached, from its
 * "STEP=BYTES ... ok" line; 0 if the line is not there. */
static long deepest(const char *out)
{
	static const char *const steps[] = { "first", "dir", "data", "osync", "again" };
	long most = 0, v;

	if (!strstr(out, " ok"))
		return 0;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		v = e2e_out_long(out, steps[i]);
		if (v <= 0)
			return 0;
		most = v > most ? v : most;
	}
	return most;
}

/* A crash handler that writes and syncs a report runs on an alternate
 * stack (SA_ONSTACK), often SIGSTKSZ (8 KiB) or less. Under libgc its
 * calls may take the library's first steps (the configuration, a domain,
 * the device's lookup, the stats segment): those must fit in 2.5 KiB more
 * than the same calls take bare, where a walk of /sys took 3 KiB a level
 * and snprintf 2 KiB (8000 bytes against 2888 bare). */
Test(forksig, a_handler_on_its_alternate_stack)
{
	const char *argv[] = { e2e_prog("altstack"), e2e_dir(), NULL };
	struct e2e_run bare, gc;
	long b, g;

	e2e_run(&bare, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&bare, "altstack bare");
	e2e_run(&gc, PRE_GC, NULL, 30, argv);
	e2e_expect_ok(&gc, "altstack under libgc");
	b = deepest(bare.out);
	g = deepest(gc.out);
	cr_assert(b > 0 && g > 0, "bare: %s; libgc: %s", bare.out, gc.out);
	cr_expect_leq(g, b + 2560, "the deepest step took %ld bytes under libgc, %ld bare: %s",
		      g, b, gc.out);
	cr_log_info("altstack: bare %s, libgc %s", bare.out, gc.out);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}
