// SPDX-License-Identifier: LGPL-2.1-or-later
/* core/devstats: seqlock reads of gcd's file against a writer rewriting it
 * in place, freshness and validation, files truncated or replaced under us,
 * /proc/diskstats parsing and the flush estimate's sources, and st_dev to
 * whole disk on a fake sysfs and on real partitions, loop devices and the
 * slow disk. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/devstats.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

#define FAKE_MAJOR 240	/* "local/experimental use": no real device */
#define DEV(i) makedev(FAKE_MAJOR, (i))

static char g_dir[64];
static char g_stats[128], g_diskstats[128], g_sys[128];

static const char *in_dir(const char *name)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", g_dir, name);
	return p;
}

static void use_paths(const char *sys)
{
	struct gc_devstats_paths p = {
		.dp_blk_stats = g_stats,
		.dp_diskstats = g_diskstats,
		.dp_sys = sys,
		.dp_mountinfo = in_dir("mountinfo"),
	};

	gc_devstats_init(&p);
}

static void setup(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/devstats.XXXXXX");
	cr_assert(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
	snprintf(g_stats, sizeof(g_stats), "%s/blk.stats", g_dir);
	snprintf(g_diskstats, sizeof(g_diskstats), "%s/diskstats", g_dir);
	snprintf(g_sys, sizeof(g_sys), "%s/sys", g_dir);
	use_paths(NULL);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	if (g_dir[0] && system(cmd) != 0)
		cr_log_warn("could not remove %s", g_dir);
}

TestSuite(devstats, .init = setup, .fini = teardown, .timeout = 30);

/* ---- building stats files ------------------------------------------------ */

static void stats_make(struct gc_blk_stats *s, unsigned int ndisks, uint64_t hb)
{
	memset(s, 0, sizeof(*s));
	s->bs_magic = GC_BLK_MAGIC;
	s->bs_version = GC_BLK_VERSION;
	s->bs_size = sizeof(*s);
	s->bs_seq = 2;
	s->bs_heartbeat_ns = hb;
	s->bs_interval_ms = 100;
	s->bs_ndisks = ndisks;
	s->bs_pid = 1;
	for (unsigned int i = 0; i < ndisks && i < GC_BLK_DISKS; i++) {
		s->bs_disks[i].bd_dev = DEV(i);
		snprintf(s->bs_disks[i].bd_name, sizeof(s->bs_disks[i].bd_name), "fake%u", i);
		s->bs_disks[i].bd_op[GC_BLK_FLUSH].bo_p50_ns = (i + 1) * MS;
	}
}

static void put_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	char tmp[300];
	int fd;

	/* a new inode renamed into place, as a restarted gcd would do */
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0, "open %s: %s", tmp, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
	cr_assert_eq(rename(tmp, path), 0, "rename: %s", strerror(errno));
}

static void put_stats(const struct gc_blk_stats *s)
{
	put_file(g_stats, s, sizeof(*s), 0644);
}

static void put_text(const char *path, const char *text)
{
	put_file(path, text, strlen(text), 0644);
}

/* ---- 1. the seqlock against a writer rewriting the file in place --------- */

/* Every field of an entry but bd_dev holds the same generation: a copy
 * mixing two publications shows. */
static void fill_gen(struct gc_blk_disk *d, uint64_t gen)
{
	volatile struct gc_blk_disk *v = d;
	uint32_t g32 = (uint32_t)gen;

	for (size_t i = 0; i + 1 < sizeof(d->bd_name); i++)
		v->bd_name[i] = (char)('a' + gen % 26);
	v->bd_flags = g32;
	v->bd_pad = g32;
	for (int op = 0; op < GC_BLK_OPS; op++) {
		volatile struct gc_blk_op *o = &v->bd_op[op];

		o->bo_count = gen;
		o->bo_bytes = gen;
		o->bo_p50_ns = gen;
		o->bo_p90_ns = gen;
		o->bo_p99_ns = gen;
		o->bo_ewma_ns = gen;
		o->bo_bytes_per_s = gen;
		o->bo_window_count = g32;
		o->bo_inflight = g32;
	}
}

static bool whole_gen(const struct gc_blk_disk *d, uint64_t *gen)
{
	uint64_t g = d->bd_op[0].bo_count;
	uint32_t g32 = (uint32_t)g;

	*gen = g;
	for (size_t i = 0; i + 1 < sizeof(d->bd_name); i++)
		if (d->bd_name[i] != (char)('a' + g % 26))
			return false;
	if (d->bd_flags != g32 || d->bd_pad != g32)
		return false;
	for (int op = 0; op < GC_BLK_OPS; op++) {
		const struct gc_blk_op *o = &d->bd_op[op];

		if (o->bo_count != g || o->bo_bytes != g || o->bo_p50_ns != g ||
		    o->bo_p90_ns != g || o->bo_p99_ns != g || o->bo_ewma_ns != g ||
		    o->bo_bytes_per_s != g || o->bo_window_count != g32 || o->bo_inflight != g32)
			return false;
	}
	return true;
}

struct writer {
	struct gc_blk_stats *w_map;
	unsigned int w_ndisks;
	int w_stop;
	uint64_t w_gens;
};

/* gcd's side of the protocol: bs_seq odd, every entry rewritten field by
 * field, heartbeat, bs_seq even; again after 0-7 us. Back to back, a
 * reader's three preads would never fit between two generations. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct gc_blk_stats *m = w->w_map;
	uint64_t gen = 1;

	while (!__atomic_load_n(&w->w_stop, __ATOMIC_RELAXED)) {
		uint64_t seq = __atomic_load_n(&m->bs_seq, __ATOMIC_RELAXED);

		__atomic_store_n(&m->bs_seq, seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		for (unsigned int i = 0; i < w->w_ndisks; i++)
			fill_gen(&m->bs_disks[i], gen);
		m->bs_heartbeat_ns = gc_now_ns();
		__atomic_store_n(&m->bs_seq, seq + 2, __ATOMIC_RELEASE);
		for (uint64_t until = gc_now_ns() + (gen % 8) * US; gc_now_ns() < until;)
			;
		gen++;
	}
	w->w_gens = gen - 1;
	return NULL;
}

Test(devstats, seqlock_never_torn)
{
	struct gc_blk_stats s;
	struct writer w = { .w_ndisks = 8 };
	uint64_t end, reads = 0, ok = 0, torn = 0, raw_torn = 0, raw = 0, last = 0, back = 0;
	pthread_t t;
	int fd;

	stats_make(&s, w.w_ndisks, gc_now_ns());
	for (unsigned int i = 0; i < w.w_ndisks; i++)
		fill_gen(&s.bs_disks[i], 0);
	put_stats(&s);
	fd = open(g_stats, O_RDWR);
	cr_assert(fd >= 0);
	w.w_map = mmap(NULL, sizeof(s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert(w.w_map != MAP_FAILED);
	use_paths(NULL);
	cr_assert_eq(pthread_create(&t, NULL, writer_main, &w), 0);

	end = gc_now_ns() + 1 * SEC;
	while (gc_now_ns() < end) {
		struct gc_blk_disk d;
		uint64_t gen, age;
		unsigned int i = (unsigned int)(reads % w.w_ndisks);

		reads++;
		if (gc_devstats_read(DEV(i), &d, gc_now_ns(), &age)) {
			ok++;
			cr_assert_eq(d.bd_dev, DEV(i));
			if (!whole_gen(&d, &gen)) {
				torn++;
				cr_log_error("torn copy of disk %u: count %lu p99 %lu inflight %u",
					     i, (unsigned long)d.bd_op[0].bo_count,
					     (unsigned long)d.bd_op[2].bo_p99_ns,
					     d.bd_op[2].bo_inflight);
			}
			if (gen < last)
				back++;
			last = gen;
		}
		/* the same bytes without the protocol: proof the writer races */
		if (reads % 2 == 0) {
			raw++;
			if (pread(fd, &d, sizeof(d), (off_t)offsetof(struct gc_blk_stats, bs_disks)) ==
				    sizeof(d) &&
			    !whole_gen(&d, &gen))
				raw_torn++;
		}
	}
	__atomic_store_n(&w.w_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	cr_log_info("seqlock: %lu reads, %lu copies, %lu torn; writer %lu generations; "
		    "unprotected reads torn %lu of %lu",
		    (unsigned long)reads, (unsigned long)ok, (unsigned long)torn,
		    (unsigned long)w.w_gens, (unsigned long)raw_torn, (unsigned long)raw);
	cr_expect_eq(torn, 0, "%lu torn copies", (unsigned long)torn);
	cr_expect_eq(back, 0, "generations went back %lu times", (unsigned long)back);
	cr_expect(ok >= 100, "only %lu of %lu reads got a copy", (unsigned long)ok,
		  (unsigned long)reads);
	cr_expect(raw_torn > 0, "the writer never raced a read: the test proves nothing");
	cr_expect(w.w_gens > 1000, "the writer made only %lu generations", (unsigned long)w.w_gens);
	munmap(w.w_map, sizeof(s));
	close(fd);
}

/* A writer that never finishes (bs_seq stays odd) costs a bounded wait. */
Test(devstats, odd_seq_forever)
{
	struct gc_blk_stats s;
	struct gc_blk_disk d;
	uint64_t t0, now = 50 * SEC;

	stats_make(&s, 2, now);
	s.bs_seq = 7;
	put_stats(&s);
	use_paths(NULL);
	t0 = gc_now_ns();
	cr_expect_not(gc_devstats_read(DEV(0), &d, now, NULL));
	cr_expect(gc_now_ns() - t0 < 100 * MS, "gave up after %lu us",
		  (unsigned long)((gc_now_ns() - t0) / US));
}

/* ---- 2. freshness and validation ----------------------------------------- */

Test(devstats, heartbeat_freshness)
{
	struct gc_blk_stats s;
	struct gc_blk_disk d;
	uint64_t hb = 1000 * SEC, age;

	stats_make(&s, 3, hb);
	put_stats(&s);
	use_paths(NULL);

	cr_assert(gc_devstats_read(DEV(1), &d, hb, &age));
	cr_expect_eq(age, 0);
	cr_expect_eq(d.bd_dev, DEV(1));
	cr_expect_str_eq(d.bd_name, "fake1");
	cr_expect_eq(d.bd_op[GC_BLK_FLUSH].bo_p50_ns, 2 * MS);
	cr_expect(gc_devstats_read(DEV(2), &d, hb + 400 * MS, &age), "100 ms interval: 500 ms");
	cr_expect_eq(age, 400 * MS);
	cr_expect_not(gc_devstats_read(DEV(2), &d, hb + 600 * MS, &age), "600 ms old");
	cr_expect_eq(age, 600 * MS, "the age is given for a stale file too");
	cr_expect(gc_devstats_read(DEV(2), &d, hb - 400 * MS, &age), "slightly ahead");
	cr_expect_eq(age, 0);
	cr_expect_not(gc_devstats_read(DEV(2), &d, hb - 600 * MS, NULL), "in the future");
	cr_expect_not(gc_devstats_read(DEV(7), &d, hb, &age), "no such disk");
	cr_expect_eq(age, 0, "a valid file without the disk still has an age");
	cr_expect_not(gc_devstats_read(0, &d, hb, NULL));

	/* 3 intervals when that is longer than 500 ms, but never beyond 10 s */
	s.bs_interval_ms = 1000;
	put_stats(&s);
	use_paths(NULL);
	cr_expect(gc_devstats_read(DEV(0), &d, hb + 2900 * MS, NULL));
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb + 3100 * MS, NULL));
	s.bs_interval_ms = UINT32_MAX;
	put_stats(&s);
	use_paths(NULL);
	cr_expect(gc_devstats_read(DEV(0), &d, hb + 9 * SEC, NULL));
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb + 11 * SEC, NULL), "capped at 10 s");
}

/* Each broken file, put in place of a good one, is not used. */
Test(devstats, invalid_files_unused)
{
	struct gc_blk_stats good, s;
	struct gc_blk_disk d;
	uint64_t hb = 1000 * SEC, age;
	char big[sizeof(s) + 1];

	stats_make(&good, 2, hb);
	put_stats(&good);
	use_paths(NULL);
	cr_assert(gc_devstats_read(DEV(0), &d, hb, NULL), "the good file is read");

#define BAD(what, stmt)                                                           \
	do {                                                                      \
		s = good;                                                         \
		stmt;                                                             \
		put_stats(&s);                                                    \
		use_paths(NULL);                                                  \
		cr_expect_not(gc_devstats_read(DEV(0), &d, hb, &age), "%s", what); \
		cr_expect_eq(age, UINT64_MAX, "%s: no age", what);                \
	} while (0)
	BAD("bad magic", s.bs_magic ^= 1);
	BAD("bad version", s.bs_version = GC_BLK_VERSION + 1);
	BAD("bad size field", s.bs_size = sizeof(s) - 8);
	BAD("too many disks", s.bs_ndisks = GC_BLK_DISKS + 1);
	BAD("huge disk count", s.bs_ndisks = UINT32_MAX);
#undef BAD

	use_paths(NULL);
	put_file(g_stats, &good, sizeof(good) - 8, 0644);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "short file");
	memset(big, 0, sizeof(big));
	memcpy(big, &good, sizeof(good));
	put_file(g_stats, big, sizeof(big), 0644);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "long file");
	put_file(g_stats, &good, sizeof(good), 0664);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "group-writable");
	put_file(g_stats, &good, sizeof(good), 0646);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "writable by others");
	put_file(g_stats, &good, sizeof(good), 0444);
	use_paths(NULL);
	cr_expect(gc_devstats_read(DEV(0), &d, hb, NULL), "read-only is fine");

	cr_assert_eq(unlink(g_stats), 0);
	cr_assert_eq(mkfifo(g_stats, 0644), 0);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "a FIFO, and no hang");
	unlink(g_stats);
	cr_assert_eq(mkdir(g_stats, 0755), 0);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "a directory");
	rmdir(g_stats);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "no file");
}

/* The open file cut short, emptied, refilled: reads fail, never crash. */
Test(devstats, truncated_while_open)
{
	struct gc_blk_stats s;
	struct gc_blk_disk d;
	uint64_t hb = 1000 * SEC;
	int fd;

	stats_make(&s, 4, hb);
	put_stats(&s);
	use_paths(NULL);
	cr_assert(gc_devstats_read(DEV(3), &d, hb, NULL));
	fd = open(g_stats, O_RDWR);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 0), 0);
	cr_expect_not(gc_devstats_read(DEV(3), &d, hb, NULL), "empty");
	cr_assert_eq(ftruncate(fd, (off_t)offsetof(struct gc_blk_stats, bs_disks) + 100), 0);
	cr_expect_not(gc_devstats_read(DEV(3), &d, hb, NULL), "cut inside the entries");
	cr_assert_eq(pwrite(fd, &s, sizeof(s), 0), (ssize_t)sizeof(s));
	cr_expect(gc_devstats_read(DEV(3), &d, hb, NULL), "whole again");

	/* and while reads run: truncations at random points for 300 ms */
	{
		uint64_t end = gc_now_ns() + 300 * MS, reads = 0, good = 0;
		unsigned int seed = 1;

		if (fork() == 0) {
			while (gc_now_ns() < end) {
				if (ftruncate(fd, (off_t)(rand_r(&seed) % sizeof(s))) ||
				    pwrite(fd, &s, sizeof(s), 0) != (ssize_t)sizeof(s))
					_exit(1);
			}
			_exit(0);
		}
		while (gc_now_ns() < end) {
			reads++;
			if (gc_devstats_read(DEV(reads % 4), &d, hb, NULL)) {
				good++;
				cr_assert_eq(d.bd_dev, DEV(reads % 4));
			}
		}
		waitpid(-1, NULL, 0);
		cr_log_info("truncation race: %lu reads, %lu copies", (unsigned long)reads,
			    (unsigned long)good);
	}
	close(fd);
}

/* gcd restarted: a new file renamed into place is picked up within the
 * re-check interval; a file appearing later likewise. */
Test(devstats, replaced_and_late_files)
{
	struct gc_blk_stats s;
	struct gc_blk_disk d;
	uint64_t hb = 1000 * SEC, t0;
	bool got = false;

	unlink(g_stats);
	use_paths(NULL);
	cr_expect_not(gc_devstats_read(DEV(0), &d, hb, NULL), "no file yet");
	stats_make(&s, 1, hb);
	put_stats(&s);
	t0 = gc_now_ns();
	while (!got && gc_now_ns() - t0 < 3 * SEC) {
		got = gc_devstats_read(DEV(0), &d, hb, NULL);
		if (!got)
			usleep(10000);
	}
	cr_expect(got, "a file that appears later is read");
	cr_expect(gc_now_ns() - t0 <= GC_DEVSTATS_RECHECK_NS + 100 * MS,
		  "picked up after %lu ms", (unsigned long)((gc_now_ns() - t0) / MS));
	cr_expect_eq(d.bd_op[GC_BLK_FLUSH].bo_p50_ns, 1 * MS);

	s.bs_disks[0].bd_op[GC_BLK_FLUSH].bo_p50_ns = 9 * MS;
	put_stats(&s);
	t0 = gc_now_ns();
	got = false;
	while (!got && gc_now_ns() - t0 < 3 * SEC) {
		cr_assert(gc_devstats_read(DEV(0), &d, hb, NULL),
			  "the old file stays readable until the switch");
		got = d.bd_op[GC_BLK_FLUSH].bo_p50_ns == 9 * MS;
		if (!got)
			usleep(10000);
	}
	cr_expect(got, "the replacement is read");
	cr_expect(gc_now_ns() - t0 <= GC_DEVSTATS_RECHECK_NS + 100 * MS,
		  "replacement picked up after %lu ms", (unsigned long)((gc_now_ns() - t0) / MS));

	/* entries that move in the file are still found */
	stats_make(&s, 5, hb);
	s.bs_disks[0].bd_dev = DEV(4);
	s.bs_disks[4].bd_dev = DEV(0);
	s.bs_disks[4].bd_op[GC_BLK_FLUSH].bo_p50_ns = 77;
	put_stats(&s);
	use_paths(NULL);
	cr_expect(gc_devstats_read(DEV(0), &d, hb, NULL));
	cr_expect_eq(d.bd_op[GC_BLK_FLUSH].bo_p50_ns, 77);
	cr_expect(gc_devstats_read(DEV(0), &d, hb, NULL), "and again through the hint");
	cr_expect_eq(d.bd_op[GC_BLK_FLUSH].bo_p50_ns, 77);
}

/* Several threads read at once: each gets its own disk's entry. */
static void *reader_main(void *arg)
{
	uintptr_t i = (uintptr_t)arg, bad = 0, unknown = 0;
	struct gc_blk_disk d;

	for (int n = 0; n < 20000; n++) {
		if (!gc_devstats_read(DEV(i), &d, 1000 * SEC, NULL))
			unknown++;
		else if (d.bd_dev != DEV(i) || d.bd_op[GC_BLK_FLUSH].bo_p50_ns != (i + 1) * MS)
			bad++;
	}
	/* a reader that waited too long for the lock goes without */
	if (unknown > 200)
		bad += unknown;
	return (void *)bad;
}

Test(devstats, threads_read_together)
{
	struct gc_blk_stats s;
	pthread_t t[4];
	void *bad;

	stats_make(&s, 4, 1000 * SEC);
	put_stats(&s);
	use_paths(NULL);
	for (uintptr_t i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, reader_main, (void *)i), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &bad);
		cr_expect_eq((uintptr_t)bad, 0, "thread %d: %lu bad reads", i, (unsigned long)(uintptr_t)bad);
	}
}

Test(devstats, errno_kept)
{
	struct gc_blk_disk d;
	uint64_t f, ms;

	unlink(g_stats);
	use_paths("/nonexistent");
	errno = 1234;
	cr_expect_not(gc_devstats_read(DEV(0), &d, 1000 * SEC, NULL));
	cr_expect_eq(gc_devstats_disk(makedev(8, 1)), 0);
	cr_expect_not(gc_devstats_diskstats(makedev(8, 1), &f, &ms));
	cr_expect_eq(gc_devstats_flush_ns(makedev(8, 1), 1000 * SEC, NULL), 0);
	cr_expect_eq(errno, 1234, "errno is the caller's: %d", errno);
}

/* ---- 3. /proc/diskstats ------------------------------------------------- */

/* From a 6.18 kernel, plus lines an older kernel or a broken file gives. */
static const char sample[] =
	"   7       0 loop0 49977 182 422296 6313 390244 339139 22238448 1330536 1 641872 "
	"1941583 0 0 0 0 140621 604734\n"
	" 254       0 vda 79200 9655 3067474 34549 8109625 60843 70263368 784835 0 328592 "
	"941423 70511 82 23064744 9272 2120979 112765\n"
	" 254       1 vda1 100 0 800 10 5 0 40 1 0 10 11 0 0 0 0 0 0\n"
	"   8       0 sda 1 2 3 4 5 6 7 8 9 10 11\n"			/* < 4.18: 11 fields */
	"   8      16 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"	/* 4.18-5.4: no flush */
	"garbage line without numbers\n"
	"\n"
	" 259  65536 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n"
	" 253       3 dm-3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 99999999999999999999 1\n"
	" 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5 6";	/* no final newline */

Test(devstats, diskstats_parse)
{
	uint64_t f = 0, ms = 0;
	size_t len = strlen(sample);

	cr_assert(gc_devstats_parse_diskstats(sample, len, makedev(254, 0), &f, &ms));
	cr_expect_eq(f, 2120979);
	cr_expect_eq(ms, 112765);
	cr_assert(gc_devstats_parse_diskstats(sample, len, makedev(7, 0), &f, &ms));
	cr_expect_eq(f, 140621);
	cr_expect_eq(ms, 604734);
	cr_assert(gc_devstats_parse_diskstats(sample, len, makedev(254, 1), &f, &ms));
	cr_expect_eq(f, 0);
	cr_assert(gc_devstats_parse_diskstats(sample, len, makedev(259, 65536), &f, &ms),
		  "minors beyond 255");
	cr_expect_eq(f, 16);
	cr_expect_eq(ms, 17);
	cr_assert(gc_devstats_parse_diskstats(sample, len, makedev(253, 0), &f, &ms),
		  "the last line without a newline");
	cr_expect_eq(f, 5);
	cr_expect_eq(ms, 6);
	cr_expect_not(gc_devstats_parse_diskstats(sample, len, makedev(8, 0), &f, &ms),
		      "old kernel: no flush fields");
	cr_expect_not(gc_devstats_parse_diskstats(sample, len, makedev(8, 16), &f, &ms));
	cr_expect_not(gc_devstats_parse_diskstats(sample, len, makedev(253, 3), &f, &ms),
		      "a number that overflows");
	cr_expect_not(gc_devstats_parse_diskstats(sample, len, makedev(1, 1), &f, &ms),
		      "absent");
	cr_expect_not(gc_devstats_parse_diskstats(sample, len, 0, &f, &ms));
	cr_expect_not(gc_devstats_parse_diskstats(sample, 40, makedev(254, 0), &f, &ms),
		      "text cut before the line");
	cr_expect_not(gc_devstats_parse_diskstats("", 0, makedev(254, 0), &f, &ms));
}

/* The write counters the paced limiter measures with: sectors written,
 * ms reading and writing, ms with any request in flight. */
Test(devstats, diskstats_writes)
{
	struct gc_write_sample w;
	size_t len = strlen(sample);

	cr_assert(gc_devstats_parse_writes(sample, len, makedev(7, 0), &w));
	cr_expect_eq(w.ws_sectors, 22238448);
	cr_expect_eq(w.ws_read_ms, 6313);
	cr_expect_eq(w.ws_write_ms, 1330536);
	cr_expect_eq(w.ws_busy_ms, 641872);
	cr_assert(gc_devstats_parse_writes(sample, len, makedev(259, 65536), &w));
	cr_expect_eq(w.ws_sectors, 7);
	cr_expect_eq(w.ws_busy_ms, 10);
	cr_expect_not(gc_devstats_parse_writes(sample, len, makedev(8, 16), &w),
		      "a line the flush fields are missing from is not read at all");
	cr_expect_not(gc_devstats_parse_writes(sample, len, makedev(1, 1), &w), "absent");
}

Test(devstats, diskstats_file)
{
	char big[64 * 1024];
	size_t n = 0;
	uint64_t f = 0, ms = 0;

	/* far more than one read's worth, the wanted line last */
	for (int i = 0; n < sizeof(big) - 4096; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n,
				      " 250 %7d fill%d 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", i,
				      i);
	snprintf(big + n, sizeof(big) - n, " 254 0 vda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 42 84\n");
	put_text(g_diskstats, big);
	cr_assert(gc_devstats_diskstats(makedev(254, 0), &f, &ms));
	cr_expect_eq(f, 42);
	cr_expect_eq(ms, 84);
	cr_expect(gc_devstats_diskstats(makedev(250, 100), &f, &ms));
	cr_expect_eq(f, 16);
	cr_expect_not(gc_devstats_diskstats(makedev(254, 1), &f, &ms));

	/* the real file has this machine's disks in it */
	gc_devstats_init(NULL);
	{
		struct stat st;
		uint64_t disk;

		cr_assert_eq(stat("/", &st), 0);
		disk = gc_devstats_disk(st.st_dev);
		if (disk && gc_devstats_diskstats(disk, &f, &ms))
			cr_log_info("root's disk %u:%u: %lu flushes, %lu ms", major(disk), minor(disk),
				    (unsigned long)f, (unsigned long)ms);
	}
}

Test(devstats, flush_mean)
{
	struct gc_flush_sample a = { 1000, 4000 }, b = { 1100, 4200 }, c = { 1100, 4300 },
			       d = { 1200, 4200 }, z = { 0, 0 };

	cr_expect_eq(gc_devstats_flush_mean_ns(&a, &b), 2 * MS);
	cr_expect_eq(gc_devstats_flush_mean_ns(&z, &a), 4 * MS, "since boot");
	cr_expect_eq(gc_devstats_flush_mean_ns(&b, &c), 0, "no flushes in between");
	cr_expect_eq(gc_devstats_flush_mean_ns(&b, &a), 0, "counters went back");
	cr_expect_eq(gc_devstats_flush_mean_ns(&b, &d), 1, "flushes below 1 ms resolution");
	cr_expect_eq(gc_devstats_flush_mean_ns(&a, &a), 0);
}

/* ---- 4. the flush estimate and its sources ------------------------------ */

static void put_diskstats(uint64_t disk, uint64_t flushes, uint64_t ms)
{
	char line[256];

	snprintf(line, sizeof(line),
		 "   1 1 other 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 7 7\n"
		 " %u %u disk 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 %lu %lu\n",
		 major(disk), minor(disk), (unsigned long)flushes, (unsigned long)ms);
	put_text(g_diskstats, line);
}

Test(devstats, flush_sources)
{
	struct gc_blk_stats s;
	struct gc_devstats_io io;
	struct stat st, shm;
	const char *src = "?";
	uint64_t disk, t = 1000 * SEC;

	cr_assert_eq(stat(g_dir, &st), 0);
	disk = gc_devstats_disk(st.st_dev);
	if (!disk)
		cr_skip_test("%s is on no block device: nothing to map it to", g_dir);

	/* gcd absent: /proc/diskstats, since boot at first, then per interval */
	unlink(g_stats);
	put_diskstats(disk, 1000, 4000);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t, &src), 4 * MS);
	cr_expect_str_eq(src, "diskstats");
	put_diskstats(disk, 1100, 4200);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 50 * MS, &src), 4 * MS,
		     "not sampled again within 100 ms");
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 150 * MS, &src), 2 * MS);
	cr_expect_str_eq(src, "diskstats");
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 300 * MS, &src), 2 * MS,
		     "an idle interval keeps the last mean");
	cr_expect_not(gc_devstats_io(st.st_dev, t, &io), "no observer, no io figures");

	/* gcd present and fresh: its FLUSH p50, else its EWMA */
	put_diskstats(disk, 1000, 4000);
	stats_make(&s, 2, t);
	s.bs_disks[1].bd_dev = disk;
	s.bs_disks[1].bd_flags = GC_BLK_WCACHE;
	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_p50_ns = 3 * MS;
	s.bs_disks[1].bd_op[GC_BLK_WRITE].bo_bytes_per_s = 123456789;
	s.bs_disks[1].bd_op[GC_BLK_WRITE].bo_p99_ns = 7 * MS;
	s.bs_disks[1].bd_op[GC_BLK_READ].bo_p99_ns = 11 * MS;
	s.bs_disks[1].bd_op[GC_BLK_READ].bo_window_count = 42;
	put_stats(&s);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t, &src), 3 * MS);
	cr_expect_str_eq(src, "observer");
	cr_assert(gc_devstats_io(st.st_dev, t, &io));
	cr_expect_eq(io.io_disk, disk);
	cr_expect_eq(io.io_write_bytes_per_s, 123456789);
	cr_expect_eq(io.io_write_p99_ns, 7 * MS);
	cr_expect_eq(io.io_read_p99_ns, 11 * MS);
	cr_expect_eq(io.io_read_window, 42);
	cr_expect_eq(io.io_flags, GC_BLK_WCACHE);

	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_p50_ns = 0;
	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_ewma_ns = 5 * MS;
	put_stats(&s);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t, &src), 5 * MS, "no flush in the window");
	cr_expect_str_eq(src, "observer");

	/* nothing from gcd about flushes, or an absurd value: diskstats */
	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_ewma_ns = 0;
	put_stats(&s);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t, &src), 4 * MS);
	cr_expect_str_eq(src, "diskstats");
	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_p50_ns = UINT64_MAX;
	put_stats(&s);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t, &src), 4 * MS);
	cr_expect_str_eq(src, "diskstats");

	/* stale: diskstats */
	s.bs_disks[1].bd_op[GC_BLK_FLUSH].bo_p50_ns = 3 * MS;
	put_stats(&s);
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 2 * SEC, &src), 4 * MS);
	cr_expect_str_eq(src, "diskstats");
	cr_expect_not(gc_devstats_io(st.st_dev, t + 2 * SEC, &io));

	/* neither */
	put_text(g_diskstats, "");
	use_paths(NULL);
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 2 * SEC, &src), 0);
	cr_expect_str_eq(src, "none");
	cr_expect_eq(gc_devstats_flush_ns(st.st_dev, t + 2 * SEC, NULL), 0, "source optional");

	/* tmpfs: no disk at all */
	if (stat("/dev/shm", &shm) == 0 && !major(shm.st_dev)) {
		cr_expect_eq(gc_devstats_flush_ns(shm.st_dev, t, &src), 0);
		cr_expect_str_eq(src, "none");
	}
}

/* ---- 5. st_dev to whole disk: a fake sysfs ------------------------------- */

static void mk(const char *rel, const char *content)
{
	char path[512], *slash, cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g_sys, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	cr_assert_eq(system(cmd), 0);
	*slash = '/';
	if (!content)
		return;
	f = fopen(path, "w");
	cr_assert(f, "%s: %s", path, strerror(errno));
	fprintf(f, "%s\n", content);
	fclose(f);
}

/* A block device in the fake tree: its directory under devices/, its
 * dev file, and the /sys/dev/block/M:m link to it. */
static void mkblock(const char *dir, unsigned int maj, unsigned int min)
{
	char rel[300], dev[32], link[300], target[300];

	snprintf(rel, sizeof(rel), "devices/%s/dev", dir);
	snprintf(dev, sizeof(dev), "%u:%u", maj, min);
	mk(rel, dev);
	snprintf(rel, sizeof(rel), "devices/%s/slaves/.keep", dir);
	mk(rel, NULL);
	snprintf(link, sizeof(link), "%s/dev/block/%u:%u", g_sys, maj, min);
	mk("dev/block/.keep", NULL);
	snprintf(target, sizeof(target), "../../devices/%s", dir);
	cr_assert_eq(symlink(target, link), 0, "symlink %s: %s", link, strerror(errno));
}

static void slave(const char *dir, const char *name, const char *dev)
{
	char rel[300];

	snprintf(rel, sizeof(rel), "devices/%s/slaves/%s/dev", dir, name);
	mk(rel, dev);
}

/* The fake tree's deepest walks, each answered right (NULL) or not. */
static void *walker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10; i++)
		if (gc_devstats_disk(makedev(9, 0)) != makedev(8, 0) ||
		    gc_devstats_disk(makedev(253, 0)) != makedev(8, 0) ||
		    gc_devstats_disk(makedev(8, 2)) != makedev(8, 0))
			return (void *)1;
	return NULL;
}

Test(devstats, disk_fake_sysfs)
{
	struct stat here, shm;
	char rel[300];
	uint64_t cycle;
	bool on_tmpfs;

	cr_assert_eq(stat(g_dir, &here), 0);
	on_tmpfs = !major(here.st_dev);

	mkblock("pci0/block/sda", 8, 0);
	mkblock("pci0/block/sda/sda1", 8, 1);
	mk("devices/pci0/block/sda/sda1/partition", "1");
	mkblock("pci0/block/sda/sda2", 8, 2);
	mk("devices/pci0/block/sda/sda2/partition", "2");
	mkblock("virtual/block/dm-0", 253, 0);		/* one slave: sda1 */
	slave("virtual/block/dm-0", "sda1", "8:1");
	mkblock("virtual/block/dm-1", 253, 1);		/* two: sda1 and sda2 */
	slave("virtual/block/dm-1", "sda1", "8:1");
	slave("virtual/block/dm-1", "sda2", "8:2");
	mkblock("virtual/block/md0", 9, 0);		/* one slave: dm-0 */
	slave("virtual/block/md0", "dm-0", "253:0");
	mkblock("virtual/block/dm-5", 253, 5);		/* a cycle with dm-6 */
	slave("virtual/block/dm-5", "dm-6", "253:6");
	mkblock("virtual/block/dm-6", 253, 6);
	slave("virtual/block/dm-6", "dm-5", "253:5");
	mkblock("orphan/block/sdz1", 8, 241);		/* a partition without disk */
	mk("devices/orphan/block/sdz1/partition", "1");

	/* loop devices: a file on this directory's filesystem (made a
	 * whole disk of the fake tree), a file on tmpfs, a deleted file */
	if (!on_tmpfs) {
		snprintf(rel, sizeof(rel), "virtual/block/here%u", minor(here.st_dev));
		mkblock(rel, major(here.st_dev), minor(here.st_dev));
	}
	mk("../backing.img", "data");
	mkblock("virtual/block/loop0", 7, 0);
	mk("devices/virtual/block/loop0/loop/backing_file", in_dir("backing.img"));
	mkblock("virtual/block/loop1", 7, 1);
	mk("devices/virtual/block/loop1/loop/backing_file", "/dev/shm");
	mkblock("virtual/block/loop2", 7, 2);
	mk("devices/virtual/block/loop2/loop/backing_file", "/nonexistent/x.img (deleted)");
	mkblock("virtual/block/loop0/loop0p1", 259, 3);	/* a partition of loop0 */
	mk("devices/virtual/block/loop0/loop0p1/partition", "1");
	mkblock("virtual/block/wrongdev", 8, 99);	/* dev file says otherwise */
	mk("devices/virtual/block/wrongdev/dev", "8:98");

	use_paths(g_sys);
	cr_expect_eq(gc_devstats_disk(makedev(8, 0)), makedev(8, 0), "a whole disk");
	cr_expect_eq(gc_devstats_disk(makedev(8, 1)), makedev(8, 0), "partition to disk");
	cr_expect_eq(gc_devstats_disk(makedev(8, 2)), makedev(8, 0));
	cr_expect_eq(gc_devstats_disk(makedev(253, 0)), makedev(8, 0), "one slave, mapped on");
	cr_expect_eq(gc_devstats_disk(makedev(253, 1)), makedev(253, 1), "two slaves: itself");
	cr_expect_eq(gc_devstats_disk(makedev(9, 0)), makedev(8, 0), "md over dm over a partition");
	cr_expect_eq(gc_devstats_disk(makedev(8, 241)), 0, "a partition whose disk is unknown");
	cr_expect_eq(gc_devstats_disk(makedev(8, 99)), 0, "a dev file that disagrees");
	cr_expect_eq(gc_devstats_disk(makedev(8, 77)), 0, "not in sysfs");
	cr_expect_eq(gc_devstats_disk(makedev(0, 27)), 0, "major 0 not in the mount table");
	cr_expect_eq(gc_devstats_disk(0), 0);
	if (!on_tmpfs)
		cr_expect_eq(gc_devstats_disk(makedev(7, 0)), here.st_dev,
			     "a loop file's own disk");
	if (stat("/dev/shm", &shm) == 0 && !major(shm.st_dev))
		cr_expect_eq(gc_devstats_disk(makedev(7, 1)), makedev(7, 1),
			     "a loop file on tmpfs: the loop device");
	cr_expect_eq(gc_devstats_disk(makedev(7, 2)), makedev(7, 2), "a deleted backing file");

	if (!on_tmpfs)
		cr_expect_eq(gc_devstats_disk(makedev(259, 3)), here.st_dev,
			     "a partition of a loop device: the disk of the loop's file");
	cycle = gc_devstats_disk(makedev(253, 5));
	cr_expect(cycle == makedev(253, 5) || cycle == makedev(253, 6),
		  "a cycle of slaves ends: %u:%u", major(cycle), minor(cycle));

	/* cached: a change in sysfs is not seen until the entry expires */
	cr_expect_eq(gc_devstats_disk(makedev(253, 1)), makedev(253, 1));
	snprintf(rel, sizeof(rel), "%s/devices/virtual/block/dm-1/slaves/sda2/dev", g_sys);
	unlink(rel);
	snprintf(rel, sizeof(rel), "%s/devices/virtual/block/dm-1/slaves/sda2", g_sys);
	rmdir(rel);
	cr_expect_eq(gc_devstats_disk(makedev(253, 1)), makedev(253, 1), "from the cache");
	use_paths(g_sys);
	cr_expect_eq(gc_devstats_disk(makedev(253, 1)), makedev(8, 0), "walked again");

	/* many devices: the cache is small, answers stay right */
	for (unsigned int i = 0; i < 40; i++) {
		snprintf(rel, sizeof(rel), "many/block/m%u", i);
		mkblock(rel, 240, i);
	}
	for (int round = 0; round < 2; round++)
		for (unsigned int i = 0; i < 40; i++)
			cr_expect_eq(gc_devstats_disk(makedev(240, i)), makedev(240, i));

	/* walks of several threads at once: one set of paths, taken in turn
	 * (a thread that found it taken answered nothing) */
	for (int round = 0; round < 20; round++) {
		pthread_t t[4];
		void *bad;

		use_paths(g_sys);
		for (int i = 0; i < 4; i++)
			cr_assert_eq(pthread_create(&t[i], NULL, walker, NULL), 0);
		for (int i = 0; i < 4; i++) {
			cr_assert_eq(pthread_join(t[i], &bad), 0);
			cr_expect_null(bad, "round %d: a walk answered wrong", round);
		}
	}
	use_paths(NULL);
	cr_expect_eq(gc_devstats_disk(makedev(240, 5)), 0, "init drops the fake tree's answers");
}

/* An anonymous st_dev (btrfs: one per subvolume) maps to the block device
 * mounted where a descriptor of it is: its mount id's line in the mount
 * table names it. */
Test(devstats, disk_anonymous_dev)
{
	char line[3000], node[300];
	struct statx sx;
	unsigned long long id;
	FILE *f;
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root to make a block device node");
	fd = open(g_dir, O_RDONLY | O_DIRECTORY);
	cr_assert(fd >= 0);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID))
		cr_skip_test("no STATX_MNT_ID here");
	id = sx.stx_mnt_id;
	mkblock("pci0/block/sda", 8, 0);
	mkblock("pci0/block/sda/sda1", 8, 1);
	mk("devices/pci0/block/sda/sda1/partition", "1");
	snprintf(node, sizeof(node), "%s", in_dir("sda1"));
	cr_assert_eq(mknod(node, S_IFBLK | 0600, makedev(8, 1)), 0, "mknod: %s", strerror(errno));
	use_paths(g_sys);
	cr_expect_eq(gc_devstats_disk(makedev(0, 53)), 0, "nothing known yet");

	f = fopen(in_dir("mountinfo"), "w");
	cr_assert(f);
	/* a line longer than the reader's buffer, our id, skipped */
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	fprintf(f, "%llu 1 0:50 / /long rw - btrfs %s rw,%s\n", id, node, line);
	fprintf(f, "%llu1 1 0:51 / /tmp rw shared:5 - btrfs %s rw\n", id, node);
	fclose(f);
	gc_devstats_alias(makedev(0, 53), fd);
	cr_expect_eq(gc_devstats_disk(makedev(0, 53)), 0,
		     "a line too long is skipped, a longer id is not ours");

	f = fopen(in_dir("mountinfo"), "w");
	cr_assert(f);
	fprintf(f, "%llu 1 0:52 / /tmp rw - tmpfs tmpfs rw\n", id);
	fclose(f);
	gc_devstats_alias(makedev(0, 53), fd);
	cr_expect_eq(gc_devstats_disk(makedev(0, 53)), 0, "tmpfs: no disk");

	f = fopen(in_dir("mountinfo"), "w");
	cr_assert(f);
	fprintf(f, "%llu 1 0:52 / /odd rw - btrfs /dev/null rw\n", id);
	fclose(f);
	gc_devstats_alias(makedev(0, 53), fd);
	cr_expect_eq(gc_devstats_disk(makedev(0, 53)), 0, "a source that is not a block device");

	f = fopen(in_dir("mountinfo"), "w");
	cr_assert(f);
	fprintf(f, "1 0 8:2 / / rw - ext4 /dev/sda2 rw\n");
	fprintf(f, "%llu 1 0:52 /sub /mnt\\040x rw,relatime shared:1 - btrfs %s rw,ssd\n", id,
		node);
	fclose(f);
	gc_devstats_alias(makedev(0, 53), fd);
	cr_expect_eq(gc_devstats_disk(makedev(0, 53)), makedev(8, 0),
		     "btrfs on a partition of sda: the disk");
	cr_expect_eq(gc_devstats_disk(makedev(0, 54)), 0, "another anonymous st_dev");
	gc_devstats_alias(makedev(8, 1), fd);
	cr_expect_eq(gc_devstats_disk(makedev(8, 1)), makedev(8, 0), "a real st_dev is walked");
	close(fd);
}

/* ---- 6. st_dev to whole disk: real devices -------------------------------- */

static uint64_t sysfs_dev(const char *path)
{
	unsigned int maj, min;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%u:%u", &maj, &min);
	fclose(f);
	return n == 2 ? makedev(maj, min) : 0;
}

Test(devstats, disk_real_root)
{
	struct stat st;
	uint64_t disk;

	cr_assert_eq(stat("/", &st), 0);
	if (!major(st.st_dev))
		cr_skip_test("the root filesystem has no block device");
	disk = gc_devstats_disk(st.st_dev);
	cr_expect_neq(disk, 0, "/ on %u:%u maps to a disk", major(st.st_dev), minor(st.st_dev));
	cr_log_info("/ on %u:%u: disk %u:%u", major(st.st_dev), minor(st.st_dev), major(disk),
		    minor(disk));
}

Test(devstats, disk_partition)
{
	glob_t g;
	char path[300];
	uint64_t part, disk;
	size_t n = 0;

	if (glob("/sys/class/block/*/partition", 0, NULL, &g) != 0)
		cr_skip_test("no partitioned disk on this machine (/sys/class/block/*/partition)");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *dir = g.gl_pathv[i];

		*strrchr(dir, '/') = '\0';
		snprintf(path, sizeof(path), "%s/dev", dir);
		part = sysfs_dev(path);
		snprintf(path, sizeof(path), "%s/../dev", dir);
		disk = sysfs_dev(path);
		if (!part || !disk)
			continue;
		/* a partition of a loop device goes on to the loop's disk */
		snprintf(path, sizeof(path), "%s/../loop/backing_file", dir);
		if (access(path, F_OK) == 0)
			continue;
		cr_expect_eq(gc_devstats_disk(part), disk, "%s", dir);
		n++;
	}
	globfree(&g);
	if (!n)
		cr_skip_test("only partitions of loop devices here");
}

static bool run(const char *cmd, char *out, size_t size)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	if (!p)
		return false;
	if (out) {
		n = fread(out, 1, size - 1, p);
		out[n] = '\0';
		while (n && out[n - 1] == '\n')
			out[--n] = '\0';
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	return pclose(p) == 0;
}

static void need_root_losetup(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to attach loop devices");
	if (!run("losetup --version 2>&1", NULL, 0))
		cr_skip_test("losetup is missing");
	if (access("/dev/loop-control", R_OK | W_OK) != 0)
		cr_skip_test("no /dev/loop-control");
}

static char g_loop[64];

static void loop_detach(void)
{
	char cmd[128];

	if (g_loop[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s 2>/dev/null", g_loop);
		run(cmd, NULL, 0);
		g_loop[0] = '\0';
	}
}

static void loop_fini(void)
{
	loop_detach();
	teardown();
}

/* Attaches @file, returns the loop device's number. */
static uint64_t loop_attach(const char *file)
{
	char cmd[400];
	struct stat st;

	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>&1", file);
	cr_assert(run(cmd, g_loop, sizeof(g_loop)), "losetup: %s", g_loop);
	cr_assert_eq(stat(g_loop, &st), 0, "%s: %s", g_loop, strerror(errno));
	cr_assert(S_ISBLK(st.st_mode));
	return st.st_rdev;
}

static void make_file(const char *path, off_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(ftruncate(fd, size), 0);
	close(fd);
}

Test(devstats, disk_loop_on_disk, .fini = loop_fini)
{
	static const char *const dirs[] = { "/var/tmp", "/tmp", "/root", "." };
	char file[300] = "";
	struct stat st;
	uint64_t loop, want = 0;

	need_root_losetup();
	for (size_t i = 0; i < ARRAY_LEN(dirs) && !want; i++)
		if (stat(dirs[i], &st) == 0 && major(st.st_dev) &&
		    (want = gc_devstats_disk(st.st_dev)))
			snprintf(file, sizeof(file), "%s/devstats-loop.%d", dirs[i], getpid());
	if (!want)
		cr_skip_test("no writable directory on a block device");
	make_file(file, 8 << 20);
	loop = loop_attach(file);
	unlink(file);	/* stays attached: backing_file then ends in " (deleted)" */
	cr_log_info("%s over %s: disk %u:%u", g_loop, file, major(want), minor(want));
	/* the path is gone now: a deleted file is the loop device itself */
	cr_expect_eq(gc_devstats_disk(loop), loop, "deleted backing file");
	loop_detach();

	make_file(file, 8 << 20);
	loop = loop_attach(file);
	gc_devstats_init(NULL);	/* the number may be the one just cached */
	cr_expect_eq(gc_devstats_disk(loop), want, "%s over a file of disk %u:%u", g_loop,
		     major(want), minor(want));
	loop_detach();
	unlink(file);
}

Test(devstats, disk_loop_on_tmpfs, .fini = loop_fini)
{
	char file[128];
	struct stat st;
	uint64_t loop;

	need_root_losetup();
	if (stat("/dev/shm", &st) != 0 || major(st.st_dev))
		cr_skip_test("/dev/shm is not a tmpfs");
	snprintf(file, sizeof(file), "/dev/shm/devstats-loop.%d", getpid());
	make_file(file, 8 << 20);
	loop = loop_attach(file);
	cr_expect_eq(gc_devstats_disk(loop), loop, "a loop over tmpfs is its own disk");
	loop_detach();
	unlink(file);
}

static char g_sd_name[64];

static void slowdisk_fini(void)
{
	char cmd[200];

	if (g_sd_name[0]) {
		snprintf(cmd, sizeof(cmd), "tests/slowdisk/slowdisk down --name %s >/dev/null 2>&1",
			 g_sd_name);
		if (!run(cmd, NULL, 0))
			cr_log_warn("slowdisk down --name %s failed", g_sd_name);
		g_sd_name[0] = '\0';
	}
	teardown();
}

/* ext4 on a loop device over the slow disk's FUSE file: the loop device,
 * where the filesystem's requests are seen, is the disk. */
Test(devstats, disk_slowdisk, .fini = slowdisk_fini, .timeout = 120)
{
	char cmd[300], out[4096], mnt[4096], *loopline;
	struct stat st, lst;
	uint64_t disk;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip_test("needs root and /dev/fuse for the slow disk");
	if (access("tests/slowdisk/slowdisk", X_OK) != 0 ||
	    access("build/tests/slowdisk/slowdiskd", X_OK) != 0)
		cr_skip_test("run from the project root after make (slowdiskd missing)");
	snprintf(g_sd_name, sizeof(g_sd_name), "devstats-%d", getpid());
	snprintf(cmd, sizeof(cmd),
		 "tests/slowdisk/slowdisk up --name %s --size-mb 64 --flush-us 1000 2>&1",
		 g_sd_name);
	if (!run(cmd, out, sizeof(out)))
		cr_skip_test("slowdisk up failed: %s", out);
	snprintf(mnt, sizeof(mnt), "%s", strrchr(out, '\n') ? strrchr(out, '\n') + 1 : out);
	cr_assert_eq(stat(mnt, &st), 0, "mount point '%s': %s", mnt, strerror(errno));
	snprintf(cmd, sizeof(cmd), "tests/slowdisk/slowdisk status --name %s 2>&1", g_sd_name);
	cr_assert(run(cmd, out, sizeof(out)), "status: %s", out);
	loopline = strstr(out, "\nloop=");
	cr_assert(loopline, "no loop= in status: %s", out);
	loopline += 6;
	loopline[strcspn(loopline, "\n")] = '\0';
	cr_assert_eq(stat(loopline, &lst), 0, "%s: %s", loopline, strerror(errno));
	cr_expect_eq(st.st_dev, lst.st_rdev, "the filesystem is on %s", loopline);

	disk = gc_devstats_disk(st.st_dev);
	cr_expect_eq(disk, lst.st_rdev, "ext4 on %s over FUSE maps to %u:%u, not %u:%u", loopline,
		     major(lst.st_rdev), minor(lst.st_rdev), major(disk), minor(disk));

	/* the real files now: flushes of the 1 ms disk, sampled twice */
	gc_devstats_init(NULL);
	{
		char file[sizeof(mnt) + 8];
		const char *src;
		uint64_t t = gc_now_ns(), ns;
		int fd;

		snprintf(file, sizeof(file), "%s/f", mnt);
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		cr_assert(fd >= 0, "%s: %s", file, strerror(errno));
		gc_devstats_flush_ns(st.st_dev, t, &src);
		for (int i = 0; i < 30 || gc_now_ns() - t < 150 * MS; i++) {
			cr_assert_eq(pwrite(fd, "x", 1, i * 4096), 1);
			cr_assert_eq(fdatasync(fd), 0);
		}
		close(fd);
		ns = gc_devstats_flush_ns(st.st_dev, gc_now_ns(), &src);
		cr_log_info("slow disk %s: flush %lu us from %s", loopline,
			    (unsigned long)(ns / US), src);
		cr_expect_str_neq(src, "none");
		cr_expect(ns >= 900 * US && ns < 50 * MS,
			  "a 1 ms flush disk measured at %lu us (%s)", (unsigned long)(ns / US), src);
	}
}
