/* The write family. A write to a descriptor whose O_SYNC/O_DSYNC was
 * converted, or a pwritev2 with RWF_SYNC/RWF_DSYNC on a regular file, is
 * completed by a group commit before it returns. Everything else is one
 * table lookup on top of the real call: no lock, no allocation. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "journal/journal.h"
#include "shim/shim.h"

#ifndef RWF_DSYNC
#define RWF_DSYNC 0x00000002
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x00000004
#endif

static inline bool full_sync(int flags)
{
	return (flags & O_SYNC) == O_SYNC;
}

/* @n bytes were written to @fd (a regular file): make them durable as
 * O_SYNC (@full) or O_DSYNC would have, then return @n, or -1 with errno. */
static ssize_t sync_written(int fd, ssize_t n, bool full)
{
	int saved = errno, r;

	if (gc_depth) {
		/* Nested or from a signal handler: no coordinator here. */
		r = gc_sync_direct(fd, !full, GC_FROM_OSYNC);
	} else {
		gc_depth++;
		r = gc_sync(fd, !full, GC_FROM_OSYNC);
		gc_depth--;
	}
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return n;
}

/* The real write returned @n; make it durable as O_SYNC/O_DSYNC would have.
 * @conv: the converted flags (O_SYNC asks data and metadata). */
ssize_t gc_sync_after_write(int fd, ssize_t n, int conv)
{
	int now;

	if (n <= 0)
		return n; /* the kernel syncs nothing for a failed or empty write */
	now = gc_conv_checked(fd);
	if (!now)
		return n; /* a stale entry: not a converted descriptor after all */
	return sync_written(fd, n, full_sync(conv | now));
}

GC_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_write, fd, buf, len);
	GC_COUNT(write);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.write(fd, buf, len);
	return gc_sync_after_write(fd, gc_real.write(fd, buf, len), conv);
}

GC_EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwrite64, fd, buf, len, off);
	GC_COUNT(pwrite);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.pwrite(fd, buf, len, off);
	return gc_sync_after_write(fd, gc_real.pwrite(fd, buf, len, off), conv);
}

GC_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwrite64, fd, buf, len, off);
	GC_COUNT(pwrite64);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.pwrite64(fd, buf, len, off);
	return gc_sync_after_write(fd, gc_real.pwrite64(fd, buf, len, off), conv);
}

GC_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_writev, fd, iov, cnt);
	GC_COUNT(writev);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.writev(fd, iov, cnt);
	return gc_sync_after_write(fd, gc_real.writev(fd, iov, cnt), conv);
}

GC_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwritev, fd, iov, cnt, off, 0);
	GC_COUNT(pwritev);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.pwritev(fd, iov, cnt, off);
	return gc_sync_after_write(fd, gc_real.pwritev(fd, iov, cnt, off), conv);
}

GC_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
	int conv;

	if (unlikely(!gc_init()))
		return syscall(SYS_pwritev, fd, iov, cnt, off, 0);
	GC_COUNT(pwritev64);
	conv = gc_fd_get(fd);
	if (likely(!conv))
		return gc_real.pwritev64(fd, iov, cnt, off);
	return gc_sync_after_write(fd, gc_real.pwritev64(fd, iov, cnt, off), conv);
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
			       int flags)
{
	int conv = gc_fd_get(fd);
	bool want = conv || (flags & (RWF_SYNC | RWF_DSYNC));
	bool full = full_sync(conv) || (flags & RWF_SYNC);
	struct stat st;
	ssize_t n;

	if (!real)
		real = raw_pwritev2;
	if (likely(!want) || gc_disabled || gc_cfg.c_osync == GC_OSYNC_KEEP)
		return real(fd, iov, cnt, off, flags);
	if (!conv) {
		int saved = errno;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			errno = saved;
			return real(fd, iov, cnt, off, flags);
		}
		errno = saved;
	}
	n = real(fd, iov, cnt, off, flags & ~(RWF_SYNC | RWF_DSYNC));
	if (n <= 0)
		return n;
	if (!conv) /* RWF_*SYNC on a regular file we do not track */
		return sync_written(fd, n, full);
	return gc_sync_after_write(fd, n, full ? O_SYNC : O_DSYNC);
}

GC_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	if (unlikely(!gc_init()))
		return raw_pwritev2(fd, iov, cnt, off, flags);
	GC_COUNT(pwritev2);
	return pwritev2_common((ssize_t(*)(int, const struct iovec *, int, off64_t,
					   int))gc_real.pwritev2,
			       fd, iov, cnt, off, flags);
}

GC_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off,
			      int flags)
{
	if (unlikely(!gc_init()))
		return raw_pwritev2(fd, iov, cnt, off, flags);
	GC_COUNT(pwritev64v2);
	return pwritev2_common(gc_real.pwritev64v2, fd, iov, cnt, off, flags);
}

/* Data moved into a converted descriptor by the kernel (sendfile, splice,
 * copy_file_range) is made durable the same way as a write. */
GC_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t count)
{
	if (unlikely(!gc_init()))
		return syscall(SYS_sendfile, out_fd, in_fd, off, count);
	GC_COUNT(sendfile);
	return gc_sync_after_write(out_fd, gc_real.sendfile(out_fd, in_fd, off, count),
				   gc_fd_get(out_fd));
}

GC_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t count)
{
	if (unlikely(!gc_init()))
		return syscall(SYS_sendfile, out_fd, in_fd, off, count);
	GC_COUNT(sendfile64);
	return gc_sync_after_write(out_fd, gc_real.sendfile64(out_fd, in_fd, off, count),
				   gc_fd_get(out_fd));
}

GC_EXPORT ssize_t splice(int in_fd, off64_t *in_off, int out_fd, off64_t *out_off,
			 size_t len, unsigned int flags)
{
	if (unlikely(!gc_init()))
		return syscall(SYS_splice, in_fd, in_off, out_fd, out_off, len, flags);
	GC_COUNT(splice);
	return gc_sync_after_write(out_fd,
				   gc_real.splice(in_fd, in_off, out_fd, out_off, len, flags),
				   gc_fd_get(out_fd));
}

GC_EXPORT ssize_t copy_file_range(int in_fd, off64_t *in_off, int out_fd,
				  off64_t *out_off, size_t len, unsigned int flags)
{
	if (unlikely(!gc_init()))
		return syscall(SYS_copy_file_range, in_fd, in_off, out_fd, out_off, len, flags);
	GC_COUNT(copy_file_range);
	return gc_sync_after_write(out_fd,
				   gc_real.copy_file_range(in_fd, in_off, out_fd, out_off, len,
							   flags),
				   gc_fd_get(out_fd));
}
