// SPDX-License-Identifier: LGPL-2.1-or-later
/* threadgone DIR: a thread writes and fsyncs DIR/gone.dat and ends; once
 * it is joined, the main thread writes and fsyncs DIR/left.dat. The
 * thread that ended must not be waited for (its process lives on, so
 * nothing leaves the domain at its end). Prints "threadgone: done". */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static const char *dir;

static int sync_one(const char *name)
{
	char path[4096];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	r = write(fd, "x", 1) == 1 && fsync(fd) == 0 ? 0 : -1;
	close(fd);
	return r;
}

static void *gone(void *arg)
{
	return (void *)(long)sync_one("gone.dat");
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r;

	if (argc != 2) {
		fprintf(stderr, "usage: threadgone DIR\n");
		return 2;
	}
	dir = argv[1];
	if (pthread_create(&t, NULL, gone, NULL) || pthread_join(t, &r) || r) {
		fprintf(stderr, "threadgone: the thread's sync failed\n");
		return 1;
	}
	if (sync_one("left.dat")) {
		fprintf(stderr, "threadgone: the main thread's sync failed\n");
		return 1;
	}
	puts("threadgone: done");
	return 0;
}
