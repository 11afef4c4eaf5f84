/* Calls that change a file other than by writing its bytes: truncate,
 * fallocate, rename, unlink, and writable shared mmap. Passed through;
 * with the intent log on, a file that has records there is checkpointed
 * first (journal/intent.h). Otherwise one branch on top of the real call. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "journal/intent.h"
#include "shim/shim.h"

#define META_PATH(dirfd, path, how)                                                 \
	do {                                                                        \
		if (unlikely(gc_intent_on) && !gc_disabled)                         \
			gc_intent_meta_path(dirfd, path, how);                      \
	} while (0)
#define META_FD(fd, mapped)                                                         \
	do {                                                                        \
		if (unlikely(gc_intent_on) && !gc_disabled)                         \
			gc_intent_meta_fd(fd, mapped);                              \
	} while (0)

GC_EXPORT int truncate(const char *path, off_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_truncate, path, len);
	GC_COUNT(truncate);
	META_PATH(AT_FDCWD, path, 0);
	return gc_real.truncate(path, len);
}

GC_EXPORT int truncate64(const char *path, off64_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_truncate, path, len);
	GC_COUNT(truncate64);
	META_PATH(AT_FDCWD, path, 0);
	return gc_real.truncate64(path, len);
}

GC_EXPORT int ftruncate(int fd, off_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_ftruncate, fd, len);
	GC_COUNT(ftruncate);
	META_FD(fd, false);
	return gc_real.ftruncate(fd, len);
}

GC_EXPORT int ftruncate64(int fd, off64_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_ftruncate, fd, len);
	GC_COUNT(ftruncate64);
	META_FD(fd, false);
	return gc_real.ftruncate64(fd, len);
}

GC_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fallocate, fd, mode, off, len);
	GC_COUNT(fallocate);
	META_FD(fd, false);
	return gc_real.fallocate(fd, mode, off, len);
}

GC_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_fallocate, fd, mode, off, len);
	GC_COUNT(fallocate64);
	META_FD(fd, false);
	return gc_real.fallocate64(fd, mode, off, len);
}

GC_EXPORT int rename(const char *from, const char *to)
{
	if (unlikely(!gc_init()))
#ifdef SYS_rename
		return (int)syscall(SYS_rename, from, to);
#else
		return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
#endif
	GC_COUNT(rename);
	META_PATH(AT_FDCWD, from, GC_INTENT_NOFOLLOW);
	META_PATH(AT_FDCWD, to, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return gc_real.rename(from, to);
}

GC_EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_renameat2, fromfd, from, tofd, to, 0);
	GC_COUNT(renameat);
	META_PATH(fromfd, from, GC_INTENT_NOFOLLOW);
	META_PATH(tofd, to, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return gc_real.renameat(fromfd, from, tofd, to);
}

GC_EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to,
			unsigned int flags)
{
	if (unlikely(!gc_init()) || !gc_real.renameat2)
		return (int)syscall(SYS_renameat2, fromfd, from, tofd, to, flags);
	GC_COUNT(renameat2);
	META_PATH(fromfd, from, GC_INTENT_NOFOLLOW);
	META_PATH(tofd, to, GC_INTENT_NOFOLLOW | (flags & RENAME_EXCHANGE ? 0 : GC_INTENT_GONE));
	return gc_real.renameat2(fromfd, from, tofd, to, flags);
}

GC_EXPORT int unlink(const char *path)
{
	if (unlikely(!gc_init()))
#ifdef SYS_unlink
		return (int)syscall(SYS_unlink, path);
#else
		return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
#endif
	GC_COUNT(unlink);
	META_PATH(AT_FDCWD, path, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return gc_real.unlink(path);
}

GC_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_unlinkat, dirfd, path, flags);
	GC_COUNT(unlinkat);
	if (!(flags & AT_REMOVEDIR))
		META_PATH(dirfd, path, GC_INTENT_NOFOLLOW | GC_INTENT_GONE);
	return gc_real.unlinkat(dirfd, path, flags);
}

/* A writable shared mapping: its stores are never seen, so the file is
 * checkpointed and never logged again. */
#define MAPS_WRITES(prot, flags, fd) ((fd) >= 0 && ((flags) & MAP_SHARED) && ((prot) & PROT_WRITE))

GC_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (unlikely(!gc_init()))
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	GC_COUNT(mmap);
	if (MAPS_WRITES(prot, flags, fd))
		META_FD(fd, true);
	return gc_real.mmap(addr, len, prot, flags, fd, off);
}

GC_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	if (unlikely(!gc_init()))
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	GC_COUNT(mmap64);
	if (MAPS_WRITES(prot, flags, fd))
		META_FD(fd, true);
	return gc_real.mmap64(addr, len, prot, flags, fd, off);
}
