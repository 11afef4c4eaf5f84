// SPDX-License-Identifier: LGPL-2.1-or-later
/* Counts malloc, calloc and realloc calls of this thread, for the test that
 * the library's call-site capture allocates nothing: siteprog finds
 * mcount_thread() with dlsym when this library is preloaded. */
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static __thread unsigned long mcount;

__attribute__((visibility("default"))) unsigned long mcount_thread(void)
{
	return mcount;
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	mcount++;
	return __libc_malloc(n);
}

__attribute__((visibility("default"))) void *calloc(size_t a, size_t b)
{
	mcount++;
	return __libc_calloc(a, b);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
	mcount++;
	return __libc_realloc(p, n);
}
