// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcd's accounting through BPF_PROG_TEST_RUN: issue and completion steps with
 * known times, bytes and classes go through the same inline code as the
 * tracepoint programs; the maps are then read from here. Needs root. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/gcd.h"
#include "bpf/gcd_sweep.h"
#include "acct_test.skel.h"

static struct acct_test_bpf *skel;

static int quiet(enum libbpf_print_level l, const char *f, va_list ap)
{
	return 0;
}

static void setup(void)
{
	if (geteuid() != 0)
		return;
	libbpf_set_print(quiet);
	skel = acct_test_bpf__open_and_load();
}

static void teardown(void)
{
	acct_test_bpf__destroy(skel);
	skel = NULL;
}

static void need_bpf(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to load BPF programs");
	if (!skel)
		cr_skip_test("cannot load the test BPF object here (%s)", strerror(errno));
}

static void step(__u64 what, __u64 rq, __u32 dev, __u32 cls, __u32 bytes_or_err,
		 __u32 nr_bytes, __u64 now)
{
	__u64 ctx[7] = { what, rq, dev, cls, bytes_or_err, nr_bytes, now };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = sizeof(ctx));
	int err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.acct_step), &o);

	cr_assert_eq(err, 0, "BPF_PROG_TEST_RUN: %s", strerror(errno));
	cr_assert_eq(o.retval, 0);
}

static void issue(__u64 rq, __u32 dev, __u32 cls, __u32 bytes, __u64 now)
{
	step(0, rq, dev, cls, bytes, 0, now);
}

static void complete(__u64 rq, __u32 error, __u32 nr_bytes, __u64 now)
{
	step(1, rq, 0, 0, error, nr_bytes, now);
}

/* the (dev, cls) entry, or a zeroed one with found = false */
static struct gcd_stat get(__u32 dev, __u32 cls, bool *found)
{
	struct gcd_key k = { .k_dev = dev, .k_class = cls };
	struct gcd_stat v;

	memset(&v, 0, sizeof(v));
	*found = !bpf_map__lookup_elem(skel->maps.stats, &k, sizeof(k), &v, sizeof(v), 0);
	return v;
}

static unsigned inflight_entries(void)
{
	__u64 k, *prev = NULL, next;
	unsigned n = 0;

	while (!bpf_map__get_next_key(skel->maps.inflight, prev, &next, sizeof(next))) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

/* gcd's sweep of the in-flight map at time now: the requests in flight for
 * (dev, cls); *aged gets the entries it aged out (may be NULL) */
static unsigned sweep_at(__u32 dev, __u32 cls, __u64 now, __u64 *aged)
{
	struct gcd_inflight keys[8];
	struct gcd_sweep sw = { .s_keys = keys, .s_cap = 8 };
	struct gcd_key k = { .k_dev = dev, .k_class = cls };

	cr_assert_eq(gcd_sweep_inflight(bpf_map__fd(skel->maps.inflight), now, GCD_AGE_NS, &sw), 0);
	if (aged)
		*aged = sw.s_aged;
	return gcd_sweep_count(&sw, &k);
}

static unsigned only_slot(const struct gcd_stat *s)
{
	unsigned i, slot = GCD_SLOTS, n = 0;

	for (i = 0; i < GCD_SLOTS; i++)
		if (s->s_slot[i]) {
			slot = i;
			n += (unsigned)s->s_slot[i];
		}
	cr_assert_eq(n, 1, "one latency recorded, found %u", n);
	return slot;
}

#define DEV GCD_KDEV(7, 3)

TestSuite(acct, .init = setup, .fini = teardown);

Test(acct, slot_bounds_hold_for_every_value)
{
	__u64 v;
	unsigned s;

	for (v = 0; v < 200000; v += 1 + v / 64) {
		s = gcd_slot(v);
		cr_assert_lt(s, GCD_SLOTS);
		cr_assert(v >= gcd_slot_low(s) && v < gcd_slot_low(s) + gcd_slot_width(s),
			  "value %llu outside slot %u", (unsigned long long)v, s);
	}
	cr_assert_eq(gcd_slot(~0ull), (63 - GCD_SUB_BITS + 1) * GCD_SUB + GCD_SUB - 1);
	cr_assert_eq(gcd_slot_low(gcd_slot(4000000)), 3670016); /* 3.5 MiB ns slot */
}

Test(acct, issue_then_complete_records_one_latency)
{
	bool found;
	struct gcd_stat s;

	need_bpf();
	issue(0x1000, DEV, GCD_WRITE, 4096, 1000000);
	get(DEV, GCD_WRITE, &found);
	cr_assert_not(found, "a (disk, class) entry appears at its first completion");
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 1000000, NULL), 1);
	cr_assert_eq(inflight_entries(), 1);

	complete(0x1000, 0, 4096, 1000000 + 250000);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 1300000, NULL), 0);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(s.s_bytes, 4096);
	cr_assert_eq(only_slot(&s), gcd_slot(250000));
	cr_assert_eq(s.s_ewma_ns, 250000);
	cr_assert_eq(inflight_entries(), 0);
}

Test(acct, partial_completions_wait_for_the_last_bytes)
{
	bool found;
	struct gcd_stat s;

	need_bpf();
	issue(0x2000, DEV, GCD_READ, 3 * 4096, 0x10000);
	complete(0x2000, 0, 4096, 0x10000 + 100);
	complete(0x2000, 0, 4096, 0x10000 + 200);
	s = get(DEV, GCD_READ, &found);
	cr_assert_eq(s.s_count, 0, "not final after 2 of 3 pages");
	cr_assert_eq(s.s_partial, 2);
	cr_assert_eq(sweep_at(DEV, GCD_READ, 0x10000 + 300, NULL), 1);

	complete(0x2000, 0, 4096, 0x10000 + 7000);
	s = get(DEV, GCD_READ, &found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(s.s_bytes, 3 * 4096, "bytes of the whole request");
	cr_assert_eq(only_slot(&s), gcd_slot(7000), "latency to the final completion");
	cr_assert_eq(sweep_at(DEV, GCD_READ, 0x10000 + 8000, NULL), 0);
	cr_assert_eq(inflight_entries(), 0);
}

Test(acct, an_error_ends_a_request_early)
{
	bool found;
	struct gcd_stat s;

	need_bpf();
	issue(0x3000, DEV, GCD_WRITE, 65536, 500);
	complete(0x3000, 10 /* BLK_STS_IOERR */, 512, 1500);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(s.s_errors, 1);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 2000, NULL), 0);
	cr_assert_eq(only_slot(&s), gcd_slot(1000));
}

Test(acct, classes_and_disks_are_kept_apart)
{
	bool found;
	struct gcd_stat s;
	__u32 other = GCD_KDEV(254, 0);

	need_bpf();
	issue(0x10, DEV, GCD_FLUSH, 0, 100);
	issue(0x20, DEV, GCD_WRITE, 8192, 100);
	issue(0x30, DEV, GCD_READ, 512, 100);
	issue(0x40, other, GCD_FLUSH, 0, 100);
	issue(0x50, DEV, GCD_CLASSES, 4096, 100); /* discard and the like: skipped */
	cr_assert_eq(inflight_entries(), 4);
	complete(0x10, 0, 0, 4000100);	/* a flush has no bytes: final at once */
	complete(0x20, 0, 8192, 300);
	complete(0x30, 0, 512, 150);
	complete(0x40, 0, 0, 600);
	complete(0x50, 0, 4096, 200);

	s = get(DEV, GCD_FLUSH, &found);
	cr_assert(found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(s.s_bytes, 0);
	cr_assert_eq(only_slot(&s), gcd_slot(4000000));
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(s.s_bytes, 8192);
	cr_assert_eq(only_slot(&s), gcd_slot(200));
	s = get(DEV, GCD_READ, &found);
	cr_assert_eq(s.s_bytes, 512);
	cr_assert_eq(only_slot(&s), gcd_slot(50));
	s = get(other, GCD_FLUSH, &found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(only_slot(&s), gcd_slot(500));
	get(DEV, GCD_CLASSES, &found);
	cr_assert_not(found, "an op of no class gets no entry");
	cr_assert_eq(skel->bss->gcd_unknown_completions, 1, "the skipped one completes unknown");
	cr_assert_eq(inflight_entries(), 0);
}

Test(acct, a_requeued_request_counts_once_from_its_last_issue)
{
	bool found;
	struct gcd_stat s;

	need_bpf();
	issue(0x4000, DEV, GCD_WRITE, 4096, 1000);
	issue(0x4000, DEV, GCD_WRITE, 4096, 9000);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 9500, NULL), 1);
	complete(0x4000, 0, 4096, 10000);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 10500, NULL), 0);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(only_slot(&s), gcd_slot(1000));
}

Test(acct, a_completion_never_issued_is_ignored)
{
	bool found;

	need_bpf();
	complete(0x5000, 0, 4096, 100);
	cr_assert_eq(skel->bss->gcd_unknown_completions, 1);
	get(DEV, GCD_WRITE, &found);
	cr_assert_not(found);
}

Test(acct, ewma_moves_an_eighth_of_the_way)
{
	bool found;
	struct gcd_stat s;

	need_bpf();
	issue(0x6000, DEV, GCD_FLUSH, 0, 0);
	complete(0x6000, 0, 0, 8000);
	issue(0x6000, DEV, GCD_FLUSH, 0, 10000);
	complete(0x6000, 0, 0, 10000 + 16000);
	s = get(DEV, GCD_FLUSH, &found);
	cr_assert_eq(s.s_ewma_ns, 8000 + (16000 - 8000) / 8);
	issue(0x6000, DEV, GCD_FLUSH, 0, 30000);
	complete(0x6000, 0, 0, 30000 + 1000);
	s = get(DEV, GCD_FLUSH, &found);
	cr_assert_eq(s.s_ewma_ns, 9000 - 1000, "downward too: 9000 + (1000 - 9000) / 8");
	cr_assert_eq(s.s_count, 3);
}

Test(acct, the_sweep_counts_requests_in_flight_per_disk_and_class)
{
	__u32 other = GCD_KDEV(254, 0);

	need_bpf();
	issue(0x7001, DEV, GCD_WRITE, 4096, 100);
	issue(0x7002, DEV, GCD_WRITE, 4096, 100);
	issue(0x7003, DEV, GCD_WRITE, 4096, 100);
	issue(0x7004, DEV, GCD_FLUSH, 0, 100);
	issue(0x7005, other, GCD_WRITE, 512, 100);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 200, NULL), 3);
	cr_assert_eq(sweep_at(DEV, GCD_FLUSH, 200, NULL), 1);
	cr_assert_eq(sweep_at(DEV, GCD_READ, 200, NULL), 0);
	cr_assert_eq(sweep_at(other, GCD_WRITE, 200, NULL), 1);
	complete(0x7002, 0, 4096, 300);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 400, NULL), 2);
	cr_assert_eq(inflight_entries(), 4, "the sweep deletes nothing young");
}

/* A completion the programs never see (a driver that lost it, a disk
 * removed with requests queued) must neither count as in flight for ever
 * nor hold a map entry: past the age limit the sweep deletes it, and a
 * completion arriving after all counts as an unknown one, not twice. */
Test(acct, a_request_never_completed_is_aged_out)
{
	bool found;
	__u64 aged;
	struct gcd_stat s;

	need_bpf();
	issue(0x8001, DEV, GCD_WRITE, 4096, 1000);
	issue(0x8002, DEV, GCD_WRITE, 4096, 1000 + GCD_AGE_NS);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 1000 + GCD_AGE_NS, &aged), 2, "not older than the limit");
	cr_assert_eq(aged, 0);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 1001 + GCD_AGE_NS, &aged), 1);
	cr_assert_eq(aged, 1, "the first one, issued a limit and 1 ns ago");
	cr_assert_eq(inflight_entries(), 1);

	complete(0x8001, 0, 4096, 2000 + GCD_AGE_NS);
	cr_assert_eq(skel->bss->gcd_unknown_completions, 1);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(s.s_count, 0, "an aged request's late completion is not counted");
	complete(0x8002, 0, 4096, 3000 + GCD_AGE_NS);
	s = get(DEV, GCD_WRITE, &found);
	cr_assert_eq(s.s_count, 1);
	cr_assert_eq(sweep_at(DEV, GCD_WRITE, 4000 + GCD_AGE_NS, NULL), 0);
}
