// SPDX-License-Identifier: LGPL-2.1-or-later
/* inowatch DIR: watches DIR with inotify for IN_CLOSE_WRITE, opens DIR/ino
 * O_DSYNC (created), writes a byte, and counts the events before and
 * after its close: "before_close=0 after_close=1" as bare. A program that
 * takes IN_CLOSE_WRITE for "the writer is done" (incron, a spool watcher)
 * must not hear it while the file is still open. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

static int close_writes(int in)
{
	char b[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t r;
	int n = 0;

	while ((r = read(in, b, sizeof(b))) > 0)
		for (char *p = b; p < b + r;) {
			struct inotify_event *e = (struct inotify_event *)p;

			n += !!(e->mask & IN_CLOSE_WRITE);
			p += sizeof(*e) + e->len;
		}
	return n;
}

int main(int argc, char **argv)
{
	char path[4096];
	int in, fd, before, after;

	if (argc != 2)
		return 2;
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (in < 0 || inotify_add_watch(in, argv[1], IN_CLOSE_WRITE) < 0)
		return perror("inowatch: inotify"), 1;
	snprintf(path, sizeof(path), "%s/ino", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return perror("inowatch: write"), 1;
	before = close_writes(in);
	close(fd);
	after = close_writes(in);
	printf("before_close=%d after_close=%d\n", before, after);
	return 0;
}
