// SPDX-License-Identifier: LGPL-2.1-or-later
/* lease DIR: opens DIR/lease O_DSYNC (created), takes a write lease on it
 * (which the kernel grants only while nobody else has the file open),
 * writes 4 KiB, and prints what the lease answered, whether F_GETFL
 * shows O_DSYNC and what the write returned:
 * "lease=0 getfl=1 wrote=4096" as bare. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[4096];
	char path[4096];
	int fd, l, e;
	ssize_t w;

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/lease", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0)
		return perror("lease: open"), 1;
	l = fcntl(fd, F_SETLEASE, F_WRLCK);
	e = errno;
	w = write(fd, buf, sizeof(buf));
	printf("lease=%s getfl=%d wrote=%zd\n", l == 0 ? "0" : strerror(e),
	       !!(fcntl(fd, F_GETFL) & O_DSYNC), w);
	fcntl(fd, F_SETLEASE, F_UNLCK);
	return 0;
}
