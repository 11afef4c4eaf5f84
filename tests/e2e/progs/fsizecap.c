// SPDX-License-Identifier: LGPL-2.1-or-later
/* fsizecap DIR: the process's files may grow to 8 KiB (RLIMIT_FSIZE; a
 * file grown past it is SIGXFSZ, which kills). It writes 4 KiB to a file
 * of DIR and fsyncs it: "fsync=0" as bare. The library's own files (the
 * shared segment, the statistics file) are larger: it once grew them
 * anyway, and the program died. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rlimit rl = { 8192, 8192 };
	char path[4096], buf[4096];
	int fd;

	if (argc != 2 || setrlimit(RLIMIT_FSIZE, &rl))
		return 2;
	memset(buf, 'f', sizeof(buf));
	snprintf(path, sizeof(path), "%s/f", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, sizeof(buf)) != sizeof(buf))
		return perror("fsizecap"), 1;
	printf("fsync=%d\n", fsync(fd));
	return 0;
}
