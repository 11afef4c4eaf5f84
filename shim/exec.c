// SPDX-License-Identifier: LGPL-2.1-or-later
/* The exec and spawn families. A converted descriptor that the new program
 * inherits would lose its O_SYNC/O_DSYNC there (the new program may not run
 * under libgc), so for the duration of the call every such descriptor is
 * given a real sync description of the same file, access mode and offset;
 * if the call returns (an exec that failed, a spawn that started), the
 * converted one is put back where the number still names it. In a vfork
 * child this touches only descriptors, never the library's memory. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "core/log.h"
#include "shim/shim.h"

#define EXEC_SAVE_MAX 64

struct exec_save {
	int n;
	bool self;	/* gc_self_exact(): the table, lock and counters are ours */
	struct {
		int fd;
		int save;	/* the converted description, close-on-exec */
		int keep;	/* the materialized one, close-on-exec */
		bool held;	/* it is the held one: the converted one's error
				 * was taken, so it never comes back */
		uint64_t token;	/* @fd's entry when it was swapped */
	} s[EXEC_SAVE_MAX];
};

/* The entry of @fd, if it still belongs to the regular file it was made
 * for. Read-only: a vfork child must not write its parent's table. */
static uint64_t live_token(int fd)
{
	uint64_t token = gc_fd_token(fd), ino = gc_fd_ino(fd);
	struct stat st;

	if (!(uint32_t)token || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (ino && (uint64_t)st.st_ino != ino))
		return 0;
	return token;
}

/* A close-on-exec copy of @fd at the descriptor floor, else anywhere. */
static int keep_fd(int fd)
{
	int c = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, gc_sys_fd_floor());

	return c >= 0 ? c : (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0);
}

/* Swaps @fd for a real sync description; with @any also a close-on-exec
 * one (file actions may dup2 it into the child). Returns 0 or -errno. */
static int prepare_one(struct exec_save *x, int fd, bool any)
{
	uint64_t token = live_token(fd);
	int conv = (int)(uint32_t)token, fdfl, save, keep = -1, r, j;

	if (!conv)
		return 0;
	fdfl = (int)syscall(SYS_fcntl, fd, F_GETFD);
	if (fdfl < 0 || ((fdfl & FD_CLOEXEC) && !any))
		return 0;
	if (x->self) {
		/* The dup3 and every later close of a descriptor of the file
		 * would release this process's POSIX locks on it. */
		r = gc_fd_locks(fd, true);
		if (r) {
			if (r > 0)
				gc_fd_locks_warn(fd);
			return r > 0 ? -ENOLCK : r;
		}
	}
	if (x->n >= EXEC_SAVE_MAX) {
		/* No room to remember it: it stays a real sync description,
		 * only slower, and its entry goes. */
		r = gc_materialize(fd, conv, NULL, NULL);
		if (!r && x->self)
			gc_fd_close_end(fd, token);
		return r;
	}
	/* kept where the library keeps its own, not at the program's next
	 * numbers: a popen() would get others than bare, and a file action
	 * could dup2() a number the program does not have */
	save = keep_fd(fd);
	if (save < 0)
		return -errno;
	/* another number of the same description, given back already: the
	 * same real one, so that the new program's writes through the two
	 * share one offset, as the program's do */
	for (j = 0; j < x->n; j++)
		if (gc_sys_same_file(fd, x->s[j].save) == 1)
			break;
	if (j < x->n) {
		keep = keep_fd(x->s[j].keep);
		r = keep < 0 || syscall(SYS_dup3, keep, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0
			    ? -errno : 0;
		x->s[x->n].held = x->s[j].held;
		if (r < 0 && keep >= 0)
			syscall(SYS_close, keep);
	} else {
		r = gc_materialize(fd, conv, &keep, &x->s[x->n].held);
	}
	if (r < 0) {
		syscall(SYS_close, save);
		return r;
	}
	x->s[x->n].fd = fd;
	x->s[x->n].save = save;
	x->s[x->n].keep = keep;
	x->s[x->n++].token = token;
	return 0;
}

/* Does @fd still name the description @keep names? kcmp where the kernel
 * has it; else the same inode and the entry unchanged must do. */
static bool still_materialized(int fd, int keep)
{
	int same = gc_sys_same_file(fd, keep);
	struct stat a, b;

	if (same >= 0)
		return same;
	return fstat(fd, &a) == 0 && fstat(keep, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Puts the converted description back on @i's number if the number still
 * names the materialized one: nobody closed, dup2'ed over or reused it
 * meanwhile. Otherwise the number is left alone (a real sync description
 * stays one, only slower), and an entry of ours that no longer fits goes. */
static void undo_one(struct exec_save *x, int i)
{
	int fd = x->s[i].fd, save = x->s[i].save, keep = x->s[i].keep, fdfl, locks;
	bool mine = !x->self || gc_fd_token(fd) == x->s[i].token;
	bool still = mine && !x->s[i].held && still_materialized(fd, keep);

	/* A lock taken meanwhile (by another thread, through any descriptor
	 * of the file) would go with the dup3 or the closes: leave them, also
	 * where that cannot be told (no descriptor free to read /proc). */
	if (x->self && (locks = gc_fd_locks(keep, true)) != 0) {
		gc_log(GC_LOG_WARN, "fd %d: %s%s; two descriptors of the file stay open (%d, %d)",
		       fd, locks > 0 ? "record locks taken during a spawn" :
				       "whether record locks were taken during a spawn is unknown: ",
		       locks > 0 ? "" : strerror(-locks), save, keep);
		if (still)
			gc_fd_close_end(fd, x->s[i].token);
		return;
	}
	if (still) {
		off_t off = lseek(fd, 0, SEEK_CUR);

		fdfl = (int)syscall(SYS_fcntl, fd, F_GETFD);
		if (off >= 0)
			lseek(save, off, SEEK_SET);
		if (fdfl < 0 || syscall(SYS_dup3, save, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
			still = false;
	}
	if (!still && mine && x->self)
		gc_fd_close_end(fd, x->s[i].token); /* no longer converted */
	syscall(SYS_close, save);
	syscall(SYS_close, keep);
}

static void exec_undo(struct exec_save *x)
{
	int i, saved = errno;

	for (i = x->n - 1; i >= 0; i--) {
		bool taken = x->self && gc_fd_swap_lock();

		undo_one(x, i);
		gc_fd_swap_unlock(taken);
	}
	if (x->self)
		gc_fd_spawn_end();
	x->n = 0;
	errno = saved;
}

/* Gives every inheritable converted descriptor (@any: every converted one)
 * a real sync description for the call. Fails closed: when one cannot be
 * given its flag back, what was swapped is put back and the call is not
 * made. Touches only descriptors in a child made without atfork (vfork),
 * which may be running in its parent's memory. Returns 0 or -errno. */
static int exec_prepare(struct exec_save *x, bool any)
{
	int fd, r = 0, saved = errno;

	x->n = 0;
	x->self = false;
	/* Nothing was ever converted here: no descriptor to give back, and no
	 * system call. A first conversion that another thread begins during
	 * this call can only be of a descriptor this call was not told about
	 * (its number came after the check), which the new program does not
	 * know to write to. */
	if (gc_disabled || !gc_fd_ever())
		return 0;
	x->self = gc_self_exact();
	if (x->self)
		gc_fd_spawn_begin();
	for (fd = gc_fd_next(0); fd >= 0; fd = gc_fd_next(fd + 1)) {
		bool taken = x->self && gc_fd_swap_lock();

		r = prepare_one(x, fd, any);
		gc_fd_swap_unlock(taken);
		if (r < 0)
			break;
	}
	if (r < 0) {
		if (r != -ENOLCK)
			gc_log(GC_LOG_WARN, "fd %d cannot get its O_SYNC/O_DSYNC back for "
			       "the new program (%s): the call fails", fd, strerror(-r));
		exec_undo(x);
	}
	errno = saved;
	return r;
}

/* Runs @call between prepare and undo; @call's value and errno are kept.
 * If prepare fails, returns @fail with errno set (or, for the spawn
 * functions, which return an error number, @fail is that number). */
#define AROUND_EXEC(type, any, call, fail)                                          \
	do {                                                                        \
		struct exec_save x;                                                 \
		type r;                                                             \
		int e_ = exec_prepare(&x, any);                                     \
		if (e_ < 0) {                                                       \
			errno = -e_;                                                \
			return fail;                                                \
		}                                                                   \
		r = call;                                                           \
		exec_undo(&x);                                                      \
		return r;                                                           \
	} while (0)

GC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_execve, path, argv, envp);
	GC_COUNT(execve);
	AROUND_EXEC(int, false, REAL(execve)(path, argv, envp), -1);
}

GC_EXPORT int execv(const char *path, char *const argv[])
{
	if (unlikely(!gc_init()))
		return REAL(execv)(path, argv);
	GC_COUNT(execv);
	AROUND_EXEC(int, false, REAL(execv)(path, argv), -1);
}

GC_EXPORT int execvp(const char *file, char *const argv[])
{
	if (unlikely(!gc_init()))
		return REAL(execvp)(file, argv);
	GC_COUNT(execvp);
	AROUND_EXEC(int, false, REAL(execvp)(file, argv), -1);
}

GC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL(execvpe)(file, argv, envp);
	GC_COUNT(execvpe);
	AROUND_EXEC(int, false, REAL(execvpe)(file, argv, envp), -1);
}

GC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL(fexecve)(fd, argv, envp);
	GC_COUNT(fexecve);
	AROUND_EXEC(int, false, REAL(fexecve)(fd, argv, envp), -1);
}

GC_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			int flags)
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
	GC_COUNT(execveat);
	AROUND_EXEC(int, false, REAL(execveat)(dirfd, path, argv, envp, flags), -1);
}

/* execl and friends take the argument list inline; count it, then hand an
 * array to the vector form (@envp: execle's environment after the NULL). */
#define ARGV_FROM_VA(arg0, argv, envp_out)                                          \
	size_t argc = 1;                                                            \
	va_list ap;                                                                 \
	va_start(ap, arg0);                                                         \
	while (va_arg(ap, const char *))                                            \
		argc++;                                                             \
	va_end(ap);                                                                 \
	const char *argv[argc + 1];                                                 \
	argv[0] = arg0;                                                             \
	va_start(ap, arg0);                                                         \
	for (size_t i_ = 1; i_ <= argc; i_++)                                       \
		argv[i_] = va_arg(ap, const char *);                                \
	envp_out;                                                                   \
	va_end(ap)

GC_EXPORT int execl(const char *path, const char *arg0, ...)
{
	ARGV_FROM_VA(arg0, argv, (void)0);
	if (unlikely(!gc_init()))
		return REAL(execv)(path, (char *const *)argv);
	GC_COUNT(execl);
	AROUND_EXEC(int, false, REAL(execv)(path, (char *const *)argv), -1);
}

GC_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	ARGV_FROM_VA(arg0, argv, (void)0);
	if (unlikely(!gc_init()))
		return REAL(execvp)(file, (char *const *)argv);
	GC_COUNT(execlp);
	AROUND_EXEC(int, false, REAL(execvp)(file, (char *const *)argv), -1);
}

GC_EXPORT int execle(const char *path, const char *arg0, ...)
{
	char *const *envp;

	ARGV_FROM_VA(arg0, argv, envp = va_arg(ap, char *const *));
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_execve, path, argv, envp);
	GC_COUNT(execle);
	AROUND_EXEC(int, false, REAL(execve)(path, (char *const *)argv, envp), -1);
}

GC_EXPORT int posix_spawn(pid_t *pid, const char *path,
			  const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			  char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
	GC_COUNT(posix_spawn);
	AROUND_EXEC(int, fa != NULL, REAL(posix_spawn)(pid, path, fa, attr, argv, envp), -e_);
}

GC_EXPORT int posix_spawnp(pid_t *pid, const char *file,
			   const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			   char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
	GC_COUNT(posix_spawnp);
	AROUND_EXEC(int, fa != NULL, REAL(posix_spawnp)(pid, file, fa, attr, argv, envp), -e_);
}

GC_EXPORT int system(const char *cmd)
{
	if (unlikely(!gc_init()))
		return REAL(system)(cmd);
	GC_COUNT(system);
	AROUND_EXEC(int, false, REAL(system)(cmd), -1);
}

GC_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	if (unlikely(!gc_init()))
		return REAL(popen)(cmd, mode);
	GC_COUNT(popen);
	AROUND_EXEC(FILE *, false, REAL(popen)(cmd, mode), NULL);
}

/* clone: a child that shares the descriptor table but not the memory
 * (CLONE_FILES without CLONE_VM) writes through descriptors its library
 * never saw converted; one that shares the memory but not the table
 * (CLONE_VM without CLONE_FILES, not a vfork) reads the other's entries
 * for its own numbers, and drops them as stale. So before such a clone
 * every converted descriptor gets its real O_SYNC/O_DSYNC back and no
 * open converts any more, in both. Fails closed. The raw clone and clone3
 * system calls are not seen (docs/limitations.md). */
static bool clone_splits(int flags)
{
	if (flags & CLONE_FILES)
		return !(flags & CLONE_VM);
	return (flags & CLONE_VM) && !(flags & CLONE_VFORK);
}

GC_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	void *ptid, *tls, *ctid;
	va_list ap;
	int r;

	va_start(ap, arg);
	ptid = va_arg(ap, void *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, void *);
	va_end(ap);
	if (likely(gc_init())) {
		GC_COUNT(clone);
		if (unlikely(clone_splits(flags)) &&
		    (r = gc_osync_stop("a process that shares the descriptor table is refused")) < 0) {
			errno = -r;
			return -1;
		}
	}
	return REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
}

/* unshare(CLONE_FILES) gives the calling thread a descriptor table of its
 * own while the memory, the library's table with it, stays shared with
 * the other threads: the split clone_splits() refuses, in one process.
 * Its close of a converted number would drop the entry for the others,
 * whose writes through that number would then go unsynced. The same goes
 * for close_range(CLOSE_RANGE_UNSHARE) (shim/open.c). */
GC_EXPORT int unshare(int flags)
{
	int r;

	if (likely(gc_init())) {
		GC_COUNT(unshare);
		if (unlikely(flags & CLONE_FILES) &&
		    (r = gc_osync_stop("a thread with a descriptor table of its own is refused")) < 0) {
			errno = -r;
			return -1;
		}
	}
	return REAL(unshare)(flags);
}
