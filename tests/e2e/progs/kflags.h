/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flags the kernel holds for a descriptor's open file description,
 * from /proc/self/fdinfo: the kernel's word, where fcntl(F_GETFL) is the
 * library's (it shows a converted O_SYNC/O_DSYNC as asked). */
#ifndef GC_E2E_KFLAGS_H
#define GC_E2E_KFLAGS_H
#include <fcntl.h>
#include <stdio.h>

/* -1 when fdinfo cannot be read */
static inline int kernel_flags(int fd)
{
	char path[64], line[256];
	unsigned int fl = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "flags: %o", &fl) == 1)
			break;
	fclose(f);
	return (int)fl;
}

/* The kernel's word on @fd's description: 1 if O_DSYNC, 0 if not, -1. */
static inline int kernel_dsync(int fd)
{
	int fl = kernel_flags(fd);

	return fl < 0 ? -1 : (fl & O_DSYNC) ? 1 : 0;
}
#endif
