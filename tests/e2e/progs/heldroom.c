// SPDX-License-Identifier: LGPL-2.1-or-later
/* heldroom DIR full|dup2|spawn|closefrom|unshare|exec: copies of converted
 * O_DSYNC/O_SYNC descriptors, and what the library keeps for them.
 * full: 65 files opened O_DSYNC (the library holds at most 64 of the
 * descriptions it converts: core/fdtable.h), then a dup() of the first;
 * 4 bytes through the first, 4 through the copy, 4 through the first.
 * They share one description, so one offset: prints the first file's
 * content and both offsets, "content=AAAABBBBCCCC off=12,12" as bare.
 * dup2: an O_SYNC descriptor dup2()ed onto 256, then onto 257 (free
 * numbers where the library keeps its own), each copy closed and then
 * written to: "close=0,0 write=EBADF,EBADF" as bare.
 * spawn: with an O_DSYNC descriptor open, popen() and open() take the
 * next free numbers, and a posix_spawn() whose file action dup2()s the
 * number after those (which the program does not have) fails with EBADF:
 * "popen=4 open=5 spawn=EBADF" as bare, where 3 was the lowest free (what
 * the library keeps for a spawn must not take numbers of the program's).
 * closefrom: an O_DSYNC descriptor dup2()ed onto 500, closefrom(400),
 * then a plain open of the file copied to 500 again (F_DUPFD): it is
 * plain, "getfl=0" as bare (the library once kept the entry of the 500
 * it did not see closed, and took the new one for a converted copy).
 * unshare, exec: two numbers of one O_DSYNC description (a dup()), given
 * their flag back: by unshare(CLONE_FILES) in this process, or for a
 * child without the library that writes "X" through one and "Y" through
 * the other. One description, one offset: "content=aabb" and
 * "content=XY" as bare (the library once gave each number a description
 * of its own: the second write overwrote the first). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define FILES 65

static int full(const char *dir)
{
	char path[4096], buf[64] = { 0 };
	int fd[FILES], d, i, r;

	for (i = 0; i < FILES; i++) {
		snprintf(path, sizeof(path), "%s/f%02d", dir, i);
		fd[i] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
		if (fd[i] < 0)
			return perror("heldroom: open"), 1;
	}
	d = dup(fd[0]);
	if (d < 0 || write(fd[0], "AAAA", 4) != 4 || write(d, "BBBB", 4) != 4 ||
	    write(fd[0], "CCCC", 4) != 4)
		return perror("heldroom: write"), 1;
	r = (int)pread(fd[0], buf, sizeof(buf) - 1, 0);
	printf("content=%s off=%lld,%lld\n", r > 0 ? buf : "-",
	       (long long)lseek(fd[0], 0, SEEK_CUR), (long long)lseek(d, 0, SEEK_CUR));
	return 0;
}

static int dup2s(const char *dir)
{
	static const int target[] = { 256, 257 };
	char path[4096];
	int fd, c[2], e[2], i;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC, 0644);
	if (fd < 0)
		return perror("heldroom: open"), 1;
	for (i = 0; i < 2; i++) {
		if (dup2(fd, target[i]) != target[i])
			return perror("heldroom: dup2"), 1;
		c[i] = close(target[i]);
		errno = 0;
		e[i] = write(target[i], "x", 1) < 0 ? errno : 0;
	}
	printf("close=%d,%d write=%s,%s\n", c[0], c[1], e[0] ? strerrorname_np(e[0]) : "0",
	       e[1] ? strerrorname_np(e[1]) : "0");
	return 0;
}

static int spawns(const char *dir)
{
	char path[4096], *argv[] = { "true", NULL };
	posix_spawn_file_actions_t fa;
	int fd, o, r;
	FILE *p;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	p = popen("true", "r");
	snprintf(path, sizeof(path), "%s/g", dir);
	o = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !p || o < 0)
		return fprintf(stderr, "heldroom: fd %d, popen %p, open %d\n", fd, (void *)p, o), 1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, o + 1, 9);
	r = posix_spawnp(&pid, "true", &fa, NULL, argv, environ);
	if (r == 0)
		waitpid(pid, NULL, 0);
	printf("popen=%d open=%d spawn=%s\n", fileno(p), o, r ? strerrorname_np(r) : "0");
	pclose(p);
	return 0;
}

static int closefroms(const char *dir)
{
	char path[4096];
	int fd, p, d;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || dup2(fd, 500) != 500)
		return perror("heldroom: open"), 1;
	closefrom(400);
	p = open(path, O_WRONLY);
	d = p < 0 ? -1 : fcntl(p, F_DUPFD, 500);
	if (d < 0)
		return perror("heldroom: F_DUPFD"), 1;
	printf("getfl=%d\n", !!(fcntl(d, F_GETFL) & O_DSYNC));
	return 0;
}

/* the two numbers of one description, written in turn; the content */
static int split(const char *dir, const char *how, char *self)
{
	char path[4096], buf[64] = { 0 };
	int fd, d, r;

	snprintf(path, sizeof(path), "%s/s", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	d = fd < 0 ? -1 : dup(fd);
	if (d < 0)
		return perror("heldroom: open"), 1;
	if (!strcmp(how, "unshare")) {
		if (unshare(CLONE_FILES) || write(fd, "aa", 2) != 2 || write(d, "bb", 2) != 2)
			return perror("heldroom: unshare"), 1;
	} else {
		char a[16], b[16], *argv[] = { self, a, b, NULL }, *envp[] = { NULL };
		pid_t pid;

		snprintf(a, sizeof(a), "%d", fd);
		snprintf(b, sizeof(b), "%d", d);
		if (posix_spawn(&pid, self, NULL, NULL, argv, envp) || waitpid(pid, &r, 0) != pid ||
		    !WIFEXITED(r) || WEXITSTATUS(r))
			return fprintf(stderr, "heldroom: the child failed\n"), 1;
	}
	r = (int)pread(fd, buf, sizeof(buf) - 1, 0);
	printf("content=%s\n", r > 0 ? buf : "-");
	return 0;
}

int main(int argc, char **argv)
{
	/* the exec child: "X" through the first number, "Y" the second */
	if (argc == 3 && argv[1][0] >= '0' && argv[1][0] <= '9')
		return write(atoi(argv[1]), "X", 1) == 1 && write(atoi(argv[2]), "Y", 1) == 1 ? 0 : 1;
	if (argc != 3)
		return 2;
	if (!strcmp(argv[2], "full"))
		return full(argv[1]);
	if (!strcmp(argv[2], "dup2"))
		return dup2s(argv[1]);
	if (!strcmp(argv[2], "spawn"))
		return spawns(argv[1]);
	if (!strcmp(argv[2], "closefrom"))
		return closefroms(argv[1]);
	if (!strcmp(argv[2], "unshare") || !strcmp(argv[2], "exec"))
		return split(argv[1], argv[2], argv[0]);
	return 2;
}
