// SPDX-License-Identifier: LGPL-2.1-or-later
/* Domain memory, private or shared: initialisation, the lock (a futex
 * word naming its holder), wait queues, and membership of shared ones.
 * Uses raw system calls only, so it works the same inside the preloaded
 * library and in unit tests. */
#include "journal/domain.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sys.h"
#include "policy/policy.h"

/* Whether @d is shared is this process's own record (segment.c): j_shared
 * is in memory a peer may have written. */
#define is_segment gc_domain_is_segment

void gc_domain_init_uid(struct gc_domain *d, uint64_t dev, bool shared, uid_t uid)
{
	/* @d is zeroed already (a new file, an anonymous mapping): writing
	 * only what is not zero leaves the pages of unused transactions
	 * untouched, out of the process's memory until a commit needs them */
	_Static_assert(T_FREE == 0, "free transactions are zeroed memory");
	d->j_version = GC_DOM_VERSION;
	d->j_size = sizeof(*d);
	d->j_dev = dev;
	d->j_uid = (uint32_t)uid;
	d->j_pidns = shared ? gc_pidns() : 0;
	if (shared)
		gc_domain_clock_note(d);
	d->j_shared = shared;
	d->j_running = d->j_committing = GC_NONE;
	gc_policy_init(&d->j_policy);
}

void gc_domain_init(struct gc_domain *d, uint64_t dev, bool shared)
{
	gc_domain_init_uid(d, dev, shared, gc_sys_geteuid());
}

void gc_domain_reset_txns(struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_TXN_RING; i++)
		memset(&d->j_txns[i], 0, sizeof(d->j_txns[i]));
	d->j_running = d->j_committing = GC_NONE;
	d->j_gen++;
}

bool gc_alive(pid_t pid, pid_t tid)
{
	if (syscall(SYS_tgkill, pid, tid, 0) == 0)
		return true;
	return errno == EPERM;
}

static bool pid_alive(pid_t pid)
{
	return syscall(SYS_kill, pid, 0) == 0 || errno == EPERM;
}

static int futex_op(const struct gc_domain *d, int op)
{
	return is_segment(d) ? op : op | FUTEX_PRIVATE_FLAG;
}

/* ---- the lock ---------------------------------------------------------- */

static uint64_t lock_me(void)
{
	return (uint64_t)(uint32_t)gc_getpid() << 32 | (uint32_t)gc_gettid();
}

static bool owner_alive(uint64_t o)
{
	return gc_alive((pid_t)(o >> 32), (pid_t)(uint32_t)o);
}

/* A holder died: whatever it was changing cannot be trusted. Everyone in
 * flight notices the new generation and makes its own real call. */
static void lock_recovered(struct gc_domain *d)
{
	gc_domain_reset_txns(d);
	d->j_recoveries++;
	gc_domain_wake_all(d);
}

/* Takes the lock. @wait: 0 try once, else until @wait's deadline. Returns
 * 1 when taken from a dead holder, 0 when taken, -1 when not. */
static int lock_take(struct gc_domain *d, bool wait, uint64_t give_up_ns)
{
	struct gc_lock *l = &d->j_lock;
	uint64_t me = lock_me(), now, until = 0, check_at = 0;

	for (;;) {
		uint64_t o = 0, st;
		uint32_t seq;

		if (__atomic_compare_exchange_n(&l->l_owner, &o, me, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		if (o == me)
			return -1; /* a peer wrote our own name there: never wait on it */
		st = __atomic_load_n(&l->l_stalled, __ATOMIC_RELAXED);
		if (!wait || (st && st == o && owner_alive(o)))
			return -1; /* still the holder that went silent: at once */
		now = gc_now_ns();
		if (!until) {
			until = now + give_up_ns;
			check_at = now + GC_LOCK_CHECK_NS;
		}
		if (now >= check_at || (st && st == o)) {
			if (!owner_alive(o)) {
				if (__atomic_compare_exchange_n(&l->l_owner, &o, me, false,
								__ATOMIC_ACQUIRE,
								__ATOMIC_RELAXED))
					return 1;
				continue;
			}
			check_at = now + GC_LOCK_CHECK_NS;
		}
		if (give_up_ns && now >= until) {
			__atomic_store_n(&l->l_stalled, o, __ATOMIC_RELAXED);
			return -1;
		}
		seq = __atomic_load_n(&l->l_seq, __ATOMIC_ACQUIRE);
		__atomic_add_fetch(&l->l_waiters, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&l->l_owner, __ATOMIC_ACQUIRE)) {
			uint64_t at = give_up_ns && until < check_at ? until : check_at;
			struct timespec ts = { (time_t)(at / GC_NSEC_PER_SEC),
					       (long)(at % GC_NSEC_PER_SEC) };

			syscall(SYS_futex, &l->l_seq, futex_op(d, FUTEX_WAIT_BITSET), seq, &ts,
				NULL, FUTEX_BITSET_MATCH_ANY);
		}
		__atomic_sub_fetch(&l->l_waiters, 1, __ATOMIC_RELAXED);
	}
}

static bool lock_done(struct gc_domain *d, int r)
{
	if (r < 0)
		return false;
	if (is_segment(d) && !gc_domain_check(d)) {
		gc_domain_poison(d, "it failed validation: an index or count out of range");
		gc_domain_unlock(d);
		return false;
	}
	if (__atomic_load_n(&d->j_lock.l_stalled, __ATOMIC_RELAXED))
		__atomic_store_n(&d->j_lock.l_stalled, 0, __ATOMIC_RELAXED);
	if (r == 1)
		lock_recovered(d);
	return true;
}

bool gc_domain_lock(struct gc_domain *d)
{
	if (gc_domain_poisoned(d))
		return false;
	/* a private lock is held by this process's own threads, briefly */
	return lock_done(d, lock_take(d, true, is_segment(d) ? GC_LOCK_GIVE_UP_NS : 0));
}

bool gc_domain_trylock(struct gc_domain *d)
{
	if (gc_domain_poisoned(d))
		return false;
	return lock_done(d, lock_take(d, false, 0));
}

void gc_domain_unlock(struct gc_domain *d)
{
	struct gc_lock *l = &d->j_lock;

	__atomic_store_n(&l->l_owner, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&l->l_seq, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&l->l_waiters, __ATOMIC_RELAXED))
		syscall(SYS_futex, &l->l_seq, futex_op(d, FUTEX_WAKE), 1, NULL, NULL, 0);
}

void gc_domain_wake(struct gc_domain *d, struct gc_wq *q)
{
	__atomic_add_fetch(&q->wq_seq, 1, __ATOMIC_RELEASE);
	if (q->wq_waiters)
		syscall(SYS_futex, &q->wq_seq, futex_op(d, FUTEX_WAKE), INT_MAX, NULL, NULL,
			0);
}

void gc_domain_wake_all(struct gc_domain *d)
{
	int i;

	gc_domain_wake(d, &d->j_wq_lead);
	for (i = 0; i < GC_TXN_RING; i++)
		gc_domain_wake(d, &d->j_wq_txn[i]);
}

int gc_domain_wait(struct gc_domain *d, struct gc_wq *q, uint64_t deadline)
{
	uint32_t seq = q->wq_seq;
	struct timespec ts, *tsp = NULL;
	int old, r, e;

	if (deadline) {
		ts.tv_sec = (time_t)(deadline / GC_NSEC_PER_SEC);
		ts.tv_nsec = (long)(deadline % GC_NSEC_PER_SEC);
		tsp = &ts;
	}
	q->wq_waiters++;
	gc_domain_unlock(d);
	/* Asynchronous cancellation only around the sleep, where no lock is
	 * held and the handle is consistent: the cleanup handler can undo it. */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	r = (int)syscall(SYS_futex, &q->wq_seq, futex_op(d, FUTEX_WAIT_BITSET), seq, tsp,
			 NULL, FUTEX_BITSET_MATCH_ANY);
	e = errno;
	pthread_setcanceltype(old, NULL);
	if (!gc_domain_lock(d))
		return -1;
	/* a sleeper that died left its count behind: never below zero */
	if (q->wq_waiters)
		q->wq_waiters--;
	return r < 0 && e == ETIMEDOUT;
}

struct gc_domain *gc_domain_private(uint64_t dev)
{
	struct gc_domain *d = gc_sys_mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (d == MAP_FAILED)
		return NULL;
	gc_domain_init(d, dev, false);
	return d;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, in ms: the same for every process of
 * one time namespace at any instant (they read one timekeeper); a time
 * namespace offsets the monotonic clock, not the real-time one. */
static int64_t clock_skew_ms(void)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000 +
	       ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec) / 1000000;
}

void gc_domain_clock_note(struct gc_domain *d)
{
	__atomic_store_n(&d->j_clock_ms, clock_skew_ms(), __ATOMIC_RELAXED);
}

/* Asked once a process, at a join (a fork child's at its first request):
 * with the start-up, fork and exit code, where a process joining another's
 * segment finds it in its first window of code (what only a join runs did
 * not rank into core/first.list). */
GC_ONCE bool gc_domain_same_clock(const struct gc_domain *d)
{
	int64_t diff = clock_skew_ms() - __atomic_load_n(&d->j_clock_ms, __ATOMIC_RELAXED);

	return diff <= GC_CLOCK_TOL_MS && diff >= -GC_CLOCK_TOL_MS;
}

/* Member @m at @i, once @live members were counted before it: is it to
 * be counted too? Members past the first live one are not asked (a kill()
 * each): one is enough to tell the segment in use. Those that died without
 * leaving (_exit, SIGKILL) are reaped when the table has no room, or by
 * whoever leaves last. A dead one found is cleared and counted in *@dead. */
static bool member_live(struct gc_domain *d, int i, pid_t m, int live, int *dead)
{
	if (live || pid_alive(m))
		return true;
	d->j_members[i] = 0;
	(*dead)++;
	return false;
}

bool gc_domain_join(struct gc_domain *d, pid_t pid)
{
	int i, live = 0, dead = 0, free_i = -1;

	for (i = 0; i < GC_MEMBERS; i++) {
		pid_t m = d->j_members[i];

		if (m == pid)
			return true;
		if (m && !member_live(d, i, m, live, &dead))
			m = 0;
		if (m)
			live++;
		else if (free_i < 0)
			free_i = i;
	}
	if (free_i < 0) {
		/* no room: every dead one goes */
		for (i = 0; i < GC_MEMBERS; i++)
			if (d->j_members[i] && !member_live(d, i, d->j_members[i], 0, &dead) &&
			    free_i < 0)
				free_i = i;
	}
	if (!live && dead) {
		/* Only dead processes used it: whatever it holds is stale, the
		 * policy's verdicts too (they were about another workload);
		 * what was learned about the device stays, the library's own
		 * reading of it too (no other source refreshes that). */
		struct gc_policy_state ps = d->j_policy;

		gc_domain_reset_txns(d);
		gc_policy_init(&d->j_policy);
		__atomic_store_n(&d->j_fast, 0, __ATOMIC_RELAXED); /* ask the new state */
		d->j_policy.ps_commit_ns = ps.ps_commit_ns;
		d->j_policy.ps_jbd2_avg_ns = ps.ps_jbd2_avg_ns;
		d->j_policy.ps_commit_samples = ps.ps_commit_samples;
		d->j_policy.ps_gran_ns = ps.ps_gran_ns;
		d->j_policy.ps_gran_samples = ps.ps_gran_samples;
		d->j_policy.ps_fb_call_ns = ps.ps_fb_call_ns;
		if (ps.ps_device_src == GC_DEV_SELF)
			gc_policy_device(&d->j_policy, ps.ps_device_flush_ns, GC_DEV_SELF,
					 ps.ps_device_at_ns);
		d->j_reclaims++;
	}
	if (free_i < 0)
		return false;
	d->j_members[free_i] = pid;
	gc_domain_clock_note(d);
	return true;
}

bool gc_domain_leave(struct gc_domain *d, pid_t pid)
{
	int i, live = 0, dead = 0;

	for (i = 0; i < GC_MEMBERS; i++) {
		pid_t m = d->j_members[i];

		if (m == pid)
			d->j_members[i] = 0;
		else if (m && member_live(d, i, m, live, &dead))
			live++;
	}
	return live == 0;
}

/*
 * A failed journal commit is reported by the kernel only to the syncs
 * inside it: ext4 counts an aborted commit as done, and a later fsync that
 * finds nothing to commit returns 0 (a directory's, with no flush at all).
 * A request the library holds back may have its changes in such a commit
 * (a rename just before its fsync) while another request's real call runs
 * it; the real call made for it later would then succeed on nothing. So a
 * failure of any real sync of the filesystem fails every request of the
 * domain that began before it and had not returned, unless the journal
 * still works then (journal.c held_result: the failure was a file's own,
 * its data's writeback or its own flush). Per-descriptor
 * writeback errors are collected before an owner's call
 * (gc_commit_pending_error) and are not counted here.
 */
void gc_domain_note_failure(struct gc_domain *d, int r)
{
	uint64_t now, was;

	if (!d || (r != -EIO && r != -EROFS))
		return;
	now = gc_now_ns();
	__atomic_store_n(&d->j_fail_err, r, __ATOMIC_RELAXED);
	was = __atomic_load_n(&d->j_fail_ns, __ATOMIC_RELAXED);
	/* later times win; one still to come is a peer's scribble: replaced */
	while ((was < now || was > now + GC_NSEC_PER_SEC) &&
	       !__atomic_compare_exchange_n(&d->j_fail_ns, &was, now, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	/* and counted in the direct path's word, after the time and error */
	was = __atomic_load_n(&d->j_fast, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(
		&d->j_fast, &was,
		(was & ~GC_FAST_FAIL_MASK) | ((was + (1ULL << GC_FAST_FAIL_SHIFT)) & GC_FAST_FAIL_MASK),
		false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

int gc_domain_fail_err(const struct gc_domain *d)
{
	return __atomic_load_n(&d->j_fail_err, __ATOMIC_RELAXED) == -EROFS ? -EROFS : -EIO;
}

int gc_domain_held_result(const struct gc_domain *d, uint64_t start, int r)
{
	uint64_t f = __atomic_load_n(&d->j_fail_ns, __ATOMIC_ACQUIRE);

	/* a time still to come is a peer's scribble, not a failure */
	if (r < 0 || f < start || f > gc_now_ns() + GC_NSEC_PER_SEC)
		return r;
	return gc_domain_fail_err(d);
}
