/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Dirty limiter policy: how much written data a device may have under
 * writeback (the limit) and how often a writer starts writeback (the window).
 * Pure: state + sample + now -> new limit and window; no I/O, no clock. */
#ifndef GC_POLICY_DIRTY_H
#define GC_POLICY_DIRTY_H
#include <stdbool.h>
#include <stdint.h>

enum gc_dirty_mode {
	GC_DIRTY_AUTO,		/* default: window and limit from bandwidth and read latency */
	GC_DIRTY_OFF,		/* no write-behind, no throttling */
	GC_DIRTY_FIXED,		/* LIBGC_DIRTY=SIZE: window SIZE, two windows in flight */
};

struct gc_dirty_cfg {
	enum gc_dirty_mode dc_mode;	/* LIBGC_DIRTY */
	uint64_t dc_window;		/* GC_DIRTY_FIXED: the window, bytes */
	uint64_t dc_target_ns;		/* LIBGC_DIRTY_TARGET_MS: writeback queued per device, as time */
};

/* Bounds (PostgreSQL *_flush_after windows are 256-512 KiB, at most 2 MiB). */
#define GC_DIRTY_WIN_MIN (64ULL << 10)
#define GC_DIRTY_WIN_MAX (8ULL << 20)
#define GC_DIRTY_LIMIT_MIN (2 * GC_DIRTY_WIN_MIN)
#define GC_DIRTY_LIMIT_MAX (256ULL << 20)
#define GC_DIRTY_FIXED_MIN (4ULL << 10)
#define GC_DIRTY_FIXED_MAX (1ULL << 30)
#define GC_DIRTY_TARGET_DEFAULT_MS 100
#define GC_DIRTY_TARGET_MIN_MS 1
#define GC_DIRTY_TARGET_MAX_MS 10000
/* Before the first measurement: a modest disk. */
#define GC_DIRTY_BW_INIT (64ULL * 1000 * 1000)
#define GC_DIRTY_BW_MIN (1ULL * 1000 * 1000)
/* mm/page-writeback.c: bandwidth sampled every 200 ms, smoothed over ~3 s. */
#define GC_DIRTY_PERIOD_NS (200ULL * 1000 * 1000)
#define GC_DIRTY_SMOOTH_NS (3000ULL * 1000 * 1000)
/* A wait longer than this found its range still under writeback: the
 * device, not the writer, set the pace (only such periods measure it). */
#define GC_DIRTY_BLOCKED_NS (50ULL * 1000)
/* One write pauses at most this long, all its waits together. */
#define GC_DIRTY_PAUSE_MAX_NS (200ULL * 1000 * 1000)
/* A wait looks at its range again after half the time the device needs
 * for what is left of it, within these bounds: a range often leaves
 * writeback all at once (one large request), so the last look can come up
 * to the ceiling late, the device idle meanwhile when that range was all
 * it had. */
#define GC_DIRTY_POLL_MIN_NS GC_DIRTY_BLOCKED_NS
#define GC_DIRTY_POLL_MAX_NS (1ULL * 1000 * 1000)
/* A bandwidth sample from the disk's own counters needs this much time
 * with writes in flight, and this many bytes written, in its period. */
#define GC_DIRTY_BUSY_MIN_NS (20ULL * 1000 * 1000)
#define GC_DIRTY_BUSY_MIN_BYTES (1ULL << 20)
/* Read-latency scale of the limit, in 1/1024: never below 1/64. */
#define GC_DIRTY_SCALE_ONE 1024u
#define GC_DIRTY_SCALE_MIN 16u
/* Read p99 target: twice the quietest p99 seen, at least 1 ms. */
#define GC_DIRTY_READ_FLOOR_NS (1000ULL * 1000)

enum gc_dirty_src { GC_DIRTY_SRC_NONE, GC_DIRTY_SRC_SELF, GC_DIRTY_SRC_OBSERVER, GC_DIRTY_SRC_DISK };

/* Per-device controller memory: fixed layout, no pointers. */
struct gc_dirty_state {
	uint64_t ds_bw;			/* smoothed write bandwidth, bytes/s; 0 = unmeasured */
	uint32_t ds_bw_src;		/* enum gc_dirty_src of the last sample */
	uint32_t ds_scale;		/* read-latency scale, /GC_DIRTY_SCALE_ONE */
	uint64_t ds_period_start;	/* self-measurement period: start (0 = none) */
	uint64_t ds_period_bytes;	/* bytes whose writeback completed in it */
	uint32_t ds_period_blocked;	/* waits in it that found writeback running */
	uint32_t ds_pad;
	uint64_t ds_blocked_at;		/* last wait that found writeback running */
	uint64_t ds_obs_at;		/* last observer sample taken */
	uint64_t ds_obs_bw_at;		/* last observer bandwidth sample used */
	uint64_t ds_busy_at;		/* last disk-counter sample (gc_dirty_busy_sample) */
	uint64_t ds_read_base_ns;	/* quietest read p99 seen (slowly forgotten) */
	uint64_t ds_read_p99_ns;	/* last read p99 from the observer */
	uint64_t ds_limit;		/* bytes under writeback before a writer waits */
	uint64_t ds_window;		/* bytes written before writeback is started */
};

void gc_dirty_cfg_defaults(struct gc_dirty_cfg *dc);
void gc_dirty_init(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc);

/* A writer's wait for @bytes of writeback, begun at @start, ended at @end
 * when it saw them written. */
void gc_dirty_waited(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
		     uint64_t bytes, uint64_t start, uint64_t end);
/* A paced wait (no way to see writeback end) held a writer at @now: the
 * device, as far as it is known, sets the pace. */
void gc_dirty_held(struct gc_dirty_state *ds, uint64_t now);
/* The disk's counters over a period ending at @now: @bytes written while
 * writes were in flight for @busy_ns. Where no wait can see writeback end,
 * this is the bandwidth the paced waits go by. */
void gc_dirty_busy_sample(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
			  uint64_t bytes, uint64_t busy_ns, uint64_t now);

/* Time the device takes for @bytes at @bw bytes/s (0: the initial guess). */
uint64_t gc_dirty_pace_ns(uint64_t bytes, uint64_t bw);
/* How long a wait sleeps before it looks at its range again, with @left
 * bytes of it still under writeback: half the time they need at the rate
 * the range went at since the last look (@done bytes in @done_ns), else at
 * @bw. A wait that slept the whole of it at @bw would measure @bw whatever
 * the device does, and an estimate too low would never recover. */
uint64_t gc_dirty_poll_ns(uint64_t left, uint64_t bw, uint64_t done, uint64_t done_ns);

/* What the block observer says about the disk (fresh only). */
struct gc_dirty_obs {
	uint64_t o_write_bps;		/* WRITE bytes/s, last window */
	uint64_t o_read_p99_ns;		/* READ p99, last window; 0 = none */
	uint32_t o_reads;		/* reads in that window */
};
/* An observer sample is due (every GC_DIRTY_PERIOD_NS). */
bool gc_dirty_obs_due(const struct gc_dirty_state *ds, uint64_t now);
void gc_dirty_observe(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
		      const struct gc_dirty_obs *o, uint64_t now);

/* The limit and window that the state gives (also kept in ds_limit and
 * ds_window by every call above). */
void gc_dirty_recompute(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc);

/* Parses LIBGC_DIRTY's SIZE form: digits with an optional k, m or g
 * (powers of 1024). False on anything else. */
bool gc_dirty_parse_size(const char *s, uint64_t *out);
#endif
