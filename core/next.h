/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The next definitions of names after this object in the loader's search
 * order, as dlsym(RTLD_NEXT) gives them, found in one pass (core/next.c). */
#ifndef GC_NEXT_H
#define GC_NEXT_H

/* out[i] = dlsym(RTLD_NEXT, names[i]) for each of the @n names. */
void gc_next_many(const char *const *names, void **out, int n);
#endif
