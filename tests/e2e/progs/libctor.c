// SPDX-License-Identifier: LGPL-2.1-or-later
/* A shared library whose constructor does synchronous I/O (open O_DSYNC,
 * write, fsync) before main, possibly before the preloaded library's own
 * constructor has run. ctorprog links it and checks what happened. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ctor_err;		/* 0, or the first errno the constructor met */
static int ctor_fsyncs;		/* successful fsync calls made */

#define CTOR_FSYNCS 3

__attribute__((constructor)) static void ctor_io(void)
{
	const char *dir = getenv("CTOR_DIR");
	char path[4096];
	int fd, i, p[2];

	if (!dir) {
		ctor_err = EINVAL;
		return;
	}
	snprintf(path, sizeof(path), "%s/ctor.dat", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0) {
		ctor_err = errno;
		return;
	}
	if (write(fd, "written-in-ctor\n", 16) != 16 && !ctor_err)
		ctor_err = errno ? errno : EIO;
	for (i = 0; i < CTOR_FSYNCS; i++) {
		if (fsync(fd) == 0)
			ctor_fsyncs++;
		else if (!ctor_err)
			ctor_err = errno;
	}
	if (close(fd) != 0 && !ctor_err)
		ctor_err = errno;
	/* A pipe still gets the kernel's answer this early. */
	if (pipe(p) == 0) {
		if (fsync(p[1]) != -1 || errno != EINVAL)
			ctor_err = ctor_err ? ctor_err : EPROTO;
		close(p[0]);
		close(p[1]);
	}
}

int ctor_status(int *fsyncs)
{
	*fsyncs = ctor_fsyncs;
	return ctor_err;
}
