// SPDX-License-Identifier: LGPL-2.1-or-later
/* sigwrite DIR [-n OPS] [-i USEC]: a SIGALRM handler write()s to a pipe and
 * an O_DSYNC file while two threads loop in fsync, fdatasync and O_DSYNC
 * writes; must finish, every call succeeding (no EINTR leaking out). */

/* The timer is one-shot, re-armed by each iteration, so a handler slowed by
 * a commit window cannot starve the loops of CPU. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int pipe_w, pipe_r, sig_fd, ops = 300, interval_us = 500;
static volatile sig_atomic_t h_ok, h_fail, h_pipe;
static long sig_off;
static int errors;

static void on_alarm(int sig)
{
	int saved = errno;
	long off = __atomic_fetch_add(&sig_off, 16, __ATOMIC_RELAXED);

	(void)sig;
	if (write(pipe_w, "s", 1) == 1)
		h_pipe++;
	if (pwrite(sig_fd, "signal-handler!\n", 16, off) == 16)
		h_ok++;
	else
		h_fail++;
	errno = saved;
}

struct loop {
	const char *dir;
	int id;
	pthread_t tid;
};

static void err(const char *what, int e)
{
	fprintf(stderr, "sigwrite: %s: %s\n", what, strerror(e));
	__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
}

static void *loop(void *arg)
{
	struct loop *l = arg;
	char path[4096], buf[512], drain[64];
	int fd, ds;

	snprintf(path, sizeof(path), "%s/plain.%d", l->dir, l->id);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof(path), "%s/dsync.%d", l->dir, l->id);
	ds = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || ds < 0) {
		err("open", errno);
		return NULL;
	}
	memset(buf, 'm', sizeof(buf));
	{
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	for (int i = 0; i < ops; i++) {
		struct itimerval it = { { 0, 0 }, { 0, interval_us } };
		ssize_t r;

		setitimer(ITIMER_REAL, &it, NULL);
		r = pwrite(fd, buf, sizeof(buf), (off_t)(i % 32) * 512);

		if (r != (ssize_t)sizeof(buf))
			err("pwrite", r < 0 ? errno : EIO);
		if ((i % 2 ? fdatasync(fd) : fsync(fd)) != 0)
			err("fsync/fdatasync", errno);
		r = pwrite(ds, buf, 128, (off_t)(i % 32) * 128);
		if (r != 128)
			err("O_DSYNC pwrite", r < 0 ? errno : EIO);
		while (read(pipe_r, drain, sizeof(drain)) > 0)
			;
	}
	close(fd);
	close(ds);
	return NULL;
}

int main(int argc, char **argv)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	struct loop l[2];
	char path[4096];
	int p[2], c;

	while ((c = getopt(argc, argv, "n:i:")) != -1) {
		if (c == 'n')
			ops = atoi(optarg);
		else if (c == 'i')
			interval_us = atoi(optarg);
		else
			return 2;
	}
	if (optind != argc - 1)
		return 2;
	snprintf(path, sizeof(path), "%s/signal", argv[optind]);
	sig_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (sig_fd < 0 || pipe(p) != 0)
		return 1;
	pipe_r = p[0];
	pipe_w = p[1];
	fcntl(pipe_r, F_SETFL, O_NONBLOCK);
	fcntl(pipe_w, F_SETFL, O_NONBLOCK);
	/* one plain call first, so every layer has resolved what it needs */
	if (pwrite(sig_fd, "start-of-file...", 16, 0) != 16 || write(pipe_w, "s", 1) != 1)
		return 1;
	sig_off = 16;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART: interruptions must not leak */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* Only the looping threads take the signal, so it lands inside their
	 * sync calls rather than in main's pthread_join. */
	{
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	for (int i = 0; i < 2; i++) {
		l[i].dir = argv[optind];
		l[i].id = i;
		pthread_create(&l[i].tid, NULL, loop, &l[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(l[i].tid, NULL);
	setitimer(ITIMER_REAL, &off, NULL);
	printf("sigwrite: handler_writes=%d handler_failures=%d pipe_writes=%d errors=%d\n",
	       (int)h_ok, (int)h_fail, (int)h_pipe, errors);
	return errors || h_fail || h_ok == 0 ? 1 : 0;
}
