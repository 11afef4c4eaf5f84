// SPDX-License-Identifier: LGPL-2.1-or-later
/* fdswap DIR ROUNDS [close]: another thread puts a different file on a
 * descriptor (dup2) while a thread's fsync of it is under way. Bare, the
 * call has its file from its first instant and syncs it whatever the
 * number names later. Each round: thread A opens DIR/x, writes, and
 * fsyncs; thread B, once A is in the call, waits 300 us and dup2()s
 * DIR/y's descriptor onto A's number (with close: closes it instead).
 * Thread C fsyncs DIR/z meanwhile, so that A's request has company. Prints
 * "rounds=N failed=K". */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char px[4096], py[4096], pz[4096];
static int xfd = -1, yfd, rounds, closing;
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
	while (fd >= 0 && !__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		if (write(fd, "z", 1) != 1 || fsync(fd))
			break;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t b, c;
	int failed = 0;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "close")))
		return 2;
	rounds = atoi(argv[2]);
	closing = argc == 4;
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

		xfd = open(px, O_WRONLY | O_CREAT | O_APPEND, 0644);
		snprintf(rec, sizeof(rec), "round %d\n", r);
		if (xfd < 0 || write(xfd, rec, strlen(rec)) != (ssize_t)strlen(rec))
			return 1;
		pthread_mutex_lock(&mu);
		calls++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		if (fsync(xfd))
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
