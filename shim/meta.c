// SPDX-License-Identifier: LGPL-2.1-or-later
/* Calls that change a file other than by writing its bytes: truncate,
 * fallocate, clones (ioctl), rename, unlink, and writable shared mmap. Passed through;
 * with the intent log on, a file that has records there is checkpointed
 * first (journal/intent.h). Otherwise one branch on top of the real call. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "journal/intent.h"
#include "shim/shim.h"

/* The call, counted as a change of the file and, with the intent log on,
 * its file checkpointed first when it has records there. */
#define META(tok, call)                                                             \
	({                                                                          \
		__typeof__(call) r_ = (call);                                       \
		if (unlikely(tok))                                                  \
			gc_intent_meta_done(tok);                                   \
		r_;                                                                 \
	})
/* The caller of an exported function: its call site */
#define GC_RA ((uintptr_t)__builtin_return_address(0))
#define META_PATH(dirfd, path, how)                                                 \
	(unlikely(gc_intent_on) && !gc_disabled ? gc_intent_meta_path(dirfd, path, how) : 0)
#define META_FD(fd, mapped)                                                         \
	(unlikely(gc_intent_on) && !gc_disabled ? gc_intent_meta_fd(fd, mapped) : 0)

GC_EXPORT int truncate(const char *path, off_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_truncate, path, len);
	GC_COUNT(truncate);
	t = META_PATH(AT_FDCWD, path, 0);
	return META(t, REAL(truncate)(path, len));
}

GC_EXPORT int truncate64(const char *path, off64_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_truncate, path, len);
	GC_COUNT(truncate64);
	t = META_PATH(AT_FDCWD, path, 0);
	return META(t, REAL(truncate64)(path, len));
}

GC_EXPORT int ftruncate(int fd, off_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_ftruncate, fd, len);
	GC_COUNT(ftruncate);
	t = META_FD(fd, false);
	return META(t, REAL(ftruncate)(fd, len));
}

GC_EXPORT int ftruncate64(int fd, off64_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_ftruncate, fd, len);
	GC_COUNT(ftruncate64);
	t = META_FD(fd, false);
	return META(t, REAL(ftruncate64)(fd, len));
}

/* ext4 and XFS commit a fallocate made through an O_SYNC or O_DSYNC
 * description before it returns: through a converted one a sync request
 * does. @r is the call's 0 or errno number (posix_fallocate's way). */
static int falloc_synced(int fd, int r, uintptr_t ra)
{
	if (r == 0 && unlikely((uint32_t)gc_fd_token(fd)))
		r = -gc_sync_converted(fd, ra);
	return r;
}

static int falloc_ret(int fd, int r, uintptr_t ra)
{
	int saved = errno;

	if (r != 0)
		return r;
	r = falloc_synced(fd, 0, ra);
	if (r) {
		errno = r;
		return -1;
	}
	errno = saved;
	return 0;
}

GC_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fallocate, fd, mode, off, len);
	GC_COUNT(fallocate);
	t = META_FD(fd, false);
	return falloc_ret(fd, META(t, REAL(fallocate)(fd, mode, off, len)), GC_RA);
}

GC_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fallocate, fd, mode, off, len);
	GC_COUNT(fallocate64);
	t = META_FD(fd, false);
	return falloc_ret(fd, META(t, REAL(fallocate64)(fd, mode, off, len)), GC_RA);
}

/* glibc's posix_fallocate makes its system call (or writes zeros) inside
 * libc: seen here, for the intent log and for converted descriptors. */
GC_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return REAL(posix_fallocate)(fd, off, len);
	GC_COUNT(posix_fallocate);
	t = META_FD(fd, false);
	return falloc_synced(fd, META(t, REAL(posix_fallocate)(fd, off, len)), GC_RA);
}

GC_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return REAL(posix_fallocate64)(fd, off, len);
	GC_COUNT(posix_fallocate64);
	t = META_FD(fd, false);
	return falloc_synced(fd, META(t, REAL(posix_fallocate64)(fd, off, len)), GC_RA);
}

/* A clone of blocks (FICLONE, FICLONERANGE into @fd; FIDEDUPERANGE from
 * @fd into each of its destinations) is committed by xfs and btrfs before
 * it returns when either description is O_SYNC or O_DSYNC: where one is
 * converted, a sync request follows (gc_sync_clone). A dedupe's
 * destination whose sync failed reports that in its status, as one the
 * kernel failed would; a clone's fails the call. Every other request is
 * one comparison on top of the real call. */
static int clone_ioctl(int fd, unsigned long req, void *arg, uintptr_t ra)
{
	uint64_t t = 0, src_tok, dst_tok;
	int r, e;

	if (req == FIDEDUPERANGE) {
		struct file_dedupe_range *d = arg;

		src_tok = gc_fd_token(fd);
		r = REAL(ioctl)(fd, req, arg);
		if (r != 0)
			return r;
		e = errno;
		for (unsigned int i = 0; i < d->dest_count; i++) {
			struct file_dedupe_range_info *x = &d->info[i];
			int s, to = (int)x->dest_fd;

			if (x->status == FILE_DEDUPE_RANGE_SAME && x->bytes_deduped &&
			    (s = gc_sync_clone(src_tok, gc_fd_token(to), to, ra)) < 0)
				x->status = s;
		}
		errno = e;
		return 0;
	}
	/* the source: the argument itself, or read once the kernel has */
	src_tok = req == FICLONE ? gc_fd_token((int)(intptr_t)arg) : 0;
	dst_tok = gc_fd_token(fd);
	t = META_FD(fd, false);
	r = META(t, REAL(ioctl)(fd, req, arg));
	if (r != 0)
		return r;
	if (req == FICLONERANGE)
		src_tok = gc_fd_token((int)((struct file_clone_range *)arg)->src_fd);
	e = gc_sync_clone(src_tok, dst_tok, fd, ra);
	if (e < 0) {
		errno = -e;
		return -1;
	}
	return 0;
}

GC_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_ioctl, fd, req, arg);
	GC_COUNT(ioctl);
	/* the kernel reads the request as 32 bits: a number passed as a
	 * negative int is still the one it names */
	if (likely((unsigned int)req != FICLONE && (unsigned int)req != FICLONERANGE &&
		   (unsigned int)req != FIDEDUPERANGE))
		return REAL(ioctl)(fd, req, arg);
	return clone_ioctl(fd, (unsigned int)req, arg, GC_RA);
}

GC_EXPORT int rename(const char *from, const char *to)
{
	uint64_t t = 0, u = 0;
	int r;

	if (unlikely(!gc_init()))
#ifdef SYS_rename
		return (int)syscall(SYS_rename, from, to);
#else
		return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
#endif
	GC_COUNT(rename);
	u = META_PATH(AT_FDCWD, from, GC_INTENT_NOFOLLOW);
	t = META_PATH(AT_FDCWD, to, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	r = META(t, REAL(rename)(from, to));
	if (unlikely(u))
		gc_intent_meta_done(u);
	return r;
}

GC_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	uint64_t t = 0, u = 0;
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_renameat2, fromfd, from, tofd, to, 0);
	GC_COUNT(renameat);
	u = META_PATH(fromfd, from, GC_INTENT_NOFOLLOW);
	t = META_PATH(tofd, to, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	r = META(t, REAL(renameat)(fromfd, from, tofd, to));
	if (unlikely(u))
		gc_intent_meta_done(u);
	return r;
}

GC_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to,
			unsigned int flags)
{
	uint64_t t = 0, u = 0;
	int r;

	if (unlikely(!gc_init()) || !REAL(renameat2))
		return (int)syscall(SYS_renameat2, fromfd, from, tofd, to, flags);
	GC_COUNT(renameat2);
	u = META_PATH(fromfd, from, GC_INTENT_NOFOLLOW);
	t = META_PATH(tofd, to, GC_INTENT_NOFOLLOW | (flags & RENAME_EXCHANGE ? 0 : GC_INTENT_GONE));
	r = META(t, REAL(renameat2)(fromfd, from, tofd, to, flags));
	if (unlikely(u))
		gc_intent_meta_done(u);
	return r;
}

GC_EXPORT int unlink(const char *path)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
#ifdef SYS_unlink
		return (int)syscall(SYS_unlink, path);
#else
		return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
#endif
	GC_COUNT(unlink);
	t = META_PATH(AT_FDCWD, path, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return META(t, REAL(unlink)(path));
}

GC_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_unlinkat, dirfd, path, flags);
	GC_COUNT(unlinkat);
	if (!(flags & AT_REMOVEDIR))
		t = META_PATH(dirfd, path, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return META(t, REAL(unlinkat)(dirfd, path, flags));
}

/* A writable shared mapping: its stores are never seen, so the file is
 * checkpointed and never logged again. */
#define MAPS_WRITES(prot, flags, fd) ((fd) >= 0 && ((flags) & MAP_SHARED) && ((prot) & PROT_WRITE))

/* A map of an io_uring's submission entries (every ring has one, at this
 * offset of its descriptor, unless made with IORING_SETUP_NO_MMAP). */
#define IORING_OFF_SQES_ 0x10000000LL

static void uring_check(int fd, int flags)
{
	char link[32], path[40];
	int saved = errno;
	ssize_t n;

	if (!(flags & MAP_SHARED))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	if (n == 21 && !memcmp(link, "anon_inode:[io_uring]", 21))
		gc_osync_stop("writes through io_uring to it are not synchronous");
	errno = saved;
}
#define URING_CHECK(fd, flags, off)                          \
	do {                                                 \
		if (unlikely((off) == IORING_OFF_SQES_ && (fd) >= 0)) \
			uring_check((fd), (flags));          \
	} while (0)

GC_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	GC_COUNT(mmap);
	URING_CHECK(fd, flags, off);
	if (MAPS_WRITES(prot, flags, fd))
		t = META_FD(fd, true);
	return META(t, REAL(mmap)(addr, len, prot, flags, fd, off));
}

GC_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	uint64_t t = 0;

	if (unlikely(!gc_init()))
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	GC_COUNT(mmap64);
	URING_CHECK(fd, flags, off);
	if (MAPS_WRITES(prot, flags, fd))
		t = META_FD(fd, true);
	return META(t, REAL(mmap64)(addr, len, prot, flags, fd, off));
}
