// SPDX-License-Identifier: LGPL-2.1-or-later
/* fdswap DIR ROUNDS [close|osync|rwf]: another thread puts a different file
 * on a descriptor (dup2) while a thread's fsync of it is under way. Bare,
 * the call has its file from its first instant and syncs it whatever the
 * number names later. Each round: thread A opens DIR/x, writes, and
 * fsyncs; thread B, once A is in the call, waits 300 us and dup2()s
 * DIR/y's descriptor onto A's number (with close: closes it instead).
 * With osync, A's write itself is the request (x opened O_DSYNC); with
 * rwf, a pwritev2 with RWF_DSYNC is. Thread C fsyncs DIR/z meanwhile, so
 * that A's request has company. Prints "rounds=N failed=K". */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static char px[4096], py[4096], pz[4096];
static int xfd = -1, yfd, rounds, closing, mode; /* 0 fsync, 1 osync, 2 rwf */
static int calls, stop;	/* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void *swapper(void *arg)
{
	int seen = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (calls == seen && !stop)
			pthread_cond_wait(&cv, &mu);
		if (stop) {
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		seen = calls;
		pthread_mutex_unlock(&mu);
		nap_us(300);
		if (closing)
			close(xfd);
		else
			dup2(yfd, xfd);
	}
}

static void *company(void *arg)
{
	int fd = open(pz, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	(void)arg;
	/* a failed fsync (an injected fault) does not end the company */
	while (fd >= 0 && !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (write(fd, "z", 1) != 1)
			break;
		fsync(fd);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t b, c;
	int failed = 0;

	if (argc == 4 && !strcmp(argv[3], "close"))
		closing = 1;
	else if (argc == 4 && !strcmp(argv[3], "osync"))
		mode = 1;
	else if (argc == 4 && !strcmp(argv[3], "rwf"))
		mode = 2;
	else if (argc != 3)
		return 2;
	rounds = atoi(argv[2]);
	snprintf(px, sizeof(px), "%s/x", argv[1]);
	snprintf(py, sizeof(py), "%s/y", argv[1]);
	snprintf(pz, sizeof(pz), "%s/z", argv[1]);
	yfd = open(py, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (yfd < 0)
		return 1;
	pthread_create(&c, NULL, company, NULL);
	pthread_create(&b, NULL, swapper, NULL);
	for (int r = 0; r < rounds; r++) {
		char rec[64];
		struct iovec iov = { rec, 0 };
		ssize_t n = 0;

		xfd = open(px, O_WRONLY | O_CREAT | O_APPEND | (mode == 1 ? O_DSYNC : 0), 0644);
		snprintf(rec, sizeof(rec), "round %d\n", r);
		iov.iov_len = strlen(rec);
		if (xfd < 0 || (!mode && write(xfd, rec, iov.iov_len) != (ssize_t)iov.iov_len))
			return 1;
		pthread_mutex_lock(&mu);
		calls++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		if (mode == 1)
			n = write(xfd, rec, iov.iov_len);
		else if (mode == 2)
			n = pwritev2(xfd, &iov, 1, -1, RWF_DSYNC);
		if (mode ? n != (ssize_t)iov.iov_len : fsync(xfd) != 0)
			failed++;
		nap_us(1000); /* the swap is done */
		close(xfd); /* EBADF after B's close */
	}
	pthread_mutex_lock(&mu);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	printf("rounds=%d failed=%d\n", rounds, failed);
	return 0;
}
