/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gcd's walk of the in-flight map, apart from gcd.c so the tests drive it
 * on the test object's maps. At each publication the requests in flight are
 * counted there per (disk, class), and entries issued longer ago than an age
 * limit (a completion the programs never saw: a driver that lost it, a
 * device removed with requests queued) are deleted, so they neither fill the
 * map nor count as in flight for ever. A completion that comes after all is
 * then an unknown one. */
#ifndef GCD_SWEEP_H
#define GCD_SWEEP_H
#include <stdint.h>
#include "bpf/gcd.h"

/* The block layer times a request out after 30 s by default; twice that,
 * and the programs have missed its completion. */
#define GCD_AGE_NS (60ull * 1000000000ull)

struct gcd_inflight {
	struct gcd_key i_key;
	uint32_t i_count;
};

struct gcd_sweep {
	struct gcd_inflight *s_keys; /* caller's array of s_cap entries */
	unsigned s_cap;
	unsigned s_used;	/* keys with requests in flight */
	uint64_t s_aged;	/* entries deleted by this sweep */
	uint64_t s_missed;	/* in flight, but s_keys was full */
};

/* One walk of the in-flight map at time now (CLOCK_MONOTONIC ns, the clock
 * of bpf_ktime_get_ns): counts into sw, deletes entries older than max_age.
 * Returns 0, or -errno from the map walk. */
int gcd_sweep_inflight(int inflight_fd, uint64_t now, uint64_t max_age, struct gcd_sweep *sw);

/* Requests in flight for key after a sweep (0 when none). */
uint32_t gcd_sweep_count(const struct gcd_sweep *sw, const struct gcd_key *key);
#endif
