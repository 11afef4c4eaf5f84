// SPDX-License-Identifier: LGPL-2.1-or-later
/* coldread: the reader of `make bench-dirty`. `coldread setup DIR N` makes N
 * files of 8 KiB; `coldread run DIR N SECS [PERIOD_MS]` every PERIOD_MS
 * (20) stats, opens and reads one random file of them, cold (its pages are
 * dropped with POSIX_FADV_DONTNEED after each read), and prints
 * "t_ms latency_us lag_us" per read, then a summary line on stderr.
 * latency is stat+open+read; lag counts from when the read was due, so a
 * stall also counts against the reads it kept from starting (coordinated
 * omission: a reader that waits 1 s misses 50 turns, not one). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char path[4096], buf[8192];
	int n, i, fd;

	if (argc < 4) {
		fprintf(stderr, "usage: coldread setup DIR N | run DIR N SECS [PERIOD_MS]\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (!strcmp(argv[1], "setup")) {
		memset(buf, 'r', sizeof(buf));
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%05d", argv[2], i);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
				perror(path);
				return 1;
			}
			close(fd);
		}
		return 0;
	}
	{
		double secs = atof(argv[4]);
		uint64_t period = (argc > 5 ? (uint64_t)atoi(argv[5]) : 20) * 1000000ULL;
		uint64_t t0 = gc_now_ns(), next = t0, end = t0 + (uint64_t)(secs * 1e9);
		size_t cap = (size_t)(secs * 1e9 / (double)period) + 16, k = 0;
		uint64_t *lat = calloc(cap, sizeof(*lat)), *lag = calloc(cap, sizeof(*lag));
		unsigned int seed = (unsigned int)getpid();
		struct stat st;

		while (gc_now_ns() < end && k < cap) {
			uint64_t a, b, due = next;
			struct timespec ts;

			snprintf(path, sizeof(path), "%s/f%05d", argv[2], rand_r(&seed) % n);
			a = gc_now_ns();
			if (stat(path, &st) < 0 || (fd = open(path, O_RDONLY)) < 0) {
				perror(path);
				return 1;
			}
			if (read(fd, buf, sizeof(buf)) < 0)
				perror("read");
			b = gc_now_ns();
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			close(fd);
			lat[k] = b - a;
			lag[k++] = b - due;
			printf("%.1f %.1f %.1f\n", (double)(a - t0) / 1e6, (double)(b - a) / 1e3,
			       (double)(b - due) / 1e3);
			/* reads that fell due while this one ran start at once,
			 * each timed from when it was due */
			next += period;
			if (next > gc_now_ns()) {
				ts.tv_sec = (time_t)(next / 1000000000ULL);
				ts.tv_nsec = (long)(next % 1000000000ULL);
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
		qsort(lat, k, sizeof(*lat), cmp);
		qsort(lag, k, sizeof(*lag), cmp);
		if (k)
			fprintf(stderr,
				"reads=%zu p50_ms=%.2f p99_ms=%.2f max_ms=%.2f lag_p99_ms=%.2f\n",
				k, (double)lat[k / 2] / 1e6, (double)lat[(k * 99) / 100] / 1e6,
				(double)lat[k - 1] / 1e6, (double)lag[(k * 99) / 100] / 1e6);
	}
	return 0;
}
