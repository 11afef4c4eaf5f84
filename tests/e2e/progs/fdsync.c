// SPDX-License-Identifier: LGPL-2.1-or-later
/* fdsync: the sync flag follows open file descriptions, not numbers:
 * F_GETFL and synchronous writes through dup/dup2/dup3/F_DUPFD/fork, number
 * reuse after close and close_range, and across exec. */

/*   fdsync DIR       prints how many synchronous writes it made and which
 *                    inodes must never see a sync ("nosync=DEV:INO")
 *   fdsync -x DIR    opens O_DSYNC, then execs "fdsync -c FD" keeping the fd
 *   fdsync -c FD     after exec: the inherited fd must still be O_DSYNC */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures, sync_writes;

static void fail(const char *what, int fd)
{
	fprintf(stderr, "fdsync: %s (fd %d): %s\n", what, fd, strerror(errno));
	failures++;
}

/* The flag as the program sees it: 0, O_DSYNC or O_SYNC. */
static int sync_of(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return (fl & O_SYNC) == O_SYNC ? O_SYNC : fl & O_DSYNC;
}

static void expect_sync(int fd, int want, const char *what)
{
	int got = sync_of(fd);

	if (got != want) {
		fprintf(stderr, "fdsync: %s: F_GETFL shows %s, want %s\n", what,
			got == O_SYNC ? "O_SYNC" : got == O_DSYNC ? "O_DSYNC" :
			got == 0 ? "no sync flag" : "an error",
			want == O_SYNC ? "O_SYNC" : want == O_DSYNC ? "O_DSYNC" :
			"no sync flag");
		failures++;
	}
}

/* One write; counted as synchronous when @sync. */
static void put(int fd, bool sync, const char *what)
{
	if (write(fd, "0123456789abcdef", 16) != 16)
		fail(what, fd);
	else if (sync)
		sync_writes++;
}

static void print_ino(const char *key, int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		fail("fstat", fd);
		return;
	}
	printf("%s=%llu:%llu\n", key, (unsigned long long)st.st_dev,
	       (unsigned long long)st.st_ino);
}

static int xopen(const char *dir, const char *name, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags | O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		fail(name, -1);
	return fd;
}

/* Opens plain files until one lands on number @want (anything else holding
 * a lower number, such as a descriptor of some layer under us, is skipped);
 * the extra ones are closed again. */
static int open_on(const char *dir, const char *name, int want)
{
	int extra[64], n = 0, fd;

	for (;;) {
		fd = xopen(dir, name, 0);
		if (fd < 0 || fd == want || fd > want || n == 64)
			break;
		extra[n++] = fd;
	}
	while (n > 0)
		close(extra[--n]);
	return fd;
}

static int scenario(const char *dir)
{
	int a, s, d1, d2, d3, d4, d5, n, x, y, q, z, i, old;
	pid_t kid;

	a = xopen(dir, "a", O_DSYNC);
	s = xopen(dir, "s", O_SYNC);
	expect_sync(a, O_DSYNC, "open O_DSYNC");
	expect_sync(s, O_SYNC, "open O_SYNC");
	if ((fcntl64(a, F_GETFL) & O_DSYNC) == 0) {
		fprintf(stderr, "fdsync: fcntl64(F_GETFL) lost O_DSYNC\n");
		failures++;
	}
	put(a, true, "write O_DSYNC");
	put(s, true, "write O_SYNC");

	/* every way of copying a descriptor keeps the flag */
	d1 = dup(a);
	d2 = dup2(a, 40);
	d3 = dup3(a, 41, O_CLOEXEC);
	d4 = fcntl(a, F_DUPFD, 50);
	d5 = fcntl(a, F_DUPFD_CLOEXEC, 60);
	if (d1 < 0 || d2 != 40 || d3 != 41 || d4 < 50 || d5 < 60)
		fail("dup family", a);
	expect_sync(d1, O_DSYNC, "dup");
	expect_sync(d2, O_DSYNC, "dup2");
	expect_sync(d3, O_DSYNC, "dup3");
	expect_sync(d4, O_DSYNC, "F_DUPFD");
	expect_sync(d5, O_DSYNC, "F_DUPFD_CLOEXEC");
	put(d1, true, "write dup");
	put(d2, true, "write dup2");
	put(d3, true, "write dup3");
	put(d4, true, "write F_DUPFD");
	put(d5, true, "write F_DUPFD_CLOEXEC");

	/* the description outlives the number it was opened on */
	old = a;
	close(a);
	expect_sync(d1, O_DSYNC, "dup after closing the original");
	put(d1, true, "write dup after close");

	/* dup2 over a sync copy of a with the O_SYNC file */
	if (dup2(s, 40) != 40)
		fail("dup2 over", 40);
	expect_sync(40, O_SYNC, "dup2 onto a sync number");
	put(40, true, "write dup2 O_SYNC");

	/* a fork child shares the descriptions */
	kid = fork();
	if (kid == 0) {
		int bad = sync_of(d1) != O_DSYNC;

		if (write(d1, "child-wrote-this", 16) != 16)
			bad = 1;
		_exit(bad);
	} else {
		int st;

		if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			fprintf(stderr, "fdsync: fork child saw no O_DSYNC or failed\n");
			failures++;
		}
		sync_writes++;
	}

	/* the number of a closed sync descriptor, reused for a plain file */
	close(d1);
	close(d3);
	close(d4);
	close(d5);
	n = open_on(dir, "plain", old);
	if (n != old) {
		fprintf(stderr, "fdsync: expected fd %d to be reused, got %d\n", old, n);
		failures++;
	}
	expect_sync(n, 0, "plain file on a reused number");
	print_ino("nosync", n);
	for (i = 0; i < 8; i++)
		put(n, false, "write plain");

	/* dup2 a plain file over a sync number */
	x = xopen(dir, "x", O_DSYNC);
	put(x, true, "write x");
	if (dup2(n, x) != x)
		fail("dup2 plain over sync", x);
	expect_sync(x, 0, "plain dup2'ed over a sync number");
	for (i = 0; i < 8; i++)
		put(x, false, "write plain via dup2");

	/* close_range frees numbers like close does */
	y = xopen(dir, "y", O_DSYNC);
	put(y, true, "write y");
	if (close_range((unsigned)y, (unsigned)y, 0) != 0)
		fail("close_range", y);
	q = open_on(dir, "q", y);
	if (q != y) {
		fprintf(stderr, "fdsync: expected fd %d reused after close_range, got %d\n", y, q);
		failures++;
	}
	expect_sync(q, 0, "plain file after close_range");
	print_ino("nosync", q);
	for (i = 0; i < 8; i++)
		put(q, false, "write plain after close_range");

	/* ...but CLOSE_RANGE_CLOEXEC closes nothing */
	z = xopen(dir, "z", O_DSYNC);
	if (close_range((unsigned)z, (unsigned)z, CLOSE_RANGE_CLOEXEC) != 0)
		fail("close_range CLOEXEC", z);
	expect_sync(z, O_DSYNC, "close_range CLOEXEC keeps the fd");
	put(z, true, "write after close_range CLOEXEC");

	/* an unnamed file: O_TMPFILE carries a mode and O_DIRECTORY bits */
	{
		int tmp = open(dir, O_TMPFILE | O_RDWR | O_DSYNC, 0600);

		if (tmp < 0) {
			fail("open O_TMPFILE|O_DSYNC", -1);
		} else {
			struct stat st;

			if (fstat(tmp, &st) != 0 || (st.st_mode & 0777) != 0600) {
				fprintf(stderr, "fdsync: O_TMPFILE got mode %o, want 600\n",
					st.st_mode & 0777);
				failures++;
			}
			expect_sync(tmp, O_DSYNC, "O_TMPFILE|O_DSYNC");
			put(tmp, true, "write O_TMPFILE");
			close(tmp);
		}
	}

	/* F_SETFL cannot drop the flag (the kernel ignores O_DSYNC there) */
	if (fcntl(z, F_SETFL, 0) != 0)
		fail("F_SETFL", z);
	expect_sync(z, O_DSYNC, "after F_SETFL 0");
	put(z, true, "write after F_SETFL 0");

	printf("fdsync: sync_writes=%d failures=%d\n", sync_writes, failures);
	return failures ? 1 : 0;
}

static int exec_child(const char *dir, const char *self)
{
	char num[16];
	int fd = xopen(dir, "exec", O_DSYNC);

	if (fd < 0)
		return 1;
	snprintf(num, sizeof(num), "%d", fd);
	execl(self, self, "-c", num, (char *)NULL);
	fail("exec", fd);
	return 1;
}

static int after_exec(int fd)
{
	expect_sync(fd, O_DSYNC, "O_DSYNC fd inherited across exec");
	for (int i = 0; i < 3; i++)
		put(fd, true, "write after exec");
	print_ino("synced", fd);
	printf("fdsync: sync_writes=%d failures=%d\n", sync_writes, failures);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	alarm(30);
	if (argc == 2)
		return scenario(argv[1]);
	if (argc == 3 && !strcmp(argv[1], "-x"))
		return exec_child(argv[2], argv[0]);
	if (argc == 3 && !strcmp(argv[1], "-c"))
		return after_exec(atoi(argv[2]));
	fprintf(stderr, "usage: fdsync DIR | -x DIR | -c FD\n");
	return 2;
}
