// SPDX-License-Identifier: LGPL-2.1-or-later
/* uidexit: two processes sync files of one new folder under /var/tmp.
 * A, as nobody (65534), syncs and waits. B, as root, syncs, becomes
 * nobody (setuid) and exits. Then A counts the shared segments of its
 * user in /dev/shm: "nobody=1" under the library (the one A is in). The
 * library once named the segment to remove at B's exit by the user B was
 * then, and removed nobody's from under A. (Bare: none, "nobody=0".) */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

static char dir[] = "/var/tmp/libgc-uidexit.XXXXXX";

static int sync_one(const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	return fd < 0 || write(fd, "x", 1) != 1 || fsync(fd) ? -1 : 0;
}

static int be_nobody(void)
{
	return setgid(NOBODY) || setuid(NOBODY) ? -1 : 0;
}

static int count_nobody(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "libgc-65534-", 12);
	if (d)
		closedir(d);
	return n;
}

int main(void)
{
	int ready[2], go[2], st;
	pid_t a, b;
	char c;

	if (getuid() != 0 || !mkdtemp(dir) || chmod(dir, 0777) || pipe(ready) || pipe(go))
		return 2;
	fflush(NULL);
	a = fork();
	if (a == 0) {
		if (be_nobody() || sync_one("a") || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		printf("nobody=%d\n", count_nobody());
		exit(0);
	}
	if (a < 0 || read(ready[0], &c, 1) != 1)
		return 1;
	b = fork();
	if (b == 0)
		exit(sync_one("b") || be_nobody() ? 1 : 0);
	if (b < 0 || waitpid(b, &st, 0) != b || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	if (write(go[1], "g", 1) != 1 || waitpid(a, &st, 0) != a || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return 1;
	{
		char p[4096];

		snprintf(p, sizeof(p), "%s/a", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/b", dir);
		unlink(p);
		rmdir(dir);
	}
	return 0;
}
