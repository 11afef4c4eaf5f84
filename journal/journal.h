/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gc_ API: group commit of sync requests. A request joins the running
 * transaction of its domain (one per filesystem); at close, one real call per
 * distinct inode is issued on a participant's own descriptor and its result
 * is handed to every request on that inode. */
#ifndef GC_JOURNAL_H
#define GC_JOURNAL_H
#include <stdbool.h>
#include <stdint.h>

enum gc_origin { GC_FROM_FSYNC, GC_FROM_FDATASYNC, GC_FROM_OSYNC };

/* One sync request of the program, from its call to its result: makes the
 * data (and, unless @datasync, the metadata) of @fd's inode durable with
 * the guarantee of a real fsync/fdatasync started after this call began,
 * grouped with others or by a direct real call; timed and counted, its
 * call site recorded when call sites are asked for. Returns 0 or -errno.
 * Never reports success without a covering real call, nor when a real
 * sync of the filesystem failed (EIO, EROFS) since the call began. @ra is
 * the return address into the program (its call site, when nothing more
 * is known). The first request of a process makes its stats segment. */
int gc_request(int fd, bool datasync, enum gc_origin origin, uintptr_t ra);

/* The same request served by its own real call at once, no coordination:
 * for nested calls and signal handlers. Counted like any request. */
int gc_sync_direct(int fd, bool datasync, enum gc_origin origin);

/* A request that LIBGC_SCOPE keeps out of grouping: its own real call at
 * once, counted as direct and as scoped out. */
int gc_sync_scoped_out(int fd, bool datasync, enum gc_origin origin);

/* fork handling (registered by the library constructor). */
void gc_journal_atfork_prepare(void);
void gc_journal_atfork_parent(void);
void gc_journal_atfork_child(void);
/* Leaves shared domains (exit handler). */
void gc_journal_exit(void);

#endif
