// SPDX-License-Identifier: LGPL-2.1-or-later
/* dirtyeio: writeback errors and the dirty limiter.
 *   dirtyeio prep FILE MB    writes and fsyncs MB MiB, prints the file's
 *                            extents on the disk: "ext OFFSET LENGTH"
 *   dirtyeio write FILE MB   overwrites the file in 256 KiB write() calls,
 *                            then fsyncs twice: "fsync1=E fsync2=E" with E
 *                            0 or the errno name
 *   dirtyeio stream FILE MB  pwrite, O_APPEND write (a second description)
 *                            and writev in turn, then one fdatasync:
 *                            "fdatasync=E" */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK (256 * 1024)

static const char *ename(int r)
{
	return r == 0 ? "0" : errno == EIO ? "EIO" : errno == ENOSPC ? "ENOSPC" : strerror(errno);
}

int main(int argc, char **argv)
{
	static char buf[CHUNK];
	long mb, i, n;
	int fd;

	if (argc != 4)
		return 2;
	mb = atol(argv[3]);
	n = mb * (1024 * 1024 / CHUNK);
	memset(buf, 'd', sizeof(buf));
	if (!strcmp(argv[1], "prep")) {
		struct {
			struct fiemap f;
			struct fiemap_extent e[32];
		} m;

		fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return 1;
		for (i = 0; i < n; i++)
			if (write(fd, buf, CHUNK) != CHUNK)
				return 1;
		if (fsync(fd))
			return 1;
		memset(&m, 0, sizeof(m));
		m.f.fm_length = ~0ULL;
		m.f.fm_flags = FIEMAP_FLAG_SYNC;
		m.f.fm_extent_count = 32;
		if (ioctl(fd, FS_IOC_FIEMAP, &m.f) < 0)
			return 1;
		for (i = 0; i < (long)m.f.fm_mapped_extents; i++)
			printf("ext %llu %llu\n", (unsigned long long)m.e[i].fe_physical,
			       (unsigned long long)m.e[i].fe_length);
		return close(fd) ? 1 : 0;
	}
	if (!strcmp(argv[1], "write")) {
		int r1, r2;

		fd = open(argv[2], O_WRONLY);
		if (fd < 0)
			return 1;
		for (i = 0; i < n; i++)
			if (write(fd, buf, CHUNK) != CHUNK)
				return 1;
		r1 = fsync(fd);
		printf("fsync1=%s ", ename(r1));
		r2 = fsync(fd);
		printf("fsync2=%s\n", ename(r2));
		return 0;
	}
	if (!strcmp(argv[1], "stream")) {
		int ap, r;
		struct iovec iov[2] = { { buf, CHUNK / 2 }, { buf + CHUNK / 2, CHUNK / 2 } };

		fd = open(argv[2], O_WRONLY);
		ap = open(argv[2], O_WRONLY | O_APPEND);
		if (fd < 0 || ap < 0)
			return 1;
		for (i = 0; i < n; i++) {
			ssize_t w;

			switch (i % 3) {
			case 0: w = pwrite(fd, buf, CHUNK, (off_t)i * CHUNK); break;
			case 1: w = write(ap, buf, CHUNK); break;
			default:
				lseek(fd, (off_t)i * CHUNK, SEEK_SET);
				w = writev(fd, iov, 2);
			}
			if (w != CHUNK)
				return 1;
		}
		r = fdatasync(fd);
		printf("fdatasync=%s\n", ename(r));
		return 0;
	}
	return 2;
}
