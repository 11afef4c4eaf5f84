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
#define GC_DOM_VERSION 6
#define GC_TXN_INODES 64
#define GC_TXN_HANDLES 128
#define GC_TXN_RING 4
#define GC_MEMBERS 256
#define GC_NONE (-1)

enum { T_FREE, T_RUNNING, T_COMMITTING, T_DONE };
enum { IS_FSYNC = 1, IS_CLAIMED = 2, IS_DONE = 4 };

struct gc_islot {
	uint64_t is_ino;
	uint32_t is_handles;	/* handles of this inode still in the transaction */
	uint32_t is_flags;	/* IS_* */
	int32_t is_err;		/* 0, -errno, or GC_ORPHAN once IS_DONE */
	int32_t is_owner;	/* tid issuing the real call */
	int32_t is_owner_pid;
	uint32_t is_pad;
};

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
	uint64_t t_start_ns, t_deadline_ns, t_close_ns;
	uint64_t t_lead_ns;	/* since when the leader could have decided */
	struct gc_islot t_islots[GC_TXN_INODES];
	struct gc_hent t_hents[GC_TXN_HANDLES];
};

/* A wait queue in the domain's memory: a futex word bumped on each wake, and
 * how many sleep on it, so a wake with nobody asleep costs no system call. */
struct gc_wq {
	uint32_t wq_seq;
	uint32_t wq_waiters;
};

struct gc_domain {
	uint64_t j_magic;	/* written last by the creator */
	uint32_t j_version;
	uint32_t j_size;
	uint64_t j_dev;
	uint32_t j_uid;
	uint32_t j_shared;	/* futex and mutex are process-shared */
	pthread_mutex_t j_lock;	/* robust when shared */
	/* Who sleeps where, so that an event wakes only those it concerns:
	 * the running transaction's leader on j_wq_lead (it decides when to
	 * close), every other handle on its transaction's j_wq_txn[]. */
	struct gc_wq j_wq_lead;
	struct gc_wq j_wq_txn[GC_TXN_RING];
	int32_t j_running;	/* ring index of the running transaction, or GC_NONE */
	int32_t j_committing;	/* ring index of the committing one, or GC_NONE */
	uint32_t j_multi;	/* the last commit had several inodes: stage first */
	uint32_t j_gen;		/* bumped when state is thrown away (dead lock owner) */
	uint64_t j_seq;
	uint32_t j_recoveries;	/* times a dead lock owner was recovered from */
	uint32_t j_reclaims;	/* times a segment without live members was reset */
	int32_t j_members[GC_MEMBERS]; /* pids attached (shared segments) */
	struct gc_policy_state j_policy;
	struct gc_txn j_txns[GC_TXN_RING];
};

void gc_domain_init(struct gc_domain *d, uint64_t dev, bool shared);
/* Throws away every transaction (survivors of it make their own calls). */
void gc_domain_reset_txns(struct gc_domain *d);

/* The segment's path for (uid, dev). */
int gc_domain_path(char *buf, size_t len, uid_t uid, uint64_t dev);
/* Maps the shared domain of (this uid, @dev), creating it if absent.
 * Returns NULL and sets *why when no usable segment exists. */
struct gc_domain *gc_domain_attach(uint64_t dev, const char **why);
struct gc_domain *gc_domain_private(uint64_t dev);

/* Takes j_lock. A lock whose owner died is made consistent and the domain's
 * transactions are thrown away (j_gen bumped). false: the lock is unusable,
 * or (shared) was held longer than GC_LOCK_GIVE_UP_NS by a live but silent
 * process; the caller then makes its own real call. */
#define GC_LOCK_GIVE_UP_NS (2ULL * 1000000000ULL)
bool gc_domain_lock(struct gc_domain *d);
/* As gc_domain_lock, but false at once when the lock is busy. */
bool gc_domain_trylock(struct gc_domain *d);
/* Drops j_lock. */
void gc_domain_unlock(struct gc_domain *d);
/* With j_lock held: wake every sleeper of queue @q. */
void gc_domain_wake(struct gc_domain *d, struct gc_wq *q);
/* With j_lock held: wake every sleeper of every queue (rare events: a peer
 * reaped, a handle abandoned, state thrown away). */
void gc_domain_wake_all(struct gc_domain *d);
/* With j_lock held: sleep on @q until woken or @deadline (0 = none),
 * dropping the lock meanwhile. Returns 1 on timeout, 0 when woken, -1 when
 * the lock could not be taken again. The sleep is a cancellation point. */
int gc_domain_wait(struct gc_domain *d, struct gc_wq *q, uint64_t deadline);

/* With j_lock held: record @pid as a member (reaping dead ones first, and
 * resetting a segment that has no live member). false: member table full. */
bool gc_domain_join(struct gc_domain *d, pid_t pid);
/* With j_lock held: forget @pid; true when no member is left. */
bool gc_domain_leave(struct gc_domain *d, pid_t pid);

/* Is thread @tid of process @pid alive? */
bool gc_alive(pid_t pid, pid_t tid);
#endif
