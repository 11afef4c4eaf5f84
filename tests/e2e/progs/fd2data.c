// SPDX-License-Identifier: LGPL-2.1-or-later
/* fd2data HOW DIR: a daemon that closed its standard descriptors, so that
 * its data file lands on 2, then writes records to it and fsyncs each.
 * Nothing but the records may reach the file. HOW: close (0 and 2 closed,
 * /dev/null opened, then the data file), dup (2 made
 * from a data file's descriptor with dup), exec (2 closed before the
 * program starts: the caller does it). Prints "fd=N". */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096];
	int fd = -1, i;

	if (argc != 3)
		return 2;
	snprintf(path, sizeof(path), "%s/fd2data", argv[2]);
	if (!strcmp(argv[1], "close")) {
		close(0);
		close(2);
		open("/dev/null", O_RDONLY);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	} else if (!strcmp(argv[1], "dup")) {
		int d = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		close(2);
		fd = dup(d);
		close(d);
	} else if (!strcmp(argv[1], "exec")) {
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	}
	if (fd < 0)
		return 1;
	for (i = 0; i < 3; i++)
		if (write(fd, "record\n", 7) != 7 || fsync(fd))
			return 1;
	if (close(fd))
		return 1;
	dprintf(1, "fd=%d\n", fd);
	return 0;
}
