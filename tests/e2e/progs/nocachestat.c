// SPDX-License-Identifier: LGPL-2.1-or-later
/* nocachestat [--kill] CMD ARGS...: runs CMD where cachestat(2) fails with
 * ENOSYS, as on kernels before 6.5 (a seccomp filter, kept across exec), so
 * that the dirty limiter's paced waits can be tested on any kernel. With
 * --kill, a call of it kills the process instead (cskill.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cskill.h"

int main(int argc, char **argv)
{
	bool kill = argc > 1 && !strcmp(argv[1], "--kill");

	if (kill) {
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: nocachestat [--kill] CMD ARGS...\n");
		return 2;
	}
	if (cskill_install(kill)) {
		fprintf(stderr, "nocachestat: seccomp: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "nocachestat: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
