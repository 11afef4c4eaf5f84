/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared mappings a peer may cut short under us. Any process of the same
 * user can truncate a file in /dev/shm; the next access to a page past its
 * end raises SIGBUS. A guarded mapping hit that way is replaced by private
 * zeroed memory and the access completes; its owner is told through @gone
 * (called from the signal handler: async-signal-safe code only). */
#ifndef GC_BUSGUARD_H
#define GC_BUSGUARD_H
#include <stdbool.h>
#include <stddef.h>

/* Guards [@addr, @addr + @len), installing the SIGBUS handler on first use
 * (the handler that was there before gets every other SIGBUS). */
void gc_bus_guard(void *addr, size_t len, void (*gone)(void *addr));
/* Before the mapping at @addr is unmapped: another may come there. */
void gc_bus_unguard(void *addr);
/* Is @addr a guarded mapping's start? */
bool gc_bus_guarded(const void *addr);
#endif
