// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log's traps, one case each (tests/e2e/intent.sh): a file is
 * made durable once (a real fsync), a small write is acknowledged through
 * the log, then something that must retire or checkpoint it happens, and
 * the process dies without a checkpoint (SIGKILL). Recovery afterwards
 * must leave the newest acknowledged state. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "journal/intent_shm.h"

static void die(const char *what)
{
	fprintf(stderr, "intentprog: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(int fd, const char *s, size_t n, off_t off)
{
	if (pwrite(fd, s, n, off) != (ssize_t)n)
		die("pwrite");
	if (fsync(fd))
		die("fsync");
}

int main(int argc, char **argv)
{
	char f[4096], g[4096], big[4096];
	const char *c;
	int fd;

	if (argc != 3)
		return 2;
	c = argv[1];
	snprintf(f, sizeof(f), "%s/f", argv[2]);
	snprintf(g, sizeof(g), "%s/g", argv[2]);
	if (!strcmp(c, "hold")) {
		/* one record of g through the log, then stays attached */
		fd = open(g, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		put(fd, "h", 1, 0);
		put(fd, "H", 1, 0);
		printf("held\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(c, "corrupt")) {
		/* the segment at argv[2] as a holder of its lock leaves it when
		 * it dies while appending: the head moved past records it never
		 * wrote, and its busy mark */
		struct gi_shm *m;
		int sfd = open(argv[2], O_RDWR);

		if (sfd < 0)
			die("open the segment");
		m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
		if (m == MAP_FAILED)
			die("mmap the segment");
		m->s_head_seq += 3;
		m->s_head_off += 3 * 512;
		m->s_busy = 1;
		return 0;
	}
	if (!strcmp(c, "probe") || !strcmp(c, "probeg")) {
		/* one sync of a file in scope (f, or g), then a clean exit */
		fd = open(strcmp(c, "probe") ? g : f, O_RDWR | O_CREAT, 0644);
		if (fd < 0)
			die("open");
		put(fd, "p", 1, 0);
		put(fd, "q", 1, 0);
		return 0;
	}
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	put(fd, "0123456789abcdef", 16, 0); /* the first sync: real */
	put(fd, "AAAA", 4, 0);		    /* through the log */
	if (!strcmp(c, "retire")) {
		/* too large for the log (LIBGC_INTENT_MAX=1024): a real call */
		memset(big, 'B', sizeof(big));
		put(fd, big, sizeof(big), 0);
	} else if (!strcmp(c, "truncate")) {
		put(fd, "CCCC", 4, 100); /* logged, size 104 */
		if (ftruncate(fd, 8))
			die("ftruncate");
		if (fsync(fd))
			die("fsync");
	} else if (!strcmp(c, "rename")) {
		if (rename(f, g))
			die("rename");
		close(fd);
		fd = open(f, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die("open new");
		put(fd, "fresh", 5, 0);
	} else if (!strcmp(c, "unlink")) {
		if (unlink(f))
			die("unlink");
	} else if (!strcmp(c, "mmap")) {
		char *m = mmap(NULL, 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED)
			die("mmap");
		memcpy(m, "MMMM", 4);
		if (msync(m, 16, MS_SYNC))
			die("msync");
	} else if (!strcmp(c, "otrunc")) {
		int t = open(f, O_WRONLY | O_TRUNC);

		if (t < 0)
			die("open O_TRUNC");
		put(t, "xy", 2, 0);
	} else if (!strcmp(c, "fallocate")) {
		if (fallocate(fd, 0x02 | 0x01, 0, 4)) /* PUNCH_HOLE | KEEP_SIZE */
			die("fallocate");
		if (fsync(fd))
			die("fsync");
	} else if (!strcmp(c, "sync")) {
		/* newer bytes acknowledged by sync(), not by a sync of the file */
		if (pwrite(fd, "SSSS", 4, 0) != 4)
			die("pwrite");
		sync();
	} else if (!strcmp(c, "dsync")) {
		/* a real O_DSYNC descriptor (LIBGC_OSYNC=keep): the kernel
		 * acknowledges the write itself */
		int t = open(f, O_WRONLY | O_DSYNC);

		if (t < 0)
			die("open O_DSYNC");
		if (pwrite(t, "DDDD", 4, 0) != 4)
			die("pwrite O_DSYNC");
	} else if (strcmp(c, "kill")) {
		return 2;
	}
	/* no checkpoint, no exit handler: what a crash leaves in the log */
	fflush(stdout);
	raise(SIGKILL);
	return 3;
}
