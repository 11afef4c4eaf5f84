// SPDX-License-Identifier: LGPL-2.1-or-later
/* Dirty limiter policy (see dirty.h). Sources: mm/page-writeback.c (bandwidth
 * every 200 ms, smoothed over ~3 s, pauses capped at 200 ms), blk-wbt (a read
 * latency target scales background writeback down), Linus' streaming-write
 * pattern and PostgreSQL's *_flush_after windows.
 *
 * Control law, per device:
 *
 *   B   write bandwidth: samples of bytes completed per period >= 200 ms,
 *       B += (x - B) * period / 3 s. A sample comes from the observer (gcd's
 *       WRITE bytes/s) while fresh, else from the library's own waits. Either
 *       counts only while a wait found writeback still running within the
 *       last two periods: then the device, not the writer, set the pace, and
 *       a writer slower than its disk cannot talk the estimate down.
 *   s   read-latency scale in [1/64, 1], from the observer's READ p99 r:
 *       base = the quietest r seen (forgotten by 1/256 of the gap per sample,
 *       only while s = 1); r > max(2 base, 1 ms) halves s; otherwise, or
 *       with no reads, s grows by a quarter (+1/1024).
 *   L   limit = clamp(B * T * s, 128 KiB, 256 MiB), T = LIBGC_DIRTY_TARGET_MS:
 *       a read queued behind the writeback in flight waits about T * s.
 *   W   window = clamp(L / 4, 64 KiB, 8 MiB): about four windows in flight,
 *       so the device never runs dry while the writer waits for the oldest.
 *
 *   A writer starts writeback of every W bytes it wrote; while more than L
 *   is in flight on its device it waits for its oldest range, 200 ms at
 *   most in one call. LIBGC_DIRTY=SIZE fixes W = SIZE and L = 2 W (window
 *   n started, window n-1 waited for).
 *
 *   A wait sees its range written through cachestat(2), looking again after
 *   half the time the bytes left need, at the rate the range went since the
 *   last look (else at B), within [50 us, 1 ms]: sleeping the whole
 *   (bytes left) / B, a wait would measure B whatever the device does. Without cachestat it
 *   cannot see the end: each range is then due (bytes) / B after the later
 *   of its start and the previous range's due time, and B comes from the
 *   observer or from the disk's counters: bytes written per time with
 *   writes in flight, which a writer held back too long cannot talk down. */
#include "policy/dirty.h"

#include <string.h>

#include "core/clock.h"

static uint64_t clamp_u64(uint64_t x, uint64_t lo, uint64_t hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

void gc_dirty_cfg_defaults(struct gc_dirty_cfg *dc)
{
	dc->dc_mode = GC_DIRTY_AUTO;
	dc->dc_window = 0;
	dc->dc_target_ns = GC_DIRTY_TARGET_DEFAULT_MS * GC_NSEC_PER_MSEC;
}

void gc_dirty_recompute(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc)
{
	uint64_t bw = ds->ds_bw ? ds->ds_bw : GC_DIRTY_BW_INIT, lim;

	if (dc->dc_mode == GC_DIRTY_FIXED) {
		ds->ds_window = dc->dc_window;
		ds->ds_limit = 2 * dc->dc_window;
		return;
	}
	lim = gc_muldiv(gc_muldiv(bw, dc->dc_target_ns, GC_NSEC_PER_SEC), ds->ds_scale,
			GC_DIRTY_SCALE_ONE);
	lim = clamp_u64(lim, GC_DIRTY_LIMIT_MIN, GC_DIRTY_LIMIT_MAX);
	ds->ds_limit = lim;
	ds->ds_window = clamp_u64(lim / 4, GC_DIRTY_WIN_MIN, GC_DIRTY_WIN_MAX);
}

void gc_dirty_init(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc)
{
	memset(ds, 0, sizeof(*ds));
	ds->ds_scale = GC_DIRTY_SCALE_ONE;
	gc_dirty_recompute(ds, dc);
}

/* One bandwidth sample @x over @period ns, smoothed over GC_DIRTY_SMOOTH_NS. */
static void bw_sample(struct gc_dirty_state *ds, uint64_t x, uint64_t period,
		      uint32_t src)
{
	if (x < GC_DIRTY_BW_MIN)
		x = GC_DIRTY_BW_MIN;
	if (period > GC_DIRTY_SMOOTH_NS)
		period = GC_DIRTY_SMOOTH_NS;
	if (!ds->ds_bw)
		ds->ds_bw = x;
	else
		ds->ds_bw = gc_div128((unsigned __int128)ds->ds_bw * (GC_DIRTY_SMOOTH_NS - period) +
					      (unsigned __int128)x * period,
				      GC_DIRTY_SMOOTH_NS);
	ds->ds_bw_src = src;
}

/* The device set the pace recently (a wait found writeback running). */
static bool device_bound(const struct gc_dirty_state *ds, uint64_t now)
{
	return ds->ds_blocked_at && now - ds->ds_blocked_at <= 2 * GC_DIRTY_PERIOD_NS;
}

void gc_dirty_waited(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
		     uint64_t bytes, uint64_t start, uint64_t end)
{
	uint64_t elapsed;

	if (end < start)
		end = start;
	if (end - start >= GC_DIRTY_BLOCKED_NS) {
		ds->ds_blocked_at = end;
		ds->ds_period_blocked++;
	}
	if (!ds->ds_period_start) {
		/* the period starts when this range began to be waited for */
		ds->ds_period_start = start;
		ds->ds_period_bytes = 0;
		ds->ds_period_blocked = end - start >= GC_DIRTY_BLOCKED_NS;
	}
	ds->ds_period_bytes += bytes;
	elapsed = end - ds->ds_period_start;
	if (elapsed < GC_DIRTY_PERIOD_NS)
		return;
	/* The observer, while it speaks, knows the device better than a
	 * writer's waits do. */
	if (ds->ds_period_blocked &&
	    !(ds->ds_obs_bw_at && end - ds->ds_obs_bw_at < 5 * GC_DIRTY_PERIOD_NS))
		bw_sample(ds, gc_muldiv(ds->ds_period_bytes, GC_NSEC_PER_SEC, elapsed), elapsed,
			  GC_DIRTY_SRC_SELF);
	ds->ds_period_start = 0;
	gc_dirty_recompute(ds, dc);
}

void gc_dirty_held(struct gc_dirty_state *ds, uint64_t now)
{
	ds->ds_blocked_at = now;
}

void gc_dirty_busy_sample(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
			  uint64_t bytes, uint64_t busy_ns, uint64_t now)
{
	uint64_t period = ds->ds_busy_at && now > ds->ds_busy_at ? now - ds->ds_busy_at
								 : GC_DIRTY_PERIOD_NS;

	ds->ds_busy_at = now;
	if (busy_ns < GC_DIRTY_BUSY_MIN_NS || bytes < GC_DIRTY_BUSY_MIN_BYTES)
		return;
	/* the observer, while it speaks, knows the device better */
	if (ds->ds_obs_bw_at && now - ds->ds_obs_bw_at < 5 * GC_DIRTY_PERIOD_NS)
		return;
	bw_sample(ds, gc_muldiv(bytes, GC_NSEC_PER_SEC, busy_ns), period, GC_DIRTY_SRC_DISK);
	gc_dirty_recompute(ds, dc);
}

uint64_t gc_dirty_pace_ns(uint64_t bytes, uint64_t bw)
{
	if (!bw)
		bw = GC_DIRTY_BW_INIT;
	if (bw < GC_DIRTY_BW_MIN)
		bw = GC_DIRTY_BW_MIN;
	return gc_muldiv(bytes, GC_NSEC_PER_SEC, bw);
}

uint64_t gc_dirty_poll_ns(uint64_t left, uint64_t bw, uint64_t done, uint64_t done_ns)
{
	uint64_t t = done && done_ns ? gc_muldiv(left, done_ns, done) : gc_dirty_pace_ns(left, bw);

	return clamp_u64(t / 2, GC_DIRTY_POLL_MIN_NS, GC_DIRTY_POLL_MAX_NS);
}

bool gc_dirty_obs_due(const struct gc_dirty_state *ds, uint64_t now)
{
	/* read without the device's lock first (then again under it) */
	uint64_t at = __atomic_load_n(&ds->ds_obs_at, __ATOMIC_RELAXED);

	return !at || now - at >= GC_DIRTY_PERIOD_NS;
}

static uint32_t grow(uint32_t s)
{
	s += s / 4 + 1;
	return s > GC_DIRTY_SCALE_ONE ? GC_DIRTY_SCALE_ONE : s;
}

void gc_dirty_observe(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc,
		      const struct gc_dirty_obs *o, uint64_t now)
{
	uint64_t period = ds->ds_obs_at && now > ds->ds_obs_at ? now - ds->ds_obs_at
							       : GC_DIRTY_PERIOD_NS;
	uint64_t r = o->o_read_p99_ns, target;

	__atomic_store_n(&ds->ds_obs_at, now, __ATOMIC_RELAXED);
	if (o->o_write_bps && device_bound(ds, now)) {
		bw_sample(ds, o->o_write_bps, period, GC_DIRTY_SRC_OBSERVER);
		ds->ds_obs_bw_at = now;
	}
	if (o->o_reads && r) {
		ds->ds_read_p99_ns = r;
		if (!ds->ds_read_base_ns || r < ds->ds_read_base_ns)
			ds->ds_read_base_ns = r;
		else if (ds->ds_scale == GC_DIRTY_SCALE_ONE)
			ds->ds_read_base_ns += (r - ds->ds_read_base_ns) / 256;
		target = 2 * ds->ds_read_base_ns;
		if (target < GC_DIRTY_READ_FLOOR_NS)
			target = GC_DIRTY_READ_FLOOR_NS;
		if (r > target) {
			ds->ds_scale /= 2;
			if (ds->ds_scale < GC_DIRTY_SCALE_MIN)
				ds->ds_scale = GC_DIRTY_SCALE_MIN;
		} else {
			ds->ds_scale = grow(ds->ds_scale);
		}
	} else {
		ds->ds_read_p99_ns = 0;
		ds->ds_scale = grow(ds->ds_scale);
	}
	gc_dirty_recompute(ds, dc);
}

bool gc_dirty_parse_size(const char *s, uint64_t *out)
{
	uint64_t x = 0, mul = 1;

	if (!s || *s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	switch (*s) {
	case '\0':
		break;
	case 'k': case 'K':
		mul = 1ULL << 10;
		s++;
		break;
	case 'm': case 'M':
		mul = 1ULL << 20;
		s++;
		break;
	case 'g': case 'G':
		mul = 1ULL << 30;
		s++;
		break;
	default:
		return false;
	}
	if (*s || (x && mul > UINT64_MAX / x))
		return false;
	*out = x * mul;
	return true;
}
