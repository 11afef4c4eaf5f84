// SPDX-License-Identifier: LGPL-2.1-or-later
/* A mail spool: N processes deliver messages (write into tmp/, fsync the
 * file, rename into new/, fsync new/), the pattern of maildir delivery
 * agents. Prints "delivered=N" on success.
 *   spool DIR PROCS MESSAGES */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int deliver(const char *dir, int w, int n)
{
	char tmp[4096], dst[4096], body[256];
	int newfd, i;

	snprintf(tmp, sizeof(tmp), "%s/new", dir);
	newfd = open(tmp, O_RDONLY | O_DIRECTORY);
	if (newfd < 0)
		return 1;
	for (i = 0; i < n; i++) {
		int fd, len = snprintf(body, sizeof(body), "message %d from worker %d\n", i, w);

		snprintf(tmp, sizeof(tmp), "%s/tmp/%d.%d", dir, w, i);
		snprintf(dst, sizeof(dst), "%s/new/%d.%d", dir, w, i);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, body, (size_t)len) != len || fsync(fd) || close(fd))
			return 2;
		if (rename(tmp, dst) || fsync(newfd))
			return 3;
	}
	return close(newfd) ? 4 : 0;
}

int main(int argc, char **argv)
{
	char path[4096];
	int procs, n, w, st, bad = 0;

	if (argc != 4)
		return 2;
	procs = atoi(argv[2]);
	n = atoi(argv[3]);
	snprintf(path, sizeof(path), "%s/tmp", argv[1]);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/new", argv[1]);
	mkdir(path, 0755);
	for (w = 0; w < procs; w++) {
		pid_t p = fork();

		if (p == 0)
			_exit(deliver(argv[1], w, n));
		if (p < 0)
			return 1;
	}
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	if (bad)
		return 1;
	printf("delivered=%d\n", procs * n);
	return 0;
}
