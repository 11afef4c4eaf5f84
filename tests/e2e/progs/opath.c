// SPDX-License-Identifier: LGPL-2.1-or-later
/* opath [-t THREADS] [-n COUNT] FILE: THREADS threads fsync one ordinary
 * descriptor of FILE while as many fsync an O_PATH descriptor of it, COUNT
 * times each. Bare, the O_PATH descriptor's fsync fails with EBADF and the
 * other's succeeds: one descriptor's error is not the other's. Exits 0 only
 * when every result is what the bare kernel gives. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int good_fd, path_fd, count = 50;
static long good_ok, good_fail, path_ebadf, path_other;
static int good_errno, path_errno;

static void *good(void *arg)
{
	char buf[256];

	memset(buf, 'g', sizeof(buf));
	for (int i = 0; i < count; i++) {
		if (pwrite(good_fd, buf, sizeof(buf), (off_t)((long)arg % 16) * 4096) < 0 ||
		    fsync(good_fd) != 0) {
			__atomic_store_n(&good_errno, errno, __ATOMIC_RELAXED);
			__atomic_add_fetch(&good_fail, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&good_ok, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *opath(void *arg)
{
	(void)arg;
	for (int i = 0; i < count; i++) {
		if (fsync(path_fd) != 0 && errno == EBADF) {
			__atomic_add_fetch(&path_ebadf, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_store_n(&path_errno, errno, __ATOMIC_RELAXED);
			__atomic_add_fetch(&path_other, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 3, c;
	pthread_t *t;

	while ((c = getopt(argc, argv, "t:n:")) != -1) {
		if (c == 't')
			threads = atoi(optarg);
		else if (c == 'n')
			count = atoi(optarg);
		else
			return 2;
	}
	if (optind != argc - 1 || threads < 1)
		return 2;
	good_fd = open(argv[optind], O_RDWR | O_CREAT, 0644);
	path_fd = open(argv[optind], O_PATH);
	if (good_fd < 0 || path_fd < 0) {
		perror("opath: open");
		return 1;
	}
	t = calloc(2 * (size_t)threads, sizeof(*t));
	for (long i = 0; i < 2 * threads; i++)
		if (pthread_create(&t[i], NULL, i % 2 ? opath : good, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 2 * threads; i++)
		pthread_join(t[i], NULL);
	printf("opath: good_ok=%ld good_fail=%ld good_errno=%s path_ebadf=%ld path_other=%ld path_errno=%s\n",
	       good_ok, good_fail, good_fail ? strerror(good_errno) : "-", path_ebadf, path_other,
	       path_other ? strerror(path_errno) : "-");
	return good_fail || path_other ? 1 : 0;
}
