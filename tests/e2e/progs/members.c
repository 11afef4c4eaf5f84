// SPDX-License-Identifier: LGPL-2.1-or-later
/* members -n N FILE PROG [ARG...]: N processes each sync FILE once (under
 * the inherited preload, so each becomes a member of FILE's shared domain)
 * and stay alive; once all have, PROG runs without LD_PRELOAD (it sets its
 * own, e.g. through strace -E). The members exit when PROG has ended. Exit
 * status: PROG's, or 1 when a member could not sync. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int member(const char *file, int ready, int hold)
{
	int fd = open(file, O_RDWR | O_CREAT, 0644);
	char c = fd >= 0 && write(fd, "m", 1) == 1 && fsync(fd) == 0 ? 'y' : 'n';

	if (write(ready, &c, 1) != 1)
		return 1;
	/* until the other end closes */
	while (read(hold, &c, 1) > 0)
		;
	return 0;
}

int main(int argc, char **argv)
{
	int n = 256, c, ready[2], hold[2], bad = 0, st;
	pid_t prog;

	while ((c = getopt(argc, argv, "+n:")) != -1) {
		if (c == 'n')
			n = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind < 2 || pipe(ready) || pipe(hold))
		return 2;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "members: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0) {
			close(ready[0]);
			close(hold[1]);
			exit(member(argv[optind], ready[1], hold[0]));
		}
	}
	close(ready[1]);
	close(hold[0]);
	for (int i = 0; i < n; i++) {
		char r;

		if (read(ready[0], &r, 1) != 1 || r != 'y')
			bad++;
	}
	if (bad) {
		fprintf(stderr, "members: %d of %d members could not sync\n", bad, n);
		return 1;
	}
	prog = fork();
	if (prog == 0) {
		close(hold[1]);
		unsetenv("LD_PRELOAD");
		execvp(argv[optind + 1], argv + optind + 1);
		fprintf(stderr, "members: exec %s: %s\n", argv[optind + 1], strerror(errno));
		_exit(127);
	}
	if (prog < 0 || waitpid(prog, &st, 0) != prog)
		return 1;
	close(hold[1]);
	while (wait(NULL) > 0)
		;
	printf("members: n=%d prog_status=0x%x\n", n, st);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
