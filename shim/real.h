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
/* Fills the table (the first call of a wrapper, or a first fork). Memory
 * reads only where gc_next_prepare (the constructor) succeeded and libc
 * has every name: no lock, no allocation, safe in a signal handler. */
void gc_real_resolve(void);
#endif
