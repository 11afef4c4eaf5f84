/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Call sites of sync requests: the chain of return addresses that led to a
 * request, named once (function, library, offset) and counted with its
 * requests, wait and commit time in a fixed table (a full table counts into
 * an "other" row); and LIBGC_SCOPE's verdict on that chain. The table's
 * layout is part of the per-process stats segment (core/procstats.h). */
#ifndef GC_SITES_H
#define GC_SITES_H
#include <stdbool.h>
#include <stdint.h>

#include "core/stats.h"

#define GC_SITES 32			/* named sites per process */
#define GC_SITE_OTHER GC_SITES		/* the row of requests of a full table */
#define GC_SITE_ROWS (GC_SITES + 1)
#define GC_SITE_DEPTH 8			/* return addresses that make a site */
#define GC_SITE_FRAMES 32		/* frames a scope looks through */
#define GC_SITE_HIST 64			/* wait histogram: 2 buckets per power of two */
#define GC_SITE_SHARDS 8		/* counter copies, by thread slot */

struct gc_site_desc {
	uint64_t sd_key;		/* hash of the chain; 0: free */
	uint32_t sd_ready;		/* GC_SD_NAMED once the names below are written */
	uint32_t sd_depth;		/* return addresses in sd_pc */
	uint64_t sd_pc[GC_SITE_DEPTH];	/* innermost (the caller of fsync...) first */
	uint64_t sd_off;		/* sd_pc[0] - the base of its object */
	char sd_fn[64];			/* function of sd_pc[0], "?" if unknown */
	char sd_lib[64];		/* basename of its object */
	char sd_chain[192];		/* functions of the chain, "f < g < main" */
};

/* sd_ready: 0 while the row is claimed; GC_SD_UNNAMED once the addresses
 * are written, the names not yet: naming maps object files, so it waits for
 * the site's second request or the exit report (a process that syncs once
 * pays for no names); GC_SD_NAMING while a thread names it. */
#define GC_SD_NAMED 1
#define GC_SD_UNNAMED 2
#define GC_SD_NAMING 3

struct gc_site_ctr {
	uint64_t sc_requests;
	uint64_t sc_direct;		/* served by their own real call */
	uint64_t sc_committed;		/* served by a commit */
	uint64_t sc_scoped_out;		/* sent direct by LIBGC_SCOPE (in sc_direct too) */
	uint64_t sc_wait_ns;		/* time in the library */
	uint64_t sc_commit_ns;		/* of which from the covering commit's close on
					 * (a direct call: the real call) */
	uint64_t sc_hist[GC_SITE_HIST];	/* wait */
	uint64_t sc_pad[2];		/* a whole number of cache lines */
} __attribute__((aligned(64)));

struct gc_site_area {
	struct gc_site_desc sa_desc[GC_SITES];
	/* copies by thread slot (core/stats.h), atomic adds */
	struct gc_site_ctr sa_ctr[GC_SITE_SHARDS][GC_SITE_ROWS];
};

/* The table in use: the stats segment's once it exists, else private. */
extern struct gc_site_area *gc_sites_base;
struct gc_site_area *gc_sites_private(void);
/* Names every row still unnamed (for the exit report). */
void gc_sites_name_pending(void);

/* What the journal says about the request in progress on this thread. */
struct gc_req_note {
	uint64_t rn_commit_ns;
	uint8_t rn_direct, rn_served;
};
extern __thread struct gc_req_note gc_req_note __attribute__((tls_model("initial-exec")));
/* Sites or a scope are on: the journal times its direct calls. */
extern int gc_sites_timing;
/* A request needs gc_site_begin: sites or a scope are on, or gcstat asked
 * for sites (core/procstats.h). */
bool gc_ps_sites_wanted(void);
static inline bool gc_sites_needed(void)
{
	return __atomic_load_n(&gc_sites_timing, __ATOMIC_RELAXED) || gc_ps_sites_wanted();
}

static inline unsigned int gc_site_hist_bucket(uint64_t ns)
{
	unsigned int b = gc_hist_bucket(ns) / 2;

	return b < GC_SITE_HIST ? b : GC_SITE_HIST - 1;
}
/* The middle of the wait bucket reached by @pct% of @h; 0 if empty. */
uint64_t gc_site_hist_pct(const uint64_t *h, unsigned int pct);
/* Sums @a's shards into @out (GC_SITE_ROWS rows, added to). */
void gc_sites_sum(const struct gc_site_area *a, struct gc_site_ctr *out);
/* Rows of @ctr ordered by requests, most first, into @order; returns how
 * many have any (the other row included). */
int gc_sites_rank(const struct gc_site_ctr *ctr, int *order);

/* ---- Capture (core/sites.c, the library only: libunwind) ----------------- */

/* First use: LIBGC_SITES and the scope from the configuration (a struct
 * gc_config). No system call: libunwind is loaded when the first request
 * that needs a chain comes. */
void gc_sites_configure(const void *cfg);
/* Call sites are recorded (asked for, or turned on by gcstat). */
extern int gc_sites_on;
/* Turns recording on (gcstat asked, through the stats segment). */
void gc_sites_start(void);
/* Set while this thread runs libunwind's code: the pipe it would make to
 * check addresses is refused (shim/io.c), so that it keeps no descriptor
 * in the program's range; it then takes an unreadable address as invalid,
 * and a chain through frames without unwind information ends there. */
extern __thread int gc_unwinding __attribute__((tls_model("initial-exec")));
/* Before a request: returns its row (-1: sites off) and, with a scope,
 * whether its chain passes through it (*grouped; always true without a
 * scope). @ra is the return address into the program of the call that
 * made the request: the whole chain until libunwind is loaded (never from
 * a signal handler, so it waits for a call with no signal blocked).
 * Called with the depth guard held, never from the library's own signal
 * handlers. */
int gc_site_begin(bool *grouped, uintptr_t ra);
/* After it: @ns in the library, how it was served (gc_req_note), and
 * whether the scope sent it to a direct call. */
void gc_site_end(int row, uint64_t ns, bool scoped_out);
#endif
