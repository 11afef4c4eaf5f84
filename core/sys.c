/* Real system calls, the depth guard, and the identity cache (see sys.h). */
#include "core/sys.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

struct gc_sys gc_sys;
__thread int gc_depth __attribute__((tls_model("initial-exec")));
static __thread pid_t gc_tid __attribute__((tls_model("initial-exec")));
/* The tid was cached by this process: a child made without atfork keeps
 * its parent's thread-local values, so the tid alone cannot be trusted. */
static __thread pid_t gc_tid_pid __attribute__((tls_model("initial-exec")));
static pid_t gc_pid;

int gc_sys_sync(int fd, bool datasync)
{
	int r;

	if (datasync)
		r = gc_sys.sy_fdatasync ? gc_sys.sy_fdatasync(fd)
					: (int)syscall(SYS_fdatasync, fd);
	else
		r = gc_sys.sy_fsync ? gc_sys.sy_fsync(fd) : (int)syscall(SYS_fsync, fd);
	return r < 0 ? -errno : 0;
}

int gc_sys_sfr(int fd, off64_t off, off64_t len, unsigned int flags)
{
	int r = gc_sys.sy_sync_file_range
			? gc_sys.sy_sync_file_range(fd, off, len, flags)
			: (int)syscall(SYS_sync_file_range, fd, off, len, flags);

	return r < 0 ? -errno : 0;
}

bool gc_self(void)
{
	return (pid_t)syscall(SYS_getpid) == __atomic_load_n(&gc_pid, __ATOMIC_ACQUIRE);
}

pid_t gc_getpid(void)
{
	pid_t p = __atomic_load_n(&gc_pid, __ATOMIC_ACQUIRE);

	/* code linked without the shim (unit tests) never adopts */
	return p ? p : (pid_t)syscall(SYS_getpid);
}

pid_t gc_gettid(void)
{
	if (!gc_pid)
		return (pid_t)syscall(SYS_gettid);
	if (gc_tid_pid != gc_pid || !gc_tid) {
		gc_tid = (pid_t)syscall(SYS_gettid);
		gc_tid_pid = gc_pid;
	}
	return gc_tid;
}

void gc_sys_adopt(void)
{
	gc_tid = 0;
	gc_tid_pid = 0;
	__atomic_store_n(&gc_pid, (pid_t)syscall(SYS_getpid), __ATOMIC_RELEASE);
}
