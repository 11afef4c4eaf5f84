// SPDX-License-Identifier: LGPL-2.1-or-later
/* The dirty limiter end to end, on the project's slow disk: with its waits
 * running into failed writeback, the program's fsyncs answer as bare; every
 * write-family call is counted. (tests/e2e/errors.sh asks the same of many
 * more programs.) */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

static char g_name[64], g_mnt[1024];

static void disk_down(void)
{
	char cmd[256];

	if (!g_name[0])
		return;
	snprintf(cmd, sizeof(cmd), "tests/slowdisk/slowdisk down --name %s >/dev/null 2>&1",
		 g_name);
	if (system(cmd) != 0)
		fprintf(stderr, "slowdisk down --name %s failed\n", g_name);
	g_name[0] = '\0';
}

static void fini(void)
{
	disk_down();
	e2e_teardown();
}

TestSuite(dirty, .init = e2e_setup, .fini = fini, .timeout = 120);

/* A 128 MiB slow disk (1 ms flush, 200 MB/s): its mount point, or skips. */
static void disk_up(void)
{
	char cmd[512], line[1024];
	FILE *p;
	int st;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip_test("needs root and /dev/fuse for the slow disk");
	if (access(E2E_BUILD "/tests/slowdisk/slowdiskd", X_OK) != 0)
		cr_skip_test("slowdiskd is not built (make test-bins)");
	snprintf(g_name, sizeof(g_name), "e2e-dirty-%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "tests/slowdisk/slowdisk up --name %s --size-mb 128 --flush-us 1000 "
		 "--write-mbps 200 2>&1",
		 g_name);
	p = popen(cmd, "r");
	cr_assert(p);
	g_mnt[0] = '\0';
	while (fgets(line, sizeof(line), p))
		snprintf(g_mnt, sizeof(g_mnt), "%s", line);
	st = pclose(p);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		g_name[0] = '\0';
		cr_skip_test("slow disk: %s", g_mnt);
	}
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "slowdisk up: %s", g_mnt);
	g_mnt[strcspn(g_mnt, "\n")] = '\0';
}

static void sd(const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "tests/slowdisk/slowdisk fault --name %s %s >/dev/null",
		 g_name, args);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Writes and syncs the file, then arms EIO on writes to its blocks. */
static void prep_faulty(const char *file, const char *mb)
{
	const char *argv[] = { e2e_prog("dirtyeio"), "prep", file, mb, NULL };
	struct e2e_run r;
	char *l, args[128];
	int n = 0;

	sd("clear");
	e2e_run(&r, PRE_NONE, NULL, 60, argv);
	e2e_expect_ok(&r, "dirtyeio prep");
	for (l = strtok(r.out, "\n"); l; l = strtok(NULL, "\n")) {
		unsigned long long off, len;

		if (sscanf(l, "ext %llu %llu", &off, &len) != 2 || n >= 8)
			continue;
		snprintf(args, sizeof(args), "eio-write %llu %llu", off, len);
		sd(args);
		n++;
	}
	cr_assert_gt(n, 0, "no extents: %s", r.out);
	e2e_run_free(&r);
}

/* Bare and under libgc (the limiter with a 64 KiB window, so its waits run
 * into the failed writeback long before the fsync), the program sees the
 * same: EIO from the first fsync, 0 from the second. The waits look at the
 * failed ranges and leave their error to the fsync. */
Test(dirty, eio_reaches_fsync_as_bare)
{
	static const char *const env[] = { "LIBGC_DIRTY=64k", "LIBGC_REPORT=kv,all", NULL };
	char file[1100], bare[128] = "", gc[128] = "";
	unsigned long long waits = 0, started = 0;
	struct e2e_run r;

	e2e_need_libgc();
	disk_up();
	snprintf(file, sizeof(file), "%s/f", g_mnt);
	for (int pass = 0; pass < 2; pass++) {
		const char *argv[] = { e2e_prog("dirtyeio"), "write", file, "8", NULL };

		prep_faulty(file, "8");
		e2e_run(&r, pass ? PRE_GC : PRE_NONE, pass ? env : NULL, 60, argv);
		e2e_expect_ok(&r, pass ? "under libgc" : "bare");
		snprintf(pass ? gc : bare, sizeof(bare), "%s", r.out);
		if (pass) {
			e2e_report_get(r.err, 0, "dirty_waits", &waits);
			e2e_report_get(r.err, 0, "dirty_started", &started);
		}
		e2e_run_free(&r);
		sd("clear");
	}
	cr_expect_str_eq(bare, "fsync1=EIO fsync2=0\n", "bare kernel: %s", bare);
	cr_expect_str_eq(gc, bare, "under libgc \"%s\", bare \"%s\"", gc, bare);
	cr_expect_gt(started, 0, "the limiter started no writeback");
	cr_expect_geq(waits, 8, "the limiter hardly waited (%llu): the test proves nothing", waits);
	disk_down();
}

/* pwrite, an O_APPEND write on a second description and writev: all
 * counted, all data where it belongs, fdatasync 0. */
Test(dirty, write_family_counted)
{
	static const char *const env[] = { "LIBGC_DIRTY=64k", "LIBGC_REPORT=kv,all", NULL };
	const char *argv[4 + 1];
	unsigned long long started = 0, waits = 0;
	char file[1100];
	struct e2e_run r;
	struct stat st;

	e2e_need_libgc();
	disk_up();
	snprintf(file, sizeof(file), "%s/s", g_mnt);
	argv[0] = e2e_prog("dirtyeio");
	argv[1] = "prep";
	argv[2] = file;
	argv[3] = "3";
	argv[4] = NULL;
	e2e_run(&r, PRE_NONE, NULL, 60, argv);
	e2e_expect_ok(&r, "prep");
	e2e_run_free(&r);
	argv[1] = "stream";
	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "stream");
	cr_expect_str_eq(r.out, "fdatasync=0\n");
	e2e_report_get(r.err, 0, "dirty_started", &started);
	e2e_report_get(r.err, 0, "dirty_waits", &waits);
	cr_expect_geq(started, 8, "windows started: %llu", started);
	cr_expect_geq(waits, 4, "waits: %llu", waits);
	e2e_run_free(&r);
	cr_assert_eq(stat(file, &st), 0);
	/* 12 chunks: 4 appended after the 3 MiB, the rest in place */
	cr_expect_eq(st.st_size, 3 * 1024 * 1024 + 4 * 256 * 1024, "size %lld",
		     (long long)st.st_size);
	disk_down();
}
