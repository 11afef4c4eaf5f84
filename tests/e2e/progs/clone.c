// SPDX-License-Identifier: LGPL-2.1-or-later
/* clone DIR: clones of blocks between files whose descriptions are O_SYNC,
 * O_DSYNC or neither: FICLONE, FICLONERANGE, FIDEDUPERANGE and
 * copy_file_range, each into a file of its own, for every pair of a
 * source's flag (none, O_DSYNC, O_SYNC) and a destination's (none,
 * O_DSYNC) but none with none. xfs and btrfs commit a clone before it
 * returns when either description is synchronous; ext4 clones nothing,
 * and its copy_file_range is a write (the destination's flag only).
 * Prints "calls=20 cloned=C copied=K unsupported=U failed=F expect=E",
 * E being the calls bare would have committed, the program's own fsyncs
 * of the files it fills included: the spies must see that many, each
 * covered. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#define LEN 65536

static char buf[LEN];
static int fsyncs;

/* A file of @path holding LEN bytes of 'c' on disk, opened with @flags. */
static int make(const char *path, int flags, int fill)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return perror(path), exit(1), -1;
	if (fill && (write(fd, buf, LEN) != LEN || fsync(fd)))
		return perror(path), exit(1), -1;
	fsyncs += fill;
	close(fd);
	fd = open(path, O_RDWR | flags);
	if (fd < 0)
		return perror(path), exit(1), -1;
	return fd;
}

int main(int argc, char **argv)
{
	static const int sflags[] = { 0, O_DSYNC, O_SYNC }, dflags[] = { 0, O_DSYNC };
	int calls = 0, cloned = 0, copied = 0, unsupported = 0, failed = 0, expect = 0;
	struct statfs sf;
	int remaps;

	if (argc != 2 || statfs(argv[1], &sf))
		return 2;
	remaps = sf.f_type == 0x58465342 || sf.f_type == (typeof(sf.f_type))0x9123683E;
	memset(buf, 'c', sizeof(buf));
	for (int s = 0; s < 3; s++) {
		char path[4096];
		int src;

		snprintf(path, sizeof(path), "%s/cl.src.%d", argv[1], s);
		src = make(path, sflags[s], 1);
		for (int d = 0; d < 2; d++) {
			if (!sflags[s] && !dflags[d])
				continue;
			for (int how = 0; how < 4; how++) {
				struct file_clone_range cr = { .src_fd = src, .src_length = LEN };
				struct {
					struct file_dedupe_range r;
					struct file_dedupe_range_info i;
				} dd;
				loff_t in = 0, out = 0;
				int dst, r;

				snprintf(path, sizeof(path), "%s/cl.%d.%d.%d", argv[1], s, d, how);
				dst = make(path, dflags[d], how == 2);
				calls++;
				switch (how) {
				case 0: r = ioctl(dst, FICLONE, src); break;
				case 1: r = ioctl(dst, FICLONERANGE, &cr); break;
				case 2:
					memset(&dd, 0, sizeof(dd));
					dd.r.src_length = LEN;
					dd.r.dest_count = 1;
					dd.i.dest_fd = dst;
					r = ioctl(src, FIDEDUPERANGE, &dd.r);
					if (r == 0 && dd.i.status < 0) {
						errno = -dd.i.status;
						r = -1;
					} else if (r == 0 && (dd.i.status != FILE_DEDUPE_RANGE_SAME ||
							      dd.i.bytes_deduped != LEN)) {
						fprintf(stderr, "clone: dedupe status %d, %llu bytes\n",
							dd.i.status, (unsigned long long)dd.i.bytes_deduped);
						r = -1;
						errno = EINVAL;
					}
					break;
				default:
					r = copy_file_range(src, &in, dst, &out, LEN, 0) == LEN ? 0 : -1;
				}
				if (r == 0 && how < 3) {
					cloned++;
					expect++;
				} else if (r == 0) {
					copied++;
					expect += dflags[d] || remaps;
				} else if (how < 3 && (errno == EOPNOTSUPP || errno == EINVAL ||
						       errno == EXDEV) && !remaps) {
					unsupported++;
				} else {
					fprintf(stderr, "clone %d %d %d: %s\n", s, d, how, strerror(errno));
					failed++;
				}
				close(dst);
			}
		}
		close(src);
	}
	printf("calls=%d cloned=%d copied=%d unsupported=%d failed=%d expect=%d\n", calls, cloned,
	       copied, unsupported, failed, expect + fsyncs);
	return 0;
}
