// SPDX-License-Identifier: LGPL-2.1-or-later
/* rawfork -m _Fork|clone|sysfork|vfork [-F] [-t THREADS] [-k CHILDREN]
 * [-n COUNT] DIR: the parent's threads (its main thread too) keep syncing
 * files of their own while the main thread makes children the ways that
 * run no atfork handler and leave the parent's thread id in every cache:
 * _Fork(), clone() without CLONE_VM, the raw fork system call, and vfork()
 * (whose child runs in its parent's memory, as the stopped main thread).
 * Each child syncs a file of its own COUNT times with nothing but
 * system-call wrappers, and exits 0 only when every request succeeded.
 * -F: one child first, before the parent makes any request of its own. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static int stop, count = 20;
static long parent_ops, parent_errors;

static int sync_once(int fd, int i)
{
	char buf[256];

	memset(buf, 'a' + i % 26, sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf), (off_t)(i % 16) * 4096) != (ssize_t)sizeof(buf))
		return -1;
	return fsync(fd);
}

static void *parent_worker(void *arg)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/parent.%ld", dir, (long)arg);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return NULL;
	for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		if (sync_once(fd, i))
			__atomic_add_fetch(&parent_errors, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&parent_ops, 1, __ATOMIC_RELAXED);
	}
	close(fd);
	return NULL;
}

/* No stdio, no malloc: locks other parent threads held are held forever. */
static int child_main(void *arg)
{
	char path[4096], msg[160];
	int fd, bad = 0, n;

	alarm(30);
	snprintf(path, sizeof(path), "%s/child.%ld", dir, (long)arg);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return 3;
	for (int i = 0; i < count; i++)
		if (sync_once(fd, i)) {
			n = snprintf(msg, sizeof(msg), "rawfork: child %ld: fsync %d: %s\n",
				     (long)arg, i, strerror(errno));
			if (write(2, msg, (size_t)n) < 0)
				bad += 0;
			bad++;
		}
	close(fd);
	return bad ? 1 : 0;
}

static pid_t make_child(const char *how, long k, char *stack, size_t stack_len)
{
	pid_t pid;

	if (!strcmp(how, "_Fork")) {
		pid = _Fork();
	} else if (!strcmp(how, "vfork")) {
		/* the child runs on this stack: it never returns from here */
		pid = vfork();
		if (pid == 0)
			_exit(child_main((void *)k));
		return pid;
	} else if (!strcmp(how, "sysfork")) {
#ifdef SYS_fork
		pid = (pid_t)syscall(SYS_fork);
#else
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
#endif
	} else {
		return clone(child_main, stack + stack_len, SIGCHLD, (void *)k);
	}
	if (pid == 0)
		_exit(child_main((void *)k));
	return pid;
}

int main(int argc, char **argv)
{
	const char *how = "_Fork";
	int threads = 3, children = 3, c, bad = 0, fd, first = 0;
	size_t stack_len = 1 << 20;
	char path[4096], *stack;
	pthread_t *tids;

	while ((c = getopt(argc, argv, "m:t:k:n:F")) != -1) {
		switch (c) {
		case 'F': first = 1; break;
		case 'm': how = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'k': children = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || (strcmp(how, "_Fork") && strcmp(how, "clone") &&
				   strcmp(how, "sysfork") && strcmp(how, "vfork")))
		return 2;
	dir = argv[optind];
	alarm(60);
	stack = malloc(stack_len);
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!stack || !tids)
		return 1;
	if (first) {
		/* the process's first request is the child's */
		pid_t pid = make_child(how, 99, stack, stack_len);
		int st = 0;

		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "rawfork: first child (%s) failed: status 0x%x\n", how, st);
			bad++;
		}
	}
	for (long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, parent_worker, (void *)i) != 0)
			return 1;
	snprintf(path, sizeof(path), "%s/parent.main", dir);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return 1;
	for (long k = 0, i = 0; k < children; k++) {
		pid_t pid;
		int st = 0;

		/* the parent's transactions are in full swing */
		for (int j = 0; j < 3; j++, i++)
			if (sync_once(fd, (int)i))
				parent_errors++;
		pid = make_child(how, k, stack, stack_len);
		if (pid < 0) {
			fprintf(stderr, "rawfork: %s: %s\n", how, strerror(errno));
			return 1;
		}
		/* the main thread, whose id the child carries, syncs on */
		while (waitpid(pid, &st, WNOHANG) == 0)
			if (sync_once(fd, (int)i++))
				parent_errors++;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "rawfork: child %ld (%s) ended with status 0x%x%s\n", k,
				how, st, WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ?
				" (hung: killed by its alarm)" : "");
			bad++;
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	close(fd);
	printf("rawfork: how=%s children=%d bad_children=%d parent_ops=%ld parent_errors=%ld\n",
	       how, children, bad, parent_ops, parent_errors);
	return bad || parent_errors ? 1 : 0;
}
