// SPDX-License-Identifier: LGPL-2.1-or-later
/* Threads that each sync their own file and then the directory they share,
 * in rounds (SQLite's rollback journal, a spool). After WARM rounds all
 * together, thread 0 syncs the directory once more, which puts it one step
 * ahead of the others for the ROUNDS that follow. Prints "ok=N", the
 * successful syncs.
 *   stepoff DIR THREADS WARM ROUNDS */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *dir;
static int warm, rounds;
static pthread_barrier_t bar;
static long ok[64];

static int round_trip(int fd, int dfd, int i)
{
	char b[64];
	int n = snprintf(b, sizeof(b), "round %d\n", i);

	if (pwrite(fd, b, (size_t)n, 0) != n || fsync(fd) || fsync(dfd))
		return -1;
	return 2;
}

static void *worker(void *arg)
{
	int w = (int)(long)arg, fd, dfd, i, r;
	char path[4096];

	snprintf(path, sizeof(path), "%s/f.%d", dir, w);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || dfd < 0)
		return (void *)1;
	pthread_barrier_wait(&bar);
	for (i = 0; i < warm; i++) {
		if ((r = round_trip(fd, dfd, i)) < 0)
			return (void *)2;
		ok[w] += r;
	}
	pthread_barrier_wait(&bar);
	if (w == 0) {
		if (fsync(dfd))
			return (void *)3;
		ok[w]++;
	}
	for (i = 0; i < rounds; i++) {
		if ((r = round_trip(fd, dfd, i)) < 0)
			return (void *)4;
		ok[w] += r;
	}
	close(fd);
	close(dfd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int n, i, bad = 0;
	long total = 0;

	if (argc != 5)
		return 2;
	dir = argv[1];
	n = atoi(argv[2]);
	warm = atoi(argv[3]);
	rounds = atoi(argv[4]);
	if (n < 1 || n > 64 || warm < 0 || rounds < 0)
		return 2;
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(long)i))
			return 1;
	for (i = 0; i < n; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad += r != NULL;
		total += ok[i];
	}
	printf("ok=%ld\n", total);
	return bad ? 1 : 0;
}
