// SPDX-License-Identifier: LGPL-2.1-or-later
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

#include "core/busguard.h"
#include "core/clock.h"
#include "core/name.h"
#include "core/sys.h"
#include "policy/policy.h"

#define SHM_DIR "/dev/shm"
/* How long an opener waits for a creator to finish initialising. */
#define ATTACH_WAIT_NS (200 * GC_NSEC_PER_MSEC)

/* ---- poisoned domains: private to this process ------------------------- */

#define GC_POISON_MAX 64
GC_START static const struct gc_domain *gc_poisoned[GC_POISON_MAX];

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

void gc_domain_poison(const struct gc_domain *d, const char *why)
{
	{
		if (poison_add(d)) {
			char line[160];
			int n = snprintf(line, sizeof(line),
					 "libgc: pid=%d: leaving the shared segment (%s); this process groups privately from now on\n",
					 (int)getpid(), why);

			if (n > 0)
				gc_stderr_write(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		}
	}
}

uint64_t gc_pidns(void)
{
	return gc_sys_pidns();
}

int gc_domain_path(char *buf, size_t len, uid_t uid, uint64_t dev)
{
	struct gc_name b = gc_name_in(buf, len);
	uint64_t ns = gc_pidns();

	/* The layout's version and size are in the name: builds that cannot
	 * share a segment never meet in one, and a newer build is not locked
	 * out by the segment an older one left behind.
	 * SHM_DIR "/libgc-%u-%llx-p%llu-v%d-%zx" */
	if (!ns)
		return -1;
	_Static_assert(GC_DOM_VERSION >= 0, "the version is written unsigned");
	gc_name_str(&b, SHM_DIR "/libgc-");
	gc_name_num(&b, (unsigned)uid, 10);
	gc_name_char(&b, '-');
	gc_name_num(&b, dev, 16);
	gc_name_str(&b, "-p");
	gc_name_num(&b, ns, 10);
	gc_name_str(&b, "-v");
	gc_name_num(&b, GC_DOM_VERSION, 10);
	gc_name_char(&b, '-');
	gc_name_num(&b, sizeof(struct gc_domain), 16);
	return gc_name_end(&b);
}

/* ---- a segment truncated under us ------------------------------------ */

/* The SIGBUS guard (core/busguard.c) has put private zeroed memory in
 * place of the mapping at @m: no transaction there matches any handle and
 * no slot holds a sealed result, so every request in flight falls back to
 * its own real call, and the poisoned mark makes the next lock refuse. */
static void segment_gone(void *m)
{
	static const char msg[] =
		"libgc: a shared segment was truncated under us; this process groups privately from now on\n";

	if (poison_add(m))
		gc_stderr_write(msg, sizeof(msg) - 1);
}

bool gc_domain_is_segment(const struct gc_domain *d)
{
	return gc_bus_guarded(d);
}

/* Before a mapping goes away: another one may come at that address. */
static void map_drop(struct gc_domain *d)
{
	gc_bus_unguard(d);
	munmap(d, sizeof(*d));
}

static void *map_fd(int fd)
{
	void *p = gc_sys_mmap(NULL, sizeof(struct gc_domain), PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	gc_bus_guard(p, sizeof(struct gc_domain), segment_gone);
	return p;
}

static bool valid(const struct gc_domain *d, uint64_t dev, uid_t uid)
{
	return __atomic_load_n(&d->j_magic, __ATOMIC_ACQUIRE) == GC_DOM_MAGIC &&
	       d->j_version == GC_DOM_VERSION && d->j_size == sizeof(*d) &&
	       d->j_dev == dev && d->j_uid == (uint32_t)uid && d->j_shared == 1 &&
	       d->j_pidns == gc_pidns() && gc_domain_check(d);
}

bool gc_domain_check(const struct gc_domain *d)
{
	/* each index read once: the one tested is the one followed, whatever
	 * a peer writes meanwhile */
	int run = __atomic_load_n(&d->j_running, __ATOMIC_RELAXED);
	int com = __atomic_load_n(&d->j_committing, __ATOMIC_RELAXED);
	int i;

	if (run != GC_NONE && (run < 0 || run >= GC_TXN_RING))
		return false;
	if (com != GC_NONE && (com < 0 || com >= GC_TXN_RING))
		return false;
	if (run != GC_NONE && d->j_txns[run].t_state != T_RUNNING)
		return false;
	if (com != GC_NONE && d->j_txns[com].t_state != T_COMMITTING)
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
static struct gc_domain *create(const char *path, uint64_t dev, uid_t uid, const char **why)
{
	char proc[64];
	struct gc_name b;
	struct gc_domain *d;
	int fd, r;

	fd = (int)syscall(SYS_openat, AT_FDCWD, SHM_DIR, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0) {
		*why = errno == EMFILE || errno == ENFILE
			       ? "cannot create a segment (no descriptor free)"
			       : "cannot create a segment (O_TMPFILE in " SHM_DIR ")";
		return NULL;
	}
	if (!gc_sys_fsize_ok(sizeof(*d))) {
		syscall(SYS_close, fd);
		*why = "cannot make a segment (RLIMIT_FSIZE)";
		return NULL;
	}
	if (syscall(SYS_ftruncate, fd, (off_t)sizeof(*d)) < 0 || !(d = map_fd(fd))) {
		syscall(SYS_close, fd);
		*why = "cannot size or map a new segment";
		return NULL;
	}
	gc_domain_init_uid(d, dev, true, uid);
	__atomic_store_n(&d->j_magic, GC_DOM_MAGIC, __ATOMIC_RELEASE);
	/* by its descriptor where the kernel lets us (CAP_DAC_READ_SEARCH),
	 * else through /proc: a walk of this process's /proc directory, its
	 * first (about 7 us) */
	r = (int)syscall(SYS_linkat, fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
	if (r < 0 && errno != EEXIST) {
		b = gc_name_in(proc, sizeof(proc));
		gc_name_str(&b, "/proc/self/fd/");
		gc_name_num(&b, (unsigned int)fd, 10);
		gc_name_end(&b);
		r = (int)syscall(SYS_linkat, AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
	}
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
static struct gc_domain *open_existing(const char *path, uint64_t dev, uid_t uid,
				       const char **why, uint64_t *bad_ino)
{
	struct gc_domain *d;
	struct stat st;
	int fd;

	*bad_ino = 0;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ENOENT			    ? NULL
		       : errno == EMFILE || errno == ENFILE ? "cannot open the segment (no descriptor free)"
		       : errno == ELOOP			    ? "cannot open the segment (a symlink)"
		       : errno == EACCES || errno == EPERM  ? "cannot open the segment (no permission)"
							    : "cannot open the segment";
		return NULL;
	}
	if (gc_sys_fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid ||
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
	if (!valid(d, dev, uid)) {
		map_drop(d);
		*bad_ino = (uint64_t)st.st_ino;
		*why = "segment failed validation (magic, version, size, device, owner or an index)";
		return NULL;
	}
	/* not broken: its members' times are not ours to compare with */
	if (!gc_domain_same_clock(d)) {
		map_drop(d);
		*why = "its members' monotonic clock is not ours: another time namespace";
		return NULL;
	}
	return d;
}

struct gc_domain *gc_domain_attach(uint64_t dev, const char **why)
{
	/* one read of the effective uid for the name, the owner checks and
	 * a new segment's j_uid: one answer for all, and one system call */
	uid_t uid = gc_sys_geteuid();
	char path[160];
	struct gc_domain *d;
	struct stat st;
	uint64_t bad;
	int tries;

	if (gc_domain_path(path, sizeof(path), uid, dev) < 0) {
		*why = "the pid namespace cannot be told (no /proc)";
		return NULL;
	}
	for (tries = 0; tries < 4; tries++) {
		*why = NULL;
		d = open_existing(path, dev, uid, why, &bad);
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
		d = create(path, dev, uid, why);
		if (d || *why)
			return d;
		/* lost the race to another creator: open theirs */
	}
	*why = "segment keeps changing under us";
	return NULL;
}
