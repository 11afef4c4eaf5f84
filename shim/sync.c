// SPDX-License-Identifier: LGPL-2.1-or-later
/* The fsync family. fsync/fdatasync go through the journal; the rest is
 * passed through and counted. fsync stays a cancellation point. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/stats.h"
#include "journal/intent.h"
#include "journal/journal.h"
#include "shim/shim.h"

static int sync_common(int fd, bool datasync, uintptr_t ra)
{
	enum gc_origin origin = datasync ? GC_FROM_FDATASYNC : GC_FROM_FSYNC;
	int saved = errno, r;

	pthread_testcancel();
	gc_depth++;
	gc_report_first();
	r = gc_request(fd, datasync, origin, ra);
	gc_depth--;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return 0;
}

/* Nested or from a signal handler, with the intent log on: the real call,
 * and the RETIRE of the file's records (journal/intent.h). */
static int nested_intent(int fd, bool datasync)
{
	int r = gc_intent_nested_sync(fd, datasync);

	if (r == GC_INTENT_PASS)
		return datasync ? REAL(fdatasync)(fd) : REAL(fsync)(fd);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

GC_EXPORT int fsync(int fd)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fsync, fd);
	GC_COUNT(fsync);
	if (unlikely(gc_intent_on) && gc_depth)
		return nested_intent(fd, false);
	/* Disabled, nested, or a signal handler that interrupted the library:
	 * the kernel's own answer, as bare. No error of the file is held
	 * anywhere else (DESIGN rule 8), so there is nothing to add to it. */
	if (gc_disabled || gc_depth || !gc_conf())
		return REAL(fsync)(fd);
	return sync_common(fd, false, (uintptr_t)__builtin_return_address(0));
}

GC_EXPORT int fdatasync(int fd)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fdatasync, fd);
	GC_COUNT(fdatasync);
	if (unlikely(gc_intent_on) && gc_depth)
		return nested_intent(fd, true);
	/* as fsync's */
	if (gc_disabled || gc_depth || !gc_conf())
		return REAL(fdatasync)(fd);
	return sync_common(fd, true, (uintptr_t)__builtin_return_address(0));
}

GC_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_sync_file_range, fd, off, n, flags);
	GC_COUNT(sync_file_range);
	gc_stat_inc(pass_sync_file_range);
	return REAL(sync_file_range)(fd, off, n, flags);
}

GC_EXPORT int syncfs(int fd)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_syncfs, fd);
	GC_COUNT(syncfs);
	gc_stat_inc(pass_syncfs);
	if (unlikely(gc_intent_on) && !gc_disabled) {
		int r = REAL(syncfs)(fd);

		r = gc_intent_syncfs(fd, r < 0 ? -errno : 0);
		if (r < 0) {
			errno = -r;
			return -1;
		}
		return 0;
	}
	return REAL(syncfs)(fd);
}

GC_EXPORT void sync(void)
{
	if (unlikely(!gc_init())) {
		syscall(SYS_sync);
		return;
	}
	GC_COUNT(sync);
	gc_stat_inc(pass_sync);
	REAL(sync)();
	if (unlikely(gc_intent_on) && !gc_disabled)
		gc_intent_syncfs(-1, 0);
}

GC_EXPORT int msync(void *addr, size_t len, int flags)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_msync, addr, len, flags);
	GC_COUNT(msync);
	gc_stat_inc(pass_msync);
	return REAL(msync)(addr, len, flags);
}
