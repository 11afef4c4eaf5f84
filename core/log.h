/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Diagnostics on stderr, written with the raw syscall so they never re-enter
 * the interposed write(). */
#ifndef GC_LOG_H
#define GC_LOG_H
#include "core/config.h"

extern struct gc_config gc_cfg;

/* @line and a newline on stderr (gc_stderr_write). */
void gc_log_line(const char *line);
void gc_log_at(enum gc_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The level is tested before the call: a message that is not logged
 * costs neither the call nor its frame (512 bytes and the variadic
 * register area, on a signal handler's stack too). */
#define gc_log(lvl, ...)                                \
	do {                                            \
		if ((lvl) <= gc_cfg.c_log)              \
			gc_log_at((lvl), __VA_ARGS__);  \
	} while (0)
#endif
