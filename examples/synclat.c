// SPDX-License-Identifier: LGPL-2.1-or-later
/* synclat.so: times every fsync and fdatasync a program makes, as the program
 * sees them, for workloads that print no latencies of their own (fs_mark).
 * Preload it first, before libgc.so, so that it times libgc's answer too. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * At exit each process writes its latencies, one number of microseconds a
 * line, to $SYNCLAT_DIR/synclat.PID.  Without SYNCLAT_DIR it only passes
 * calls through.  Past MAX_SAMPLES calls the rest are not recorded.
 */
#define MAX_SAMPLES (1U << 20)

static uint32_t samples[MAX_SAMPLES];
static unsigned int nsamples;
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void record(uint64_t start)
{
	unsigned int i = __atomic_fetch_add(&nsamples, 1, __ATOMIC_RELAXED);
	uint64_t us = (now_ns() - start) / 1000;

	if (i < MAX_SAMPLES)
		samples[i] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

__attribute__((visibility("default"))) int fsync(int fd)
{
	uint64_t t = now_ns();
	int rc, saved;

	if (!real_fsync)
		real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	rc = real_fsync(fd);
	saved = errno;
	record(t);
	errno = saved;
	return rc;
}

__attribute__((visibility("default"))) int fdatasync(int fd)
{
	uint64_t t = now_ns();
	int rc, saved;

	if (!real_fdatasync)
		real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	rc = real_fdatasync(fd);
	saved = errno;
	record(t);
	errno = saved;
	return rc;
}

/* Buffered in one pass and written with a few write() calls: no stdio, so
 * nothing here depends on streams the program may have closed. */
__attribute__((destructor)) static void synclat_dump(void)
{
	const char *dir = getenv("SYNCLAT_DIR");
	unsigned int i, n = __atomic_load_n(&nsamples, __ATOMIC_RELAXED);
	char path[4096], buf[65536];
	size_t len = 0;
	int fd;

	if (!dir || !n)
		return;
	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	if (snprintf(path, sizeof(path), "%s/synclat.%d", dir, (int)getpid()) >=
	    (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u\n", samples[i]);
		if (len > sizeof(buf) - 16 || i + 1 == n) {
			if (write(fd, buf, len) != (ssize_t)len)
				break;
			len = 0;
		}
	}
	close(fd);
}
