// SPDX-License-Identifier: LGPL-2.1-or-later
/* firstfork DIR [ROUNDS]: a process's first sync races its forks. Each
 * round runs this program afresh (nothing of the library made yet): one
 * thread writes and fsyncs a file of its own at once, 3 times, while the
 * main thread forks 4 children straight away; each child writes and
 * fsyncs a file of its own from two threads, and must end within 10 s.
 * The library makes its first domain while the forks happen: a child may
 * copy it half made, with its lock held by a thread it does not have.
 * Exit 0 when every round, child and call did what it should. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static const char *dir;
static int errors;

static void fail(const char *what)
{
	fprintf(stderr, "firstfork[%d]: %s: %s\n", (int)getpid(), what, strerror(errno));
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
}

/* @arg: a name; writes and fsyncs DIR/NAME 3 times */
static void *syncer(void *arg)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, (const char *)arg);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fail("open");
		return NULL;
	}
	for (int i = 0; i < 3; i++)
		if (write(fd, "x", 1) != 1 || fsync(fd) != 0)
			fail("write and fsync");
	if (close(fd))
		fail("close");
	return NULL;
}

static int child(int k)
{
	char a[64], b[64];
	pthread_t t[2];

	alarm(10);
	snprintf(a, sizeof(a), "c%d.%d.a", (int)getpid(), k);
	snprintf(b, sizeof(b), "c%d.%d.b", (int)getpid(), k);
	if (pthread_create(&t[0], NULL, syncer, a) || pthread_create(&t[1], NULL, syncer, b))
		return 1;
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	return errors ? 1 : 0;
}

/* One round, in a fresh process. */
static int one(void)
{
	pid_t kids[4];
	char name[64];
	pthread_t t;
	int bad = 0;

	snprintf(name, sizeof(name), "p%d", (int)getpid());
	if (pthread_create(&t, NULL, syncer, name))
		return 1;
	for (int k = 0; k < 4; k++) {
		kids[k] = fork();
		if (kids[k] == 0)
			_exit(child(k));
		if (kids[k] < 0)
			fail("fork");
	}
	for (int k = 0; k < 4; k++) {
		int st;

		if (kids[k] <= 0)
			continue;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "firstfork: child %d ended with status 0x%x%s\n", k, st,
				WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ?
				" (hung: killed by its alarm)" : "");
			bad++;
		}
	}
	pthread_join(t, NULL);
	return bad || errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 50, bad = 0;

	if (argc < 2)
		return 2;
	dir = argv[1];
	if (argc > 3 && !strcmp(argv[3], "one"))
		return one();
	for (int r = 0; r < rounds; r++) {
		char *const args[] = { argv[0], (char *)dir, "1", "one", NULL };
		pid_t pid;
		int st;

		if (posix_spawn(&pid, argv[0], NULL, NULL, args, environ) != 0 ||
		    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "firstfork: round %d failed\n", r);
			bad++;
		}
	}
	printf("firstfork: rounds=%d bad=%d\n", rounds, bad);
	return bad ? 1 : 0;
}
