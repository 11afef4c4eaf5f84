/* The journal: per-filesystem domains, their running and committing
 * transactions, and the protocol that turns many sync requests into one real
 * call per inode. Vocabulary after fs/jbd2: a request is a handle; a domain
 * (j_) holds a small ring of transactions (t_), each with inode slots (is_). */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "policy/policy.h"
#include "shim/shim.h"

#define GC_TXN_INODES 64
#define GC_TXN_RING 4
#define GC_MAX_DOMAINS 64
#define GC_NONE (-1)
/* Slot result meaning "no usable result: make your own real call". */
#define GC_ORPHAN INT32_MIN

enum { T_FREE, T_RUNNING, T_COMMITTING, T_DONE };
enum { IS_FSYNC = 1, IS_CLAIMED = 2, IS_DONE = 4 };

struct gc_islot {
	uint64_t is_ino;
	uint32_t is_handles;	/* handles of this inode still in the transaction */
	uint32_t is_flags;	/* IS_* */
	int32_t is_err;		/* 0, -errno, or GC_ORPHAN once IS_DONE */
	int32_t is_owner;	/* tid issuing the real call */
};

struct gc_txn {
	uint64_t t_seq;
	uint32_t t_state;
	uint32_t t_handles;	/* joined and not abandoned */
	uint32_t t_joined;	/* ever joined: the batch size */
	uint32_t t_inodes;
	uint32_t t_pending;	/* real calls not finished (COMMITTING) */
	uint32_t t_refs;	/* handles that have not collected their result */
	uint32_t t_want;	/* close as soon as this many joined; 0 = no count rule */
	uint32_t t_close;	/* enum gc_close_reason */
	int32_t t_leader;	/* tid that asks the policy; 0 = vacant */
	uint32_t t_leader_new_writer;
	uint64_t t_start_ns, t_deadline_ns, t_close_ns;
	struct gc_islot t_islots[GC_TXN_INODES];
};

/* Fixed layout, no pointers: the same struct can live in a shared segment. */
struct gc_domain {
	uint64_t j_dev;
	pthread_mutex_t j_lock;
	uint32_t j_futex;	/* bumped on every change waiters care about */
	uint32_t j_waiters;
	int32_t j_running;	/* ring index of the running transaction, or GC_NONE */
	int32_t j_committing;	/* ring index of the committing one, or GC_NONE */
	uint32_t j_multi;	/* the last commit had several inodes: stage first */
	uint32_t j_pad;
	uint64_t j_seq;
	struct gc_policy_state j_policy;
	struct gc_txn j_txns[GC_TXN_RING];
};

struct gc_handle {
	struct gc_domain *h_dom;
	struct gc_txn *h_txn;
	int h_slot;
	int h_fd;
	int32_t h_tid;
	bool h_datasync;
	bool h_done;		/* result collected: nothing to undo */
};

static struct gc_domain *gc_domains[GC_MAX_DOMAINS];
static uint64_t gc_domain_devs[GC_MAX_DOMAINS];
static int gc_ndomains;
static pthread_mutex_t gc_domains_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- locking and waiting ------------------------------------------------ */

static void dom_init(struct gc_domain *d, uint64_t dev)
{
	int i;

	memset(d, 0, sizeof(*d));
	d->j_dev = dev;
	pthread_mutex_init(&d->j_lock, NULL);
	d->j_running = d->j_committing = GC_NONE;
	gc_policy_init(&d->j_policy);
	for (i = 0; i < GC_TXN_RING; i++)
		d->j_txns[i].t_state = T_FREE;
}

/* Takes j_lock. */
static void dom_lock(struct gc_domain *d)
{
	pthread_mutex_lock(&d->j_lock);
}

/* Drops j_lock. */
static void dom_unlock(struct gc_domain *d)
{
	pthread_mutex_unlock(&d->j_lock);
}

/* Called with j_lock held: wakes every waiter of the domain. */
static void dom_wake(struct gc_domain *d)
{
	__atomic_add_fetch(&d->j_futex, 1, __ATOMIC_RELEASE);
	if (d->j_waiters)
		syscall(SYS_futex, &d->j_futex, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Called with j_lock held; drops it while sleeping and takes it again before
 * returning. Sleeps until woken or until @deadline (0: none). The sleep is a
 * cancellation point: a cancelled thread unwinds from inside it, without
 * j_lock, into the cleanup handler of gc_sync(). Returns true on timeout. */
static bool dom_wait(struct gc_domain *d, uint64_t deadline)
{
	uint32_t seq = d->j_futex;
	struct timespec ts, *tsp = NULL;
	int old, r;

	if (deadline) {
		ts.tv_sec = (time_t)(deadline / GC_NSEC_PER_SEC);
		ts.tv_nsec = (long)(deadline % GC_NSEC_PER_SEC);
		tsp = &ts;
	}
	d->j_waiters++;
	dom_unlock(d);
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	r = (int)syscall(SYS_futex, &d->j_futex, FUTEX_WAIT_BITSET_PRIVATE, seq, tsp,
			 NULL, FUTEX_BITSET_MATCH_ANY);
	pthread_setcanceltype(old, NULL);
	dom_lock(d);
	d->j_waiters--;
	return r < 0 && errno == ETIMEDOUT;
}

/* ---- domains ---------------------------------------------------------- */

static struct gc_domain *domain_get(uint64_t dev)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);
	struct gc_domain *d;

	for (i = 0; i < n; i++)
		if (gc_domain_devs[i] == dev)
			return gc_domains[i];

	pthread_mutex_lock(&gc_domains_lock);
	n = gc_ndomains;
	for (i = 0; i < n; i++)
		if (gc_domain_devs[i] == dev)
			break;
	if (i < n) {
		d = gc_domains[i];
	} else if (n == GC_MAX_DOMAINS) {
		d = NULL;
	} else {
		/* mmap, not malloc: the allocator may be the program's own
		 * and may call back into us. */
		d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (d == MAP_FAILED) {
			d = NULL;
		} else {
			dom_init(d, dev);
			gc_domains[n] = d;
			gc_domain_devs[n] = dev;
			__atomic_store_n(&gc_ndomains, n + 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&gc_domains_lock);
	return d;
}

/* ---- real calls ------------------------------------------------------- */

/* One real fsync/fdatasync, counted. Returns 0 or -errno. */
static int real_sync(int fd, bool datasync)
{
	int r;

	if (datasync) {
		gc_stat_inc(real_fdatasync);
		r = gc_real.fdatasync ? gc_real.fdatasync(fd) : (int)syscall(SYS_fdatasync, fd);
	} else {
		gc_stat_inc(real_fsync);
		r = gc_real.fsync ? gc_real.fsync(fd) : (int)syscall(SYS_fsync, fd);
	}
	return r < 0 ? -errno : 0;
}

static int real_sfr(int fd, unsigned int flags)
{
	int r = gc_real.sync_file_range ? gc_real.sync_file_range(fd, 0, 0, flags)
					: (int)syscall(SYS_sync_file_range, fd, 0, 0, flags);

	return r < 0 ? -errno : 0;
}

static int direct(int fd, bool datasync)
{
	gc_stat_inc(direct);
	return real_sync(fd, datasync);
}

/* ---- transactions (all called with j_lock held) ----------------------- */

static struct gc_txn *txn_begin(struct gc_domain *d, uint64_t now, int32_t tid,
				bool new_writer)
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
		t->t_leader = tid;
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
	t->t_inodes++;
	return (int)i;
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
	d->j_committing = GC_NONE;
	gc_policy_commit_done(&d->j_policy, &gc_cfg.c_policy, &cs);
	gc_stat_inc(commits);
	gc_stat_add(batched, t->t_joined);
	if (!t->t_refs)
		t->t_state = T_FREE;
}

static void txn_close(struct gc_domain *d, struct gc_txn *t, enum gc_close_reason why,
		      uint64_t now)
{
	uint32_t i, live = 0;

	t->t_state = T_COMMITTING;
	t->t_close = why;
	t->t_close_ns = now;
	for (i = 0; i < t->t_inodes; i++) {
		struct gc_islot *s = &t->t_islots[i];

		if (s->is_handles)
			live++;
		else
			s->is_flags |= IS_DONE; /* every handle of it left */
	}
	t->t_pending = live;
	d->j_committing = (int32_t)(t - d->j_txns);
	d->j_running = GC_NONE;
	d->j_multi = live > 1;
	switch (why) {
	case GC_CLOSE_COUNT:
		gc_stat_inc(close_count);
		break;
	case GC_CLOSE_TIMEOUT:
		gc_stat_inc(close_timeout);
		break;
	default:
		gc_stat_inc(close_immediate);
	}
	if (!live)
		txn_commit_end(d, t, now);
	dom_wake(d);
}

/* The handle leaves before collecting a result (cancellation). */
static void handle_abandon(struct gc_handle *h)
{
	struct gc_domain *d = h->h_dom;
	struct gc_txn *t = h->h_txn;
	struct gc_islot *s = &t->t_islots[h->h_slot];

	s->is_handles--;
	t->t_handles--;
	t->t_refs--;
	if (t->t_state == T_RUNNING) {
		if (t->t_leader == h->h_tid)
			t->t_leader = 0;
		if (!t->t_handles) {
			t->t_state = T_FREE;
			d->j_running = GC_NONE;
		}
	} else if (t->t_state == T_COMMITTING && !s->is_handles &&
		   !(s->is_flags & (IS_CLAIMED | IS_DONE))) {
		s->is_flags |= IS_DONE;
		if (!--t->t_pending)
			txn_commit_end(d, t, gc_now_ns());
	}
	if (t->t_state == T_DONE && !t->t_refs)
		t->t_state = T_FREE;
	dom_wake(d);
}

static void handle_cancelled(void *arg)
{
	struct gc_handle *h = arg;

	if (h->h_done)
		return;
	dom_lock(h->h_dom);
	handle_abandon(h);
	dom_unlock(h->h_dom);
	gc_depth--;
}

/* Called with j_lock held, as the slot's owner: drops the lock for the real
 * call and takes it again. Cancellation stays off so the result is always
 * published. */
static void do_owner_call(struct gc_handle *h, struct gc_islot *s, uint64_t ino)
{
	bool datasync = !(s->is_flags & IS_FSYNC);
	struct stat st;
	int r, oldstate;

	s->is_flags |= IS_CLAIMED;
	s->is_owner = h->h_tid;
	dom_unlock(h->h_dom);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
	r = real_sync(h->h_fd, datasync);
	/* The program may have dup2()'d another file over this descriptor
	 * meanwhile: then our call covered some other inode, not this one. */
	if (fstat(h->h_fd, &st) < 0 || (uint64_t)st.st_ino != ino)
		r = GC_ORPHAN;
	pthread_setcancelstate(oldstate, NULL);
	dom_lock(h->h_dom);
	s->is_err = r;
	s->is_flags |= IS_DONE;
	if (!--h->h_txn->t_pending)
		txn_commit_end(h->h_dom, h->h_txn, gc_now_ns());
	dom_wake(h->h_dom);
}

/* The protocol, with j_lock held on entry and exit. Returns the slot result. */
static int handle_run(struct gc_handle *h, uint64_t ino)
{
	struct gc_domain *d = h->h_dom;
	struct gc_txn *t = h->h_txn;
	struct gc_islot *s = &t->t_islots[h->h_slot];
	const struct gc_policy_cfg *pc = &gc_cfg.c_policy;

	for (;;) {
		uint64_t now = gc_now_ns();

		if (t->t_state == T_RUNNING) {
			struct gc_txn_view tv;
			struct gc_decision dec;

			if (d->j_committing != GC_NONE) {
				dom_wait(d, 0);
				continue;
			}
			if (t->t_deadline_ns && now >= t->t_deadline_ns) {
				txn_close(d, t, GC_CLOSE_TIMEOUT, now);
				continue;
			}
			if (!t->t_leader)
				t->t_leader = h->h_tid;
			if (t->t_leader != h->h_tid) {
				dom_wait(d, t->t_deadline_ns);
				continue;
			}
			tv.tv_handles = t->t_handles;
			tv.tv_start_ns = t->t_start_ns;
			tv.tv_leader_new_writer = t->t_leader_new_writer;
			dec = gc_policy_decide(&d->j_policy, pc, &tv, now);
			if (dec.d_close != GC_CLOSE_NONE) {
				txn_close(d, t, dec.d_close, now);
				continue;
			}
			t->t_want = dec.d_count;
			t->t_deadline_ns = dec.d_deadline_ns;
			if (dom_wait(d, dec.d_deadline_ns))
				gc_policy_wait_overshoot(&d->j_policy, dec.d_deadline_ns,
							 gc_now_ns());
			continue;
		}
		if (s->is_flags & IS_DONE)
			return s->is_err;
		if (!(s->is_flags & IS_CLAIMED)) {
			do_owner_call(h, s, ino);
			continue;
		}
		dom_wait(d, 0);
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
	h->h_done = true;
	pthread_cleanup_pop(0);
	*owner = t->t_islots[h->h_slot].is_owner == h->h_tid;
	if (!--t->t_refs && t->t_state == T_DONE)
		t->t_state = T_FREE;
	dom_unlock(h->h_dom);
	return r;
}

int gc_sync(int fd, bool datasync, enum gc_origin origin)
{
	struct gc_handle h = { .h_fd = fd, .h_datasync = datasync };
	struct gc_domain *d;
	struct gc_txn *t;
	struct stat st;
	uint64_t now, start;
	bool new_writer, owner;
	int r, slot;

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
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return direct(fd, datasync);
	d = domain_get((uint64_t)st.st_dev);
	if (!d)
		return direct(fd, datasync);
	start = now = gc_now_ns();
	if (gc_policy_epoch_due(&d->j_policy, &gc_cfg.c_policy, now)) {
		dom_lock(d);
		if (gc_policy_epoch_end(&d->j_policy, &gc_cfg.c_policy, now))
			gc_log(GC_LOG_DEBUG, "dev %llx: %s calls now",
			       (unsigned long long)st.st_dev,
			       gc_policy_bypass(&d->j_policy, &gc_cfg.c_policy, now)
				       ? "direct" : "grouped");
		dom_unlock(d);
	}
	if (gc_policy_bypass(&d->j_policy, &gc_cfg.c_policy, now)) {
		gc_stat_inc(bypass);
		r = direct(fd, datasync);
		gc_policy_account(&d->j_policy, gc_now_ns() - start);
		return r;
	}
	/* Multi-inode transactions: write our data back before joining, so the
	 * real calls released together only have to commit. A writeback error
	 * seen here belongs to this request. */
	if (gc_cfg.c_stage == GC_STAGE_ALWAYS ||
	    (gc_cfg.c_stage == GC_STAGE_AUTO && __atomic_load_n(&d->j_multi, __ATOMIC_RELAXED))) {
		gc_stat_inc(staged);
		r = real_sfr(fd, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER);
		if (r < 0)
			return r;
		now = gc_now_ns();
	}

	h.h_dom = d;
	h.h_tid = gc_gettid();
	dom_lock(d);
	new_writer = gc_policy_arrive(&d->j_policy, &gc_cfg.c_policy, h.h_tid, now);
	t = d->j_running != GC_NONE ? &d->j_txns[d->j_running] : NULL;
	if (!t)
		t = txn_begin(d, now, h.h_tid, new_writer);
	slot = t ? islot_get(t, (uint64_t)st.st_ino) : GC_NONE;
	if (slot == GC_NONE) {
		/* ring or slots exhausted: no room to wait, so do not */
		dom_unlock(d);
		return direct(fd, datasync);
	}
	h.h_txn = t;
	h.h_slot = slot;
	t->t_islots[slot].is_handles++;
	if (!datasync)
		t->t_islots[slot].is_flags |= IS_FSYNC;
	t->t_handles++;
	t->t_joined++;
	t->t_refs++;
	if (t->t_want && t->t_handles >= t->t_want && d->j_committing == GC_NONE)
		txn_close(d, t, GC_CLOSE_COUNT, now);

	r = handle_collect(&h, (uint64_t)st.st_ino, &owner);
	if (r == GC_ORPHAN)
		r = direct(fd, datasync);
	else if (!owner) {
		/* Writeback errors are reported once per open file description;
		 * the owner's call consumed them on its own. Collect any this
		 * descriptor has not seen yet, as its own fsync would have. */
		int e = real_sfr(fd, SYNC_FILE_RANGE_WAIT_AFTER);

		if (!r && e < 0)
			r = e;
	}
	gc_policy_account(&d->j_policy, gc_now_ns() - start);
	return r;
}

/* ---- fork ------------------------------------------------------------- */

/* Takes gc_domains_lock and every domain's j_lock, in table order. */
void gc_journal_atfork_prepare(void)
{
	int i;

	pthread_mutex_lock(&gc_domains_lock);
	for (i = 0; i < gc_ndomains; i++)
		dom_lock(gc_domains[i]);
}

/* Drops what prepare took. */
void gc_journal_atfork_parent(void)
{
	int i;

	for (i = gc_ndomains - 1; i >= 0; i--)
		dom_unlock(gc_domains[i]);
	pthread_mutex_unlock(&gc_domains_lock);
}

/* In the child only the forking thread exists: transactions in flight belong
 * to the parent. Keep what was learned about the devices, drop the rest. */
void gc_journal_atfork_child(void)
{
	int i;

	for (i = 0; i < gc_ndomains; i++) {
		struct gc_domain *d = gc_domains[i];
		struct gc_policy_state ps = d->j_policy;

		dom_init(d, d->j_dev);
		d->j_policy.ps_commit_ns = ps.ps_commit_ns;
		d->j_policy.ps_jbd2_avg_ns = ps.ps_jbd2_avg_ns;
		d->j_policy.ps_commit_samples = ps.ps_commit_samples;
		d->j_policy.ps_gran_ns = ps.ps_gran_ns;
		d->j_policy.ps_gran_samples = ps.ps_gran_samples;
	}
	pthread_mutex_init(&gc_domains_lock, NULL);
}
