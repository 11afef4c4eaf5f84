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

/* @n / @d for rates and times, UINT64_MAX where the quotient does not fit
 * (or @d is 0). On x86-64 one divq: a 128-bit division in C is a call to
 * libgcc's __udivti3, linked at the end of the library's text, and a
 * process whose first large write reached the dirty limiter paid a page
 * fault (and kept 28 KiB resident) for it alone. */
static inline uint64_t gc_div128(unsigned __int128 n, uint64_t d)
{
	uint64_t hi = (uint64_t)(n >> 64), q;

	if (hi >= d)
		return UINT64_MAX;
#ifdef __x86_64__
	uint64_t r;

	__asm__("divq %4" : "=a"(q), "=d"(r) : "a"((uint64_t)n), "d"(hi), "rm"(d));
#else
	q = (uint64_t)(n / d);
#endif
	return q;
}

/* @a * @b / @d, rounded down, saturating as gc_div128. */
static inline uint64_t gc_muldiv(uint64_t a, uint64_t b, uint64_t d)
{
	return gc_div128((unsigned __int128)a * b, d);
}
#endif
