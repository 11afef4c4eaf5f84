/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Descriptor table: which descriptors had O_SYNC/O_DSYNC asked by the program
 * and dropped by the library. One 64-bit word per fd, lock-free and
 * allocation-free on the lookup side so write() from a signal handler is safe. */
#ifndef GC_FDTABLE_H
#define GC_FDTABLE_H
#include <stdbool.h>
#include <stdint.h>

#include "core/sys.h"

#define GC_FD_MAX (1 << 20)

/* Sync flags the program asked for and the library removed (subset of
 * O_SYNC | O_DSYNC as the kernel defines them). 0: nothing converted. */
int gc_fd_get(int fd);
/* Records that @fd's open file description had @sync_flags converted.
 * Returns 0, or -ENOMEM / -EBADF when the fd cannot be tracked (the caller
 * must then not convert). */
int gc_fd_set(int fd, int sync_flags);
/* The inode @fd's entry was made for (0: unknown), to detect an entry left
 * behind by a close the library could not see. */
void gc_fd_bind(int fd, uint64_t ino);
uint64_t gc_fd_ino(int fd);
/* A hint, never trusted for durability: the device @fd was last seen on
 * (0: none). Lets a sync request find its domain's mode without fstat. */
void gc_fd_hint_dev(int fd, uint64_t dev);
uint64_t gc_fd_dev_hint(int fd);
/* dup-style copy: @newfd now names @oldfd's description, with its entry
 * and, room permitting, a held number of its own (gc_fd_held_shared
 * finds the held description without one). No entry where none could be
 * made (the caller then gives @newfd its real flag back). */
void gc_fd_copy(int oldfd, int newfd);
/*
 * The description the program opened with O_SYNC/O_DSYNC, held since its
 * conversion at a number of the library's own (at or above the floor,
 * close-on-exec, core/sys.h): nobody syncs it, so its error cursor stays
 * where the program's open put it. When a converted description is handed
 * back owing a writeback error (one it has not reported, which another
 * description may have: seen, so a new description would never hear of
 * it), the held one goes back instead and reports it. One per entry, at
 * most GC_FD_HELD at once (no conversion beyond); closed when the entry
 * goes (a close, a set, a range cleared).
 */
#define GC_FD_HELD GC_OWN_HELD
/* Holds @fd's present description for the entry gc_fd_set just made
 * (which let go of any held for an earlier one): before the swap. 0 or
 * -errno (-ENFILE: all held). */
int gc_fd_hold(int fd);
/* The held number for @fd's entry, or -1. Read-only (a vfork child). */
int gc_fd_held(int fd);
/* The same, or where @fd has no held number of its own (a copy made with
 * the table full), another number's that names the same description
 * (kcmp); -1 for none. */
int gc_fd_held_shared(int fd);
/* Closes @fd's held description, if any (the entry stays). */
void gc_fd_unhold(int fd);
/* Whether any description is held now. */
bool gc_fd_held_any(void);
/* close protocol: mark before the real close, finish after it. A concurrent
 * open that reuses the number between the two steps keeps its own entry. */
uint64_t gc_fd_close_begin(int fd);
void gc_fd_close_end(int fd, uint64_t token);
/* The first fd >= @from with an entry, or -1: close_range walks only these. */
int gc_fd_next(int from);
/* The whole entry word (generation and flags; 0: none): unchanged between
 * two reads iff no set, copy or close of the number came between. */
uint64_t gc_fd_token(int fd);
/* Clears [lo, hi]. */
void gc_fd_clear_range(unsigned lo, unsigned hi);
/* Forget everything (tests). */
void gc_fd_reset(void);

/* The fd swap lock: exec/spawn preparation and undo, and close, dup2, dup3
 * and close_range of a number that has an entry, hold it around checking a
 * number and replacing its description, so neither sees the other half
 * done. A spinlock with its owner's tid: a signal handler interrupting the
 * owner proceeds without it (returns false; pass that to unlock). Only
 * where gc_self() is true. */
bool gc_fd_swap_lock(void);
void gc_fd_swap_unlock(bool taken);

/* Spawns in progress and conversions in progress (seq_cst, Dekker style):
 * a converter announces itself, then backs off if a spawn is running; a
 * spawner announces itself, then waits for announced conversions to end.
 * Either the spawner sees the conversion in the table or the converter
 * sees the spawn and leaves the new descriptor a real sync one. */
void gc_fd_spawn_begin(void);
void gc_fd_spawn_end(void);
/* From now on (and in fork children) no conversion begins; returns once
 * those under way have ended. */
void gc_fd_convert_stop(void);
/* True: go ahead and convert, then call gc_fd_convert_end(). False: a
 * spawn is running, do not convert (nothing to end). */
bool gc_fd_convert_begin(void);
void gc_fd_convert_end(void);
/* atfork: the child has only the forking thread; nobody else's lock,
 * spawn or conversion is in progress there. */
void gc_fd_fork_prepare(void);
void gc_fd_fork_parent(void);
void gc_fd_fork_child(void);

/* Filesystems (st_dev) on which a converted description was ever made in
 * this process, noted before the description exists: a write whose
 * descriptor changed under it is covered by a syncfs of each. Returns 0,
 * or -ENOSPC when the list is full (the caller must then not convert). */
#define GC_FD_DEVS 16
int gc_fd_dev_note(uint64_t dev);
/* Copies up to @max noted devices into @devs; returns how many. */
int gc_fd_devs(uint64_t *devs, int max);
/* A conversion was begun in this process (a device noted): until then the
 * table is empty and exec, spawn and fork have nothing to do with it. */
bool gc_fd_ever(void);

#endif
