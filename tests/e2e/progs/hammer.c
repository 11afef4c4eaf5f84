// SPDX-License-Identifier: LGPL-2.1-or-later
/* hammer [-p PROCS] [-t THREADS] [-n COUNT] [-T MS] [-m fsync|fdatasync] [-e]
 *        [-k MS] FILE:
 * PROCS forked processes of THREADS threads each write and sync FILE (or,
 * with -e, a file each, FILE.P.T), COUNT times or for MS milliseconds, every
 * thread through a descriptor of its own. With -k, a victim process syncing
 * FILE too is SIGKILLed after 1 to MS ms and replaced, until the workers
 * end. Prints the totals; exits 0 only when every request succeeded and
 * every worker ended normally. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct totals {
	long ok;
	long fail;
	int first_errno;
};

static struct totals *tot;	/* shared with the forked workers */
static const char *file;
static int count = 20, run_ms, each, datasync, kill_ms;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

struct worker {
	int proc, thread;
	pthread_t tid;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char path[4096], buf[512];
	long until = run_ms ? now_ms() + run_ms : 0;
	int fd;

	if (each)
		snprintf(path, sizeof(path), "%s.%d.%d", file, w->proc, w->thread);
	else
		snprintf(path, sizeof(path), "%s", file);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "hammer: open %s: %s\n", path, strerror(errno));
		__atomic_add_fetch(&tot->fail, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	memset(buf, 'a' + (w->proc * 7 + w->thread) % 26, sizeof(buf));
	for (int i = 0; until ? now_ms() < until : i < count; i++) {
		off_t off = (off_t)((w->proc * 64 + w->thread) % 256) * 4096;

		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf) ||
		    (datasync ? fdatasync(fd) : fsync(fd)) != 0) {
			int e = 0;

			__atomic_compare_exchange_n(&tot->first_errno, &e, errno, 0,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			__atomic_add_fetch(&tot->fail, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&tot->ok, 1, __ATOMIC_RELAXED);
		}
	}
	close(fd);
	return NULL;
}

static int run_proc(int proc, int threads)
{
	struct worker *w = calloc((size_t)threads, sizeof(*w));

	if (!w)
		return 1;
	for (int i = 0; i < threads; i++) {
		w[i].proc = proc;
		w[i].thread = i;
		if (i && pthread_create(&w[i].tid, NULL, work, &w[i]) != 0)
			return 1;
	}
	work(&w[0]);
	for (int i = 1; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	free(w);
	return 0;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Until every worker has ended: a victim syncing the shared file, killed
 * at a random moment, then the next. Leaves the workers to be reaped. */
static void victims(const pid_t *pids, int procs)
{
	unsigned int seed = (unsigned int)getpid();
	siginfo_t si;

	if (!kill_ms)
		return;
	for (;;) {
		int left = 0;
		pid_t v;

		for (int p = 0; p < procs; p++) {
			memset(&si, 0, sizeof(si));
			if (pids[p] > 0 && waitid(P_PID, (id_t)pids[p], &si,
						  WEXITED | WNOHANG | WNOWAIT) == 0 && !si.si_pid)
				left++;
		}
		if (!left)
			return;
		v = fork();
		if (v == 0) {
			each = 0;
			run_ms = 60000;
			_exit(run_proc(1000, 1));
		}
		nap_ms(1 + (int)(rand_r(&seed) % (unsigned int)kill_ms));
		if (v > 0) {
			kill(v, SIGKILL);
			waitpid(v, NULL, 0);
		}
	}
}

int main(int argc, char **argv)
{
	int procs = 1, threads = 1, c, crashed = 0, bad = 0;

	while ((c = getopt(argc, argv, "p:t:n:T:m:ek:")) != -1) {
		switch (c) {
		case 'p': procs = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 'T': run_ms = atoi(optarg); break;
		case 'm': datasync = !strcmp(optarg, "fdatasync"); break;
		case 'e': each = 1; break;
		case 'k': kill_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || procs < 1 || threads < 1)
		return 2;
	file = argv[optind];
	tot = mmap(NULL, sizeof(*tot), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tot == MAP_FAILED)
		return 1;
	if (procs == 1 && !kill_ms) {
		bad = run_proc(0, threads);
	} else {
		pid_t *pids = calloc((size_t)procs, sizeof(*pids));

		for (int p = 0; p < procs; p++) {
			pids[p] = fork();
			/* exit, not _exit: the library's exit report is written */
			if (pids[p] == 0)
				exit(run_proc(p, threads));
			if (pids[p] < 0)
				bad++;
		}
		victims(pids, procs);
		for (int p = 0; p < procs; p++) {
			int st;

			if (pids[p] <= 0 || waitpid(pids[p], &st, 0) != pids[p]) {
				bad++;
				continue;
			}
			if (WIFSIGNALED(st)) {
				fprintf(stderr, "hammer: worker %d killed by signal %d (%s)\n",
					(int)pids[p], WTERMSIG(st), strsignal(WTERMSIG(st)));
				crashed++;
			} else if (WEXITSTATUS(st)) {
				bad++;
			}
		}
		free(pids);
	}
	printf("hammer: ok=%ld fail=%ld errno=%d crashed=%d bad=%d\n", tot->ok, tot->fail,
	       tot->first_errno, crashed, bad);
	return tot->fail || crashed || bad ? 1 : 0;
}
