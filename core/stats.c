/* The process-wide counters and their one-line rendering for the exit report. */
#include "core/stats.h"

#include <unistd.h>

struct gc_stats gc_stats;

int gc_stats_format(char *buf, size_t len)
{
	int n = snprintf(buf, len, "libgc: pid=%d", (int)getpid());

#define GC_STAT_FMT(f)                                                              \
	if (n >= 0 && (size_t)n < len)                                              \
		n += snprintf(buf + n, len - (size_t)n, " " #f "=%llu",             \
			      (unsigned long long)__atomic_load_n(&gc_stats.f,      \
								  __ATOMIC_RELAXED));
	GC_STATS(GC_STAT_FMT)
#undef GC_STAT_FMT
	return n;
}
