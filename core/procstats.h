/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-process stats segment: this process's counters (core/stats.h)
 * placed in a file of its own, /dev/shm/libgc.stats-UID-PIDNS-PID (mode
 * 0600), so gcstat can read them live; removed at exit. Made at a sync
 * request GC_PS_AGE_NS or more after the process's first, so programs that
 * never sync make none, and nor do ones that sync only in a short burst (a
 * mail delivery agent per message), which no sample of gcstat would see
 * anyway. (Counted from the first request, not from start-up: reading the
 * clock at start-up cost every process two page faults.)
 * Fixed layout, versioned; the identity (pid, command) is written under a
 * seqlock; counters are monotonic, read one by one, each exact, the set not
 * one instant. Call sites (core/sites.h) follow the counters, page
 * aligned, only in a process that records them. The directory is shared
 * with everyone: every file in it is untrusted input. */
#ifndef GC_PROCSTATS_H
#define GC_PROCSTATS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sites.h"
#include "core/stats.h"

#define GC_PS_DIR "/dev/shm"
#define GC_PS_PREFIX "libgc.stats-"
#define GC_PS_MAGIC 0x3173747370636700ULL /* "\0gcpsts1" */
/* 2: the call-site table; 3: buffered and write-behind bytes; 4: deferred;
 * 5: the limiter's polls; 6: a slot per thread, histograms as gcstat shows
 * them, call sites only when recorded, gcstat's request for them; 7: the
 * process's histograms before the slots */
#define GC_PS_VERSION 7

struct gc_ps_seg {
	uint64_t ps_magic;	/* written last: 0 while being made */
	uint32_t ps_version;
	uint32_t ps_size;	/* sizeof(struct gc_ps_seg) */
	uint64_t ps_seq;	/* seqlock over the identity: odd while written */
	int32_t ps_pid;
	uint32_t ps_uid;
	uint64_t ps_pidns;	/* inode of /proc/self/ns/pid */
	uint64_t ps_starttime;	/* /proc/PID/stat field 22: a recycled pid differs */
	uint64_t ps_made_ns;	/* CLOCK_REALTIME when made */
	uint32_t ps_nslots, ps_nfields, ps_nhist_ns, ps_nhist_batch;
	char ps_comm[16];
	char ps_cmd[160];	/* command line, arguments joined by spaces */
	uint32_t ps_nsites, ps_site_depth, ps_site_hist, ps_site_shards;
	uint32_t ps_want_sites;	/* set by gcstat -p PID --sites: record call sites */
	uint32_t ps_sites_at;	/* the call sites' offset once they are there, else 0 */
	struct gc_stat_area ps_stats __attribute__((aligned(64)));
};

/* Where the call sites go in the file, and the file's size with them. */
#define GC_PS_SITES_OFF ((sizeof(struct gc_ps_seg) + 4095) & ~(size_t)4095)
#define GC_PS_SIZE_SITES (GC_PS_SITES_OFF + sizeof(struct gc_site_area))

/* First use: @on from LIBGC_STATS, @dir from LIBGC_STATS_DIR (NULL:
 * /dev/shm). No system call. */
void gc_ps_configure(bool on, const char *dir);
/* Makes the segment if configured and not made yet (at a sync request; in
 * the process gc_self() names), with room for call sites when @sites;
 * removes the segments that processes of this user left behind when they
 * were killed. Any thread, signal handlers included (raw system calls, no
 * lock); a thread that finds another making it goes on without waiting. */
void gc_ps_ensure(bool sites);
/* The same for a request at @now, GC_PS_AGE_NS or more after the
 * process's first request (gc_ps_first_ns, kept by the first), or at once
 * when call sites are counted (rows counted before the segment would stay
 * private): one load when there is nothing to do. Counts made before stay
 * in private memory, and go into the segment with each thread's next
 * count. */
#define GC_PS_AGE_NS (100ULL * 1000ULL * 1000ULL)
extern int gc_ps_idle;
extern uint64_t gc_ps_first_ns;
static inline void gc_ps_need(bool sites, uint64_t now)
{
	uint64_t first;

	if (__builtin_expect(!__atomic_load_n(&gc_ps_idle, __ATOMIC_RELAXED), 1))
		return;
	first = __atomic_load_n(&gc_ps_first_ns, __ATOMIC_RELAXED);
	/* the first request; where another thread's came first, the CAS
	 * leaves its time in @first */
	if (!first && __atomic_compare_exchange_n(&gc_ps_first_ns, &first, now, false,
						  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		first = now;
	if (sites || now - first >= GC_PS_AGE_NS)
		gc_ps_ensure(sites);
}
/* The segment exists. */
bool gc_ps_active(void);
/* Adds the call sites to an existing segment (asked for after it was
 * made); false if there is none, or it cannot be grown. */
bool gc_ps_add_sites(void);
/* gcstat asked for call sites (one load; false without a segment). */
bool gc_ps_sites_wanted(void);
/* Exit (exit handler or _exit): removes this process's segment. */
void gc_ps_exit(void);
/* fork child: back to private counters, no segment until the next request. */
void gc_ps_atfork_child(void);
/* The segment's name in its directory (for tests). */
int gc_ps_name(char *buf, size_t len, uint32_t uid, uint64_t pidns, int32_t pid);
bool gc_ps_parse_name(const char *name, uint32_t *uid, uint64_t *pidns, int32_t *pid);
/* The directory in use (LIBGC_STATS_DIR or /dev/shm), for gcstat. */
const char *gc_ps_dir(void);

/* ---- The reader's side (gcstat) ----------------------------------------- */

/* A segment opened by a reader: never through a symlink, never blocking
 * in open (a FIFO planted there), only a regular file owned by the uid its
 * name carries, of the size its layout says. Kept mapped across samples,
 * so that the counts of a process that exits meanwhile (and whose segment
 * goes) can still be read once. */
struct gc_ps_map {
	struct gc_ps_seg *pm_seg;
	size_t pm_len;
	uint64_t pm_ino;	/* the file mapped: its name may come to name another */
};
/* Opens @name in @dir: 0, or -errno (-EPROTO: not a valid segment,
 * -EAGAIN: being made, -EPERM: not owned by the uid in its name). */
int gc_ps_open(const char *dir, const char *name, struct gc_ps_map *out);
void gc_ps_close(struct gc_ps_map *m);

/* A reader's copy, validated. */
struct gc_ps_snap {
	int32_t sn_pid;
	uint32_t sn_uid;
	uint64_t sn_pidns;
	uint64_t sn_starttime;
	uint64_t sn_made_ns;
	char sn_comm[16];
	char sn_cmd[160];
	struct gc_stats sn_s;
	struct gc_hists sn_h;
	struct gc_errtab sn_err;
};
/* Copies an opened segment: 0 or -EAGAIN (identity being written).
 * Untrusted input: only copied. */
int gc_ps_snap(const struct gc_ps_map *m, struct gc_ps_snap *out);
/* Reads the segment @name in @dir at once (open, copy, close). */
int gc_ps_read(const char *dir, const char *name, struct gc_ps_snap *out);
/* A reader's copy of the call sites: names only of rows marked ready,
 * NUL-terminated; counters summed over the shards. */
struct gc_ps_sites {
	struct gc_site_desc ss_desc[GC_SITES];
	struct gc_site_ctr ss_ctr[GC_SITE_ROWS];
};
/* The call sites of an opened segment: 0, or -ENOENT when it records none
 * (yet). Untrusted input: only copied. */
int gc_ps_snap_sites(const struct gc_ps_map *m, struct gc_ps_sites *out);
/* Asks the process of segment @name in @dir to record call sites from its
 * next sync request on: 0 or -errno. */
int gc_ps_ask_sites(const char *dir, const char *name);
/* /proc/@pid/stat's start time, 0 when the process is gone. */
uint64_t gc_ps_starttime(int32_t pid);
#endif
