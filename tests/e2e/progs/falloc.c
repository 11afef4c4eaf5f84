// SPDX-License-Identifier: LGPL-2.1-or-later
/* falloc DIR: fallocate, fallocate64, posix_fallocate and
 * posix_fallocate64 through O_DSYNC and O_SYNC descriptors, each growing
 * its own file by 64 KiB. ext4 and XFS commit such a call before it
 * returns; the spies check that a converted descriptor's is too. Prints
 * "calls=8 failed=K". */
#define _FILE_OFFSET_BITS 32
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern int fallocate64(int, int, off64_t, off64_t);
extern int posix_fallocate64(int, off64_t, off64_t);

int main(int argc, char **argv)
{
	static const int flags[] = { O_DSYNC, O_SYNC };
	int calls = 0, failed = 0;

	if (argc != 2)
		return 2;
	for (int f = 0; f < 2; f++) {
		for (int how = 0; how < 4; how++) {
			char path[4096];
			int fd, r;

			snprintf(path, sizeof(path), "%s/fa.%d.%d", argv[1], f, how);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | flags[f], 0644);
			if (fd < 0 || write(fd, "x", 1) != 1)
				return perror("open"), 1;
			switch (how) {
			case 0: r = fallocate(fd, 0, 0, 65536) ? errno : 0; break;
			case 1: r = fallocate64(fd, 0, 0, 65536) ? errno : 0; break;
			case 2: r = posix_fallocate(fd, 0, 65536); break;
			default: r = posix_fallocate64(fd, 0, 65536); break;
			}
			calls++;
			if (r) {
				fprintf(stderr, "falloc %d %d: %s\n", f, how, strerror(r));
				failed++;
			}
			close(fd);
		}
	}
	printf("calls=%d failed=%d\n", calls, failed);
	return 0;
}
