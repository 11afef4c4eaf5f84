/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Diagnostics on stderr, written with the raw syscall so they never re-enter
 * the interposed write(). */
#ifndef GC_LOG_H
#define GC_LOG_H
#include "core/config.h"

extern struct gc_config gc_cfg;

void gc_log_line(const char *line);
void gc_log(enum gc_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#endif
