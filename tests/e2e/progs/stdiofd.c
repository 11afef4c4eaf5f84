// SPDX-License-Identifier: LGPL-2.1-or-later
/* stdiofd DIR: O_DSYNC descriptors written by routes that bypass the write
 * family: stdio (fdopen, fprintf, fflush, fclose: glibc's internal write and
 * close, which no preload sees) and sendfile. */

/* Prints, per route, whether the kernel still holds O_DSYNC (then its writes
 * were synchronous) and "ino_X=DEV:INO X=N" for the spy to count real syncs;
 * then whether a socket that reuses the fclose'd number works normally:
 * socket_write_ok=1, socket_flags_ok=1 (F_GETFL shows no O_DSYNC). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kflags.h"

int main(int argc, char **argv)
{
	char path[4096], got[8] = { 0 };
	struct stat st;
	int fd, sv[2], kfl, fl, flushes = 3;
	ssize_t w;
	FILE *f;

	if (argc != 2)
		return 2;
	alarm(30);
	snprintf(path, sizeof(path), "%s/stdio.log", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || fstat(fd, &st) != 0 || !(f = fdopen(fd, "w"))) {
		perror("stdiofd: setup");
		return 1;
	}
	for (int i = 0; i < flushes; i++) {
		fprintf(f, "record %d\n", i);
		if (fflush(f) != 0) {
			perror("stdiofd: fflush");
			return 1;
		}
	}
	kfl = kernel_flags(fd);
	printf("stdio_kernel_dsync=%d\n", kfl >= 0 && (kfl & O_DSYNC) ? 1 : 0);
	printf("ino_stdio=%llu:%llu flushes=%d\n", (unsigned long long)st.st_dev,
	       (unsigned long long)st.st_ino, flushes);
	{
		int src, dst, n = 2;
		off_t off = 0;

		snprintf(path, sizeof(path), "%s/sendfile.src", argv[1]);
		src = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		snprintf(path, sizeof(path), "%s/sendfile.dst", argv[1]);
		dst = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
		if (src < 0 || dst < 0 || write(src, "0123456789", 10) != 10 ||
		    fstat(dst, &st) != 0) {
			perror("stdiofd: sendfile setup");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			off = 0;
			if (sendfile(dst, src, &off, 10) != 10) {
				perror("stdiofd: sendfile");
				return 1;
			}
		}
		kfl = kernel_flags(dst);
		printf("sendfile_kernel_dsync=%d\n", kfl >= 0 && (kfl & O_DSYNC) ? 1 : 0);
		printf("ino_sendfile=%llu:%llu sendfiles=%d\n", (unsigned long long)st.st_dev,
		       (unsigned long long)st.st_ino, n);
		close(src);
		close(dst);
	}
	if (fclose(f) != 0) {
		perror("stdiofd: fclose");
		return 1;
	}

	/* The number is free again; a socket takes it. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("stdiofd: socketpair");
		return 1;
	}
	printf("reused=%d\n", sv[0] == fd || sv[1] == fd);
	if (sv[1] == fd) {
		int t = sv[0];

		sv[0] = sv[1];
		sv[1] = t;
	}
	errno = 0;
	w = write(sv[0], "ping", 4);
	printf("socket_write_ok=%d\n", w == 4 && read(sv[1], got, 4) == 4 &&
	       !memcmp(got, "ping", 4));
	if (w != 4)
		fprintf(stderr, "stdiofd: write to the socket on fd %d: %zd (%s)\n",
			sv[0], w, strerror(errno));
	fl = fcntl(sv[0], F_GETFL);
	printf("socket_flags_ok=%d\n", fl >= 0 && !(fl & O_DSYNC));
	return 0;
}
