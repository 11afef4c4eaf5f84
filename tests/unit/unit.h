/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared bits of the unit suites. They link the core objects without the
 * shim, so each suite supplies the library-wide configuration that
 * core/log.o refers to, plus a fake clock origin and time units. */
#ifndef GC_TESTS_UNIT_H
#define GC_TESTS_UNIT_H
#include "core/clock.h"
#include "core/config.h"

/* Place once per suite, at file scope. */
#define GC_UNIT_GLOBALS struct gc_config gc_cfg

#define US GC_NSEC_PER_USEC
#define MS GC_NSEC_PER_MSEC
#define SEC GC_NSEC_PER_SEC

/* Fake clock origin: any time but 0, which the epoch controller reads as
 * "never started" (a real monotonic clock is never 0 either). */
#define T0 (100 * SEC)

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
