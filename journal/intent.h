/* The intent log, library side (LIBGC_INTENT, DESIGN.md "Intent log"):
 * small durable writes to files in scope are acknowledged once their bytes
 * are in the log and one real fdatasync of the log covered them; a
 * checkpoint makes the files durable later. With LIBGC_INTENT unset,
 * gc_intent_on is 0 and every hook is one predictable branch. */
#ifndef GC_INTENT_H
#define GC_INTENT_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal/journal.h"

extern int gc_intent_on; /* [set at start-up] LIBGC_INTENT is set */

/* Start-up: reads LIBGC_INTENT* (one getenv when unset); opens nothing:
 * the log is attached at the first request in scope. */
void gc_intent_configure(void);

/* gc_sync's first step: the request served through the log (0 or -errno),
 * or GC_INTENT_PASS: the ordinary path serves it. */
#define GC_INTENT_PASS 1
int gc_intent_sync(int fd, bool datasync, enum gc_origin origin, uint64_t begun);

/* A request LIBGC_SCOPE keeps out of grouping: its own real call, then
 * (a file in scope with records) the RETIRE; GC_INTENT_PASS: not ours. */
int gc_intent_real(int fd, bool datasync, enum gc_origin origin);
/* After the program's sync() or syncfs(): they acknowledged every file's
 * bytes, so the log's older records are retired (a checkpoint) first. */
void gc_intent_synced_all(void);

/* The write family: before any write, a token (0: not a file of ours;
 * else it counts as a write in flight, and holds the position for a write
 * without an offset); after it returned @n at @off (-1: at the position;
 * GC_INTENT_OFF_UNKNOWN: somewhere, e.g. splice), the range is noted and
 * the token given back. */
#define GC_INTENT_OFF_UNKNOWN (-2)
uint64_t gc_intent_pos(int fd);
void gc_intent_wrote(int fd, int64_t off, ssize_t n, uint64_t tok);
static inline ssize_t gc_intent_after(int fd, int64_t off, ssize_t n, uint64_t tok)
{
	if (__builtin_expect(gc_intent_on, 0) && (n > 0 || tok))
		gc_intent_wrote(fd, off, n, tok);
	return n;
}
static inline uint64_t gc_intent_before(int fd)
{
	return __builtin_expect(gc_intent_on, 0) ? gc_intent_pos(fd) : 0;
}

/* Before a call that changes a file other than by writing its bytes
 * (truncate, fallocate, rename, unlink, an O_TRUNC open, a writable shared
 * mmap): a file with records is checkpointed first, and its next sync is
 * a real call. @mapped: it is never logged again (stores not seen). */
void gc_intent_meta_fd(int fd, bool mapped);
/* @how: GC_INTENT_NOFOLLOW (the last component is not followed), and
 * GC_INTENT_GONE (its name goes away: unlink, the target of a rename,
 * whose inode number a new file may take). */
#define GC_INTENT_NOFOLLOW 1
#define GC_INTENT_GONE 2
void gc_intent_meta_path(int dirfd, const char *path, int how);

void gc_intent_atfork_prepare(void);
void gc_intent_atfork_parent(void);
void gc_intent_atfork_child(void);
/* Exit: a last checkpoint, then leave the log's members. */
void gc_intent_exit(void);
#endif
