// SPDX-License-Identifier: LGPL-2.1-or-later
/* The real-function table's lookup (core/next.c) against dlsym(RTLD_NEXT)
 * in this process: every exported name and a few that take the loader's
 * other paths (IFUNCs, several versions, data, absent names). Run under
 * different preload stacks; prints each difference, exits 1 if any. */
#include <dlfcn.h>
#include <stdio.h>

#include "core/next.h"

static const char *const names[] = {
#define SYM(ret, name, params) #name,
#include "shim/syms.def"
#undef SYM
	"malloc", "memcpy", "strlen", "environ", "pthread_cond_wait",
	"sched_setaffinity", "__libc_start_main", "gnu_get_libc_version",
	"dlopen", "libgc_no_such_name",
};
#define N (int)(sizeof(names) / sizeof(names[0]))

int main(void)
{
	void *got[N];
	int bad = 0;

	gc_next_many(names, got, N);
	for (int i = 0; i < N; i++) {
		void *want = dlsym(RTLD_NEXT, names[i]);

		if (got[i] != want) {
			printf("%s: %p, dlsym %p\n", names[i], got[i], want);
			bad++;
		}
	}
	printf("%d names, %d differ\n", N, bad);
	return bad != 0;
}
