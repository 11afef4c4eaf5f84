// SPDX-License-Identifier: LGPL-2.1-or-later
/* Every interposed libc name is reached and counted (shim/syms.def against the
 * exit report), the report itself (keys, one line per process, stderr form),
 * and synchronous I/O from another library's constructor. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "core/stats.h"
#include "tests/e2e/e2e.h"

TestSuite(symbols, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

static const char *const syms[] = {
#define SYM(ret, name, args) #name,
#include "shim/syms.def"
#undef SYM
};

static const char *const stat_keys[] = {
#define GC_STAT_NAME(n) #n,
	GC_STATS(GC_STAT_NAME)
#undef GC_STAT_NAME
};

Test(symbols, every_interposed_symbol_is_reached_and_counted)
{
	const char *report = e2e_path("report");
	char *envs;
	const char *env[] = { NULL, NULL };
	const char *argv[] = { e2e_prog("symcov"), e2e_dir(), NULL };
	struct e2e_run r;
	char *text;

	cr_assert(asprintf(&envs, "LIBGC_REPORT=%s", report) > 0);
	env[0] = envs;
	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "symcov under the library");
	text = e2e_slurp(report);
	cr_assert_eq(e2e_report_lines(text), 1, "want one report line, got:\n%s", text);
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		unsigned long long n;
		char key[128];

		/* a process ends once: test_report checks both exits */
		if (!strcmp(syms[i], "_exit") || !strcmp(syms[i], "_Exit"))
			continue;
		snprintf(key, sizeof(key), "sym.%s", syms[i]);
		cr_expect(e2e_report_get(text, r.pid, key, &n) && n >= 1,
			  "%s was called by symcov but the report has no %s>=1:\n%s",
			  syms[i], key, text);
	}
	free(envs);
}

Test(symbols, report_counts_what_the_program_asked)
{
	const char *report = e2e_path("report");
	char *envs;
	const char *env[] = { NULL, NULL };
	const char *argv[] = { e2e_prog("symcov"), e2e_dir(), NULL };
	unsigned long long n;
	struct e2e_run r;
	char *text;

	cr_assert(asprintf(&envs, "LIBGC_REPORT=%s", report) > 0);
	env[0] = envs;
	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "symcov");
	text = e2e_slurp(report);
	for (size_t i = 0; i < sizeof(stat_keys) / sizeof(stat_keys[0]); i++)
		cr_expect(e2e_report_get(text, r.pid, stat_keys[i], &n),
			  "report lacks %s:\n%s", stat_keys[i], text);
	/* symcov makes exactly: 1 fsync, 1 fdatasync, 8 synchronous writes
	 * (O_DSYNC write, O_SYNC pwrite, RWF_DSYNC pwritev2, O_DSYNC dup
	 * write, and sendfile, sendfile64, copy_file_range and splice into
	 * the O_DSYNC file), 1 each of sync_file_range, syncfs, sync, msync. */
	cr_expect(e2e_report_get(text, r.pid, "req_fsync", &n) && n == 1, "req_fsync=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "req_fdatasync", &n) && n == 1, "req_fdatasync=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "req_osync", &n) && n == 8, "req_osync=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "pass_sync_file_range", &n) && n == 1,
		  "pass_sync_file_range=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "pass_syncfs", &n) && n == 1, "pass_syncfs=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "pass_sync", &n) && n == 1, "pass_sync=%llu", n);
	cr_expect(e2e_report_get(text, r.pid, "pass_msync", &n) && n == 1, "pass_msync=%llu", n);
	free(envs);
}

Test(symbols, report_to_stderr_is_one_line)
{
	static const char *const env[] = { "LIBGC_REPORT=kv", NULL };
	const char *argv[] = { e2e_prog("symcov"), e2e_dir(), NULL };
	unsigned long long n;
	struct e2e_run r;

	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "symcov");
	cr_expect_eq(e2e_report_lines(r.err), 1, "stderr:\n%s", r.err);
	cr_expect(e2e_report_get(r.err, r.pid, "sym.fsync", &n) && n >= 1, "stderr:\n%s", r.err);
}

Test(symbols, no_report_unless_asked)
{
	const char *argv[] = { e2e_prog("symcov"), e2e_dir(), NULL };
	struct e2e_run r;

	e2e_run(&r, PRE_GC, NULL, 60, argv);
	e2e_expect_ok(&r, "symcov");
	cr_expect_eq(e2e_report_lines(r.err), 0, "stderr:\n%s", r.err);
	cr_expect_str_empty(r.err, "the library printed without being asked:\n%s", r.err);
}

/* Every symbol under the spies: what symcov made durable really is. */
Test(symbols, every_symbol_durable_under_the_spies)
{
	const char *log = e2e_path("spy.log");
	const char *argv[] = { e2e_prog("symcov"), e2e_dir(), NULL };
	const char *env[] = { NULL, NULL };
	struct spy_summary s;
	struct e2e_run r;
	char *envs;

	cr_assert(asprintf(&envs, "SPY_LOG=%s", log) > 0);
	env[0] = envs;
	e2e_run(&r, PRE_SPY_GC, env, 60, argv);
	e2e_expect_ok(&r, "symcov");
	e2e_spy_check(log, &s, "symcov");
	cr_expect_eq(s.s_violations, 0);
	/* 1 fsync, 1 fdatasync, 4 synchronous writes, and sendfile,
	 * sendfile64, copy_file_range and splice into the O_DSYNC file */
	cr_expect_eq(s.s_prog, 10, "outer spy saw %zu sync requests, want 10", s.s_prog);
	free(envs);
}

/* A library constructor that opens O_DSYNC, writes and fsyncs before main
 * (and maybe before the library's own constructor). */
Test(symbols, io_from_another_librarys_constructor)
{
	const char *report = e2e_path("report");
	const char *log = e2e_path("spy.log");
	const char *argv[] = { e2e_prog("ctorprog"), e2e_dir(), NULL };
	char *direnv, *repenv, *logenv;
	unsigned long long n;
	struct spy_summary s;
	struct e2e_run r;
	char *text;

	cr_assert(asprintf(&direnv, "CTOR_DIR=%s", e2e_dir()) > 0);
	cr_assert(asprintf(&repenv, "LIBGC_REPORT=%s", report) > 0);
	cr_assert(asprintf(&logenv, "SPY_LOG=%s", log) > 0);
	{
		const char *env[] = { direnv, repenv, NULL };

		e2e_run(&r, PRE_GC, env, 30, argv);
	}
	e2e_expect_ok(&r, "ctorprog under the library");
	cr_expect_eq(e2e_out_long(r.out, "ctor_fsyncs"), 3, "%s", r.out);
	text = e2e_slurp(report);
	cr_expect_eq(e2e_report_lines(text), 1, "report:\n%s", text);
	cr_expect(e2e_report_get(text, r.pid, "sym.fdatasync", &n) && n == 1,
		  "main's fdatasync not counted:\n%s", text);
	/* The constructor's calls must be right; counting them is a bonus,
	 * but a count, when present, must be exact. */
	if (e2e_report_get(text, r.pid, "sym.fsync", &n))
		cr_expect_eq(n, 4, "constructor fsyncs (3, plus one on a pipe) counted as %llu", n);
	else
		cr_log_info("constructor calls made before the library's init are not counted");
	e2e_run_free(&r);

	{
		const char *env[] = { direnv, logenv, NULL };

		e2e_run(&r, PRE_SPY_GC, env, 30, argv);
	}
	e2e_expect_ok(&r, "ctorprog between the spies");
	e2e_spy_check(log, &s, "ctorprog");
	cr_expect_eq(s.s_violations, 0);
	/* 3 + 1 (pipe, fails) fsyncs, 1 O_DSYNC write, 1 fdatasync */
	cr_expect_eq(s.s_prog, 6, "outer spy saw %zu requests, want 6", s.s_prog);
	cr_expect_eq(s.s_prog_ok, 5);
	free(direnv);
	free(repenv);
	free(logenv);
}

/* Children that leave through exit() report too, each on its own line. */
Test(symbols, one_report_line_per_process)
{
	const char *report = e2e_path("report");
	const char *argv[] = { e2e_prog("forkreport"), e2e_dir(), NULL };
	const char *env[] = { NULL, NULL };
	static const char *const who[] = { "parent", "child0", "child1" };
	struct e2e_run r;
	char *envs, *text;

	cr_assert(asprintf(&envs, "LIBGC_REPORT=%s", report) > 0);
	env[0] = envs;
	e2e_run(&r, PRE_GC, env, 30, argv);
	e2e_expect_ok(&r, "forkreport");
	text = e2e_slurp(report);
	cr_expect_eq(e2e_report_lines(text), 3, "want 3 report lines:\n%s", text);
	for (size_t i = 0; i < 3; i++) {
		long pid = e2e_out_long(r.out, who[i]);
		unsigned long long n;

		cr_expect(pid > 0 && e2e_report_get(text, (int)pid, "req_fsync", &n),
			  "no report line for the %s (pid %ld):\n%s", who[i], pid, text);
		cr_log_info("%s pid %ld: req_fsync=%llu", who[i], pid, n);
	}
	free(envs);
}
