// SPDX-License-Identifier: LGPL-2.1-or-later
/* Transactions and handles, all with j_lock held unless said: begin, join,
 * close, commit end, abandon; the protocol a handle runs until it has a
 * result; and undoing handles that lost the lock.
 *
 * Counters, each kept by the functions here alone:
 *   t_handles  handles joined and not abandoned (cancelled, dead, lost)
 *   t_refs     handles that have not collected: t_refs <= t_handles
 *   he_used    one per such handle: the entries in use number t_refs
 *   is_handles t_handles of one inode: they sum to t_handles
 *   t_pending  (COMMITTING) live slots with no published result yet
 * gc_txn_assert checks them in debug and sanitizer builds. */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "journal/txn.h"
#include "policy/policy.h"

/* A live but silent owner or leader is given up on after this long. */
#define GC_GIVE_UP_MIN_NS (2 * GC_NSEC_PER_SEC)

#if defined(GC_DEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#include <assert.h>
void gc_txn_assert(const struct gc_domain *d)
{
	int i;

	if (gc_domain_is_segment(d))
		return; /* a peer's memory: gc_domain_check, never an assert */
	for (i = 0; i < GC_TXN_RING; i++) {
		const struct gc_txn *t = &d->j_txns[i];
		uint32_t k, handles = 0, used = 0, open = 0;

		if (t->t_state == T_FREE)
			continue;
		for (k = 0; k < t->t_inodes; k++) {
			handles += t->t_islots[k].is_handles;
			open += !(t->t_islots[k].is_flags & IS_DONE);
		}
		for (k = 0; k < GC_TXN_HANDLES; k++)
			used += !!t->t_hents[k].he_used;
		assert(handles == t->t_handles);
		assert(used == t->t_refs);
		assert(t->t_refs <= t->t_handles);
		assert(t->t_state == T_COMMITTING ? t->t_pending == open : !t->t_pending);
	}
}
#else
void gc_txn_assert(const struct gc_domain *d)
{
}
#endif

struct gc_wq *gc_txn_wq(struct gc_domain *d, const struct gc_txn *t)
{
	return &d->j_wq_txn[t - d->j_txns];
}

/* The committing slot became free: the running transaction's leader may
 * now decide; with no leader, its handles pick one. */
static void wake_running(struct gc_domain *d)
{
	if (d->j_running == GC_NONE)
		return;
	if (d->j_txns[RING_IX(d->j_running)].t_leader)
		gc_domain_wake(d, &d->j_wq_lead);
	else
		gc_domain_wake(d, &d->j_wq_txn[RING_IX(d->j_running)]);
}

static struct gc_txn *txn_begin(struct gc_domain *d, uint64_t now,
				const struct gc_handle *h, bool new_writer)
{
	int i;

	for (i = 0; i < GC_TXN_RING; i++) {
		struct gc_txn *t = &d->j_txns[i];

		if (t->t_state != T_FREE)
			continue;
		memset(t, 0, offsetof(struct gc_txn, t_islots));
		t->t_seq = ++d->j_seq;
		t->t_state = T_RUNNING;
		t->t_start_ns = now;
		t->t_lead_ns = now;
		t->t_leader = h->h_tid;
		t->t_leader_pid = h->h_pid;
		t->t_leader_new_writer = new_writer;
		d->j_running = i;
		return t;
	}
	return NULL;
}

static int islot_get(struct gc_txn *t, uint64_t ino)
{
	uint32_t i, n = gc_txn_inodes(t);

	for (i = 0; i < n; i++)
		if (t->t_islots[i].is_ino == ino)
			return (int)i;
	if (n == GC_TXN_INODES)
		return GC_NONE;
	memset(&t->t_islots[i], 0, sizeof(t->t_islots[i]));
	t->t_islots[i].is_ino = ino;
	t->t_islots[i].is_err = GC_ORPHAN; /* until a real call publishes one */
	t->t_inodes = n + 1;
	return (int)i;
}

static int hent_get(struct gc_txn *t)
{
	int i;

	for (i = 0; i < GC_TXN_HANDLES; i++)
		if (!t->t_hents[i].he_used)
			return i;
	return GC_NONE;
}

/* Does the running transaction hold a request of a regular file? */
static bool running_has_file(const struct gc_domain *d)
{
	const struct gc_txn *n;
	uint32_t i, k;

	if (d->j_running == GC_NONE)
		return false;
	n = &d->j_txns[RING_IX(d->j_running)];
	for (i = 0, k = gc_txn_inodes(n); i < k; i++)
		if (n->t_islots[i].is_handles && !(n->t_islots[i].is_flags & IS_DIR))
			return true;
	return false;
}

void gc_txn_commit_end(struct gc_domain *d, struct gc_txn *t, uint64_t now)
{
	/* What directories cost in step (the hand-back's evidence): not a
	 * commit of directories while a file's request joined the next
	 * transaction. That file was written and waited in the filesystem's
	 * running transaction, which the directories' commit committed too
	 * (3 of 8 threads at their directory while the others synced files:
	 * 7 ms, against 0.1 ms in step); counted, one such commit closed the
	 * hand-back for the rest of a run. */
	struct gc_commit_sample cs = {
		.cs_handles = t->t_joined, .cs_clean = t->t_clean, .cs_inodes = t->t_inodes,
		.cs_close = (enum gc_close_reason)t->t_close,
		.cs_start_ns = t->t_start_ns, .cs_lead_ns = t->t_lead_ns,
		.cs_close_ns = t->t_close_ns,
		.cs_end_ns = now, .cs_dirs_only = t->t_dirs_only && !running_has_file(d),
	};

	t->t_state = T_DONE;
	if (d->j_committing == (int32_t)(t - d->j_txns)) {
		d->j_committing = GC_NONE;
		if (d->j_running != GC_NONE)
			d->j_txns[RING_IX(d->j_running)].t_lead_ns = now;
		wake_running(d);
	}
	/* a stalled commit's latency says nothing about the device */
	if (!t->t_detached)
		gc_policy_commit_done(&d->j_policy, &gc_cfg.c_policy, &cs);
	/* open_us: the transaction's life before its close, also behind
	 * another commit; wait_us: the part of it the policy chose to wait */
	if (gc_cfg.c_log >= GC_LOG_TRACE)
		gc_log(GC_LOG_TRACE,
		       "device %llx: commit %llu: requests=%u files=%u closed=%s open_us=%llu wait_us=%llu commit_us=%llu%s",
		       (unsigned long long)d->j_dev, (unsigned long long)t->t_seq, t->t_joined,
		       t->t_inodes, gc_close_reason_name((enum gc_close_reason)t->t_close),
		       (unsigned long long)((t->t_close_ns - t->t_start_ns) / GC_NSEC_PER_USEC),
		       (unsigned long long)(t->t_close_ns > t->t_lead_ns &&
						    t->t_lead_ns > t->t_start_ns
					    ? (t->t_close_ns - t->t_lead_ns) / GC_NSEC_PER_USEC
					    : (t->t_close_ns - t->t_start_ns) / GC_NSEC_PER_USEC),
		       (unsigned long long)((now - t->t_close_ns) / GC_NSEC_PER_USEC),
		       t->t_detached ? " stalled" : "");
	gc_stat_inc(commits);
	gc_stats_commit_end(t->t_joined, now - t->t_close_ns);
	gc_stat_add(batched, t->t_joined);
	gc_stat_add(commit_ns, now - t->t_close_ns);
	gc_stat_add(open_ns, t->t_close_ns - t->t_start_ns);
	if (gc_domain_is_segment(d))
		gc_domain_clock_note(d); /* a clock step or drift: joiners still match */
	if (!t->t_refs)
		t->t_state = T_FREE;
}

/* How long a live participant may stay silent (a stopped process: a dead
 * one is reaped sooner) before the others stop waiting for it. */
static uint64_t give_up_ns(const struct gc_domain *d)
{
	uint64_t g = 20 * d->j_policy.ps_commit_ns;

	return g > GC_GIVE_UP_MIN_NS ? g : GC_GIVE_UP_MIN_NS;
}

/* The committing transaction @t has outlived the give-up bound: it stops
 * being the domain's committing one so new transactions can commit. Its
 * remaining handles still collect whatever result arrives, or give up.
 * j_committing names @t as every use reads it (RING_IX: a peer may have
 * written any value since the lock's check), and is cleared even when @t
 * was detached before: the caller goes round with the lock held until it
 * reads GC_NONE there. */
static void txn_detach(struct gc_domain *d, struct gc_txn *t)
{
	bool named = d->j_committing != GC_NONE &&
		     RING_IX(d->j_committing) == (uint32_t)(t - d->j_txns);

	if (named) {
		d->j_committing = GC_NONE;
		if (d->j_running != GC_NONE)
			d->j_txns[RING_IX(d->j_running)].t_lead_ns = gc_now_ns();
	}
	if (t->t_detached) {
		if (named)
			wake_running(d);
		return;
	}
	t->t_detached = 1;
	gc_stat_inc(stalled);
	gc_domain_wake_all(d);
}

/* At a close: the handles of one kind (files or directories, the one
 * gc_policy_defer picks) go back to join the next transaction.
 * Their slots are settled with GC_REJOIN and make no real call here. */
static void txn_defer(struct gc_domain *d, struct gc_txn *t)
{
	uint32_t i, n = gc_txn_inodes(t), kind[2] = { 0, 0 };
	enum gc_defer back;
	bool dirs;

	for (i = 0; i < n; i++) {
		const struct gc_islot *s = &t->t_islots[i];

		if (s->is_handles && !(s->is_flags & IS_KEEP))
			kind[!!(s->is_flags & IS_DIR)] += s->is_handles;
	}
	back = gc_policy_defer(&d->j_policy, &gc_cfg.c_policy, t->t_seq, kind[0], kind[1]);
	if (back == GC_DEFER_NONE)
		return;
	dirs = back == GC_DEFER_DIRS;
	for (i = 0; i < n; i++) {
		struct gc_islot *s = &t->t_islots[i];
		bool dir = s->is_flags & IS_DIR;

		if (!s->is_handles || (s->is_flags & IS_KEEP) || dir != dirs)
			continue;
		s->is_flags |= IS_DONE;
		s->is_err = GC_REJOIN;
		s->is_seal = gc_result_seal(t->t_seq, s->is_ino, GC_REJOIN);
		/* they are counted in the transaction they commit in */
		t->t_joined -= s->is_handles < t->t_joined ? s->is_handles : t->t_joined;
		if (s->is_flags & IS_CLEAN)
			t->t_clean -= t->t_clean ? 1 : 0;
	}
}

static void txn_close(struct gc_domain *d, struct gc_txn *t, enum gc_close_reason why,
		      uint64_t now)
{
	uint32_t i, n, live = 0, dirs = 0;

	if (why == GC_CLOSE_COUNT || why == GC_CLOSE_TIMEOUT)
		txn_defer(d, t);
	t->t_state = T_COMMITTING;
	t->t_close = why;
	/* @now was read before the lock: a closer that read it before the
	 * transaction's first joiner did must not close it before it began */
	t->t_close_ns = now > t->t_start_ns ? now : t->t_start_ns;
	for (i = 0, n = gc_txn_inodes(t); i < n; i++) {
		struct gc_islot *s = &t->t_islots[i];

		if (s->is_flags & IS_DONE)
			continue; /* handed back */
		if (s->is_handles) {
			live++;
			dirs += !!(s->is_flags & IS_DIR);
		} else {
			s->is_flags |= IS_DONE; /* every handle of it left */
		}
	}
	t->t_pending = live;
	t->t_live = live;
	t->t_dirs_only = live && live == dirs;
	t->t_claimed = 0;
	d->j_committing = (int32_t)(t - d->j_txns);
	d->j_running = GC_NONE;
	/* staging concerns files: a commit of directories alone says nothing
	 * of the next files' */
	if (live > dirs)
		__atomic_store_n(&d->j_multi, live > 1, __ATOMIC_RELAXED);
	if (why == GC_CLOSE_COUNT)
		gc_stat_inc(close_count);
	else if (why == GC_CLOSE_TIMEOUT)
		gc_stat_inc(close_timeout);
	else
		gc_stat_inc(close_immediate);
	if (!live)
		gc_txn_commit_end(d, t, now);
	/* its handles become owners or wait for one; its leader may be asleep
	 * on the leader's queue when a joiner closed it by count */
	gc_domain_wake(d, gc_txn_wq(d, t));
	gc_domain_wake(d, &d->j_wq_lead);
}

/* Handle entry @e leaves @t without its result: cancelled, or its process
 * died. A slot nobody is left to sync for is settled here. */
void gc_hent_abandon(struct gc_domain *d, struct gc_txn *t, int e)
{
	struct gc_hent *he = &t->t_hents[e];
	struct gc_islot *s = &t->t_islots[he->he_slot % GC_TXN_INODES];

	he->he_used = 0;
	s->is_handles--;
	t->t_handles--;
	t->t_refs--;
	if (t->t_state == T_RUNNING) {
		if (t->t_leader == he->he_tid)
			t->t_leader = 0;
		if (!t->t_handles) {
			t->t_state = T_FREE;
			d->j_running = GC_NONE;
		}
	} else if (t->t_state == T_COMMITTING && !s->is_handles &&
		   !(s->is_flags & (IS_CLAIMED | IS_DONE))) {
		s->is_flags |= IS_DONE;
		s->is_err = GC_ORPHAN;
		if (!--t->t_pending)
			gc_txn_commit_end(d, t, gc_now_ns());
	}
	if (t->t_state == T_DONE && !t->t_refs)
		t->t_state = T_FREE;
	gc_domain_wake_all(d);
}

/* Is the handle still where it joined: same generation, same transaction,
 * and its entry still its own (a peer may have taken it for dead)? */
bool gc_handle_valid(const struct gc_handle *h)
{
	const struct gc_hent *he = &h->h_txn->t_hents[(uint32_t)h->h_ent % GC_TXN_HANDLES];

	return h->h_dom->j_gen == h->h_gen && h->h_txn->t_seq == h->h_seq && he->he_used &&
	       he->he_pid == h->h_pid && he->he_tid == h->h_tid;
}

static void handle_cancelled(void *arg)
{
	struct gc_handle *h = arg;

	if (!h->h_done && gc_domain_lock(h->h_dom)) {
		if (gc_handle_valid(h))
			gc_hent_abandon(h->h_dom, h->h_txn, h->h_ent);
		gc_domain_unlock(h->h_dom);
	}
	gc_depth--;
}

/* A sync thread that ended (its process too, for a peer) is not waited
 * for: programs that start a process per delivery or per commit (mail
 * agents, git) otherwise leave a count of recent threads no transaction
 * can reach. Looked for only by a leader the policy told to wait (a count
 * matters only then), at most every GC_FORGET_NS per thread, a tid with
 * kill(tid, 0), with j_lock held. Returns whether any was forgotten. */
#define GC_FORGET_NS (5 * GC_NSEC_PER_MSEC)
static __thread uint64_t gc_forgot_ns __attribute__((tls_model("initial-exec")));

static bool tid_gone(int32_t tid)
{
	return tid > 0 && syscall(SYS_kill, tid, 0) < 0 && errno == ESRCH;
}

static bool forget_gone(struct gc_domain *d, uint64_t now)
{
	int e = errno;
	uint32_t n;

	if (now - gc_forgot_ns < GC_FORGET_NS)
		return false;
	gc_forgot_ns = now;
	n = gc_policy_forget(&d->j_policy, tid_gone);
	errno = e;
	return n > 0;
}

/* Sleeps until woken, @deadline, or the next look for dead peers: on the
 * leader's queue when @lead, else on the transaction's. Returns 1 on
 * reaching @deadline, 0 otherwise, -1 if the lock is lost. */
static int handle_wait(struct gc_handle *h, bool lead, uint64_t deadline)
{
	struct gc_domain *d = h->h_dom;
	struct gc_wq *q = lead ? &d->j_wq_lead : gc_txn_wq(d, h->h_txn);
	uint64_t now = gc_now_ns(), reap_at = now + gc_peers_reap_interval(d);
	int r;

	if (!gc_domain_is_segment(d))
		return gc_domain_wait(d, q, deadline);
	r = gc_domain_wait(d, q, deadline && deadline < reap_at ? deadline : reap_at);
	if (r == 1 && (!deadline || deadline > gc_now_ns())) {
		if (h->h_dom->j_gen == h->h_gen)
			gc_peers_reap(d);
		return 0;
	}
	return r;
}

/* The protocol, with j_lock held on entry and exit (unless it returns
 * -ENOLCK). Returns the slot result, or GC_ORPHAN. */
static int handle_run(struct gc_handle *h, uint64_t ino)
{
	struct gc_domain *d = h->h_dom;
	struct gc_txn *t = h->h_txn;
	struct gc_islot *s = &t->t_islots[h->h_slot];
	const struct gc_policy_cfg *pc = &gc_cfg.c_policy;
	uint64_t give_up = 0;
	int w;

	for (;;) {
		uint64_t now = gc_now_ns();

		if (!gc_handle_valid(h))
			return h->h_own != INT_MIN ? h->h_own : GC_ORPHAN;
		if (t->t_state == T_RUNNING) {
			struct gc_txn_view tv;
			struct gc_decision dec;

			if (d->j_committing != GC_NONE) {
				struct gc_txn *c = &d->j_txns[RING_IX(d->j_committing)];

				if (gc_domain_is_segment(d) && now >= c->t_close_ns + give_up_ns(d)) {
					txn_detach(d, c);
					continue;
				}
				w = handle_wait(h, t->t_leader == h->h_tid, 0);
			} else if (t->t_deadline_ns && now >= t->t_deadline_ns) {
				txn_close(d, t, GC_CLOSE_TIMEOUT, now);
				continue;
			} else {
				if (!t->t_leader) {
					t->t_leader = h->h_tid;
					t->t_leader_pid = h->h_pid;
				}
				if (t->t_leader != h->h_tid && gc_domain_is_segment(d) && !t->t_deadline_ns &&
				    now >= t->t_lead_ns + give_up_ns(d)) {
					/* a live leader that never decides */
					t->t_leader = h->h_tid;
					t->t_leader_pid = h->h_pid;
					continue;
				}
				if (t->t_leader != h->h_tid) {
					w = handle_wait(h, false, t->t_deadline_ns);
				} else {
					tv.tv_handles = t->t_handles;
					tv.tv_start_ns = t->t_start_ns;
					tv.tv_free_ns = t->t_lead_ns;
					tv.tv_leader_new_writer = t->t_leader_new_writer;
					tv.tv_leader = h->h_tid;
					dec = gc_policy_decide(&d->j_policy, pc, &tv, now);
					if (dec.d_close == GC_CLOSE_NONE && forget_gone(d, now))
						dec = gc_policy_decide(&d->j_policy, pc, &tv, now);
					if (dec.d_close != GC_CLOSE_NONE) {
						txn_close(d, t, dec.d_close, now);
						continue;
					}
					t->t_want = dec.d_count;
					t->t_deadline_ns = dec.d_deadline_ns;
					w = handle_wait(h, true, dec.d_deadline_ns);
					if (w == 1)
						gc_policy_wait_overshoot(&d->j_policy,
									 dec.d_deadline_ns,
									 gc_now_ns());
				}
			}
		} else if (s->is_flags & IS_DONE) {
			return gc_slot_result(t, s);
		} else if (!(s->is_flags & IS_CLAIMED)) {
			if (!gc_commit_owner_call(h, s, ino))
				return -ENOLCK;
			continue;
		} else {
			/* Someone else's real call: a live but silent owner is
			 * given up on after a long bound; we then do our own. */
			if (!give_up) {
				give_up = now + give_up_ns(d);
			} else if (now >= give_up) {
				txn_detach(d, t);
				gc_hent_abandon(d, t, h->h_ent);
				h->h_done = true;
				return GC_ORPHAN;
			}
			w = handle_wait(h, false, 0);
		}
		if (w < 0)
			return -ENOLCK;
	}
}

/* Handles that lost the lock in mid-protocol (a peer stopped holding it)
 * are still entered in their transaction: they are taken out by the next
 * request of this process that gets the lock, so ring slots do not leak. */
#define GC_UNDO_MAX 32
static struct gc_undo {
	uint32_t u_state;	/* 0 free, 1 being filled or run, 2 waiting */
	struct gc_handle u_h;
} gc_undos[GC_UNDO_MAX] GC_LARGE;
/* How many wait (state 2): every request that takes the lock asks, and
 * the table's page is not read (a fault) while there are none. */
GC_START static int undos_waiting;

static void undo_defer(const struct gc_handle *h)
{
	int i;

	for (i = 0; i < GC_UNDO_MAX; i++) {
		uint32_t f = 0;

		if (__atomic_compare_exchange_n(&gc_undos[i].u_state, &f, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			gc_undos[i].u_h = *h;
			__atomic_store_n(&gc_undos[i].u_state, 2, __ATOMIC_RELEASE);
			__atomic_fetch_add(&undos_waiting, 1, __ATOMIC_RELEASE);
			return;
		}
	}
	/* table full: that slot stays taken until its transaction is reset */
}

/* With @d's j_lock held: undo what handles of this process left in @d. */
void gc_undo_run(struct gc_domain *d)
{
	int i;

	if (!__atomic_load_n(&undos_waiting, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < GC_UNDO_MAX; i++) {
		struct gc_handle *h = &gc_undos[i].u_h;
		uint32_t w = 2;

		if (__atomic_load_n(&gc_undos[i].u_state, __ATOMIC_ACQUIRE) != 2 ||
		    h->h_dom != d ||
		    !__atomic_compare_exchange_n(&gc_undos[i].u_state, &w, 1, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		if (gc_handle_valid(h)) {
			struct gc_islot *s = &h->h_txn->t_islots[(uint32_t)h->h_slot %
								GC_TXN_INODES];

			/* a claim it made and never completed is released */
			if ((s->is_flags & (IS_CLAIMED | IS_DONE)) == IS_CLAIMED &&
			    s->is_owner == h->h_tid && s->is_owner_pid == h->h_pid) {
				s->is_flags &= ~IS_CLAIMED;
				s->is_owner = 0;
			}
			gc_hent_abandon(d, h->h_txn, h->h_ent);
		}
		__atomic_store_n(&gc_undos[i].u_state, 0, __ATOMIC_RELEASE);
		__atomic_fetch_sub(&undos_waiting, 1, __ATOMIC_RELAXED);
	}
}

/* Runs the protocol for a joined handle and collects its result; called
 * with j_lock held, returns with it dropped. Sets *owner when this handle
 * issued the real call itself. */
int gc_handle_collect(struct gc_handle *h, uint64_t ino, bool *owner)
{
	struct gc_txn *t = h->h_txn;
	int r;

	pthread_cleanup_push(handle_cancelled, h);
	r = handle_run(h, ino);
	pthread_cleanup_pop(0);
	if (r == -ENOLCK) {
		/* the lock is unusable now; a poisoned domain is never used
		 * again, so only a live one needs undoing later */
		if (!h->h_done && !gc_domain_poisoned(h->h_dom))
			undo_defer(h);
		return GC_ORPHAN;
	}
	*owner = h->h_own != INT_MIN;
	if (!h->h_done && gc_handle_valid(h)) {
		h->h_close_ns = t->t_close_ns;
		t->t_hents[h->h_ent].he_used = 0;
		if (!--t->t_refs && t->t_state == T_DONE)
			t->t_state = T_FREE;
	}
	h->h_done = true;
	gc_txn_assert(h->h_dom);
	gc_domain_unlock(h->h_dom);
	return r;
}

/* No transaction of the ring free: some may be kept only by the handles of
 * processes that died before they collected (SIGKILL). Only a waiter looks
 * for dead peers, and the requests that find the ring full make direct
 * calls, which wait on nothing: without this look, a domain with a live
 * member never grouped again. At most every reap interval per process (a
 * system call per handle), and only in a segment. */
static bool ring_reap_due(const struct gc_domain *d, uint64_t now)
{
	static uint64_t last_ns;
	uint64_t last = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);

	if (!gc_domain_is_segment(d) || (last && now - last < gc_peers_reap_interval(d)))
		return false;
	return __atomic_compare_exchange_n(&last_ns, &last, now, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

/* Joins the running transaction (beginning one if none runs), with j_lock
 * held. false: no room (ring, inode slots or handle entries exhausted), so
 * the request must not wait. */
bool gc_handle_join(struct gc_handle *h, uint64_t ino, bool datasync, bool dir, bool keep,
		    uint64_t now)
{
	struct gc_domain *d = h->h_dom;
	struct gc_txn *t;
	struct gc_hent *he;
	bool new_writer;
	int slot, ent;

	new_writer = gc_policy_arrive(&d->j_policy, &gc_cfg.c_policy, h->h_tid, now);
	t = d->j_running != GC_NONE ? &d->j_txns[RING_IX(d->j_running)] : NULL;
	if (t && t->t_state != T_RUNNING)
		return false; /* never join a transaction that is not open */
	if (!t && !(t = txn_begin(d, now, h, new_writer)) && ring_reap_due(d, now)) {
		gc_peers_reap(d);
		t = txn_begin(d, now, h, new_writer);
	}
	slot = t ? islot_get(t, ino) : GC_NONE;
	ent = slot != GC_NONE ? hent_get(t) : GC_NONE;
	if (ent == GC_NONE) {
		if (t && !t->t_handles && t->t_state == T_RUNNING) {
			t->t_state = T_FREE;
			d->j_running = GC_NONE;
		}
		return false;
	}
	h->h_txn = t;
	h->h_seq = t->t_seq;
	h->h_gen = d->j_gen;
	h->h_slot = slot;
	h->h_ent = ent;
	he = &t->t_hents[ent];
	he->he_pid = h->h_pid;
	he->he_tid = h->h_tid;
	he->he_slot = (uint32_t)slot;
	he->he_used = 1;
	/* a request that shares nothing: a file with nothing to write, alone
	 * on it (a second request shares its real call) */
	if (h->h_clean && !t->t_islots[slot].is_handles) {
		t->t_islots[slot].is_flags |= IS_CLEAN;
		t->t_clean++;
	} else if (t->t_islots[slot].is_flags & IS_CLEAN) {
		t->t_islots[slot].is_flags &= ~(uint32_t)IS_CLEAN;
		t->t_clean -= t->t_clean ? 1 : 0;
	}
	t->t_islots[slot].is_handles++;
	if (!datasync)
		t->t_islots[slot].is_flags |= IS_FSYNC;
	if (dir)
		t->t_islots[slot].is_flags |= IS_DIR;
	if (keep)
		t->t_islots[slot].is_flags |= IS_KEEP;
	t->t_handles++;
	t->t_joined++;
	t->t_refs++;
	if (t->t_want && t->t_handles >= t->t_want && d->j_committing == GC_NONE)
		txn_close(d, t, GC_CLOSE_COUNT, now);
	gc_txn_assert(d);
	return true;
}
