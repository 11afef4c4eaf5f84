// SPDX-License-Identifier: LGPL-2.1-or-later
/* forksig DIR [-s MSEC] [-i USEC] [-k]: a signal handler fsyncs while the
 * thread it interrupts forks in a loop (children _exit at once) and fsyncs
 * itself. The signal lands anywhere, also between the atfork handlers, where
 * a library holding its locks across fork would wait for itself forever. */

/* Usage: -s how long to loop (default 2000 ms); -i the span of delays
 * (default 300 us): each round sends one signal, 0-USEC after the round
 * starts, from a one-shot SIGALRM timer, or with -k as SIGUSR1 from a
 * second thread (pthread_kill). One signal a round: a handler slower than
 * the signal period would otherwise starve the loop (and a fork that a
 * signal interrupts starts over). Prints "forksig: forks=N syncs=N
 * handler_syncs=N errors=N"; exits 1 when a call failed. A hang is the
 * failure this program exists to show: run it under a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static volatile sig_atomic_t h_syncs, h_errors;
static pthread_t main_tid;
static int stop, span_us = 300;
static unsigned round_no;	/* the main thread's round; the kicker follows */

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (fsync(fd) == 0)
		h_syncs++;
	else
		h_errors++;
	errno = saved;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Delays spread over the span, so the signals sample the whole fork. */
static long delay_us(unsigned k)
{
	return (long)(k * 37u % (unsigned)span_us);
}

static void *kicker(void *arg)
{
	unsigned seen = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned k = __atomic_load_n(&round_no, __ATOMIC_ACQUIRE);
		uint64_t at;

		if (k == seen) {
			sched_yield();
			continue;
		}
		seen = k;
		at = now_ns() + (uint64_t)delay_us(k) * 1000;
		while (now_ns() < at)
			;
		pthread_kill(main_tid, SIGUSR1);
	}
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(int argc, char **argv)
{
	long run_ms = 2000, forks = 0, syncs = 0, errors = 0;
	int use_kill = 0, c;
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa;
	struct timespec t0;
	pthread_t kt;
	char path[4096];

	while ((c = getopt(argc, argv, "s:i:k")) != -1) {
		if (c == 's')
			run_ms = atol(optarg);
		else if (c == 'i')
			span_us = atoi(optarg);
		else if (c == 'k')
			use_kill = 1;
		else
			return 2;
	}
	if (optind != argc - 1 || span_us < 1 || span_us > 999999)
		return 2;
	snprintf(path, sizeof(path), "%s/forksig", argv[optind]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	/* one request first, so the library's domain for this filesystem
	 * exists before the first fork */
	if (fd < 0 || pwrite(fd, "forksig\n", 8, 0) != 8 || fsync(fd) != 0) {
		fprintf(stderr, "forksig: first sync: %s\n", strerror(errno));
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(use_kill ? SIGUSR1 : SIGALRM, &sa, NULL);
	main_tid = pthread_self();
	if (use_kill && pthread_create(&kt, NULL, kicker, NULL) != 0)
		return 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned k = 1; ms_since(&t0) < run_ms; k++) {
		pid_t pid;
		int st;

		if (use_kill) {
			__atomic_store_n(&round_no, k, __ATOMIC_RELEASE);
		} else {
			it.it_value.tv_usec = delay_us(k) + 1;
			setitimer(ITIMER_REAL, &it, NULL);
		}
		pid = fork();
		if (pid == 0)
			_exit(0);
		if (pid < 0) {
			if (errno != EAGAIN)
				errors++;
			continue;
		}
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		forks++;
		if (pwrite(fd, "x", 1, 8 + forks % 4096) != 1 || fsync(fd) != 0)
			errors++;
		else
			syncs++;
	}

	if (use_kill) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(kt, NULL);
	}
	printf("forksig: forks=%ld syncs=%ld handler_syncs=%ld errors=%ld\n", forks, syncs,
	       (long)h_syncs, errors + h_errors);
	return errors || h_errors ? 1 : 0;
}
