/* The per-process stats segment: this process's counter shards (core/stats.h)
 * placed in a file of its own, /dev/shm/libgc.stats-UID-PIDNS-PID (mode 0600),
 * so gcstat can read them live; removed at exit. Made at the process's first
 * count, so programs that never sync make none. Fixed layout, versioned; the
 * identity (pid, command) is written under a seqlock; counters are monotonic
 * relaxed atomics read one by one, each exact, the set not one instant. */
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
#define GC_PS_VERSION 5 /* 2: the call-site table; 3: buffered and write-behind bytes; 4: deferred; 5: the limiter's polls */

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
	uint32_t ps_nshards, ps_nfields, ps_nbuckets, ps_nerrnos;
	char ps_comm[16];
	char ps_cmd[160];	/* command line, arguments joined by spaces */
	uint32_t ps_nsites, ps_site_depth, ps_site_hist, ps_pad;
	struct gc_stats_shard ps_shards[GC_STAT_SHARDS] __attribute__((aligned(64)));
	struct gc_site_area ps_sites;	/* call sites (core/sites.h) */
};

/* Library start-up: @on from LIBGC_STATS, @dir from LIBGC_STATS_DIR (NULL:
 * /dev/shm). Removes a segment of our pid left by the image we were
 * before exec. */
void gc_ps_configure(bool on, const char *dir);
/* Makes the segment if configured and not made yet; any thread, any
 * time, signal handlers included (raw system calls, no lock). */
void gc_ps_ensure(void);
/* Exit (exit handler or _exit): removes this process's segment. */
void gc_ps_exit(void);
/* fork child: back to private shards, no segment until the next count. */
void gc_ps_atfork_child(void);
/* The segment's name in its directory (for tests). */
int gc_ps_name(char *buf, size_t len, uint32_t uid, uint64_t pidns, int32_t pid);
bool gc_ps_parse_name(const char *name, uint32_t *uid, uint64_t *pidns, int32_t *pid);
/* The directory in use (LIBGC_STATS_DIR or /dev/shm). */
const char *gc_ps_dir(void);

/* A reader's copy (gcstat), validated. */
struct gc_ps_snap {
	int32_t sn_pid;
	uint32_t sn_uid;
	uint64_t sn_pidns;
	uint64_t sn_starttime;
	uint64_t sn_made_ns;
	char sn_comm[16];
	char sn_cmd[160];
	struct gc_stats sn_s;
	uint64_t sn_hist[GC_H_COUNT][GC_HIST_BUCKETS];
	uint64_t sn_errno[GC_ERRNO_SLOTS];
};
/* Reads the segment @path: 0, or -errno (-EPROTO: not a valid segment,
 * -EAGAIN: being made or written). Untrusted input: only copied. */
int gc_ps_read(const char *path, struct gc_ps_snap *out);
/* A reader's copy of the call sites: names only of rows marked ready,
 * NUL-terminated; counters summed over the shards. */
struct gc_ps_sites {
	struct gc_site_desc ss_desc[GC_SITES];
	struct gc_site_ctr ss_ctr[GC_SITE_ROWS];
};
/* Reads the call sites of the segment @path: 0 or -errno as gc_ps_read. */
int gc_ps_read_sites(const char *path, struct gc_ps_sites *out);
/* /proc/@pid/stat's start time, 0 when the process is gone. */
uint64_t gc_ps_starttime(int32_t pid);
/* This process's pid namespace inode. */
uint64_t gc_ps_pidns(void);
#endif
