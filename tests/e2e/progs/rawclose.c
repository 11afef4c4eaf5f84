// SPDX-License-Identifier: LGPL-2.1-or-later
/* rawclose DIR: opens DIR/f O_DSYNC, closes every other descriptor from 3
 * to 1023 with raw close system calls (as a daemon's own loop might,
 * which no library sees), puts a file of its own at 256 with a raw dup3,
 * closes DIR/f, and prints whether its 256 is still open: "kept=1" as
 * bare (the library must not close, for a descriptor of its own that
 * went, a number that is the program's now). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096];
	int fd, g;

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/f", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return perror("rawclose: open"), 1;
	for (int i = 3; i < 1024; i++)
		if (i != fd)
			syscall(SYS_close, i);
	g = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (g < 0 || syscall(SYS_dup3, g, 256, 0) != 256)
		return perror("rawclose: dup3"), 1;
	close(fd);
	printf("kept=%d\n", fcntl(256, F_GETFD) >= 0);
	return 0;
}
