// SPDX-License-Identifier: LGPL-2.1-or-later
/* forkraw DIR [-n ROUNDS] [-p|-t]: the parent and a child made with _Fork (no
 * atfork handlers run: whatever the library cached about its thread is
 * stale in the child) each fsync a file of their own, at the same time, in
 * rounds. Every request must still be durable on its own inode: the child
 * is alive, whatever its stale identity looks like to a peer. With -p
 * (root) the child is a plain fork in a new pid namespace instead: to it,
 * the parent's pid names no process at all. With -t (root) it is a plain
 * fork in a new time namespace whose monotonic clock runs a day ahead. */

/* Prints "forkraw: rounds=N parent_errors=N child_status=S"; exits 1 when
 * a call failed or the child did not end cleanly. */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timens.h"

extern pid_t _Fork(void);

/* Both processes start each round together, so their requests meet. */
static volatile unsigned *round_no;

static int sync_loop(const char *path, int rounds, int parent)
{
	int fd = open(path, O_RDWR | O_CREAT, 0644), errors = 0;
	char buf[64];

	if (fd < 0)
		return 1;
	memset(buf, parent ? 'p' : 'c', sizeof(buf));
	for (int i = 0; i < rounds; i++) {
		if (parent) {
			__atomic_store_n(round_no, (unsigned)i + 1, __ATOMIC_RELEASE);
		} else {
			while (__atomic_load_n(round_no, __ATOMIC_ACQUIRE) < (unsigned)i + 1)
				;
		}
		if (pwrite(fd, buf, sizeof(buf), (off_t)(i % 64) * 64) != (ssize_t)sizeof(buf) ||
		    fsync(fd) != 0) {
			dprintf(2, "forkraw: %s: round %d: %s\n", parent ? "parent" : "child", i,
				strerror(errno));
			errors++;
		}
	}
	close(fd);
	return errors;
}

int main(int argc, char **argv)
{
	int rounds = 10, c, st = 0, perr, newns = 0;
	char a[4096], b[4096];
	pid_t pid;

	while ((c = getopt(argc, argv, "n:pt")) != -1) {
		if (c == 'n')
			rounds = atoi(optarg);
		else if (c == 'p')
			newns = 1;
		else if (c == 't')
			newns = 2;
		else
			return 2;
	}
	if (optind != argc - 1)
		return 2;
	snprintf(a, sizeof(a), "%s/parent", argv[optind]);
	snprintf(b, sizeof(b), "%s/child", argv[optind]);
	round_no = mmap(NULL, sizeof(*round_no), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (round_no == MAP_FAILED)
		return 1;
	/* one request first: the library's domain exists before the fork */
	if (sync_loop(a, 1, 1) != 0)
		return 1;
	__atomic_store_n(round_no, 0, __ATOMIC_RELEASE);
	pid = newns ? fork() : _Fork();
	if (pid < 0)
		return 1;
	if (pid == 0 && newns) {
		pid_t g;

		if (newns == 1 && unshare(CLONE_NEWPID) != 0) {
			dprintf(2, "forkraw: unshare(CLONE_NEWPID): %s\n", strerror(errno));
			_exit(3);
		}
		if (newns == 2 && time_ahead("86400") != 0) {
			dprintf(2, "forkraw: a time namespace: %s\n", strerror(errno));
			_exit(3);
		}
		g = fork();
		if (g == 0)
			_exit(sync_loop(b, rounds, 0) ? 1 : 0);
		if (g < 0 || waitpid(g, &st, 0) != g)
			_exit(1);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	if (pid == 0)
		_exit(sync_loop(b, rounds, 0) ? 1 : 0);
	perr = sync_loop(a, rounds, 1);
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("forkraw: rounds=%d parent_errors=%d child_status=0x%x\n", rounds, perr, st);
	return perr || !WIFEXITED(st) || WEXITSTATUS(st) ? 1 : 0;
}
