// SPDX-License-Identifier: LGPL-2.1-or-later
/* streamw: the writer of `make bench-dirty`. Writes MB MiB of zeros to FILE
 * in 1 MiB write() calls, then fsyncs it once; prints on stdout
 * "mb_per_s=X write_s=Y fsync_ms=Z" (mb_per_s counts both phases, 10^6
 * bytes/s, as dd conv=fsync does). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	double t0, t1, t2;
	long mb, i;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: streamw FILE MB\n");
		return 2;
	}
	mb = atol(argv[2]);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	t0 = now_s();
	for (i = 0; i < mb; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			perror("write");
			return 1;
		}
	t1 = now_s();
	if (fsync(fd) < 0) {
		perror("fsync");
		return 1;
	}
	t2 = now_s();
	printf("mb_per_s=%.1f write_s=%.2f fsync_ms=%.0f\n",
	       (double)mb * 1048576.0 / 1e6 / (t2 - t0), t1 - t0, (t2 - t1) * 1e3);
	return close(fd) < 0;
}
