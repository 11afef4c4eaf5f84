// SPDX-License-Identifier: LGPL-2.1-or-later
/* locksync DIR ROUNDS: a process write-locks a file with fcntl (a POSIX
 * record lock, as SQLite takes), writes and fsyncs it while another
 * thread fsyncs a second file (so that its requests have company), and
 * after each fsync a child asks whether the lock is still held. Closing
 * any descriptor of the file in the process would have released it.
 * Prints "rounds=N lost=K failed=F". */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char pz[4096];
static volatile int stop;

static void *company(void *arg)
{
	int fd = open(pz, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	(void)arg;
	while (fd >= 0 && !stop)
		if (write(fd, "z", 1) != 1 || fsync(fd))
			break;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* In a child: is the whole file write-locked by another process? */
static int still_locked(const char *path)
{
	pid_t c = fork();
	int st;

	if (c == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_WRLCK ? 0 : 1);
	}
	return c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char px[4096];
	int fd, rounds, lost = 0, failed = 0;
	pthread_t c;

	if (argc != 3)
		return 2;
	rounds = atoi(argv[2]);
	snprintf(px, sizeof(px), "%s/locked", argv[1]);
	snprintf(pz, sizeof(pz), "%s/company", argv[1]);
	fd = open(px, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fcntl(fd, F_SETLK, &fl))
		return 1;
	pthread_create(&c, NULL, company, NULL);
	for (int r = 0; r < rounds; r++) {
		if (write(fd, "record\n", 7) != 7 || fsync(fd))
			failed++;
		if (!still_locked(px)) {
			lost++;
			if (fcntl(fd, F_SETLK, &fl)) /* take it again for the next round */
				return 1;
		}
	}
	stop = 1;
	pthread_join(c, NULL);
	printf("rounds=%d lost=%d failed=%d\n", rounds, lost, failed);
	return 0;
}
