/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The next definitions of names after this object in the loader's search
 * order, as dlsym(RTLD_NEXT) gives them, found in one pass (core/next.c). */
#ifndef GC_NEXT_H
#define GC_NEXT_H
#include <stdint.h>

/* out[i] = dlsym(RTLD_NEXT, names[i]) for each of the @n names. */
void gc_next_many(const char *const *names, void **out, int n);
/* The same, with each name's GNU hash given (built in, shim/mkhash.sh). */
void gc_next_many_hashed(const char *const *names, const uint32_t *hashes, void **out, int n);
/* The GNU hash of @name, as the loader computes it. */
uint32_t gc_next_hash(const char *name);
#endif
