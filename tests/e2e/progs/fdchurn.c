// SPDX-License-Identifier: LGPL-2.1-or-later
/* fdchurn DIR: 8 threads each open one of four files DIR/cN_K O_DSYNC,
 * dup every third, write a byte and close, 2000 times; the numbers pass
 * from thread to thread as they are closed and reused. Then it counts
 * the process's open descriptors against those at the start:
 * "opens=16000 writes=16000 left=0" as bare (the library's own held
 * descriptions must go with their descriptors, whichever thread reuses
 * a number meanwhile). The observer's statistics file, which the
 * library keeps open from its first look at the device where a gcd has
 * run (/run/libgc/blk.stats, at its descriptor floor), is not counted. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 2000

static const char *dir;
static long opens, writes;

static int open_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], to[64];
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, to, sizeof(to) - 1);
		to[k > 0 ? k : 0] = '\0';
		n += strcmp(to, "/run/libgc/blk.stats") != 0;
	}
	closedir(d);
	return n - 1; /* the directory's own */
}

static void *churn(void *arg)
{
	long id = (long)arg;
	char path[4096];

	for (int i = 0; i < ROUNDS; i++) {
		int fd, d;

		snprintf(path, sizeof(path), "%s/c%ld_%d", dir, id, i % 4);
		fd = open(path, O_WRONLY | O_CREAT | O_DSYNC, 0644);
		if (fd < 0)
			continue;
		__atomic_add_fetch(&opens, 1, __ATOMIC_RELAXED);
		d = i % 3 == 0 ? dup(fd) : -1;
		if (write(d >= 0 ? d : fd, "x", 1) == 1)
			__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
		if (d >= 0)
			close(d);
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	int before;

	if (argc != 2)
		return 2;
	dir = argv[1];
	before = open_count();
	for (long i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)i))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("opens=%ld writes=%ld left=%d\n", opens, writes, open_count() - before);
	return 0;
}
