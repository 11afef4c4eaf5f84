// SPDX-License-Identifier: LGPL-2.1-or-later
/* Resolves the real functions as dlsym(RTLD_NEXT) would, so preload
 * libraries stacked after this one keep working: from the loader's hash
 * tables (core/next.c), read at start-up, dlsym for what those cannot
 * answer. Each name is looked up at its first use, not in the
 * constructor: a process that never calls a wrapper (/bin/true, a shell's
 * builtins) never touches the pages of libc's symbol tables, and one that
 * calls a dozen looks up a dozen names, not all 89 (in a fresh process,
 * each lookup's walk of the objects before libc misses the caches: all of
 * them took 8-28 us). */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include "shim/real.h"

#include "core/next.h"
#include "core/sys.h"
#include "shim/shim.h"
#include "shim/symhash.h"

enum { N = GC_SYM_COUNT };

GC_START struct gc_real gc_real;
GC_START uint64_t gc_real_got[(N + 63) / 64];

static const char *const names[] = {
#define SYM(ret, name, params) #name,
#include "shim/syms.def"
#undef SYM
};
static const uint32_t hashes[] = { GC_SYM_HASHES };

_Static_assert(sizeof(names) / sizeof(names[0]) == N &&
		       sizeof(hashes) / sizeof(hashes[0]) == N &&
		       sizeof(struct gc_real) == N * sizeof(void *),
	       "a name, a hash and an entry for every line of shim/syms.def");

void *gc_real_one(unsigned int i)
{
	void *p = gc_next_find(names[i], hashes[i]);

	__atomic_store_n(&((void **)&gc_real)[i], p, __ATOMIC_RELAXED);
	__atomic_fetch_or(&gc_real_got[i / 64], 1ULL << (i % 64), __ATOMIC_RELEASE);
	return p;
}

void gc_real_resolve(void)
{
	/* A name the tables do not hold up to libc costs a dlsym, which
	 * allocates: libaio's io_submit is left to its first call. */
	for (unsigned int i = 0; i < N; i++)
		if (!gc_real_have(i) && i != GC_SYM_io_submit)
			gc_real_one(i);
}
