// SPDX-License-Identifier: LGPL-2.1-or-later
/* ctorprog DIR: linked against libctor, whose constructor did synchronous I/O
 * before main. Checks that it succeeded and the data is there, then does a
 * little I/O of its own. Prints "ctorprog: ctor_fsyncs=N main_fdatasyncs=M". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ctor_status(int *fsyncs);

int main(int argc, char **argv)
{
	int fsyncs, err, fd;
	char path[4096], buf[32] = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: ctorprog DIR\n");
		return 2;
	}
	alarm(30);
	err = ctor_status(&fsyncs);
	if (err) {
		fprintf(stderr, "ctorprog: constructor I/O failed: %s\n", strerror(err));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ctor.dat", argv[1]);
	fd = open(path, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 16 ||
	    strcmp(buf, "written-in-ctor\n")) {
		fprintf(stderr, "ctorprog: constructor data wrong: \"%s\"\n", buf);
		return 1;
	}
	close(fd);
	snprintf(path, sizeof(path), "%s/main.dat", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "main\n", 5) != 5 || fdatasync(fd) != 0) {
		fprintf(stderr, "ctorprog: main I/O failed: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	printf("ctorprog: ctor_fsyncs=%d main_fdatasyncs=1\n", fsyncs);
	return 0;
}
