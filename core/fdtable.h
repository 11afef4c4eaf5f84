/* Descriptor table: which descriptors had O_SYNC/O_DSYNC asked by the program
 * and dropped by the library. One 64-bit word per fd, lock-free and
 * allocation-free on the lookup side so write() from a signal handler is safe. */
#ifndef GC_FDTABLE_H
#define GC_FDTABLE_H
#include <stdbool.h>
#include <stdint.h>

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
/* dup-style copy: @newfd now names @oldfd's description. */
void gc_fd_copy(int oldfd, int newfd);
/* close protocol: mark before the real close, finish after it. A concurrent
 * open that reuses the number between the two steps keeps its own entry. */
uint64_t gc_fd_close_begin(int fd);
void gc_fd_close_end(int fd, uint64_t token);
/* The first fd >= @from with an entry, or -1: close_range walks only these. */
int gc_fd_next(int from);
/* Clears [lo, hi]. */
void gc_fd_clear_range(unsigned lo, unsigned hi);
/* Forget everything (tests). */
void gc_fd_reset(void);

#endif
