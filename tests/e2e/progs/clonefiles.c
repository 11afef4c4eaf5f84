// SPDX-License-Identifier: LGPL-2.1-or-later
/* clonefiles DIR parent|child|vm: two processes that share one descriptor
 * table (clone with CLONE_FILES and without CLONE_VM: each has its own
 * memory, so neither library sees what the other opens). After the
 * clone, one of them (the one named) opens DIR/f O_DSYNC and passes its
 * number through a pipe; the other writes 4 KiB through it and prints
 * what the kernel's description says (/proc/self/fdinfo: whether it is
 * O_DSYNC, so that the write was synchronous) and what the write
 * returned: "dsync=1 wrote=4096" as bare.
 * unshare, closerange: one process, one memory, two tables. The main
 * thread opens DIR/f O_DSYNC; another thread gives itself a descriptor
 * table of its own (unshare(CLONE_FILES), or close_range() of that number
 * with CLOSE_RANGE_UNSHARE) and closes its copy of the number there; the
 * main thread then writes through its own and prints the same.
 * vm: the other way round, one memory and two tables (CLONE_VM without
 * CLONE_FILES). The parent opens DIR/f O_DSYNC before the clone; the
 * child closes that number and opens a plain file there, then exits; the
 * parent writes through its own descriptor and prints the same.
 * vfork: the parent opens DIR/f, DIR/g and DIR/h O_DSYNC; a vfork child
 * (the parent's memory, a copy of its table) closes the first, dup2()s 0
 * onto the second and fdopen()s the third (which must then be O_DSYNC in
 * the kernel's word, for stdio's writes), then exits; the parent writes
 * 4 KiB through each and prints whether fcntl(F_GETFL) still shows
 * O_DSYNC and what the writes returned: "getfl=1,1,1 wrote=4096,4096,4096"
 * as bare. */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kflags.h"

static int p[2];
static const char *dir;

static int opener(void)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || write(p[1], &fd, sizeof(fd)) != sizeof(fd))
		return perror("clonefiles: open"), 1;
	return 0;
}

static int writer(void)
{
	static char buf[4096];
	char line[64];
	ssize_t w;
	int fd, n;

	if (read(p[0], &fd, sizeof(fd)) != sizeof(fd))
		return perror("clonefiles: read"), 1;
	memset(buf, 'w', sizeof(buf));
	w = write(fd, buf, sizeof(buf));
	n = snprintf(line, sizeof(line), "dsync=%d wrote=%zd\n", kernel_dsync(fd), w);
	return write(1, line, (size_t)n) == n ? 0 : 1;
}

static int child_opens(void *arg)
{
	(void)arg;
	return opener();
}

/* vm: runs in the parent's memory while the parent waits for it; takes
 * the number from the pipe and puts it back */
static int child_reuses(void *arg)
{
	char path[4096];
	int fd;

	(void)arg;
	if (read(p[0], &fd, sizeof(fd)) != sizeof(fd))
		return 1;
	snprintf(path, sizeof(path), "%s/g", dir);
	close(fd);
	if (open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) != fd)
		return 1;
	return write(p[1], &fd, sizeof(fd)) == sizeof(fd) ? 0 : 1;
}

static int child_writes(void *arg)
{
	(void)arg;
	return writer();
}

static int split_fd;

static void *splitter(void *arg)
{
	if (!strcmp(arg, "unshare")) {
		if (unshare(CLONE_FILES) != 0)
			return perror("clonefiles: unshare"), (void *)1;
		close(split_fd);
	} else if (close_range((unsigned int)split_fd, (unsigned int)split_fd,
			       CLOSE_RANGE_UNSHARE) != 0) {
		return perror("clonefiles: close_range"), (void *)1;
	}
	return NULL;
}

static int split(const char *how)
{
	static char buf[4096];
	char path[4096];
	pthread_t t;
	void *res;
	ssize_t w;

	snprintf(path, sizeof(path), "%s/f", dir);
	split_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (split_fd < 0 || pthread_create(&t, NULL, splitter, (void *)how) ||
	    pthread_join(t, &res) || res)
		return fprintf(stderr, "clonefiles: %s failed\n", how), 1;
	memset(buf, 'w', sizeof(buf));
	w = write(split_fd, buf, sizeof(buf));
	printf("dsync=%d wrote=%zd\n", kernel_dsync(split_fd), w);
	return 0;
}

static int vforked(void)
{
	static char buf[4096];
	char path[4096];
	int fd[3], st, i;
	ssize_t w[3];
	pid_t pid;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%c", dir, "fgh"[i]);
		fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
		if (fd[i] < 0)
			return perror("clonefiles: open"), 1;
	}
	pid = vfork();
	if (pid == 0) {
		close(fd[0]);
		dup2(0, fd[1]);
		/* stdio's writes through it are the kernel's O_DSYNC ones */
		_exit(fdopen(fd[2], "w") && kernel_dsync(fd[2]) == 1 ? 0 : 3);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return fprintf(stderr, "clonefiles: vfork child failed\n"), 1;
	for (i = 0; i < 3; i++)
		w[i] = write(fd[i], buf, sizeof(buf));
	printf("getfl=%d,%d,%d wrote=%zd,%zd,%zd\n", !!(fcntl(fd[0], F_GETFL) & O_DSYNC),
	       !!(fcntl(fd[1], F_GETFL) & O_DSYNC), !!(fcntl(fd[2], F_GETFL) & O_DSYNC), w[0],
	       w[1], w[2]);
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = 256 * 1024;
	char *stack = malloc(size);
	int parent, st, r;
	pid_t pid;

	if (argc != 3 || !stack || pipe(p))
		return 2;
	dir = argv[1];
	if (!strcmp(argv[2], "vfork"))
		return vforked();
	if (!strcmp(argv[2], "unshare") || !strcmp(argv[2], "closerange"))
		return split(argv[2]);
	if (!strcmp(argv[2], "vm")) {
		if (opener() || (pid = clone(child_reuses, stack + size, CLONE_VM | SIGCHLD, NULL)) < 0)
			return perror("clonefiles: vm"), 1;
		if (waitpid(pid, &st, __WALL) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return fprintf(stderr, "clonefiles: child failed\n"), 1;
		return writer();
	}
	parent = !strcmp(argv[2], "parent");
	fflush(NULL);
	pid = clone(parent ? child_writes : child_opens, stack + size, CLONE_FILES | SIGCHLD, NULL);
	if (pid < 0)
		return perror("clonefiles: clone"), 1;
	r = parent ? opener() : writer();
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return fprintf(stderr, "clonefiles: child failed\n"), 1;
	return r;
}
