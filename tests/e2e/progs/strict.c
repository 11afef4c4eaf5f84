// SPDX-License-Identifier: LGPL-2.1-or-later
/* strict DIR warm|cold|locked: a thread in seccomp's strict mode may call read,
 * write and exit, nothing else; any other call kills the process. A
 * thread enters it and writes 1 MiB in 4 KiB calls to a plain file (past
 * the dirty limiter's first look) and, warm, 8 KiB to a file opened
 * O_DSYNC before, then leaves by the exit system call. Warm, the main
 * thread has synced once before (the library's first use); cold, nothing
 * of the library ran before. The main thread joins it and prints what it
 * wrote and whether the O_DSYNC file's description still has its flag
 * (/proc/self/fdinfo), as bare: "plain=1048576 dsync=8192 flag=1" warm,
 * "plain=1048576 dsync=- flag=-" cold. locked: warm, with a record lock
 * taken on the O_DSYNC file first. */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kflags.h"

static int plain = -1, dsync = -1;
static long wrote_plain, wrote_dsync;
static int prctl_errno;

static void *strict_thread(void *arg)
{
	static char buf[4096];
	long n;
	int i;

	(void)arg;
	memset(buf, 'a', sizeof(buf));
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0)) {
		wrote_plain = -1;
		prctl_errno = errno;
		return NULL;
	}
	for (i = 0; i < 256; i++)
		if ((n = write(plain, buf, sizeof(buf))) > 0)
			wrote_plain += n;
	for (i = 0; dsync >= 0 && i < 2; i++)
		if ((n = write(dsync, buf, sizeof(buf))) > 0)
			wrote_dsync += n;
	syscall(SYS_exit, 0); /* glibc's thread exit calls more */
	return NULL;
}

int main(int argc, char **argv)
{
	char path[4096];
	pthread_t t;
	int warm;

	if (argc != 3)
		return 2;
	warm = strcmp(argv[2], "cold") != 0;
	snprintf(path, sizeof(path), "%s/plain", argv[1]);
	plain = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (plain < 0)
		return perror("strict: open"), 1;
	if (warm) {
		snprintf(path, sizeof(path), "%s/dsync", argv[1]);
		dsync = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
		if (dsync < 0 || fsync(plain))
			return perror("strict: warm"), 1;
		if (!strcmp(argv[2], "locked")) {
			struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

			if (fcntl(dsync, F_SETLK, &fl))
				return perror("strict: lock"), 1;
		}
	}
	if (pthread_create(&t, NULL, strict_thread, NULL) || pthread_join(t, NULL))
		return fprintf(stderr, "strict: thread\n"), 1;
	if (wrote_plain < 0)
		return fprintf(stderr, "strict: prctl: %s\n", strerror(prctl_errno)), 1;
	if (warm)
		printf("plain=%ld dsync=%ld flag=%d\n", wrote_plain, wrote_dsync, kernel_dsync(dsync));
	else
		printf("plain=%ld dsync=- flag=-\n", wrote_plain);
	return 0;
}
