// SPDX-License-Identifier: LGPL-2.1-or-later
/* forkreport DIR: one fsync in the parent, then two children that each make
 * one fsync and leave through exit(); the exit report must hold one line per
 * process. Prints the pids. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int one_fsync(const char *dir, const char *name)
{
	char path[4096];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return 1;
	rc = fsync(fd);
	close(fd);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	pid_t kids[2];
	int bad;

	if (argc != 2)
		return 2;
	alarm(30);
	bad = one_fsync(argv[1], "parent");
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			exit(one_fsync(argv[1], i ? "child1" : "child0"));
	}
	for (int i = 0; i < 2; i++) {
		int st;

		if (kids[i] < 0 || waitpid(kids[i], &st, 0) != kids[i] ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	printf("forkreport: parent=%d child0=%d child1=%d\n", (int)getpid(),
	       (int)kids[0], (int)kids[1]);
	return bad;
}
