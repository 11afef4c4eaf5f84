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
 * descriptor of a locked file).
 * lowfd DIR socks: under RLIMIT_NOFILE 40, three times: opens 8 files
 * O_DSYNC, then fills the table with one call until EMFILE (accept of
 * connections a child made, socket, socketpair), counts, and closes it
 * all: "accepted=26 sockets=26 pairs=13" as bare, with 0-2 open
 * and nothing else inherited. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* Opens 8 files O_DSYNC (fd[0..7]); false on a failure. */
static bool eight(const char *dir, int *fd)
{
	char path[4096];

	for (int i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "%s/sock%d", dir, i);
		fd[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
		if (fd[i] < 0)
			return perror("lowfd: open"), false;
	}
	return true;
}

static void close_all(int *fd, int n)
{
	for (int i = 0; i < n; i++)
		close(fd[i]);
}

enum fill { BY_ACCEPT, BY_SOCKET, BY_PAIR };

/* One descriptor (two for a pair) at @got by @how; how many it made. */
static int make(enum fill how, int l, int *got)
{
	switch (how) {
	case BY_ACCEPT:
		return (got[0] = accept(l, NULL, NULL)) >= 0;
	case BY_SOCKET:
		return (got[0] = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0;
	case BY_PAIR:
		return socketpair(AF_UNIX, SOCK_STREAM, 0, got) ? 0 : 2;
	}
	return 0;
}

/* 8 files O_DSYNC, then descriptors made by @how until EMFILE: how many
 * calls succeeded (-1 on another failure); everything closed again. */
static int fill(const char *dir, enum fill how, int l)
{
	static const char *const name[] = { "accept", "socket", "socketpair" };
	int files[8], got[128], n = 0, calls = 0, k;

	if (!eight(dir, files))
		return -1;
	while (n + 1 < 128 && (k = make(how, l, got + n)) > 0) {
		n += k;
		calls++;
	}
	if (n + 1 >= 128 || errno != EMFILE) {
		fprintf(stderr, "lowfd: %s: %s\n", name[how], strerror(errno));
		calls = -1;
	}
	close_all(got, n);
	close_all(files, 8);
	return calls;
}

static int socks(const char *dir)
{
	struct rlimit rl = { 40, 40 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l, p[2], accepted, sockets, pairs, st;
	char c;
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/lowfd.sock", dir);
	unlink(sa.sun_path);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 64) || pipe(p))
		return perror("lowfd: listen"), 1;
	pid = fork();
	if (pid == 0) {
		/* 40 connections, kept until the parent closes its end */
		for (int i = 0; i < 40; i++) {
			int s = socket(AF_UNIX, SOCK_STREAM, 0);

			if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)))
				_exit(1);
		}
		close(p[0]);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &c, 1) != 1)
		return fprintf(stderr, "lowfd: no connections\n"), 1;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return perror("setrlimit"), 1;
	if ((accepted = fill(dir, BY_ACCEPT, l)) < 0 || (sockets = fill(dir, BY_SOCKET, l)) < 0 ||
	    (pairs = fill(dir, BY_PAIR, l)) < 0)
		return 1;
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	unlink(sa.sun_path);
	printf("accepted=%d sockets=%d pairs=%d\n", accepted, sockets, pairs);
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 4, 4 };
	char path[4096];
	int fd, w, s, d;

	if (argc == 3 && !strcmp(argv[2], "socks"))
		return socks(argv[1]);
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
