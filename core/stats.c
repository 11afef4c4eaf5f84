/* The process-wide counters, their shards, and their one-line rendering for
 * the exit report. */
#include "core/stats.h"

#include <string.h>
#include <unistd.h>

struct gc_stats_shard gc_stats_shards[GC_STAT_SHARDS];
__thread unsigned int gc_stat_slot __attribute__((tls_model("initial-exec")));
static unsigned int gc_stat_next;

unsigned int gc_stat_slot_assign(void)
{
	unsigned int n = __atomic_fetch_add(&gc_stat_next, 1, __ATOMIC_RELAXED);

	gc_stat_slot = n % GC_STAT_SHARDS + 1;
	return gc_stat_slot;
}

void gc_stats_sum(struct gc_stats *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < GC_STAT_SHARDS; i++) {
#define GC_STAT_SUM(f) out->f += __atomic_load_n(&gc_stats_shards[i].s.f, __ATOMIC_RELAXED);
		GC_STATS(GC_STAT_SUM)
#undef GC_STAT_SUM
	}
}

void gc_stats_reset(void)
{
	memset(gc_stats_shards, 0, sizeof(gc_stats_shards));
}

int gc_stats_format(char *buf, size_t len)
{
	struct gc_stats st;
	int n = snprintf(buf, len, "libgc: pid=%d", (int)getpid());

	gc_stats_sum(&st);
#define GC_STAT_FMT(f)                                                              \
	if (n >= 0 && (size_t)n < len)                                              \
		n += snprintf(buf + n, len - (size_t)n, " " #f "=%llu",             \
			      (unsigned long long)st.f);
	GC_STATS(GC_STAT_FMT)
#undef GC_STAT_FMT
	return n;
}
