// SPDX-License-Identifier: LGPL-2.1-or-later
/* Diagnostics: one formatted line per message, level-filtered by LIBGC_LOG,
 * written with a raw write(2) to fd 2 so logging never re-enters the shim,
 * while fd 2 is stderr (gc_stderr_ok). */
#include "core/log.h"
#include "core/sys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void gc_log_line(const char *line)
{
	char buf[600];
	int saved = errno;
	size_t n = strlen(line);

	if (n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	memcpy(buf, line, n);
	buf[n++] = '\n';
	gc_stderr_write(buf, n);
	errno = saved;
}

void gc_log_at(enum gc_log_level lvl, const char *fmt, ...)
{
	char line[512];
	int saved = errno;
	va_list ap;
	int n;

	if (lvl > gc_cfg.c_log)
		return;
	n = snprintf(line, sizeof(line), "libgc[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	gc_log_line(line);
	errno = saved;
}
