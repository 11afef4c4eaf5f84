// SPDX-License-Identifier: LGPL-2.1-or-later
/* Sync requests from known call sites: threads that fsync through
 * libsite.so's site_flush_log, and (mode mix) as many that fsync from this
 * program's own local_flush; mode osync writes through an O_DSYNC
 * descriptor in libsite.so's site_write_sync; mode many fsyncs N times from
 * each of MANY_SITES places in many_sites, more than a process's table
 * holds. Each thread has its own file.
 *   siteprog DIR N lib|mix|osync|many [threads=T] [pace=MS] [hold]
 * N requests per thread; prints "siteprog: pid=P done lib=A local=B", and
 * with libmcount.so preloaded "mallocs=M": allocations made on the worker
 * threads during their sync loops (the loops themselves make none). Then
 * each worker first makes one request from warm_up, outside the count:
 * loading libunwind, and a thread's first trace, allocate once. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int site_flush_log(int fd);
int site_write_sync(int fd, const void *buf, size_t n);

static const char *dir;
static int per, osync, pace_ms;
static int local_calls;
static unsigned long (*mcount)(void);
static unsigned long mallocs;

__attribute__((noinline)) static int local_flush(int fd)
{
	int r = fsync(fd);

	__atomic_fetch_add(&local_calls, 1, __ATOMIC_RELAXED);
	return r;
}

#define MANY_SITES 40

/* MANY_SITES calls of fsync, each its own return address: the asm after
 * each call differs, so the compiler cannot merge them. */
#define SITE(k)                                                                    \
	case k:                                                                    \
		r = fsync(fd);                                                     \
		__asm__ volatile("# site " #k);                                    \
		break;
__attribute__((noinline)) static int many_sites(int fd, int k)
{
	int r = -1;

	switch (k) {
		SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7) SITE(8) SITE(9)
		SITE(10) SITE(11) SITE(12) SITE(13) SITE(14) SITE(15) SITE(16) SITE(17) SITE(18)
		SITE(19) SITE(20) SITE(21) SITE(22) SITE(23) SITE(24) SITE(25) SITE(26) SITE(27)
		SITE(28) SITE(29) SITE(30) SITE(31) SITE(32) SITE(33) SITE(34) SITE(35) SITE(36)
		SITE(37) SITE(38) SITE(39)
	}
	__atomic_fetch_add(&local_calls, 1, __ATOMIC_RELAXED);
	return r;
}

static int many;

__attribute__((noinline)) static void warm_up(long id)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/siteprog.warm.%ld", dir, id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "w", 1) != 1 || fsync(fd)) {
		perror("warm_up");
		exit(2);
	}
	close(fd);
}

struct job {
	long id;
	int lib;
};

static void *worker(void *arg)
{
	const struct job *j = arg;
	char path[4096];
	int fd, i, r;

	snprintf(path, sizeof(path), "%s/siteprog.%ld", dir, j->id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (osync ? O_DSYNC : 0), 0644);
	if (fd < 0) {
		perror("open");
		exit(2);
	}
	if (mcount)
		warm_up(j->id);
	unsigned long m0 = mcount ? mcount() : 0;

	for (i = 0; i < per; i++) {
		if (many) {
			int k;

			for (k = 0, r = 0; k < MANY_SITES && !r; k++)
				r = write(fd, "x", 1) == 1 ? many_sites(fd, k) : -1;
		} else if (osync)
			r = site_write_sync(fd, "x", 1) == 1 ? 0 : -1;
		else if (write(fd, "x", 1) != 1)
			r = -1;
		else
			r = j->lib ? site_flush_log(fd) : local_flush(fd);
		if (r) {
			perror("sync");
			exit(2);
		}
		if (pace_ms)
			usleep((useconds_t)pace_ms * 1000);
	}
	if (mcount)
		__atomic_fetch_add(&mallocs, mcount() - m0, __ATOMIC_RELAXED);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1, hold = 0, mix, i, n;
	struct job jobs[64];
	pthread_t th[64];
	char c;

	if (argc < 4)
		return 2;
	dir = argv[1];
	per = atoi(argv[2]);
	mix = !strcmp(argv[3], "mix");
	osync = !strcmp(argv[3], "osync");
	many = !strcmp(argv[3], "many");
	for (i = 4; i < argc; i++) {
		if (!strncmp(argv[i], "threads=", 8))
			threads = atoi(argv[i] + 8);
		else if (!strcmp(argv[i], "hold"))
			hold = 1;
		else if (!strncmp(argv[i], "pace=", 5))
			pace_ms = atoi(argv[i] + 5);
	}
	mcount = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "mcount_thread");
	n = mix ? 2 * threads : threads;
	if (threads < 1 || n > 64 || per < 0)
		return 2;
	for (i = 0; i < n; i++) {
		jobs[i].id = i;
		jobs[i].lib = !many && (!mix || i % 2 == 0);
		pthread_create(&th[i], NULL, worker, &jobs[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("siteprog: pid=%d done lib=%d local=%d", (int)getpid(), n * per - local_calls,
	       local_calls);
	if (mcount)
		printf(" mallocs=%lu", mallocs);
	printf("\n");
	fflush(stdout);
	if (hold) /* until stdin closes: gcstat looks meanwhile */
		while (read(0, &c, 1) > 0)
			;
	return 0;
}
