/* The open family and descriptor bookkeeping: O_SYNC/O_DSYNC conversion at
 * open, copies on dup*, forgetting on close*, and fcntl(F_GETFL) reporting the
 * flag the program asked for. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "core/log.h"
#include "shim/shim.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int close_range(unsigned int first, unsigned int last, int flags);

enum open_variant { OV_OPEN, OV_OPEN64, OV_OPENAT, OV_OPENAT64,
		    OV_OPEN_2, OV_OPEN64_2, OV_OPENAT_2, OV_OPENAT64_2 };

static int real_open(enum open_variant v, int dirfd, const char *path, int flags,
		     mode_t mode)
{
	switch (v) {
	case OV_OPEN:
		return gc_real.open(path, flags, mode);
	case OV_OPEN64:
		return gc_real.open64(path, flags, mode);
	case OV_OPENAT:
		return gc_real.openat(dirfd, path, flags, mode);
	case OV_OPENAT64:
		return gc_real.openat64(dirfd, path, flags, mode);
	case OV_OPEN_2:
		return gc_real.__open_2(path, flags);
	case OV_OPEN64_2:
		return gc_real.__open64_2(path, flags);
	case OV_OPENAT_2:
		return gc_real.__openat_2(dirfd, path, flags);
	case OV_OPENAT64_2:
		return gc_real.__openat64_2(dirfd, path, flags);
	}
	return -1;
}

int gc_materialize(int fd, int sync_flags)
{
	char path[64];
	int fl, fdfl, tmp, r, e;
	off_t off;

	fl = gc_real.fcntl(fd, F_GETFL);
	fdfl = gc_real.fcntl(fd, F_GETFD);
	if (fl < 0 || fdfl < 0)
		return -errno;
	off = lseek(fd, 0, SEEK_CUR);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	tmp = gc_real.open(path, (fl & ~(O_CREAT | O_EXCL | O_TRUNC)) | sync_flags | O_CLOEXEC |
					 O_NOCTTY, 0);
	if (tmp < 0)
		return -errno;
	if (off >= 0)
		lseek(tmp, off, SEEK_SET);
	r = gc_real.dup3(tmp, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	e = errno;
	gc_real.close(tmp);
	return r < 0 ? -e : 0;
}

int gc_conv_checked(int fd)
{
	uint64_t token = gc_fd_close_begin(fd), ino;
	int conv = (int)(uint32_t)token, saved;
	struct stat st;

	if (!conv)
		return 0;
	ino = gc_fd_ino(fd);
	saved = errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (!ino || (uint64_t)st.st_ino == ino)) {
		errno = saved;
		return conv;
	}
	/* Closed or reused behind our back (stdio's fclose uses glibc's
	 * internal close): the entry is not this descriptor's. */
	gc_fd_close_end(fd, token);
	errno = saved;
	return 0;
}

/* open with O_SYNC/O_DSYNC converted for regular files. Returns fd or -errno. */
static int open_converted(enum open_variant v, int dirfd, const char *path,
			  int flags, mode_t mode)
{
	int sync_flags = flags & O_SYNC, fd, r;
	struct stat st;

	/* An existing non-regular file keeps its flags: opening a device or a
	 * FIFO twice to find out would have side effects. */
	if ((flags & O_TMPFILE) != O_TMPFILE &&
	    fstatat(dirfd, path, &st, (flags & O_NOFOLLOW) ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
	    !S_ISREG(st.st_mode)) {
		fd = real_open(v, dirfd, path, flags, mode);
		return fd < 0 ? -errno : fd;
	}
	fd = real_open(v, dirfd, path, flags & ~O_SYNC, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && gc_fd_set(fd, sync_flags) == 0) {
		gc_fd_bind(fd, (uint64_t)st.st_ino);
		return fd;
	}
	r = gc_materialize(fd, sync_flags);
	if (r < 0) {
		/* Never hand out a descriptor that lost its O_SYNC. */
		gc_log(GC_LOG_WARN, "cannot restore O_SYNC on %s: %s", path, strerror(-r));
		gc_real.close(fd);
		return r;
	}
	return fd;
}

static int open_common(enum open_variant v, int dirfd, const char *path, int flags,
		       mode_t mode)
{
	int saved = errno, r;

	if (gc_disabled || gc_depth || !(flags & O_DSYNC) || (flags & O_PATH) ||
	    gc_cfg.c_osync == GC_OSYNC_KEEP)
		return real_open(v, dirfd, path, flags, mode);
	gc_depth++;
	r = open_converted(v, dirfd, path, flags, mode);
	gc_depth--;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return r;
}

static int raw_open(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

#define OPEN_MODE(flags, mode)                                                      \
	do {                                                                        \
		if (__OPEN_NEEDS_MODE(flags)) {                                     \
			va_list ap;                                                 \
			va_start(ap, flags);                                        \
			mode = va_arg(ap, mode_t);                                  \
			va_end(ap);                                                 \
		}                                                                   \
	} while (0)

GC_EXPORT int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, flags, mode);
	GC_COUNT(open);
	return open_common(OV_OPEN, AT_FDCWD, path, flags, mode);
}

GC_EXPORT int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, flags | O_LARGEFILE, mode);
	GC_COUNT(open64);
	return open_common(OV_OPEN64, AT_FDCWD, path, flags, mode);
}

GC_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	if (unlikely(!gc_init()))
		return raw_open(dirfd, path, flags, mode);
	GC_COUNT(openat);
	return open_common(OV_OPENAT, dirfd, path, flags, mode);
}

GC_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	OPEN_MODE(flags, mode);
	if (unlikely(!gc_init()))
		return raw_open(dirfd, path, flags | O_LARGEFILE, mode);
	GC_COUNT(openat64);
	return open_common(OV_OPENAT64, dirfd, path, flags, mode);
}

GC_EXPORT int __open_2(const char *path, int flags)
{
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, flags, 0);
	GC_COUNT(__open_2);
	return open_common(OV_OPEN_2, AT_FDCWD, path, flags, 0);
}

GC_EXPORT int __open64_2(const char *path, int flags)
{
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, flags | O_LARGEFILE, 0);
	GC_COUNT(__open64_2);
	return open_common(OV_OPEN64_2, AT_FDCWD, path, flags, 0);
}

GC_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	if (unlikely(!gc_init()))
		return raw_open(dirfd, path, flags, 0);
	GC_COUNT(__openat_2);
	return open_common(OV_OPENAT_2, dirfd, path, flags, 0);
}

GC_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	if (unlikely(!gc_init()))
		return raw_open(dirfd, path, flags | O_LARGEFILE, 0);
	GC_COUNT(__openat64_2);
	return open_common(OV_OPENAT64_2, dirfd, path, flags, 0);
}

/* creat() cannot ask for O_SYNC: counted and passed through. */
GC_EXPORT int creat(const char *path, mode_t mode)
{
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
	GC_COUNT(creat);
	return gc_real.creat(path, mode);
}

GC_EXPORT int creat64(const char *path, mode_t mode)
{
	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE,
				mode);
	GC_COUNT(creat64);
	return gc_real.creat64(path, mode);
}

GC_EXPORT int close(int fd)
{
	uint64_t token;
	int r, saved;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_close, fd);
	GC_COUNT(close);
	/* Forget the entry only after the real close: until then another
	 * thread's write through @fd must still be made durable. */
	token = gc_fd_close_begin(fd);
	r = gc_real.close(fd);
	saved = errno;
	gc_fd_close_end(fd, token);
	errno = saved;
	return r;
}

#define CR_BATCH 256

GC_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	struct { int fd; uint64_t token; } seen[CR_BATCH];
	int n = 0, fd, r, saved, i;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_close_range, first, last, flags);
	GC_COUNT(close_range);
	if (flags & CLOSE_RANGE_CLOEXEC)
		return gc_real.close_range ? gc_real.close_range(first, last, flags)
					   : (int)syscall(SYS_close_range, first, last, flags);
	for (fd = gc_fd_next((int)(first > INT32_MAX ? INT32_MAX : first));
	     fd >= 0 && (unsigned)fd <= last && n < CR_BATCH; fd = gc_fd_next(fd + 1)) {
		seen[n].fd = fd;
		seen[n++].token = gc_fd_close_begin(fd);
	}
	r = gc_real.close_range ? gc_real.close_range(first, last, flags)
				: (int)syscall(SYS_close_range, first, last, flags);
	saved = errno;
	if (r == 0) {
		for (i = 0; i < n; i++)
			gc_fd_close_end(seen[i].fd, seen[i].token);
		/* More converted descriptors than we could snapshot: clear the
		 * rest outright (an entry that outlives its fd only costs syncs). */
		if (n == CR_BATCH && (unsigned)seen[n - 1].fd < last)
			gc_fd_clear_range((unsigned)seen[n - 1].fd + 1, last);
	}
	errno = saved;
	return r;
}

/* @r is the new descriptor from a dup-like call on @oldfd. */
static int dup_track(int oldfd, int r)
{
	int conv = r >= 0 ? gc_fd_get(oldfd) : 0;

	if (!conv)
		return r;
	gc_fd_copy(oldfd, r);
	if (gc_fd_get(r) != conv) {
		/* The copy could not be tracked: it would lose O_SYNC. */
		int e = gc_materialize(r, conv);

		if (e < 0) {
			gc_real.close(r);
			errno = -e;
			return -1;
		}
	}
	return r;
}

GC_EXPORT int dup(int oldfd)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup, oldfd);
	GC_COUNT(dup);
	return dup_track(oldfd, gc_real.dup(oldfd));
}

/* dup2/dup3 replace @newfd: its entry becomes a copy of @oldfd's (or none). */
static int dup_onto(int oldfd, int newfd, int r)
{
	int saved = errno;

	if (r >= 0 && oldfd != newfd) {
		if (gc_fd_get(oldfd))
			return dup_track(oldfd, r);
		gc_fd_set(newfd, 0);
	}
	errno = saved;
	return r;
}

GC_EXPORT int dup2(int oldfd, int newfd)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup2, oldfd, newfd);
	GC_COUNT(dup2);
	return dup_onto(oldfd, newfd, gc_real.dup2(oldfd, newfd));
}

GC_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup3, oldfd, newfd, flags);
	GC_COUNT(dup3);
	return dup_onto(oldfd, newfd, gc_real.dup3(oldfd, newfd, flags));
}

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	int r;

	r = real ? real(fd, cmd, arg) : (int)syscall(SYS_fcntl, fd, cmd, arg);
	switch (cmd) {
	case F_GETFL:
		if (r >= 0)
			r |= gc_conv_checked(fd);
		break;
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		r = dup_track(fd, r);
		break;
	}
	return r;
}

/* The third argument is an int or a pointer depending on @cmd; on the ABIs
 * we support both travel in the same register, so it is passed on as is. */
GC_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fcntl, fd, cmd, arg);
	GC_COUNT(fcntl);
	return fcntl_common(gc_real.fcntl, fd, cmd, arg);
}

GC_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fcntl, fd, cmd, arg);
	GC_COUNT(fcntl64);
	return fcntl_common(gc_real.fcntl64, fd, cmd, arg);
}

/* stdio writes through glibc's internal write, which we cannot see: give a
 * converted descriptor its real flag back before stdio takes it over. */
GC_EXPORT FILE *fdopen(int fd, const char *mode)
{
	int conv;

	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(fdopen)(fd, mode);
	GC_COUNT(fdopen);
	conv = gc_conv_checked(fd);
	if (conv) {
		int saved = errno, r = gc_materialize(fd, conv);

		if (r < 0) {
			errno = -r;
			return NULL;
		}
		gc_fd_set(fd, 0);
		errno = saved;
	}
	return gc_real.fdopen(fd, mode);
}
