/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The real system calls the journal makes, the per-thread depth guard, who
 * we are (pid, tid, and whether this process owns the library's state),
 * and one-time steps shared by threads. The shim fills in the real
 * functions as dlsym(RTLD_NEXT) finds them; until it has, the raw system
 * calls serve. Nothing here includes shim/: arrows point down. */
#ifndef GC_SYS_H
#define GC_SYS_H
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Large zeroed tables go after all other zeroed data (the x86-64 large
 * bss, which the linker places last): pages of them that a process never
 * touches cost nothing, and the small variables every process touches at
 * start-up and first use share a few pages instead of one page each
 * between the tables. */
#ifdef __x86_64__
#define GC_LARGE __attribute__((section(".lbss")))
#else
#define GC_LARGE /* elsewhere ".lbss" would be data with its zeros in the file */
#endif

/* What every process runs at start-up, at fork or at exit, wherever its
 * file sits in the link: built for size and placed with the constructor at
 * the front of the text (.text.unlikely), so that a process that never
 * syncs touches only the first 64 KiB window of the library's code (a fork
 * child maps the library's text afresh: each window it runs is a fault). */
#define GC_ONCE __attribute__((cold))

/* What every process reads or writes at start-up, at fork and at exit,
 * wherever its file sits in the link: one section of its own (a name
 * without a dot, so no .data or .bss rule takes it), which core/start.ld
 * puts on a page of its own after .data, the last with file data, which the
 * loader writes anyway. Scattered through .bss, the same few variables cost
 * a process that never syncs four page faults, each several microseconds
 * in a virtual machine. */
#define GC_START __attribute__((section("gc_start")))

/* Stores @v in @var (GC_START data) only where it differs: after a fork
 * every page is copy-on-write in parent and child, and a store of the
 * value already there would still copy the page. */
#define GC_STORE_CHANGED(var, v)                                                    \
	do {                                                                        \
		__typeof__(var) v_ = (v);                                           \
		if (__atomic_load_n(&(var), __ATOMIC_RELAXED) != v_)                \
			__atomic_store_n(&(var), v_, __ATOMIC_SEQ_CST);             \
	} while (0)

/* What this process has made that a fork child must reset: each bit set
 * before the first thing of its kind is made (so a child that sees the
 * thing sees the bit), never cleared. The fork handlers read only this
 * word for what was never made: a process with nothing of ours forks
 * without a write to any page of ours, where resetting everything cost
 * each fork about 60 page faults (zeroed counters, locks, device tables). */
enum {
	GC_MADE_COUNTS = 1,	/* threads' counter slots (core/stats.c) */
	GC_MADE_TOTALS = 2,	/* the counters' commit and error tables */
	GC_MADE_SITES = 4,	/* the call sites' table (core/sites.c) */
	GC_MADE_DIRTY = 8,	/* the dirty limiter's devices and slots */
	GC_MADE_DEVSTATS = 16,	/* core/devstats.c's locks */
	GC_MADE_DOMAINS = 32,	/* journal/journal.c's table of domains */
};
extern unsigned int gc_made;
static inline void gc_made_note(unsigned int bit)
{
	if (__builtin_expect(!(__atomic_load_n(&gc_made, __ATOMIC_RELAXED) & bit), 0))
		__atomic_fetch_or(&gc_made, bit, __ATOMIC_SEQ_CST);
}
static inline bool gc_was_made(unsigned int bit)
{
	return __atomic_load_n(&gc_made, __ATOMIC_ACQUIRE) & bit;
}

struct gc_sys {
	int (*sy_fsync)(int);
	int (*sy_fdatasync)(int);
	int (*sy_sync_file_range)(int, off64_t, off64_t, unsigned int);
	int (*sy_syncfs)(int);
};
extern struct gc_sys gc_sys;

/* >0 while this thread runs library code: nested or signal-handler calls go
 * straight to the real functions. */
extern __thread int gc_depth;
/* Set once this thread entered seccomp's strict mode (the shim saw its
 * prctl succeed): from then on it may call read, write and exit only, and
 * anything else kills it, so the library makes no call of its own there. */
extern __thread bool gc_strict;

/*
 * The library's own calls that are one system call and nothing more, made
 * raw, with libc's convention (-1 and errno): a libc wrapper is bound at
 * its first call, about 700 instructions of the loader's each, on the path
 * of a process that syncs once; and the library's own mmap would go
 * through its exported wrapper (shim/meta.c) and be counted as the
 * program's. The same system calls libc makes for them (64-bit struct
 * stat and statfs, as gc_sys_pidns already assumes).
 */
static inline int gc_sys_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH);
}

static inline int gc_sys_fstatfs(int fd, struct statfs *sf)
{
	return (int)syscall(SYS_fstatfs, fd, sf);
}

static inline uid_t gc_sys_geteuid(void)
{
	return (uid_t)syscall(SYS_geteuid);
}

/* May a file of the library's own grow to @len bytes? Not past the
 * program's RLIMIT_FSIZE: the kernel would send the program SIGXFSZ,
 * whose default kills it. */
static inline bool gc_sys_fsize_ok(uint64_t len)
{
	struct rlimit rl;

	return syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &rl) != 0 ||
	       rl.rlim_cur == RLIM_INFINITY || len <= rl.rlim_cur;
}

/* Is @r (-errno) a refusal of the call itself, by a seccomp filter whose
 * allow-list does not name it (or a kernel without it), rather than an
 * answer about the file? */
static inline bool gc_sys_refused(int r)
{
	return r == -EPERM || r == -EACCES || r == -ENOSYS;
}

/* Do descriptors @a and @b of this process name one open file
 * description? 1 yes, 0 no, -1 unknown (no kcmp, or not allowed). */
static inline int gc_sys_same_file(int a, int b)
{
	pid_t me = (pid_t)syscall(SYS_getpid);
	long r = syscall(SYS_kcmp, me, me, 0 /* KCMP_FILE */, a, b);

	return r < 0 ? -1 : r == 0;
}

static inline void *gc_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int gc_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* A zeroed table of @len bytes that only a slow path needs, mapped there
 * rather than kept in the library's zeroed data, and never a huge page
 * (where they are always on, the first touch would allocate and clear
 * 2 MiB); NULL if it cannot be mapped. */
static inline void *gc_sys_map_table(size_t len)
{
	void *m = gc_sys_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	gc_sys_madvise(m, len, MADV_NOHUGEPAGE);
	return m;
}

/* What follows @prefix in @s, or NULL. By hand: at start-up, where the
 * library makes no other string call, libc's strncmp and strlen would
 * each be bound lazily at their first call, about 700 instructions of
 * the loader's, more than all the comparisons take. */
static inline const char *gc_str_after(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return NULL;
	return s;
}

/* Each line of the file at @path (longer lines cut) to @fn, until it
 * returns non-zero: that value, 0, or -errno. Raw calls. */
int gc_proc_lines(const char *path, int (*fn)(const char *line, void *ctx), void *ctx);
/* A syncfs of the filesystem @dev (st_dev), through a descriptor of our own
 * on one of its mounts (the mount table): 0, the syncfs error, or -ENOENT
 * when no mount of it can be opened here. Such a descriptor is opened
 * late: a writeback error that happened before is not reported through it. */
int gc_sys_syncfs_dev(uint64_t dev);
/* A request's stand-in when its descriptor no longer names its file: a
 * syncfs of the file's filesystem @dev, or sync(2) where no mount of it
 * can be opened (then 0). */
int gc_sys_sync_file_fs(uint64_t dev);

/* Whether @fd still names the file @st was read from: 1 it does, 0 it
 * does not (closed, or another file), -1 cannot tell (fstat failed
 * otherwise: a filesystem shut down answers EIO). errno is kept. */
int gc_sys_fd_names(int fd, const struct stat *st);

/* Real calls: 0 or -errno. */
int gc_sys_sync(int fd, bool datasync);
int gc_sys_sfr(int fd, off64_t off, off64_t len, unsigned int flags);

/*
 * The process the library's state belongs to. A child made by fork() runs
 * the atfork child handler, which adopts the state (gc_sys_adopt). A child
 * made by _Fork(), clone() without CLONE_VM or a raw fork system call runs
 * none: it copied the parent's state, locks held by threads it does not
 * have included, and none of it is its own.
 *
 * gc_self() tells them apart without a system call: its answer sits in a
 * page mapped with MADV_WIPEONFORK, which every such child finds zeroed.
 * The page is made at the first question (two system calls, at the first
 * sync request); on a kernel without MADV_WIPEONFORK (before 4.14) each
 * question is a getpid() as before.
 *
 * A child sharing our memory (vfork, clone with CLONE_VM) sees our page:
 * to gc_self() it is the thread that made it, stopped meanwhile. That is
 * right for a direct real call and for counters, and wrong for anything
 * that names this process to others or that it must undo (a transaction,
 * the descriptor table): those ask gc_self_exact(), which adds a getpid().
 */
bool gc_self(void);
bool gc_self_exact(void);
/* This thread's tid, cached; valid only where gc_self() is true. */
pid_t gc_gettid(void);
/* The pid of gc_self()'s process. */
pid_t gc_getpid(void);
/* The atfork child handler: this process owns the state from now on. No
 * system call unless the page was made (the process asked gc_self()). */
void gc_sys_adopt(void);
/* This process's pid namespace (the inode of /proc/self/ns/pid), 0 if
 * unknown; read once, again after fork (the child of an unshare). */
uint64_t gc_sys_pidns(void);
/*
 * Whether descriptor 2 is the stderr the process was given, or one the
 * program put there itself (dup2, dup3): not after the program closed it,
 * nor once one of its calls made a new descriptor 2 implicitly (open,
 * dup, a pipe): a daemon that closed its standard descriptors may have its
 * data file there. The library then writes none of its messages there.
 * The shim reports the program's calls: gc_stderr_gone(fd) for a number
 * closed or newly made, gc_stderr_chosen(fd) for one a dup2 made.
 */
bool gc_stderr_ok(void);
void gc_stderr_gone(int fd);
void gc_stderr_chosen(int fd);
/* One write(2) of ours that raises no SIGPIPE in the program: on a pipe
 * nobody reads, bare, it would have written nothing there at all. SIGPIPE
 * is blocked for the call, and the one the call raised is taken back (one
 * the program had pending stays). Raw calls, signal-safe. */
ssize_t gc_sys_write_quiet(int fd, const void *buf, size_t n);
/* @n bytes on descriptor 2 (gc_sys_write_quiet), where gc_stderr_ok(). */
void gc_stderr_write(const char *buf, size_t n);
/* Whether the calling thread runs under a seccomp filter, which may kill
 * the process at a system call it does not know: 0 none, else its mode (1
 * strict, 2 filter), -1 unknown. @cheap: prctl(PR_GET_SECCOMP), which a
 * filter itself sees (only for a thread already seen under none); else
 * the Seccomp field of /proc/thread-self/status (a descriptor for the
 * read; none on a kernel without seccomp). */
int gc_sys_seccomp(bool cheap);
/* Bumped at each adoption (and by gc_sys_gen_bump): a value cached per
 * thread against an older one is stale. gc_sys_gen_peek() makes no page:
 * 1 before it is made, 0 in a child made without atfork (wiped). */
extern uint32_t *gc_self_gen_word;
static inline uint32_t gc_sys_gen_peek(void)
{
	uint32_t *g = __atomic_load_n(&gc_self_gen_word, __ATOMIC_ACQUIRE);

	return g ? __atomic_load_n(g, __ATOMIC_ACQUIRE) : 1;
}
/* Makes every per-thread cache checked against the generation stale (a
 * new stats area); nothing before the page is made. */
void gc_sys_gen_bump(void);

/*
 * A step run once, by the first thread that asks; others wait for it
 * (yielding the CPU). The thread running it that asks again (from a signal
 * handler, or from the step itself) gets false at once. A waiter that has
 * waited far longer than a step takes runs it itself: its runner is stopped,
 * or not in this process (a child made without atfork handlers, copied in
 * mid-step), and a step is one that gives the same result run twice.
 * No system call unless threads contend. Returns true once done.
 */
struct gc_once {
	int o_state;	/* 0 never, 1 running, 2 done */
	void *o_runner;	/* the runner's thread */
};
bool gc_once_slow(struct gc_once *o, void (*fn)(void));
static inline bool gc_once(struct gc_once *o, void (*fn)(void))
{
	return __builtin_expect(__atomic_load_n(&o->o_state, __ATOMIC_ACQUIRE) == 2, 1) ||
	       gc_once_slow(o, fn);
}

/* The lowest descriptor number the library's own descriptors may take:
 * 256, or less under a lower RLIMIT_NOFILE (the top quarter of it). */
int gc_sys_fd_floor(void);
/* Moves @fd to the floor or above, close-on-exec, and closes @fd; returns
 * the new number, or -1 with errno when it cannot be moved (@fd is closed
 * all the same: nothing of ours stays in the program's range). Raw calls. */
int gc_sys_fd_up(int fd);

/*
 * The descriptors the library keeps open (the exit report's copy of
 * stderr, gcd's file, libunwind's pipe), each named by the int that holds
 * its number: the program never had them, so its close() of one fails
 * with EBADF as it would bare, its close_range() and closefrom() leave
 * them, and its dup2() or dup3() onto one's number first moves ours to
 * another number (*where follows). A raw system call is not seen.
 */
#define GC_OWN_HELD 64		/* the held descriptions (core/fdtable.h) */
#define GC_OWN_FDS (8 + GC_OWN_HELD)
extern int gc_own_min;		/* the lowest kept number; INT_MAX: none */
bool gc_own_keep(int *where);
/* A kept int (gc_own_keep) now holds @fd: the fast check covers it. */
void gc_own_lower(int fd);
void gc_own_drop(int *where);
static inline bool gc_own_maybe(int fd)
{
	return __builtin_expect(fd >= __atomic_load_n(&gc_own_min, __ATOMIC_RELAXED), 0);
}
bool gc_own_is(int fd);
/* Before the program puts a descriptor at @fd: ours there moves. */
void gc_own_clear(int fd);
/* Ours at @fd is being closed by whoever keeps it: forgotten. */
void gc_own_forget(int fd);
/* The kept numbers in [@lo, @hi], ascending, into @out (at most
 * GC_OWN_FDS); returns how many. */
int gc_own_in(unsigned int lo, unsigned int hi, int *out);
#endif
