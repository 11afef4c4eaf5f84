// SPDX-License-Identifier: LGPL-2.1-or-later
/* threadgone DIR: a thread writes and fsyncs DIR/gone.dat and ends; once
 * it is joined and its id no longer names a thread (pthread_join returns
 * when the kernel clears the thread's id word, a moment before the thread
 * is released), the main thread writes and fsyncs DIR/left.dat. The
 * thread that ended must not be waited for (its process lives on, so
 * nothing leaves the domain at its end). Prints "threadgone: done". */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *dir;
static pid_t gone_tid;

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
	gone_tid = (pid_t)syscall(SYS_gettid);
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
	for (int i = 0; syscall(SYS_tgkill, getpid(), gone_tid, 0) == 0 || errno != ESRCH; i++) {
		if (i == 100000) {
			fprintf(stderr, "threadgone: the thread's id still names a thread\n");
			return 1;
		}
		usleep(100);
	}
	if (sync_one("left.dat")) {
		fprintf(stderr, "threadgone: the main thread's sync failed\n");
		return 1;
	}
	puts("threadgone: done");
	return 0;
}
