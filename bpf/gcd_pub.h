/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seqlock on core/blkstats.h's file, both sides: gcd's writer and the
 * reader the tests use, plus the synthetic snapshots of gcd --synthetic,
 * whose every field follows from one generation number so a reader can tell
 * a torn copy from a whole one. */
#ifndef GCD_PUB_H
#define GCD_PUB_H
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/blkstats.h"

/* Writer: bs_seq odd, the body, bs_seq even. The release fence after the odd
 * store keeps the body's stores from being seen before it; the release store
 * of the even value keeps them from being seen after it. */
static inline void gcd_pub_write(struct gc_blk_stats *shm, const struct gc_blk_stats *next)
{
	uint64_t seq = __atomic_load_n(&shm->bs_seq, __ATOMIC_RELAXED);

	seq |= 1;
	__atomic_store_n(&shm->bs_seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	shm->bs_magic = next->bs_magic;
	shm->bs_version = next->bs_version;
	shm->bs_size = next->bs_size;
	shm->bs_heartbeat_ns = next->bs_heartbeat_ns;
	shm->bs_interval_ms = next->bs_interval_ms;
	shm->bs_ndisks = next->bs_ndisks;
	shm->bs_pid = next->bs_pid;
	shm->bs_pad = next->bs_pad;
	memcpy(shm->bs_disks, next->bs_disks, sizeof(shm->bs_disks));
	__atomic_store_n(&shm->bs_seq, seq + 1, __ATOMIC_RELEASE);
}

/* Reader: a copy between two equal even reads of bs_seq. Returns 0, or -1
 * after `tries` attempts that all raced the writer. */
static inline int gcd_pub_read(const struct gc_blk_stats *shm, struct gc_blk_stats *out,
			       int tries)
{
	uint64_t s1, s2;

	while (tries-- > 0) {
		s1 = __atomic_load_n(&shm->bs_seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		memcpy(out, (const void *)shm, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&shm->bs_seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			out->bs_seq = s1;
			return 0;
		}
	}
	return -1;
}

/* Synthetic snapshot number g: disk 0's FLUSH count holds g, everything
 * else is a function of g and the field's place. */
static inline uint64_t gcd_synth_val(uint64_t g, unsigned disk, unsigned op, unsigned field)
{
	return g * 1000003u + disk * 131u + op * 17u + field;
}

static inline void gcd_synth_fill(struct gc_blk_stats *s, uint64_t g)
{
	unsigned n = 1 + (unsigned)(g % GC_BLK_DISKS), i, j;

	s->bs_ndisks = n;
	memset(s->bs_disks, 0, sizeof(s->bs_disks));
	for (i = 0; i < n; i++) {
		struct gc_blk_disk *d = &s->bs_disks[i];

		d->bd_dev = gcd_synth_val(g, i, 9, 0);
		snprintf(d->bd_name, sizeof(d->bd_name), "syn%u.%llu", i,
			 (unsigned long long)(g % 100000));
		d->bd_flags = (uint32_t)gcd_synth_val(g, i, 9, 1);
		for (j = 0; j < GC_BLK_OPS; j++) {
			struct gc_blk_op *o = &d->bd_op[j];

			o->bo_count = gcd_synth_val(g, i, j, 1);
			o->bo_bytes = gcd_synth_val(g, i, j, 2);
			o->bo_p50_ns = gcd_synth_val(g, i, j, 3);
			o->bo_p90_ns = gcd_synth_val(g, i, j, 4);
			o->bo_p99_ns = gcd_synth_val(g, i, j, 5);
			o->bo_ewma_ns = gcd_synth_val(g, i, j, 6);
			o->bo_bytes_per_s = gcd_synth_val(g, i, j, 7);
			o->bo_window_count = (uint32_t)gcd_synth_val(g, i, j, 8);
			o->bo_inflight = (uint32_t)gcd_synth_val(g, i, j, 9);
		}
	}
	s->bs_disks[0].bd_op[0].bo_count = g;
}

/* 0 when s is exactly synthetic snapshot number s->bs_disks[0].bd_op[0].bo_count */
static inline int gcd_synth_check(const struct gc_blk_stats *s)
{
	static struct gc_blk_stats want;

	if (s->bs_ndisks < 1 || s->bs_ndisks > GC_BLK_DISKS)
		return -1;
	want = *s;
	gcd_synth_fill(&want, s->bs_disks[0].bd_op[0].bo_count);
	return memcmp(&want, s, sizeof(want)) ? -1 : 0;
}
#endif
