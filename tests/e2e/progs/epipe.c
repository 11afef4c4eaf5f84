// SPDX-License-Identifier: LGPL-2.1-or-later
/* epipe FILE: a program whose stderr is a pipe nobody reads any more (its
 * reader exited), which never writes there itself: it writes FILE, fsyncs
 * it and exits 0. Anything written to its stderr raises SIGPIPE. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int p[2], fd;

	if (argc != 2 || pipe(p))
		return 2;
	close(p[0]);
	if (dup2(p[1], 2) != 2)
		return 2;
	close(p[1]);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) || close(fd))
		return 1;
	return 0;
}
