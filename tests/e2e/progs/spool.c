// SPDX-License-Identifier: LGPL-2.1-or-later
/* A mail spool: N processes deliver messages (write into tmp/, fsync the
 * file, rename into new/, fsync new/), the pattern of maildir delivery
 * agents. Prints "delivered=N" on success.
 *   spool DIR PROCS MESSAGES
 *   spool -1|-2|-L DIR PROCS MESSAGES
 *       each message by a process of its own, started with exec (a delivery
 *       agent run per message): -1 fsyncs the file alone, as maildrop does,
 *       -2 the file and then new/, -L appends the message to one shared
 *       file, DIR/log, and fsyncs that; a message whose fsync failed is
 *       counted ("failed=N"), not delivered, and the run goes on */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Message @i of worker @w: written into tmp/, fsynced, renamed into new/,
 * and new/ fsynced through @newfd unless it is -1. Returns 0, 2 (the
 * file's open, write, fsync or close failed) or 3 (the rename or new/'s
 * fsync). */
static int deliver_msg(const char *dir, int w, int i, int newfd)
{
	char tmp[4096], dst[4096], body[256];
	int fd, len = snprintf(body, sizeof(body), "message %d from worker %d\n", i, w);

	snprintf(tmp, sizeof(tmp), "%s/tmp/%d.%d", dir, w, i);
	snprintf(dst, sizeof(dst), "%s/new/%d.%d", dir, w, i);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write(fd, body, (size_t)len) != len || fsync(fd) || close(fd))
		return 2;
	if (rename(tmp, dst) || (newfd >= 0 && fsync(newfd)))
		return 3;
	return 0;
}

/* One message, @syncs 1 or 2 (3: appended to DIR/log), by this process
 * (after exec). */
static int deliver_one(const char *dir, int w, int i, int syncs)
{
	char path[4096], body[256];
	int fd, r, len;

	if (syncs == 3) {
		len = snprintf(body, sizeof(body), "message %d from worker %d\n", i, w);
		snprintf(path, sizeof(path), "%s/log", dir);
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
		if (fd < 0 || write(fd, body, (size_t)len) != len)
			return 3;
		return fsync(fd) ? 2 : close(fd) ? 3 : 0;
	}
	fd = -1;
	if (syncs == 2) {
		snprintf(path, sizeof(path), "%s/new", dir);
		if ((fd = open(path, O_RDONLY | O_DIRECTORY)) < 0)
			return 3;
	}
	r = deliver_msg(dir, w, i, fd);
	return fd >= 0 && close(fd) && !r ? 3 : r;
}

/* Worker @w's @n messages, each by a new process running @self. Returns
 * how many failed their fsync (exit 2), or 200 for any other failure. */
static int deliver_exec(const char *self, const char *dir, int w, int n, int syncs)
{
	char ws[16], is[16], ks[16];
	int i, st, failed = 0;

	for (i = 0; i < n; i++) {
		pid_t p;

		snprintf(ws, sizeof(ws), "%d", w);
		snprintf(is, sizeof(is), "%d", i);
		snprintf(ks, sizeof(ks), "%d", syncs);
		p = fork();
		if (p == 0) {
			execl(self, self, "-m", ks, dir, ws, is, (char *)NULL);
			_exit(127);
		}
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
		    (WEXITSTATUS(st) && WEXITSTATUS(st) != 2))
			return 200;
		failed += WEXITSTATUS(st) == 2;
	}
	return failed;
}

static int deliver(const char *dir, int w, int n)
{
	char tmp[4096];
	int newfd, i, r;

	snprintf(tmp, sizeof(tmp), "%s/new", dir);
	newfd = open(tmp, O_RDONLY | O_DIRECTORY);
	if (newfd < 0)
		return 1;
	for (i = 0; i < n; i++)
		if ((r = deliver_msg(dir, w, i, newfd)))
			return r;
	return close(newfd) ? 4 : 0;
}

int main(int argc, char **argv)
{
	const char *self = argv[0];
	char path[4096];
	int procs, n, w, st, bad = 0, syncs = 0, failed = 0;

	if (argc == 6 && !strcmp(argv[1], "-m"))
		return deliver_one(argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[2]));
	if (argc == 5 && (!strcmp(argv[1], "-1") || !strcmp(argv[1], "-2") ||
			  !strcmp(argv[1], "-L"))) {
		syncs = argv[1][1] == 'L' ? 3 : argv[1][1] - '0';
		argv++;
		argc--;
	}
	if (argc != 4)
		return 2;
	procs = atoi(argv[2]);
	n = atoi(argv[3]);
	snprintf(path, sizeof(path), "%s/tmp", argv[1]);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/new", argv[1]);
	mkdir(path, 0755);
	/* A process a message: this one, which outlives them, syncs new/ as
	 * many times as each of them does, so the library's shared state for
	 * the directory lives as long as the run (a spool's daemon) */
	for (int k = 0; k < (syncs == 2 ? 2 : syncs ? 1 : 0); k++) {
		int fd = open(path, O_RDONLY | O_DIRECTORY);

		if (fd < 0 || fsync(fd) || close(fd))
			return 1;
	}
	for (w = 0; w < procs; w++) {
		pid_t p = fork();

		if (p == 0)
			_exit(syncs ? deliver_exec(self, argv[1], w, n, syncs) : deliver(argv[1], w, n));
		if (p < 0)
			return 1;
	}
	while (wait(&st) > 0) {
		if (!WIFEXITED(st) || (WEXITSTATUS(st) && (!syncs || WEXITSTATUS(st) >= 200)))
			bad++;
		else if (syncs)
			failed += WEXITSTATUS(st);
	}
	if (bad)
		return 1;
	printf("delivered=%d failed=%d\n", procs * n - failed, failed);
	return 0;
}
