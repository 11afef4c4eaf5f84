/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The block-device statistics file that gcd publishes and the library maps
 * read-only (default /run/libgc/blk.stats, mode 0644). One fixed layout, no
 * pointers. A writer bumps bs_seq to odd, writes, bumps it to even; a
 * reader copies the whole struct between two equal even reads of bs_seq
 * (seqlock), and trusts nothing in it beyond that: every count is bounds-
 * checked. Devices are in user space's st_dev encoding (makedev(major,
 * minor)), never the kernel's major << 20 | minor. */
#ifndef GC_BLKSTATS_H
#define GC_BLKSTATS_H
#include <stdint.h>

#define GC_BLK_PATH "/run/libgc/blk.stats"
#define GC_BLK_MAGIC 0x31746b6c62636700ULL /* "\0gcblkt1" */
#define GC_BLK_VERSION 1
#define GC_BLK_DISKS 32

/* Request classes, in this order: FLUSH is op == REQ_OP_FLUSH; WRITE any
 * other write (with or without FUA); READ a read. */
enum { GC_BLK_FLUSH, GC_BLK_WRITE, GC_BLK_READ, GC_BLK_OPS };

/* bd_flags, from sysfs queue/write_cache and queue/fua, queue/rotational */
#define GC_BLK_WCACHE 1u	/* "write back": flushes reach a volatile cache */
#define GC_BLK_FUA 2u
#define GC_BLK_ROTATIONAL 4u

struct gc_blk_op {
	uint64_t bo_count;	/* requests completed since gcd started */
	uint64_t bo_bytes;	/* their bytes */
	/* latency from issue to completion, over the last window (about the
	 * last second; 0 when the window saw none) */
	uint64_t bo_p50_ns, bo_p90_ns, bo_p99_ns;
	uint64_t bo_ewma_ns;	/* EWMA (1/8) over every completion; 0 = none yet */
	uint64_t bo_bytes_per_s; /* over the last window */
	uint32_t bo_window_count; /* completions in the last window */
	uint32_t bo_inflight;	/* issued, not completed, at publication */
};

struct gc_blk_disk {
	uint64_t bd_dev;	/* whole disk, st_dev encoding */
	char bd_name[32];	/* e.g. "vda", NUL-terminated */
	uint32_t bd_flags;	/* GC_BLK_* */
	uint32_t bd_pad;
	struct gc_blk_op bd_op[GC_BLK_OPS];
};

struct gc_blk_stats {
	uint64_t bs_magic;
	uint32_t bs_version;
	uint32_t bs_size;	/* sizeof(struct gc_blk_stats) */
	uint64_t bs_seq;	/* seqlock: odd while gcd writes */
	uint64_t bs_heartbeat_ns; /* CLOCK_MONOTONIC of the last publication */
	uint32_t bs_interval_ms; /* how often gcd publishes (100) */
	uint32_t bs_ndisks;	/* entries used in bs_disks */
	uint32_t bs_pid;	/* gcd's pid */
	uint32_t bs_pad;
	struct gc_blk_disk bs_disks[GC_BLK_DISKS];
};
#endif
