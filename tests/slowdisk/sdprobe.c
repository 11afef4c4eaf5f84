// SPDX-License-Identifier: LGPL-2.1-or-later
/* sdprobe: the small I/O steps the slow-disk self-test needs done exactly:
 * timed fsyncs, a write + fsync reporting errno by name, O_DIRECT writes and
 * reads that bypass the page cache, and a byte-pattern count over an image. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALIGN 4096

static void usage(void)
{
	fprintf(stderr,
		"usage: sdprobe fsync-lat FILE N\n"
		"       sdprobe write-sync FILE TEXT\n"
		"       sdprobe write-direct FILE OFFSET TOKEN LEN\n"
		"       sdprobe read-direct FILE OFFSET LEN TOKEN\n"
		"       sdprobe count FILE TOKEN\n");
	exit(2);
}

static const char *ename(int e)
{
	const char *s = strerrorname_np(e);

	return s ? s : "E?";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static long long num(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 0);

	if (*end || v < 0)
		usage();
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Overwrites one 4 KiB block and fsyncs, n times; the first round is not
 * counted (it may allocate). */
static int fsync_lat(const char *path, int n)
{
	char buf[ALIGN];
	uint64_t *lat = calloc(n, sizeof(*lat));
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0 || !lat || n < 1) {
		perror(path);
		return 1;
	}
	for (int i = -1; i < n; i++) {
		uint64_t t0;

		memset(buf, 'a' + (i + 1) % 26, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf)) {
			printf("result=write:%s\n", ename(errno));
			return 1;
		}
		t0 = now_ns();
		if (fsync(fd)) {
			printf("result=fsync:%s\n", ename(errno));
			return 1;
		}
		if (i >= 0)
			lat[i] = now_ns() - t0;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("result=ok\nmedian_us=%llu\nmin_us=%llu\nmax_us=%llu\n",
	       (unsigned long long)lat[n / 2] / 1000, (unsigned long long)lat[0] / 1000,
	       (unsigned long long)lat[n - 1] / 1000);
	close(fd);
	free(lat);
	return 0;
}

static int write_sync(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		printf("result=open:%s\n", ename(errno));
		return 1;
	}
	if (write(fd, text, len) != (ssize_t)len) {
		printf("result=write:%s\n", ename(errno));
		return 1;
	}
	if (fsync(fd)) {
		printf("result=fsync:%s\n", ename(errno));
		return 1;
	}
	close(fd);
	printf("result=ok\n");
	return 0;
}

static void *token_buf(const char *token, size_t len)
{
	size_t tl = strlen(token);
	char *buf;

	if (!tl || posix_memalign((void **)&buf, ALIGN, len))
		usage();
	for (size_t i = 0; i < len; i++)
		buf[i] = token[i % tl];
	return buf;
}

static int write_direct(const char *path, off_t off, const char *token, size_t len)
{
	char *buf = token_buf(token, len);
	int fd = open(path, O_WRONLY | O_DIRECT);

	if (fd < 0) {
		printf("result=open:%s\n", ename(errno));
		return 1;
	}
	if (pwrite(fd, buf, len, off) != (ssize_t)len) {
		printf("result=write:%s\n", ename(errno));
		return 1;
	}
	/* deliberately no fsync */
	close(fd);
	free(buf);
	printf("result=ok\n");
	return 0;
}

static int read_direct(const char *path, off_t off, size_t len, const char *token)
{
	char *buf;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign((void **)&buf, ALIGN, len)) {
		printf("result=open:%s\n", ename(errno));
		return 1;
	}
	if (pread(fd, buf, len, off) != (ssize_t)len) {
		printf("result=read:%s\n", ename(errno));
		return 1;
	}
	close(fd);
	if (!memmem(buf, len, token, strlen(token))) {
		printf("result=absent\n");
		return 1;
	}
	printf("result=found\n");
	free(buf);
	return 0;
}

/* Occurrences of token anywhere in the file, chunks overlapping by the
 * token length so none is missed at a boundary. */
static int count(const char *path, const char *token)
{
	size_t tl = strlen(token), chunk = 8 << 20, have = 0;
	char *buf = malloc(chunk + tl);
	unsigned long long n = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !buf || !tl) {
		perror(path);
		return 2;
	}
	for (;;) {
		ssize_t r = read(fd, buf + have, chunk + tl - have);
		char *p, *end;

		if (r < 0) {
			perror(path);
			return 2;
		}
		have += r;
		end = buf + have;
		for (p = buf; (p = memmem(p, end - p, token, tl)); p += tl)
			n++;
		if (r == 0)
			break;
		if (have >= tl) {
			/* keep tl-1 bytes: a match ending there is not yet counted */
			memmove(buf, end - (tl - 1), tl - 1);
			have = tl - 1;
		}
	}
	printf("%llu\n", n);
	close(fd);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "fsync-lat") && argc == 4)
		return fsync_lat(argv[2], (int)num(argv[3]));
	if (!strcmp(argv[1], "write-sync") && argc == 4)
		return write_sync(argv[2], argv[3]);
	if (!strcmp(argv[1], "write-direct") && argc == 6)
		return write_direct(argv[2], num(argv[3]), argv[4], num(argv[5]));
	if (!strcmp(argv[1], "read-direct") && argc == 6)
		return read_direct(argv[2], num(argv[3]), num(argv[4]), argv[5]);
	if (!strcmp(argv[1], "count") && argc == 4)
		return count(argv[2], argv[3]);
	usage();
	return 2;
}
