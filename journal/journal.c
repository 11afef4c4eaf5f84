/* The journal: the protocol that turns many sync requests into one real call
 * per inode. Vocabulary after fs/jbd2: a request is a handle; a domain (j_)
 * holds a small ring of transactions (t_), each with inode slots (is_) and
 * handle entries (he_). Domains may be shared by processes (domain.c), so
 * every wait is bounded and a dead peer's part is taken over by survivors. */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fdtable.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "policy/policy.h"

#define GC_MAX_DOMAINS 64
/* Waiters look for dead peers at least this often... */
#define GC_REAP_MIN_NS (10 * GC_NSEC_PER_MSEC)
#define GC_REAP_MAX_NS (200 * GC_NSEC_PER_MSEC)
/* ...and give up on a live but silent owner after this long. */
#define GC_GIVE_UP_MIN_NS (2 * GC_NSEC_PER_SEC)

struct gc_handle {
	struct gc_domain *h_dom;
	struct gc_txn *h_txn;
	uint64_t h_seq;		/* t_seq when joined */
	uint32_t h_gen;		/* j_gen when joined */
	int h_slot;
	int h_ent;
	int h_fd;
	int32_t h_tid;
	int32_t h_pid;
	bool h_done;		/* left the transaction: nothing to undo */
	int h_own;		/* own real call's result when this handle was owner */
};

/* Per-process table of the domains in use. */
static struct {
	struct gc_domain *dr_dom;
	uint64_t dr_dev;
	uint32_t dr_joined;	/* this process is in the member table */
	uint32_t dr_direct;	/* a filesystem whose fsync may not cover the inode */
} gc_domains[GC_MAX_DOMAINS];
static int gc_ndomains;
/* Lock order: gc_domains_lock, then a domain's j_lock. */
static pthread_mutex_t gc_domains_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- domains ---------------------------------------------------------- */

/* Filesystems known to make a whole inode durable on fsync of any of its
 * descriptors. Elsewhere (FUSE passes the caller's file handle, NFS and
 * CIFS sync what that open file wrote) one call may not cover another
 * descriptor's data, so nothing is shared. */
static bool fs_syncs_inode(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:	 /* ext2/3/4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0xF2F52010: /* f2fs */
	case 0x01021994: /* tmpfs */
		return true;
	}
	return false;
}

/* A domain this process may use for @dev, or NULL (then: a direct call).
 * Never blocks on another process for long: the shared lock gives up. */
static struct gc_domain *domain_usable(int i)
{
	struct gc_domain *d = gc_domains[i].dr_dom;

	if (gc_domains[i].dr_direct || !__atomic_load_n(&gc_domains[i].dr_joined,
							__ATOMIC_ACQUIRE))
		return NULL;
	return gc_domain_poisoned(d) ? NULL : d;
}

/* Takes gc_domains_lock, then (to join) the domain's j_lock, for the first
 * use of @dev by this process; @fd is a descriptor on it. */
static struct gc_domain *domain_get(uint64_t dev, int fd)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);
	struct gc_domain *d = NULL;
	const char *why = NULL;

	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev && (gc_domains[i].dr_direct ||
						    domain_usable(i)))
			return domain_usable(i);

	pthread_mutex_lock(&gc_domains_lock);
	n = gc_ndomains;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev)
			break;
	if (i < n) {
		d = gc_domains[i].dr_dom;
		if (gc_domain_poisoned(d)) {
			/* left for good; its mapping stays, threads may be in it */
			d = gc_domain_private(dev);
			if (d) {
				gc_domains[i].dr_dom = d;
				__atomic_store_n(&gc_domains[i].dr_joined, 1, __ATOMIC_RELEASE);
			}
		}
	} else if (n < GC_MAX_DOMAINS) {
		bool direct = !fs_syncs_inode(fd);

		if (!direct && gc_cfg.c_share == GC_SHARE_USER) {
			d = gc_domain_attach(dev, &why);
			if (!d)
				gc_log(GC_LOG_WARN,
				       "device %llx: no shared domain (%s); grouping within this process only",
				       (unsigned long long)dev, why);
		}
		if (!d)
			d = gc_domain_private(dev);
		if (d) {
			gc_domains[n].dr_dom = d;
			gc_domains[n].dr_dev = dev;
			gc_domains[n].dr_direct = direct;
			__atomic_store_n(&gc_ndomains, n + 1, __ATOMIC_RELEASE);
		}
	}
	/* Membership is per process: after fork the child joins on first use. */
	if (d && !__atomic_load_n(&gc_domains[i].dr_joined, __ATOMIC_RELAXED)) {
		int ok = 0;

		if (!gc_domain_is_segment(d)) {
			ok = 1;
		} else if (gc_domain_lock(d)) {
			ok = gc_domain_join(d, gc_getpid()) ? 1 : -1;
			gc_domain_unlock(d);
		}
		if (ok < 0) {
			/* member table full: no retry on every request */
			gc_log(GC_LOG_WARN,
			       "device %llx: shared domain full; grouping within this process only",
			       (unsigned long long)dev);
			d = gc_domain_private(dev);
			ok = d != NULL;
			if (d)
				gc_domains[i].dr_dom = d;
		}
		if (ok > 0)
			__atomic_store_n(&gc_domains[i].dr_joined, 1, __ATOMIC_RELEASE);
	}
	d = i < gc_ndomains ? domain_usable(i) : NULL;
	pthread_mutex_unlock(&gc_domains_lock);
	return d;
}

/* Indices read from a domain were checked after the lock was taken
 * (gc_domain_check), but a peer may write anything at any time: every use
 * also stays inside its array. */
#define RING_IX(i) ((uint32_t)(i) % GC_TXN_RING)

/* ---- real calls ------------------------------------------------------- */

/* One real fsync/fdatasync, counted. Returns 0 or -errno. */
static int real_sync(int fd, bool datasync)
{
	if (datasync)
		gc_stat_inc(real_fdatasync);
	else
		gc_stat_inc(real_fsync);
	return gc_sys_sync(fd, datasync);
}



/* Reports (and marks reported) a writeback error @fd's open file description
 * has not seen yet, without waiting for any writeback: sync_file_range with
 * WAIT_AFTER checks the description's error cursor whatever the range, and
 * a range past any page waits for nothing. Waiting here would make a
 * request that already has its result queue behind the next commit. */
static int pending_error(int fd)
{
	int r = gc_sys_sfr(fd, INT64_MAX - 1, 1, SYNC_FILE_RANGE_WAIT_AFTER);

	if (r == -EINVAL) /* a kernel that refuses the range: wait for all */
		r = gc_sys_sfr(fd, 0, 0, SYNC_FILE_RANGE_WAIT_AFTER);
	return r;
}

static int direct(int fd, bool datasync)
{
	gc_stat_inc(direct);
	return real_sync(fd, datasync);
}

/* ---- transactions (all called with j_lock held) ----------------------- */

static struct gc_wq *txn_wq(struct gc_domain *d, const struct gc_txn *t)
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
	uint32_t i;

	for (i = 0; i < t->t_inodes; i++)
		if (t->t_islots[i].is_ino == ino)
			return (int)i;
	if (t->t_inodes == GC_TXN_INODES)
		return GC_NONE;
	memset(&t->t_islots[i], 0, sizeof(t->t_islots[i]));
	t->t_islots[i].is_ino = ino;
	t->t_islots[i].is_err = GC_ORPHAN; /* until a real call publishes one */
	t->t_inodes++;
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

static void txn_commit_end(struct gc_domain *d, struct gc_txn *t, uint64_t now)
{
	struct gc_commit_sample cs = {
		.cs_handles = t->t_joined, .cs_inodes = t->t_inodes,
		.cs_close = (enum gc_close_reason)t->t_close,
		.cs_start_ns = t->t_start_ns, .cs_close_ns = t->t_close_ns,
		.cs_end_ns = now,
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
	if (gc_cfg.c_log >= GC_LOG_TRACE)
		gc_log(GC_LOG_TRACE,
		       "device %llx: commit %llu: requests=%u files=%u closed=%s open_us=%llu commit_us=%llu%s",
		       (unsigned long long)d->j_dev, (unsigned long long)t->t_seq, t->t_joined,
		       t->t_inodes, gc_close_reason_name((enum gc_close_reason)t->t_close),
		       (unsigned long long)((t->t_close_ns - t->t_start_ns) / GC_NSEC_PER_USEC),
		       (unsigned long long)((now - t->t_close_ns) / GC_NSEC_PER_USEC),
		       t->t_detached ? " stalled" : "");
	gc_stat_inc(commits);
	gc_stat_add(batched, t->t_joined);
	gc_stat_add(commit_ns, now - t->t_close_ns);
	gc_stat_add(open_ns, t->t_close_ns - t->t_start_ns);
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
 * remaining handles still collect whatever result arrives, or give up. */
static void txn_detach(struct gc_domain *d, struct gc_txn *t)
{
	if (t->t_detached)
		return;
	t->t_detached = 1;
	gc_stat_inc(stalled);
	if (d->j_committing == (int32_t)(t - d->j_txns)) {
		d->j_committing = GC_NONE;
		if (d->j_running != GC_NONE)
			d->j_txns[RING_IX(d->j_running)].t_lead_ns = gc_now_ns();
	}
	gc_domain_wake_all(d);
}

static void txn_close(struct gc_domain *d, struct gc_txn *t, enum gc_close_reason why,
		      uint64_t now)
{
	uint32_t i, live = 0;

	t->t_state = T_COMMITTING;
	t->t_close = why;
	/* @now was read before the lock: a closer that read it before the
	 * transaction's first joiner did must not close it before it began */
	t->t_close_ns = now > t->t_start_ns ? now : t->t_start_ns;
	for (i = 0; i < t->t_inodes; i++) {
		struct gc_islot *s = &t->t_islots[i];

		if (s->is_handles)
			live++;
		else
			s->is_flags |= IS_DONE; /* every handle of it left */
	}
	t->t_pending = live;
	t->t_live = live;
	t->t_claimed = 0;
	d->j_committing = (int32_t)(t - d->j_txns);
	d->j_running = GC_NONE;
	__atomic_store_n(&d->j_multi, live > 1, __ATOMIC_RELAXED);
	if (why == GC_CLOSE_COUNT)
		gc_stat_inc(close_count);
	else if (why == GC_CLOSE_TIMEOUT)
		gc_stat_inc(close_timeout);
	else
		gc_stat_inc(close_immediate);
	if (!live)
		txn_commit_end(d, t, now);
	/* its handles become owners or wait for one; its leader may be asleep
	 * on the leader's queue when a joiner closed it by count */
	gc_domain_wake(d, txn_wq(d, t));
	gc_domain_wake(d, &d->j_wq_lead);
}

/* Handle entry @e leaves @t without its result: cancelled, or its process
 * died. A slot nobody is left to sync for is settled here. */
static void hent_abandon(struct gc_domain *d, struct gc_txn *t, int e)
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
			txn_commit_end(d, t, gc_now_ns());
	}
	if (t->t_state == T_DONE && !t->t_refs)
		t->t_state = T_FREE;
	gc_domain_wake_all(d);
}

/* Finds the parts of dead peers in every transaction and undoes them: their
 * handles leave, their claims on slots are released for a survivor to make
 * the real call, a dead leader's place becomes vacant. */
static void reap(struct gc_domain *d)
{
	bool changed = false;
	int i, e;
	uint32_t k;

	for (i = 0; i < GC_TXN_RING; i++) {
		struct gc_txn *t = &d->j_txns[i];

		if (t->t_state == T_FREE)
			continue;
		for (e = 0; e < GC_TXN_HANDLES && t->t_state != T_FREE; e++) {
			struct gc_hent *he = &t->t_hents[e];

			if (he->he_used && !gc_alive(he->he_pid, he->he_tid))
				hent_abandon(d, t, e); /* wakes everyone */
		}
		if (t->t_state == T_RUNNING && t->t_leader &&
		    !gc_alive(t->t_leader_pid, t->t_leader)) {
			t->t_leader = 0;
			changed = true;
		}
		if (t->t_state != T_COMMITTING)
			continue;
		for (k = 0; k < t->t_inodes; k++) {
			struct gc_islot *s = &t->t_islots[k];

			if ((s->is_flags & (IS_CLAIMED | IS_DONE)) != IS_CLAIMED ||
			    gc_alive(s->is_owner_pid, s->is_owner))
				continue;
			s->is_flags &= ~IS_CLAIMED;
			s->is_owner = 0;
			changed = true;
			if (!s->is_handles) {
				s->is_flags |= IS_DONE;
				s->is_err = GC_ORPHAN;
				if (!--t->t_pending)
					txn_commit_end(d, t, gc_now_ns());
			}
		}
	}
	if (changed)
		gc_domain_wake_all(d);
}

/* Is the handle still where it joined: same generation, same transaction,
 * and its entry still its own (a peer may have taken it for dead)? */
static bool handle_valid(const struct gc_handle *h)
{
	const struct gc_hent *he = &h->h_txn->t_hents[(uint32_t)h->h_ent % GC_TXN_HANDLES];

	return h->h_dom->j_gen == h->h_gen && h->h_txn->t_seq == h->h_seq && he->he_used &&
	       he->he_pid == h->h_pid && he->he_tid == h->h_tid;
}

/* Errors that belong to the inode, and so to every request the call
 * covered. Any other error (EBADF of an O_PATH descriptor, EINVAL, EINTR,
 * ...) is the owner's descriptor's own: the others make their own call. */
static bool shared_error(int r)
{
	return r == 0 || r == -EIO || r == -ENOSPC || r == -EDQUOT || r == -EROFS;
}

/* The slot's published result, or GC_ORPHAN when nobody produced one. */
static int slot_result(const struct gc_txn *t, const struct gc_islot *s)
{
	int32_t r = s->is_err;

	if (r == GC_ORPHAN || !shared_error(r) ||
	    s->is_seal != gc_result_seal(t->t_seq, s->is_ino, r))
		return GC_ORPHAN;
	return r;
}

static void handle_cancelled(void *arg)
{
	struct gc_handle *h = arg;

	if (!h->h_done && gc_domain_lock(h->h_dom)) {
		if (handle_valid(h))
			hent_abandon(h->h_dom, h->h_txn, h->h_ent);
		gc_domain_unlock(h->h_dom);
	}
	gc_depth--;
}

/* The real calls of a multi-inode transaction go to the kernel together, so
 * they all find the filesystem's journal commit before it has flushed and
 * none needs a flush of its own afterwards. Each owner waits, without the
 * lock, until every live slot has an owner, for a short bounded time.
 *
 * The window is short: ext4 starts its commit at the first fsync, and an
 * fsync that arrives once the commit has written its journal blocks (about
 * 0.1-0.2 ms later on a loop device) pays one more cache flush, during which
 * the device serves no one. Owners asleep on a futex woke one by one on two
 * cores, their fsyncs spread over 0.15-0.3 ms, and 16 processes on 16 files
 * lost a flush every few rounds. Waiting owners therefore stay runnable,
 * yielding the CPU to those still on their way: the release finds them
 * ready, and the spread halves. */
#define GC_RELEASE_MAX_NS (1 * GC_NSEC_PER_MSEC)

static void release_together(struct gc_handle *h)
{
	struct gc_txn *t = h->h_txn;
	uint32_t live = t->t_live, n = __atomic_add_fetch(&t->t_claimed, 1, __ATOMIC_ACQ_REL);
	uint64_t until;

	if (live < 2 || n >= live)
		return;
	until = gc_now_ns() + GC_RELEASE_MAX_NS;
	while (n < live && gc_now_ns() < until) {
		sched_yield();
		n = __atomic_load_n(&t->t_claimed, __ATOMIC_ACQUIRE);
	}
}

/* Called with j_lock held, as the slot's owner: drops the lock for the real
 * call and takes it again. Cancellation stays off so the result is always
 * published. Returns false if the lock could not be taken again. */
static bool do_owner_call(struct gc_handle *h, struct gc_islot *s, uint64_t ino)
{
	bool datasync = !(s->is_flags & IS_FSYNC);
	struct stat st;
	int r, pre, oldstate;

	s->is_flags |= IS_CLAIMED;
	s->is_owner = h->h_tid;
	s->is_owner_pid = h->h_pid;
	gc_domain_unlock(h->h_dom);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	/* A writeback error this descriptor has not reported yet belongs to
	 * its own request only: collect it first, so the shared result carries
	 * just what happens during the real call (each open file description
	 * sees an error once, as with the bare kernel). */
	pre = pending_error(h->h_fd);
	release_together(h);
	r = real_sync(h->h_fd, datasync);
	h->h_own = pre < 0 ? pre : r;
	/* The program may have dup2()'d another file over this descriptor
	 * meanwhile: then our call covered some other inode, not this one. */
	if (fstat(h->h_fd, &st) < 0 || (uint64_t)st.st_ino != ino)
		r = GC_ORPHAN;
	pthread_setcancelstate(oldstate, NULL);
	if (!gc_domain_lock(h->h_dom))
		return false;
	if (!handle_valid(h))
		return true; /* state was thrown away meanwhile */
	if (!shared_error(r))
		r = GC_ORPHAN;
	s->is_err = r;
	s->is_seal = gc_result_seal(h->h_txn->t_seq, ino, r);
	s->is_flags |= IS_DONE;
	if (!--h->h_txn->t_pending)
		txn_commit_end(h->h_dom, h->h_txn, gc_now_ns());
	/* the other handles of this inode wait on the transaction's queue */
	if (s->is_handles > 1)
		gc_domain_wake(h->h_dom, txn_wq(h->h_dom, h->h_txn));
	return true;
}

static uint64_t reap_interval(const struct gc_domain *d)
{
	uint64_t r = 4 * d->j_policy.ps_commit_ns;

	return r < GC_REAP_MIN_NS ? GC_REAP_MIN_NS : r > GC_REAP_MAX_NS ? GC_REAP_MAX_NS : r;
}

/* Sleeps until woken, @deadline, or the next look for dead peers: on the
 * leader's queue when @lead, else on the transaction's. Returns 1 on
 * reaching @deadline, 0 otherwise, -1 if the lock is lost. */
static int handle_wait(struct gc_handle *h, bool lead, uint64_t deadline)
{
	struct gc_domain *d = h->h_dom;
	struct gc_wq *q = lead ? &d->j_wq_lead : txn_wq(d, h->h_txn);
	uint64_t now = gc_now_ns(), reap_at = now + reap_interval(d);
	int r;

	if (!gc_domain_is_segment(d))
		return gc_domain_wait(d, q, deadline);
	r = gc_domain_wait(d, q, deadline && deadline < reap_at ? deadline : reap_at);
	if (r == 1 && (!deadline || deadline > gc_now_ns())) {
		if (h->h_dom->j_gen == h->h_gen)
			reap(d);
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

		if (!handle_valid(h))
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
			return slot_result(t, s);
		} else if (!(s->is_flags & IS_CLAIMED)) {
			if (!do_owner_call(h, s, ino))
				return -ENOLCK;
			continue;
		} else {
			/* Someone else's real call: a live but silent owner is
			 * given up on after a long bound; we then do our own. */
			if (!give_up) {
				give_up = now + give_up_ns(d);
			} else if (now >= give_up) {
				txn_detach(d, t);
				hent_abandon(d, t, h->h_ent);
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
} gc_undos[GC_UNDO_MAX];

static void undo_defer(const struct gc_handle *h)
{
	int i;

	for (i = 0; i < GC_UNDO_MAX; i++) {
		uint32_t f = 0;

		if (__atomic_compare_exchange_n(&gc_undos[i].u_state, &f, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			gc_undos[i].u_h = *h;
			__atomic_store_n(&gc_undos[i].u_state, 2, __ATOMIC_RELEASE);
			return;
		}
	}
	/* table full: that slot stays taken until its transaction is reset */
}

/* With @d's j_lock held: undo what handles of this process left in @d. */
static void undo_run(struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_UNDO_MAX; i++) {
		struct gc_handle *h = &gc_undos[i].u_h;
		uint32_t w = 2;

		if (__atomic_load_n(&gc_undos[i].u_state, __ATOMIC_ACQUIRE) != 2 ||
		    h->h_dom != d ||
		    !__atomic_compare_exchange_n(&gc_undos[i].u_state, &w, 1, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		if (handle_valid(h)) {
			struct gc_islot *s = &h->h_txn->t_islots[(uint32_t)h->h_slot %
								GC_TXN_INODES];

			/* a claim it made and never completed is released */
			if ((s->is_flags & (IS_CLAIMED | IS_DONE)) == IS_CLAIMED &&
			    s->is_owner == h->h_tid && s->is_owner_pid == h->h_pid) {
				s->is_flags &= ~IS_CLAIMED;
				s->is_owner = 0;
			}
			hent_abandon(d, h->h_txn, h->h_ent);
		}
		__atomic_store_n(&gc_undos[i].u_state, 0, __ATOMIC_RELEASE);
	}
}

/* Runs the protocol for a joined handle and collects its result; called
 * with j_lock held, returns with it dropped. Sets *owner when this handle
 * issued the real call itself. */
static int handle_collect(struct gc_handle *h, uint64_t ino, bool *owner)
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
	if (!h->h_done && handle_valid(h)) {
		t->t_hents[h->h_ent].he_used = 0;
		if (!--t->t_refs && t->t_state == T_DONE)
			t->t_state = T_FREE;
	}
	h->h_done = true;
	gc_domain_unlock(h->h_dom);
	return r;
}

/* An already-known, usable domain for @dev, or NULL; never creates one. */
static struct gc_domain *domain_find(uint64_t dev)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);

	if (!dev)
		return NULL;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev)
			return domain_usable(i);
	return NULL;
}

/* Ends the controller's epoch when due, then: should this request be a
 * direct real call? */
static bool domain_direct(struct gc_domain *d, uint64_t now)
{
	struct gc_policy_state *ps = &d->j_policy;

	if (gc_policy_epoch_due(ps, &gc_cfg.c_policy, now) && gc_domain_lock(d)) {
		if (gc_policy_epoch_end(ps, &gc_cfg.c_policy, now)) {
			/* a leader waiting for the threads now sent to direct
			 * calls decides again, and closes at once */
			if (gc_policy_bypass(ps, &gc_cfg.c_policy, now))
				gc_domain_wake(d, &d->j_wq_lead);
			gc_log(GC_LOG_DEBUG,
			       "device %llx: %s calls now (t=%llu ms; measured grouped %llu/s %llu us, direct %llu/s %llu us)",
			       (unsigned long long)d->j_dev,
			       gc_policy_bypass(ps, &gc_cfg.c_policy, now) ? "direct" : "grouped",
			       (unsigned long long)(now / GC_NSEC_PER_MSEC),
			       (unsigned long long)(ps->ps_ab_rate[GC_AB_GROUP] / 1000),
			       (unsigned long long)(ps->ps_ab_lat[GC_AB_GROUP] / 1000),
			       (unsigned long long)(ps->ps_ab_rate[GC_AB_DIRECT] / 1000),
			       (unsigned long long)(ps->ps_ab_lat[GC_AB_DIRECT] / 1000));
		}
		gc_domain_unlock(d);
	}
	return gc_policy_bypass(ps, &gc_cfg.c_policy, now);
}

/* While on direct calls, a thread refreshes its place among the domain's
 * sync threads at most this often: well inside the policy's smallest active
 * window (1 ms), and no shared cache line written on every request. */
#define GC_ARRIVE_EVERY_NS (250 * GC_NSEC_PER_USEC)
static __thread uint64_t gc_arrived_ns __attribute__((tls_model("initial-exec")));

/* A direct real call while the controller measures direct calls. */
static int direct_accounted(struct gc_domain *d, int fd, bool datasync, uint64_t start)
{
	int32_t tid = gc_gettid();
	int r;

	/* Keep the count of sync threads current for when grouping resumes;
	 * not worth waiting for the lock. */
	if (start - gc_arrived_ns >= GC_ARRIVE_EVERY_NS && gc_domain_trylock(d)) {
		gc_policy_arrive(&d->j_policy, &gc_cfg.c_policy, tid, start);
		gc_domain_unlock(d);
		gc_arrived_ns = start;
	}
	gc_stat_inc(bypass);
	r = direct(fd, datasync);
	gc_policy_account(&d->j_policy, tid, start, gc_now_ns());
	return r;
}

/* Joins the running transaction (beginning one if none runs), with j_lock
 * held. false: no room (ring, inode slots or handle entries exhausted), so
 * the request must not wait. */
static bool handle_join(struct gc_handle *h, uint64_t ino, bool datasync, uint64_t now)
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
	if (!t)
		t = txn_begin(d, now, h, new_writer);
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
	t->t_islots[slot].is_handles++;
	if (!datasync)
		t->t_islots[slot].is_flags |= IS_FSYNC;
	t->t_handles++;
	t->t_joined++;
	t->t_refs++;
	if (t->t_want && t->t_handles >= t->t_want && d->j_committing == GC_NONE)
		txn_close(d, t, GC_CLOSE_COUNT, now);
	return true;
}

static void count_request(enum gc_origin origin)
{
	switch (origin) {
	case GC_FROM_FSYNC:
		gc_stat_inc(req_fsync);
		break;
	case GC_FROM_FDATASYNC:
		gc_stat_inc(req_fdatasync);
		break;
	default:
		gc_stat_inc(req_osync);
	}
}

int gc_sync_direct(int fd, bool datasync, enum gc_origin origin)
{
	count_request(origin);
	return direct(fd, datasync);
}

int gc_sync(int fd, bool datasync, enum gc_origin origin)
{
	struct gc_handle h = { .h_fd = fd, .h_own = INT_MIN };
	struct gc_domain *d;
	struct stat st;
	uint64_t now, start;
	bool owner = false;
	int r;

	count_request(origin);
	/* policy none: the cost of interposition alone, nothing more; a
	 * process made without atfork (_Fork, clone, vfork) shares or copied
	 * state that is not its own: it touches none of it */
	if (gc_cfg.c_policy.pc_kind == GC_POL_NONE || !gc_self())
		return direct(fd, datasync);
	/* While the controller has the domain on direct calls, skip fstat:
	 * with many threads on one file, that alone cost a fifth of the
	 * throughput on a fast disk. The device is only a hint here: a wrong
	 * one can only send a request to a direct real call. */
	start = gc_now_ns();
	d = domain_find(gc_fd_dev_hint(fd));
	if (d && domain_direct(d, start))
		return direct_accounted(d, fd, datasync, start);
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return direct(fd, datasync);
	gc_fd_hint_dev(fd, (uint64_t)st.st_dev);
	d = domain_get((uint64_t)st.st_dev, fd);
	if (!d)
		return direct(fd, datasync);
	now = gc_now_ns();
	if (domain_direct(d, now))
		return direct_accounted(d, fd, datasync, start);
	/* Multi-inode transactions: write our data back before joining, so the
	 * real calls released together only have to commit. A writeback error
	 * seen here belongs to this request. */
	if (gc_cfg.c_stage == GC_STAGE_ALWAYS ||
	    (gc_cfg.c_stage == GC_STAGE_AUTO && __atomic_load_n(&d->j_multi, __ATOMIC_RELAXED))) {
		gc_stat_inc(staged);
		r = gc_sys_sfr(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER);
		if (r < 0)
			return r;
		now = gc_now_ns();
	}

	h.h_dom = d;
	h.h_tid = gc_gettid();
	h.h_pid = gc_getpid();
	if (!gc_domain_lock(d))
		return direct(fd, datasync);
	undo_run(d);
	if (!handle_join(&h, (uint64_t)st.st_ino, datasync, now)) {
		gc_domain_unlock(d);
		return direct(fd, datasync);
	}
	r = handle_collect(&h, (uint64_t)st.st_ino, &owner);
	if (owner) {
		r = h.h_own; /* its own real call, and its own pending error */
	} else if (r == GC_ORPHAN) {
		r = direct(fd, datasync);
	} else {
		/* Writeback errors are reported once per open file description;
		 * the owner's call consumed them on its own. Collect any this
		 * descriptor has not seen yet, as its own fsync would have. */
		int e = pending_error(fd);

		if (!r && e < 0)
			r = e;
	}
	gc_policy_account(&d->j_policy, h.h_tid, start, gc_now_ns());
	return r;
}

/* ---- fork and exit ---------------------------------------------------- */

/* Takes gc_domains_lock and the j_lock of every private domain (shared ones
 * are not copied by fork, so they need no quiescing). */
void gc_journal_atfork_prepare(void)
{
	int i;

	/* a signal handler that syncs while we hold these goes direct */
	gc_depth++;
	pthread_mutex_lock(&gc_domains_lock);
	for (i = 0; i < gc_ndomains; i++)
		if (!gc_domain_is_segment(gc_domains[i].dr_dom))
			gc_domain_lock(gc_domains[i].dr_dom);
}

/* Drops what prepare took. */
void gc_journal_atfork_parent(void)
{
	int i;

	for (i = gc_ndomains - 1; i >= 0; i--)
		if (!gc_domain_is_segment(gc_domains[i].dr_dom))
			gc_domain_unlock(gc_domains[i].dr_dom);
	pthread_mutex_unlock(&gc_domains_lock);
	gc_depth--;
}

/* In the child only the forking thread exists. Private domains: transactions
 * in flight belong to the parent; keep what was learned about the device.
 * Shared domains: the same memory as the parent's; the child joins as a
 * member of its own on first use. Drops what prepare took. */
void gc_journal_atfork_child(void)
{
	int i;

	/* a child of unshare(CLONE_NEWPID) is in another pid namespace: the
	 * pids in its parent's segments mean nothing there */
	gc_pidns_forget();
	for (i = gc_ndomains - 1; i >= 0; i--) {
		struct gc_domain *d = gc_domains[i].dr_dom;

		if (gc_domain_is_segment(d)) {
			gc_domains[i].dr_joined = 0;
			if (d->j_pidns != gc_pidns())
				gc_domain_poison(d, "another pid namespace after fork");
			continue;
		}
		gc_domain_reset_txns(d);
		memset(&d->j_wq_lead, 0, sizeof(d->j_wq_lead));
		memset(d->j_wq_txn, 0, sizeof(d->j_wq_txn));
		d->j_policy.ps_recent_n = 0;
		gc_domain_unlock(d);
	}
	pthread_mutex_unlock(&gc_domains_lock);
	gc_depth--;
}

/* At exit: leave shared domains; the last member removes the segment. */
void gc_journal_exit(void)
{
	char path[128];
	int i;

	if (!gc_self())
		return; /* a child made without atfork: none of it is ours */
	for (i = 0; i < gc_ndomains; i++) {
		struct gc_domain *d = gc_domains[i].dr_dom;

		if (!gc_domain_is_segment(d) || !gc_domains[i].dr_joined || !gc_domain_lock(d))
			continue;
		if (gc_domain_leave(d, gc_getpid())) {
			gc_domain_path(path, sizeof(path), geteuid(), d->j_dev);
			syscall(SYS_unlink, path);
		}
		gc_domain_unlock(d);
	}
}
