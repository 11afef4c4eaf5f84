// SPDX-License-Identifier: LGPL-2.1-or-later
/* What a program can observe besides durability: errno and error results as
 * on the bare kernel, F_GETFL and the sync flag across dup/close/reuse/exec,
 * LIBGC_DISABLE as a pass-through, and one clear line per bad variable. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/e2e/e2e.h"

TestSuite(semantics, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

/* Reports the first line where @a and @b differ. */
static void expect_same_lines(const char *a, const char *b, const char *what)
{
	const char *pa = a, *pb = b;
	int line = 1;

	while (*pa && *pb) {
		size_t la = strcspn(pa, "\n"), lb = strcspn(pb, "\n");

		if (la != lb || strncmp(pa, pb, la)) {
			cr_expect_fail("%s: line %d differs:\n  bare:    %.*s\n  library: %.*s",
				       what, line, (int)la, pa, (int)lb, pb);
			return;
		}
		pa += la + (pa[la] == '\n');
		pb += lb + (pb[lb] == '\n');
		line++;
	}
	cr_expect(!*pa && !*pb, "%s: outputs differ in length at line %d", what, line);
}

Test(semantics, errors_and_errno_match_the_bare_kernel)
{
	static const char *const keep[] = { "LIBGC_OSYNC=keep", NULL };
	static const char *const fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=500", NULL };
	const char *argv[] = { e2e_prog("errnos"), e2e_dir(), NULL };
	struct e2e_run bare, lib;

	e2e_run(&bare, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&bare, "errnos, bare");
	cr_assert(strstr(bare.out, "failures=0"), "the bare kernel itself disagrees:\n%s", bare.err);

	e2e_run(&lib, PRE_GC, NULL, 30, argv);
	e2e_expect_ok(&lib, "errnos under the library");
	expect_same_lines(bare.out, lib.out, "errnos (default settings)");
	e2e_run_free(&lib);

	e2e_run(&lib, PRE_GC, keep, 30, argv);
	e2e_expect_ok(&lib, "errnos, LIBGC_OSYNC=keep");
	expect_same_lines(bare.out, lib.out, "errnos (LIBGC_OSYNC=keep)");
	e2e_run_free(&lib);

	e2e_run(&lib, PRE_GC, fixed, 30, argv);
	e2e_expect_ok(&lib, "errnos, policy fixed");
	expect_same_lines(bare.out, lib.out, "errnos (LIBGC_POLICY=fixed)");
	e2e_run_free(&lib);
}

/* Checks one fdsync run: exit 0, every sync write covered and seen as one,
 * no sync at all on the inodes it says must not get any. */
static void fdsync_case(const char *stack, const char *const *env, const char *what)
{
	const char *argv[] = { e2e_prog("fdsync"), e2e_dir(), NULL };
	struct spy_summary s;
	struct spy_log log;
	struct e2e_run r;
	const char *p;
	long want;

	e2e_run_spied(&r, &s, stack, env, 30, argv, what);
	e2e_expect_ok(&r, what);
	want = e2e_out_long(r.out, "sync_writes");
	cr_expect(want > 10, "%s: %s", what, r.out);
	cr_expect_eq(s.s_violations, 0, "%s: %zu sync writes not covered", what, s.s_violations);
	cr_expect_eq((long)s.s_prog, want,
		     "%s: the outer spy saw %zu synchronous writes, the program made %ld",
		     what, s.s_prog, want);
	cr_assert_eq(spy_load(e2e_spy_log(), &log), 0);
	for (p = strstr(r.out, "nosync="); p; p = strstr(p + 1, "nosync=")) {
		unsigned long long dev, ino;

		cr_assert_eq(sscanf(p, "nosync=%llu:%llu", &dev, &ino), 2);
		cr_expect_eq(spy_count(&log, SPY_REAL, 0, dev, ino), 0,
			     "%s: %zu real syncs on inode %llu, a plain file on a reused fd number",
			     what, spy_count(&log, SPY_REAL, 0, dev, ino), ino);
		cr_expect_eq(spy_count(&log, SPY_PROG, 0, dev, ino), 0,
			     "%s: writes to plain inode %llu seen as synchronous", what, ino);
	}
	spy_free(&log);
	e2e_run_free(&r);
}

Test(semantics, sync_flag_follows_descriptions)
{
	static const char *const keep[] = { "LIBGC_OSYNC=keep", NULL };
	static const char *const fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=300", NULL };

	fdsync_case(PRE_SPY, NULL, "fdsync, bare");
	fdsync_case(PRE_SPY_GC, NULL, "fdsync under the library");
	fdsync_case(PRE_SPY_GC, fixed, "fdsync, policy fixed");
	fdsync_case(PRE_SPY_GC, keep, "fdsync, LIBGC_OSYNC=keep");
}

/* An O_DSYNC descriptor inherited across exec is still synchronous there. */
Test(semantics, sync_flag_survives_exec)
{
	const char *argv[] = { e2e_prog("fdsync"), "-x", e2e_dir(), NULL };
	static const char *const stacks[] = { PRE_SPY, PRE_SPY_GC };

	for (size_t i = 0; i < 2; i++) {
		struct spy_summary s;
		struct e2e_run r;

		e2e_run_spied(&r, &s, stacks[i], NULL, 30, argv, "fdsync -x");
		e2e_expect_ok(&r, stacks[i]);
		cr_expect_eq(s.s_prog, 3, "%s: %zu synchronous writes seen after exec, want 3",
			     stacks[i], s.s_prog);
		cr_expect_eq(s.s_violations, 0, "%s", stacks[i]);
		e2e_run_free(&r);
	}
}

/* LIBGC_DISABLE=1: every request is the real call, unchanged. */
Test(semantics, disable_is_a_pass_through)
{
	static const char *const off[] = { "LIBGC_DISABLE=1", "LIBGC_POLICY=fixed",
					   "LIBGC_WAIT_US=2000", NULL };
	static const char *const modes[] = { "fsync", "fdatasync", "odsync", "rwf_dsync" };

	for (size_t m = 0; m < 4; m++) {
		const char *argv[] = { e2e_prog("durable"), "-D", e2e_dir(), "-m", modes[m],
				       "-f", "shared", "-t", "8", "-n", "4", NULL };
		struct spy_summary s;
		struct e2e_run r;

		e2e_run_spied(&r, &s, PRE_SPY_GC, off, 30, argv, modes[m]);
		e2e_expect_ok(&r, modes[m]);
		cr_expect_eq(s.s_prog, 32, "%s: %zu requests", modes[m], s.s_prog);
		for (int k = SPY_FSYNC; k <= SPY_WRITE_DSYNC; k++)
			cr_expect_eq(s.s_real_by_kind[k], s.s_prog_by_kind[k],
				     "%s: disabled, yet %zu real %s for %zu program %s",
				     modes[m], s.s_real_by_kind[k], spy_kind_name(k),
				     s.s_prog_by_kind[k], spy_kind_name(k));
		cr_expect_eq(s.s_violations, 0);
		e2e_run_free(&r);
	}
}

struct bad_var {
	const char *var;	/* NAME=VALUE */
};

static size_t count_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p; p++)
		if (*p == '\n')
			n++;
	if (*text && text[strlen(text) - 1] != '\n')
		n++;
	return n;
}

/* Runs durable with @env; expects success, durability, and @lines lines on
 * stderr, each naming one of the variables in @env. */
static void env_case(const char *const *env, size_t lines)
{
	const char *argv[] = { e2e_prog("durable"), "-D", e2e_dir(), "-m", "odsync",
			       "-f", "shared", "-t", "4", "-n", "4", NULL };
	struct spy_summary s;
	struct e2e_run r;

	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, argv, env[0]);
	e2e_expect_ok(&r, env[0]);
	cr_expect_eq(e2e_out_long(r.out, "ok"), 16, "%s: %s", env[0], r.out);
	cr_expect_eq(s.s_violations, 0, "%s", env[0]);
	cr_expect_eq(count_lines(r.err), lines, "%s: want %zu line(s) on stderr, got:\n%s",
		     env[0], lines, r.err);
	for (size_t i = 0; env[i] && lines; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(env[i], "="), env[i]);
		cr_expect(strstr(r.err, name), "stderr does not name %s:\n%s", name, r.err);
	}
	e2e_run_free(&r);
}

Test(semantics, bad_values_warn_once_and_run)
{
	static const char *const bad[] = {
		"LIBGC_POLICY=bogus", "LIBGC_MAX_WAIT_US=abc", "LIBGC_MIN_WAIT_US=-5",
		"LIBGC_WAIT_PCT=lots", "LIBGC_WAIT_US=12x", "LIBGC_SIBLINGS=many",
		"LIBGC_OSYNC=maybe", "LIBGC_STAGE=sometimes", "LIBGC_LOG=loud",
		"LIBGC_SHARE=everyone", "LIBGC_DISABLE=yes", "LIBGC_REPORT=relative/path",
		"LIBGC_MAX_WAIT_US=99999999999",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *env[] = { bad[i], NULL };

		env_case(env, 1);
	}
	{
		const char *env[] = { "LIBGC_POLICY=jbd3", "LIBGC_OSYNC=never", NULL };

		env_case(env, 2);
	}
	{
		/* each value fine alone, contradictory together: one line */
		const char *env[] = { "LIBGC_MIN_WAIT_US=5000", "LIBGC_MAX_WAIT_US=100", NULL };

		env_case(env, 1);
	}
}

/* A daemon whose data file landed on descriptor 2 (it closed its standard
 * ones first, or started with 2 closed): a warning of the library's (a bad
 * value here) or its exit report must not be written into the file. The
 * file holds the records alone, as bare. */
Test(semantics, no_message_into_a_file_on_descriptor_2)
{
	static const char *const env[] = { "LIBGC_WAIT_US=12x", "LIBGC_REPORT=1", NULL };
	static const char *const hows[] = { "close", "dup", "exec" };
	const char *data = e2e_path("fd2data");

	for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
		const char *direct[] = { e2e_prog("fd2data"), hows[i], e2e_dir(), NULL };
		/* exec: descriptor 2 closed before the program starts */
		const char *closed[] = { "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&-",
					 e2e_prog("fd2data"), hows[i], e2e_dir(), NULL };
		const char *const *argv = strcmp(hows[i], "exec") ? direct : closed;
		struct e2e_run r;
		char *got;

		e2e_run(&r, PRE_GC, env, 30, argv);
		e2e_expect_ok(&r, hows[i]);
		got = e2e_slurp(data);
		cr_expect(strstr(r.out, "fd=2"), "%s: the data file is not on 2: %s", hows[i],
			  r.out);
		cr_expect_str_eq(got, "record\nrecord\nrecord\n", "%s: the data file holds:\n%s",
				 hows[i], got);
		free(got);
		e2e_run_free(&r);
	}
}

Test(semantics, good_values_are_silent)
{
	static const char *const good[][4] = {
		{ "LIBGC_POLICY=adaptive", "LIBGC_MAX_WAIT_US=5000", "LIBGC_WAIT_PCT=50", NULL },
		{ "LIBGC_POLICY=jbd2", "LIBGC_MIN_WAIT_US=0", "LIBGC_MAX_WAIT_US=2000", NULL },
		{ "LIBGC_POLICY=siblings", "LIBGC_SIBLINGS=3", "LIBGC_WAIT_US=100", NULL },
		{ "LIBGC_OSYNC=convert", "LIBGC_STAGE=never", "LIBGC_LOG=error", NULL },
		{ "LIBGC_SHARE=process", "LIBGC_DISABLE=0", "LIBGC_REPORT=0", NULL },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		env_case(good[i], 0);
}

/* LIBGC_LOG=trace writes one line per commit, as many as the exit report
 * counts, each with its requests; and nothing else is lost: every request
 * still completes durably. */
Test(semantics, trace_logs_every_commit)
{
	static const char *const env[] = { "LIBGC_LOG=trace", "LIBGC_REPORT=kv",
					   "LIBGC_PROBE=0", NULL };
	const char *argv[] = { e2e_prog("durable"), "-D", e2e_dir(), "-m", "fsync",
			       "-f", "shared", "-t", "4", "-n", "25", NULL };
	struct spy_summary s;
	struct e2e_run r;
	long commits, requests = 0, n, lines = 0;
	const char *p;

	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, argv, "trace");
	e2e_expect_ok(&r, "trace");
	cr_expect_eq(e2e_out_long(r.out, "ok"), 100, "%s", r.out);
	cr_expect_eq(s.s_violations, 0);
	commits = e2e_out_long(r.err, "commits");
	cr_assert_gt(commits, 0, "grouped requests make commits:\n%s", r.err);
	for (p = r.err; (p = strstr(p, ": commit ")); p++) {
		const char *q = strchr(p + 9, ':'), *o = strstr(p, " open_us=");
		unsigned long long open_us, wait_us;

		cr_assert(q && sscanf(q, ": requests=%ld", &n) == 1, "bad trace line: %.80s", p);
		cr_expect_geq(n, 1, "a commit of no request: %.80s", p);
		/* the wait for joiners is a part of the transaction's life */
		cr_assert(o && sscanf(o, " open_us=%llu wait_us=%llu", &open_us, &wait_us) == 2,
			  "no open_us= wait_us= in: %.120s", p);
		cr_expect_leq(wait_us, open_us, "waited longer than open: %.120s", p);
		requests += n;
		lines++;
	}
	cr_expect_eq(lines, commits, "%ld commit lines, report counts %ld:\n%s", lines, commits,
		     r.err);
	cr_expect_eq(requests, e2e_out_long(r.err, "batched"),
		     "the lines' requests add up to the report's batched count");
	e2e_run_free(&r);
}

/* Writes since the program's request whose durability the kernel flag, or
 * else real syncs on the inode, must account for. */
static void expect_synced_route(const char *out, const char *route, const char *count_key,
				const char *stack)
{
	unsigned long long dev = 0, ino = 0;
	char key[64], kkey[64];
	struct spy_log log;
	const char *p;
	size_t syncs;
	long n;

	snprintf(key, sizeof(key), "ino_%s=", route);
	snprintf(kkey, sizeof(kkey), "%s_kernel_dsync", route);
	p = strstr(out, key);
	cr_assert(p && sscanf(p + strlen(key), "%llu:%llu", &dev, &ino) == 2, "%s", out);
	n = e2e_out_long(out, count_key);
	cr_assert_eq(spy_load(e2e_spy_log(), &log), 0);
	syncs = spy_count(&log, SPY_REAL, SPY_FSYNC, dev, ino) +
		spy_count(&log, SPY_REAL, SPY_FDATASYNC, dev, ino);
	spy_free(&log);
	cr_expect(e2e_out_long(out, kkey) == 1 || (long)syncs >= n,
		  "%s: %ld %s writes to an O_DSYNC descriptor; the kernel flag was dropped and %zu real syncs followed: not durable",
		  stack, n, route, syncs);
}

/* O_DSYNC descriptors written through stdio and sendfile: the writes must
 * still be durable, and stdio's close (glibc's internal close) must not
 * leave sync state on the number for the next descriptor that gets it. */
Test(semantics, o_dsync_writes_the_library_does_not_see)
{
	static const char *const stacks[] = { PRE_SPY, PRE_SPY_GC };
	const char *argv[] = { e2e_prog("stdiofd"), e2e_dir(), NULL };

	for (size_t i = 0; i < 2; i++) {
		struct spy_summary s;
		struct e2e_run r;

		e2e_run_spied(&r, &s, stacks[i], NULL, 30, argv, "stdiofd");
		e2e_expect_ok(&r, stacks[i]);
		expect_synced_route(r.out, "stdio", "flushes", stacks[i]);
		expect_synced_route(r.out, "sendfile", "sendfiles", stacks[i]);
		cr_assert_eq(e2e_out_long(r.out, "reused"), 1, "%s: %s", stacks[i], r.out);
		cr_expect_eq(e2e_out_long(r.out, "socket_write_ok"), 1,
			     "%s: a socket reusing the number of the fclose'd O_DSYNC descriptor cannot be written: %s",
			     stacks[i], r.err);
		cr_expect_eq(e2e_out_long(r.out, "socket_flags_ok"), 1,
			     "%s: F_GETFL shows O_DSYNC on a socket that reused the number", stacks[i]);
		e2e_run_free(&r);
	}
}

/* A process at its descriptor limit: the library needs a descriptor for a
 * moment to share commits and has none, so it groups within the process;
 * the program sees what it sees bare, and the one line on stderr says why
 * (it once blamed a symlink or a permission). */
Test(semantics, a_process_out_of_descriptors_syncs_as_bare)
{
	const char *argv[] = { e2e_prog("lowfd"), e2e_dir(), NULL };
	static const char *const env[] = { "LIBGC_SHARE=user", NULL };
	struct e2e_run bare, gc;

	e2e_run_as_bare(&bare, &gc, env, argv, "lowfd");
	cr_expect(strstr(bare.out, "fd=3 write=3 fsync=0 next=EMFILE"), "bare: %s%s", bare.out,
		  bare.err);
	cr_expect(!gc.err[0] || strstr(gc.err, "no descriptor free"), "stderr: %s", gc.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

/* Each converted O_DSYNC descriptor has the description the program
 * opened held beside it (to carry a writeback error back at a hand-back).
 * Those count against RLIMIT_NOFILE: at the limit, an open, dup or pipe
 * that fails with EMFILE gives the held ones back and is made again, so
 * the program gets as many descriptors as bare. Without that: 26 files
 * where bare opened 36. */
Test(semantics, a_process_at_its_descriptor_limit_gets_as_many_as_bare)
{
	const char *argv[] = { e2e_prog("lowfd"), e2e_dir(), "many", NULL };
	struct e2e_run bare, gc;

	e2e_run_as_bare(&bare, &gc, NULL, argv, "lowfd many");
	cr_expect(strstr(bare.out, "dup=EMFILE pipe=EMFILE"), "bare: %s%s", bare.out, bare.err);
	cr_expect(!gc.err[0] || strstr(gc.err, "no descriptor free"), "stderr: %s", gc.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
	/* Making room closes held descriptions: never one of a file this
	 * process holds a record lock on (the close would drop the lock;
	 * "locked=0" when the first one was taken unasked). That one stays,
	 * so here the program gets one descriptor fewer than bare. */
	argv[2] = "locked";
	e2e_run(&bare, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&bare, "bare");
	e2e_run(&gc, PRE_GC, NULL, 30, argv);
	e2e_expect_ok(&gc, "libgc");
	cr_expect(strstr(bare.out, " locked=1"), "bare: %s%s", bare.out, bare.err);
	cr_expect(strstr(gc.out, " locked=1"), "libgc: %s%s", gc.out, gc.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

/* A server at its descriptor limit, with converted O_DSYNC files whose
 * held descriptions take numbers of its table: accept, socket and
 * socketpair filled 8 numbers fewer than bare (16 accepted against 24,
 * and as many sockets), since only the open, dup and pipe family made
 * room. */
Test(semantics, a_server_at_its_descriptor_limit_accepts_as_many_as_bare)
{
	const char *argv[] = { e2e_prog("lowfd"), e2e_dir(), "socks", NULL };
	struct e2e_run bare, gc;
	int a = 0, so = 0, pa = 0;

	e2e_run_as_bare(&bare, &gc, NULL, argv, "lowfd socks");
	cr_expect(sscanf(bare.out, "accepted=%d sockets=%d pairs=%d", &a, &so, &pa) == 3 &&
			  a > 16 && so > 16 && pa > 8,
		  "bare: %s%s", bare.out, bare.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

/* A converted O_DSYNC open once closed the description the program opened
 * at once (its twin took the number), and an inotify watcher heard
 * IN_CLOSE_WRITE while the program was still writing ("before_close=1").
 * That description is held now until the program's close. */
Test(semantics, inotify_hears_close_write_at_the_programs_close)
{
	e2e_same_as_bare("inowatch", NULL, "before_close=0 after_close=1\n");
}

/* A write lease is granted only while nobody else has the file open. A
 * converted O_DSYNC descriptor's file is open twice (the held description
 * the program opened, and the twin): F_SETLEASE gives it its flag back
 * first. Without that, "lease=Resource temporarily unavailable". */
Test(semantics, a_write_lease_on_an_o_dsync_file_is_granted_as_bare)
{
	e2e_same_as_bare("lease", NULL, "lease=0 getfl=1 wrote=4096\n");
}

/* Threads opening, copying and closing O_DSYNC descriptors, whose
 * numbers pass from one to the next: every held description goes with
 * its descriptor. A close's late clearing once took the next open's, and
 * a slot's two halves were written apart (dozens left open). */
Test(semantics, held_descriptions_go_with_their_descriptors_under_threads)
{
	e2e_same_as_bare("fdchurn", NULL, "opens=16000 writes=16000 left=0\n");
}

/* A program that closes descriptors with raw system calls closes the
 * library's own too, unseen, and may put a file of its own at such a
 * number. The library once closed that file when the descriptor whose
 * held description had been there was closed ("kept=0"). */
/* Copies of converted descriptors. With the library's 64 held
 * descriptions in use, a dup() of a converted number once got a new
 * description of the file instead of the program's (its own offset): the
 * writes through the two numbers overwrote each other ("BBBBCCCC"). And
 * a dup2() onto a free number at the floor (256, 257) once had the
 * library take that very number for the copy's held description just
 * before the real call put the program's there: the program's close of
 * it then failed with EBADF, and the number stayed open. */
Test(semantics, copies_of_converted_descriptors_are_the_programs_as_bare)
{
	e2e_same_as_bare("heldroom", "full", "content=AAAABBBBCCCC off=12,12\n");
	e2e_same_as_bare("heldroom", "dup2", "close=0,0 write=EBADF,EBADF\n");
	/* closefrom() above every number the library keeps went round the
	 * entries: the one of a converted 500 it closed stayed, and a plain
	 * copy put at 500 later was taken for converted (F_GETFL: O_DSYNC) */
	e2e_same_as_bare("heldroom", "closefrom", "getfl=0\n");
	/* two numbers of one description given their flag back (by
	 * unshare(CLONE_FILES), or for an exec'd child without the library)
	 * once got a description each: the second write overwrote the
	 * first ("content=bb", "content=Y") */
	e2e_same_as_bare("heldroom", "unshare", "content=aabb\n");
	e2e_same_as_bare("heldroom", "exec", "content=XY\n");
}

/* For a spawn a converted descriptor gets its flag back, and the library
 * keeps the converted description meanwhile. It once kept it (and the
 * one it gave back) at the program's next free numbers: popen() then got
 * 6 where bare gets 4, and a file action that dup2()s a number the
 * program does not have succeeded, handing the child a description
 * without O_DSYNC. */
Test(semantics, a_spawn_takes_no_number_of_the_programs)
{
	const char *argv[] = { e2e_prog("heldroom"), e2e_dir(), "spawn", NULL };
	struct e2e_run bare, gc;

	/* the numbers are the test runner's next free ones: as bare */
	e2e_run_as_bare(&bare, &gc, NULL, argv, "spawn");
	cr_expect(strstr(bare.out, " spawn=EBADF\n"), "bare: %s%s", bare.out, bare.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

/* A sandbox whose seccomp allow-list does not name sync_file_range(2)
 * answers it with EPERM. The program never calls it; the library asks a
 * descriptor with it for a writeback error not reported yet, and once
 * passed the EPERM on as the answer of requests that shared a commit (4
 * or 5 of 84 failed). Now it cannot ask, and each request makes its own
 * real call, as bare; grouped (a fixed wait) and by default. */
Test(semantics, a_sandbox_that_refuses_sync_file_range_syncs_as_bare)
{
	static const char *const fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000", NULL };
	const char *argv[] = { e2e_prog("sfrdenied"), e2e_dir(), NULL };
	struct e2e_run bare, gc;

	e2e_run_as_bare(&bare, &gc, fixed, argv, "grouped");
	cr_expect_str_eq(bare.out, "errors=0\n", "bare: %s", bare.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
	e2e_same_as_bare("sfrdenied", NULL, "errors=0\n");
}

/* A process whose files may not grow past 8 KiB (RLIMIT_FSIZE): the
 * library once grew its own files past that (the shared segment, 19 KB;
 * the statistics file, with a report asked for), and the kernel's
 * SIGXFSZ killed the program. Now it makes neither there. */
Test(semantics, a_process_with_a_file_size_limit_runs_as_bare)
{
	static const char *const report[] = { "LIBGC_REPORT=1", NULL };
	const char *argv[] = { e2e_prog("fsizecap"), e2e_dir(), NULL };
	struct e2e_run bare, gc;

	e2e_same_as_bare("fsizecap", NULL, "fsync=0\n");
	e2e_run_as_bare(&bare, &gc, report, argv, "with a report");
	cr_expect_str_eq(bare.out, "fsync=0\n", "bare: %s", bare.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

Test(semantics, a_number_the_program_took_back_is_never_closed_for_it)
{
	e2e_same_as_bare("rawclose", NULL, "kept=1\n");
}

/* A thread in seccomp's strict mode may call read, write and exit only;
 * anything else kills it. The library once made the dirty limiter's
 * fstat there after 64 KiB (the thread died with 60 KiB of its 1 MiB
 * written), and could not sync for a descriptor it had converted. Now a
 * thread about to enter strict mode has every converted descriptor given
 * its flag back, and nothing of the library's own runs in it; the program
 * sees what it sees bare, warm (the library in use before) and cold. */
Test(semantics, a_thread_in_seccomp_strict_mode_runs_as_bare)
{
	static const char *const modes[] = { "warm", "cold" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *argv[] = { e2e_prog("strict"), e2e_dir(), modes[i], NULL };
		struct e2e_run bare, gc;

		e2e_run_as_bare(&bare, &gc, NULL, argv, modes[i]);
		cr_expect(strstr(bare.out, "plain=1048576 "), "bare %s: %s%s", modes[i], bare.out,
			  bare.err);
		e2e_run_free(&bare);
		e2e_run_free(&gc);
	}
}

/* ...but a converted descriptor that holds a record lock cannot be given
 * its flag back (the swap of its description would drop the lock): the
 * prctl fails, with a line that says why, rather than leave a thread the
 * library could not sync for. Bare it succeeds. */
Test(semantics, strict_mode_with_a_locked_converted_descriptor_fails_the_prctl)
{
	const char *argv[] = { e2e_prog("strict"), e2e_dir(), "locked", NULL };
	struct e2e_run bare, gc;

	e2e_run(&bare, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&bare, "bare");
	cr_expect(strstr(bare.out, "plain=1048576 dsync=8192 flag=1"), "bare: %s%s", bare.out,
		  bare.err);
	e2e_run(&gc, PRE_GC, NULL, 30, argv);
	cr_expect(gc.code == 1 && !gc.out[0], "libgc: code %d: %s", gc.code, gc.out);
	cr_expect(strstr(gc.err, "record lock") && strstr(gc.err, "strict: prctl: No locks available"),
		  "stderr: %s", gc.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}
