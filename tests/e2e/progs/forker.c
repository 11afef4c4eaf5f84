// SPDX-License-Identifier: LGPL-2.1-or-later
/* forker DIR [-t THREADS] [-k FORKS]: worker threads keep commits in flight
 * while the main thread forks (and posix_spawns); each child syncs through
 * inherited and new descriptors from two threads of its own. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static int shared_dsync = -1;	/* O_DSYNC descriptor every thread writes to */
static int stop, errors;
static long ops;

struct slot {
	int id;
	int count;		/* 0: until stop */
	pthread_t tid;
};

static void err(const char *what)
{
	fprintf(stderr, "forker[%d]: %s: %s\n", (int)getpid(), what, strerror(errno));
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	char path[4096], buf[256];
	int fd, i;

	snprintf(path, sizeof(path), "%s/shared", dir);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		err("open shared");
		return NULL;
	}
	memset(buf, 'a' + s->id % 26, sizeof(buf));
	for (i = 0; s->count ? i < s->count : !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		off_t off = ((off_t)s->id * 64 + i % 64) * (off_t)sizeof(buf);

		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
			err("pwrite");
		if ((i % 2 ? fdatasync(fd) : fsync(fd)) != 0)
			err("sync");
		if (i % 3 == 0 &&
		    pwrite(shared_dsync, buf, 64, (off_t)s->id * 64) != 64)
			err("O_DSYNC pwrite");
		__atomic_add_fetch(&ops, 1, __ATOMIC_RELAXED);
	}
	close(fd);
	return NULL;
}

static int child(int k)
{
	struct slot s[2] = { { 1000 + 2 * k, 6, 0 }, { 1001 + 2 * k, 6, 0 } };
	char path[4096];
	int fd;

	alarm(20);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&s[i].tid, NULL, worker, &s[i]) != 0)
			return 1;
	snprintf(path, sizeof(path), "%s/child.%d", dir, k);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || write(fd, "child", 5) != 5 || fdatasync(fd) != 0)
		err("child file");
	if (pwrite(shared_dsync, "inherited", 9, 4096 + k * 16) != 9)
		err("inherited O_DSYNC fd");
	close(fd);
	for (int i = 0; i < 2; i++)
		pthread_join(s[i].tid, NULL);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	int threads = 4, forks = 6, c, bad = 0;
	char path[4096];
	struct slot *w;

	while ((c = getopt(argc, argv, "t:k:")) != -1) {
		if (c == 't')
			threads = atoi(optarg);
		else if (c == 'k')
			forks = atoi(optarg);
		else
			return 2;
	}
	if (optind != argc - 1)
		return 2;
	dir = argv[optind];
	alarm(60);
	snprintf(path, sizeof(path), "%s/dsync", dir);
	shared_dsync = open(path, O_RDWR | O_CREAT | O_DSYNC, 0644);
	if (shared_dsync < 0) {
		err("open dsync");
		return 1;
	}
	w = calloc((size_t)threads, sizeof(*w));
	for (int i = 0; i < threads; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].tid, NULL, worker, &w[i]) != 0)
			return 1;
	}
	for (int k = 0; k < forks; k++) {
		struct timespec nap = { 0, (3 + k % 4) * 1000 * 1000 };
		pid_t pid;
		int st;

		nanosleep(&nap, NULL);
		pid = fork();
		if (pid == 0)
			_exit(child(k));
		if (pid < 0 || waitpid(pid, &st, 0) != pid) {
			err("fork/wait");
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "forker: child %d ended with status 0x%x%s\n",
				k, st, WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ?
				" (hung: killed by its alarm)" : "");
			bad++;
		}
		/* posix_spawn (vfork-like, no atfork handlers) of a program
		 * that runs under the same preload */
		{
			char *const sargv[] = { "true", NULL };
			extern char **environ;

			if (posix_spawn(&pid, "/bin/true", NULL, NULL, sargv, environ) != 0 ||
			    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "forker: posix_spawn round %d failed\n", k);
				bad++;
			}
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	printf("forker: forks=%d bad_children=%d parent_ops=%ld errors=%d\n",
	       forks, bad, ops, errors);
	return bad || errors ? 1 : 0;
}
