// SPDX-License-Identifier: LGPL-2.1-or-later
/* blkcat: reads gcd's stats file the way a reader must (seqlock copy) and
 * prints one snapshot as key=value lines, or hammers it for a while and
 * counts snapshots that break an invariant (--synthetic: any field that
 * does not match its generation). For the tests of bpf/. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/blkstats.h"
#include "bpf/gcd_pub.h"

static const char *const cls[GC_BLK_OPS] = { "flush", "write", "read" };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *check(const struct gc_blk_stats *s)
{
	unsigned i;

	if (s->bs_magic != GC_BLK_MAGIC)
		return "magic";
	if (s->bs_version != GC_BLK_VERSION || s->bs_size != sizeof(*s))
		return "version or size";
	if (s->bs_ndisks > GC_BLK_DISKS)
		return "ndisks";
	for (i = 0; i < s->bs_ndisks; i++)
		if (!memchr(s->bs_disks[i].bd_name, 0, sizeof(s->bs_disks[i].bd_name)))
			return "name not terminated";
	return NULL;
}

static int hammer(const struct gc_blk_stats *m, double secs, bool synth)
{
	static struct gc_blk_stats s, prev;
	unsigned long snaps = 0, distinct = 0, bad = 0, busy = 0, i, j;
	double end = now_s() + secs;
	bool have = false;
	const char *why;

	while (now_s() < end) {
		if (gcd_pub_read(m, &s, 1)) {
			busy++;
			continue;
		}
		snaps++;
		why = check(&s);
		if (!why && synth && gcd_synth_check(&s))
			why = "synthetic fields do not match their generation";
		if (!why && have && s.bs_seq < prev.bs_seq)
			why = "seq went back";
		if (!why && have && s.bs_heartbeat_ns < prev.bs_heartbeat_ns)
			why = "heartbeat went back";
		if (!why && have && !synth)
			for (i = 0; i < s.bs_ndisks && i < prev.bs_ndisks; i++)
				for (j = 0; j < GC_BLK_OPS; j++)
					if (s.bs_disks[i].bd_dev == prev.bs_disks[i].bd_dev &&
					    s.bs_disks[i].bd_op[j].bo_count <
						    prev.bs_disks[i].bd_op[j].bo_count)
						why = "a count went back";
		if (!why && have && s.bs_seq == prev.bs_seq && memcmp(&s, &prev, sizeof(s)))
			why = "same seq, different contents";
		if (why) {
			if (bad++ < 5)
				fprintf(stderr, "blkcat: snapshot seq %llu: %s\n",
					(unsigned long long)s.bs_seq, why);
			continue;
		}
		if (!have || s.bs_seq != prev.bs_seq)
			distinct++;
		prev = s;
		have = true;
	}
	printf("snapshots=%lu distinct=%lu violations=%lu busy=%lu\n", snaps, distinct, bad, busy);
	return bad || distinct < 2;
}

int main(int argc, char **argv)
{
	static struct gc_blk_stats s;
	const struct gc_blk_stats *m;
	double secs = 0;
	bool synth = false;
	const char *why;
	int a = 1, fd;
	unsigned i, j;

	for (; a < argc && argv[a][0] == '-'; a++) {
		if (!strcmp(argv[a], "--hammer") && a + 1 < argc)
			secs = atof(argv[++a]);
		else if (!strcmp(argv[a], "--synthetic"))
			synth = true;
		else
			break;
	}
	if (a != argc - 1) {
		fprintf(stderr, "usage: blkcat [--hammer SECONDS [--synthetic]] PATH\n");
		return 2;
	}
	fd = open(argv[a], O_RDONLY);
	if (fd < 0) {
		perror(argv[a]);
		return 1;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (secs > 0)
		return hammer(m, secs, synth);
	if (gcd_pub_read(m, &s, 1000000)) {
		fprintf(stderr, "blkcat: no consistent snapshot\n");
		return 1;
	}
	why = check(&s);
	if (why) {
		fprintf(stderr, "blkcat: bad snapshot: %s\n", why);
		return 1;
	}
	printf("seq=%llu heartbeat_ns=%llu interval_ms=%u ndisks=%u pid=%u\n",
	       (unsigned long long)s.bs_seq, (unsigned long long)s.bs_heartbeat_ns,
	       s.bs_interval_ms, s.bs_ndisks, s.bs_pid);
	for (i = 0; i < s.bs_ndisks; i++) {
		const struct gc_blk_disk *d = &s.bs_disks[i];

		for (j = 0; j < GC_BLK_OPS; j++) {
			const struct gc_blk_op *o = &d->bd_op[j];

			printf("disk=%s dev=%u:%u flags=%u class=%s count=%llu bytes=%llu "
			       "p50_ns=%llu p90_ns=%llu p99_ns=%llu ewma_ns=%llu bps=%llu "
			       "wcount=%u inflight=%u\n",
			       d->bd_name, major(d->bd_dev), minor(d->bd_dev), d->bd_flags, cls[j],
			       (unsigned long long)o->bo_count, (unsigned long long)o->bo_bytes,
			       (unsigned long long)o->bo_p50_ns, (unsigned long long)o->bo_p90_ns,
			       (unsigned long long)o->bo_p99_ns, (unsigned long long)o->bo_ewma_ns,
			       (unsigned long long)o->bo_bytes_per_s, o->bo_window_count,
			       o->bo_inflight);
		}
	}
	return 0;
}
