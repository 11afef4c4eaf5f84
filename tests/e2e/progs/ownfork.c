// SPDX-License-Identifier: LGPL-2.1-or-later
/* ownfork DIR: a thread keeps putting /dev/null onto the descriptors at
 * 256 and up (under libgc, the held description of DIR/f, opened O_DSYNC,
 * sits there, and each dup2 onto it moves it under the library's lock)
 * while the main thread forks 100 children; each child does the same
 * once and exits. A child whose lock was taken by the thread at the
 * fork would spin for ever: it is given 2 s. Prints "stuck=0" as bare. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static int null_fd;

static void onto_high(void)
{
	for (int h = 256; h < 400; h++)
		if (fcntl(h, F_GETFD) >= 0) {
			dup2(null_fd, h);
			close(h);
			return;
		}
}

static void *mover(void *arg)
{
	(void)arg;
	while (!stop)
		onto_high();
	return NULL;
}

int main(int argc, char **argv)
{
	char path[4096];
	pthread_t t;
	int fd, stuck = 0;

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/f", argv[1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	null_fd = open("/dev/null", O_WRONLY);
	if (fd < 0 || null_fd < 0 || pthread_create(&t, NULL, mover, NULL))
		return perror("ownfork"), 1;
	for (int i = 0; i < 100; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			onto_high();
			_exit(0);
		}
		for (int w = 0; w < 200; w++) {
			struct timespec ms = { 0, 10000000 };

			if (waitpid(pid, &st, WNOHANG) == pid)
				break;
			if (w == 199) {
				stuck++;
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				break;
			}
			nanosleep(&ms, NULL);
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("stuck=%d\n", stuck);
	return 0;
}
