// SPDX-License-Identifier: LGPL-2.1-or-later
/* Invisible until it helps: a process that loads the library and never
 * syncs sees the same system calls, descriptors and files as under an
 * empty preload; one that syncs gets no descriptor in its range, a small
 * stats segment, no libunwind unless call sites are asked for, and one
 * system call per request on the direct path. Each checked from outside
 * (strace, /proc, the segment directory), against the program bare or
 * under an empty preloaded object. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

TestSuite(startup, .init = e2e_setup, .fini = e2e_teardown, .timeout = 120);

static bool have_strace(void)
{
	return access("/usr/bin/strace", X_OK) == 0;
}

static const char *empty_preload(void)
{
	const char *p = e2e_build_path("bench/empty.so");

	cr_assert(access(p, R_OK) == 0, "%s is not built", p);
	return p;
}

/* Runs @argv and every process it makes under strace with @mode ("-qq",
 * or "-c" for a summary), under LD_PRELOAD=@preload when not NULL (passed
 * to the traced program only); returns strace's output. */
static char *strace_run(const char *mode, const char *preload, const char *const *env,
			const char *const *argv, const char *tag)
{
	const char *out = e2e_path(tag);
	char pre[4096];
	const char *sargv[32] = { "/usr/bin/strace", "-f", mode, "-o", out };
	size_t n = 5;
	struct e2e_run r;

	if (preload) {
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", preload);
		sargv[n++] = "-E";
		sargv[n++] = pre;
	}
	for (size_t i = 0; argv[i] && n < 30; i++)
		sargv[n++] = argv[i];
	sargv[n] = NULL;
	e2e_run(&r, PRE_NONE, env, 60, sargv);
	e2e_expect_ok(&r, tag);
	e2e_run_free(&r);
	return e2e_slurp(out);
}

/* The system calls of @argv and of every process it makes, by name, each
 * process's on one line in the order the processes appeared, under
 * LD_PRELOAD=@preload (passed to the traced program only). The loader's
 * mappings (mmap, mprotect, munmap) are left out: a larger object maps
 * more segments, and that is symbol binding's work, not the library's. */
static char *trace_names(const char *preload, const char *const *env, const char *const *argv,
			 const char *tag)
{
	char *text = strace_run("-qq", preload, env, argv, tag), *line, *save = NULL;
	size_t len = 0, cap = 1 << 16;
	struct { int pid; char *names; size_t len; } procs[64];
	int nprocs = 0;
	char *res;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[64];
		int pid, k, i;

		if (sscanf(line, "%d %63[a-z0-9_]", &pid, name) != 2 || strstr(line, "resumed>"))
			continue;
		if (!strcmp(name, "mmap") || !strcmp(name, "mprotect") || !strcmp(name, "munmap"))
			continue;
		for (k = 0; k < nprocs && procs[k].pid != pid; k++)
			;
		if (k == nprocs) {
			cr_assert(nprocs < 64);
			procs[nprocs].pid = pid;
			procs[nprocs].names = calloc(1, 1 << 16);
			procs[nprocs].len = 0;
			nprocs++;
		}
		i = snprintf(procs[k].names + procs[k].len, (1 << 16) - procs[k].len, " %s", name);
		if (i > 0 && procs[k].len + (size_t)i < (1 << 16))
			procs[k].len += (size_t)i;
	}
	res = calloc(1, cap);
	for (int k = 0; k < nprocs; k++) {
		len += (size_t)snprintf(res + len, cap - len, "%s\n", procs[k].names);
		free(procs[k].names);
	}
	free(text);
	return res;
}

/* A process that never syncs makes the system calls it makes under an
 * empty preload, and no other: not one of its own before main, at fork,
 * at exec, or at exit. */
Test(startup, no_system_call_of_its_own)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), NULL };
	char *base, *gc;

	if (!have_strace())
		cr_skip_test("strace is not installed");
	base = trace_names(empty_preload(), NULL, argv, "strace.empty");
	gc = trace_names(e2e_libgc(), NULL, argv, "strace.gc");
	if (strcmp(gc, base)) {
		size_t i = 0, from;

		while (gc[i] && gc[i] == base[i])
			i++;
		from = i > 120 ? i - 120 : 0;
		cr_expect_str_eq(gc, base,
				 "the system calls differ at byte %zu: under libgc ...%.240s\nunder an empty preload ...%.240s",
				 i, gc + from, base + from);
	}
	free(base);
	free(gc);
}

/* One " getpid" dropped from each line of @names: the atfork handler's,
 * which names the process that owns the state from then on (a vfork
 * child of that child, sharing its memory, may be the first to ask). */
static void drop_one_getpid_a_line(char *names)
{
	for (char *line = names; *line;) {
		char *end = strchr(line, '\n'), *g;

		if (!end)
			end = line + strlen(line);
		g = strstr(line, " getpid");
		if (g && g < end && (g[7] == ' ' || g[7] == '\n' || !g[7])) {
			memmove(g, g + 7, strlen(g + 7) + 1);
			end -= 7;
		}
		line = *end ? end + 1 : end;
	}
}

/* A fork child of a process that synced (and so is a member of a shared
 * segment) makes the system calls it makes under an empty preload, but
 * for the handler's getpid, until it syncs itself: whether the segment is
 * still its to use (its pid and time namespaces) is asked at its first
 * request, not by the atfork handler. Asked there, each child read
 * /proc/self/ns/pid, its first lookup under /proc (20-40 us for a fresh
 * pid): a fork that execs at once, as a shell's, make's or git's, paid it
 * for nothing. Every process after the first (the program) is compared. */
Test(startup, a_synced_process_forks_children_that_make_no_call_of_ours)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "sync", "forks=3", NULL };
	char *base, *gc, *b, *g;

	if (!have_strace())
		cr_skip_test("strace is not installed");
	base = trace_names(empty_preload(), NULL, argv, "strace.fork.empty");
	gc = trace_names(e2e_libgc(), NULL, argv, "strace.fork.gc");
	b = strchr(base, '\n');
	g = strchr(gc, '\n');
	cr_assert(b && g, "no process after the first: %s", gc);
	drop_one_getpid_a_line(g + 1);
	cr_expect_str_eq(g + 1, b + 1,
			 "the children's system calls under libgc (one getpid each left out):\n%s\n"
			 "under an empty preload:\n%s",
			 g + 1, b + 1);
	free(base);
	free(gc);
}

/* "fork_faults child=C parent=P" of nosync's forks=N, under @pre. */
static void fork_faults(const char *pre, const char *const *argv, long *child, long *parent)
{
	struct e2e_run r;
	const char *p;

	e2e_run(&r, pre, NULL, 60, argv);
	e2e_expect_ok(&r, "nosync forks=");
	p = strstr(r.out, "fork_faults ");
	cr_assert(p && sscanf(p, "fork_faults child=%ld parent=%ld", child, parent) == 2,
		  "no fork_faults line: %s", r.out);
	e2e_run_free(&r);
}

/* A fork of a process that never synced resets only what it made: the
 * page faults of child and parent are those under an empty preload, give
 * or take a few a fork (the child's first run of the handlers' code, the
 * counter slot of the thread that counted its writes). Resetting every
 * table in each child cost about 60 faults a fork (zeroed counters, locks,
 * device tables), a third more time for a shell's subshell. The least of
 * three runs a side, against the noise of the machine. */
Test(startup, fork_writes_no_page_of_ours)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "forks=200", NULL };
	long bc = LONG_MAX, bp = LONG_MAX, gc_c = LONG_MAX, gc_p = LONG_MAX, c, p;

	for (int k = 0; k < 3; k++) {
		fork_faults(empty_preload(), argv, &c, &p);
		bc = c < bc ? c : bc;
		bp = p < bp ? p : bp;
		fork_faults(e2e_libgc(), argv, &c, &p);
		gc_c = c < gc_c ? c : gc_c;
		gc_p = p < gc_p ? p : gc_p;
	}
	cr_expect(gc_c - bc <= 5 * 200,
		  "200 fork children made %ld page faults under libgc, %ld under an empty preload",
		  gc_c, bc);
	cr_expect(gc_p - bp <= 2 * 200,
		  "the parent of 200 forks made %ld page faults under libgc, %ld under an empty preload",
		  gc_p, bp);
}

/* A fork of a process that synced (a member of a shared segment, with its
 * identity page, counters and domain table made) writes in the child only
 * the pages its handlers must: the start page, the identity page (wiped by
 * the fork), the domain table (the child is no member yet), the counters
 * it resets, and the handlers' code: 4-6 page faults a fork more than
 * under an empty preload on the machine this was written on; 9-10 when
 * the handler also read the pid namespace, stored the pid where only a
 * kernel without MADV_WIPEONFORK reads it, and the counters' base that did
 * not change. The least of three runs a side. */
Test(startup, a_synced_process_forks_children_that_write_few_pages)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "sync", "forks=200", NULL };
	long bc = LONG_MAX, gc_c = LONG_MAX, c, p;

	for (int k = 0; k < 3; k++) {
		fork_faults(empty_preload(), argv, &c, &p);
		bc = c < bc ? c : bc;
		fork_faults(e2e_libgc(), argv, &c, &p);
		gc_c = c < gc_c ? c : gc_c;
	}
	cr_expect(gc_c - bc <= 7 * 200,
		  "200 fork children of a process that synced made %ld page faults under libgc, "
		  "%ld under an empty preload",
		  gc_c, bc);
}

/* "firstwrite_faults=N" of nosync's first write under @pre. */
static long first_write_faults(const char *pre)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "firstwrite", NULL };
	struct e2e_run r;
	const char *p;
	long n;

	e2e_run(&r, pre, NULL, 60, argv);
	e2e_expect_ok(&r, "nosync firstwrite");
	p = strstr(r.out, "firstwrite_faults=");
	cr_assert(p && sscanf(p, "firstwrite_faults=%ld", &n) == 1, "no firstwrite line: %s", r.out);
	e2e_run_free(&r);
	return n;
}

/* A process's first write through the library counts its bytes in the
 * descriptor's slot and in the thread's counters: one page each, zeroed
 * data never touched before, and nothing else new. Read before it was
 * written, the slot's page cost two faults (the zero page mapped, then
 * copied): every process that writes paid one more. The least of seven
 * runs a side: a run now and then also grows the stack by a page. */
Test(startup, a_first_write_faults_once_a_page)
{
	long base = LONG_MAX, gc = LONG_MAX, n;

	for (int k = 0; k < 7; k++) {
		n = first_write_faults(empty_preload());
		base = n < base ? n : base;
		n = first_write_faults(e2e_libgc());
		gc = n < gc ? n : gc;
	}
	cr_expect_leq(gc - base, 2,
		      "a first write made %ld page faults under libgc, %ld under an empty preload",
		      gc, base);
}

/* "syncfork_faults child=C" of nosync's syncforks=N under the library,
 * with @env. */
static long syncfork_faults(const char *const *env, const char *const *argv)
{
	struct e2e_run r;
	const char *p;
	long c;

	e2e_run(&r, "gc", env, 60, argv);
	e2e_expect_ok(&r, "nosync syncforks=");
	p = strstr(r.out, "syncfork_faults ");
	cr_assert(p && sscanf(p, "syncfork_faults child=%ld", &c) == 1,
		  "no syncfork_faults line: %s", r.out);
	e2e_run_free(&r);
	return c;
}

/* An exit report (LIBGC_REPORT=FILE, one line of counters) costs a
 * process that synced once about 16 page faults: its text, its buffer, the
 * counters. It summed the call-site tables too, never written where call
 * sites were not asked for: 40 pages read, each a fault, about 60 faults
 * a report in all (a short process's exit took 70 us more, 2-3% of a
 * maildrop delivery). The least of three runs a side. */
Test(startup, an_exit_report_reads_no_table_it_does_not_print)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "syncforks=50", NULL };
	char rep[4200], env_rep[4300];
	const char *env[] = { env_rep, NULL };
	long plain = LONG_MAX, reported = LONG_MAX, c;
	int lines = 0, ch;
	FILE *f;

	snprintf(rep, sizeof(rep), "%s/report", e2e_dir());
	snprintf(env_rep, sizeof(env_rep), "LIBGC_REPORT=%s", rep);
	for (int k = 0; k < 3; k++) {
		c = syncfork_faults(NULL, argv);
		plain = c < plain ? c : plain;
		unlink(rep);
		c = syncfork_faults(env, argv);
		reported = c < reported ? c : reported;
	}
	f = fopen(rep, "r");
	cr_assert(f, "no report written to %s", rep);
	while ((ch = fgetc(f)) != EOF)
		lines += ch == '\n';
	fclose(f);
	cr_expect(lines >= 50, "%d report lines for 50 children", lines);
	cr_expect(reported - plain <= 25 * 50,
		  "50 children that synced once made %ld page faults with an exit report each, "
		  "%ld without",
		  reported, plain);
}

/* A copy of the library written 4 KiB at a time, in a folder of its own:
 * its page cache holds single pages. A file written in large pieces (cp,
 * a linker, dpkg) may be cached in large folios, and a fault maps a whole
 * folio, whatever the layout: a copy made by cp kept 112 KiB resident. */
static const char *libgc_small_pages(void)
{
	const char *dir = e2e_path("smallpages"), *to;
	char buf[4096];
	int in, out;
	ssize_t n;

	mkdir(dir, 0700);
	to = e2e_path("smallpages/libgc.so");
	in = open(e2e_libgc(), O_RDONLY);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	cr_assert(in >= 0 && out >= 0, "copy %s to %s", e2e_libgc(), to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	cr_assert_eq(n, 0);
	close(in);
	close(out);
	return to;
}

/* What a process runs at start-up, at its first sync and at the dirty
 * limiter's first look sits together at the front of the library's text
 * (GC_ONCE, then core/first.list): the kernel maps code 64 KiB at a time
 * from the first page a process runs, and such a process keeps that one
 * window. Spread through the link, the same process mapped all of the
 * library's code (140 KiB); a function newly on that path and missing
 * from the list (scripts/textorder.sh writes it) shows here. */
Test(startup, a_first_sync_runs_in_the_first_window)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "sync", "syncs=3", "stream",
			       "text", NULL };
	const char *lib = libgc_small_pages();
	char seen[128] = "";
	long rss = -1, size = -1, best = -1;

	/* A function newly on the path runs in every process; a rare path
	 * (a peer's segment met in a state this one's first sync must
	 * repair) in one of many. Up to three processes: the least wins. */
	for (int i = 0; i < 3 && (best < 0 || best > 64); i++) {
		struct e2e_run r;
		const char *p;
		size_t k = strlen(seen);

		e2e_run(&r, lib, NULL, 60, argv);
		e2e_expect_ok(&r, "nosync sync stream text");
		p = strstr(r.out, "libtext=");
		cr_assert(p && sscanf(p, "libtext=%ld of %ld", &rss, &size) == 2,
			  "no libtext line: %s", r.out);
		snprintf(seen + k, sizeof(seen) - k, "%s%ld", k ? ", " : "", rss);
		if (best < 0 || rss < best)
			best = rss;
		e2e_run_free(&r);
	}
	cr_expect_gt(size, 64, "the library's code is %ld KiB", size);
	cr_expect_leq(best, 64,
		      "%s KiB of the library's %ld KiB of code mapped: a function now on the "
		      "first sync's path is missing from core/first.list (scripts/textorder.sh "
		      "writes it), or the build is not the default -O2 one",
		      seen, size);
}

/* Where transparent huge pages are always on (many distributions' default),
 * an anonymous mapping that holds a 2 MiB-aligned 2 MiB range gets a huge
 * page at the first touch of that range: zeroed whole, 2 MiB resident. The
 * library's zeroed data (.bss) is such a mapping if it is 2 MiB or more:
 * with the dirty limiter's slow-path halves and the intent log's file table
 * in it (3.9 MiB), a process whose first write under the library touched
 * its slot there paid for one (a write to stdout: 1.18x an empty preload,
 * python3 making one fsync 2.2 MiB more resident). What only a slow path
 * reads is mapped there, with MADV_NOHUGEPAGE. */
Test(startup, zeroed_data_too_small_for_a_huge_page)
{
	const char *stream[] = { e2e_prog("nosync"), e2e_dir(), "stream", "sync", "zeroed", NULL };
	const char *big[] = { e2e_prog("nosync"), e2e_dir(), "bigfile", "sync", "zeroed", NULL };
	struct e2e_run r;
	long kib;

	/* 1 MB to /dev/null: the limiter's slow path runs, finds no file */
	e2e_run(&r, PRE_GC, NULL, 60, stream);
	e2e_expect_ok(&r, "nosync stream sync zeroed");
	cr_assert(strstr(r.out, "zeroed="), "no zeroed line: %s", r.out);
	kib = e2e_out_long(r.out, "zeroed");
	cr_assert_gt(kib, 0, "the library's zeroed data not found after its mappings: %s",
		     r.out);
	cr_expect_lt(kib, 2048, "the library's zeroed data is %ld KiB: a huge page fits in it",
		     kib);
	cr_expect_eq(e2e_out_long(r.out, "nohuge"), 0,
		     "a stream to /dev/null mapped the slow path's tables: %s", r.out);
	e2e_run_free(&r);
	/* 1 MB to a file: its slow path maps them, without huge pages */
	e2e_run(&r, PRE_GC, NULL, 60, big);
	e2e_expect_ok(&r, "nosync bigfile sync zeroed");
	cr_expect_lt(e2e_out_long(r.out, "zeroed"), 2048, "%s", r.out);
	cr_expect_geq(e2e_out_long(r.out, "nohuge"), 1,
		      "the slow path's tables were not mapped without huge pages: %s", r.out);
	e2e_run_free(&r);
}

/* A filesystem's first sync asks the mount table for the disk under it
 * only where its device number is a subvolume's (btrfs). tmpfs, overlayfs,
 * FUSE, NFS have none to find: reading /proc/self/mountinfo at the first
 * sync of every process cost each one the kernel's formatting of every
 * mount (a container's root is overlayfs). */
Test(startup, no_mount_table_without_a_disk)
{
	char dir[64];
	const char *argv[] = { e2e_prog("nosync"), dir, "sync", NULL };
	char *text;

	if (!have_strace())
		cr_skip_test("strace is not installed");
	snprintf(dir, sizeof(dir), "/dev/shm/gc-test-mounts-%d", (int)getpid());
	cr_assert_eq(mkdir(dir, 0700), 0);
	text = strace_run("-qq", e2e_libgc(), NULL, argv, "strace.mounts");
	cr_expect(strstr(text, "\"/dev/shm/gc-test-mounts-") && strstr(text, "fsync("),
		  "the trace shows no sync in %s", dir);
	cr_expect(!strstr(text, "mountinfo"), "a sync on tmpfs read the mount table");
	free(text);
	for (const char *const *f = (const char *const[]){ "nosync.dat", "synced", NULL }; *f; f++) {
		char path[128];

		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		unlink(path);
	}
	rmdir(dir);
}

static char *out_line(const char *out, const char *key)
{
	const char *p = strstr(out, key);
	size_t n;

	if (!p)
		return strdup("");
	n = strcspn(p, "\n");
	return strndup(p, n);
}

/* The descriptor numbers of a run: the same as bare, plus (for one that
 * syncs, with call sites and the exit report asked for) only numbers at or
 * above the floor, 256. */
Test(startup, descriptors_as_bare)
{
	const char *nos[] = { e2e_prog("nosync"), e2e_dir(), "fds", NULL };
	const char *syn[] = { e2e_prog("nosync"), e2e_dir(), "sync", "fds", NULL };
	const char *env[] = { "LIBGC_SITES=1", "LIBGC_REPORT=1", NULL };
	struct e2e_run r;
	char *bare, *gc, *p;

	e2e_run(&r, PRE_NONE, NULL, 30, nos);
	e2e_expect_ok(&r, "nosync bare");
	bare = out_line(r.out, "fds=");
	e2e_run_free(&r);
	e2e_run(&r, PRE_GC, NULL, 30, nos);
	e2e_expect_ok(&r, "nosync under the library");
	gc = out_line(r.out, "fds=");
	cr_expect_str_eq(gc, bare, "a process that never syncs: %s, bare %s", gc, bare);
	free(gc);
	free(bare);
	e2e_run_free(&r);

	e2e_run(&r, PRE_NONE, NULL, 30, syn);
	e2e_expect_ok(&r, "nosync sync bare");
	bare = out_line(r.out, "fds=");
	e2e_run_free(&r);
	e2e_run(&r, PRE_GC, env, 30, syn);
	e2e_expect_ok(&r, "nosync sync under the library");
	gc = out_line(r.out, "fds=");
	/* bare's list, then only numbers of 256 and up */
	cr_expect(!strncmp(gc, bare, strlen(bare)) &&
		  (gc[strlen(bare)] == '\0' || gc[strlen(bare)] == ','),
		  "with call sites and the report: %s, bare %s", gc, bare);
	for (p = gc + strlen(bare); *p == ','; p = strchr(p + 1, ',') ?: p + strlen(p))
		cr_expect(atoi(p + 1) >= 256, "descriptor %d of the library's under 256 (%s)",
			  atoi(p + 1), gc);
	free(gc);
	free(bare);
	e2e_run_free(&r);
}

/* The program acting on the numbers the library keeps, as if they were
 * free: close fails with EBADF as bare; dup2 onto them works, and nothing
 * of the library's (libunwind's pipe, the report's copy of stderr) then
 * writes into the program's file; closefrom leaves the library working,
 * and the exit report arrives. */
Test(startup, programs_descriptor_calls_as_bare)
{
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "sync",	  "closehigh",
			       "dup2high",	     "closefrom", "fds", NULL };
	char rep[600];
	const char *env[] = { "LIBGC_SITES=1", rep, NULL };
	struct e2e_run r;
	char *a, *b, *text;

	snprintf(rep, sizeof(rep), "LIBGC_REPORT=%s", e2e_path("report"));
	e2e_run(&r, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&r, "bare");
	a = strdup(r.out);
	e2e_run_free(&r);
	e2e_run(&r, PRE_GC, env, 30, argv);
	e2e_expect_ok(&r, "under the library");
	b = strdup(r.out);
	cr_expect_eq(e2e_out_long(b, "close_ebadf"), 64, "%s", b);
	cr_expect_eq(e2e_out_long(b, "dup2_ok"), 8, "%s", b);
	cr_expect_eq(e2e_out_long(b, "stray"), 0, "bytes of the library's in the program's file: %s",
		     b);
	/* the same lines, but for the library's own descriptors, 256 and up,
	 * in the list of open ones */
	{
		char *fa = strstr(a, "fds="), *fb = strstr(b, "fds=");
		size_t la = fa ? strcspn(fa, "\n") : 0;

		cr_assert(fa && fb, "no fds= line:\n%s\n%s", a, b);
		cr_expect(!strncmp(fa, fb, la) && (fb[la] == '\n' || fb[la] == ','),
			  "descriptors under the library: %.*s, bare: %.*s", (int)strcspn(fb, "\n"),
			  fb, (int)la, fa);
		for (char *p = fb + la; *p == ','; p = p + 1 + strcspn(p + 1, ",\n"))
			cr_expect(atoi(p + 1) >= 256, "descriptor %d under 256", atoi(p + 1));
		*fa = *fb = '\0';
		cr_expect_str_eq(b, a, "under the library:\n%s\nbare:\n%s", b, a);
	}
	text = e2e_slurp(e2e_path("report"));
	cr_expect(e2e_report_get(text, r.pid, "req_fsync", &(unsigned long long){ 0 }),
		  "no exit report after closefrom:\n%s", text);
	free(text);
	free(a);
	free(b);
	e2e_run_free(&r);
}

static int count_segments(const char *dir, int pid, off_t *size)
{
	char suffix[32];
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	snprintf(suffix, sizeof(suffix), "-%d", pid);
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name), s = strlen(suffix);

		if (strncmp(e->d_name, "libgc.stats-", 12) || l < s ||
		    (pid && strcmp(e->d_name + l - s, suffix)))
			continue;
		if (size) {
			char p[4096];
			struct stat st;

			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			if (stat(p, &st) == 0)
				*size = st.st_size;
		}
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* A process that never syncs (dd to /dev/null) makes no stats segment, even
 * killed (no exit handler to remove one), nor does one that syncs once, or
 * only within 100 ms; one that syncs again later makes one of 32 KB at
 * most. */
Test(startup, stats_segment_only_for_syncs_and_small)
{
	char envdir[300];
	const char *env[] = { envdir, NULL };
	const char *die[] = { e2e_prog("nosync"), e2e_dir(), "stream", "die", NULL };
	const char *sync_die[] = { e2e_prog("nosync"), e2e_dir(), "sync", "age", "sync", "die", NULL };
	const char *young[] = { e2e_prog("nosync"), e2e_dir(), "syncs=5", "die", NULL };
	const char *once[] = { e2e_prog("nosync"), e2e_dir(), "age", "sync", "die", NULL };
	const char *dir = e2e_path("shm");
	struct e2e_run r;
	off_t size = 0;

	mkdir(dir, 0700);
	snprintf(envdir, sizeof(envdir), "LIBGC_STATS_DIR=%s", dir);
	e2e_run(&r, PRE_GC, env, 30, die);
	cr_expect_eq(r.code, -SIGKILL, "%s", r.err);
	cr_expect_eq(count_segments(dir, 0, NULL), 0,
		     "a process that never synced left a stats segment");
	e2e_run_free(&r);

	/* one that synced at once and died young: none either, so a mail
	 * delivery agent per message leaves none to remove */
	e2e_run(&r, PRE_GC, env, 30, young);
	cr_expect_eq(r.code, -SIGKILL, "%s", r.err);
	cr_expect_eq(count_segments(dir, 0, NULL), 0,
		     "a process whose syncs spanned less than 100 ms left a stats segment");
	e2e_run_free(&r);

	/* nor one that synced once, however late */
	e2e_run(&r, PRE_GC, env, 30, once);
	cr_expect_eq(r.code, -SIGKILL, "%s", r.err);
	cr_expect_eq(count_segments(dir, 0, NULL), 0,
		     "a process that synced once left a stats segment");
	e2e_run_free(&r);

	e2e_run(&r, PRE_GC, env, 30, sync_die);
	cr_expect_eq(r.code, -SIGKILL, "%s", r.err);
	cr_expect_eq(count_segments(dir, r.pid, &size), 1, "the killed process's segment");
	cr_expect(size > 0 && size <= 32768, "stats segment of %lld bytes, want at most 32 KB",
		  (long long)size);
	e2e_run_free(&r);
}

/* The segment a killed process left is removed by the next process of the
 * user that makes one, not only by gcstat. */
Test(startup, next_process_prunes_a_dead_ones_segment)
{
	char envdir[300];
	const char *env[] = { envdir, NULL };
	const char *sync_die[] = { e2e_prog("nosync"), e2e_dir(), "sync", "age", "sync", "die", NULL };
	const char *sync[] = { e2e_prog("nosync"), e2e_dir(), "sync", "age", "sync", NULL };
	const char *dir = e2e_path("shm");
	struct e2e_run r;
	int dead;

	mkdir(dir, 0700);
	snprintf(envdir, sizeof(envdir), "LIBGC_STATS_DIR=%s", dir);
	e2e_run(&r, PRE_GC, env, 30, sync_die);
	dead = r.pid;
	e2e_run_free(&r);
	cr_assert_eq(count_segments(dir, dead, NULL), 1, "no segment left by the killed one");
	e2e_run(&r, PRE_GC, env, 30, sync);
	e2e_expect_ok(&r, "the next process");
	e2e_run_free(&r);
	cr_expect_eq(count_segments(dir, dead, NULL), 0,
		     "the segment of dead pid %d is still there", dead);
}

/* libunwind is mapped only when call sites are asked for. */
Test(startup, libunwind_only_when_asked)
{
	static const struct {
		const char *env;
		long want;
	} cases[] = {
		{ NULL, 0 },
		{ "LIBGC_SITES=0", 0 },
		{ "LIBGC_SITES=1", 1 },
		{ "LIBGC_REPORT=1", 1 },
		{ "LIBGC_REPORT=json", 1 },
		{ "LIBGC_REPORT=kv", 0 },
		{ "LIBGC_SCOPE=lib:libc.so", 1 },
	};
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "sync", "maps", NULL };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *env[] = { cases[i].env, NULL };
		struct e2e_run r;

		e2e_run(&r, PRE_GC, env, 30, argv);
		e2e_expect_ok(&r, cases[i].env ? cases[i].env : "defaults");
		cr_expect_eq(e2e_out_long(r.out, "unwind"), cases[i].want, "%s: %s",
			     cases[i].env ? cases[i].env : "defaults", r.out);
		e2e_run_free(&r);
	}
}

/* The variables are read at first use, from the environment the process
 * started with, and still checked: one line for a bad value, none from a
 * process that never needed them; a program that clears its environment
 * first keeps them. */
Test(startup, variables_read_lazily_still_checked)
{
	static const char *const bad[] = { "LIBGC_POLICY=bogus", NULL };
	const char *sync[] = { e2e_prog("nosync"), e2e_dir(), "sync", NULL };
	const char *trueprog[] = { "/bin/true", NULL };
	const char *cleared[] = { e2e_prog("nosync"), e2e_dir(), "clearenv", "sync", NULL };
	char rep[600];
	const char *env[] = { rep, NULL };
	struct e2e_run r;
	const char *p;
	unsigned long long n;
	char *text;
	int lines = 0;

	e2e_run(&r, PRE_GC, bad, 30, sync);
	e2e_expect_ok(&r, "a bad LIBGC_POLICY");
	for (p = r.err; (p = strstr(p, "libgc: ignoring LIBGC_POLICY=\"bogus\"")); p++)
		lines++;
	cr_expect_eq(lines, 1, "one line for the bad value:\n%s", r.err);
	e2e_run_free(&r);

	e2e_run(&r, PRE_GC, bad, 30, trueprog);
	e2e_expect_ok(&r, "true with a bad LIBGC_POLICY");
	cr_expect_eq(r.err[0], '\0', "a process that needed no variable: %s", r.err);
	e2e_run_free(&r);

	snprintf(rep, sizeof(rep), "LIBGC_REPORT=%s", e2e_path("report"));
	e2e_run(&r, PRE_GC, env, 30, cleared);
	e2e_expect_ok(&r, "clearenv before the first sync");
	text = e2e_slurp(e2e_path("report"));
	cr_expect(e2e_report_get(text, r.pid, "req_fsync", &n) && n == 1,
		  "LIBGC_REPORT lost with the environment:\n%s", text);
	free(text);
	e2e_run_free(&r);
}

/* The system calls of a run, in all, from strace -c's summary. */
static long trace_count(const char *preload, const char *const *env, const char *const *argv,
			const char *tag, const char *name)
{
	char *text = strace_run("-c", preload, env, argv, tag), *line, *save = NULL;
	long total = -1;

	/* "100.00    0.001234           1      2345        12 total" */
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char last[64];
		long calls;

		if (sscanf(line, "%*s %*s %*s %ld %*s %63s", &calls, last) == 2 && !strcmp(last, name))
			total = calls;
		else if (sscanf(line, "%*s %*s %*s %ld %63s", &calls, last) == 2 && !strcmp(last, name))
			total = calls;
	}
	free(text);
	return total;
}

/* A request served by a direct real call costs that call and no other:
 * 2000 of them make the system calls they make bare, plus the library's
 * set-up (a few dozen, once), with no getpid or lock per request. */
Test(startup, one_system_call_a_direct_request)
{
	char envdir[300];
	const char *none[] = { "LIBGC_POLICY=none", envdir, NULL };
	const char *dflt[] = { envdir, NULL };
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "syncs=2000", NULL };
	const char *const *envs[] = { none, dflt };

	if (!have_strace())
		cr_skip_test("strace is not installed");
	/* segments of its own: a request 100 ms after the first checks the
	 * owner of each other one of this user (up to 256), and other
	 * programs of root may be running beside the test */
	mkdir(e2e_path("shm1"), 0700);
	snprintf(envdir, sizeof(envdir), "LIBGC_STATS_DIR=%s", e2e_path("shm1"));
	for (int i = 0; i < 2; i++) {
		const char *what = i ? "default policy" : "LIBGC_POLICY=none";
		long bare = trace_count(NULL, envs[i], argv, "c.bare", "total");
		long gc = trace_count(e2e_libgc(), envs[i], argv, "c.gc", "total");
		long fs = trace_count(e2e_libgc(), envs[i], argv, "c.gc2", "fsync");

		cr_expect(bare > 2000 && gc > 0, "%s: strace -c read nothing (%ld, %ld)", what, bare,
			  gc);
		cr_expect_eq(fs, 2000, "%s: %ld real fsyncs for 2000 requests", what, fs);
		cr_expect(gc - bare < 150, "%s: %ld system calls bare, %ld under the library: %ld more for 2000 requests",
			  what, bare, gc, gc - bare);
		cr_log_info("%s: %ld system calls bare, %ld under the library", what, bare, gc);
	}
}

/* A grouped request whose transaction closes at once looks for no ended
 * thread: that look (kill(tid, 0) for each recent sync thread, under the
 * domain's lock) matters only to a transaction that would wait for them.
 * 300 requests, each its own transaction (LIBGC_POLICY=fixed with no
 * wait), checked grouped by the exit report. */
Test(startup, no_look_for_ended_threads_without_a_wait)
{
	char envdir[300], rep[300];
	const char *env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=0", envdir, NULL };
	const char *renv[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=0", envdir, rep, NULL };
	const char *argv[] = { e2e_prog("nosync"), e2e_dir(), "syncs=300", NULL };
	struct e2e_run r;
	long kills;
	unsigned long long n = 0;
	char *text;

	if (!have_strace())
		cr_skip_test("strace is not installed");
	mkdir(e2e_path("shm1"), 0700);
	snprintf(envdir, sizeof(envdir), "LIBGC_STATS_DIR=%s", e2e_path("shm1"));
	snprintf(rep, sizeof(rep), "LIBGC_REPORT=%s", e2e_path("report"));
	e2e_run(&r, PRE_GC, renv, 60, argv);
	e2e_expect_ok(&r, "nosync");
	text = e2e_slurp(e2e_path("report"));
	cr_assert(e2e_report_get(text, r.pid, "committed", &n) && n == 300,
		  "the requests were not grouped (committed=%llu):\n%s", n, text);
	free(text);
	e2e_run_free(&r);
	kills = trace_count(e2e_libgc(), env, argv, "k.gc", "kill");
	cr_expect(kills <= 0, "%ld kill() calls for 300 requests that waited for nobody", kills);
}

/* Nothing of the library's runs at load but its own constructor. libgcc's
 * CPU model, which __builtin_cpu_supports links in, brings a constructor
 * of its own that executes CPUID several times in every process, whether
 * it ever syncs or not; in a virtual machine each CPUID is a trap to the
 * hypervisor (here /bin/true read 1.15x an empty preload with it, 1.06x
 * without). */
Test(startup, no_cpu_model_constructor)
{
	const char *argv[] = { "/usr/bin/nm", "--defined-only", e2e_libgc(), NULL };
	struct e2e_run r;

	cr_assert(access(argv[0], X_OK) == 0, "nm (binutils) is needed to read the library");
	e2e_run(&r, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&r, "nm of the library");
	cr_expect(strstr(r.out, " gc_constructor") != NULL, "nm found no symbols:\n%.400s", r.out);
	cr_expect(strstr(r.out, "__cpu_indicator_init") == NULL,
		  "libgcc's CPU model (and its constructor) is linked into the library");
	e2e_run_free(&r);
}

/* The real functions are looked up at the first call of a wrapper, not at
 * start-up: that call may come from a signal handler, from threads at once,
 * or from a fork child whose parent never called one. Each must work as
 * bare, with the default policy and with a fixed wait (whose requests
 * wait in a shared commit). */
Test(startup, the_first_call_of_a_wrapper_anywhere)
{
	static const char *const fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	static const char *const modes[] = { "signal", "threads", "fork" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *argv[] = { e2e_prog("firstcall"), e2e_dir(), modes[i], NULL };
		struct e2e_run r;
		char *bare, *gc;

		e2e_run(&r, PRE_NONE, NULL, 30, argv);
		e2e_expect_ok(&r, modes[i]);
		bare = strdup(r.out);
		e2e_run_free(&r);
		for (int k = 0; k < 2; k++) {
			e2e_run(&r, PRE_GC, k ? fixed : NULL, 30, argv);
			e2e_expect_ok(&r, modes[i]);
			gc = r.out ? r.out : "";
			cr_expect_str_eq(gc, bare, "%s%s: under the library %s, bare %s", modes[i],
					 k ? " (fixed wait)" : "", gc, bare);
			e2e_run_free(&r);
		}
		free(bare);
	}
}

/* The real functions are read from the loader's hash tables, not asked of
 * dlsym one by one: the lookup must give what dlsym(RTLD_NEXT) gives, with
 * nothing stacked, with layers stacked after the caller (they must win),
 * and under the library itself. */
Test(startup, next_lookup_as_dlsym)
{
	static const char *const stacks[] = { NULL, "inner", "cheat inner", "gc inner" };
	const char *argv[] = { e2e_prog("nextcheck"), NULL };

	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		struct e2e_run r;

		e2e_run(&r, stacks[i], NULL, 30, argv);
		cr_expect(r.code == 0 && strstr(r.out, ", 0 differ"),
			  "under %s the lookup and dlsym differ (exit %d):\n%s",
			  stacks[i] ? stacks[i] : "no preload", r.code, r.out);
		e2e_run_free(&r);
	}
}
