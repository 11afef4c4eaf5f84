// SPDX-License-Identifier: LGPL-2.1-or-later
/* The dirty limiter: the pure controller with a fake clock (limit and window
 * from bandwidth, target and read-latency scale; bandwidth from waits, from
 * the observer and from the disk's counters; read p99 feedback; the waits'
 * pacing), LIBGC_DIRTY's sizes, and the core state on a real file:
 * write-behind on this machine's disk that never asks for a file's errors,
 * watched or paced, and slot locks that survive fork and cancellation. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/dirty.h"
#include "core/stats.h"
#include "core/sys.h"
#include "policy/dirty.h"
#include "tests/e2e/progs/cskill.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define MBPS (1000ULL * 1000)

static struct gc_dirty_cfg cfg_ms(uint64_t target_ms)
{
	struct gc_dirty_cfg dc;

	gc_dirty_cfg_defaults(&dc);
	dc.dc_target_ns = target_ms * MS;
	return dc;
}

/* The limiter's rate and time arithmetic (gc_muldiv, one divq on x86-64)
 * against C's own 128-bit division, where the quotient fits, and saturated
 * where it does not. */
Test(dirty, muldiv_as_128_bit_division)
{
	uint64_t v[] = { 0, 1, 2, 3, 7, 1000, 4096, 999999937, GC_NSEC_PER_SEC, 1ULL << 32,
			 (1ULL << 32) + 1, 123456789012345ULL, 1ULL << 63, UINT64_MAX - 1,
			 UINT64_MAX };
	size_t n = sizeof(v) / sizeof(v[0]);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			for (size_t k = 0; k < n; k++) {
				unsigned __int128 p = (unsigned __int128)v[i] * v[j];
				uint64_t want;

				if (!v[k] || p / v[k] > UINT64_MAX)
					want = UINT64_MAX;
				else
					want = (uint64_t)(p / v[k]);
				cr_assert_eq(gc_muldiv(v[i], v[j], v[k]), want,
					     "%llu * %llu / %llu", (unsigned long long)v[i],
					     (unsigned long long)v[j], (unsigned long long)v[k]);
			}
}

/* A descriptor is quiet for the file its last sync request was of, until
 * a write goes through it; another file on the number is not. */
Test(dirty, quiet_until_a_write)
{
	gc_dirty_reset();
	cr_expect_not(gc_dirty_synced(5, 42), "never synced");
	cr_expect(gc_dirty_synced(5, 42));
	cr_expect_not(gc_dirty_synced(6, 42), "another number");
	cr_expect_not(gc_dirty_synced(5, 43), "another file on that number");
	cr_expect_not(gc_dirty_synced(5, 0));
	cr_expect_not(gc_dirty_synced(5, 42));
	gc_dirty_unquiet(5);
	cr_expect_not(gc_dirty_synced(5, 42), "written since (a converted write)");
	gc_dirty_count(5, -1, 1);
	cr_expect_not(gc_dirty_synced(5, 42), "written since (a counted write)");
	cr_expect(gc_dirty_synced(5, 42));
	cr_expect_not(gc_dirty_synced(GC_DIRTY_FDS, 42));
	cr_expect_not(gc_dirty_synced(GC_DIRTY_FDS, 42), "beyond the table: never");
	gc_dirty_unquiet(-1);
}

Test(dirty, defaults)
{
	struct gc_dirty_cfg dc;
	struct gc_dirty_state ds;

	gc_dirty_cfg_defaults(&dc);
	cr_expect_eq(dc.dc_mode, GC_DIRTY_AUTO);
	cr_expect_eq(dc.dc_target_ns, 100 * MS);
	gc_dirty_init(&ds, &dc);
	cr_expect_eq(ds.ds_scale, GC_DIRTY_SCALE_ONE);
	cr_expect_eq(ds.ds_bw, 0, "unmeasured");
	/* before a measurement: 64 MB/s x 100 ms */
	cr_expect_eq(ds.ds_limit, 6400000);
	cr_expect_eq(ds.ds_window, 6400000 / 4);
}

/* limit = clamp(B x T x s, 128 KiB, 256 MiB), window = clamp(L/4, 64 KiB, 8 MiB) */
struct law_case {
	char what[40];
	uint64_t bw, target_ms;
	uint32_t scale;
	uint64_t limit, window;
};

ParameterizedTestParameters(dirty, control_law)
{
	static struct law_case cases[] = {
		{ "slow disk, 100 ms", 40 * MBPS, 100, 1024, 4000000, 1000000 },
		{ "slow disk, 20 ms", 40 * MBPS, 20, 1024, 800000, 200000 },
		{ "slow disk, half scale", 40 * MBPS, 100, 512, 2000000, 500000 },
		{ "floor of the limit", 40 * MBPS, 1, 1024, 128 * KIB, 64 * KIB },
		{ "floor, smallest scale", 40 * MBPS, 100, 16, 128 * KIB, 64 * KIB },
		{ "window floor", 40 * MBPS, 5, 1024, 200000, 64 * KIB },
		{ "NVMe, 100 ms", 2000 * MBPS, 100, 1024, 200000000, 8 * MIB },
		{ "NVMe, 10 s: limit cap", 2000 * MBPS, 10000, 1024, 256 * MIB, 8 * MIB },
		{ "1 MB/s, 100 ms", 1 * MBPS, 100, 1024, 128 * KIB, 64 * KIB },
	};

	return cr_make_param_array(struct law_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct law_case *c, dirty, control_law)
{
	struct gc_dirty_cfg dc = cfg_ms(c->target_ms);
	struct gc_dirty_state ds;

	gc_dirty_init(&ds, &dc);
	ds.ds_bw = c->bw;
	ds.ds_scale = c->scale;
	gc_dirty_recompute(&ds, &dc);
	cr_expect_eq(ds.ds_limit, c->limit, "%s: limit %llu, want %llu", c->what,
		     (unsigned long long)ds.ds_limit, (unsigned long long)c->limit);
	cr_expect_eq(ds.ds_window, c->window, "%s: window %llu, want %llu", c->what,
		     (unsigned long long)ds.ds_window, (unsigned long long)c->window);
	cr_expect_geq(ds.ds_limit, 2 * ds.ds_window, "%s: two windows fit", c->what);
}

Test(dirty, fixed_window)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;

	dc.dc_mode = GC_DIRTY_FIXED;
	dc.dc_window = 512 * KIB;
	gc_dirty_init(&ds, &dc);
	cr_expect_eq(ds.ds_window, 512 * KIB);
	cr_expect_eq(ds.ds_limit, MIB, "window n started, window n-1 waited for");
	ds.ds_bw = 2000 * MBPS;
	gc_dirty_recompute(&ds, &dc);
	cr_expect_eq(ds.ds_limit, MIB, "bandwidth does not move a fixed window");
}

/* A writer held at its device's pace: each wait blocks on a window that
 * the device writes at @bps; returns the time after @secs. */
static uint64_t paced(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc, uint64_t now,
		      uint64_t bps, uint64_t win, double secs)
{
	uint64_t each = win * SEC / bps, end = now + (uint64_t)(secs * (double)SEC);

	while (now < end) {
		/* the writer fills a window (0.2 ms), then waits for the oldest */
		gc_dirty_waited(ds, dc, win, now + 200 * US, now + each);
		now += each;
	}
	return now;
}

struct bw_case {
	char what[32];
	uint64_t bps;
	double secs;
	uint32_t tol_pct;
};

ParameterizedTestParameters(dirty, bandwidth_from_waits)
{
	static struct bw_case cases[] = {
		{ "40 MB/s, 1 s: first sample", 40 * MBPS, 1.0, 5 },
		{ "40 MB/s, 5 s", 40 * MBPS, 5.0, 5 },
		{ "200 MB/s, 3 s", 200 * MBPS, 3.0, 5 },
		{ "5 MB/s, 4 s", 5 * MBPS, 4.0, 5 },
	};

	return cr_make_param_array(struct bw_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct bw_case *c, dirty, bandwidth_from_waits)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t lo, hi;

	gc_dirty_init(&ds, &dc);
	paced(&ds, &dc, T0, c->bps, 256 * KIB, c->secs);
	lo = c->bps * (100 - c->tol_pct) / 100;
	hi = c->bps * (100 + c->tol_pct) / 100;
	cr_expect(ds.ds_bw >= lo && ds.ds_bw <= hi, "%s: estimate %llu", c->what,
		  (unsigned long long)ds.ds_bw);
	cr_expect_eq(ds.ds_bw_src, GC_DIRTY_SRC_SELF);
	cr_expect_eq(ds.ds_limit, (uint64_t)((unsigned __int128)ds.ds_bw * 100 * MS / SEC) <
					  GC_DIRTY_LIMIT_MIN
				  ? GC_DIRTY_LIMIT_MIN
				  : (uint64_t)((unsigned __int128)ds.ds_bw * 100 * MS / SEC));
}

/* The estimate moves over ~3 s, not at once: a change of device speed is
 * followed, a single odd period is not. */
Test(dirty, bandwidth_smoothed)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now;

	gc_dirty_init(&ds, &dc);
	now = paced(&ds, &dc, T0, 40 * MBPS, 256 * KIB, 2.0);
	now = paced(&ds, &dc, now, 10 * MBPS, 256 * KIB, 0.3);
	cr_expect_gt(ds.ds_bw, 30 * MBPS, "one slow period moved it to %llu",
		     (unsigned long long)ds.ds_bw);
	now = paced(&ds, &dc, now, 10 * MBPS, 256 * KIB, 10.0);
	cr_expect_lt(ds.ds_bw, 12 * MBPS, "10 s later still %llu", (unsigned long long)ds.ds_bw);
}

/* A writer slower than its disk never waits for running writeback: it does
 * not measure the disk, so it cannot talk the limit down. */
Test(dirty, slow_writer_measures_nothing)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now = T0;
	int i;

	gc_dirty_init(&ds, &dc);
	for (i = 0; i < 400; i++, now += 10 * MS)
		gc_dirty_waited(&ds, &dc, 64 * KIB, now, now + 5 * US);
	cr_expect_eq(ds.ds_bw, 0, "measured %llu from waits that found nothing to wait for",
		     (unsigned long long)ds.ds_bw);
	cr_expect_eq(ds.ds_limit, 6400000);
}

static void obs(struct gc_dirty_state *ds, const struct gc_dirty_cfg *dc, uint64_t now,
		uint64_t bps, uint64_t read_p99, uint32_t reads)
{
	struct gc_dirty_obs o = { .o_write_bps = bps, .o_read_p99_ns = read_p99,
				  .o_reads = reads };

	cr_assert(gc_dirty_obs_due(ds, now));
	gc_dirty_observe(ds, dc, &o, now);
}

Test(dirty, observer_bandwidth_only_when_device_bound)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now = T0;

	gc_dirty_init(&ds, &dc);
	obs(&ds, &dc, now, 5 * MBPS, 0, 0);
	cr_expect_eq(ds.ds_bw, 0, "an idle device's rate is not its bandwidth");
	gc_dirty_waited(&ds, &dc, 256 * KIB, now, now + 5 * MS); /* blocked */
	now += 200 * MS;
	obs(&ds, &dc, now, 40 * MBPS, 0, 0);
	cr_expect_eq(ds.ds_bw, 40 * MBPS);
	cr_expect_eq(ds.ds_bw_src, GC_DIRTY_SRC_OBSERVER);
	cr_expect_not(gc_dirty_obs_due(&ds, now + 199 * MS), "every 200 ms");
	cr_expect(gc_dirty_obs_due(&ds, now + 200 * MS));
	/* while the observer speaks, the writer's own waits do not sample */
	paced(&ds, &dc, now, 10 * MBPS, 256 * KIB, 0.5);
	cr_expect_eq(ds.ds_bw, 40 * MBPS, "self sample overrode the observer");
}

/* Read p99 feedback (blk-wbt style): above twice the quietest p99 the scale
 * halves each sample, down to 1/64; back under it, it grows again. */
struct read_case {
	char what[40];
	uint64_t base_ns;	/* p99 seen first, quiet */
	uint64_t busy_ns;	/* p99 while writing */
	int samples;
	uint32_t want_scale;
};

ParameterizedTestParameters(dirty, read_feedback)
{
	static struct read_case cases[] = {
		{ "reads as quiet: no change", 800 * US, 900 * US, 10, 1024 },
		{ "3x quiet p99: halves", 800 * US, 2400 * US, 1, 512 },
		{ "3x quiet p99, 3 samples", 800 * US, 2400 * US, 3, 128 },
		{ "floor 1/64", 800 * US, 20 * MS, 20, 16 },
		{ "under the 1 ms floor: no change", 100 * US, 900 * US, 10, 1024 },
		{ "slow disk 10 ms reads, 18 ms", 10 * MS, 18 * MS, 10, 1024 },
		{ "slow disk 10 ms reads, 25 ms", 10 * MS, 25 * MS, 2, 256 },
	};

	return cr_make_param_array(struct read_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct read_case *c, dirty, read_feedback)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now = T0;
	int i;

	gc_dirty_init(&ds, &dc);
	obs(&ds, &dc, now, 0, c->base_ns, 50);
	for (i = 0; i < c->samples; i++) {
		now += 200 * MS;
		obs(&ds, &dc, now, 0, c->busy_ns, 50);
	}
	cr_expect_eq(ds.ds_scale, c->want_scale, "%s: scale %u, want %u", c->what, ds.ds_scale,
		     c->want_scale);
}

Test(dirty, read_feedback_recovers)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now = T0, low;
	int i;

	gc_dirty_init(&ds, &dc);
	ds.ds_bw = 40 * MBPS;
	obs(&ds, &dc, now, 0, 700 * US, 50);
	for (i = 0; i < 10; i++)
		obs(&ds, &dc, now += 200 * MS, 0, 10 * MS, 50);
	low = ds.ds_limit;
	cr_expect_eq(low, GC_DIRTY_LIMIT_MIN, "shrunk to the floor");
	cr_expect_lt(ds.ds_read_base_ns, 800 * US, "the busy p99 became the baseline");
	for (i = 0; i < 30 && ds.ds_scale < GC_DIRTY_SCALE_ONE; i++)
		obs(&ds, &dc, now += 200 * MS, 0, 900 * US, 50);
	cr_expect_eq(ds.ds_scale, GC_DIRTY_SCALE_ONE, "grew back");
	cr_expect_lt(i, 20, "in %d samples (4 s)", i);
	cr_expect_eq(ds.ds_limit, 4000000);
	/* no reads at all: nobody to protect, the scale grows too */
	for (i = 0; i < 10; i++)
		obs(&ds, &dc, now += 200 * MS, 0, 10 * MS, 50);
	for (i = 0; i < 30 && ds.ds_scale < GC_DIRTY_SCALE_ONE; i++)
		obs(&ds, &dc, now += 200 * MS, 0, 0, 0);
	cr_expect_eq(ds.ds_scale, GC_DIRTY_SCALE_ONE);
}

/* Where no wait can see writeback end, the disk's counters give the
 * bandwidth: bytes per time with writes in flight. Too little of either in
 * a period is no sample; the observer, while it speaks, goes first. */
Test(dirty, bandwidth_from_disk_counters)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;
	uint64_t now = T0;

	gc_dirty_init(&ds, &dc);
	gc_dirty_busy_sample(&ds, &dc, 8 * MIB, 200 * MS, now);
	cr_expect_eq(ds.ds_bw_src, GC_DIRTY_SRC_DISK);
	cr_expect_eq(ds.ds_bw, 8 * MIB * SEC / (200 * MS), "first sample as is");
	/* a writer held back (the disk busy only half the period) still reads
	 * the disk's rate, not its own */
	ds.ds_bw = 0;
	gc_dirty_busy_sample(&ds, &dc, 4 * MIB, 100 * MS, now += 200 * MS);
	cr_expect_eq(ds.ds_bw, 4 * MIB * SEC / (100 * MS));
	ds.ds_bw = 0;
	gc_dirty_busy_sample(&ds, &dc, 64 * KIB, 200 * MS, now += 200 * MS);
	cr_expect_eq(ds.ds_bw, 0, "64 KiB is no sample");
	gc_dirty_busy_sample(&ds, &dc, 8 * MIB, 5 * MS, now += 200 * MS);
	cr_expect_eq(ds.ds_bw, 0, "5 ms busy is no sample");
	/* the observer sampled: the disk's counters wait */
	gc_dirty_held(&ds, now);
	obs(&ds, &dc, now, 40 * MBPS, 0, 0);
	cr_expect_eq(ds.ds_bw, 40 * MBPS);
	gc_dirty_busy_sample(&ds, &dc, 8 * MIB, 800 * MS, now += 200 * MS);
	cr_expect_eq(ds.ds_bw, 40 * MBPS, "disk counters overrode the observer");
}

/* A paced wait says the device held the writer: the observer's rate counts. */
Test(dirty, held_is_device_bound)
{
	struct gc_dirty_cfg dc = cfg_ms(100);
	struct gc_dirty_state ds;

	gc_dirty_init(&ds, &dc);
	obs(&ds, &dc, T0, 30 * MBPS, 0, 0);
	cr_expect_eq(ds.ds_bw, 0);
	gc_dirty_held(&ds, T0 + 100 * MS);
	obs(&ds, &dc, T0 + 200 * MS, 30 * MBPS, 0, 0);
	cr_expect_eq(ds.ds_bw, 30 * MBPS);
}

struct pace_case {
	char what[32];
	uint64_t bytes, bw, pace, poll;
};

ParameterizedTestParameters(dirty, pacing)
{
	static struct pace_case cases[] = {
		{ "1 MB at 40 MB/s", 1000000, 40 * MBPS, 25 * MS, 1 * MS },
		{ "64 KiB at 40 MB/s", 64 * KIB, 40 * MBPS, 1638400, 819200 },
		{ "4 KiB at 1 GB/s", 4 * KIB, 1000 * MBPS, 4096, 50 * US },
		{ "unmeasured: 64 MB/s", 64 * 1000 * 1000, 0, SEC, 1 * MS },
		{ "below 1 MB/s: 1 MB/s", 1000, 10, MS, 500 * US },
	};

	return cr_make_param_array(struct pace_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct pace_case *c, dirty, pacing)
{
	cr_expect_eq(gc_dirty_pace_ns(c->bytes, c->bw), c->pace, "%s: pace %llu", c->what,
		     (unsigned long long)gc_dirty_pace_ns(c->bytes, c->bw));
	cr_expect_eq(gc_dirty_poll_ns(c->bytes, c->bw, 0, 0), c->poll, "%s: poll %llu", c->what,
		     (unsigned long long)gc_dirty_poll_ns(c->bytes, c->bw, 0, 0));
}

/* Once the range made progress, the next look goes by its own rate. */
Test(dirty, poll_at_the_ranges_rate)
{
	/* 512 KiB left, 256 KiB went in 1 ms: 2 ms more, look after 1 */
	cr_expect_eq(gc_dirty_poll_ns(512 * KIB, 1000 * MBPS, 256 * KIB, 1 * MS), 1 * MS);
	cr_expect_eq(gc_dirty_poll_ns(256 * KIB, 1000 * MBPS, 256 * KIB, 1 * MS), 500 * US);
	/* fast going: the floor */
	cr_expect_eq(gc_dirty_poll_ns(4 * KIB, 1 * MBPS, 1 * MIB, 1 * MS), 50 * US);
	/* slow going: the ceiling */
	cr_expect_eq(gc_dirty_poll_ns(8 * MIB, 1000 * MBPS, 4 * KIB, 1 * MS), 1 * MS);
	/* no progress since the last look: the bandwidth decides */
	cr_expect_eq(gc_dirty_poll_ns(64 * KIB, 40 * MBPS, 0, 3 * MS), 819200);
}

struct size_case {
	char in[28];
	bool ok;
	uint64_t want;
};

ParameterizedTestParameters(dirty, parse_size)
{
	static struct size_case cases[] = {
		{ "512k", true, 512 * KIB },	{ "512K", true, 512 * KIB },
		{ "4m", true, 4 * MIB },	{ "1g", true, 1ULL << 30 },
		{ "4096", true, 4096 },		{ "0", true, 0 },
		{ "", false, 0 },		{ "k", false, 0 },
		{ "4kb", false, 0 },		{ "4 k", false, 0 },
		{ "-1", false, 0 },		{ "+4k", false, 0 },
		{ "1.5m", false, 0 },		{ "4t", false, 0 },
		{ "99999999999999999999", false, 0 }, { "17179869184g", false, 0 },
	};

	return cr_make_param_array(struct size_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct size_case *c, dirty, parse_size)
{
	uint64_t v = 12345;

	cr_expect_eq(gc_dirty_parse_size(c->in, &v), c->ok, "\"%s\"", c->in);
	if (c->ok)
		cr_expect_eq(v, c->want, "\"%s\": %llu", c->in, (unsigned long long)v);
}

/* ---- core state on a real file ----------------------------------------- */

static int tmpfile_fd(char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/var/tmp/gc-test-dirty-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	return fd;
}

/* Every sync_file_range the limiter makes, through the real-call table. */
static unsigned sfr_calls, sfr_waits;
static int sfr_record(int fd, off64_t off, off64_t len, unsigned int flags)
{
	__atomic_add_fetch(&sfr_calls, 1, __ATOMIC_RELAXED);
	if (flags != SYNC_FILE_RANGE_WRITE)
		__atomic_add_fetch(&sfr_waits, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_sync_file_range, fd, off, len, flags);
}

/* Streams @n windows of 256 KiB through the write path, checking what is
 * in flight; returns the counters' difference. */
static struct gc_stats stream(int fd, int n)
{
	static char buf[256 * 1024];
	uint64_t limit, window, bw;
	struct gc_stats s0, s1, d;
	int64_t inflight;
	struct stat st;
	int i;

	gc_dirty_reset();
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 256 * KIB;
	gc_cfg.c_dirty.dc_target_ns = 100 * MS;
	sfr_calls = sfr_waits = 0;
	gc_sys.sy_sync_file_range = sfr_record;
	cr_assert_eq(fstat(fd, &st), 0);
	gc_stats_sum(&s0);
	for (i = 0; i < n; i++) {
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		gc_dirty_wrote(fd, -1, sizeof(buf));
		if (gc_dirty_dev_info(st.st_dev, &limit, &window, &inflight, &bw))
			cr_expect_leq(inflight, (int64_t)(limit + window),
				      "in flight %lld > limit %llu + a window", (long long)inflight,
				      (unsigned long long)limit);
	}
	gc_stats_sum(&s1);
	gc_sys.sy_sync_file_range = NULL;
	cr_assert(gc_dirty_dev_info(st.st_dev, &limit, &window, &inflight, &bw),
		  "device not tracked (is /var/tmp on tmpfs or FUSE?)");
	cr_expect_eq(window, 256 * KIB);
	cr_expect_eq(limit, 512 * KIB);
#define GC_STAT_DIFF(x) d.x = s1.x - s0.x;
	GC_STATS(GC_STAT_DIFF)
#undef GC_STAT_DIFF
	return d;
}

/* Streaming 16 MiB on this machine's disk starts writeback every window,
 * keeps what is in flight near the limit, and waits through cachestat:
 * never a sync_file_range that waits (it would take the file's writeback
 * errors from the program, DESIGN rule 8). */
Test(dirty_core, write_behind_watched)
{
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p));
	struct gc_stats d;

	gc_dirty_set_cachestat(0);
	d = stream(fd, 64);
	if (gc_dirty_cachestat() < 0)
		cr_skip_test("no cachestat(2) (Linux < 6.5): write_behind_paced covers this kernel");
	cr_expect_geq(d.dirty_started, 60, "windows started: %llu",
		      (unsigned long long)d.dirty_started);
	cr_expect_geq(d.dirty_waits, 58, "waits: %llu", (unsigned long long)d.dirty_waits);
	cr_expect_eq(d.dirty_paced, 0);
	cr_expect_eq(sfr_calls, d.dirty_started);
	cr_expect_eq(sfr_waits, 0, "%u sync_file_range calls with a WAIT flag", sfr_waits);
	unlink(p);
	close(fd);
}

/* Without cachestat (ENOSYS, a seccomp filter), waits are paced at the
 * device's bandwidth: the same limit, the same calls. */
Test(dirty_core, write_behind_paced)
{
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p));
	struct gc_stats d;

	gc_dirty_set_cachestat(-1);
	d = stream(fd, 64);
	gc_dirty_set_cachestat(0);
	cr_expect_geq(d.dirty_started, 60, "windows started: %llu",
		      (unsigned long long)d.dirty_started);
	cr_expect_geq(d.dirty_waits, 58, "waits: %llu", (unsigned long long)d.dirty_waits);
	cr_expect_eq(d.dirty_paced, d.dirty_waits);
	cr_expect_eq(d.dirty_polls, 0);
	cr_expect_eq(sfr_waits, 0, "%u sync_file_range calls with a WAIT flag", sfr_waits);
	unlink(p);
	close(fd);
}

/* A thread's seccomp mode, from its status file and from prctl alike: none,
 * then a filter once it put one on itself (in a child: a filter stays). */
Test(dirty_core, seccomp_mode_read)
{
	pid_t c;
	int st;

	cr_assert_eq(gc_sys_seccomp(false), 0);
	cr_assert_eq(gc_sys_seccomp(true), 0);
	c = fork();
	cr_assert_geq(c, 0);
	if (!c) {
		if (cskill_install(false))
			_exit(3);
		_exit(gc_sys_seccomp(false) == 2 && gc_sys_seccomp(true) == 2 ? 0 : 4);
	}
	cr_assert_eq(waitpid(c, &st, 0), c);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* A writer that puts on itself a filter killing the process at
 * cachestat(2), between two streams: the limiter's waits watched
 * writeback through cachestat before, and pace after, with no call of it
 * (the child would die of SIGSYS). */
Test(dirty_core, filter_put_on_midway_paces)
{
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p)), st;
	pid_t c;

	c = fork();
	cr_assert_geq(c, 0);
	if (!c) {
		struct gc_stats d;

		gc_dirty_set_cachestat(0);
		d = stream(fd, 16);
		if (gc_dirty_cachestat() < 0)
			_exit(77); /* no cachestat on this kernel */
		if (d.dirty_paced || !d.dirty_waits)
			_exit(5);
		if (cskill_install(true))
			_exit(3);
		d = stream(fd, 16);
		_exit(gc_dirty_cachestat() < 0 && d.dirty_waits && d.dirty_paced == d.dirty_waits
			      ? 0 : 4);
	}
	cr_assert_eq(waitpid(c, &st, 0), c);
	unlink(p);
	close(fd);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		cr_skip_test("no cachestat(2) (Linux < 6.5)");
	cr_assert(!WIFSIGNALED(st), "the writer died of signal %d", WTERMSIG(st));
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d", WEXITSTATUS(st));
}

/* A real O_SYNC/O_DSYNC descriptor (LIBGC_OSYNC=keep) is not limited. */
Test(dirty_core, real_dsync_not_limited)
{
	static char buf[256 * 1024];
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p)), dfd, i;
	struct gc_stats s0, s1;

	dfd = open(p, O_WRONLY | O_DSYNC);
	cr_assert_geq(dfd, 0);
	gc_dirty_reset();
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 64 * KIB;
	gc_stats_sum(&s0);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(write(dfd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		gc_dirty_wrote(dfd, -1, sizeof(buf));
	}
	gc_stats_sum(&s1);
	cr_expect_eq(s1.dirty_started, s0.dirty_started, "an O_DSYNC descriptor was limited");
	unlink(p);
	close(dfd);
	close(fd);
}

/* Nested library code (gc_depth > 0) is never throttled. */
Test(dirty_core, nested_writes_not_limited)
{
	static char buf[256 * 1024];
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p)), i;
	struct gc_stats s0, s1;

	gc_dirty_reset();
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 64 * KIB;
	gc_stats_sum(&s0);
	gc_depth++;
	for (i = 0; i < 8; i++) {
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		gc_dirty_wrote(fd, -1, sizeof(buf));
	}
	gc_depth--;
	gc_stats_sum(&s1);
	cr_expect_eq(s1.dirty_started, s0.dirty_started);
	cr_expect_eq(s1.dirty_waits, s0.dirty_waits);
	unlink(p);
	close(fd);
}

/* Writes @n windows of 64 KiB to @fd; returns how many started writeback. */
static uint64_t started_by(int fd, int n)
{
	static char buf[64 * 1024];
	struct gc_stats s0, s1;
	int i;

	gc_stats_sum(&s0);
	for (i = 0; i < n; i++) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 0;
		gc_dirty_wrote(fd, -1, sizeof(buf));
	}
	gc_stats_sum(&s1);
	return s1.dirty_started - s0.dirty_started;
}

/* The table's pages that a look at the slots has mapped (mincore counts the
 * shared zero page a read of untouched memory maps, too). */
static size_t slot_pages_mapped(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)gc_dirty_slots + pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t hi = (uintptr_t)(gc_dirty_slots + GC_DIRTY_FDS) & ~(uintptr_t)(pg - 1);
	static unsigned char vec[GC_DIRTY_FDS * sizeof(struct gc_dirty_slot) / 4096 + 2];
	size_t n = (hi - lo) / pg, k = 0;

	cr_assert_eq(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < n; i++)
		k += vec[i] & 1;
	return k;
}

/* The sweep that ages idle descriptors' ranges visits the slots that hold
 * ranges, not the whole table: reading each of 4096 slots' count mapped
 * all of its 1.5 MiB, 384 page faults, in every process whose writes
 * reached the limiter. */
Test(dirty_core, idle_sweep_reads_only_busy_slots)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)gc_dirty_slots + pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t hi = (uintptr_t)(gc_dirty_slots + GC_DIRTY_FDS) & ~(uintptr_t)(pg - 1);
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p));

	gc_dirty_reset();
	cr_assert_eq(madvise((void *)lo, hi - lo, MADV_DONTNEED), 0);
	cr_assert_lt(slot_pages_mapped(), 8, "the table is still mapped after MADV_DONTNEED");
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 64 * KIB;
	cr_assert_geq(started_by(fd, 8), 4, "the limiter started no writeback");
	cr_expect_leq(slot_pages_mapped(), 4, "%zu of the table's %zu pages mapped",
		      slot_pages_mapped(), (size_t)((hi - lo) / pg));
	unlink(p);
	close(fd);
}

/* A fork child inherits the slot lock that another thread of its parent
 * held at the fork: the atfork handler makes it the child's again. Without
 * it the child's writes through that number are never limited, each after a
 * 200 ms try (so the parent's side, which shows the lock really is held,
 * runs 2 writes only). */
Test(dirty_core, slot_held_at_fork)
{
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p)), st;
	pid_t pid;

	gc_dirty_reset();
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 64 * KIB;
	cr_assert_eq(started_by(fd, 2), 2);
	/* what a thread inside the slow path at the fork leaves behind */
	gc_dirty_slots[fd].s_busy = 1;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		gc_dirty_atfork_child();
		_exit(started_by(fd, 10) == 10 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's writes were not limited");
	cr_expect_eq(started_by(fd, 2), 0, "a held slot in the parent is still held");
	gc_dirty_slots[fd].s_busy = 0;
	cr_expect_eq(started_by(fd, 2), 2);
	unlink(p);
	close(fd);
}

/* sync_file_range is a cancellation point in glibc: a writer cancelled
 * inside it, with the slot held, must not leave the slot held. The stand-in
 * sleeps in usleep (a cancellation point too) while the main thread cancels. */
static int in_sfr;
static int sfr_slow(int fd, off64_t off, off64_t len, unsigned int flags)
{
	__atomic_store_n(&in_sfr, 1, __ATOMIC_RELEASE);
	usleep(50 * 1000);
	return (int)syscall(SYS_sync_file_range, fd, off, len, flags);
}

static void *cancelled_writer(void *arg)
{
	int fd = *(int *)arg;

	for (;;)
		started_by(fd, 1);
	return NULL;
}

Test(dirty_core, writer_cancelled_inside)
{
	char p[64];
	int fd = tmpfile_fd(p, sizeof(p));
	pthread_t t;
	void *ret;

	gc_dirty_reset();
	gc_cfg.c_dirty.dc_mode = GC_DIRTY_FIXED;
	gc_cfg.c_dirty.dc_window = 64 * KIB;
	in_sfr = 0;
	gc_sys.sy_sync_file_range = sfr_slow;
	cr_assert_eq(pthread_create(&t, NULL, cancelled_writer, &fd), 0);
	while (!__atomic_load_n(&in_sfr, __ATOMIC_ACQUIRE))
		usleep(1000);
	cr_assert_eq(pthread_cancel(t), 0);
	cr_assert_eq(pthread_join(t, &ret), 0);
	gc_sys.sy_sync_file_range = NULL;
	cr_expect_eq(ret, PTHREAD_CANCELED);
	cr_expect_eq(gc_dirty_slots[fd].s_busy, 0, "the cancelled writer left its slot held");
	cr_expect_eq(started_by(fd, 4), 4, "writes after the cancel were not limited");
	unlink(p);
	close(fd);
}
