// SPDX-License-Identifier: LGPL-2.1-or-later
/* Resolves the real functions as dlsym(RTLD_NEXT) would, so preload
 * libraries stacked after this one keep working: all at once from the
 * loader's hash tables (core/next.c), dlsym for what that cannot read. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include "shim/real.h"

#include <dlfcn.h>
#include <string.h>

#include "core/next.h"
#include "core/sys.h"
#include "shim/symhash.h"

GC_START struct gc_real gc_real;

void gc_real_resolve(void)
{
	static const char *const names[] = {
#define SYM(ret, name, params) #name,
#include "shim/syms.def"
#undef SYM
	};
	static const uint32_t hashes[] = { GC_SYM_HASHES };
	enum { N = sizeof(names) / sizeof(names[0]) };
	const char *bn[N];
	uint32_t bh[N];
	void *p[N] = { 0 }, *bp[N];
	int i = 0, k = 0, at[N];

	_Static_assert(sizeof(hashes) / sizeof(hashes[0]) == N,
		       "a hash for every name of shim/syms.def");
	/* A name the walk does not find up to libc costs a dlsym, which
	 * allocates: libaio's io_submit is left to its first call. */
	for (i = 0; i < N; i++) {
		if (!strcmp(names[i], "io_submit"))
			continue;
		bn[k] = names[i];
		bh[k] = hashes[i];
		at[k++] = i;
	}
	gc_next_many_hashed(bn, bh, bp, k);
	for (i = 0; i < k; i++)
		p[at[i]] = bp[i];
	i = 0;
#define SYM(ret, name, params)                                                      \
	__atomic_store_n(&gc_real.name, (ret(*) params)p[i++], __ATOMIC_RELEASE);
#include "shim/syms.def"
#undef SYM
}

void *gc_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}
