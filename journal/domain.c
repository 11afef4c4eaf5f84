/* Domain memory: private or in a per-(uid, filesystem) shared segment under
 * /dev/shm; creation, validation, robust locking, futex waits, membership
 * and reclaiming stale segments. Uses raw system calls only, so it works the
 * same inside the preloaded library and in unit tests. */
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

#define SHM_DIR "/dev/shm"
/* How long an opener waits for a creator to finish initialising. */
#define ATTACH_WAIT_NS (200 * GC_NSEC_PER_MSEC)

void gc_domain_init(struct gc_domain *d, uint64_t dev, bool shared)
{
	int i;

	memset(d, 0, sizeof(*d));
	d->j_version = GC_DOM_VERSION;
	d->j_size = sizeof(*d);
	d->j_dev = dev;
	d->j_uid = (uint32_t)geteuid();
	d->j_pidns = shared ? gc_pidns() : 0;
	d->j_shared = shared;
	d->j_running = d->j_committing = GC_NONE;
	gc_policy_init(&d->j_policy);
	for (i = 0; i < GC_TXN_RING; i++)
		d->j_txns[i].t_state = T_FREE;
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
	return kill(pid, 0) == 0 || errno == EPERM;
}

#define is_segment gc_domain_is_segment

/* Whether @d is shared is this process's own knowledge: j_shared is in
 * memory a peer may have written. */
static int futex_op(const struct gc_domain *d, int op)
{
	return is_segment(d) ? op : op | FUTEX_PRIVATE_FLAG;
}

/* ---- poisoned domains: private to this process ------------------------- */

#define GC_POISON_MAX 64
static const struct gc_domain *gc_poisoned[GC_POISON_MAX];

bool gc_domain_poisoned(const struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_POISON_MAX; i++) {
		const struct gc_domain *p = __atomic_load_n(&gc_poisoned[i], __ATOMIC_ACQUIRE);

		if (!p)
			return false;
		if (p == d)
			return true;
	}
	return false;
}

/* Records @d as left; true when this call did (async-signal-safe). */
static bool poison_add(const struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_POISON_MAX; i++) {
		const struct gc_domain *p = NULL;

		if (__atomic_compare_exchange_n(&gc_poisoned[i], &p, d, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
		if (p == d)
			return false;
	}
	return false; /* full: every lock of it fails the check again anyway */
}

static void gc_domain_poison_quiet(const struct gc_domain *d)
{
	poison_add(d);
}

void gc_domain_poison(const struct gc_domain *d, const char *why)
{
	{
		if (poison_add(d)) {
			char line[160];
			int n = snprintf(line, sizeof(line),
					 "libgc: pid=%d: leaving the shared segment (%s); this process groups privately from now on\n",
					 (int)getpid(), why);

			if (n > 0)
				syscall(SYS_write, 2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		}
	}
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

static uint64_t gc_pidns_ino;

uint64_t gc_pidns(void)
{
	struct stat st;

	if (!__atomic_load_n(&gc_pidns_ino, __ATOMIC_RELAXED) &&
	    stat("/proc/self/ns/pid", &st) == 0)
		__atomic_store_n(&gc_pidns_ino, (uint64_t)st.st_ino, __ATOMIC_RELAXED);
	return __atomic_load_n(&gc_pidns_ino, __ATOMIC_RELAXED);
}

void gc_pidns_forget(void)
{
	__atomic_store_n(&gc_pidns_ino, 0, __ATOMIC_RELAXED);
}

int gc_domain_path(char *buf, size_t len, uid_t uid, uint64_t dev)
{
	uint64_t ns = gc_pidns();

	/* The layout's version and size are in the name: builds that cannot
	 * share a segment never meet in one, and a newer build is not locked
	 * out by the segment an older one left behind. */
	if (!ns)
		return -1;
	return snprintf(buf, len, SHM_DIR "/libgc-%u-%llx-p%llu-v%d-%zx", (unsigned)uid,
			(unsigned long long)dev, (unsigned long long)ns, GC_DOM_VERSION,
			sizeof(struct gc_domain));
}

/* ---- a segment truncated under us ------------------------------------ */

/* A peer can shrink the segment file at any moment; our next access to a
 * page past its end raises SIGBUS. The handler puts private zeroed memory
 * in place of that whole mapping and poisons it: the faulting access then
 * completes on memory no one else sees, where no transaction matches any
 * handle and no slot holds a sealed result, so every request in flight
 * falls back to its own real call, and the next lock refuses. A SIGBUS
 * that is not about a segment goes to whatever handler was there before. */
#define GC_MAPS_MAX 64
static struct gc_domain *gc_maps[GC_MAPS_MAX];
#define GC_MAP_GONE ((struct gc_domain *)1)
static struct sigaction gc_bus_old;
static int gc_bus_installed;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] =
		"libgc: a shared segment was truncated under us; this process groups privately from now on\n";
	char *a = si ? si->si_addr : NULL;
	int i, e = errno;

	for (i = 0; i < GC_MAPS_MAX; i++) {
		char *m = (char *)__atomic_load_n(&gc_maps[i], __ATOMIC_ACQUIRE);

		if (!m)
			break;
		if (m != (char *)GC_MAP_GONE && a >= m && a < m + sizeof(struct gc_domain)) {
			mmap(m, sizeof(struct gc_domain), PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (!gc_domain_poisoned((struct gc_domain *)m)) {
				gc_domain_poison_quiet((struct gc_domain *)m);
				syscall(SYS_write, 2, msg, sizeof(msg) - 1);
			}
			errno = e;
			return;
		}
	}
	if ((gc_bus_old.sa_flags & SA_SIGINFO) && gc_bus_old.sa_sigaction) {
		gc_bus_old.sa_sigaction(sig, si, uc);
	} else if (gc_bus_old.sa_handler == SIG_DFL || gc_bus_old.sa_handler == SIG_IGN) {
		/* the fault repeats on return and takes its default course */
		signal(SIGBUS, SIG_DFL);
	} else {
		gc_bus_old.sa_handler(sig);
	}
	errno = e;
}

bool gc_domain_is_segment(const struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_MAPS_MAX; i++) {
		const struct gc_domain *m = __atomic_load_n(&gc_maps[i], __ATOMIC_ACQUIRE);

		if (!m)
			return false;
		if (m == d)
			return true;
	}
	return false;
}

static void map_register(struct gc_domain *d)
{
	int i;

	if (!__atomic_exchange_n(&gc_bus_installed, 1, __ATOMIC_ACQ_REL)) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = bus_handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, &gc_bus_old);
	}
	for (i = 0; i < GC_MAPS_MAX; i++) {
		struct gc_domain *p = NULL;

		if (__atomic_compare_exchange_n(&gc_maps[i], &p, d, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) || p == d)
			return;
		if (p == GC_MAP_GONE &&
		    __atomic_compare_exchange_n(&gc_maps[i], &p, d, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
}

/* Before a mapping goes away: another one may come at that address. */
static void map_drop(struct gc_domain *d)
{
	int i;

	for (i = 0; i < GC_MAPS_MAX; i++) {
		struct gc_domain *p = d;

		if (__atomic_compare_exchange_n(&gc_maps[i], &p, GC_MAP_GONE, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	munmap(d, sizeof(*d));
}

static void *map_fd(int fd)
{
	void *p = mmap(NULL, sizeof(struct gc_domain), PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	map_register(p);
	return p;
}

static bool valid(const struct gc_domain *d, uint64_t dev)
{
	return __atomic_load_n(&d->j_magic, __ATOMIC_ACQUIRE) == GC_DOM_MAGIC &&
	       d->j_version == GC_DOM_VERSION && d->j_size == sizeof(*d) &&
	       d->j_dev == dev && d->j_uid == (uint32_t)geteuid() && d->j_shared == 1 &&
	       d->j_pidns == gc_pidns() && gc_domain_check(d);
}

bool gc_domain_check(const struct gc_domain *d)
{
	int i;

	if (d->j_running != GC_NONE && (d->j_running < 0 || d->j_running >= GC_TXN_RING))
		return false;
	if (d->j_committing != GC_NONE &&
	    (d->j_committing < 0 || d->j_committing >= GC_TXN_RING))
		return false;
	if (d->j_running != GC_NONE && d->j_txns[d->j_running].t_state != T_RUNNING)
		return false;
	if (d->j_committing != GC_NONE && d->j_txns[d->j_committing].t_state != T_COMMITTING)
		return false;
	for (i = 0; i < GC_TXN_RING; i++) {
		const struct gc_txn *t = &d->j_txns[i];

		if (t->t_state > T_DONE || t->t_inodes > GC_TXN_INODES ||
		    t->t_handles > GC_TXN_HANDLES || t->t_refs > GC_TXN_HANDLES ||
		    t->t_pending > t->t_inodes ||
		    t->t_live > t->t_inodes)
			return false;
	}
	return gc_policy_check(&d->j_policy);
}

/* A complete segment, linked into place only once it is initialised: a
 * creator that dies half-way leaves nothing behind at the segment's name. */
static struct gc_domain *create(const char *path, uint64_t dev, const char **why)
{
	char proc[64];
	struct gc_domain *d;
	int fd, r;

	fd = (int)syscall(SYS_openat, AT_FDCWD, SHM_DIR, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0) {
		*why = "cannot create a segment (O_TMPFILE in " SHM_DIR ")";
		return NULL;
	}
	if (syscall(SYS_ftruncate, fd, (off_t)sizeof(*d)) < 0 || !(d = map_fd(fd))) {
		syscall(SYS_close, fd);
		*why = "cannot size or map a new segment";
		return NULL;
	}
	gc_domain_init(d, dev, true);
	__atomic_store_n(&d->j_magic, GC_DOM_MAGIC, __ATOMIC_RELEASE);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = (int)syscall(SYS_linkat, AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
	syscall(SYS_close, fd);
	if (r < 0) {
		map_drop(d);
		*why = errno == EEXIST ? NULL : "cannot link the new segment into place";
		return NULL;
	}
	return d;
}

/* Maps the segment at @path; NULL with *why if it is not a usable one, and
 * *bad_ino set when it exists but is broken (so it may be replaced). */
static struct gc_domain *open_existing(const char *path, uint64_t dev, const char **why,
				       uint64_t *bad_ino)
{
	struct gc_domain *d;
	struct stat st;
	int fd;

	*bad_ino = 0;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ENOENT ? NULL : "cannot open the segment (a symlink, or no permission)";
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		syscall(SYS_close, fd);
		*why = "segment not a private regular file of this user";
		return NULL;
	}
	if (st.st_size != (off_t)sizeof(*d) || !(d = map_fd(fd))) {
		syscall(SYS_close, fd);
		*bad_ino = (uint64_t)st.st_ino;
		*why = "segment has the wrong size";
		return NULL;
	}
	syscall(SYS_close, fd);
	if (!valid(d, dev)) {
		map_drop(d);
		*bad_ino = (uint64_t)st.st_ino;
		*why = "segment failed validation (magic, version, size, device, owner or an index)";
		return NULL;
	}
	return d;
}

struct gc_domain *gc_domain_attach(uint64_t dev, const char **why)
{
	char path[160];
	struct gc_domain *d;
	struct stat st;
	uint64_t bad;
	int tries;

	if (gc_domain_path(path, sizeof(path), geteuid(), dev) < 0) {
		*why = "the pid namespace cannot be told (no /proc)";
		return NULL;
	}
	for (tries = 0; tries < 4; tries++) {
		*why = NULL;
		d = open_existing(path, dev, why, &bad);
		if (d || (*why && !bad))
			return d;
		if (bad) {
			/* Broken (a creator that died half-way, a peer that
			 * wrote garbage): put a fresh one in its place. Its
			 * users already failed the same checks and left it.
			 * Someone else may have replaced it already: look again. */
			if (stat(path, &st) == 0 && (uint64_t)st.st_ino == bad)
				syscall(SYS_unlink, path);
			continue;
		}
		d = create(path, dev, why);
		if (d || *why)
			return d;
		/* lost the race to another creator: open theirs */
	}
	*why = "segment keeps changing under us";
	return NULL;
}

struct gc_domain *gc_domain_private(uint64_t dev)
{
	struct gc_domain *d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (d == MAP_FAILED)
		return NULL;
	gc_domain_init(d, dev, false);
	return d;
}

bool gc_domain_join(struct gc_domain *d, pid_t pid)
{
	int i, live = 0, dead = 0, free_i = -1;

	for (i = 0; i < GC_MEMBERS; i++) {
		pid_t m = d->j_members[i];

		if (m && m != pid && !pid_alive(m)) {
			d->j_members[i] = m = 0;
			dead++;
		}
		if (m == pid)
			return true;
		if (m)
			live++;
		else if (free_i < 0)
			free_i = i;
	}
	if (!live && dead) {
		/* Only dead processes used it: whatever it holds is stale, the
		 * controller's verdicts too (they were about another workload);
		 * what was learned about the device stays. */
		struct gc_policy_state ps = d->j_policy;

		gc_domain_reset_txns(d);
		gc_policy_init(&d->j_policy);
		d->j_policy.ps_commit_ns = ps.ps_commit_ns;
		d->j_policy.ps_jbd2_avg_ns = ps.ps_jbd2_avg_ns;
		d->j_policy.ps_commit_samples = ps.ps_commit_samples;
		d->j_policy.ps_gran_ns = ps.ps_gran_ns;
		d->j_policy.ps_gran_samples = ps.ps_gran_samples;
		d->j_reclaims++;
	}
	if (free_i < 0)
		return false;
	d->j_members[free_i] = pid;
	return true;
}

bool gc_domain_leave(struct gc_domain *d, pid_t pid)
{
	int i, live = 0;

	for (i = 0; i < GC_MEMBERS; i++) {
		pid_t m = d->j_members[i];

		if (m == pid || (m && !pid_alive(m)))
			d->j_members[i] = 0;
		else if (m)
			live++;
	}
	return live == 0;
}
