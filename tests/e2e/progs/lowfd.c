// SPDX-License-Identifier: LGPL-2.1-or-later
/* lowfd DIR: a process at its descriptor limit (RLIMIT_NOFILE 4: only 3
 * is free) opens a file O_DSYNC there, writes it, fsyncs it, and tries
 * one open more. Prints "fd=3 write=3 fsync=0 next=EMFILE" as bare.
 * lowfd DIR many: under RLIMIT_NOFILE 40, opens files O_DSYNC until
 * EMFILE, then dup()s and pipe()s until EMFILE, and writes 4 KiB
 * through each file: "files=37 dsync=37 wrote=37 then dup=EMFILE
 * pipe=EMFILE" as bare (the library's descriptors cost it none).
 * lowfd DIR locked: the same, with a write lock (fcntl) on the first file
 * taken as soon as it is open; then a child asks whether that lock is
 * still there: "... locked=1" as bare (making room must not close a
 * descriptor of a locked file). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int many(const char *dir, bool lock)
{
	struct rlimit rl = { 40, 40 };
	static char buf[4096];
	char path[4096];
	int fd[64], n = 0, ds = 0, wr = 0, i, d, p[2], de, pe;

	if (setrlimit(RLIMIT_NOFILE, &rl))
		return perror("setrlimit"), 1;
	for (;;) {
		snprintf(path, sizeof(path), "%s/many%d", dir, n);
		if (n == 64 || (fd[n] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644)) < 0)
			break;
		if (lock && n == 0) {
			struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

			if (fcntl(fd[0], F_SETLK, &l))
				return perror("lowfd: lock"), 1;
		}
		n++;
	}
	if (n < 64 && errno != EMFILE)
		return perror("lowfd: open"), 1;
	d = dup(0);
	de = errno;
	i = pipe(p);
	pe = errno;
	for (i = 0; i < n; i++) {
		ds += !!(fcntl(fd[i], F_GETFL) & O_DSYNC);
		wr += write(fd[i], buf, sizeof(buf)) == (ssize_t)sizeof(buf);
	}
	printf("files=%d dsync=%d wrote=%d then dup=%s pipe=%s", n, ds, wr,
	       d >= 0 ? "opened" : de == EMFILE ? "EMFILE" : strerror(de),
	       i == 0 && p[0] >= 0 ? "opened" : pe == EMFILE ? "EMFILE" : strerror(pe));
	if (lock) {
		pid_t pid;
		int st;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
			int f;

			close(fd[n - 1]);
			snprintf(path, sizeof(path), "%s/many0", dir);
			f = open(path, O_RDWR);
			_exit(f < 0 || fcntl(f, F_GETLK, &l) ? 2 : l.l_type != F_UNLCK);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) > 1)
			return fprintf(stderr, "lowfd: child failed\n"), 1;
		printf(" locked=%d", WEXITSTATUS(st));
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 4, 4 };
	char path[4096];
	int fd, w, s, d;

	if (argc == 3 && (!strcmp(argv[2], "many") || !strcmp(argv[2], "locked")))
		return many(argv[1], !strcmp(argv[2], "locked"));
	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/lowfd", argv[1]);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return perror("setrlimit"), 1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	w = fd < 0 ? -1 : (int)write(fd, "abc", 3);
	s = fd < 0 ? -1 : fsync(fd);
	d = open(argv[1], O_RDONLY);
	printf("fd=%d write=%d fsync=%d next=%s\n", fd, w, s,
	       d >= 0 ? "opened" : errno == EMFILE ? "EMFILE" : strerror(errno));
	return 0;
}
