// SPDX-License-Identifier: LGPL-2.1-or-later
/* lowfd DIR: a process at its descriptor limit (RLIMIT_NOFILE 4: only 3
 * is free) opens a file O_DSYNC there, writes it, fsyncs it, and tries
 * one open more. Prints "fd=3 write=3 fsync=0 next=EMFILE" as bare. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rlimit rl = { 4, 4 };
	char path[4096];
	int fd, w, s, d;

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/lowfd", argv[1]);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return perror("setrlimit"), 1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	w = fd < 0 ? -1 : (int)write(fd, "abc", 3);
	s = fd < 0 ? -1 : fsync(fd);
	d = open(argv[1], O_RDONLY);
	printf("fd=%d write=%d fsync=%d next=%s\n", fd, w, s,
	       d >= 0 ? "opened" : errno == EMFILE ? "EMFILE" : strerror(errno));
	return 0;
}
