/* Shared segments: naming (uid, filesystem, pid namespace, layout),
 * creating them complete, attaching and validating them. Everything read
 * from a segment is untrusted input: another process of the same user may
 * have written anything there, or cut the file short under us. */
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

static void poison_quiet(const struct gc_domain *d)
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
				poison_quiet((struct gc_domain *)m);
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
