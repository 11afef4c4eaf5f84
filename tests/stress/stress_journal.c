// SPDX-License-Identifier: LGPL-2.1-or-later
/* Threads hammering the journal through the real wrappers, linked into the
 * program instead of preloaded, so sanitizers (ThreadSanitizer above all)
 * see every access. Prints TAP. Run by `make tsan` and `make asan`, and
 * plainly by `make test`. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/stats.h"

#define THREADS 8
#define ITERS 300

static char dir[256];
static int failures;

struct arg {
	int id;
	int each;	/* a file each, else one shared file */
	int mode;	/* 0 fsync, 1 fdatasync, 2 O_DSYNC writes */
};

static void fail(const char *what, int id)
{
	fprintf(stderr, "# thread %d: %s: %s\n", id, what, strerror(errno));
	__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static void *worker(void *p)
{
	struct arg *a = p;
	char path[300], buf[512];
	int fd, i;

	snprintf(path, sizeof(path), "%s/f%d", dir, a->each ? a->id : 0);
	fd = open(path, O_CREAT | O_WRONLY | (a->mode == 2 ? O_DSYNC : 0), 0600);
	if (fd < 0) {
		fail("open", a->id);
		return NULL;
	}
	if (a->mode == 2 && !(fcntl(fd, F_GETFL) & O_DSYNC))
		fail("F_GETFL lost O_DSYNC", a->id);
	memset(buf, 'a' + a->id, sizeof(buf));
	for (i = 0; i < ITERS; i++) {
		off_t off = ((off_t)i * THREADS + a->id) * (off_t)sizeof(buf);

		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf)) {
			fail("pwrite", a->id);
			break;
		}
		if ((a->mode == 0 && fsync(fd)) || (a->mode == 1 && fdatasync(fd))) {
			fail("sync", a->id);
			break;
		}
		if (i % 50 == 25) {
			/* descriptor churn while others commit */
			int d = dup(fd);

			if (d < 0 || close(d))
				fail("dup/close", a->id);
		}
	}
	close(fd);
	return NULL;
}

static int run(const char *name, int each, int mode)
{
	pthread_t t[THREADS];
	struct arg a[THREADS];
	struct gc_stats st;
	uint64_t before, after;
	int i, f0 = failures;

	gc_stats_sum(&st);
	before = st.req_fsync + st.req_fdatasync + st.req_osync;
	for (i = 0; i < THREADS; i++) {
		a[i] = (struct arg){ .id = i, .each = each, .mode = mode };
		pthread_create(&t[i], NULL, worker, &a[i]);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	gc_stats_sum(&st);
	after = st.req_fsync + st.req_fdatasync + st.req_osync;
	/* every request went through the library */
	if (after - before != (uint64_t)THREADS * ITERS) {
		fprintf(stderr, "# %s: %llu requests counted, expected %d\n", name,
			(unsigned long long)(after - before), THREADS * ITERS);
		failures++;
	}
	return failures == f0;
}

int main(void)
{
	static const struct { const char *name; int each, mode; } cases[] = {
		{ "shared file, fsync", 0, 0 },
		{ "a file each, fsync", 1, 0 },
		{ "shared file, fdatasync", 0, 1 },
		{ "a file each, O_DSYNC", 1, 2 },
	};
	const char *base = getenv("STRESS_DIR") ? getenv("STRESS_DIR") : "/var/tmp";
	int i, n = (int)(sizeof(cases) / sizeof(cases[0])), bad = 0;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/gcstress.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	printf("1..%d\n", n + 1);
	for (i = 0; i < n; i++) {
		int ok = run(cases[i].name, cases[i].each, cases[i].mode);

		printf("%s %d - %d threads x %d, %s\n", ok ? "ok" : "not ok", i + 1, THREADS,
		       ITERS, cases[i].name);
		bad += !ok;
	}
	/* fork while other threads commit; the child commits too */
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(run("child after fork", 0, 0) ? 0 : 1);
	i = run("parent during fork", 1, 0);
	{
		int st = 0;

		waitpid(pid, &st, 0);
		i = i && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	printf("%s %d - fork: parent and child keep committing\n", i ? "ok" : "not ok", n + 1);
	bad += !i;
	for (i = 0; i < THREADS; i++) {
		char p[300];

		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		unlink(p);
	}
	rmdir(dir);
	return bad ? 1 : 0;
}
