// SPDX-License-Identifier: LGPL-2.1-or-later
/* Resolves the real functions as dlsym(RTLD_NEXT) would, so preload
 * libraries stacked after this one keep working: all at once from the
 * loader's hash tables (core/next.c), dlsym for what that cannot read. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include "shim/real.h"

#include <dlfcn.h>

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
	void *p[sizeof(names) / sizeof(names[0])];
	int i = 0;

	_Static_assert(sizeof(hashes) / sizeof(hashes[0]) == sizeof(names) / sizeof(names[0]),
		       "a hash for every name of shim/syms.def");
	gc_next_many_hashed(names, hashes, p, (int)(sizeof(names) / sizeof(names[0])));
#define SYM(ret, name, params)                                                      \
	__atomic_store_n(&gc_real.name, (ret(*) params)p[i++], __ATOMIC_RELEASE);
#include "shim/syms.def"
#undef SYM
}

void *gc_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}
