/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Domains: the fixed-layout state that requests on one filesystem share, in
 * private memory (one process) or in a shared segment (every process of a
 * user on that filesystem). No pointers inside, so one code path serves both. */
#ifndef GC_DOMAIN_H
#define GC_DOMAIN_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/policy.h"

#define GC_DOM_MAGIC 0x6d30646367626c69ULL /* "ilbgcd0m" */
#define GC_DOM_VERSION 22
#define GC_TXN_INODES 64
#define GC_TXN_HANDLES 128
#define GC_TXN_RING 4
#define GC_MEMBERS 256
#define GC_NONE (-1)

enum { T_FREE, T_RUNNING, T_COMMITTING, T_DONE };
/* IS_DIR: the inode is a directory; IS_KEEP: a handle of it was handed
 * back once (gc_policy_defer) and is never handed back again; IS_CLEAN:
 * its one handle is for a file with nothing to write (counted in t_clean) */
enum { IS_FSYNC = 1, IS_CLAIMED = 2, IS_DONE = 4, IS_DIR = 8, IS_KEEP = 16, IS_CLEAN = 32 };

struct gc_islot {
	uint64_t is_ino;
	uint32_t is_handles;	/* handles of this inode still in the transaction */
	uint32_t is_flags;	/* IS_* */
	int32_t is_err;		/* 0, -errno, or GC_ORPHAN once IS_DONE */
	int32_t is_owner;	/* tid issuing the real call */
	int32_t is_owner_pid;
	uint32_t is_seal;	/* gc_result_seal() of the published result */
};

/* Slot result meaning "no usable result: make your own real call". */
#define GC_ORPHAN INT32_MIN
/* Slot result meaning "handed back at the close: join the next one". */
#define GC_REJOIN (INT32_MIN + 1)

/* Ties a published result to its transaction and inode, so memory a peer
 * scribbled over is not taken for a real call's result. */
static inline uint32_t gc_result_seal(uint64_t seq, uint64_t ino, int32_t err)
{
	uint64_t x = (seq * 0x9e3779b97f4a7c15ULL) ^ (ino * 0xc2b2ae3d27d4eb4fULL) ^
		     ((uint64_t)(uint32_t)err << 17) ^ 0x6c69626763736c31ULL;

	x ^= x >> 29;
	return (uint32_t)(x * 0xbf58476d1ce4e5b9ULL >> 32) | 1;
}

/* One per joined handle, so survivors can find the handles of a dead peer. */
struct gc_hent {
	int32_t he_pid;
	int32_t he_tid;
	uint32_t he_slot;
	uint32_t he_used;
};

struct gc_txn {
	uint64_t t_seq;
	uint32_t t_state;
	uint32_t t_handles;	/* joined and not gone */
	uint32_t t_joined;	/* ever joined: the batch size */
	uint32_t t_inodes;
	uint32_t t_pending;	/* real calls not finished (COMMITTING) */
	uint32_t t_refs;	/* handles that have not collected their result */
	uint32_t t_want;	/* close as soon as this many joined; 0 = no count rule */
	uint32_t t_close;	/* enum gc_close_reason */
	int32_t t_leader;	/* tid that asks the policy; 0 = vacant */
	int32_t t_leader_pid;
	uint32_t t_leader_new_writer;
	uint32_t t_detached;	/* given up on: no longer the domain's committing one */
	uint32_t t_live;	/* inode slots with handles at close */
	uint32_t t_claimed;	/* of those, claimed by an owner */
	uint32_t t_dirs_only;	/* at close: it syncs directories only */
	uint32_t t_clean;	/* joined for files with nothing to write, alone
				 * on their inode: requests that share nothing */
	uint64_t t_start_ns, t_deadline_ns, t_close_ns;
	uint64_t t_lead_ns;	/* since when the leader could have decided */
	struct gc_islot t_islots[GC_TXN_INODES];
	struct gc_hent t_hents[GC_TXN_HANDLES];
};

/* t_inodes as a loop over the slots may use it: a peer may have written any
 * value there since the lock's check (gc_domain_check). */
static inline uint32_t gc_txn_inodes(const struct gc_txn *t)
{
	uint32_t n = __atomic_load_n(&t->t_inodes, __ATOMIC_RELAXED);

	return n < GC_TXN_INODES ? n : GC_TXN_INODES;
}

/* A wait queue in the domain's memory: a futex word bumped on each wake, and
 * how many sleep on it, so a wake with nobody asleep costs no system call. */
struct gc_wq {
	uint32_t wq_seq;
	uint32_t wq_waiters;
};

/* The domain lock: a futex word and the holder's identity, no pointers, so
 * nothing a peer writes here can make us follow an address (a pthread
 * robust mutex keeps its robust-list links inside the mutex). A holder
 * that died is found by its pid and tid; one that went silent is given up
 * on after GC_LOCK_GIVE_UP_NS. */
struct gc_lock {
	uint64_t l_owner;	/* pid << 32 | tid of the holder; 0 = free */
	uint64_t l_stalled;	/* an l_owner seen holding past the give-up bound */
	uint32_t l_seq;		/* futex word, bumped at each release */
	uint32_t l_waiters;	/* a hint only: a sleeper wakes at least every
				 * GC_LOCK_CHECK_NS whatever it says */
};

struct gc_domain {
	uint64_t j_magic;	/* written last by the creator */
	uint32_t j_version;
	uint32_t j_size;
	uint64_t j_dev;
	uint64_t j_pidns;	/* pid namespace (inode of /proc/self/ns/pid) */
	/* CLOCK_REALTIME - CLOCK_MONOTONIC (ms) as the members read it, set
	 * at each join and commit: a process in another time namespace (its
	 * monotonic clock offset) reads another, and must not mix its times
	 * with theirs (gc_domain_same_clock) */
	int64_t j_clock_ms;
	uint32_t j_uid;
	uint32_t j_shared;	/* futexes are process-shared */
	struct gc_lock j_lock;
	/* Who sleeps where, so that an event wakes only those it concerns:
	 * the running transaction's leader on j_wq_lead (it decides when to
	 * close), every other handle on its transaction's j_wq_txn[]. */
	struct gc_wq j_wq_lead;
	struct gc_wq j_wq_txn[GC_TXN_RING];
	int32_t j_running;	/* ring index of the running transaction, or GC_NONE */
	int32_t j_committing;	/* ring index of the committing one, or GC_NONE */
	uint32_t j_multi;	/* the last commit had several inodes: stage first */
	uint32_t j_gen;		/* bumped when state is thrown away (dead lock owner) */
	int32_t j_fail_err;	/* the last failed real sync's result (-EIO or -EROFS) */
	uint64_t j_seq;
	uint64_t j_fail_ns;	/* when a real sync of the filesystem last failed so */
	uint64_t j_fast;	/* the direct path's word: see gc_fast_* (atomic) */
	uint32_t j_recoveries;	/* times a dead lock owner was recovered from */
	uint32_t j_reclaims;	/* times a segment without live members was reset */
	int32_t j_members[GC_MEMBERS]; /* pids attached (shared segments) */
	struct gc_policy_state j_policy;
	struct gc_txn j_txns[GC_TXN_RING];
};

/* Sets up @d, zeroed memory, for @dev. */
/*
 * The one word a request on the direct path reads (j_fast), twice: before
 * its real call, the policy's verdict and the time it holds until; after
 * it, whether a real sync of the filesystem failed meanwhile (a count of
 * the failures noted, bumped by gc_domain_note_failure). Bits 0-1 the
 * verdict (enum gc_verdict_kind), 2-15 the failure count, 16-63 the
 * until time in units of 65.5 us. Untrusted in a segment: an until time
 * further ahead than the policy ever gives is no verdict.
 */
#define GC_FAST_FAIL_SHIFT 2
#define GC_FAST_FAIL_MASK (0x3fffULL << GC_FAST_FAIL_SHIFT)
#define GC_FAST_UNTIL_SHIFT 16
#define GC_FAST_AHEAD_MAX_NS (2ULL * 1000ULL * 1000ULL * 1000ULL)
static inline uint32_t gc_fast_kind(uint64_t w)
{
	return (uint32_t)(w & 3);
}
static inline uint64_t gc_fast_until(uint64_t w)
{
	return w >> GC_FAST_UNTIL_SHIFT << GC_FAST_UNTIL_SHIFT;
}
/* The verdict, while it holds at @now; GC_V_ASK when it does not. */
static inline uint32_t gc_fast_verdict(uint64_t w, uint64_t now)
{
	uint64_t until = gc_fast_until(w);

	return now < until && until - now <= GC_FAST_AHEAD_MAX_NS ? gc_fast_kind(w) : GC_V_ASK;
}
/* @w with @kind until @until; its failure count kept. */
static inline uint64_t gc_fast_make(uint64_t w, uint32_t kind, uint64_t until)
{
	return (until >> GC_FAST_UNTIL_SHIFT << GC_FAST_UNTIL_SHIFT) | (w & GC_FAST_FAIL_MASK) |
	       (kind & 3);
}
/* Did a failure get noted between the reads @w0 and @w1? */
static inline bool gc_fast_failed(uint64_t w0, uint64_t w1)
{
	return ((w0 ^ w1) & GC_FAST_FAIL_MASK) != 0;
}

/* Sets up @d, zeroed memory, for @dev. */
void gc_domain_init(struct gc_domain *d, uint64_t dev, bool shared);
/* The same for the user @uid (the effective uid the caller read). */
void gc_domain_init_uid(struct gc_domain *d, uint64_t dev, bool shared, uid_t uid);
/* Just after a real sync of @d's filesystem returned @r: notes EIO, EROFS. */
void gc_domain_note_failure(struct gc_domain *d, int r);
/* A request of @d that began at @start succeeds only if no real sync of the
 * filesystem failed since: @r, or that error (-EIO or -EROFS). */
int gc_domain_held_result(const struct gc_domain *d, uint64_t start, int r);
/* The error of the last failure noted (-EIO or -EROFS). */
int gc_domain_fail_err(const struct gc_domain *d);
/* Throws away every transaction (survivors of it make their own calls). */
void gc_domain_reset_txns(struct gc_domain *d);

/* The segment's path for (uid, dev) in this process's pid namespace: pids
 * in a segment mean nothing to a process of another namespace, so each
 * namespace has its own. -1 when the namespace cannot be told (no /proc). */
int gc_domain_path(char *buf, size_t len, uid_t uid, uint64_t dev);
/* This process's pid namespace, 0 if unknown; re-read after fork
 * (gc_sys_pidns). */
uint64_t gc_pidns(void);
/* Maps the shared domain of (this uid, @dev), creating it if absent.
 * Returns NULL and sets *why when no usable segment exists. */
struct gc_domain *gc_domain_attach(uint64_t dev, const char **why);
struct gc_domain *gc_domain_private(uint64_t dev);

/* Takes j_lock. When its holder died, the domain's transactions are thrown
 * away (j_gen bumped). false: the lock is unusable — held longer than
 * GC_LOCK_GIVE_UP_NS by a live but silent process (then later callers
 * fail at once while that same holder keeps it), or the shared memory
 * failed validation (gc_domain_poisoned); the caller makes its own real
 * call. Every index and count the domain holds is checked after each lock
 * (gc_domain_check): on a violation the process never uses it again. */
#define GC_LOCK_GIVE_UP_NS (2ULL * 1000000000ULL)
#define GC_LOCK_CHECK_NS (10ULL * 1000000ULL)
bool gc_domain_lock(struct gc_domain *d);
/* As gc_domain_lock, but false at once when the lock is busy. */
bool gc_domain_trylock(struct gc_domain *d);
/* Drops j_lock. */
void gc_domain_unlock(struct gc_domain *d);
/* Every index and count in range? (the validating accessor; j_lock held) */
bool gc_domain_check(const struct gc_domain *d);
/* Is @d a mapping of a shared segment? This process's own record, never
 * the segment's j_shared, which a peer may have rewritten. */
bool gc_domain_is_segment(const struct gc_domain *d);
/* This process found @d's memory invalid and left it for good. */
bool gc_domain_poisoned(const struct gc_domain *d);
void gc_domain_poison(const struct gc_domain *d, const char *why);
/* With j_lock held: wake every sleeper of queue @q. */
void gc_domain_wake(struct gc_domain *d, struct gc_wq *q);
/* With j_lock held: wake every sleeper of every queue (rare events: a peer
 * reaped, a handle abandoned, state thrown away). */
void gc_domain_wake_all(struct gc_domain *d);
/* With j_lock held: sleep on @q until woken or @deadline (0 = none),
 * dropping the lock meanwhile. Returns 1 on timeout, 0 when woken, -1 when
 * the lock could not be taken again. The sleep is a cancellation point. */
int gc_domain_wait(struct gc_domain *d, struct gc_wq *q, uint64_t deadline);

/* With j_lock held: record @pid as a member (reaping the dead met before
 * a live one, every dead one when the table has no room, and resetting a
 * segment that has no live member). false: member table full. */
bool gc_domain_join(struct gc_domain *d, pid_t pid);
/* Whether this process's clocks are the members' (j_clock_ms, within
 * GC_CLOCK_TOL_MS: drift between refreshes, a clock step). */
#define GC_CLOCK_TOL_MS 2000
bool gc_domain_same_clock(const struct gc_domain *d);
/* Sets j_clock_ms from this process's clocks (a member, with the lock). */
void gc_domain_clock_note(struct gc_domain *d);
/* With j_lock held: forget @pid (and the dead met before a live one); true
 * when no member is left. */
bool gc_domain_leave(struct gc_domain *d, pid_t pid);

/* Is thread @tid of process @pid alive? */
bool gc_alive(pid_t pid, pid_t tid);
#endif
