/* SPDX-License-Identifier: GPL-2.0 */
/* The accounting behind gcd's programs: the maps, and what an issue and a
 * completion do to them. Static inline, with the time and the request's
 * facts as arguments, so the test object drives the very same code with
 * known inputs through BPF_PROG_TEST_RUN. Include after vmlinux.h. */
#ifndef GCD_ACCT_BPF_H
#define GCD_ACCT_BPF_H
#include <bpf/bpf_helpers.h>
#include "bpf/gcd.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GCD_MAX_INFLIGHT);
	__type(key, __u64);
	__type(value, struct gcd_rq);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GCD_MAX_KEYS);
	__type(key, struct gcd_key);
	__type(value, struct gcd_stat);
} stats SEC(".maps");

/* Requests seen completing that we never saw issued (or that user space
 * aged out), and issues or completions dropped because a map was full. */
__u64 gcd_unknown_completions = 0;
__u64 gcd_dropped = 0;

/* the zero value a new (disk, class) entry starts from: too big for the stack */
static const struct gcd_stat gcd_zero_stat;

static __always_inline struct gcd_stat *gcd_stat_get(__u32 dev, __u32 cls)
{
	struct gcd_key k = { .k_dev = dev, .k_class = cls };
	struct gcd_stat *st;

	st = bpf_map_lookup_elem(&stats, &k);
	if (st)
		return st;
	/* another CPU may create it between the lookup and here: NOEXIST */
	bpf_map_update_elem(&stats, &k, &gcd_zero_stat, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stats, &k);
}

/* A request was issued to the device. Issued again while already in flight
 * (a requeue) restarts its clock without counting it twice. */
static __always_inline int gcd_acct_issue(__u64 rq, __u32 dev, __u32 cls, __u32 bytes,
					  __u64 now)
{
	struct gcd_rq r = {
		.r_issue_ns = now, .r_bytes = bytes, .r_left = bytes,
		.r_dev = dev, .r_class = cls,
	};

	if (cls >= GCD_CLASSES)
		return 0;
	if (bpf_map_update_elem(&inflight, &rq, &r, BPF_ANY))
		__sync_fetch_and_add(&gcd_dropped, 1);
	return 0;
}

/* nr_bytes of the request completed (error: blk_status_t). It is final when
 * they cover what was left, or on an error; until then only the remainder
 * shrinks, and the latency is taken at the final one. The final completion
 * counts only if it is the one that deletes the entry: user space may have
 * aged it out meanwhile (bpf/gcd_sweep.h). */
static __always_inline int gcd_acct_complete(__u64 rq, __u32 error, __u32 nr_bytes,
					     __u64 now)
{
	struct gcd_stat *st;
	struct gcd_rq *r, done;
	__u64 lat;
	__s64 diff;
	__u32 slot;

	r = bpf_map_lookup_elem(&inflight, &rq);
	if (!r) {
		__sync_fetch_and_add(&gcd_unknown_completions, 1);
		return 0;
	}
	if (!error && nr_bytes < r->r_left) {
		r->r_left -= nr_bytes;
		st = gcd_stat_get(r->r_dev, r->r_class);
		if (st)
			__sync_fetch_and_add(&st->s_partial, 1);
		return 0;
	}
	done = *r;
	if (bpf_map_delete_elem(&inflight, &rq)) {
		__sync_fetch_and_add(&gcd_unknown_completions, 1);
		return 0;
	}
	st = gcd_stat_get(done.r_dev, done.r_class);
	if (!st) {
		__sync_fetch_and_add(&gcd_dropped, 1);
		return 0;
	}
	lat = now > done.r_issue_ns ? now - done.r_issue_ns : 0;
	slot = gcd_slot(lat);
	if (slot >= GCD_SLOTS)
		slot = GCD_SLOTS - 1;
	__sync_fetch_and_add(&st->s_slot[slot], 1);
	__sync_fetch_and_add(&st->s_count, 1);
	__sync_fetch_and_add(&st->s_bytes, done.r_bytes);
	if (error)
		__sync_fetch_and_add(&st->s_errors, 1);
	/* racy between CPUs on purpose: a lost update only delays the average */
	if (!st->s_ewma_ns) {
		st->s_ewma_ns = lat ? lat : 1;
	} else {
		diff = (__s64)lat - (__s64)st->s_ewma_ns;
		st->s_ewma_ns += diff >> 3; /* arithmetic: signed */
		if (!st->s_ewma_ns)
			st->s_ewma_ns = 1;
	}
	return 0;
}
#endif
