/* The exec and spawn families. A converted descriptor that the new program
 * inherits would lose its O_SYNC/O_DSYNC there (the new program may not run
 * under libgc), so for the duration of the call every such descriptor is
 * given a real sync description of the same file, access mode and offset;
 * if the call returns (an exec that failed, a spawn that started), the
 * converted one is put back. Touches only descriptors, never the library's
 * tables: a vfork child runs this in the parent's memory. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdtable.h"
#include "core/log.h"
#include "shim/shim.h"

#define EXEC_SAVE_MAX 64

struct exec_save {
	int n;
	struct {
		int fd;
		int save;	/* the converted description, close-on-exec */
	} s[EXEC_SAVE_MAX];
};

static void exec_prepare(struct exec_save *x)
{
	int fd, conv, fdfl, save;

	x->n = 0;
	if (gc_disabled)
		return;
	for (fd = gc_fd_next(0); fd >= 0; fd = gc_fd_next(fd + 1)) {
		conv = gc_conv_checked(fd);
		fdfl = conv ? gc_real.fcntl(fd, F_GETFD) : -1;
		if (fdfl < 0 || (fdfl & FD_CLOEXEC))
			continue;
		save = x->n < EXEC_SAVE_MAX ? gc_real.fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
		if (gc_materialize(fd, conv) < 0) {
			/* It keeps the converted description: the new
			 * program's writes through it are not synchronous. */
			gc_log(GC_LOG_WARN, "fd %d keeps no O_SYNC across exec", fd);
			if (save >= 0)
				gc_real.close(save);
			continue;
		}
		if (save >= 0) {
			x->s[x->n].fd = fd;
			x->s[x->n++].save = save;
		}
		/* else it stays a real sync description: only slower */
	}
}

static void exec_undo(struct exec_save *x)
{
	int i, saved = errno;

	for (i = 0; i < x->n; i++) {
		off_t off = lseek(x->s[i].fd, 0, SEEK_CUR);

		if (off >= 0)
			lseek(x->s[i].save, off, SEEK_SET);
		gc_real.dup3(x->s[i].save, x->s[i].fd, 0);
		gc_real.close(x->s[i].save);
	}
	errno = saved;
}

/* Runs @call between prepare and undo; @call's value and errno are kept. */
#define AROUND_EXEC(type, call)                                                     \
	do {                                                                        \
		struct exec_save x;                                                 \
		type r;                                                             \
		exec_prepare(&x);                                                   \
		r = call;                                                           \
		exec_undo(&x);                                                      \
		return r;                                                           \
	} while (0)

GC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_execve, path, argv, envp);
	GC_COUNT(execve);
	AROUND_EXEC(int, gc_real.execve(path, argv, envp));
}

GC_EXPORT int execv(const char *path, char *const argv[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(execv)(path, argv);
	GC_COUNT(execv);
	AROUND_EXEC(int, gc_real.execv(path, argv));
}

GC_EXPORT int execvp(const char *file, char *const argv[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(execvp)(file, argv);
	GC_COUNT(execvp);
	AROUND_EXEC(int, gc_real.execvp(file, argv));
}

GC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(execvpe)(file, argv, envp);
	GC_COUNT(execvpe);
	AROUND_EXEC(int, gc_real.execvpe(file, argv, envp));
}

GC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(fexecve)(fd, argv, envp);
	GC_COUNT(fexecve);
	AROUND_EXEC(int, gc_real.fexecve(fd, argv, envp));
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
		return REAL_OR_NEXT(execv)(path, (char *const *)argv);
	GC_COUNT(execl);
	AROUND_EXEC(int, gc_real.execv(path, (char *const *)argv));
}

GC_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	ARGV_FROM_VA(arg0, argv, (void)0);
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(execvp)(file, (char *const *)argv);
	GC_COUNT(execlp);
	AROUND_EXEC(int, gc_real.execvp(file, (char *const *)argv));
}

GC_EXPORT int execle(const char *path, const char *arg0, ...)
{
	char *const *envp;

	ARGV_FROM_VA(arg0, argv, envp = va_arg(ap, char *const *));
	if (unlikely(!gc_init()))
		return (int)syscall(SYS_execve, path, argv, envp);
	GC_COUNT(execle);
	AROUND_EXEC(int, gc_real.execve(path, (char *const *)argv, envp));
}

GC_EXPORT int posix_spawn(pid_t *pid, const char *path,
			  const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			  char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(posix_spawn)(pid, path, fa, attr, argv, envp);
	GC_COUNT(posix_spawn);
	AROUND_EXEC(int, gc_real.posix_spawn(pid, path, fa, attr, argv, envp));
}

GC_EXPORT int posix_spawnp(pid_t *pid, const char *file,
			   const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			   char *const argv[], char *const envp[])
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(posix_spawnp)(pid, file, fa, attr, argv, envp);
	GC_COUNT(posix_spawnp);
	AROUND_EXEC(int, gc_real.posix_spawnp(pid, file, fa, attr, argv, envp));
}

GC_EXPORT int system(const char *cmd)
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(system)(cmd);
	GC_COUNT(system);
	AROUND_EXEC(int, gc_real.system(cmd));
}

GC_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	if (unlikely(!gc_init()))
		return REAL_OR_NEXT(popen)(cmd, mode);
	GC_COUNT(popen);
	AROUND_EXEC(FILE *, gc_real.popen(cmd, mode));
}
