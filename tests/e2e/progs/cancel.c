// SPDX-License-Identifier: LGPL-2.1-or-later
/* cancel DIR [-r ROUNDS]: threads cancelled while they wait in fsync,
 * fdatasync or an O_DSYNC write next to workers syncing the same file; the
 * victims must be joinable soon and the workers keep making progress. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static int stop, errors;
static long worker_ops[2];

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int open_in(const char *name, int flags)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT | flags, 0644);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	int fd = open_in("shared", 0);
	char buf[256];

	memset(buf, 'w', sizeof(buf));
	while (fd >= 0 && !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (pwrite(fd, buf, sizeof(buf), id * 4096) != (ssize_t)sizeof(buf) ||
		    fsync(fd) != 0) {
			fprintf(stderr, "cancel: worker: %s\n", strerror(errno));
			__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
			break;
		}
		__atomic_add_fetch(&worker_ops[id], 1, __ATOMIC_RELAXED);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void close_fd(void *arg)
{
	close(*(int *)arg);
}

/* kind 0: fsync on the workers' file; 1: fdatasync on a file of its own
 * (a lone writer); 2: O_DSYNC writes on the workers' file. */
static void *victim(void *arg)
{
	long kind = (long)arg;
	int fd = open_in(kind == 1 ? "lone" : "shared", kind == 2 ? O_DSYNC : 0);
	char buf[256];

	if (fd < 0)
		return NULL;
	memset(buf, 'v', sizeof(buf));
	pthread_cleanup_push(close_fd, &fd);
	for (;;) {
		if (pwrite(fd, buf, sizeof(buf), 3 * 4096) != (ssize_t)sizeof(buf))
			break;
		if (kind == 0 && fsync(fd) != 0)
			break;
		if (kind == 1 && fdatasync(fd) != 0)
			break;
	}
	pthread_cleanup_pop(1);
	fprintf(stderr, "cancel: victim call failed: %s\n", strerror(errno));
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int timed_join(pthread_t t, int secs, void **ret)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += secs;
	return pthread_timedjoin_np(t, ret, &dl);
}

int main(int argc, char **argv)
{
	int rounds = 9, c, stuck = 0;
	double worst = 0;
	pthread_t w[2];

	while ((c = getopt(argc, argv, "r:")) != -1) {
		if (c == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (optind != argc - 1)
		return 2;
	dir = argv[optind];
	alarm(60);
	for (long i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, worker, (void *)i);
	for (int r = 0; r < rounds; r++) {
		struct timespec nap = { 0, (1 + (r * 7) % 25) * 1000 * 1000 };
		pthread_t v;
		void *ret;
		double t0;

		pthread_create(&v, NULL, victim, (void *)(long)(r % 3));
		nanosleep(&nap, NULL);
		t0 = now_ms();
		pthread_cancel(v);
		if (timed_join(v, 5, &ret) != 0) {
			fprintf(stderr, "cancel: round %d: victim (kind %d) not joinable after 5 s\n",
				r, r % 3);
			stuck++;
			break;
		}
		if (ret != PTHREAD_CANCELED) {
			fprintf(stderr, "cancel: round %d: victim ended without being cancelled\n", r);
			errors++;
		}
		if (now_ms() - t0 > worst)
			worst = now_ms() - t0;
	}
	/* the workers are not left waiting on a cancelled participant */
	for (int i = 0; i < 2 && !stuck; i++) {
		long before = __atomic_load_n(&worker_ops[i], __ATOMIC_RELAXED);
		double t0 = now_ms();

		while (__atomic_load_n(&worker_ops[i], __ATOMIC_RELAXED) < before + 2) {
			struct timespec nap = { 0, 5 * 1000 * 1000 };

			if (now_ms() - t0 > 10000) {
				fprintf(stderr, "cancel: worker %d made no progress in 10 s\n", i);
				stuck++;
				break;
			}
			nanosleep(&nap, NULL);
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		if (timed_join(w[i], 10, NULL) != 0) {
			fprintf(stderr, "cancel: worker %d not joinable after 10 s\n", i);
			stuck++;
		}
	printf("cancel: rounds=%d max_join_ms=%.1f worker_ops=%ld stuck=%d errors=%d\n",
	       rounds, worst, worker_ops[0] + worker_ops[1], stuck, errors);
	fflush(stdout);
	if (stuck)
		_exit(1);	/* threads still blocked: skip exit handlers */
	return errors ? 1 : 0;
}
