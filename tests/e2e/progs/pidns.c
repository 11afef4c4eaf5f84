// SPDX-License-Identifier: LGPL-2.1-or-later
/* pidns [-T SECONDS] PROG [ARG...]: runs PROG twice at once, one copy in
 * this pid namespace and one as the first process of a new one (root
 * only), both seeing the same /dev/shm and uid, as containers sharing it
 * do. With -T, the second copy is in a new time namespace instead (the
 * same pid namespace), its monotonic clock SECONDS ahead. Exits 0 only
 * when both copies did; 77 when the namespace cannot be made. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timens.h"

static pid_t start(char **argv)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], argv);
		fprintf(stderr, "pidns: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

static int reap(pid_t pid, const char *where)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	fprintf(stderr, "pidns: the copy in %s ended with status 0x%x\n", where, st);
	return 1;
}

int main(int argc, char **argv)
{
	const char *ahead = NULL;
	pid_t here, there;
	int bad;

	if (argc > 2 && !strcmp(argv[1], "-T")) {
		ahead = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 2)
		return 2;
	here = start(argv + 1);
	if (ahead ? time_ahead(ahead) != 0 : unshare(CLONE_NEWPID) != 0) {
		fprintf(stderr, "pidns: %s: %s\n", ahead ? "a time namespace" : "unshare(CLONE_NEWPID)",
			strerror(errno));
		kill(here, SIGKILL);
		reap(here, "this namespace");
		return 77;
	}
	there = start(argv + 1);	/* pid 1 of the new pid namespace, or in the new time one */
	bad = reap(here, "this namespace");
	bad |= reap(there, "the new namespace");
	printf("pidns: here=%d there=%d bad=%d\n", (int)here, (int)there, bad);
	return bad;
}
