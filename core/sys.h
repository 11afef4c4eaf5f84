/* The real system calls the journal makes, the per-thread depth guard, and
 * who we are (pid, tid). The shim fills in the real functions found with
 * dlsym(RTLD_NEXT); until it has, the raw system calls serve. Nothing here
 * includes shim/: arrows point down. */
#ifndef GC_SYS_H
#define GC_SYS_H
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/types.h>

struct gc_sys {
	int (*sy_fsync)(int);
	int (*sy_fdatasync)(int);
	int (*sy_sync_file_range)(int, off64_t, off64_t, unsigned int);
};
extern struct gc_sys gc_sys;

/* >0 while this thread runs library code: nested or signal-handler calls go
 * straight to the real functions. */
extern __thread int gc_depth;

/* Real calls: 0 or -errno. */
int gc_sys_sync(int fd, bool datasync);
int gc_sys_sfr(int fd, off64_t off, off64_t len, unsigned int flags);

/* The process the library's state belongs to: set at start-up and by the
 * atfork child handler. A child made by _Fork(), clone(), vfork() or a raw
 * fork system call runs no atfork handler: it shares (vfork, CLONE_VM) or
 * copies the parent's state, locks held by threads it does not have
 * included. gc_self() is false there, and every request of that process
 * goes to its own real call: nothing of the parent's is touched. */
bool gc_self(void);
/* This thread's tid; valid only where gc_self() is true. */
pid_t gc_gettid(void);
/* The pid of gc_self()'s process. */
pid_t gc_getpid(void);
/* Start-up, and atfork child: this process owns the state from now on. */
void gc_sys_adopt(void);
#endif
