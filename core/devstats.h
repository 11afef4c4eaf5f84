/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The block device as the library sees it: which whole disk a filesystem's
 * st_dev sits on (sysfs), gcd's per-disk statistics file (read-only, seqlock,
 * untrusted), and flush counts from /proc/diskstats when gcd is absent. */
#ifndef GC_DEVSTATS_H
#define GC_DEVSTATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/blkstats.h"

/* LIBGC_BLK_STATS: path of gcd's statistics file; default GC_BLK_PATH
 * (/run/libgc/blk.stats). Read once, on first use, from the environment
 * the process started with (gc_env). */
#define GC_DEVSTATS_ENV "LIBGC_BLK_STATS"

/* A published heartbeat is fresh within max(3 intervals, 500 ms) of now,
 * and never beyond 10 s whatever the file claims its interval is. */
#define GC_DEVSTATS_FRESH_MIN_NS (500 * 1000000ULL)
#define GC_DEVSTATS_FRESH_MAX_NS (10 * 1000000000ULL)
/* How often the file's path is looked at again (replaced, appeared). */
#define GC_DEVSTATS_RECHECK_NS (1000 * 1000000ULL)
/* /proc/diskstats is read at most this often per disk. */
#define GC_DEVSTATS_SAMPLE_NS (100 * 1000000ULL)

/* Where the files are; a NULL field means the default. */
struct gc_devstats_paths {
	const char *dp_blk_stats;	/* $LIBGC_BLK_STATS, else GC_BLK_PATH */
	const char *dp_diskstats;	/* /proc/diskstats */
	const char *dp_sys;		/* /sys */
	const char *dp_mountinfo;	/* /proc/self/mountinfo (anonymous st_dev: btrfs) */
};

/* Drops every cached mapping, sample and open file and sets the paths.
 * Optional: first use initialises from the environment. Not for use while
 * other threads call into this module (tests, start-up). */
void gc_devstats_init(const struct gc_devstats_paths *p);
/* In the child of fork(): a lock another thread held stays free here. */
void gc_devstats_atfork_child(void);

/* For a filesystem whose st_dev is anonymous (major 0: btrfs), remembers
 * the block device mounted where @fd is, so that @st_dev maps to its disk
 * from now on. Does nothing for other st_dev, or when the mount has no
 * block device (tmpfs, FUSE, NFS). */
void gc_devstats_alias(uint64_t st_dev, int fd);

/* The whole disk (st_dev encoding) under the filesystem on @st_dev: a
 * partition's disk, a loop device's backing disk, a lone dm/md slave; the
 * device itself when requests are seen there (several slaves, a loop file
 * on FUSE or tmpfs); 0 when unknown (major 0, no sysfs entry). Cached. */
uint64_t gc_devstats_disk(uint64_t st_dev);

/* Copies gcd's entry for @disk into @out when the file is valid and its
 * heartbeat fresh at @now_ns (CLOCK_MONOTONIC). @age_ns, when not NULL,
 * gets now - heartbeat for any valid file (0 if ahead of now), UINT64_MAX
 * without one. Every value in @out is as gcd wrote it: clamp before use. */
bool gc_devstats_read(uint64_t disk, struct gc_blk_disk *out, uint64_t now_ns,
		      uint64_t *age_ns);

/* One disk's cumulative flush counters, /proc/diskstats fields 19 and 20. */
struct gc_flush_sample {
	uint64_t fs_flushes;	/* flush requests completed */
	uint64_t fs_ms;		/* time spent flushing, ms */
};

/* Finds @disk's line in diskstats text (@len bytes, need not end in a
 * newline). False when absent or the kernel has no flush fields (< 5.5). */
bool gc_devstats_parse_diskstats(const char *text, size_t len, uint64_t disk,
				 uint64_t *flushes, uint64_t *flush_ms);
/* The same from the live file. */
bool gc_devstats_diskstats(uint64_t disk, uint64_t *flushes, uint64_t *flush_ms);
/* One disk's cumulative write counters from /proc/diskstats: sectors
 * written (field 10), ms spent reading and writing (fields 7 and 11, summed
 * over requests), and ms with any request in flight (field 13). */
struct gc_write_sample {
	uint64_t ws_sectors;
	uint64_t ws_read_ms, ws_write_ms;
	uint64_t ws_busy_ms;
};
bool gc_devstats_parse_writes(const char *text, size_t len, uint64_t disk,
			      struct gc_write_sample *out);
/* The same, from the live file, for the whole disk under @st_dev. */
bool gc_devstats_writes(uint64_t st_dev, struct gc_write_sample *out);

/* Mean flush latency between two samples of one disk; 0 when no flush
 * completed between them (or the counters went back), at least 1 when
 * some did: a device faster than the file's 1 ms resolution is not "none". */
uint64_t gc_devstats_flush_mean_ns(const struct gc_flush_sample *a,
				   const struct gc_flush_sample *b);

/* The flush latency of the disk under @st_dev: gcd's FLUSH p50 (its EWMA
 * when the last window saw none) while its file is fresh, source
 * "observer"; else the mean over the last /proc/diskstats sampling
 * interval, source "diskstats"; else 0, source "none". @source may be NULL. */
uint64_t gc_devstats_flush_ns(uint64_t st_dev, uint64_t now_ns, const char **source);

/* What the dirty limiter needs, from the observer only. */
struct gc_devstats_io {
	uint64_t io_disk;		/* the whole disk read */
	uint64_t io_write_bytes_per_s;	/* WRITE, last window */
	uint64_t io_write_p99_ns;
	uint64_t io_read_p99_ns;	/* READ, last window; 0 = no reads */
	uint32_t io_read_window;	/* reads in that window */
	uint32_t io_flags;		/* GC_BLK_WCACHE, _FUA, _ROTATIONAL */
};

/* False when gcd's file is absent, invalid or stale, or has no entry for
 * the disk under @st_dev. */
bool gc_devstats_io(uint64_t st_dev, uint64_t now_ns, struct gc_devstats_io *out);
#endif
