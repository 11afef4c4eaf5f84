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

#define SHM_DIR "/dev/shm"
/* How long an opener waits for a creator to finish initialising. */
#define ATTACH_WAIT_NS (200 * GC_NSEC_PER_MSEC)

void gc_domain_init(struct gc_domain *d, uint64_t dev, bool shared)
{
	pthread_mutexattr_t a;
	int i;

	memset(d, 0, sizeof(*d));
	d->j_version = GC_DOM_VERSION;
	d->j_size = sizeof(*d);
	d->j_dev = dev;
	d->j_uid = (uint32_t)geteuid();
	d->j_shared = shared;
	pthread_mutexattr_init(&a);
	if (shared) {
		pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	}
	pthread_mutex_init(&d->j_lock, &a);
	pthread_mutexattr_destroy(&a);
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

static bool lock_result(struct gc_domain *d, int r)
{
	if (r == EOWNERDEAD) {
		/* A peer died holding the lock, maybe mid-update: nothing in
		 * the transactions can be trusted. Everyone in flight notices
		 * the new generation and makes its own real call. */
		gc_domain_reset_txns(d);
		d->j_recoveries++;
		pthread_mutex_consistent(&d->j_lock);
		gc_domain_wake_all(d);
		return true;
	}
	return r == 0;
}

bool gc_domain_lock(struct gc_domain *d)
{
	struct timespec ts;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer cannot follow timed locks: unbounded there */
	return lock_result(d, pthread_mutex_lock(&d->j_lock));
#endif
	if (!d->j_shared)
		return lock_result(d, pthread_mutex_lock(&d->j_lock));
	/* timedlock counts on CLOCK_REALTIME: a clock step only moves the
	 * give-up bound, which is all this deadline is */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(GC_LOCK_GIVE_UP_NS / GC_NSEC_PER_SEC);
	return lock_result(d, pthread_mutex_timedlock(&d->j_lock, &ts));
}

bool gc_domain_trylock(struct gc_domain *d)
{
	return lock_result(d, pthread_mutex_trylock(&d->j_lock));
}

void gc_domain_unlock(struct gc_domain *d)
{
	pthread_mutex_unlock(&d->j_lock);
}

static int futex_op(const struct gc_domain *d, int op)
{
	return d->j_shared ? op : op | FUTEX_PRIVATE_FLAG;
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

int gc_domain_path(char *buf, size_t len, uid_t uid, uint64_t dev)
{
	/* The layout's version and size are in the name: builds that cannot
	 * share a segment never meet in one, and a newer build is not locked
	 * out by the segment an older one left behind. */
	return snprintf(buf, len, SHM_DIR "/libgc-%u-%llx-v%d-%zx", (unsigned)uid,
			(unsigned long long)dev, GC_DOM_VERSION, sizeof(struct gc_domain));
}

static void *map_fd(int fd)
{
	void *p = mmap(NULL, sizeof(struct gc_domain), PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool valid(const struct gc_domain *d, uint64_t dev)
{
	return __atomic_load_n(&d->j_magic, __ATOMIC_ACQUIRE) == GC_DOM_MAGIC &&
	       d->j_version == GC_DOM_VERSION && d->j_size == sizeof(*d) &&
	       d->j_dev == dev && d->j_uid == (uint32_t)geteuid() && d->j_shared == 1;
}

struct gc_domain *gc_domain_attach(uint64_t dev, const char **why)
{
	char path[128];
	struct gc_domain *d;
	struct stat st;
	uint64_t until;
	int fd;

	gc_domain_path(path, sizeof(path), geteuid(), dev);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path,
			  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (syscall(SYS_ftruncate, fd, (off_t)sizeof(*d)) < 0 || !(d = map_fd(fd))) {
			syscall(SYS_close, fd);
			syscall(SYS_unlink, path);
			*why = "cannot size or map a new segment";
			return NULL;
		}
		syscall(SYS_close, fd);
		gc_domain_init(d, dev, true);
		__atomic_store_n(&d->j_magic, GC_DOM_MAGIC, __ATOMIC_RELEASE);
		return d;
	}
	if (errno != EEXIST) {
		*why = "cannot create the segment";
		return NULL;
	}
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot open the segment (a symlink, or no permission)";
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		syscall(SYS_close, fd);
		*why = "segment not a private regular file of this user";
		return NULL;
	}
	/* A creator may still be between O_EXCL and its ftruncate. */
	until = gc_now_ns() + ATTACH_WAIT_NS;
	while (st.st_size == 0 && gc_now_ns() < until) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		if (fstat(fd, &st) < 0)
			break;
	}
	if (st.st_size != (off_t)sizeof(*d) || !(d = map_fd(fd))) {
		syscall(SYS_close, fd);
		*why = "segment has the wrong size";
		return NULL;
	}
	syscall(SYS_close, fd);
	while (__atomic_load_n(&d->j_magic, __ATOMIC_ACQUIRE) != GC_DOM_MAGIC &&
	       gc_now_ns() < until) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	if (!valid(d, dev)) {
		munmap(d, sizeof(*d));
		*why = "segment failed validation (magic, version, size, device or owner)";
		return NULL;
	}
	return d;
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
