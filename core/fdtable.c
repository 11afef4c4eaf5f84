// SPDX-License-Identifier: LGPL-2.1-or-later
/* Descriptor table: fd -> sync flags the program asked for and the library
 * converted. Two-level, chunks mapped on first use; lookups are one or two
 * atomic loads, never a lock or an allocation (signal-handler safe). */
#include "core/fdtable.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sys.h"

#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define NCHUNKS (GC_FD_MAX / CHUNK_SIZE)

/* Entry: low 32 bits the converted flags, high 32 bits a generation so the
 * close protocol can tell "still the entry I closed" from "reused since".
 * A chunk holds CHUNK_SIZE entries followed by CHUNK_SIZE inode numbers:
 * the file each entry was made for, to spot entries that outlived their
 * descriptor through a close we could not see (glibc-internal closes);
 * then CHUNK_SIZE device numbers, a hint of the filesystem each fd last
 * synced on. */
static uint64_t *chunks[NCHUNKS] GC_LARGE;
/* The first chunk's pointer (descriptors below CHUNK_SIZE: every process's)
 * is on the start page (GC_START), chunks[0] unused: the first request
 * read chunks[0] before anything else of its page, which mapped the zero
 * page, and the chunk's store then cost a second fault there. */
GC_START static uint64_t *chunk0;
/* and the first chunk itself, in the zeroed data: a process's first
 * request maps no chunk of its own (an mmap, and a mapping more) */
static uint64_t chunk0_store[3 * CHUNK_SIZE] GC_LARGE __attribute__((aligned(4096)));
/* Set before the first entry is made, never cleared: until then every
 * entry is zero, and a read of one (gc_fd_get, gc_fd_token and
 * gc_fd_close_begin: each write and close asks) does not touch the
 * chunk. A process that syncs but opens nothing O_SYNC has a chunk only
 * for its device hints, and its close read a page of zeroes there, a
 * page fault. */
GC_START static int entries_made;
static uint32_t generation;

static inline uint64_t **chunk_ref(unsigned int fd)
{
	return fd < CHUNK_SIZE ? &chunk0 : &chunks[fd >> CHUNK_BITS];
}

/* @made (may be NULL): set when this call mapped the chunk, whose pages
 * nobody has touched yet. */
static uint64_t *slot_made(int fd, int create, bool *made)
{
	uint64_t *c, *fresh;

	if (fd < 0 || fd >= GC_FD_MAX)
		return NULL;
	c = __atomic_load_n(chunk_ref((unsigned int)fd), __ATOMIC_ACQUIRE);
	if (c || !create)
		return c ? &c[fd & (CHUNK_SIZE - 1)] : NULL;
	fresh = (unsigned int)fd < CHUNK_SIZE ? chunk0_store
				: gc_sys_mmap(NULL, 3 * CHUNK_SIZE * sizeof(uint64_t),
					      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return NULL;
	if (!__atomic_compare_exchange_n(chunk_ref((unsigned int)fd), &c, fresh, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (fresh != chunk0_store)
			munmap(fresh, 3 * CHUNK_SIZE * sizeof(uint64_t));
		/* c now holds the winner's chunk */
	} else {
		c = fresh;
		if (made)
			*made = true;
	}
	return &c[fd & (CHUNK_SIZE - 1)];
}

static uint64_t *slot(int fd, int create)
{
	return slot_made(fd, create, NULL);
}

/* @fd's entry word (its token; the sync flags in the low half), 0 for
 * none: read only once an entry was ever made, else no chunk is touched. */
static uint64_t entry_word(int fd)
{
	uint64_t *s = __atomic_load_n(&entries_made, __ATOMIC_ACQUIRE) ? slot(fd, 0) : NULL;

	return s ? __atomic_load_n(s, __ATOMIC_ACQUIRE) : 0;
}

/* ---- held descriptions ---------------------------------------------------
 * Slot i: held_for[i] is the entry's number + 1 (0: free); held_fd[i] the
 * held number (-1: none), an int the own-descriptor registry watches
 * (core/sys.h), so the program's close() of it fails with EBADF, its
 * close_range() leaves it and its dup2() onto it moves it. Changes are
 * made under held_owner (a thread's tid), never across a system call; a
 * slot names the generation of the entry it was made for, so that a
 * close's late clearing never takes the next open's. A
 * signal handler on the owner's own thread is refused (its conversion is
 * not made, its held description is left open) rather than deadlocked. */
static int held_for[GC_FD_HELD];
static int held_fd[GC_FD_HELD];
static uint32_t held_gen[GC_FD_HELD];	/* the entry's generation */
static uint64_t held_ino[GC_FD_HELD];	/* its file's inode (0: unknown) */
GC_START static pid_t held_owner;	/* fork's child reads it: the start page */
static struct gc_once held_once;

static void held_setup(void)
{
	int i;

	for (i = 0; i < GC_FD_HELD; i++) {
		__atomic_store_n(&held_fd[i], -1, __ATOMIC_RELAXED);
		gc_own_keep(&held_fd[i]);
	}
}

/* A spinlock naming its owner's tid: false (not taken) for a signal
 * handler on the holder's own thread. Spinning yields: holders make a few
 * system calls at most, and may be preempted. */
static bool tid_lock(pid_t *owner)
{
	pid_t me = gc_gettid(), free_;

	if (__atomic_load_n(owner, __ATOMIC_RELAXED) == me)
		return false;
	for (;;) {
		free_ = 0;
		if (__atomic_compare_exchange_n(owner, &free_, me, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		sched_yield();
	}
}

static void tid_unlock(pid_t *owner)
{
	__atomic_store_n(owner, 0, __ATOMIC_RELEASE);
}

static bool held_lock(void)
{
	return tid_lock(&held_owner);
}

static void held_unlock(void)
{
	tid_unlock(&held_owner);
}

/* A slot for @fd, holding a new number for @src's description; -errno.
 * Never @fd itself: a dup2() onto a free number at the floor makes the
 * copy's entry (and this) before the real call, which then puts the
 * program's description there. */
static int held_new(int fd, int src)
{
	int i, h;

	if (!gc_once(&held_once, held_setup))
		return -EAGAIN;
	h = (int)syscall(SYS_fcntl, src, F_DUPFD_CLOEXEC, gc_sys_fd_floor());
	if (h == fd) {
		int other = (int)syscall(SYS_fcntl, src, F_DUPFD_CLOEXEC, fd + 1);

		syscall(SYS_close, h);
		h = other;
	}
	if (h < 0)
		return -errno;
	if (held_lock()) {
		for (i = 0; i < GC_FD_HELD; i++) {
			if (__atomic_load_n(&held_for[i], __ATOMIC_RELAXED))
				continue;
			held_gen[i] = (uint32_t)(entry_word(fd) >> 32);
			held_ino[i] = gc_fd_ino(fd);
			__atomic_store_n(&held_fd[i], h, __ATOMIC_RELEASE);
			__atomic_store_n(&held_for[i], fd + 1, __ATOMIC_RELEASE);
			held_unlock();
			gc_own_lower(h);
			return 0;
		}
		held_unlock();
	}
	syscall(SYS_close, h);
	return -ENFILE;
}

/* @fd's entry of generation @gen (0: whichever) goes: its held
 * description too. */
static void held_drop(int fd, uint32_t gen)
{
	int i, h = -1, fl;
	uint64_t ino = 0;
	struct stat st;

	if (!held_lock())
		return;
	for (i = 0; i < GC_FD_HELD; i++) {
		if (__atomic_load_n(&held_for[i], __ATOMIC_RELAXED) != fd + 1 ||
		    (gen && held_gen[i] != gen))
			continue;
		__atomic_store_n(&held_for[i], 0, __ATOMIC_RELEASE);
		h = __atomic_exchange_n(&held_fd[i], -1, __ATOMIC_ACQ_REL);
		ino = held_ino[i];
		break;
	}
	held_unlock();
	if (h < 0)
		return;
	/* Still ours? A raw close system call of the program's may have
	 * closed it, and the number may be the program's own file now. */
	fl = (int)syscall(SYS_fcntl, h, F_GETFL);
	if (fl < 0 || !(fl & O_DSYNC) || fstat(h, &st) || (ino && (uint64_t)st.st_ino != ino))
		return;
	syscall(SYS_close, h);
}

int gc_fd_held(int fd)
{
	int i;

	for (i = 0; i < GC_FD_HELD; i++)
		if (__atomic_load_n(&held_for[i], __ATOMIC_ACQUIRE) == fd + 1)
			return __atomic_load_n(&held_fd[i], __ATOMIC_ACQUIRE);
	return -1;
}

int gc_fd_held_shared(int fd)
{
	int i, h = gc_fd_held(fd);

	if (h >= 0 || !gc_fd_get(fd))
		return h;
	/* a copy made with the table full: another number of the same
	 * description holds what was opened */
	for (i = 0; i < GC_FD_HELD; i++) {
		int other = __atomic_load_n(&held_for[i], __ATOMIC_ACQUIRE) - 1;

		if (other >= 0 && other != fd && gc_sys_same_file(fd, other) == 1)
			return __atomic_load_n(&held_fd[i], __ATOMIC_ACQUIRE);
	}
	return -1;
}

void gc_fd_unhold(int fd)
{
	held_drop(fd, 0);
}

bool gc_fd_held_any(void)
{
	int i;

	for (i = 0; i < GC_FD_HELD; i++)
		if (__atomic_load_n(&held_for[i], __ATOMIC_ACQUIRE))
			return true;
	return false;
}

int gc_fd_hold(int fd)
{
	return held_new(fd, fd);
}

int gc_fd_get(int fd)
{
	return (int)(uint32_t)entry_word(fd);
}

int gc_fd_set(int fd, int sync_flags)
{
	uint64_t *s, gen;

	if (fd < 0 || fd >= GC_FD_MAX)
		return -EBADF;
	if (!sync_flags) {
		s = slot(fd, 0);
		if (s)
			__atomic_store_n(s, 0, __ATOMIC_RELEASE);
		held_drop(fd, 0);
		return 0;
	}
	held_drop(fd, 0);
	s = slot(fd, 1);
	if (!s)
		return -ENOMEM;
	if (!__atomic_load_n(&entries_made, __ATOMIC_RELAXED))
		__atomic_store_n(&entries_made, 1, __ATOMIC_SEQ_CST);
	gen = __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
	if (!(uint32_t)gen)
		gen = __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
	__atomic_store_n(s + CHUNK_SIZE, 0, __ATOMIC_RELAXED);
	__atomic_store_n(s, gen << 32 | (uint32_t)sync_flags, __ATOMIC_RELEASE);
	return 0;
}

void gc_fd_bind(int fd, uint64_t ino)
{
	uint64_t *s = slot(fd, 0);

	if (s)
		__atomic_store_n(s + CHUNK_SIZE, ino, __ATOMIC_RELEASE);
}

void gc_fd_hint_dev(int fd, uint64_t dev)
{
	bool made = false;
	uint64_t *s = slot_made(fd, 1, &made);

	/* compared first so that an unchanged hint leaves a page shared
	 * with a fork's other side alone; in a chunk just mapped, the read
	 * would only map the zero page and the store fault again */
	if (s && (made || __atomic_load_n(s + 2 * CHUNK_SIZE, __ATOMIC_RELAXED) != dev))
		__atomic_store_n(s + 2 * CHUNK_SIZE, dev, __ATOMIC_RELAXED);
}

uint64_t gc_fd_dev_hint(int fd)
{
	uint64_t *s = slot(fd, 0);

	return s ? __atomic_load_n(s + 2 * CHUNK_SIZE, __ATOMIC_RELAXED) : 0;
}

uint64_t gc_fd_ino(int fd)
{
	uint64_t *s = slot(fd, 0);

	return s ? __atomic_load_n(s + CHUNK_SIZE, __ATOMIC_ACQUIRE) : 0;
}

void gc_fd_copy(int oldfd, int newfd)
{
	int h;

	if (oldfd == newfd)
		return;
	/* Can only fail for an fd beyond the table or with no memory; the
	 * caller then finds no entry and gives the copy its flag back. */
	if (gc_fd_set(newfd, gc_fd_get(oldfd)) != 0)
		return;
	gc_fd_bind(newfd, gc_fd_ino(oldfd));
	/* Without a held number of its own (the table full, none free at the
	 * floor) the copy still names the same converted description, its
	 * offset shared: a hand-back of it finds the held one through
	 * another number of that description (gc_fd_held_shared). */
	h = gc_fd_held(oldfd);
	if (h >= 0)
		held_new(newfd, h);
}

uint64_t gc_fd_close_begin(int fd)
{
	return entry_word(fd);
}

void gc_fd_close_end(int fd, uint64_t token)
{
	uint64_t *s = slot(fd, 0);

	if (s && token &&
	    __atomic_compare_exchange_n(s, &token, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		held_drop(fd, (uint32_t)(token >> 32));
}

uint64_t gc_fd_token(int fd)
{
	return entry_word(fd);
}

void gc_fd_clear_range(unsigned lo, unsigned hi)
{
	unsigned fd;

	if (hi >= GC_FD_MAX)
		hi = GC_FD_MAX - 1;
	for (fd = lo; fd <= hi; fd++) {
		uint64_t *c = __atomic_load_n(chunk_ref(fd), __ATOMIC_ACQUIRE);

		if (!c) {
			fd |= CHUNK_SIZE - 1; /* skip the whole unmapped chunk */
			continue;
		}
		uint64_t w = __atomic_exchange_n(&c[fd & (CHUNK_SIZE - 1)], 0, __ATOMIC_ACQ_REL);

		if (w)
			held_drop((int)fd, (uint32_t)(w >> 32));
	}
}

void gc_fd_reset(void)
{
	gc_fd_clear_range(0, GC_FD_MAX - 1);
}

int gc_fd_next(int from)
{
	int fd;

	for (fd = from < 0 ? 0 : from; fd < GC_FD_MAX; fd++) {
		uint64_t *c = __atomic_load_n(chunk_ref((unsigned int)fd), __ATOMIC_ACQUIRE);

		if (!c) {
			fd |= CHUNK_SIZE - 1;
			continue;
		}
		if (__atomic_load_n(&c[fd & (CHUNK_SIZE - 1)], __ATOMIC_ACQUIRE))
			return fd;
	}
	return -1;
}

/* Owner tid of the swap lock, 0 when free. Spinning yields: the holder does
 * a few system calls (a reopen, a dup3, a close) and may be preempted. */
GC_START static pid_t swap_owner;
GC_START static int spawning, converting;

bool gc_fd_swap_lock(void)
{
	return tid_lock(&swap_owner);
}

void gc_fd_swap_unlock(bool taken)
{
	if (taken)
		tid_unlock(&swap_owner);
}

void gc_fd_spawn_begin(void)
{
	__atomic_add_fetch(&spawning, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&converting, __ATOMIC_SEQ_CST))
		sched_yield();
}

void gc_fd_spawn_end(void)
{
	__atomic_sub_fetch(&spawning, 1, __ATOMIC_SEQ_CST);
}

/* No conversion any more, in this process and its fork children. */
GC_START static bool stopped;

void gc_fd_convert_stop(void)
{
	__atomic_store_n(&stopped, true, __ATOMIC_SEQ_CST);
	gc_fd_spawn_begin(); /* waits for the conversions under way */
	gc_fd_spawn_end();
}

bool gc_fd_convert_begin(void)
{
	__atomic_add_fetch(&converting, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&spawning, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&stopped, __ATOMIC_SEQ_CST))
		return true;
	__atomic_sub_fetch(&converting, 1, __ATOMIC_SEQ_CST);
	return false;
}

void gc_fd_convert_end(void)
{
	__atomic_sub_fetch(&converting, 1, __ATOMIC_SEQ_CST);
}

/* fork() waits for a swap in progress, so the child never starts with a
 * number half swapped; a fork from a signal handler on the holder's thread
 * goes ahead (the child then resets the lock anyway). */
GC_START static bool fork_took;

GC_ONCE void gc_fd_fork_prepare(void)
{
	/* nothing was ever converted: no swap to wait for */
	GC_STORE_CHANGED(fork_took, gc_fd_ever() && gc_fd_swap_lock());
}

GC_ONCE void gc_fd_fork_parent(void)
{
	gc_fd_swap_unlock(fork_took);
}

GC_ONCE void gc_fd_fork_child(void)
{
	GC_STORE_CHANGED(held_owner, 0);
	GC_STORE_CHANGED(swap_owner, 0);
	GC_STORE_CHANGED(spawning, 0);
	GC_STORE_CHANGED(converting, 0);
}

/* dev + 1 per slot (0: free), appended with a CAS, never removed. */
GC_START static uint64_t devs_seen[GC_FD_DEVS];

int gc_fd_dev_note(uint64_t dev)
{
	uint64_t want = dev + 1, cur;
	int i;

	for (i = 0; i < GC_FD_DEVS; i++) {
		cur = __atomic_load_n(&devs_seen[i], __ATOMIC_ACQUIRE);
		while (!cur) {
			if (__atomic_compare_exchange_n(&devs_seen[i], &cur, want, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return 0;
		}
		if (cur == want)
			return 0;
	}
	return -ENOSPC;
}

/* Asked by fork's prepare handler (and by exec's and a give-back's rarer
 * paths): placed with the start-up, fork and exit code, where a child of a
 * process that never synced finds it in the one window of code it maps. */
GC_ONCE bool gc_fd_ever(void)
{
	return __atomic_load_n(&devs_seen[0], __ATOMIC_SEQ_CST) != 0;
}

int gc_fd_devs(uint64_t *devs, int max)
{
	int i, n = 0;

	for (i = 0; i < GC_FD_DEVS && n < max; i++) {
		uint64_t v = __atomic_load_n(&devs_seen[i], __ATOMIC_ACQUIRE);

		if (!v)
			break;
		devs[n++] = v - 1;
	}
	return n;
}
