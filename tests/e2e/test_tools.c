// SPDX-License-Identifier: LGPL-2.1-or-later
/* Everyday tools under the library: cp, dd (conv=fsync, oflag=dsync), tar,
 * rsync --fsync, sqlite3, git with core.fsync=all, python3's os.fsync and
 * perl's IO::Handle::sync, each run bare and under libgc with the same input
 * (same exit status, same output, same files), then between the spies. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

TestSuite(tools, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

/* The tools come from the system, never from a user's shims (pyenv and the
 * like put scripts named python3 first on PATH). */
#define TOOL_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
static const char *const tool_dirs[] = { "/usr/bin", "/bin", "/usr/sbin", NULL };

/* One tool: a shell script run in a work folder of its own ($1) with the
 * shared input folder ($2); every file it leaves under out/ is compared. */
struct tool_case {
	const char *tc_tool;	/* must be installed, else the test skips */
	const char *tc_pkg;	/* the Debian package, for the skip message */
	bool tc_syncs;		/* the spies must see sync requests */
	/* the exit report: false, read it; true, none (ends with _exit);
	 * STDOUT_SYNC, read it and find no request, the synchronous writes
	 * going through descriptor 1, which stdio writes inside libc and the
	 * library never converts (the kernel's O_DSYNC does them) */
	int tc_no_report;
	const char *tc_script;
};
#define STDOUT_SYNC 2

static bool have_tool(const char *name)
{
	char p[256];

	for (size_t i = 0; tool_dirs[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", tool_dirs[i], name);
		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
}

static void write_file(const char *path, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, n), (ssize_t)n, "write %s", path);
	close(fd);
}

/* 2024-01-01 00:00:00 UTC on everything, so tar writes the same bytes. */
static int fix_time(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const struct timespec t[2] = { { 1704067200, 0 }, { 1704067200, 0 } };

	(void)st, (void)flag, (void)ftw;
	return utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* The input: a 1 MiB file of pseudo-random bytes, some small text files and
 * a sub-folder, with fixed times so archives of it are the same each run. */
static const char *make_input(void)
{
	const char *in = e2e_path("in");
	static unsigned char big[1 << 20];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char p[4096], line[128];

	cr_assert_eq(mkdir(in, 0755), 0);
	for (size_t i = 0; i < sizeof(big); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		big[i] = (unsigned char)x;
	}
	snprintf(p, sizeof(p), "%s/big", in);
	write_file(p, big, sizeof(big));
	snprintf(p, sizeof(p), "%s/sub", in);
	cr_assert_eq(mkdir(p, 0755), 0);
	for (int i = 0; i < 8; i++) {
		int n = snprintf(line, sizeof(line), "small file %d\n", i);

		snprintf(p, sizeof(p), "%s/%ssmall%d.txt", in, i % 2 ? "sub/" : "", i);
		write_file(p, line, (size_t)n);
	}
	cr_assert_eq(nftw(in, fix_time, 16, FTW_PHYS), 0);
	return in;
}

/* Reads a whole file; *len gets its size. */
static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	cr_assert(f, "open %s: %s", path, strerror(errno));
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	*len = n;
	return buf;
}

/* Compares the trees under @a and @b: the same names, kinds and file
 * contents.  Returns the number of differences (each reported). */
static int tree_diff(const char *a, const char *b, const char *what)
{
	struct dirent **ea = NULL, **eb = NULL;
	int na, nb, diffs = 0, i = 0, j = 0;

	na = scandir(a, &ea, NULL, alphasort);
	nb = scandir(b, &eb, NULL, alphasort);
	cr_assert(na >= 0 && nb >= 0, "%s: cannot list %s or %s", what, a, b);
	while (i < na || j < nb) {
		int c = i >= na ? 1 : j >= nb ? -1 : strcmp(ea[i]->d_name, eb[j]->d_name);
		char pa[4096], pb[4096];
		struct stat sa, sb;

		if (c) {
			cr_expect_fail("%s: %s only %s", what,
				       c < 0 ? ea[i]->d_name : eb[j]->d_name,
				       c < 0 ? "bare" : "under the library");
			diffs++;
			c < 0 ? i++ : j++;
			continue;
		}
		if (!strcmp(ea[i]->d_name, ".") || !strcmp(ea[i]->d_name, "..")) {
			i++, j++;
			continue;
		}
		snprintf(pa, sizeof(pa), "%s/%s", a, ea[i]->d_name);
		snprintf(pb, sizeof(pb), "%s/%s", b, eb[j]->d_name);
		cr_assert(lstat(pa, &sa) == 0 && lstat(pb, &sb) == 0);
		if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
			cr_expect_fail("%s: %s is not the same kind of file", what, ea[i]->d_name);
			diffs++;
		} else if (S_ISDIR(sa.st_mode)) {
			diffs += tree_diff(pa, pb, what);
		} else if (S_ISREG(sa.st_mode)) {
			size_t la, lb;
			char *ca = read_all(pa, &la), *cb = read_all(pb, &lb);

			if (la != lb || memcmp(ca, cb, la)) {
				cr_expect_fail("%s: %s differs (%zu bytes bare, %zu under the library)",
					       what, pa, la, lb);
				diffs++;
			}
			free(ca);
			free(cb);
		}
		i++, j++;
	}
	for (int k = 0; k < na; k++)
		free(ea[k]);
	for (int k = 0; k < nb; k++)
		free(eb[k]);
	free(ea);
	free(eb);
	return diffs;
}

/* "LIBGC_REPORT=<scratch>/NAME.report" */
static const char *report_env(const char *name)
{
	static char buf[8][4200];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, sizeof(buf[0]), "LIBGC_REPORT=%s.report", e2e_path(name));
	return p;
}

/* One run of @tc's script under @stack in a fresh work folder @name. */
static void run_case(struct e2e_run *r, struct spy_summary *s, const struct tool_case *tc,
		     const char *stack, const char *name, const char *in)
{
	const char *work = e2e_path(name);
	const char *argv[] = { "/bin/sh", "-ec", tc->tc_script, "sh", work, in, NULL };
	/* a file: coreutils close stderr before exit */
	const char *env[] = { TOOL_PATH, "LC_ALL=C", "TZ=UTC",
			      report_env(name), NULL };

	cr_assert_eq(mkdir(work, 0755), 0, "mkdir %s: %s", work, strerror(errno));
	if (s)
		e2e_run_spied(r, s, stack, env, 40, argv, name);
	else
		e2e_run(r, stack, env, 40, argv);
}

static void tool_test(const struct tool_case *tc)
{
	struct e2e_run bare, lib, spied;
	struct spy_summary s;
	const char *in;
	char a[4096], b[4096];

	if (!have_tool(tc->tc_tool))
		cr_skip_test("%s is not installed (Debian package %s)", tc->tc_tool, tc->tc_pkg);
	e2e_need_libgc();
	in = make_input();

	run_case(&bare, NULL, tc, PRE_NONE, "bare", in);
	e2e_expect_ok(&bare, "bare");
	run_case(&lib, NULL, tc, PRE_GC, "libgc", in);
	e2e_expect_ok(&lib, "under the library");
	cr_expect_eq(lib.code, bare.code, "%s: exit %d under the library, %d bare",
		     tc->tc_tool, lib.code, bare.code);
	cr_expect_str_eq(lib.out, bare.out, "%s: stdout differs:\n--- bare:\n%s--- library:\n%s",
			 tc->tc_tool, bare.out, lib.out);
	if (tc->tc_syncs && tc->tc_no_report != true) {
		unsigned long long f = 0, d = 0, o = 0;
		char *rep = e2e_slurp(e2e_path("libgc.report"));

		e2e_report_get(rep, 0, "req_fsync", &f);
		e2e_report_get(rep, 0, "req_fdatasync", &d);
		e2e_report_get(rep, 0, "req_osync", &o);
		if (tc->tc_no_report == STDOUT_SYNC)
			cr_expect(f + d + o == 0,
				  "%s: the library made requests for descriptor 1's writes:\n%s",
				  tc->tc_tool, rep);
		else
			cr_expect(f + d + o > 0,
				  "%s: the library's report counts no sync request:\n%s",
				  tc->tc_tool, rep);
		free(rep);
	}
	snprintf(a, sizeof(a), "%s/out", e2e_path("bare"));
	snprintf(b, sizeof(b), "%s/out", e2e_path("libgc"));
	cr_expect_eq(tree_diff(a, b, tc->tc_tool), 0, "%s: out/ differs", tc->tc_tool);

	run_case(&spied, &s, tc, PRE_SPY_GC, "spied", in);
	e2e_expect_ok(&spied, "between the spies");
	cr_expect_str_eq(spied.out, bare.out, "%s: stdout differs between the spies",
			 tc->tc_tool);
	cr_expect_eq(s.s_violations, 0, "%s: %zu sync requests answered without a covering real call",
		     tc->tc_tool, s.s_violations);
	cr_expect_eq(s.s_bad, 0, "%s: %zu malformed spy records", tc->tc_tool, s.s_bad);
	if (tc->tc_syncs)
		cr_expect(s.s_prog_ok > 0, "%s: the spies saw no sync request (%zu calls)",
			  tc->tc_tool, s.s_prog);
	e2e_run_free(&bare);
	e2e_run_free(&lib);
	e2e_run_free(&spied);
}

/* The scripts: $1 is the work folder (cwd), $2 the input; out/ is compared,
 * stdout must match. */
#define IN_WORK "cd \"$1\"; mkdir out; "

Test(tools, cp)
{
	static const struct tool_case tc = { "cp", "coreutils", false, false,
		IN_WORK "cp -r \"$2/.\" out/ && cp --sparse=always \"$2/big\" out/big.sparse && "
		"cmp \"$2/big\" out/big && echo copied" };
	tool_test(&tc);
}

Test(tools, dd_conv_fsync)
{
	static const struct tool_case tc = { "dd", "coreutils", true, false,
		IN_WORK "dd if=\"$2/big\" of=out/big bs=64k conv=fsync status=none && "
		"dd if=\"$2/sub/small1.txt\" of=out/small bs=1 conv=fsync,notrunc status=none && "
		"cmp \"$2/big\" out/big && echo done" };
	tool_test(&tc);
}

/* dd opens its output at descriptor 1 (fd_reopen): never converted. */
Test(tools, dd_oflag_dsync)
{
	static const struct tool_case tc = { "dd", "coreutils", true, STDOUT_SYNC,
		IN_WORK "dd if=\"$2/big\" of=out/big bs=16k oflag=dsync status=none && "
		"dd if=\"$2/big\" of=out/half bs=4k count=64 oflag=sync status=none && "
		"cmp \"$2/big\" out/big && echo done" };
	tool_test(&tc);
}

Test(tools, tar)
{
	static const struct tool_case tc = { "tar", "tar", false, false,
		IN_WORK "tar --sort=name --owner=0 --group=0 --numeric-owner -C \"$2\" -cf out/a.tar . && "
		"mkdir out/x && tar -C out/x -xf out/a.tar && tar -tvf out/a.tar" };
	tool_test(&tc);
}

Test(tools, rsync_fsync)
{
	/* rsync's processes end with _exit, so the library's report is not
	 * written; the spies still see every request. */
	static const struct tool_case tc = { "rsync", "rsync", true, true,
		IN_WORK "rsync -a --fsync \"$2/\" out/ && "
		"echo more >>out/sub/small1.txt && rsync -a --fsync --inplace \"$2/\" out/ && "
		"rsync -an --itemize-changes --fsync \"$2/\" out/ | wc -l" };
	tool_test(&tc);
}

/* 100 autocommit inserts in each journal mode, then integrity_check, a sum
 * and a dump of each database. */
Test(tools, sqlite3)
{
	static const struct tool_case tc = { "sqlite3", "sqlite3", true, false,
		IN_WORK
		"for mode in wal delete; do"
		" { echo \"PRAGMA journal_mode=$mode; PRAGMA synchronous=FULL;\";"
		"   echo 'CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT);';"
		"   i=0; while [ $i -lt 100 ]; do"
		"     echo \"INSERT INTO t VALUES($i, 'value $i');\"; i=$((i + 1)); done;"
		"   echo 'PRAGMA integrity_check; SELECT count(*), sum(k) FROM t;'; } |"
		" sqlite3 $mode.db;"
		" sqlite3 $mode.db .dump >out/$mode.sql; done" };
	tool_test(&tc);
}

/* Ten commits with every fsync git knows, fixed names and dates: the same
 * commit ids bare and under the library, and a clean fsck. */
Test(tools, git)
{
	static const struct tool_case tc = { "git", "git", true, false,
		IN_WORK
		"export HOME=\"$1\" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_COMMITTER_NAME=t"
		" GIT_AUTHOR_EMAIL=t@example.org GIT_COMMITTER_EMAIL=t@example.org"
		" GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z';"
		"git init -q -b main repo; cd repo;"
		"git config core.fsync all; git config core.fsyncMethod fsync;"
		"cp -r \"$2/.\" .; git add -A; git commit -q -m initial;"
		"i=0; while [ $i -lt 10 ]; do echo \"change $i\" >>sub/small1.txt;"
		" echo $i >f$i; git add -A; git commit -q -m \"commit $i\"; i=$((i + 1)); done;"
		"git fsck --strict --no-progress; git rev-parse HEAD; git log --oneline | wc -l;"
		"git archive HEAD | tar -x -C ../out" };
	tool_test(&tc);
}

Test(tools, python3_fsync)
{
	static const struct tool_case tc = { "python3", "python3", true, false,
		IN_WORK
		"python3 -c 'import os, hashlib\n"
		"h = hashlib.sha256()\n"
		"fd = os.open(\"out/py.dat\", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)\n"
		"for i in range(100):\n"
		"    b = (\"record %d\\n\" % i).encode() * 10\n"
		"    os.write(fd, b)\n"
		"    (os.fsync if i % 2 else os.fdatasync)(fd)\n"
		"    h.update(b)\n"
		"os.close(fd)\n"
		"with open(\"out/py2.dat\", \"wb\") as f:\n"
		"    for i in range(20):\n"
		"        f.write(b\"x\" * 1000); f.flush(); os.fsync(f.fileno())\n"
		"print(h.hexdigest())'" };
	tool_test(&tc);
}

Test(tools, perl_sync)
{
	static const struct tool_case tc = { "perl", "perl-base", true, false,
		IN_WORK
		"perl -MIO::Handle -e 'open(my $f, \">\", \"out/pl.dat\") or die \"open: $!\";"
		" for my $i (0 .. 99) { print $f \"record $i\\n\" x 10; $f->flush;"
		" $f->sync or die \"sync: $!\" } close $f or die \"close: $!\"; print \"synced 100\\n\"'" };
	tool_test(&tc);
}
