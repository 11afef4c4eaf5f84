// SPDX-License-Identifier: LGPL-2.1-or-later
/* firstcall DIR MODE: the process's first call of a wrapper, the one that
 * looks up the real functions (shim/real.c), made where that is hardest.
 * Until then the program opens its files with raw system calls.
 *   signal   from a signal handler, raised on the main thread: write,
 *            fsync and fdatasync of a file;
 *   threads  by 8 threads at once, released together: each writes and
 *            fsyncs a file of its own;
 *   fork     in a child of fork: the child writes and fsyncs, the parent
 *            only waits.
 * Prints one line of results and the file's content; the same under the
 * library as bare. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8

static int fds[THREADS];
static volatile sig_atomic_t h_write = -2, h_fsync = -2, h_fdatasync = -2;
static pthread_barrier_t go;
static int t_ok[THREADS];

static int raw_open(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
			    0600);
}

/* The file's first bytes, read with a raw call, or "?" */
static const char *content(int fd, char *buf, size_t len)
{
	long n = syscall(SYS_pread64, fd, buf, len - 1, 0L);

	if (n < 0)
		return "?";
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static void on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	h_write = (int)write(fds[0], "from-handler\n", 13);
	h_fsync = fsync(fds[0]);
	h_fdatasync = fdatasync(fds[0]);
	errno = saved;
}

static void *thread(void *arg)
{
	int i = (int)(long)arg;

	pthread_barrier_wait(&go);
	t_ok[i] = write(fds[i], "from-thread\n", 12) == 12 && fsync(fds[i]) == 0;
	return NULL;
}

int main(int argc, char **argv)
{
	char buf[64];

	if (argc != 3) {
		fprintf(stderr, "usage: firstcall DIR signal|threads|fork\n");
		return 2;
	}
	if (!strcmp(argv[2], "signal")) {
		struct sigaction sa = { .sa_handler = on_usr1 };

		fds[0] = raw_open(argv[1], "signal");
		if (fds[0] < 0 || sigaction(SIGUSR1, &sa, NULL))
			return 1;
		raise(SIGUSR1);
		printf("signal: write=%d fsync=%d fdatasync=%d content=%s\n", (int)h_write,
		       (int)h_fsync, (int)h_fdatasync, content(fds[0], buf, sizeof(buf)));
		return h_write == 13 && !h_fsync && !h_fdatasync ? 0 : 1;
	}
	if (!strcmp(argv[2], "threads")) {
		pthread_t t[THREADS];
		char name[16];
		int ok = 0, same = 0;

		pthread_barrier_init(&go, NULL, THREADS);
		for (int i = 0; i < THREADS; i++) {
			snprintf(name, sizeof(name), "thread%d", i);
			if ((fds[i] = raw_open(argv[1], name)) < 0)
				return 1;
		}
		for (int i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, thread, (void *)(long)i))
				return 1;
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			ok += t_ok[i];
			same += !strcmp(content(fds[i], buf, sizeof(buf)), "from-thread");
		}
		printf("threads: %d of %d wrote and synced, %d files as written\n", ok, THREADS,
		       same);
		return ok == THREADS && same == THREADS ? 0 : 1;
	}
	if (!strcmp(argv[2], "fork")) {
		int st = 0;
		pid_t pid;

		fds[0] = raw_open(argv[1], "fork");
		if (fds[0] < 0 || (pid = fork()) < 0)
			return 1;
		if (pid == 0)
			_exit(write(fds[0], "from-child\n", 11) == 11 && fsync(fds[0]) == 0 ? 0 : 1);
		if (waitpid(pid, &st, 0) != pid)
			return 1;
		printf("fork: child exit %d content=%s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		       content(fds[0], buf, sizeof(buf)));
		return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
	}
	fprintf(stderr, "firstcall: unknown mode %s\n", argv[2]);
	return 2;
}
