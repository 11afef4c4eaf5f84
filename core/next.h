/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The next definitions of names after this object in the loader's search
 * order, as dlsym(RTLD_NEXT) gives them, from the objects' hash tables
 * (core/next.c). */
#ifndef GC_NEXT_H
#define GC_NEXT_H
#include <stdbool.h>
#include <stdint.h>

/* Reads the objects after this one once, for gc_next_find; false where
 * their tables cannot be read (an audit module, an object without a GNU
 * hash table): gc_next_find then asks dlsym. Called from the constructor,
 * before any thread of the program. */
bool gc_next_prepare(void);
/* What dlsym(RTLD_NEXT, @name) gives, @hash being its GNU hash. After
 * gc_next_prepare, a name found in the tables costs no lock, no
 * allocation and no system call (safe in a signal handler); one they do not
 * answer for (an IFUNC, a versioned choice, a name libc lacks) and any
 * name before it is dlsym's. */
void *gc_next_find(const char *name, uint32_t hash);
/* The GNU hash of @name, as the loader computes it. */
uint32_t gc_next_hash(const char *name);
#endif
