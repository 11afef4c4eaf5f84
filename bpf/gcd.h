/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What gcd's BPF programs and its user space share: the keys and values of
 * the in-flight and per-(disk, class) maps, and the latency histogram's slot
 * layout. Included by BPF objects (after vmlinux.h) and by C programs. */
#ifndef GCD_H
#define GCD_H
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Latency histogram over nanoseconds: values below 4 have a slot each; above,
 * each power of two [2^k, 2^(k+1)) is cut into GCD_SUB equal sub-slots, so a
 * percentile read from it is within 25% of the slot's lower bound before
 * interpolation. 64 powers of two, GCD_SUB each. */
#define GCD_SUB_BITS 2
#define GCD_SUB (1u << GCD_SUB_BITS)
#define GCD_SLOTS (64 * GCD_SUB)

/* Request classes: the same values as GC_BLK_* in core/blkstats.h */
#define GCD_FLUSH 0
#define GCD_WRITE 1
#define GCD_READ 2
#define GCD_CLASSES 3

/* Maps sizes: requests in flight machine-wide, and (disk, class) pairs */
#define GCD_MAX_INFLIGHT 16384
#define GCD_MAX_KEYS 256

/* An issued request not yet fully completed, keyed by its struct request *. */
struct gcd_rq {
	__u64 r_issue_ns;	/* bpf_ktime_get_ns at issue */
	__u32 r_bytes;		/* the request's bytes at issue */
	__u32 r_left;		/* bytes not yet completed */
	__u32 r_dev;		/* kernel encoding: major << 20 | minor */
	__u32 r_class;		/* GCD_FLUSH, GCD_WRITE, GCD_READ */
};

struct gcd_key {
	__u32 k_dev;		/* whole disk, kernel encoding */
	__u32 k_class;
};

/* Counters only grow; user space takes differences. Requests in flight are
 * the in-flight map's entries, counted by user space (bpf/gcd_sweep.h). */
struct gcd_stat {
	__u64 s_count;		/* final completions */
	__u64 s_bytes;		/* their bytes */
	__u64 s_ewma_ns;	/* EWMA (weight 1/8) of latency; 0 = none yet */
	__u64 s_partial;	/* completions that left bytes to go */
	__u64 s_errors;		/* final completions with an error */
	__u64 s_slot[GCD_SLOTS];
};

/* Kernel dev_t encoding, the one the BPF side stores. */
#define GCD_KDEV(ma, mi) (((__u32)(ma) << 20) | ((__u32)(mi) & 0xfffff))
#define GCD_KMAJOR(d) ((__u32)(d) >> 20)
#define GCD_KMINOR(d) ((__u32)(d) & 0xfffff)

/* Histogram slot of value v (no loops: the verifier and tests share it). */
static inline __u32 gcd_slot(__u64 v)
{
	__u32 lg = 0;
	__u64 x = v;

	if (v < GCD_SUB)
		return (__u32)v;
	if (x >> 32) { lg += 32; x >>= 32; }
	if (x >> 16) { lg += 16; x >>= 16; }
	if (x >> 8) { lg += 8; x >>= 8; }
	if (x >> 4) { lg += 4; x >>= 4; }
	if (x >> 2) { lg += 2; x >>= 2; }
	if (x >> 1) { lg += 1; }
	/* lg >= GCD_SUB_BITS here; the sub-slot is the next GCD_SUB_BITS bits */
	return (lg - GCD_SUB_BITS + 1) * GCD_SUB +
	       (__u32)((v >> (lg - GCD_SUB_BITS)) & (GCD_SUB - 1));
}

/* Lowest value that falls in slot s, and the slot's width. */
static inline __u64 gcd_slot_low(__u32 s)
{
	__u32 lg;

	if (s < GCD_SUB)
		return s;
	lg = s / GCD_SUB - 1 + GCD_SUB_BITS;
	return (__u64)(GCD_SUB + s % GCD_SUB) << (lg - GCD_SUB_BITS);
}

static inline __u64 gcd_slot_width(__u32 s)
{
	if (s < GCD_SUB)
		return 1;
	return 1ull << (s / GCD_SUB - 1);
}
#endif
