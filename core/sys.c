// SPDX-License-Identifier: LGPL-2.1-or-later
/* Real system calls, the depth guard, the identity page, one-time steps
 * and the descriptor floor (see sys.h). */
#include "core/sys.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

GC_START struct gc_sys gc_sys;
GC_START unsigned int gc_made;
__thread int gc_depth __attribute__((tls_model("initial-exec")));
__thread bool gc_strict __attribute__((tls_model("initial-exec")));

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

int gc_sys_fd_names(int fd, const struct stat *st)
{
	struct stat now;
	int e = errno, r;

	if (gc_sys_fstat(fd, &now) == 0)
		r = now.st_ino == st->st_ino && now.st_dev == st->st_dev;
	else
		r = errno == EBADF ? 0 : -1;
	errno = e;
	return r;
}

int gc_sys_sfr(int fd, off64_t off, off64_t len, unsigned int flags)
{
	int r = gc_sys.sy_sync_file_range
			? gc_sys.sy_sync_file_range(fd, off, len, flags)
			: (int)syscall(SYS_sync_file_range, fd, off, len, flags);

	return r < 0 ? -errno : 0;
}

/* ---- one-time steps ----------------------------------------------------- */

/* The vDSO's clock: no system call. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The address of a thread-local byte names the thread without a system
 * call (unique among the live threads of a process). */
static __thread char once_mark __attribute__((tls_model("initial-exec")));

/* A step takes microseconds; a runner still at it after this long is
 * stopped or gone (copied in mid-step by a fork that ran no handler). A
 * count of yields is no measure: 16 threads yielding to each other on two
 * busy CPUs ran out of them while the runner waited for a CPU, and ran
 * the step a second time beside it (the configuration cleared while
 * other threads read it). */
#define ONCE_PATIENCE_NS (2ULL * 1000 * 1000 * 1000)

bool gc_once_slow(struct gc_once *o, void (*fn)(void))
{
	void *me = &once_mark;
	uint64_t until = 0;
	int st = 0;

	for (;;) {
		if (__atomic_compare_exchange_n(&o->o_state, &st, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE))
			break;
		if (st == 2)
			return true;
		if (__atomic_load_n(&o->o_runner, __ATOMIC_RELAXED) == me)
			return false; /* re-entered on the runner's own thread */
		if (!until)
			until = mono_ns() + ONCE_PATIENCE_NS;
		else if (mono_ns() > until)
			break; /* run it here: the same step, the same result */
		sched_yield();
		st = 0;
	}
	__atomic_store_n(&o->o_runner, me, __ATOMIC_RELAXED);
	fn();
	__atomic_store_n(&o->o_state, 2, __ATOMIC_RELEASE);
	return true;
}

/* ---- who we are --------------------------------------------------------- */

/* The identity page: MAP_PRIVATE | MAP_ANONYMOUS, MADV_WIPEONFORK. */
struct self_page {
	uint32_t sp_owned;	/* 1 here; 0 in a child made without atfork */
	uint32_t sp_gen;	/* gc_sys_gen() */
	int32_t sp_pid;		/* the owner's pid */
};

enum { SELF_NONE, SELF_WIPE, SELF_GETPID };
GC_START static struct self_page *self_pg;
uint32_t *gc_self_gen_word;
static int self_mode;
GC_START static int self_making;	/* 0, 1 claimed, then minus the maker's pid */
static pid_t self_pid_slow;	/* SELF_GETPID: the owner's pid */
GC_START static uint32_t self_gen;	/* last generation given out; copied, never wiped */
static __thread pid_t gc_tid __attribute__((tls_model("initial-exec")));
static __thread uint32_t gc_tid_gen __attribute__((tls_model("initial-exec")));

/* Never wiped: the page where no page can be mapped. */
static struct self_page self_static;

/* Does this process share its parent's memory (a vfork child, or clone
 * with CLONE_VM)? Then the page must not be made here: it would name
 * this child in the parent's memory for good. Unknown (no kcmp, or no
 * right to compare with the parent): no. */
static bool in_parents_memory(pid_t me)
{
	pid_t parent = (pid_t)syscall(SYS_getppid);

	return parent > 0 && syscall(SYS_kcmp, me, parent, 1 /* KCMP_VM */, 0, 0) == 0;
}

static __thread int self_maker __attribute__((tls_model("initial-exec")));

/* How long a thread waits for another to make the page: far beyond the
 * few system calls it takes, on a machine with every CPU busy. */
#define PAGE_WAIT_NS (2ULL * 1000 * 1000 * 1000)

/* Makes the page at the first question. A thread that finds it being made
 * waits for it, unless it is the maker re-entered from a signal handler,
 * or the maker is not there to finish (a child copied in mid-make by a
 * fork that ran no handler: the maker's pid is not its own): those are
 * told "not ours" for that question, and make a direct real call. The
 * wait counts time, not turns: 16 threads yielding to each other on two
 * busy CPUs gave up before the maker ran again (O_SYNC opens left as
 * they were). */
static struct self_page *page_make(void)
{
	struct self_page *p;
	int free_ = 0, mode = SELF_WIPE;
	pid_t me;

	if (!__atomic_compare_exchange_n(&self_making, &free_, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		uint64_t until = 0;
		pid_t mine = 0;
		int m;

		while (!self_maker && !__atomic_load_n(&self_pg, __ATOMIC_ACQUIRE) &&
		       (m = __atomic_load_n(&self_making, __ATOMIC_ACQUIRE)) != 0) {
			if (m < 0) {
				if (!mine)
					mine = (pid_t)syscall(SYS_getpid);
				if (-m != mine)
					break;
			}
			if (!until)
				until = mono_ns() + PAGE_WAIT_NS;
			else if (mono_ns() > until)
				break;
			sched_yield();
		}
		return __atomic_load_n(&self_pg, __ATOMIC_ACQUIRE);
	}
	self_maker = 1;
	me = (pid_t)syscall(SYS_getpid);
	if (in_parents_memory(me)) {
		self_maker = 0;
		__atomic_store_n(&self_making, 0, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&self_making, -(int)me, __ATOMIC_RELEASE);
	p = gc_sys_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		p = &self_static;
		mode = SELF_GETPID;
	} else if (gc_sys_madvise(p, 4096, MADV_WIPEONFORK) != 0) {
		mode = SELF_GETPID;
	}
	p->sp_pid = me;
	p->sp_gen = ++self_gen;
	p->sp_owned = 1;
	self_pid_slow = me;
	self_mode = mode;
	/* published once, and never made again in this process */
	__atomic_store_n(&self_pg, p, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_self_gen_word, &p->sp_gen, __ATOMIC_RELEASE);
	self_maker = 0;
	return p;
}

static inline struct self_page *page(void)
{
	struct self_page *p = __atomic_load_n(&self_pg, __ATOMIC_ACQUIRE);

	return __builtin_expect(p != NULL, 1) ? p : page_make();
}

bool gc_self(void)
{
	struct self_page *p = page();

	if (!p)
		return false;
	if (__builtin_expect(self_mode == SELF_WIPE, 1))
		return __atomic_load_n(&p->sp_owned, __ATOMIC_RELAXED) == 1;
	return (pid_t)syscall(SYS_getpid) == __atomic_load_n(&self_pid_slow, __ATOMIC_RELAXED);
}

bool gc_self_exact(void)
{
	return gc_self() && (pid_t)syscall(SYS_getpid) == gc_getpid();
}

void gc_sys_gen_bump(void)
{
	struct self_page *p = __atomic_load_n(&self_pg, __ATOMIC_ACQUIRE);

	if (p)
		__atomic_store_n(&p->sp_gen, __atomic_add_fetch(&self_gen, 1, __ATOMIC_RELAXED),
				 __ATOMIC_RELEASE);
}

pid_t gc_getpid(void)
{
	struct self_page *p = __atomic_load_n(&self_pg, __ATOMIC_ACQUIRE);
	pid_t pid;

	/* code linked without the shim (unit tests) may never ask gc_self() */
	if (!p)
		return (pid_t)syscall(SYS_getpid);
	if (self_mode != SELF_WIPE)
		return __atomic_load_n(&self_pid_slow, __ATOMIC_RELAXED);
	pid = __atomic_load_n(&p->sp_pid, __ATOMIC_RELAXED);
	/* wiped: a child made without atfork, which asks gc_self() first */
	return pid ? pid : (pid_t)syscall(SYS_getpid);
}

pid_t gc_gettid(void)
{
	struct self_page *p = __atomic_load_n(&self_pg, __ATOMIC_ACQUIRE);
	uint32_t gen = p ? __atomic_load_n(&p->sp_gen, __ATOMIC_RELAXED) : 0;

	/* a cache filled before the last adoption is the forking thread's
	 * parent's; without a page, nothing is cached */
	if (!p || gen != gc_tid_gen || !gc_tid) {
		gc_tid = (pid_t)syscall(SYS_gettid);
		gc_tid_gen = gen;
	}
	return gc_tid;
}

GC_START static uint64_t pidns_ino;

/* The inode of the pid namespace, from the link's text ("pid:[N]", the
 * number stat would give as st_ino): a process's first lookup under /proc,
 * about 3 us less than a stat, which also walks into the namespace's own
 * file system. 0 where it cannot be read. */
uint64_t gc_sys_pidns(void)
{
	char buf[64];
	uint64_t ino = 0;
	long n;
	int i = 0;

	if (__atomic_load_n(&pidns_ino, __ATOMIC_RELAXED))
		return __atomic_load_n(&pidns_ino, __ATOMIC_RELAXED);
	n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/ns/pid", buf, sizeof(buf));
	while (i < n && buf[i] != '[')
		i++;
	for (i++; i < n && buf[i] >= '0' && buf[i] <= '9' && ino < UINT64_MAX / 10; i++)
		ino = ino * 10 + (uint64_t)(buf[i] - '0');
	if (i >= n || buf[i] != ']')
		return 0;
	__atomic_store_n(&pidns_ino, ino, __ATOMIC_RELAXED);
	return ino;
}

static int fd2_foreign;

bool gc_stderr_ok(void)
{
	return !__atomic_load_n(&fd2_foreign, __ATOMIC_RELAXED);
}

void gc_stderr_gone(int fd)
{
	if (fd == 2)
		__atomic_store_n(&fd2_foreign, 1, __ATOMIC_RELAXED);
}

void gc_stderr_chosen(int fd)
{
	if (fd == 2)
		__atomic_store_n(&fd2_foreign, 0, __ATOMIC_RELAXED);
}

/* The kernel's sigset: 64 signals. */
#define KSIGSET 8

ssize_t gc_sys_write_quiet(int fd, const void *buf, size_t n)
{
	sigset_t pipe_only, old, pending;
	struct timespec zero = { 0, 0 };
	bool was_pending;
	ssize_t r;
	int e;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	was_pending = syscall(SYS_rt_sigpending, &pending, KSIGSET) == 0 &&
		      sigismember(&pending, SIGPIPE);
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &pipe_only, &old, KSIGSET) != 0)
		return -1;
	r = (ssize_t)syscall(SYS_write, fd, buf, n);
	e = errno;
	/* the SIGPIPE this write raised, not one the program had pending */
	if (r < 0 && e == EPIPE && !was_pending)
		syscall(SYS_rt_sigtimedwait, &pipe_only, NULL, &zero, KSIGSET);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, KSIGSET);
	errno = e;
	return r;
}

void gc_stderr_write(const char *buf, size_t n)
{
	if (gc_stderr_ok())
		gc_sys_write_quiet(2, buf, n);
}

/* A status line "Seccomp:\tN": 1 + N; another line: 0, read on. */
static int seccomp_line(const char *line, void *ctx)
{
	const char *v = gc_str_after(line, "Seccomp:");

	(void)ctx;
	if (!v)
		return 0;
	while (*v == ' ' || *v == '\t')
		v++;
	return *v >= '0' && *v <= '9' ? 1 + (*v - '0') : -1;
}

int gc_sys_seccomp(bool cheap)
{
	int m;

	if (cheap) {
		m = (int)syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0);
		return m < 0 ? -1 : m;
	}
	m = gc_proc_lines("/proc/thread-self/status", seccomp_line, NULL);
	/* to the end without the field: a kernel built without seccomp */
	return m > 0 ? m - 1 : m == 0 ? 0 : -1;
}

GC_START static int own_lock; /* the descriptors of our own (below): changes
			 * only; readers load one slot at a time */

GC_ONCE void gc_sys_adopt(void)
{
	struct self_page *p = self_pg;

	GC_STORE_CHANGED(pidns_ino, 0);
	/* another thread of the parent may have been moving one of ours */
	GC_STORE_CHANGED(own_lock, 0);
	/* Nothing made yet: the first question makes it, in this process
	 * (another thread of the parent may have been making it: not here).
	 * Otherwise the pid is read now, not when first asked: a child
	 * sharing our memory (vfork) may be the first to ask. */
	if (!p) {
		self_maker = 0;
		GC_STORE_CHANGED(self_making, 0);
		return;
	}
	p->sp_pid = (int32_t)syscall(SYS_getpid);
	p->sp_owned = 1;
	/* read only without a wiped page: written only then (its page is
	 * one more the child would copy) */
	if (self_mode != SELF_WIPE)
		self_pid_slow = p->sp_pid;
	gc_sys_gen_bump();
}

/* ---- the descriptor floor ----------------------------------------------- */

#define GC_FD_FLOOR 256

int gc_sys_fd_floor(void)
{
	struct rlimit rl;

	if (syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * GC_FD_FLOOR)
		return rl.rlim_cur >= 8 ? (int)(rl.rlim_cur - rl.rlim_cur / 4) : 3;
	return GC_FD_FLOOR;
}

int gc_sys_fd_up(int fd)
{
	int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, gc_sys_fd_floor());

	syscall(SYS_close, fd);
	return hi;
}

/* ---- descriptors of our own --------------------------------------------- */

static int *own[GC_OWN_FDS];
int gc_own_min = INT_MAX;

static void own_lock_take(void)
{
	while (__atomic_exchange_n(&own_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void own_recompute(void)
{
	int i, m = INT_MAX;

	for (i = 0; i < GC_OWN_FDS; i++) {
		int *w = __atomic_load_n(&own[i], __ATOMIC_RELAXED);
		int fd = w ? __atomic_load_n(w, __ATOMIC_RELAXED) : -1;

		if (fd >= 0 && fd < m)
			m = fd;
	}
	__atomic_store_n(&gc_own_min, m, __ATOMIC_RELEASE);
}

bool gc_own_keep(int *where)
{
	int i;
	bool ok = false;

	own_lock_take();
	for (i = 0; i < GC_OWN_FDS && !ok; i++)
		if (!own[i] || own[i] == where) {
			__atomic_store_n(&own[i], where, __ATOMIC_RELEASE);
			ok = true;
		}
	own_recompute();
	__atomic_store_n(&own_lock, 0, __ATOMIC_RELEASE);
	return ok;
}

void gc_own_lower(int fd)
{
	int m = __atomic_load_n(&gc_own_min, __ATOMIC_RELAXED);

	while (fd < m && !__atomic_compare_exchange_n(&gc_own_min, &m, fd, 0, __ATOMIC_RELEASE,
						      __ATOMIC_RELAXED))
		;
}

void gc_own_drop(int *where)
{
	int i;

	own_lock_take();
	for (i = 0; i < GC_OWN_FDS; i++)
		if (own[i] == where)
			__atomic_store_n(&own[i], NULL, __ATOMIC_RELEASE);
	own_recompute();
	__atomic_store_n(&own_lock, 0, __ATOMIC_RELEASE);
}

bool gc_own_is(int fd)
{
	int i;

	if (fd < 0 || !gc_own_maybe(fd))
		return false;
	for (i = 0; i < GC_OWN_FDS; i++) {
		int *w = __atomic_load_n(&own[i], __ATOMIC_ACQUIRE);

		if (w && __atomic_load_n(w, __ATOMIC_RELAXED) == fd)
			return true;
	}
	return false;
}

void gc_own_clear(int fd)
{
	int i;

	/* a vfork child's dup2 replaces its own copy: ours stays the parent's */
	if (!gc_own_is(fd) || !gc_self_exact())
		return;
	own_lock_take();
	for (i = 0; i < GC_OWN_FDS; i++) {
		int *w = own[i], to;

		if (!w || __atomic_load_n(w, __ATOMIC_RELAXED) != fd)
			continue;
		/* a new number first, then the old one goes: whoever reads
		 * *w finds an open descriptor of ours either way */
		to = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, gc_sys_fd_floor());
		if (to == fd || to < 0) {
			/* nowhere to go: given up rather than left to the program */
			__atomic_store_n(w, -1, __ATOMIC_RELEASE);
			own[i] = NULL;
		} else {
			__atomic_store_n(w, to, __ATOMIC_RELEASE);
		}
		syscall(SYS_close, fd);
	}
	own_recompute();
	__atomic_store_n(&own_lock, 0, __ATOMIC_RELEASE);
}

void gc_own_forget(int fd)
{
	int i;

	own_lock_take();
	for (i = 0; i < GC_OWN_FDS; i++)
		if (own[i] && __atomic_load_n(own[i], __ATOMIC_RELAXED) == fd)
			__atomic_store_n(&own[i], NULL, __ATOMIC_RELEASE);
	own_recompute();
	__atomic_store_n(&own_lock, 0, __ATOMIC_RELEASE);
}

int gc_own_in(unsigned int lo, unsigned int hi, int *out)
{
	int i, j, n = 0;

	if (!gc_own_maybe((int)(hi > INT_MAX ? INT_MAX : hi)))
		return 0;
	for (i = 0; i < GC_OWN_FDS; i++) {
		int *w = __atomic_load_n(&own[i], __ATOMIC_ACQUIRE);
		int fd = w ? __atomic_load_n(w, __ATOMIC_RELAXED) : -1;

		if (fd < 0 || (unsigned int)fd < lo || (unsigned int)fd > hi)
			continue;
		for (j = n; j > 0 && out[j - 1] > fd; j--)
			out[j] = out[j - 1];
		out[j] = fd;
		n++;
	}
	return n;
}

/* ---- the mount table ---------------------------------------------------- */

int gc_proc_lines(const char *path, int (*fn)(const char *line, void *ctx), void *ctx)
{
	char buf[512], line[1024];	/* small reads: a handler's stack */
	size_t ll = 0;
	ssize_t n;
	int fd, r = 0, saved = errno;

	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		errno = saved;
		return r;
	}
	while (!r && (n = syscall(SYS_read, fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && !r; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i]; /* longer lines are cut */
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			r = fn(line, ctx);
		}
	}
	if (!r && n < 0)
		r = -errno;
	else if (!r && ll) {
		line[ll] = '\0';
		r = fn(line, ctx);
	}
	syscall(SYS_close, fd);
	errno = saved;
	return r;
}

/* mountinfo: "36 35 98:0 /root /mount/point opts ... - type source opts".
 * Finds a mount of ctx->dev whose mount point we can open, and syncfs it. */
struct lost_ctx {
	uint64_t dev;
	int r;		/* result of the syncfs, or -ENOENT while none was made */
};

static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

static int mount_line(const char *line, void *vctx)
{
	struct lost_ctx *ctx = vctx;
	unsigned int maj, min;
	char point[1024];
	struct stat st;
	int fd, r;

	if (sscanf(line, "%*d %*d %u:%u %*s %1023s", &maj, &min, point) != 3 ||
	    makedev(maj, min) != ctx->dev)
		return 0;
	unescape(point);
	fd = (int)syscall(SYS_openat, AT_FDCWD, point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = 0;
	if (gc_sys_fstat(fd, &st) == 0 && st.st_dev == ctx->dev) {
		r = gc_sys.sy_syncfs ? gc_sys.sy_syncfs(fd) : (int)syscall(SYS_syncfs, fd);
		ctx->r = r < 0 ? -errno : 0;
		r = 1;
	}
	syscall(SYS_close, fd);
	return r;
}

/* A syncfs of the filesystem @dev, through a descriptor of our own on one
 * of its mounts: 0, the syncfs error, or -ENOENT when no mount of it can
 * be opened here. Such a descriptor is opened late, so a writeback error
 * that happened before it was opened is not reported through it. */
int gc_sys_syncfs_dev(uint64_t dev)
{
	struct lost_ctx ctx = { .dev = dev, .r = -ENOENT };

	if (gc_proc_lines("/proc/self/mountinfo", mount_line, &ctx) < 0)
		return -ENOENT;
	return ctx.r;
}

int gc_sys_sync_file_fs(uint64_t dev)
{
	int r = gc_sys_syncfs_dev(dev);

	if (r != -ENOENT)
		return r;
	/* no mount of it to be found here (a chroot, no /proc): every
	 * filesystem then, as sync(2) does, which answers nothing */
	syscall(SYS_sync);
	return 0;
}
