// SPDX-License-Identifier: LGPL-2.1-or-later
/* The write family. A write to a descriptor whose O_SYNC/O_DSYNC was
 * converted, or a pwritev2 with RWF_SYNC/RWF_DSYNC on a regular file, is
 * completed by a group commit before it returns. Everything else is one
 * table lookup on top of the real call: no lock, no allocation. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/dirty.h"
#include "core/fdtable.h"
#include "core/sites.h"
#include "core/stats.h"
#include "journal/fs.h"
#include "journal/intent.h"
#include "journal/journal.h"
#include "shim/shim.h"

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x00000002
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x00000004
#endif
#define RWF_APPEND_ 0x00000010
/* The caller of an exported function: its call site */
#define GC_RA ((uintptr_t)__builtin_return_address(0))

static inline bool full_sync(int flags)
{
	return (flags & O_SYNC) == O_SYNC;
}

/* Makes @fd's inode durable as O_SYNC (@full) or O_DSYNC would have:
 * 0 or -errno. */
static int sync_fd(int fd, bool full, uintptr_t ra)
{
	int r;

	/* it follows a write through @fd: not one with nothing to write */
	gc_dirty_unquiet(fd);

	if (gc_depth || !gc_conf()) {
		/* Nested or from a signal handler: no coordinator here. */
		r = unlikely(gc_intent_on) ? gc_intent_nested_sync(fd, !full) : GC_INTENT_PASS;
		if (r == GC_INTENT_PASS)
			r = gc_sync_direct(fd, !full, GC_FROM_OSYNC);
	} else {
		gc_depth++;
		gc_report_first();
		r = gc_request(fd, !full, GC_FROM_OSYNC, ra);
		gc_depth--;
	}
	return r;
}

/* The dirty limiter (core/dirty.h): a buffered write of @n bytes through a
 * descriptor without a conversion entry (@token, read before the call) is
 * counted; past a window its writeback starts, and past the device's limit
 * the writer waits for its oldest range. Atomics only, unless a window is
 * crossed. @off is the offset of a positioned write, -1 for the position. */
static inline ssize_t dirty_after(int fd, int64_t off, ssize_t n, uint64_t token)
{
	if (n > 0 && likely(!(uint32_t)token) && likely(!gc_disabled)) {
		gc_stat_add(bytes_buffered, (uint64_t)n);
		/* configured only once the limiter has something to do; never
		 * in a thread in strict mode (it may not call fstat) */
		if (gc_dirty_count(fd, off, (uint64_t)n) && likely(!gc_strict) && likely(gc_conf()) &&
		    gc_cfg.c_dirty.dc_mode != GC_DIRTY_OFF)
			gc_dirty_slow(fd, off, (uint64_t)n);
	}
	return n;
}

/* The bytes of a write went to a converted description that the number no
 * longer names (closed, dup2'ed over or reused by another thread): a syncfs
 * of every filesystem a converted description was ever made on covers it.
 * Raw calls and the stack only: the write path stays signal-safe. */
static int sync_lost(void)
{
	uint64_t devs[GC_FD_DEVS];
	int n = gc_fd_devs(devs, GC_FD_DEVS), i, r = n ? 0 : -EIO, e;

	for (i = 0; i < n; i++) {
		e = gc_sys_syncfs_dev(devs[i]);
		if (e == -ENOENT)
			e = -EIO; /* no mount of it here: not known durable */
		if (e < 0)
			r = e;
	}
	return r;
}

/* Does @fd still name the converted description @token was read for? */
static bool still_converted(int fd, uint64_t token)
{
	uint64_t ino = gc_fd_ino(fd);
	struct stat st;

	return gc_fd_token(fd) == token && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (!ino || (uint64_t)st.st_ino == ino);
}

/* The real write returned @n on a number whose entry was @token before it;
 * make the bytes durable as O_SYNC/O_DSYNC would have. The number may have
 * changed under the write (another thread's close, dup2, reopen): then the
 * sync through it may not reach the file the bytes went to, and only the
 * filesystem-wide fallback covers them. Returns @n or -1 with errno. */
ssize_t gc_sync_after_write(int fd, ssize_t n, uint64_t token, uintptr_t ra)
{
	int conv, saved = errno, r;
	bool full;

	if (n <= 0)
		return n; /* the kernel syncs nothing for a failed or empty write */
	/* A number with no entry before the write may name a converted
	 * description by the time the bytes went in (another thread's close,
	 * open and dup2 onto it): read the entry again, then treat the write
	 * as made through whatever it names now. */
	if (!(uint32_t)token && likely(!(uint32_t)(token = gc_fd_token(fd))))
		return n;
	conv = (int)(uint32_t)token;
	full = full_sync(conv);
	/* counted for synchronous writes only: a process that never syncs
	 * makes no stats segment */
	gc_stat_add(bytes_written, (uint64_t)n);
	if (still_converted(fd, token)) {
		r = sync_fd(fd, full, ra);
		/* a failure stays a failure, whatever the number names now */
		if ((r < 0 && r != -EBADF) || still_converted(fd, token)) {
			if (r < 0) {
				errno = -r;
				return -1;
			}
			errno = saved;
			return n;
		}
	}
	r = sync_lost();
	if (gc_fd_token(fd) == token && gc_self_exact())
		gc_fd_close_end(fd, token); /* stale: the number is not the file's */
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return n;
}

/* @n bytes were written with RWF_*SYNC to a regular file we do not track,
 * which was @st before the write. */
static ssize_t sync_untracked(int fd, ssize_t n, bool full, const struct stat *st,
			      uintptr_t ra)
{
	int saved = errno, r;

	r = sync_fd(fd, full, ra);
	/* a failure stays a failure, whatever the number names now */
	if ((r == 0 || r == -EBADF) && gc_sys_fd_names(fd, st) != 1) {
		r = gc_sys_syncfs_dev(st->st_dev);
		if (r == -ENOENT)
			r = -EIO; /* no mount of it here: not known durable */
	}
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return n;
}

int gc_sync_converted(int fd, uintptr_t ra)
{
	uint64_t token = gc_fd_token(fd);

	if (!(uint32_t)token || !still_converted(fd, token))
		return 0;
	return sync_fd(fd, true, ra);
}

int gc_sync_clone(uint64_t src_token, uint64_t dst_token, int dst, uintptr_t ra)
{
	if ((!(uint32_t)src_token && !(uint32_t)dst_token) || !gc_fs_remap_syncs(dst))
		return 0;
	return sync_fd(dst, true, ra);
}

GC_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	uint64_t token, pre;

	if (unlikely(!gc_init()))
		return syscall(SYS_write, fd, buf, len);
	GC_COUNT(write);
	token = gc_fd_token(fd);
	pre = gc_intent_before(fd);
	return dirty_after(fd, -1, gc_sync_after_write(fd, gc_intent_after(fd, -1, REAL(write)(fd, buf, len), pre), token, GC_RA), token);
}

GC_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	uint64_t token, itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwrite64, fd, buf, len, off);
	GC_COUNT(pwrite);
	token = gc_fd_token(fd);
	itok = gc_intent_before(fd);
	return dirty_after(fd, off, gc_sync_after_write(fd, gc_intent_after(fd, off, REAL(pwrite)(fd, buf, len, off), itok), token, GC_RA), token);
}

GC_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	uint64_t token, itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwrite64, fd, buf, len, off);
	GC_COUNT(pwrite64);
	token = gc_fd_token(fd);
	itok = gc_intent_before(fd);
	return dirty_after(fd, off, gc_sync_after_write(fd, gc_intent_after(fd, off, REAL(pwrite64)(fd, buf, len, off), itok), token, GC_RA), token);
}

GC_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	uint64_t token, pre;

	if (unlikely(!gc_init()))
		return syscall(SYS_writev, fd, iov, cnt);
	GC_COUNT(writev);
	token = gc_fd_token(fd);
	pre = gc_intent_before(fd);
	return dirty_after(fd, -1, gc_sync_after_write(fd, gc_intent_after(fd, -1, REAL(writev)(fd, iov, cnt), pre), token, GC_RA), token);
}

GC_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	uint64_t token, itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwritev, fd, iov, cnt, off, 0);
	GC_COUNT(pwritev);
	token = gc_fd_token(fd);
	itok = gc_intent_before(fd);
	return dirty_after(fd, off, gc_sync_after_write(fd, gc_intent_after(fd, off, REAL(pwritev)(fd, iov, cnt, off), itok), token, GC_RA), token);
}

GC_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	uint64_t token, itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwritev, fd, iov, cnt, off, 0);
	GC_COUNT(pwritev64);
	token = gc_fd_token(fd);
	itok = gc_intent_before(fd);
	return dirty_after(fd, off, gc_sync_after_write(fd, gc_intent_after(fd, off, REAL(pwritev64)(fd, iov, cnt, off), itok), token, GC_RA), token);
}

static ssize_t raw_pwritev2(int fd, const struct iovec *iov, int cnt, off64_t off,
			    int flags)
{
	return syscall(SYS_pwritev2, fd, iov, cnt, off, 0, flags);
}

/* RWF_SYNC/RWF_DSYNC on a regular file become a group commit after a plain
 * pwritev2; on anything else the flags stay for the kernel. */
static ssize_t pwritev2_common(ssize_t (*real)(int, const struct iovec *, int,
					       off64_t, int),
			       int fd, const struct iovec *iov, int cnt, off64_t off,
			       int flags, uintptr_t ra)
{
	uint64_t token = gc_fd_token(fd);
	int conv = (int)(uint32_t)token;
	bool want = conv || (flags & (RWF_SYNC | RWF_DSYNC));
	bool full = full_sync(conv) || (flags & RWF_SYNC);
	struct stat st;
	ssize_t n;

	int64_t pos = (flags & RWF_APPEND_) || off < 0 ? -1 : off;
	int64_t where = unlikely(gc_intent_on) ? gc_intent_where(off, flags) : 0;
	uint64_t pre = gc_intent_before(fd);
	/* the kernel makes the bytes durable itself: the intent log retires */
	uint64_t ksync = pre && (flags & (RWF_SYNC | RWF_DSYNC)) ? GC_INTENT_TOK_KSYNC : 0;

	if (!real)
		real = raw_pwritev2;
	if (likely(!want))
		return dirty_after(fd, pos, gc_intent_after(fd, where, real(fd, iov, cnt, off, flags), pre),
				   token);
	if (gc_disabled || !gc_conf() || gc_cfg.c_osync == GC_OSYNC_KEEP)
		return gc_intent_after(fd, where, real(fd, iov, cnt, off, flags), pre | ksync);
	if (!conv) {
		int saved = errno;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			errno = saved;
			return gc_intent_after(fd, where, real(fd, iov, cnt, off, flags), pre | ksync);
		}
		errno = saved;
	}
	n = gc_intent_after(fd, where, real(fd, iov, cnt, off, flags & ~(RWF_SYNC | RWF_DSYNC)), pre);
	if (n <= 0)
		return n;
	if (!conv) /* RWF_*SYNC on a regular file we do not track */
		return sync_untracked(fd, n, full, &st, ra);
	if (full && !full_sync(conv))
		token = (token & ~(uint64_t)UINT32_MAX) | (uint32_t)O_SYNC;
	return gc_sync_after_write(fd, n, token, ra);
}

GC_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	if (unlikely(!gc_init()))
		return raw_pwritev2(fd, iov, cnt, off, flags);
	GC_COUNT(pwritev2);
	return pwritev2_common((ssize_t(*)(int, const struct iovec *, int, off64_t,
					   int))REAL(pwritev2),
			       fd, iov, cnt, off, flags, GC_RA);
}

GC_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off,
			      int flags)
{
	if (unlikely(!gc_init()))
		return raw_pwritev2(fd, iov, cnt, off, flags);
	GC_COUNT(pwritev64v2);
	return pwritev2_common(REAL(pwritev64v2), fd, iov, cnt, off, flags, GC_RA);
}

/* Data moved into a converted descriptor by the kernel (sendfile, splice,
 * copy_file_range) is made durable the same way as a write. */
GC_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t count)
{
	uint64_t itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_sendfile, out_fd, in_fd, off, count);
	GC_COUNT(sendfile);
	itok = gc_intent_before(out_fd);
	return gc_sync_after_write(out_fd, gc_intent_after(out_fd, GC_INTENT_OFF_UNKNOWN, REAL(sendfile)(out_fd, in_fd, off, count), itok),
				   gc_fd_token(out_fd), GC_RA);
}

GC_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t count)
{
	uint64_t itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_sendfile, out_fd, in_fd, off, count);
	GC_COUNT(sendfile64);
	itok = gc_intent_before(out_fd);
	return gc_sync_after_write(out_fd, gc_intent_after(out_fd, GC_INTENT_OFF_UNKNOWN, REAL(sendfile64)(out_fd, in_fd, off, count), itok),
				   gc_fd_token(out_fd), GC_RA);
}

GC_EXPORT ssize_t splice(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off,
			 size_t len, unsigned int flags)
{
	uint64_t itok;

	if (unlikely(!gc_init()))
		return syscall(SYS_splice, in_fd, in_off, out_fd, out_off, len, flags);
	GC_COUNT(splice);
	itok = gc_intent_before(out_fd);
	return gc_sync_after_write(out_fd, gc_intent_after(out_fd, GC_INTENT_OFF_UNKNOWN, REAL(splice)(in_fd, in_off, out_fd, out_off, len, flags), itok),
				   gc_fd_token(out_fd), GC_RA);
}

/* xfs and btrfs make a copy_file_range a clone where they can, and commit
 * a clone when either description is O_SYNC or O_DSYNC: the source's flag
 * counts there too (gc_sync_clone). */
GC_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd,
				  off64_t *out_off, size_t len, unsigned int flags)
{
	uint64_t itok, in_tok, out_tok;
	ssize_t n;
	int r;

	if (unlikely(!gc_init()))
		return syscall(SYS_copy_file_range, in_fd, in_off, out_fd, out_off, len, flags);
	GC_COUNT(copy_file_range);
	in_tok = gc_fd_token(in_fd);
	out_tok = gc_fd_token(out_fd);
	itok = gc_intent_before(out_fd);
	n = gc_sync_after_write(out_fd,
				gc_intent_after(out_fd, GC_INTENT_OFF_UNKNOWN,
						REAL(copy_file_range)(in_fd, in_off, out_fd, out_off,
									len, flags),
						itok),
				out_tok, GC_RA);
	/* the source's flag: a full sync, unless the destination's made one */
	if (likely(!(uint32_t)in_tok) || n <= 0 || full_sync((int)(uint32_t)out_tok))
		return n;
	r = gc_sync_clone(in_tok, 0, out_fd, GC_RA);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return n;
}

/* Asynchronous writes (POSIX aio, Linux aio) are made by threads or the
 * kernel round every wrapper: their descriptors get their real O_SYNC or
 * O_DSYNC back first (gc_unseen_writes), so the writes are as synchronous
 * as the program asked, only not grouped. */
#define AIO_GIVE_BACK(fd)                      \
	do {                                   \
		int e_ = gc_unseen_writes(fd); \
		if (unlikely(e_ < 0)) {        \
			errno = -e_;           \
			return -1;             \
		}                              \
	} while (0)

static int no_aio(void)
{
	errno = ENOSYS;
	return -1;
}

GC_EXPORT int aio_write(struct aiocb *cb)
{
	if (unlikely(!gc_init()))
		return REAL(aio_write) ? REAL(aio_write)(cb) : no_aio();
	GC_COUNT(aio_write);
	AIO_GIVE_BACK(cb->aio_fildes);
	return REAL(aio_write) ? REAL(aio_write)(cb) : no_aio();
}

GC_EXPORT int aio_write64(struct aiocb64 *cb)
{
	if (unlikely(!gc_init()))
		return REAL(aio_write64) ? REAL(aio_write64)(cb) : no_aio();
	GC_COUNT(aio_write64);
	AIO_GIVE_BACK(cb->aio_fildes);
	return REAL(aio_write64) ? REAL(aio_write64)(cb) : no_aio();
}

GC_EXPORT int lio_listio(int mode, struct aiocb *const list[], int n, struct sigevent *sig)
{
	if (unlikely(!gc_init()))
		return REAL(lio_listio) ? REAL(lio_listio)(mode, list, n, sig)
						: no_aio();
	GC_COUNT(lio_listio);
	for (int i = 0; i < n; i++)
		if (list[i] && list[i]->aio_lio_opcode == LIO_WRITE)
			AIO_GIVE_BACK(list[i]->aio_fildes);
	return REAL(lio_listio) ? REAL(lio_listio)(mode, list, n, sig) : no_aio();
}

GC_EXPORT int lio_listio64(int mode, struct aiocb64 *const list[], int n, struct sigevent *sig)
{
	if (unlikely(!gc_init()))
		return REAL(lio_listio64) ? REAL(lio_listio64)(mode, list, n, sig)
						  : no_aio();
	GC_COUNT(lio_listio64);
	for (int i = 0; i < n; i++)
		if (list[i] && list[i]->aio_lio_opcode == LIO_WRITE)
			AIO_GIVE_BACK(list[i]->aio_fildes);
	return REAL(lio_listio64) ? REAL(lio_listio64)(mode, list, n, sig) : no_aio();
}

/* libaio's io_submit (its struct iocb is the kernel's layout), which, as
 * libaio does, returns the count submitted or -errno. Without libaio in
 * the process, the system call. */
GC_EXPORT int io_submit(aio_context_t ctx, long n, struct iocb **iocbs)
{
	long r;

	if (likely(gc_init())) {
		GC_COUNT(io_submit);
		for (long i = 0; iocbs && i < n; i++) {
			const struct iocb *cb = iocbs[i];
			int e;

			if (cb && (cb->aio_lio_opcode == IOCB_CMD_PWRITE ||
				   cb->aio_lio_opcode == IOCB_CMD_PWRITEV) &&
			    (e = gc_unseen_writes((int)cb->aio_fildes)) < 0)
				return e;
		}
	}
	/* libaio's, found at the first call (a dlsym: libc does not have
	 * it); NULL without libaio */
	if (likely(REAL(io_submit)))
		return REAL(io_submit)(ctx, n, iocbs);
	r = syscall(SYS_io_submit, ctx, n, iocbs);
	return r < 0 ? -errno : (int)r;
}

/* prctl: a thread about to enter seccomp's strict mode (read, write and
 * exit only; any other call kills it) could not sync for a converted
 * descriptor: every one gets its real O_SYNC/O_DSYNC back first, and no
 * open converts any more. Once in, the thread is noted, so that the write
 * family makes no call of its own there. Fails closed: a descriptor that
 * cannot get its flag back fails the call. Strict mode entered by the raw
 * seccomp system call is not seen (docs/limitations.md). */
GC_EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	bool strict;
	va_list ap;
	int r, i;

	va_start(ap, option);
	for (i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
	GC_COUNT(prctl);
	strict = option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_STRICT;
	if (unlikely(strict) && (r = gc_osync_stop("seccomp's strict mode is refused")) < 0) {
		errno = -r;
		return -1;
	}
	r = REAL(prctl)(option, a[0], a[1], a[2], a[3]);
	if (r == 0 && strict)
		gc_strict = true;
	return r;
}
