// SPDX-License-Identifier: LGPL-2.1-or-later
/* The SIGBUS guard of shared mappings (see busguard.h). Lock-free: a fixed
 * table of entries filled with compare-and-swap, read by the handler. */
#include "core/busguard.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "core/sys.h"

#define GC_GUARDS 64
#define GONE ((char *)1)
#define BUSY ((char *)2)

static struct {
	char *g_addr;	/* NULL: never used; GONE: free again */
	size_t g_len;
	void (*g_gone)(void *);
} gc_guards[GC_GUARDS];
static struct sigaction gc_bus_old;
static int gc_bus_installed;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
	char *a = si ? si->si_addr : NULL;
	int i, e = errno;

	for (i = 0; i < GC_GUARDS; i++) {
		char *m = __atomic_load_n(&gc_guards[i].g_addr, __ATOMIC_ACQUIRE);
		size_t len = gc_guards[i].g_len;

		if (!m)
			break;
		if (m != GONE && m != BUSY && a >= m && a < m + len) {
			gc_sys_mmap(m, len, PROT_READ | PROT_WRITE,
				    MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (gc_guards[i].g_gone)
				gc_guards[i].g_gone(m);
			errno = e;
			return;
		}
	}
	if ((gc_bus_old.sa_flags & SA_SIGINFO) && gc_bus_old.sa_sigaction) {
		gc_bus_old.sa_sigaction(sig, si, uc);
	} else if (gc_bus_old.sa_handler == SIG_DFL || gc_bus_old.sa_handler == SIG_IGN) {
		/* the fault repeats on return and takes its default course */
		signal(SIGBUS, SIG_DFL);
	} else {
		gc_bus_old.sa_handler(sig);
	}
	errno = e;
}

void gc_bus_guard(void *addr, size_t len, void (*gone)(void *addr))
{
	int i;

	if (!__atomic_exchange_n(&gc_bus_installed, 1, __ATOMIC_ACQ_REL)) {
		struct sigaction sa;

		/* the zeroes are the empty mask: no sigemptyset to bind */
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = bus_handler;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigaction(SIGBUS, &sa, &gc_bus_old);
	}
	for (i = 0; i < GC_GUARDS; i++) {
		char *p = __atomic_load_n(&gc_guards[i].g_addr, __ATOMIC_ACQUIRE);

		if (p == addr)
			return;
		if (p && p != GONE)
			continue;
		/* claimed first, filled, then made visible to the handler */
		if (!__atomic_compare_exchange_n(&gc_guards[i].g_addr, &p, BUSY, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		gc_guards[i].g_len = len;
		gc_guards[i].g_gone = gone;
		__atomic_store_n(&gc_guards[i].g_addr, (char *)addr, __ATOMIC_RELEASE);
		return;
	}
	/* table full: that mapping is not guarded */
}

void gc_bus_unguard(void *addr)
{
	int i;

	for (i = 0; i < GC_GUARDS; i++) {
		char *p = addr;

		if (__atomic_compare_exchange_n(&gc_guards[i].g_addr, &p, GONE, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return;
	}
}

bool gc_bus_guarded(const void *addr)
{
	int i;

	for (i = 0; i < GC_GUARDS; i++) {
		const char *p = __atomic_load_n(&gc_guards[i].g_addr, __ATOMIC_ACQUIRE);

		if (!p)
			return false;
		if (p == addr)
			return true;
	}
	return false;
}
