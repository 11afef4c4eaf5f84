/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* Start-up: reads LIBGC_INTENT* (as kept by gc_env_save); opens nothing:
 * the log is attached at the first request in scope. */
void gc_intent_configure(void);

/* gc_sync's first step: the request served through the log (0 or -errno),
 * or GC_INTENT_PASS: the ordinary path serves it. */
#define GC_INTENT_PASS 1
int gc_intent_sync(int fd, bool datasync, enum gc_origin origin, uint64_t begun);

/* A request LIBGC_SCOPE keeps out of grouping: its own real call, then
 * (a file in scope with records) the RETIRE; GC_INTENT_PASS: not ours. */
int gc_intent_real(int fd, bool datasync, enum gc_origin origin);
/* After the program's sync() (@fd -1) or syncfs(@fd), which returned @r
 * (0 or -errno), from anywhere (a signal handler too): they acknowledged
 * every file's bytes, so the log's older records are retired (a
 * checkpoint) before they return. Returns the call's result: a syncfs is
 * also told of a writeback error a checkpoint's syncfs saw first on its
 * filesystem, once. */
int gc_intent_syncfs(int fd, int r);

/* The write family: before any write, a token (0: not a regular file);
 * a write to a regular file is counted in the user's shared write counts
 * before it is made (so that another process's sync of the file knows it
 * is not the only writer), and for a file in scope it counts as a write in
 * flight and holds the position for a write without an offset. After the
 * write returned @n at @where (gc_intent_where), the range is noted and the
 * count completed. */
#define GC_INTENT_POS (-1)	    /* at the description's position */
#define GC_INTENT_OFF_UNKNOWN (-2) /* somewhere (splice, sendfile, an unknown flag) */
#define GC_INTENT_APPEND (-3)	    /* at the end, whatever the position */
/* At @off even on an O_APPEND description (pwritev2 RWF_NOAPPEND). */
#define GC_INTENT_AT(off) (-16 - (int64_t)(off))
uint64_t gc_intent_pos(int fd);
/* @n, or -1 with errno: a write the kernel made durable whose file's older
 * records could not be retired (it cannot be acknowledged safely). */
ssize_t gc_intent_wrote(int fd, int64_t where, ssize_t n, uint64_t tok);
static inline ssize_t gc_intent_after(int fd, int64_t where, ssize_t n, uint64_t tok)
{
	if (__builtin_expect(tok != 0, 0))
		return gc_intent_wrote(fd, where, n, tok);
	return n;
}
static inline uint64_t gc_intent_before(int fd)
{
	return __builtin_expect(gc_intent_on, 0) ? gc_intent_pos(fd) : 0;
}
/* Or'ed into a token by a write the kernel makes durable itself
 * (pwritev2 RWF_DSYNC/RWF_SYNC left to it): acknowledged when it returns. */
#define GC_INTENT_TOK_KSYNC (1ULL << 62)
/* Where a pwritev2(@off, @flags) puts its bytes, for gc_intent_after. */
int64_t gc_intent_where(int64_t off, int flags);

/* Before a call that changes a file other than by writing its bytes
 * (truncate, fallocate, rename, unlink, an O_TRUNC open, a writable shared
 * mmap): it is counted as a write, a file with records is checkpointed
 * first, and its next sync is a real call. @mapped: it is never logged
 * again (stores not seen). The token goes to gc_intent_meta_done once the
 * call returned. */
uint64_t gc_intent_meta_fd(int fd, bool mapped);
/* @how: GC_INTENT_NOFOLLOW (the last component is not followed), and
 * GC_INTENT_GONE (its name goes away: unlink, the target of a rename,
 * whose inode number a new file may take). */
#define GC_INTENT_NOFOLLOW 1
#define GC_INTENT_GONE 2
uint64_t gc_intent_meta_path(int dirfd, const char *path, int how);
void gc_intent_meta_done(uint64_t tok);
/* fdopen(@fd, @mode) of a file in scope for writing: stdio's own writes
 * are not seen, so the file is never logged again. */
void gc_intent_fdopen(int fd, const char *mode);

/* A sync request made where the library takes no coordinator lock (a
 * signal handler, or nested inside the library): its real call, then,
 * when the file has records, a durable RETIRE before it returns.
 * GC_INTENT_PASS: not ours, the caller makes the real call. */
int gc_intent_nested_sync(int fd, bool datasync);

void gc_intent_atfork_prepare(void);
void gc_intent_atfork_parent(void);
void gc_intent_atfork_child(void);
/* Exit: a last checkpoint, then leave the log's members. */
void gc_intent_exit(void);
#endif
