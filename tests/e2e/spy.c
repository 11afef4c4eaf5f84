// SPDX-License-Identifier: LGPL-2.1-or-later
/* Spy preload for the end-to-end tests, built twice: SPY_OUTER (before the
 * library) logs the program's sync requests, SPY_INNER (after it) logs the
 * real calls the library issues and can inject EIO or delay into them. */

/* Env: SPY_LOG=path (nothing is logged without it); inner only:
 * SPY_EIO_NTH=K, SPY_EIO_EVERY=K, SPY_EIO_INO_MOD=K (files whose inode
 * number K divides: the same files in every process), SPY_DELAY_US=N,
 * SPY_DIR_DELAY_US=N (the delay of directories' real syncs; SPY_DELAY_US's
 * unless set). */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "journal/fs.h"
#include "tests/e2e/spy.h"

#if defined(SPY_OUTER) == defined(SPY_INNER)
#error "build with exactly one of -DSPY_OUTER or -DSPY_INNER"
#endif
#ifdef SPY_OUTER
#define SPY_ME SPY_PROG
#else
#define SPY_ME SPY_REAL
#endif

#define EXPORT __attribute__((visibility("default")))

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*pwrite64_fn)(int, const void *, size_t, off64_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*pwritev64_fn)(int, const struct iovec *, int, off64_t);
typedef ssize_t (*pwritev2_fn)(int, const struct iovec *, int, off_t, int);
typedef ssize_t (*pwritev64v2_fn)(int, const struct iovec *, int, off64_t, int);
typedef int (*sync_fn)(int);
typedef int (*fcntl_fn)(int, int, ...);
typedef int (*falloc_fn)(int, int, off_t, off_t);
typedef int (*pfalloc_fn)(int, off_t, off_t);
typedef ssize_t (*sendfile_fn)(int, int, off_t *, size_t);
typedef ssize_t (*splice_fn)(int, off64_t *, int, off64_t *, size_t, unsigned int);
typedef int (*ioctl_fn)(int, unsigned long, ...);

/* Resolved in the constructor, or on first use when another library's
 * constructor calls us before ours ran. Racing resolvers store the same value. */
static struct {
	write_fn write;
	pwrite_fn pwrite;
	pwrite64_fn pwrite64;
	writev_fn writev;
	pwritev_fn pwritev;
	pwritev64_fn pwritev64;
	pwritev2_fn pwritev2;
	pwritev64v2_fn pwritev64v2;
	sync_fn fsync;
	sync_fn fdatasync;
	fcntl_fn fcntl;
	falloc_fn fallocate;
	falloc_fn fallocate64;
	pfalloc_fn posix_fallocate;
	pfalloc_fn posix_fallocate64;
	sendfile_fn sendfile;
	sendfile_fn sendfile64;
	splice_fn splice;
	splice_fn copy_file_range;
	ioctl_fn ioctl;
} next;

static const char *spy_log_path;
static int spy_env_done;
#ifdef SPY_INNER
static unsigned long spy_eio_nth, spy_eio_every, spy_eio_ino_mod, spy_delay_us, spy_dir_delay_us;
static unsigned long spy_real_syncs;	/* real fsync/fdatasync on regular files */
#endif

#define RESOLVE(name)                                                        \
	({                                                                   \
		if (!__atomic_load_n(&next.name, __ATOMIC_ACQUIRE))          \
			__atomic_store_n(&next.name, dlsym(RTLD_NEXT, #name), \
					 __ATOMIC_RELEASE);                  \
		next.name;                                                   \
	})

static unsigned long env_ulong(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 10) : 0;
}

/* Environment is read once; a signal handler never gets here first because
 * every program makes a plain call before it arms a handler. */
static void spy_env(void)
{
	if (__atomic_load_n(&spy_env_done, __ATOMIC_ACQUIRE))
		return;
	spy_log_path = getenv("SPY_LOG");
#ifdef SPY_INNER
	spy_eio_nth = env_ulong("SPY_EIO_NTH");
	spy_eio_every = env_ulong("SPY_EIO_EVERY");
	spy_eio_ino_mod = env_ulong("SPY_EIO_INO_MOD");
	spy_delay_us = env_ulong("SPY_DELAY_US");
	spy_dir_delay_us = getenv("SPY_DIR_DELAY_US") ? env_ulong("SPY_DIR_DELAY_US") : spy_delay_us;
#else
	(void)env_ulong;
#endif
	__atomic_store_n(&spy_env_done, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void spy_ctor(void)
{
	spy_env();
	RESOLVE(write);
	RESOLVE(pwrite);
	RESOLVE(pwrite64);
	RESOLVE(writev);
	RESOLVE(pwritev);
	RESOLVE(pwritev64);
	RESOLVE(pwritev2);
	RESOLVE(pwritev64v2);
	RESOLVE(fsync);
	RESOLVE(fdatasync);
	RESOLVE(fcntl);
	RESOLVE(fallocate);
	RESOLVE(fallocate64);
	RESOLVE(posix_fallocate);
	RESOLVE(posix_fallocate64);
	RESOLVE(sendfile);
	RESOLVE(sendfile64);
	RESOLVE(splice);
	RESOLVE(copy_file_range);
	RESOLVE(ioctl);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The log is opened per record with raw syscalls: nothing of ours is ever
 * seen by the library, and no descriptor of ours can be closed, dup2'ed over
 * or inherited by the program. */
static void spy_emit(const struct spy_rec *r)
{
	long fd;

	if (!spy_log_path)
		return;
	fd = syscall(SYS_openat, AT_FDCWD, spy_log_path,
		     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	syscall(SYS_write, (int)fd, r, sizeof(*r));
	syscall(SYS_close, (int)fd);
}

/* The kernel's rule for a sync of @st's inode on the filesystem of @fd
 * after another sync of it failed (spy.h). The filesystems' magic numbers
 * are statfs(2)'s. */
static uint8_t spy_rule(int fd, const struct stat *st)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return SPY_RULE_HELD;
	switch ((unsigned long)sf.f_type) {
	case 0x58465342: /* xfs: a directory's fsync answers 0 when shut down */
		return S_ISREG(st->st_mode) ? SPY_RULE_OWN : SPY_RULE_HELD;
	case 0x9123683E: /* btrfs */
		return SPY_RULE_OWN;
	}
	return SPY_RULE_HELD;
}

struct spy_call {
	struct spy_rec c_rec;
	bool c_on;
};

/* Starts a record. @regular_only: writes matter only on regular files. */
static void spy_begin(struct spy_call *c, int fd, int kind, bool regular_only)
{
	struct stat st;
	int saved = errno;

	memset(c, 0, sizeof(*c));
	spy_env();
	if (fstat(fd, &st) == 0) {
		if (regular_only && !S_ISREG(st.st_mode)) {
			errno = saved;
			return;
		}
		c->c_rec.r_dev = st.st_dev;
		c->c_rec.r_ino = st.st_ino;
		c->c_rec.r_rule = spy_rule(fd, &st);
	} else if (regular_only) {
		errno = saved;
		return;
	}
	c->c_on = true;
	c->c_rec.r_magic = SPY_MAGIC;
	c->c_rec.r_role = SPY_ME;
	c->c_rec.r_kind = (uint8_t)kind;
	c->c_rec.r_pid = (int32_t)getpid();
	c->c_rec.r_tid = (int32_t)syscall(SYS_gettid);
	c->c_rec.r_fd = fd;
	errno = saved;
	c->c_rec.r_start_ns = now_ns();
}

static void spy_end(struct spy_call *c, long ret)
{
	int saved = errno;

	if (!c->c_on)
		return;
	c->c_rec.r_end_ns = now_ns();
	c->c_rec.r_ret = ret;
	c->c_rec.r_errno = ret < 0 ? saved : 0;
	spy_emit(&c->c_rec);
	errno = saved;
}

/* What a write to @fd with pwritev2 @rwf must guarantee: 0 (nothing),
 * SPY_WRITE_DSYNC or SPY_WRITE_SYNC. The outer spy asks fcntl through the
 * library (what the program sees); the inner one asks the kernel. */
static int spy_write_kind(int fd, int rwf)
{
	int saved = errno, fl, kind = 0;

#ifdef SPY_OUTER
	fcntl_fn f = RESOLVE(fcntl);

	fl = f ? f(fd, F_GETFL) : -1;
#else
	fl = (int)syscall(SYS_fcntl, fd, F_GETFL);
#endif
	errno = saved;
	if (fl >= 0 && (fl & O_DSYNC))
		kind = (fl & O_SYNC) == O_SYNC ? SPY_WRITE_SYNC : SPY_WRITE_DSYNC;
	if (rwf & RWF_SYNC)
		kind = SPY_WRITE_SYNC;
	else if ((rwf & RWF_DSYNC) && !kind)
		kind = SPY_WRITE_DSYNC;
	return kind;
}

#define SPY_WRITE(call, fd, rwf)                                         \
	({                                                               \
		struct spy_call c_;                                      \
		int k_ = spy_write_kind(fd, rwf);                        \
		ssize_t r_;                                              \
		if (k_)                                                  \
			spy_begin(&c_, fd, k_, true);                    \
		r_ = call;                                               \
		if (k_)                                                  \
			spy_end(&c_, r_);                                \
		r_;                                                      \
	})

#define NEXT_OR_ENOSYS(name)                                             \
	do {                                                             \
		if (!RESOLVE(name)) {                                    \
			errno = ENOSYS;                                  \
			return -1;                                       \
		}                                                        \
	} while (0)

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	NEXT_OR_ENOSYS(write);
	return SPY_WRITE(next.write(fd, buf, n), fd, 0);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	NEXT_OR_ENOSYS(pwrite);
	return SPY_WRITE(next.pwrite(fd, buf, n, off), fd, 0);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	NEXT_OR_ENOSYS(pwrite64);
	return SPY_WRITE(next.pwrite64(fd, buf, n, off), fd, 0);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	NEXT_OR_ENOSYS(writev);
	return SPY_WRITE(next.writev(fd, iov, cnt), fd, 0);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	NEXT_OR_ENOSYS(pwritev);
	return SPY_WRITE(next.pwritev(fd, iov, cnt, off), fd, 0);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	NEXT_OR_ENOSYS(pwritev64);
	return SPY_WRITE(next.pwritev64(fd, iov, cnt, off), fd, 0);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off,
			int flags)
{
	NEXT_OR_ENOSYS(pwritev2);
	return SPY_WRITE(next.pwritev2(fd, iov, cnt, off, flags), fd, flags);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt,
			   off64_t off, int flags)
{
	NEXT_OR_ENOSYS(pwritev64v2);
	return SPY_WRITE(next.pwritev64v2(fd, iov, cnt, off, flags), fd, flags);
}

/* A fallocate through an O_SYNC or O_DSYNC description is committed by
 * ext4 and XFS before it returns (with its metadata): logged as an O_SYNC
 * write of one byte (a write of none needs no cover), -1 if it failed.
 * posix_fallocate answers an errno number, made -1 and errno here. */
#define SPY_FALLOC(call, fd)                                                          \
	(SPY_WRITE((call) == 0 ? 1 : -1, fd, spy_write_kind(fd, 0) ? RWF_SYNC : 0) == 1 ? 0 : -1)

static int spy_errnum(int e)
{
	if (!e)
		return 0;
	errno = e;
	return -1;
}

EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	NEXT_OR_ENOSYS(fallocate);
	return (int)SPY_FALLOC(next.fallocate(fd, mode, off, len), fd);
}

EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
{
	NEXT_OR_ENOSYS(fallocate64);
	return (int)SPY_FALLOC(next.fallocate64(fd, mode, off, len), fd);
}

static int spy_posix_fallocate(pfalloc_fn fn, int fd, off_t off, off_t len)
{
	int saved = errno, r;

	if (!fn)
		return ENOSYS;
	r = (int)SPY_FALLOC(spy_errnum(fn(fd, off, len)), fd);
	r = r ? errno : 0;
	errno = saved;
	return r;
}

EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	return spy_posix_fallocate(RESOLVE(posix_fallocate), fd, off, len);
}

EXPORT int posix_fallocate64(int fd, off_t off, off_t len)
{
	return spy_posix_fallocate(RESOLVE(posix_fallocate64), fd, off, len);
}

/* Bytes the kernel moves into @out are a write through it. */
EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	NEXT_OR_ENOSYS(sendfile);
	return SPY_WRITE(next.sendfile(out, in, off, n), out, 0);
}

EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
	NEXT_OR_ENOSYS(sendfile64);
	return SPY_WRITE(next.sendfile64(out, in, off, n), out, 0);
}

EXPORT ssize_t splice(int in, off64_t *in_off, int out, off64_t *out_off, size_t n,
		      unsigned int flags)
{
	NEXT_OR_ENOSYS(splice);
	return SPY_WRITE(next.splice(in, in_off, out, out_off, n, flags), out, 0);
}

/* xfs and btrfs commit a clone of blocks into a file (a reflink, a
 * dedupe, a copy_file_range they make one) before it returns when the
 * source's description or the destination's is O_SYNC or O_DSYNC: logged
 * as an O_SYNC write to the destination when the source's is (the
 * destination's own flag makes its kind as for any write). */
static int spy_clone_rwf(int src, int dst)
{
	struct statfs sf;
	int saved = errno, rwf = 0;

	if (spy_write_kind(src, 0) && fstatfs(dst, &sf) == 0 &&
	    (sf.f_type == 0x58465342 || sf.f_type == (typeof(sf.f_type))0x9123683E))
		rwf = RWF_SYNC;
	errno = saved;
	return rwf;
}

EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t n,
			       unsigned int flags)
{
	NEXT_OR_ENOSYS(copy_file_range);
	return SPY_WRITE(next.copy_file_range(in, in_off, out, out_off, n, flags), out,
			 spy_clone_rwf(in, out));
}

/* A dedupe from @src: each destination (the first 8) as one byte written
 * to it when its range was deduped, -1 otherwise. */
static int spy_dedupe(int src, struct file_dedupe_range *d)
{
	struct spy_call c[8];
	int k[8], r, saved;
	unsigned int i, n = d->dest_count < 8 ? d->dest_count : 8;

	for (i = 0; i < n; i++) {
		int dst = (int)d->info[i].dest_fd;

		k[i] = spy_write_kind(dst, spy_clone_rwf(src, dst));
		if (k[i])
			spy_begin(&c[i], dst, k[i], true);
	}
	r = next.ioctl(src, FIDEDUPERANGE, d);
	saved = errno;
	for (i = 0; i < n; i++)
		if (k[i])
			spy_end(&c[i], r == 0 && d->info[i].status == FILE_DEDUPE_RANGE_SAME &&
						d->info[i].bytes_deduped ? 1 : -1);
	errno = saved;
	return r;
}

/* FICLONE and FICLONERANGE into @fd, as one byte written (a clone of
 * none needs no cover), -1 if it failed; FIDEDUPERANGE from @fd. */
EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int src;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	NEXT_OR_ENOSYS(ioctl);
	if ((unsigned int)req == FIDEDUPERANGE)
		return spy_dedupe(fd, arg);
	if ((unsigned int)req != FICLONE && (unsigned int)req != FICLONERANGE)
		return next.ioctl(fd, req, arg);
	src = (unsigned int)req == FICLONE ? (int)(intptr_t)arg : (int)((struct file_clone_range *)arg)->src_fd;
	return SPY_WRITE(next.ioctl(fd, req, arg) == 0 ? 1 : -1, fd, spy_clone_rwf(src, fd)) == 1
		       ? 0
		       : -1;
}

#ifdef SPY_INNER
/* Injected faults apply to real syncs of regular files only, so a test can
 * name "the K-th real sync" without counting its pipes; the delay applies
 * to directories' too (a directory's fsync is a journal commit), or theirs. */
static bool spy_fault(int fd, int *err)
{
	struct stat st;
	unsigned long n;
	int saved = errno;

	if (fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
		errno = saved;
		return false;
	}
	errno = saved;
	{
		unsigned long us = S_ISDIR(st.st_mode) ? spy_dir_delay_us : spy_delay_us;
		/* Raw syscall: the delay must not add a cancellation point. */
		struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

		if (us)
			syscall(SYS_nanosleep, &ts, NULL);
	}
	if (!S_ISREG(st.st_mode))
		return false;
	n = __atomic_add_fetch(&spy_real_syncs, 1, __ATOMIC_RELAXED);
	if ((spy_eio_nth && n == spy_eio_nth) ||
	    (spy_eio_every && n % spy_eio_every == 0) ||
	    (spy_eio_ino_mod && st.st_ino % spy_eio_ino_mod == 0)) {
		*err = EIO;
		return true;
	}
	return false;
}
#endif

#ifdef SPY_INNER
/* Failures the spies made up stand for failed journal commits: once one
 * was made, in this process or another writing the same log (a file
 * beside it says so), the library's probe of the journal (journal/fs.c)
 * is told the journal aborted. */
static unsigned long spy_injected;

static void spy_marker(char *p, size_t n)
{
	snprintf(p, n, "%s.aborted", spy_log_path ? spy_log_path : "");
}

static void spy_note_injected(void)
{
	char p[4200];
	int fd;

	if (__atomic_fetch_add(&spy_injected, 1, __ATOMIC_RELAXED) || !spy_log_path)
		return;
	spy_marker(p, sizeof(p));
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		syscall(SYS_close, fd);
}

static bool spy_journal_aborted(void)
{
	char p[4200];

	if (__atomic_load_n(&spy_injected, __ATOMIC_RELAXED))
		return true;
	if (!spy_log_path)
		return false;
	spy_marker(p, sizeof(p));
	return syscall(SYS_faccessat, AT_FDCWD, p, F_OK) == 0;
}

/* A real EIO the kernel gave, its filesystem's journal still working:
 * replacing an attribute that does not exist starts a journal transaction
 * and answers ENODATA (journal/fs.c says why). */
static bool spy_error_local(int fd)
{
	int saved = errno;
	bool local = syscall(SYS_fsetxattr, fd, "user.spy.journal-probe", "", 0, XATTR_REPLACE) < 0 &&
		     errno == ENODATA;

	errno = saved;
	return local;
}

/* The library's journal probe, on a file (fsetxattr) or on a directory
 * above one that tells nothing itself (lsetxattr): EROFS once this spy
 * made a journal fail; else the real call, looked up into @real. NULL:
 * answered here (errno set). */
static void *spy_probe(const char *name, void **real, const char *sym)
{
	int saved = errno;

	if (name && !strcmp(name, GC_FS_PROBE_XATTR) && spy_journal_aborted()) {
		errno = EROFS;
		return NULL;
	}
	errno = saved;
	if (!__atomic_load_n(real, __ATOMIC_ACQUIRE))
		__atomic_store_n(real, dlsym(RTLD_NEXT, sym), __ATOMIC_RELEASE);
	if (!*real)
		errno = ENOSYS;
	return *real;
}

EXPORT int fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
	static void *real;
	int (*fn)(int, const char *, const void *, size_t, int) =
		(int (*)(int, const char *, const void *, size_t, int))spy_probe(name, &real,
										 "fsetxattr");

	return fn ? fn(fd, name, value, size, flags) : -1;
}

EXPORT int lsetxattr(const char *path, const char *name, const void *value, size_t size,
		     int flags)
{
	static void *real;
	int (*fn)(const char *, const char *, const void *, size_t, int) =
		(int (*)(const char *, const char *, const void *, size_t, int))spy_probe(
			name, &real, "lsetxattr");

	return fn ? fn(path, name, value, size, flags) : -1;
}
#endif

static int spy_sync(int fd, sync_fn fn, int kind)
{
	struct spy_call c;
	int ret;

	spy_begin(&c, fd, kind, false);
#ifdef SPY_INNER
	int err;

	if (spy_fault(fd, &err)) {
		errno = err;
		ret = -1;
		c.c_rec.r_flags |= SPY_F_INJECTED;
		spy_note_injected();
	} else {
		ret = fn(fd);
		if (ret < 0 && errno == EIO && spy_error_local(fd))
			c.c_rec.r_flags |= SPY_F_LOCAL;
	}
#else
	ret = fn(fd);
#endif
	spy_end(&c, ret);
	return ret;
}

EXPORT int fsync(int fd)
{
	NEXT_OR_ENOSYS(fsync);
	return spy_sync(fd, next.fsync, SPY_FSYNC);
}

EXPORT int fdatasync(int fd)
{
	NEXT_OR_ENOSYS(fdatasync);
	return spy_sync(fd, next.fdatasync, SPY_FDATASYNC);
}

#ifdef SPY_INNER
/* A real syncfs covers every file of its filesystem: logged by the inner spy
 * only (a program's own syncfs asks nothing the checker needs to match). */
EXPORT int syncfs(int fd)
{
	static sync_fn real;
	struct spy_call c;
	int ret;

	if (!__atomic_load_n(&real, __ATOMIC_ACQUIRE))
		__atomic_store_n(&real, (sync_fn)dlsym(RTLD_NEXT, "syncfs"), __ATOMIC_RELEASE);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	spy_begin(&c, fd, SPY_SYNCFS, false);
	ret = real(fd);
	spy_end(&c, ret);
	return ret;
}
#endif
