// SPDX-License-Identifier: LGPL-2.1-or-later
/* The in-flight map's walk: see gcd_sweep.h. */
#include <errno.h>
#include <bpf/bpf.h>

#include "bpf/gcd_sweep.h"

/* Entries read per call; old ones are deleted after the walk, at most this
 * many per sweep (the rest go at the next one). */
#define BATCH 256

static struct gcd_inflight *find(const struct gcd_sweep *sw, __u32 dev, __u32 cls)
{
	unsigned i;

	for (i = 0; i < sw->s_used; i++)
		if (sw->s_keys[i].i_key.k_dev == dev && sw->s_keys[i].i_key.k_class == cls)
			return &sw->s_keys[i];
	return NULL;
}

static void count(struct gcd_sweep *sw, const struct gcd_rq *r)
{
	struct gcd_inflight *e = find(sw, r->r_dev, r->r_class);

	if (e) {
		e->i_count++;
		return;
	}
	if (sw->s_used == sw->s_cap) {
		sw->s_missed++;
		return;
	}
	sw->s_keys[sw->s_used++] = (struct gcd_inflight){
		.i_key = { .k_dev = r->r_dev, .k_class = r->r_class }, .i_count = 1,
	};
}

int gcd_sweep_inflight(int fd, uint64_t now, uint64_t max_age, struct gcd_sweep *sw)
{
	__u64 keys[BATCH], old[BATCH];
	struct gcd_rq vals[BATCH];
	__u32 pos, *in = NULL, n, i, nold = 0;
	int err;

	sw->s_used = 0;
	sw->s_aged = 0;
	sw->s_missed = 0;
	/* by buckets: completions deleting entries meanwhile neither restart
	 * the walk nor make it see an entry twice */
	do {
		n = BATCH;
		err = bpf_map_lookup_batch(fd, in, &pos, keys, vals, &n, NULL);
		if (err < 0 && errno != ENOENT)
			return -errno;
		for (i = 0; i < n; i++) {
			if (now > vals[i].r_issue_ns && now - vals[i].r_issue_ns > max_age) {
				if (nold < BATCH)
					old[nold++] = keys[i];
				continue;
			}
			count(sw, &vals[i]);
		}
		in = &pos;
	} while (!err);
	/* A completion racing this delete has been counted by the programs
	 * already, or finds no entry: either way once. */
	for (i = 0; i < nold; i++)
		if (!bpf_map_delete_elem(fd, &old[i]))
			sw->s_aged++;
	return 0;
}

uint32_t gcd_sweep_count(const struct gcd_sweep *sw, const struct gcd_key *key)
{
	const struct gcd_inflight *e = find(sw, key->k_dev, key->k_class);

	return e ? e->i_count : 0;
}
