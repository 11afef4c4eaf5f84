// SPDX-License-Identifier: LGPL-2.1-or-later
/* Resolves the real functions with dlsym(RTLD_NEXT), so preload libraries
 * stacked after this one keep working. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include "shim/real.h"

#include <dlfcn.h>

struct gc_real gc_real;

void gc_real_resolve(void)
{
#define SYM(ret, name, params)                                                      \
	__atomic_store_n(&gc_real.name, (ret(*) params)dlsym(RTLD_NEXT, #name),     \
			 __ATOMIC_RELEASE);
#include "shim/syms.def"
#undef SYM
}

void *gc_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}
