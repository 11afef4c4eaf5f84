// SPDX-License-Identifier: LGPL-2.1-or-later
/* The exit report arrives and is honest: after the program closed stderr,
 * from _exit and _Exit, only for processes that synced (unless "all"), in
 * its three forms, appended to a file or said on stderr when it cannot be;
 * the stats segment is gone after exit. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

TestSuite(report, .init = e2e_setup, .fini = e2e_teardown, .timeout = 60);

static void run_reporter(struct e2e_run *r, const char *report, const char *how,
			 const char *n, const char *extra, const char *extra2)
{
	char *envs;
	const char *env[] = { NULL, "LIBGC_STATS_DIR=/dev/shm", NULL };
	const char *argv[] = { e2e_prog("reporter"), e2e_dir(), n, how, extra, extra2, NULL };

	cr_assert(asprintf(&envs, "LIBGC_REPORT=%s", report) > 0);
	env[0] = envs;
	e2e_run(r, PRE_GC, env, 30, argv);
	e2e_expect_ok(r, how);
	free(envs);
}

Test(report, summary_survives_a_closed_stderr)
{
	struct e2e_run r;

	run_reporter(&r, "1", "exit", "5", "close2", NULL);
	cr_expect(strstr(r.err, "5 sync requests (fsync 5"), "stderr:\n%s", r.err);
	cr_expect(strstr(r.err, "real syncs"), "stderr:\n%s", r.err);
	e2e_run_free(&r);
}

/* A program whose stderr is a pipe its reader left, and which never
 * writes there: bare it exits 0. The library's messages there (the exit
 * report, a bad value's warning) must not kill it with SIGPIPE. */
Test(report, a_broken_stderr_pipe_kills_nothing)
{
	static const char *const envs[][3] = {
		{ "LIBGC_REPORT=1", NULL, NULL },
		{ "LIBGC_WAIT_US=12x", NULL, NULL },
		{ "LIBGC_REPORT=kv", "LIBGC_LOG=debug", NULL },
	};
	const char *argv[] = { e2e_prog("epipe"), e2e_path("file"), NULL };
	struct e2e_run r;

	e2e_run(&r, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&r, "epipe bare");
	e2e_run_free(&r);
	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
		e2e_run(&r, PRE_GC, envs[i], 30, argv);
		cr_expect_eq(r.code, 0, "%s%s%s: exit %d (-13: SIGPIPE)", envs[i][0],
			     envs[i][1] ? " " : "", envs[i][1] ? envs[i][1] : "", r.code);
		e2e_run_free(&r);
	}
}

Test(report, kv_line_from__exit_and__Exit)
{
	static const char *const hows[] = { "_exit", "_Exit" };
	static const char *const keys[] = { "sym._exit", "sym._Exit" };
	unsigned long long n;
	struct e2e_run r;

	for (int i = 0; i < 2; i++) {
		run_reporter(&r, "kv", hows[i], "4", "close2", NULL);
		cr_expect_eq(e2e_report_lines(r.err), 1, "%s: stderr:\n%s", hows[i], r.err);
		cr_expect(e2e_report_get(r.err, r.pid, "req_fsync", &n) && n == 4,
			  "%s: req_fsync=%llu:\n%s", hows[i], n, r.err);
		cr_expect(e2e_report_get(r.err, r.pid, keys[i], &n) && n == 1, "%s:\n%s",
			  hows[i], r.err);
		e2e_run_free(&r);
	}
}

Test(report, only_processes_that_synced_unless_all)
{
	struct e2e_run r;

	run_reporter(&r, "kv", "exit", "0", NULL, NULL);
	cr_expect_eq(e2e_report_lines(r.err), 0, "no sync, no report:\n%s", r.err);
	e2e_run_free(&r);
	run_reporter(&r, "kv,all", "exit", "0", NULL, NULL);
	cr_expect_eq(e2e_report_lines(r.err), 1, "all: a report:\n%s", r.err);
	e2e_run_free(&r);
}

Test(report, json_file_gets_one_object_per_process)
{
	const char *path = e2e_path("r.json");
	struct e2e_run r;
	char *text, want[64];
	const char *p;
	int objects = 0;

	run_reporter(&r, path, "exit", "3", NULL, NULL);
	e2e_run_free(&r);
	run_reporter(&r, path, "_exit", "2", NULL, NULL);
	cr_expect_str_empty(r.err, "a file report says nothing on stderr:\n%s", r.err);
	text = e2e_slurp(path);
	for (p = text; (p = strchr(p, '\n')); p++)
		objects++;
	cr_expect_eq(objects, 2, "two lines:\n%s", text);
	cr_expect(text[0] == '{' && strstr(text, "}\n"), "%s", text);
	cr_expect(strstr(text, "\"requests\":3,"), "%s", text);
	cr_expect(strstr(text, "\"requests\":2,"), "%s", text);
	snprintf(want, sizeof(want), "{\"pid\":%d,", r.pid);
	cr_expect(strstr(text, want), "no object of pid %d:\n%s", r.pid, text);
	cr_expect(strstr(text, "\"wait_ns\":{\"count\":2,"), "%s", text);
	free(text);
	e2e_run_free(&r);
}

Test(report, unwritable_file_falls_back_to_stderr_once)
{
	struct e2e_run r;
	const char *p;
	int said = 0;

	run_reporter(&r, "/nonexistent-dir/r.json", "exit", "1", NULL, NULL);
	for (p = r.err; (p = strstr(p, "cannot append the report")); p++)
		said++;
	cr_expect_eq(said, 1, "stderr:\n%s", r.err);
	cr_expect(strstr(r.err, "\"requests\":1,"), "the report itself follows:\n%s", r.err);
	e2e_run_free(&r);
}

/* requests = direct + served by a commit, per process: each handle is
 * counted in its own process (the journal's hook gc_stats_handle_served). */
Test(report, counts_add_up_per_process)
{
	const char *report = e2e_path("report");
	const char *argv[] = { e2e_build_path("examples/fsync_storm"), "-p", "3", "-n", "60",
			       "-q", "-D", e2e_dir(), NULL };
	unsigned long long req, direct, committed, batched, lines;
	char *envs, *text, *line;
	const char *env[] = { NULL, "LIBGC_PROBE=0", "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000",
			      NULL };
	struct e2e_run r;
	int checked = 0;

	cr_assert(asprintf(&envs, "LIBGC_REPORT=%s", report) > 0);
	env[0] = envs;
	e2e_run(&r, PRE_GC, env, 60, argv);
	e2e_expect_ok(&r, "fsync_storm -p 3");
	text = e2e_slurp(report);
	lines = e2e_report_lines(text);
	cr_expect_eq(lines, 3, "one line per worker process:\n%s", text);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cr_assert(e2e_report_get(line, 0, "req_fsync", &req));
		cr_assert(e2e_report_get(line, 0, "direct", &direct));
		cr_assert(e2e_report_get(line, 0, "committed", &committed));
		cr_assert(e2e_report_get(line, 0, "batched", &batched));
		if (batched && !committed) {
			free(text);
			cr_skip_test("the journal does not call gc_stats_handle_served yet");
		}
		cr_expect_eq(req, direct + committed, "requests %llu != direct %llu + committed %llu: %s",
			     req, direct, committed, line);
		checked++;
	}
	cr_expect_eq(checked, 3);
	free(text);
	free(envs);
	e2e_run_free(&r);
}

/* The per-process stats segment exists only while the process lives (it
 * syncs once 100 ms old, so that it makes one). */
Test(report, stats_segment_removed_at_exit)
{
	struct e2e_run r;
	char name[64];
	struct dirent *de;
	DIR *d;
	int left = 0;

	run_reporter(&r, "0", "exit", "2", "after=150", NULL);
	snprintf(name, sizeof(name), "-%d", r.pid);
	d = opendir("/dev/shm");
	cr_assert(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "libgc.stats-", 12) &&
		    !strcmp(de->d_name + strlen(de->d_name) - strlen(name), name))
			left++;
	closedir(d);
	cr_expect_eq(left, 0, "segment of pid %d left behind", r.pid);
	e2e_run_free(&r);
	run_reporter(&r, "0", "_exit", "2", "after=150", NULL);
	snprintf(name, sizeof(name), "-%d", r.pid);
	d = opendir("/dev/shm");
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "libgc.stats-", 12) &&
		    !strcmp(de->d_name + strlen(de->d_name) - strlen(name), name))
			left++;
	closedir(d);
	cr_expect_eq(left, 0, "segment of pid %d (_exit) left behind", r.pid);
	e2e_run_free(&r);
}

/* Another process of the user cuts the processes' stats segments short
 * while they count (and the shared domain segment with them): they go on,
 * counting into private memory, and end cleanly, with no SIGBUS. */
static volatile int g_cutting;

static void *cutter(void *arg)
{
	(void)arg;
	while (g_cutting) {
		DIR *d = opendir("/dev/shm");
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char p[512];

			if (strncmp(e->d_name, "libgc", 5))
				continue;
			snprintf(p, sizeof(p), "/dev/shm/%s", e->d_name);
			truncate(p, 0);
		}
		if (d)
			closedir(d);
		usleep(2000);
	}
	return NULL;
}

Test(report, segments_cut_short_under_us)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	/* build/examples/fsync_storm, from build/tests/e2e/progs/ */
	const char *argv[] = { e2e_prog("../../../examples/fsync_storm"), "-p", "3", "-f", "shared",
			       "-D", e2e_dir(), "-d", "1", "-q", NULL };
	struct e2e_run r;
	pthread_t t;

	if (!e2e_private_shm())
		cr_skip_test("needs root for a /dev/shm of its own");
	g_cutting = 1;
	cr_assert_eq(pthread_create(&t, NULL, cutter, NULL), 0);
	e2e_run(&r, PRE_GC, env, 30, argv);
	g_cutting = 0;
	pthread_join(t, NULL);
	e2e_private_shm_end();
	e2e_expect_ok(&r, "fsync_storm with its segments cut short");
	cr_expect(strstr(r.out, "errors=0"), "%s", r.out);
	e2e_run_free(&r);
}
