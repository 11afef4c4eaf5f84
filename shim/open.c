// SPDX-License-Identifier: LGPL-2.1-or-later
/* The open family and descriptor bookkeeping: O_SYNC/O_DSYNC conversion at
 * open, copies on dup*, forgetting on close*, and fcntl(F_GETFL) reporting the
 * flag the program asked for. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "core/log.h"
#include "core/sites.h"
#include "core/stats.h"
#include "journal/fs.h"
#include "journal/intent.h"
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
		return REAL(open)(path, flags, mode);
	case OV_OPEN64:
		return REAL(open64)(path, flags, mode);
	case OV_OPENAT:
		return REAL(openat)(dirfd, path, flags, mode);
	case OV_OPENAT64:
		return REAL(openat64)(dirfd, path, flags, mode);
	case OV_OPEN_2:
		return REAL(__open_2)(path, flags);
	case OV_OPEN64_2:
		return REAL(__open64_2)(path, flags);
	case OV_OPENAT_2:
		return REAL(__openat_2)(dirfd, path, flags);
	case OV_OPENAT64_2:
		return REAL(__openat64_2)(dirfd, path, flags);
	}
	return -1;
}

/* fdinfo lines "lock:\t1: POSIX  ADVISORY  WRITE ...": the kernel lists
 * the locks whose file is this description and whose owner is this
 * process's descriptor table (POSIX) or the description itself (OFD,
 * flock, lease). */
static int any_lock_line(const char *line, void *ctx)
{
	(void)ctx;
	return !strncmp(line, "lock:", 5);
}

static int posix_lock_line(const char *line, void *ctx)
{
	(void)ctx;
	return !strncmp(line, "lock:", 5) && strstr(line, " POSIX ") != NULL;
}

static int fdinfo_has(int fd, int (*fn)(const char *, void *))
{
	char path[48];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	return gc_proc_lines(path, fn, NULL);
}

/* Another descriptor of @st's inode with a POSIX lock of ours: the lock
 * was taken through a description this process still holds (closing any
 * descriptor of the inode would have released it), so it shows there. */
static int scan_posix_locks(int fd, const struct stat *st)
{
	char buf[2048];
	long n;
	int dir, r = 0;

	dir = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	while (!r && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && !r;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
				 unsigned char type; char name[]; } *d = (void *)(buf + off);
			struct stat o;
			char *end;
			long f = strtol(d->name, &end, 10);

			off += d->reclen;
			if (*end || end == d->name || f == fd || f == dir)
				continue;
			if (fstat((int)f, &o) || o.st_dev != st->st_dev || o.st_ino != st->st_ino)
				continue;
			r = fdinfo_has((int)f, posix_lock_line);
		}
	}
	if (!r && n < 0)
		r = -errno;
	syscall(SYS_close, dir);
	return r;
}

int gc_fd_locks(int fd, bool own)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;
	int r, saved = errno;

	if (own && (r = fdinfo_has(fd, any_lock_line)) != 0)
		goto out;
	/* Any lock of anyone on the inode conflicts with a whole-file write
	 * lock of a fresh OFD owner: none at all is the common, cheap answer.
	 * (Our own description's OFD locks do not conflict: checked above.) */
	if (syscall(SYS_fcntl, fd, F_OFD_GETLK, &l) == 0) {
		if (l.l_type == F_UNLCK) {
			r = 0;
			goto out;
		}
		if (l.l_pid == (pid_t)syscall(SYS_getpid)) {
			r = 1;
			goto out;
		}
	} else if (errno != EINVAL) {
		r = -errno;
		goto out;
	}
	r = fstat(fd, &st) ? -errno : scan_posix_locks(fd, &st);
out:
	errno = saved;
	return r;
}

void gc_fd_locks_warn(int fd)
{
	gc_log(GC_LOG_WARN, "fd %d: this process holds record locks on the file, which "
	       "giving it back its O_SYNC description would drop; failing with ENOLCK "
	       "(LIBGC_OSYNC=keep avoids this)", fd);
}

static int raw_fcntl(int fd, int cmd, long arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

/* Does converted @fd owe the program a writeback error, which its held
 * description (@held, the program's own, see core/fdtable.h) would report
 * and a description opened now might not? Asked only where @held is that
 * file's and still has its flag: the wait takes the error from @fd's
 * description, which the swap is about to put away. */
static bool owes_error(int fd, int held, int sync_flags)
{
	struct stat a, b;
	int fl;

	if (held < 0 || fstat(fd, &a) || fstat(held, &b) || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return false;
	fl = raw_fcntl(held, F_GETFL, 0);
	if (fl < 0 || (fl & sync_flags) != sync_flags)
		return false;
	if (syscall(SYS_sync_file_range, fd, 0L, 0L, SYNC_FILE_RANGE_WAIT_BEFORE) == 0)
		return false;
	return errno != EINVAL && errno != ESPIPE && errno != EBADF && errno != ENOSYS &&
	       errno != EPERM;
}

/* Only descriptors and raw calls: also runs in a vfork child. The caller
 * has ruled out record locks (the dup3 and the close of the reopened
 * description would drop this process's POSIX locks on the inode).
 * fcntl(F_SETFL) cannot add O_SYNC/O_DSYNC on Linux (they are not among
 * the flags it changes), so a reopen is the only way to get them back;
 * or, where the converted description owes a writeback error, the held
 * one the program opened (then *@held_back is set). */
int gc_materialize(int fd, int sync_flags, int *keep, bool *held_back)
{
	char path[64];
	int fl, fdfl, tmp, r, e, held = gc_fd_held_shared(fd);
	off_t off;

	if (held_back)
		*held_back = false;
	fl = raw_fcntl(fd, F_GETFL, 0);
	fdfl = raw_fcntl(fd, F_GETFD, 0);
	if (fl < 0 || fdfl < 0)
		return -errno;
	off = lseek(fd, 0, SEEK_CUR);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* opened before the question: an error after it reaches this one */
	tmp = (int)syscall(SYS_openat, AT_FDCWD, path,
			   (fl & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW)) | sync_flags |
				   O_CLOEXEC | O_NOCTTY, 0);
	if (tmp < 0 && (errno != EMFILE || keep))
		return -errno;
	if (owes_error(fd, held, sync_flags)) {
		/* The held one itself where it need not stay open beside: the
		 * caller's clearing of the entry closes its number (so a
		 * process without a number free still gets it back). */
		if (tmp >= 0)
			syscall(SYS_close, tmp);
		tmp = keep ? raw_fcntl(held, F_DUPFD_CLOEXEC, 0) : held;
		if (tmp < 0)
			return -errno;
		/* the flags the program set since (O_APPEND, O_NONBLOCK...) */
		raw_fcntl(tmp, F_SETFL, fl);
		if (held_back)
			*held_back = true;
	} else if (tmp < 0) {
		return -EMFILE;
	}
	if (off >= 0)
		lseek(tmp, off, SEEK_SET);
	if (keep && tmp < gc_sys_fd_floor()) {
		/* kept for a while (a spawn): where the library keeps its own */
		int hi = raw_fcntl(tmp, F_DUPFD_CLOEXEC, gc_sys_fd_floor());

		if (hi >= 0) {
			if (tmp != held)
				syscall(SYS_close, tmp);
			tmp = hi;
		}
	}
	r = (int)syscall(SYS_dup3, tmp, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	e = errno;
	if (r >= 0 && keep) {
		*keep = tmp;
		return 0;
	}
	if (tmp != held)
		syscall(SYS_close, tmp);
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
	 * internal close): the entry is not this descriptor's. (In a vfork
	 * child the number is the child's own, the entry its parent's.) */
	if (gc_self_exact())
		gc_fd_close_end(fd, token);
	errno = saved;
	return 0;
}

/* @fd is a fresh real O_SYNC/O_DSYNC description of a regular file; give
 * the number a converted twin (same file and flags without the sync one)
 * if that is safe, else leave it as it is: real sync, only slower. The
 * entry is made before the twin exists, so no write through the twin is
 * ever unaccounted for, and the device is noted before that. */
static void convert_fd(int fd, int sync_flags)
{
	int fl, amode, c, fdfl;
	char path[64];
	struct stat st;

	/* 1 and 2 are stdio's output streams, written inside libc
	 * (std_stream_copy) */
	if (fd == 1 || fd == 2)
		return;
	fl = raw_fcntl(fd, F_GETFL, 0);
	if (fl < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return;
	/* Where requests are never shared (FUSE, NFS, CIFS, overlayfs, and
	 * every filesystem not examined), a conversion gains nothing and
	 * changes what the filesystem is told: a FUSE daemon or NFS sees
	 * the flag at open, and may honour it where its fsync does less. */
	if (!gc_fs_groups(fd))
		return;
	amode = (fl & O_ACCMODE) == O_RDONLY ? R_OK :
		(fl & O_ACCMODE) == O_WRONLY ? W_OK : R_OK | W_OK;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* Converted means it must be reopenable with its flag later (exec,
	 * spawn, fdopen): a file this open created 0444 is not. */
	if (faccessat(AT_FDCWD, path, amode, AT_EACCESS))
		return;
	if (gc_fd_dev_note((uint64_t)st.st_dev) || !gc_fd_convert_begin())
		return;
	/* The swap closes a description of the inode: not if that drops a
	 * lock another of our descriptors holds on it. */
	if (gc_fd_locks(fd, false) != 0)
		goto out;
	c = (int)syscall(SYS_openat, AT_FDCWD, path,
			 (fl & ~(O_SYNC | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW)) | O_CLOEXEC |
				 O_NOCTTY, 0);
	if (c < 0)
		goto out;
	fdfl = raw_fcntl(fd, F_GETFD, 0);
	if (fdfl >= 0 && gc_fd_set(fd, sync_flags) == 0) {
		gc_fd_bind(fd, (uint64_t)st.st_ino);
		/* the program's description stays, held (core/fdtable.h) */
		if (gc_fd_hold(fd) < 0 ||
		    syscall(SYS_dup3, c, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
			gc_fd_set(fd, 0);
		else
			gc_stat_inc(osync_convert);
	}
	syscall(SYS_close, c);
out:
	gc_fd_convert_end();
}

/* open with O_SYNC/O_DSYNC, converted for regular files where safe. The
 * real flag is asked first: an open that creates the file with a mode
 * that forbids reopening it still gets a real sync description, and a
 * device or FIFO is opened once, as asked. Returns fd or -errno. */
static int open_converted(enum open_variant v, int dirfd, const char *path,
			  int flags, mode_t mode)
{
	int fd = real_open(v, dirfd, path, flags, mode);

	if (fd < 0)
		return -errno;
	convert_fd(fd, flags & O_SYNC);
	return fd;
}

static int open_plain(enum open_variant v, int dirfd, const char *path, int flags,
		      mode_t mode)
{
	int saved = errno, r;

	/* Not in a child made without atfork (vfork, clone): the table and
	 * counters may be its parent's. */
	if (gc_disabled || gc_depth || !(flags & O_DSYNC) || (flags & O_PATH) || !gc_conf() ||
	    gc_cfg.c_osync == GC_OSYNC_KEEP || !gc_self_exact())
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

/* @r, a descriptor the program's call made at the lowest free number (or
 * -1): where that is 2, descriptor 2 is not stderr any more (core/sys.h). */
static int new_number(int r)
{
	gc_stderr_gone(r);
	return r;
}

static bool fd_room(void);

/* r = @call, made again when it failed with EMFILE and fd_room() made room:
 * the descriptors the library holds never cost the program one it would
 * have had bare. errno as bare. */
#define WITH_ROOM(r, call)                                                          \
	do {                                                                        \
		int saved_ = errno;                                                 \
		r = (call);                                                         \
		if (unlikely(r < 0) && errno == EMFILE && fd_room()) {              \
			errno = saved_;                                             \
			r = (call);                                                 \
		}                                                                   \
	} while (0)

static int open_common(enum open_variant v, int dirfd, const char *path, int flags,
		       mode_t mode)
{
	uint64_t t;
	int r;

	if (likely(!gc_intent_on) || !(flags & O_TRUNC) || gc_disabled) {
		WITH_ROOM(r, open_plain(v, dirfd, path, flags, mode));
		return new_number(r);
	}
	/* an O_TRUNC open changes the file: counted, and a file with intent
	 * records is checkpointed first */
	t = gc_intent_meta_path(dirfd, path, flags & O_NOFOLLOW ? GC_INTENT_NOFOLLOW : 0);
	WITH_ROOM(r, open_plain(v, dirfd, path, flags, mode));
	gc_intent_meta_done(t);
	return new_number(r);
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
	int r;

	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
	GC_COUNT(creat);
	WITH_ROOM(r, REAL(creat)(path, mode));
	return new_number(r);
}

GC_EXPORT int creat64(const char *path, mode_t mode)
{
	int r;

	if (unlikely(!gc_init()))
		return raw_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_LARGEFILE,
				mode);
	GC_COUNT(creat64);
	WITH_ROOM(r, REAL(creat64)(path, mode));
	return new_number(r);
}

/* A number with an entry, in the process the table belongs to: not in a
 * child sharing its parent's memory (vfork, clone with CLONE_VM), whose
 * close or dup2 of a number is its own table's, never its parent's. */
static bool entry_mine(int fd)
{
	return gc_fd_token(fd) && gc_self_exact();
}

/* The swap lock, for a number with an entry only: exec preparation and
 * undo must not check the number on one side of this call and swap it on
 * the other. Everything else stays lock-free. */
static bool swap_lock_if(int fd)
{
	return entry_mine(fd) && gc_fd_swap_lock();
}

/* A descriptor the library keeps (core/sys.h): the program never had it,
 * and closes it as it would bare, with EBADF; libunwind closing the pipe
 * it was given really closes it. Returns 1 when handled here. */
static int close_own(int fd)
{
	if (!gc_own_is(fd))
		return 0;
	if (gc_unwinding) {
		gc_own_forget(fd);
		return 0;
	}
	errno = EBADF;
	return 1;
}

GC_EXPORT int close(int fd)
{
	uint64_t token;
	bool taken, mine;
	int r, saved;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_close, fd);
	GC_COUNT(close);
	if (unlikely(gc_own_maybe(fd)) && close_own(fd))
		return -1;
	mine = entry_mine(fd);
	taken = mine && gc_fd_swap_lock();
	/* Forget the entry only after the real close: until then another
	 * thread's write through @fd must still be made durable. */
	token = mine ? gc_fd_close_begin(fd) : 0;
	r = REAL(close)(fd);
	saved = errno;
	gc_fd_close_end(fd, token);
	gc_fd_swap_unlock(taken);
	gc_stderr_gone(fd);
	errno = saved;
	return r;
}

#define CR_BATCH 256

static int real_close_range(unsigned int first, unsigned int last, int flags)
{
	return REAL(close_range) ? REAL(close_range)(first, last, flags)
				   : (int)syscall(SYS_close_range, first, last, flags);
}

/* close_range over the program's descriptors only: the gaps between the
 * ones the library keeps (core/sys.h). */
static int close_range_around(unsigned int first, unsigned int last, int flags)
{
	int own[GC_OWN_FDS], n = gc_own_in(first, last, own), i, r = 0;
	unsigned int lo = first;

	if (!n || (flags & CLOSE_RANGE_CLOEXEC))
		return real_close_range(first, last, flags); /* ours are close-on-exec */
	for (i = 0; i <= n && !r; i++) {
		unsigned int hi = i < n ? (unsigned int)own[i] - 1 : last;

		if (i < n && (unsigned int)own[i] == lo) {
			lo++;
			continue;
		}
		if (lo <= hi)
			r = real_close_range(lo, hi, flags);
		if (i < n)
			lo = (unsigned int)own[i] + 1;
		if (i < n && lo == 0)
			break; /* own[i] was the last number */
	}
	return r;
}

GC_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	struct { int fd; uint64_t token; } seen[CR_BATCH];
	int n = 0, fd, r, saved, i;
	bool taken = false;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_close_range, first, last, flags);
	GC_COUNT(close_range);
	/* a table of the caller's own first: as unshare(CLONE_FILES) */
	if (unlikely(flags & CLOSE_RANGE_UNSHARE) &&
	    (r = gc_osync_stop("a thread with a descriptor table of its own is refused")) < 0) {
		errno = -r;
		return -1;
	}
	if (flags & CLOSE_RANGE_CLOEXEC)
		return real_close_range(first, last, flags);
	if (first <= 2 && last >= 2)
		gc_stderr_gone(2);
	fd = gc_fd_next((int)(first > INT32_MAX ? INT32_MAX : first));
	if (fd >= 0 && (unsigned)fd <= last && !gc_self_exact())
		return close_range_around(first, last, flags); /* a vfork child's */
	if (fd >= 0 && (unsigned)fd <= last)
		taken = swap_lock_if(fd);
	for (; fd >= 0 && (unsigned)fd <= last && n < CR_BATCH; fd = gc_fd_next(fd + 1)) {
		seen[n].fd = fd;
		seen[n++].token = gc_fd_close_begin(fd);
	}
	r = close_range_around(first, last, flags);
	saved = errno;
	if (r == 0) {
		for (i = 0; i < n; i++)
			gc_fd_close_end(seen[i].fd, seen[i].token);
		/* More converted descriptors than we could snapshot: clear the
		 * rest outright (an entry that outlives its fd only costs syncs). */
		if (n == CR_BATCH && (unsigned)seen[n - 1].fd < last)
			gc_fd_clear_range((unsigned)seen[n - 1].fd + 1, last);
	}
	gc_fd_swap_unlock(taken);
	errno = saved;
	return r;
}

static int give_back(int fd);

/* Descriptors 1 and 2 are stdio's stdout and stderr, whose writes (printf,
 * fputs, perror) glibc makes inside libc: a copy of a converted descriptor
 * landing there gets a real sync description. @oldfd gets its flag back
 * for good first, so that both numbers still share one description and
 * its offset. */
static int std_stream_copy(int oldfd, int r)
{
	int fdfl = raw_fcntl(r, F_GETFD, 0), e = give_back(oldfd);

	if (e == 0 && syscall(SYS_dup3, oldfd, r, (fdfl > 0 && (fdfl & FD_CLOEXEC)) ? O_CLOEXEC : 0) < 0)
		e = -errno;
	if (e < 0) {
		/* (record locks held, which the swap would drop) still a
		 * converted copy: its write() calls are synced */
		gc_log(GC_LOG_WARN, "fd %d, a copy of converted fd %d, stays without its "
		       "O_SYNC/O_DSYNC for stdio's writes (%s)", r, oldfd, strerror(-e));
		gc_fd_copy(oldfd, r);
		return r;
	}
	gc_fd_set(r, 0);
	return r;
}

/* @r is the new descriptor from a dup-like call on @oldfd. */
static int dup_track(int oldfd, int r, bool copied)
{
	int conv = r >= 0 ? gc_fd_get(oldfd) : 0;

	if (!conv)
		return r;
	if (r == 1 || r == 2)
		return std_stream_copy(oldfd, r);
	/* @copied: the caller's gc_fd_copy(oldfd, r) before the real call
	 * (the entry and a held copy made once, not twice) */
	if (!copied)
		gc_fd_copy(oldfd, r);
	if (gc_fd_get(r) != conv) {
		/* The copy could not be tracked (no room in the table): it
		 * would lose O_SYNC. The copy is the program's own: closing
		 * it drops nothing a bare dup failure would have kept, except
		 * locks, checked first. */
		int e;

		gc_fd_set(r, 0);
		e = gc_fd_locks(r, false) ? -ENOLCK : gc_materialize(r, conv, NULL, NULL);
		if (e < 0) {
			REAL(close)(r);
			errno = -e;
			return -1;
		}
	}
	return r;
}

enum dup_kind { DK_DUP, DK_DUP2, DK_DUP3, DK_DUPFD, DK_DUPFD_CLOEXEC };

static int dup_real(enum dup_kind k, int oldfd, int arg, int flags)
{
	switch (k) {
	case DK_DUP:
		return REAL(dup)(oldfd);
	case DK_DUP2:
		return REAL(dup2)(oldfd, arg);
	case DK_DUP3:
		return REAL(dup3)(oldfd, arg, flags);
	case DK_DUPFD:
		return REAL(fcntl)(oldfd, F_DUPFD, arg);
	case DK_DUPFD_CLOEXEC:
		return REAL(fcntl)(oldfd, F_DUPFD_CLOEXEC, arg);
	}
	return -1;
}

/* A spawn is running (or this is a vfork child) and the program copies
 * converted @oldfd into a descriptor a spawned child could inherit: the copy gets a real sync
 * description of the same file (its own offset, copied from @oldfd's)
 * instead of the converted one. Returns the new fd or -errno. */
static int dup_materialized(enum dup_kind k, int oldfd, int arg, int flags, int conv,
			    bool self)
{
	char path[64];
	int fl, m, r;
	off_t off;

	fl = raw_fcntl(oldfd, F_GETFL, 0);
	if (fl < 0)
		return -errno;
	off = lseek(oldfd, 0, SEEK_CUR);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", oldfd);
	/* dup(): the lowest free number, which is the one open() takes; the
	 * others go through a temporary, whose close would drop our POSIX
	 * locks on the inode. */
	if (self && k != DK_DUP && gc_fd_locks(oldfd, false)) {
		gc_fd_locks_warn(oldfd);
		return -ENOLCK;
	}
	m = (int)syscall(SYS_openat, AT_FDCWD, path,
			 (fl & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW)) | conv | O_NOCTTY |
				 (k == DK_DUP ? 0 : O_CLOEXEC), 0);
	if (m < 0)
		return -errno;
	if (off >= 0)
		lseek(m, off, SEEK_SET);
	if (k == DK_DUP)
		return m;
	if (k == DK_DUPFD)
		r = (int)syscall(SYS_fcntl, m, F_DUPFD, arg);
	else
		r = (int)syscall(SYS_dup3, m, arg, flags);
	if (r < 0)
		r = -errno;
	else if (self)
		gc_fd_set(r, 0);
	syscall(SYS_close, m);
	return r;
}

/* Every dup-like call. A copy of a converted descriptor is recorded with
 * the conversion counter raised, so a spawn starting meanwhile finds it in
 * the table; during a spawn an inheritable copy is made a real sync one.
 * In a child made without atfork (vfork) the table is not ours to change:
 * there every copy is a real sync one, which is safe for locks since such
 * a child holds none of its parent's. */
static int dup_common(enum dup_kind k, int oldfd, int arg, int flags)
{
	bool inheritable = k == DK_DUP || k == DK_DUP2 || k == DK_DUPFD ||
			   (k == DK_DUP3 && !(flags & O_CLOEXEC));
	bool onto = k == DK_DUP2 || k == DK_DUP3, self;
	int saved = errno, conv, r;

	conv = gc_fd_get(oldfd);
	if (!conv) {
		r = dup_real(k, oldfd, arg, flags);
		if (r >= 0 && onto && oldfd != arg && entry_mine(arg)) {
			saved = errno;
			gc_fd_set(arg, 0);	/* now names a plain description */
			errno = saved;
		}
		return r;
	}
	self = gc_self_exact();
	if (self && gc_fd_convert_begin()) {
		int prev = onto ? gc_fd_get(arg) : 0;
		uint64_t prev_ino = onto ? gc_fd_ino(arg) : 0;

		bool copied = false;

		/* A known target gets its entry before the real call: a write
		 * through the number right after it then is synced too. */
		if (onto && oldfd != arg) {
			gc_fd_copy(oldfd, arg);
			copied = true;
		}
		r = dup_real(k, oldfd, arg, flags);
		if (r < 0 && onto && oldfd != arg) {
			saved = errno;
			if (gc_fd_set(arg, prev) == 0 && prev)
				gc_fd_bind(arg, prev_ino);
			errno = saved;
		}
		r = dup_track(oldfd, r, copied);
		gc_fd_convert_end();
		return r;
	}
	if ((self && !inheritable) || (onto && oldfd == arg))
		return self ? dup_track(oldfd, dup_real(k, oldfd, arg, flags), false)
			    : dup_real(k, oldfd, arg, flags);
	r = dup_materialized(k, oldfd, arg, flags, conv, self);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return r;
}

GC_EXPORT int dup(int oldfd)
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup, oldfd);
	GC_COUNT(dup);
	WITH_ROOM(r, dup_common(DK_DUP, oldfd, 0, 0));
	return new_number(r);
}

/* The program puts a descriptor at @newfd: one the library keeps there
 * moves first; one it keeps is no @oldfd of the program's. */
static bool dup_onto_own(int oldfd, int newfd)
{
	if (gc_own_is(oldfd)) {
		errno = EBADF;
		return true;
	}
	gc_own_clear(newfd);
	return false;
}

GC_EXPORT int dup2(int oldfd, int newfd)
{
	bool taken;
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup2, oldfd, newfd);
	GC_COUNT(dup2);
	if (unlikely(gc_own_maybe(oldfd > newfd ? oldfd : newfd)) && dup_onto_own(oldfd, newfd))
		return -1;
	taken = swap_lock_if(newfd);
	r = dup_common(DK_DUP2, oldfd, newfd, 0);
	gc_fd_swap_unlock(taken);
	if (r >= 0)
		gc_stderr_chosen(r);
	return r;
}

GC_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	bool taken;
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_dup3, oldfd, newfd, flags);
	GC_COUNT(dup3);
	if (unlikely(gc_own_maybe(oldfd > newfd ? oldfd : newfd)) && dup_onto_own(oldfd, newfd))
		return -1;
	taken = swap_lock_if(newfd);
	r = dup_common(DK_DUP3, oldfd, newfd, flags);
	gc_fd_swap_unlock(taken);
	if (r >= 0)
		gc_stderr_chosen(r);
	return r;
}

/* F_SETFD clearing FD_CLOEXEC on a converted descriptor while a spawn is
 * running: the descriptor becomes inheritable, so it first gets its real
 * sync description back (its table entry goes). */
static int setfd_common(int (*real)(int, int, ...), int fd, void *arg)
{
	int conv = gc_fd_get(fd), r, e;

	if (!conv || ((long)arg & FD_CLOEXEC) || !gc_self_exact())
		return real(fd, F_SETFD, arg);
	if (gc_fd_convert_begin()) {
		r = real(fd, F_SETFD, arg);
		gc_fd_convert_end();
		return r;
	}
	{
		bool taken = gc_fd_swap_lock();

		conv = gc_conv_checked(fd);
		e = !conv ? 0 : gc_fd_locks(fd, true) ? -ENOLCK : gc_materialize(fd, conv, NULL, NULL);
		if (e == -ENOLCK)
			gc_fd_locks_warn(fd);
		if (e == 0 && conv)
			gc_fd_set(fd, 0);
		gc_fd_swap_unlock(taken);
	}
	if (e < 0) {
		errno = -e;
		return -1;
	}
	return real(fd, F_SETFD, arg);
}

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	int r;

	if (!real)
		return (int)syscall(SYS_fcntl, fd, cmd, arg);
	switch (cmd) {
	case F_DUPFD:
		WITH_ROOM(r, dup_common(DK_DUPFD, fd, (int)(long)arg, 0));
		return new_number(r);
	case F_DUPFD_CLOEXEC:
		WITH_ROOM(r, dup_common(DK_DUPFD_CLOEXEC, fd, (int)(long)arg, 0));
		return new_number(r);
	case F_SETFD:
		return setfd_common(real, fd, arg);
	case F_SETLEASE:
		/* a write lease asks that nobody else has the file open: not
		 * the converted pair (the held description and the twin) */
		if ((long)arg != F_UNLCK && gc_fd_get(fd) && gc_self_exact() &&
		    (r = give_back(fd)) < 0) {
			errno = -r;
			return -1;
		}
		break;
	}
	r = real(fd, cmd, arg);
	if (cmd == F_GETFL && r >= 0)
		r |= gc_conv_checked(fd);
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
	return fcntl_common(REAL(fcntl), fd, cmd, arg);
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
	return fcntl_common(REAL(fcntl64), fd, cmd, arg);
}

/* Gives converted @fd its real O_SYNC/O_DSYNC back for good, where
 * something the library cannot follow takes it over. The swap closes a
 * description of the file: not while we hold record locks on it (they
 * would go), so the caller fails with ENOLCK then. 0 or -errno. */
static int give_back(int fd)
{
	/* a vfork child's number is its own: the parent's entry stays */
	bool self = gc_self_exact(), taken = self && gc_fd_swap_lock();
	int conv = self ? gc_conv_checked(fd) : gc_fd_get(fd), r = 0;

	if (conv) {
		r = gc_fd_locks(fd, true);
		if (r) {
			if (r > 0)
				gc_fd_locks_warn(fd);
			r = r > 0 ? -ENOLCK : r;
		} else {
			r = gc_materialize(fd, conv, NULL, NULL);
		}
		if (!r && self)
			gc_fd_set(fd, 0);
	}
	gc_fd_swap_unlock(taken);
	return r;
}

/* stdio writes through glibc's internal write, which we cannot see: a
 * converted descriptor gets its real flag back before stdio takes it. */
GC_EXPORT FILE *fdopen(int fd, const char *mode)
{
	int saved = errno, r;

	if (unlikely(!gc_init()))
		return REAL(fdopen)(fd, mode);
	GC_COUNT(fdopen);
	/* stdio's own writes are not seen: a file in scope is never logged */
	if (unlikely(gc_intent_on) && !gc_disabled)
		gc_intent_fdopen(fd, mode);
	if (!gc_fd_get(fd))
		return REAL(fdopen)(fd, mode);
	r = give_back(fd);
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	errno = saved;
	return REAL(fdopen)(fd, mode);
}

/* dprintf writes through a stdio stream of its own, inside libc: writes
 * the wrappers do not see (gc_unseen_writes). */

GC_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
	int r;

	if (unlikely(!gc_init()))
		return REAL(vdprintf)(fd, fmt, ap);
	GC_COUNT(vdprintf);
	if (unlikely((r = gc_unseen_writes(fd)) < 0)) {
		errno = -r;
		return -1;
	}
	return REAL(vdprintf)(fd, fmt, ap);
}

GC_EXPORT int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (unlikely(!gc_init())) {
		va_start(ap, fmt);
		r = REAL(vdprintf)(fd, fmt, ap);
		va_end(ap);
		return r;
	}
	GC_COUNT(dprintf);
	if (unlikely((r = gc_unseen_writes(fd)) < 0)) {
		errno = -r;
		return -1;
	}
	va_start(ap, fmt);
	r = REAL(vdprintf)(fd, fmt, ap);
	va_end(ap);
	return r;
}

/* The fortified names (_FORTIFY_SOURCE=2 builds call these) */
GC_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	int r;

	if (unlikely(!gc_init()))
		return REAL(__vdprintf_chk)(fd, flag, fmt, ap);
	GC_COUNT(__vdprintf_chk);
	if (unlikely((r = gc_unseen_writes(fd)) < 0)) {
		errno = -r;
		return -1;
	}
	return REAL(__vdprintf_chk)(fd, flag, fmt, ap);
}

GC_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (unlikely(!gc_init())) {
		va_start(ap, fmt);
		r = REAL(__vdprintf_chk)(fd, flag, fmt, ap);
		va_end(ap);
		return r;
	}
	GC_COUNT(__dprintf_chk);
	if (unlikely((r = gc_unseen_writes(fd)) < 0)) {
		errno = -r;
		return -1;
	}
	va_start(ap, fmt);
	r = REAL(__vdprintf_chk)(fd, flag, fmt, ap);
	va_end(ap);
	return r;
}

/* Writes to @fd that go round the wrappers (AIO, dprintf): the
 * intent log never logs the file again, and a converted descriptor gets
 * its real flag back for good, as for fdopen. 0 or -errno. */
int gc_unseen_writes(int fd)
{
	if (gc_disabled)
		return 0;
	if (unlikely(gc_intent_on))
		gc_intent_fdopen(fd, "w");
	if (!gc_fd_get(fd))
		return 0;
	return give_back(fd);
}

/* Descriptors passed over a unix socket (SCM_RIGHTS): the receiver shares
 * the description, and writes through it as the sender opened it, O_SYNC
 * or O_DSYNC, whether or not it runs under libgc. So every converted one
 * in @msg gets its real flag back first (as for fdopen); the sender then
 * shares that description, and its offset, with the receiver. */
static int give_back_passed(const struct msghdr *msg)
{
	struct cmsghdr *c;

	if (likely(!msg || !msg->msg_control || msg->msg_controllen < sizeof(struct cmsghdr)))
		return 0;
	for (c = CMSG_FIRSTHDR((struct msghdr *)msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		const unsigned char *p = CMSG_DATA(c), *end = (const unsigned char *)c + c->cmsg_len;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (; p + sizeof(int) <= end; p += sizeof(int)) {
			int fd, r;

			memcpy(&fd, p, sizeof(fd));
			if (gc_fd_get(fd) && (r = give_back(fd)) < 0)
				return r;
		}
	}
	return 0;
}

GC_EXPORT ssize_t sendmsg(int sock, const struct msghdr *msg, int flags)
{
	int r;

	if (unlikely(!gc_init()))
		return syscall(SYS_sendmsg, sock, msg, flags);
	GC_COUNT(sendmsg);
	if (unlikely((r = give_back_passed(msg)) < 0)) {
		errno = -r;
		return -1;
	}
	return REAL(sendmsg)(sock, msg, flags);
}

GC_EXPORT int sendmmsg(int sock, struct mmsghdr *vec, unsigned int n, int flags)
{
	int r = 0;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_sendmmsg, sock, vec, n, flags);
	GC_COUNT(sendmmsg);
	for (unsigned int i = 0; vec && i < n && r == 0; i++)
		r = give_back_passed(&vec[i].msg_hdr);
	if (unlikely(r < 0)) {
		errno = -r;
		return -1;
	}
	return REAL(sendmmsg)(sock, vec, n, flags);
}

/* The program's call found no descriptor free while the library holds
 * descriptions for its conversions: each such conversion without record
 * locks gets its real flag back (one description where there were two:
 * slower from now on, never less durable), and a new conversion holds one
 * again only where there is room. True when any was freed. */
static bool fd_room(void)
{
	int fd, saved = errno;
	bool freed = false;

	if (!gc_fd_held_any() || !gc_self_exact())
		return false;
	/* The check for this process's own locks reads /proc: one number
	 * first, from the first held one of a file nobody has locks on (the
	 * kernel answers that without a descriptor; closing a descriptor
	 * of a file drops this process's POSIX locks on it). That conversion
	 * goes on without it: a hand-back of it reopens, as where none
	 * could be held. */
	for (fd = gc_fd_next(0); fd >= 0 && !freed; fd = gc_fd_next(fd + 1))
		if (gc_fd_held(fd) >= 0 && gc_fd_locks(fd, false) == 0) {
			gc_fd_unhold(fd);
			freed = true;
		}
	for (fd = gc_fd_next(0); fd >= 0; fd = gc_fd_next(fd + 1)) {
		int r;

		if (gc_fd_held(fd) < 0 || gc_fd_locks(fd, true) != 0)
			continue;
		r = give_back(fd);
		if (r == -EMFILE) {
			/* nothing owed, and no number free for a new
			 * description: the held one's number is */
			gc_fd_unhold(fd);
			r = give_back(fd);
		}
		freed |= r == 0;
	}
	errno = saved;
	return freed;
}

/* give_back() of @fd, and of the later numbers that name the same
 * description: they get the one @fd got, so that they still share one
 * offset (each given its own, two writes through two numbers of what the
 * program opened once overwrote each other). */
static int give_back_shared(int fd)
{
	int same[GC_FD_HELD], n = 0, g, r;

	for (g = gc_fd_next(fd + 1); g >= 0 && n < GC_FD_HELD; g = gc_fd_next(g + 1))
		if (gc_sys_same_file(fd, g) == 1)
			same[n++] = g;
	r = give_back(fd);
	for (int i = 0; i < n && r == 0; i++) {
		int fdfl = raw_fcntl(same[i], F_GETFD, 0);

		if (fdfl >= 0 &&
		    syscall(SYS_dup3, fd, same[i], (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) >= 0)
			gc_fd_set(same[i], 0);
	}
	return r;
}

/* Writes that go round the wrappers (an io_uring's, a thread's in
 * seccomp's strict mode, a process's that shares the descriptors and not
 * the library's table) would reach a converted descriptor without its
 * O_SYNC/O_DSYNC: every converted descriptor gets its real flag back and
 * no open converts any more. One that cannot (record locks held) stays
 * converted, said on stderr. */
int gc_osync_stop(const char *what)
{
	int fd, r, first = 0;

	if (gc_disabled || !gc_self_exact())
		return 0;
	gc_fd_convert_stop();
	if (!gc_fd_ever())
		return 0;
	for (fd = gc_fd_next(0); fd >= 0; fd = gc_fd_next(fd + 1)) {
		if (!gc_fd_get(fd) || (r = give_back_shared(fd)) == 0)
			continue;
		first = first ? first : r;
		gc_log(GC_LOG_WARN, "fd %d keeps its O_SYNC/O_DSYNC conversion (%s): %s "
		       "(LIBGC_OSYNC=keep avoids this)", fd, strerror(-r), what);
	}
	return first;
}

/* closefrom: the program's descriptors only, as close_range. */
GC_EXPORT void closefrom(int lowfd)
{
	int own[GC_OWN_FDS];

	if (unlikely(!gc_init())) {
		syscall(SYS_close_range, (unsigned int)lowfd, ~0U, 0);
		return;
	}
	GC_COUNT(closefrom);
	if (lowfd <= 2)
		gc_stderr_gone(2);
	/* through close_range where the library has something at or above
	 * @lowfd: its own numbers, or entries of converted ones, which a
	 * close it does not see would leave behind (a plain descriptor put
	 * at such a number later would be taken for converted) */
	if (lowfd >= 0 && (gc_fd_next(lowfd) >= 0 || (unlikely(gc_own_maybe(INT_MAX)) &&
						      gc_own_in((unsigned int)lowfd, ~0U, own)))) {
		close_range((unsigned int)lowfd, ~0U, 0);
		return;
	}
	if (REAL(closefrom))
		REAL(closefrom)(lowfd);
	else
		close_range((unsigned int)lowfd, ~0U, 0);
}

/*
 * Passed through, except inside libunwind's code run by the library for
 * call sites (core/sites.h, gc_unwinding): libunwind checks addresses by
 * writing a byte of them into a pipe, kept for the process's life. Its
 * two ends are moved to the descriptor floor at once and kept there as
 * the library's own (each named by libunwind's int that holds it): for a
 * few microseconds, once, two low numbers are taken.
 */
static int unwind_pipe(int fds[2], int flags)
{
	int p[2], a, b;

	if (syscall(SYS_pipe2, p, flags | O_CLOEXEC) < 0)
		return -1;
	a = gc_sys_fd_up(p[0]);
	b = gc_sys_fd_up(p[1]);
	if (a < 0 || b < 0) {
		if (a >= 0)
			syscall(SYS_close, a);
		if (b >= 0)
			syscall(SYS_close, b);
		errno = EMFILE;
		return -1;
	}
	fds[0] = a;
	fds[1] = b;
	gc_own_keep(&fds[0]);
	gc_own_keep(&fds[1]);
	return 0;
}

static int pipe_numbers(int r, const int fds[2])
{
	if (r == 0) {
		gc_stderr_gone(fds[0]);
		gc_stderr_gone(fds[1]);
	}
	return r;
}

GC_EXPORT int pipe2(int fds[2], int flags)
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_pipe2, fds, flags);
	GC_COUNT(pipe2);
	if (unlikely(gc_unwinding))
		return unwind_pipe(fds, flags);
	WITH_ROOM(r, REAL(pipe2)(fds, flags));
	return pipe_numbers(r, fds);
}

GC_EXPORT int pipe(int fds[2])
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_pipe2, fds, 0);
	GC_COUNT(pipe);
	if (unlikely(gc_unwinding))
		return unwind_pipe(fds, 0);
	WITH_ROOM(r, REAL(pipe)(fds));
	return pipe_numbers(r, fds);
}

/* The socket calls make descriptors too: at EMFILE made again once the
 * held descriptions gave room, as open and pipe are (a server at its
 * limit accepts as many connections as bare), and a new 2 is noted. When
 * the descriptor table is full, accept fails before it takes a connection
 * off the queue: the retry loses none. */
GC_EXPORT int socket(int domain, int type, int protocol)
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_socket, domain, type, protocol);
	GC_COUNT(socket);
	WITH_ROOM(r, REAL(socket)(domain, type, protocol));
	return new_number(r);
}

GC_EXPORT int socketpair(int domain, int type, int protocol, int fds[2])
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_socketpair, domain, type, protocol, fds);
	GC_COUNT(socketpair);
	WITH_ROOM(r, REAL(socketpair)(domain, type, protocol, fds));
	return pipe_numbers(r, fds);
}

GC_EXPORT int accept(int fd, __SOCKADDR_ARG addr, socklen_t *len)
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_accept4, fd, addr.__sockaddr__, len, 0);
	GC_COUNT(accept);
	WITH_ROOM(r, REAL(accept)(fd, addr, len));
	return new_number(r);
}

GC_EXPORT int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *len, int flags)
{
	int r;

	if (unlikely(!gc_init()))
		return (int)syscall(SYS_accept4, fd, addr.__sockaddr__, len, flags);
	GC_COUNT(accept4);
	WITH_ROOM(r, REAL(accept4)(fd, addr, len, flags));
	return new_number(r);
}
