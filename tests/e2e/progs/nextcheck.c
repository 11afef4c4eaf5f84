// SPDX-License-Identifier: LGPL-2.1-or-later
/* The real-function table's lookup (core/next.c) against dlsym(RTLD_NEXT)
 * in this process, the objects read once (gc_next_prepare) and each name
 * looked up when asked (gc_next_find): every exported name and a few that
 * take the loader's other paths (IFUNCs, several versions, data, absent
 * names). Then the library's own call: the exported names with the hashes
 * made at build time (shim/mkhash.sh), which must be the loader's (a wrong
 * one would only send its name to dlsym, unseen). Run under different preload
 * stacks; prints each difference, exits 1 if any. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

#include "core/next.h"
#include "shim/symhash.h"

static const char *const syms[] = {
#define SYM(ret, name, params) #name,
#include "shim/syms.def"
#undef SYM
};
static const uint32_t hashes[] = { GC_SYM_HASHES };
#define NS (int)(sizeof(syms) / sizeof(syms[0]))

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
	int bad = 0;

	/* the objects read once, as the library's constructor does */
	if (!gc_next_prepare()) {
		printf("gc_next_prepare could not read the objects\n");
		bad++;
	}
	/* each name when asked, in any order, twice */
	for (int k = 0; k < 2; k++)
		for (int i = N - 1; i >= 0; i--) {
			void *want = dlsym(RTLD_NEXT, names[i]);
			void *got = gc_next_find(names[i], gc_next_hash(names[i]));

			if (got != want) {
				printf("%s: %p, dlsym %p\n", names[i], got, want);
				bad++;
			}
		}
	_Static_assert(sizeof(hashes) / sizeof(hashes[0]) == NS, "a hash a name");
	for (int i = 0; i < NS; i++) {
		void *got = gc_next_find(syms[i], hashes[i]);

		if (hashes[i] != gc_next_hash(syms[i])) {
			printf("%s: built-in hash %08x, the loader's %08x\n", syms[i], hashes[i],
			       gc_next_hash(syms[i]));
			bad++;
		}
		if (got != dlsym(RTLD_NEXT, syms[i])) {
			printf("%s (hashed): %p, dlsym %p\n", syms[i], got,
			       dlsym(RTLD_NEXT, syms[i]));
			bad++;
		}
	}
	printf("%d names, %d with built-in hashes, %d differ\n", N, NS, bad);
	return bad != 0;
}
