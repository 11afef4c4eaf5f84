/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The table of real functions (next in the lookup order after this library),
 * generated from syms.def. A NULL entry means the symbol does not exist in
 * this libc; wrappers then fall back to the raw system call. */
#ifndef GC_REAL_H
#define GC_REAL_H
#include <aio.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct gc_real {
#define SYM(ret, name, params) ret(*name) params;
#include "shim/syms.def"
#undef SYM
};

extern struct gc_real gc_real;
/* Which entries of gc_real were looked up, a bit each in the order of
 * syms.def (an entry looked up may be NULL: no object has the name). */
extern uint64_t gc_real_got[];

static inline __attribute__((always_inline)) bool gc_real_have(unsigned int i)
{
	return __atomic_load_n(&gc_real_got[i / 64], __ATOMIC_ACQUIRE) >> (i % 64) & 1;
}

/* Looks entry @i up, as dlsym(RTLD_NEXT) would, and keeps it. Memory
 * reads only where gc_next_prepare (the constructor) succeeded and libc
 * has the name: no lock, no allocation, safe in a signal handler. Threads
 * that race here store the same value. */
void *gc_real_one(unsigned int i);
/* Every entry not looked up yet (a first fork: its children inherit the
 * table, where each would look its names up in pages of libc's it maps
 * afresh; an audit module or LIBGC_REPORT: in the constructor). */
void gc_real_resolve(void);
#endif
