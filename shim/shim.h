/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every shim file shares: readiness, the per-thread depth guard, the
 * export macro and the coverage counters generated from syms.def. */
#ifndef GC_SHIM_H
#define GC_SHIM_H
#include <stdbool.h>
#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/config.h"
#include "core/log.h"
#include "core/sys.h"
#include "shim/real.h"

#define GC_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

enum gc_sym_id {
#define SYM(ret, name, params) GC_SYM_##name,
#include "shim/syms.def"
#undef SYM
	GC_SYM_COUNT
};

extern int gc_ready;		/* symbols resolved (a first wrapper call) */
extern int gc_configured;	/* LIBGC_* parsed and checked (first use) */
extern int gc_disabled;		/* LIBGC_DISABLE=1: plain pass-through */
extern int gc_counting;		/* LIBGC_REPORT set: count calls per symbol */
extern uint64_t gc_sym_calls[GC_SYM_COUNT];

/* Resolves once; false while that is still in progress on this thread (a
 * recursive early call), which must then use the raw syscall. */
bool gc_init_slow(void);
static inline bool gc_init(void)
{
	return likely(__atomic_load_n(&gc_ready, __ATOMIC_ACQUIRE)) || gc_init_slow();
}
/* Parses and checks the LIBGC_* variables once, at the first call that
 * needs one (bad values: one line each on stderr). false while that is in
 * progress on this thread (a signal handler): pass the call through. */
bool gc_conf_slow(void);
static inline bool gc_conf(void)
{
	return likely(__atomic_load_n(&gc_configured, __ATOMIC_ACQUIRE)) || gc_conf_slow();
}
/* The exit report (report.c). gc_report_arm keeps a copy of stderr for it
 * (programs such as cp and dd close fd 2 before exit handlers run): at
 * the first sync request, or at first use with LIBGC_REPORT=all. */
extern int gc_report_armed;
void gc_report_arm(void);
static inline void gc_report_first(void)
{
	if (unlikely(!__atomic_load_n(&gc_report_armed, __ATOMIC_RELAXED)))
		gc_report_arm();
}
/* At exit: the report, and the stats segment's removal. Nothing, and no
 * system call, when there is neither. */
void gc_report_exit(void);

#define GC_COUNT(name)                                                              \
	do {                                                                        \
		if (unlikely(gc_counting))                                          \
			__atomic_fetch_add(&gc_sym_calls[GC_SYM_##name], 1,         \
					   __ATOMIC_RELAXED);                       \
	} while (0)

/* Internal results are 0 / -errno; only exported wrappers touch errno. */
static inline int gc_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

/* The real function @name (NULL where no object after this one has it),
 * looked up at its first use in the process (shim/real.c), even before
 * gc_init() finished. */
#define REAL(name)                                                                  \
	(likely(gc_real_have(GC_SYM_##name))                                        \
		 ? gc_real.name                                                     \
		 : (__typeof__(gc_real.name))gc_real_one(GC_SYM_##name))

/* Converted sync flags of @fd, after checking the entry still belongs to the
 * regular file it was made for (a stale entry is dropped). */
int gc_conv_checked(int fd);
/* Writes that may go round every wrapper from now on (@what they are, for
 * the message): every converted descriptor back to its real flag, and no
 * conversion from now on (shim/open.c). 0, or the first -errno of one that
 * stays converted (-ENOLCK: record locks the swap would drop). */
int gc_osync_stop(const char *what);
/* Writes to @fd that go round the wrappers (AIO, dprintf): 0 or -errno
 * (shim/open.c). */
int gc_unseen_writes(int fd);
/* A call that the kernel makes synchronous on an O_SYNC or O_DSYNC
 * description (fallocate on ext4 and XFS) succeeded on @fd: if @fd is a
 * converted one, a full sync request does what the flag did. 0 or -errno
 * (shim/io.c). */
int gc_sync_converted(int fd, uintptr_t ra);
/* A clone of blocks into @dst succeeded (a reflink or dedupe, or a
 * copy_file_range that may have made one), the entries of its source's
 * and its destination's descriptors read before the call being
 * @src_token and @dst_token. xfs and btrfs commit a clone when either
 * description is O_SYNC or O_DSYNC (gc_fs_remap_syncs): where either is
 * converted, a full sync request of @dst does what the flag did. 0 or
 * -errno (shim/io.c). */
int gc_sync_clone(uint64_t src_token, uint64_t dst_token, int dst, uintptr_t ra);
/* Gives @fd's file a real description with @sync_flags in place of the
 * converted one: same file, access mode, offset and close-on-exec. Where
 * the converted one owes a writeback error, that is the held description
 * the program opened (core/fdtable.h), and *@held_back (may be NULL) is
 * set: the converted one's error is taken, so it must not come back. With
 * @keep, the new description stays open there too (close-on-exec).
 * Descriptors and raw calls only. Returns 0 or -errno. */
int gc_materialize(int fd, int sync_flags, int *keep, bool *held_back);
/* 1 when replacing or closing @fd's description could drop a record lock
 * of this process: a POSIX lock on its inode (through any descriptor), or,
 * with @own, any lock on @fd's own description. 0: none. -errno: unknown. */
int gc_fd_locks(int fd, bool own);
/* The one stderr line for a call failed with ENOLCK because of them. */
void gc_fd_locks_warn(int fd);
/* Completes a write-like call that returned @n on a descriptor whose entry
 * was @token (gc_fd_token) before the call. */
ssize_t gc_sync_after_write(int fd, ssize_t n, uint64_t token, uintptr_t ra);
#endif
