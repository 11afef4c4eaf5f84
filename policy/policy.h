/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Commit policies: when to close a running transaction. Pure functions of
 * (configuration, state, transaction view, now): no I/O, no clock, no locks;
 * the caller holds whatever protects the state. Unit tests drive a fake clock. */
#ifndef GC_POLICY_H
#define GC_POLICY_H
#include <stdbool.h>
#include <stdint.h>

enum gc_policy_kind {
	GC_POL_ADAPTIVE,	/* default: see policy.c */
	GC_POL_NONE,		/* every request is a direct real call */
	GC_POL_FIXED,		/* always wait pc_wait_ns from the first handle */
	GC_POL_JBD2,		/* jbd2_journal_stop: avg commit time in [min,max] */
	GC_POL_SIBLINGS,	/* PostgreSQL commit_delay / commit_siblings */
};

struct gc_policy_cfg {
	enum gc_policy_kind pc_kind;
	uint64_t pc_max_wait_ns;	/* LIBGC_MAX_WAIT_US: cap on any wait */
	uint64_t pc_min_wait_ns;	/* LIBGC_MIN_WAIT_US: jbd2 min_batch_time */
	uint32_t pc_wait_pct;		/* LIBGC_WAIT_PCT: adaptive wait, % of commit latency */
	uint64_t pc_wait_ns;		/* LIBGC_WAIT_US: fixed wait, siblings commit_delay */
	uint32_t pc_siblings;		/* LIBGC_SIBLINGS: siblings commit_siblings */
	bool pc_probe;			/* LIBGC_PROBE: adaptive's group-or-direct choice */
	bool pc_device;			/* LIBGC_DEVICE=auto: the observer or diskstats
					 * tell the device's flush latency (rule 0);
					 * off: the library's own timing alone does */
};

void gc_policy_cfg_defaults(struct gc_policy_cfg *pc);
const char *gc_policy_name(enum gc_policy_kind k);

#define GC_RECENT_MAX 32
#define GC_SEEN_SLOTS 16

/* Per-domain policy memory. Fixed layout, no pointers: it lives inside the
 * domain, which may later live in a shared segment. */
struct gc_policy_state {
	uint64_t ps_commit_ns;		/* EWMA (1/4) of commit latency: close -> last real call done */
	uint64_t ps_jbd2_avg_ns;	/* jbd2's running average: (new + 3 avg) / 4 */
	uint32_t ps_commit_samples;
	uint32_t ps_gran_samples;
	uint64_t ps_gran_ns;		/* EWMA of timed-wait overshoot: the smallest wait we can express */
	uint64_t ps_device_flush_ns;	/* device flush latency (gc_policy_device), 0 = unknown */
	uint64_t ps_device_at_ns;	/* when it was last refreshed */
	uint32_t ps_device_src;		/* enum gc_device_src of that refresh */
	uint32_t ps_device_pad;
	int32_t ps_last_sync_tid;	/* jbd2: last thread that stopped a sync handle */
	uint32_t ps_recent_n;
	struct {
		int32_t r_tid;
		uint32_t r_seq;		/* commits done when it last synced */
		uint64_t r_seen_ns;
		uint32_t r_every_x16;	/* EWMA (1/4) of commits between its syncs, x16 (0: unknown) */
		uint32_t r_out;		/* dropped out (a wait for it timed out) until it syncs */
	} ps_recent[GC_RECENT_MAX];	/* distinct sync threads, when last seen, how often */
	uint32_t ps_batch_x16;		/* EWMA of handles per transaction, x16 */
	uint32_t ps_txns;		/* transactions committed */
	/* The library's own timing of direct calls (adaptive, while no
	 * source knows the device: docs/policy.md rule 4), in epochs; the
	 * shortest is what one sync costs the device when nobody queues
	 * before it. Read slow, it is the device's source (GC_DEV_SELF). */
	uint64_t ps_fb_epoch_start;	/* 0: no epoch yet (atomic); each lasts
					 * GC_STRETCH_MIN_NS */
	uint64_t ps_fb_call_ns;		/* shortest direct call of the last epoch that had
					 * one: a verdict for grouping needs it slow too */
	uint64_t ps_fb_min_ns;		/* shortest direct call of this epoch (atomic),
					 * UINT64_MAX: none yet */
	uint64_t ps_fb_threads;		/* who made them (atomic): 0 nobody,
					 * GC_FB_ONE | tid one thread, GC_FB_MANY several */
	uint64_t ps_defer_seq;		/* transaction that last handed requests back */
	uint64_t ps_dir_commit_ns;	/* EWMA (1/4) of commits of directories only */
	uint32_t ps_dir_samples;
	uint32_t ps_useful_x16;		/* EWMA of handles per transaction of files
					 * and directories with something to commit, x16 */
	/* Processes that came (made a first request here) and came back (made
	 * a second), both halved at GC_ONCE_WINDOW: gc_policy_proc_first. */
	uint32_t ps_procs_new;
	uint32_t ps_procs_back;
	/* The outcome check (rule 0 grouped): what requests cost, grouped
	 * and direct, in turns. A stretch lasts GC_STRETCH_COMMITS commits
	 * (at least GC_STRETCH_MIN_NS); a hold of the chosen mode
	 * GC_FB_HOLD_MIN to GC_FB_HOLD_MAX stretches, as long as keeps
	 * probes within 1/GC_OC_BUDGET of the time at what the loser lost by (doubling
	 * while grouping evidently pays and is not probed);
	 * then two stretches probe the other mode, and the lower mean
	 * request latency (the program's call to its answer), all but the
	 * first stretch of each, is chosen: outright against the device's
	 * first choice, beyond twice the standard error against a mode
	 * that won a comparison. A hold is watched stretch by stretch
	 * (ps_oc_watch below) and ends early once it stops winning. */
	uint32_t ps_oc_mode;		/* GC_FB_GROUP or GC_FB_DIRECT: this stretch (atomic) */
	uint32_t ps_oc_probe;		/* this stretch probes ps_oc_mode */
	uint32_t ps_oc_hold;		/* stretches of the next hold */
	uint32_t ps_oc_commits;		/* ps_commit_samples when this hold or stretch began */
	uint64_t ps_oc_start;		/* 0: none yet (atomic) */
	uint64_t ps_oc_len;		/* (atomic) */
	uint64_t ps_oc_from;		/* its second stretch, where the measure begins (atomic) */
	uint64_t ps_oc_ref_ns;		/* mean latency of the chosen mode's last hold */
	uint64_t ps_oc_ref_se2;		/* and its standard error squared, us^2 */
	uint64_t ps_oc_last_ns;		/* mean latency of the stretch that ended last */
	uint64_t ps_oc_cost_ns;		/* and of its whole span */
	uint64_t ps_oc_lat_ns;		/* requests of this stretch: latency summed (atomic) */
	uint64_t ps_oc_lat_n;		/* and counted (atomic) */
	uint64_t ps_oc_lat_sq;		/* and their squares summed, in us^2 (atomic) */
	uint64_t ps_oc_all_ns;		/* requests of the whole span, its first stretch
					 * too: latency summed (atomic) */
	uint64_t ps_oc_all_n;		/* and counted (atomic) */
	uint32_t ps_oc_chosen;		/* the held mode won a comparison (not the
					 * device's first choice): a probe takes its
					 * place only beyond the noise */
	uint32_t ps_oc_early;		/* this probe began before its hold's end (oc_watch) */
	/* The watch over a hold chosen by a comparison: at the end of each
	 * stretch from its second, the stretch's requests against the
	 * mode it was chosen over; answered later beyond the noise, the
	 * hold ends in a probe of that mode at once. */
	uint64_t ps_oc_watch;		/* the next stretch's end (0: not watched) (atomic) */
	uint32_t ps_oc_paid;		/* held unprobed because grouping evidently paid:
					 * once it no longer does, probed at once */
	uint32_t ps_oc_idle;		/* grouped stretches in a row that were
					 * evidence of nothing (mostly lone) */
	uint64_t ps_oc_other_ns;	/* the other mode's mean when compared (0: never) */
	uint64_t ps_oc_other_se2;	/* and its standard error squared, us^2 */
	uint64_t ps_oc_mark_ns;		/* the measure's sums at the last stretch's end */
	uint64_t ps_oc_mark_n;
	uint64_t ps_oc_mark_sq;
	uint32_t ps_waited_x256;	/* EWMA (1/8) of transactions that waited for peers (oc_grouping_pays), x256 */
	uint32_t ps_oc_txns;		/* ps_txns when this hold or stretch began */
	/* Threads seen making direct calls, sampled without a lock (hashed by
	 * tid, a collision overwrites): when grouping resumes they are the
	 * recent sync threads a transaction waits for. (atomic) */
	struct {
		int32_t sn_tid;
		uint32_t sn_pad;
		uint64_t sn_ns;
	} ps_seen[GC_SEEN_SLOTS];
};

void gc_policy_init(struct gc_policy_state *ps);
/* Indices and enumerations in range (the state may sit in a shared segment
 * that another process wrote anything into). */
bool gc_policy_check(const struct gc_policy_state *ps);

/* A thread arrives with a sync request. Remembers it among the recent sync
 * threads. Returns true when @tid differs from the previous sync thread
 * (jbd2's "pid differs from last sync writer"). */
bool gc_policy_arrive(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
		      int32_t tid, uint64_t now);

enum { GC_FB_GROUP = 0, GC_FB_DIRECT = 1 };
#define GC_FB_ONE (1ull << 32)
#define GC_FB_MANY UINT64_MAX

/* true: serve this request with a direct real call (policy none, the
 * device is fast or not known slow, or the outcome check chose them).
 * Cheap; may be read without the domain lock. */
bool gc_policy_bypass(const struct gc_policy_state *ps,
		      const struct gc_policy_cfg *pc, uint64_t now);

/* A direct real call of thread @tid ran from @start to @end and succeeded
 * (a failed call says nothing about the device). Lock-free. */
void gc_policy_direct_done(struct gc_policy_state *ps, int32_t tid, uint64_t start,
			   uint64_t end);
/* true when the current epoch is over (or none began) and
 * gc_policy_epoch_end() is due. Lock-free; the caller then takes the lock
 * and calls epoch_end, which re-checks. */
bool gc_policy_epoch_due(const struct gc_policy_state *ps,
			 const struct gc_policy_cfg *pc, uint64_t now);
/* Closes the epoch or the outcome check's stretch and picks the mode of the
 * next one. Returns true if the mode changed. */
bool gc_policy_epoch_end(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			 uint64_t now);

/* The policy's unit of recent time, a stretch: GC_STRETCH_COMMITS
 * commits, and at least GC_STRETCH_MIN_NS. The outcome check compares
 * modes stretch by stretch, the library's own timing times its calls in
 * epochs of the shortest, and a transaction waits for the threads seen
 * syncing within one (the activity window). */
#define GC_STRETCH_COMMITS 8
#define GC_STRETCH_MIN_NS (25ULL * 1000ULL * 1000ULL)
/* Nothing older than this counts: a device's reading (then no longer
 * fresh), or a verdict, whatever it rests on (a scribbled or stale one
 * cannot last). */
#define GC_STALE_NS (1000ULL * 1000ULL * 1000ULL)

/* What the device says. The block-layer observer's FLUSH latency (or the
 * mean flush time /proc/diskstats shows) decides group-or-direct without
 * probing, while fresh: a flush under GC_DEVICE_GROUP_NS means direct
 * calls; a slower one means grouping from the first commit. Stale or
 * unknown, the library times direct calls in epochs and applies the same
 * threshold to them; read slow, that reading is the source (GC_DEV_SELF)
 * and stands until another knows the device. */
enum gc_device_src { GC_DEV_NONE, GC_DEV_OBSERVER, GC_DEV_DISKSTATS, GC_DEV_SELF, GC_DEV_SRCS };
#define GC_DEVICE_GROUP_NS (1000ULL * 1000ULL)	/* 1 ms */
#define GC_DEVICE_REFRESH_NS (100ULL * 1000ULL * 1000ULL)
#define GC_DEVICE_FIRST_NS (1000ULL * 1000ULL)
const char *gc_device_src_name(uint32_t src);
/* Records a refresh at @now: @flush_ns from @src (0 / GC_DEV_NONE when no
 * source knows the device: the library's own reading, if any, stands).
 * Lock-free. Returns true when the device's verdict (direct, grouped, or
 * none) changed. */
bool gc_policy_device(struct gc_policy_state *ps, uint64_t flush_ns, uint32_t src,
		      uint64_t now);
/* A refresh is due (at most every GC_DEVICE_REFRESH_NS, the first once
 * the domain is GC_DEVICE_FIRST_NS old): true for the one caller that
 * claimed it, who then calls gc_policy_device. Lock-free. */
bool gc_policy_device_claim(struct gc_policy_state *ps, uint64_t now);
/* The device's flush latency when fresh at @now, else 0. */
uint64_t gc_policy_device_flush(const struct gc_policy_state *ps, uint64_t now);

/*
 * The question every request asks, kept as an answer with a time: what
 * requests of the domain do from @now, and until when (then the next
 * request past it asks again, after the device refresh and the epoch's
 * end). The journal keeps it in one word (journal/domain.h): the direct
 * path reads only that. Pure.
 */
enum gc_verdict_kind {
	GC_V_ASK,	/* no answer: ask */
	GC_V_DIRECT,	/* direct real calls; nothing to measure (device, policy none) */
	GC_V_TIMED,	/* direct real calls, timed (own timing, the outcome check) */
	GC_V_GROUP,	/* join the running transaction */
};
struct gc_verdict {
	enum gc_verdict_kind v_kind;
	uint64_t v_until_ns;
};
struct gc_verdict gc_policy_verdict(const struct gc_policy_state *ps,
				    const struct gc_policy_cfg *pc, uint64_t now);
/* A thread making direct calls at @now, sampled by the caller (at most
 * every GC_SEEN_EVERY_NS per thread). Lock-free. */
#define GC_SEEN_EVERY_NS (250ULL * 1000ULL)
void gc_policy_seen(struct gc_policy_state *ps, int32_t tid, uint64_t now);

/* A request of the domain, grouped or on a timed direct call, ran from
 * the program's call at @start to its answer at @end: the outcome check's
 * measure, counted for the stretch it ran within. Lock-free. */
void gc_policy_latency(struct gc_policy_state *ps, uint64_t start, uint64_t end);
/* Probes of a losing mode take at most 1/GC_OC_BUDGET of the time. */
#define GC_OC_BUDGET 50

/* Distinct sync threads seen within the activity window (a stretch)
 * ending at @now. */
uint32_t gc_policy_active(const struct gc_policy_state *ps, uint64_t now);
/* Of those, the ones a transaction led by @leader waits for: the leader,
 * and every thread whose pace (an average of the commits between its
 * syncs) is at most GC_EXPECT_PACE times the median thread's, or than one
 * commit where that is less (a thread not yet paced counts). */
#define GC_EXPECT_PACE 2
uint32_t gc_policy_expected(const struct gc_policy_state *ps, uint64_t now, int32_t leader);
/* Forgets the recent sync threads for which @gone(tid) is true (threads,
 * or whole processes, that ended): nobody waits for them. Returns how
 * many it forgot. */
uint32_t gc_policy_forget(struct gc_policy_state *ps, bool (*gone)(int32_t tid));

enum gc_close_reason {
	GC_CLOSE_NONE = 0,	/* keep waiting */
	GC_CLOSE_LONE,		/* a lone sync writer never waits */
	GC_CLOSE_FAST,		/* device commits faster than the wait granularity */
	GC_CLOSE_NOWAIT,	/* policy does not wait here (fixed 0, jbd2 same pid, siblings too few, no data yet) */
	GC_CLOSE_COUNT,		/* the expected number of participants joined */
	GC_CLOSE_TIMEOUT,	/* the deadline passed */
};
const char *gc_close_reason_name(enum gc_close_reason r);

/* What the journal knows about a running transaction when it asks. */
struct gc_txn_view {
	uint32_t tv_handles;		/* handles joined so far */
	uint64_t tv_start_ns;		/* when the first handle joined */
	uint64_t tv_free_ns;		/* when the domain could first commit it (no other
					 * committing); 0 = at its start */
	bool tv_leader_new_writer;	/* gc_policy_arrive() result for the first handle */
	int32_t tv_leader;		/* the deciding handle's thread */
};

struct gc_decision {
	enum gc_close_reason d_close;	/* != NONE: close now, for this reason */
	uint64_t d_deadline_ns;		/* when waiting: close at this time at the latest */
	uint32_t d_count;		/* when waiting: close as soon as this many joined (0 = no count rule) */
};

/* Asked when no commit is in flight and a transaction is running: close it
 * now, or wait until d_deadline_ns / d_count handles. */
struct gc_decision gc_policy_decide(const struct gc_policy_state *ps,
				    const struct gc_policy_cfg *pc,
				    const struct gc_txn_view *tv, uint64_t now);

/* Transaction @seq closes with @files handles of regular files and @dirs
 * of directories (not counting those handed back before): which kind's
 * handles to hand back, to join the next transaction instead. */
enum gc_defer { GC_DEFER_NONE, GC_DEFER_FILES, GC_DEFER_DIRS };
#define GC_DEFER_EVERY 4
enum gc_defer gc_policy_defer(struct gc_policy_state *ps, const struct gc_policy_cfg *pc,
			      uint64_t seq, uint32_t files, uint32_t dirs);

/* A process's first request on the domain, with j_lock held: counted, and
 * true where processes sync once (a delivery agent, a git command, a build
 * step: a process a task): of the last GC_ONCE_WINDOW or so that made a
 * first request, fewer than half made a second, over at least
 * GC_ONCE_EVIDENCE of them. Such a request waits behind no commit it is
 * not in: it would gather nobody, and, bare, its call would have reached
 * the device at once (journal.c's once_direct; with no commit in flight
 * it joins or begins a transaction as any request does). Adaptive only. */
#define GC_ONCE_EVIDENCE 8
#define GC_ONCE_WINDOW 64
bool gc_policy_proc_first(struct gc_policy_state *ps, const struct gc_policy_cfg *pc);
/* What gc_policy_proc_first answers from the counts as they stand. */
bool gc_policy_procs_once(const struct gc_policy_state *ps, const struct gc_policy_cfg *pc);
/* The same process's second request: it came back. */
void gc_policy_proc_back(struct gc_policy_state *ps);

/* A commit finished. */
struct gc_commit_sample {
	uint32_t cs_handles;		/* handles in the transaction */
	uint32_t cs_clean;		/* of those, for files with nothing to write */
	uint32_t cs_inodes;		/* distinct inodes */
	enum gc_close_reason cs_close;
	uint64_t cs_start_ns;		/* first handle joined */
	uint64_t cs_lead_ns;		/* the commit before it ended (0: none) */
	uint64_t cs_close_ns;		/* transaction closed */
	uint64_t cs_end_ns;		/* last real call finished */
	bool cs_dirs_only;		/* every inode it synced was a directory, and no
					 * file's request waited for the next commit */
};
void gc_policy_commit_done(struct gc_policy_state *ps,
			   const struct gc_policy_cfg *pc,
			   const struct gc_commit_sample *cs);

/* A timed wait meant to end at @deadline ended at @woke (timed out). */
void gc_policy_wait_overshoot(struct gc_policy_state *ps, uint64_t deadline,
			      uint64_t woke);

#endif
