// SPDX-License-Identifier: LGPL-2.1-or-later
/* How a process ends, for the exit report's tests: N fsyncs of a file in DIR
 * (by T threads), then optionally close stderr (as gnulib's close_stdout
 * does), optionally wait for SIGUSR1 or stdin's end, then leave through
 * exit, _exit or _Exit.
 *   reporter DIR N exit|_exit|_Exit [close2] [threads=T] [hold] [after=MS]
 * after=MS: one fsync at once, the workers' MS later (a process makes its
 * stats segment at a request 100 ms or more after its first). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int per;

static void *worker(void *arg)
{
	char path[4096];
	int fd, i;

	snprintf(path, sizeof(path), "%s/reporter.%ld", dir, (long)arg);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		exit(2);
	}
	for (i = 0; i < per; i++)
		if (write(fd, "x", 1) != 1 || fsync(fd) != 0) {
			perror("fsync");
			exit(2);
		}
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1, close2 = 0, hold = 0, i;
	pthread_t th[64];
	char c;

	if (argc < 4)
		return 2;
	dir = argv[1];
	per = atoi(argv[2]);
	for (i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "close2"))
			close2 = 1;
		else if (!strncmp(argv[i], "threads=", 8))
			threads = atoi(argv[i] + 8);
		else if (!strcmp(argv[i], "hold"))
			hold = 1;
		else if (!strncmp(argv[i], "after=", 6)) {
			char path[4096];
			int fd;

			snprintf(path, sizeof(path), "%s/reporter.first", dir);
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || fsync(fd) || close(fd))
				return 2;
			usleep((useconds_t)atoi(argv[i] + 6) * 1000);
		}
	}
	if (threads < 1 || threads > 64)
		return 2;
	per = threads > 1 ? per / threads : per;
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("reporter: pid=%d done\n", (int)getpid());
	fflush(stdout);
	if (hold) /* until stdin closes: gcstat looks meanwhile */
		while (read(0, &c, 1) > 0)
			;
	if (close2)
		close(2);
	if (!strcmp(argv[3], "_exit"))
		_exit(0);
	if (!strcmp(argv[3], "_Exit"))
		_Exit(0);
	exit(0);
}
