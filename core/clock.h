/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Monotonic time in nanoseconds: the only clock the journal and policy use.
 * Policy code never calls it; it is handed `now` so tests drive a fake clock. */
#ifndef GC_CLOCK_H
#define GC_CLOCK_H
#include <stdint.h>
#include <time.h>

#define GC_NSEC_PER_USEC 1000ULL
#define GC_NSEC_PER_MSEC 1000000ULL
#define GC_NSEC_PER_SEC 1000000000ULL

static inline uint64_t gc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * GC_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}
#endif
