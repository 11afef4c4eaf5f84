// SPDX-License-Identifier: LGPL-2.1-or-later
/* peerdeath DIR [-w WORKERS] [-k KILLS]: worker processes sync one file
 * while victim processes doing the same are SIGKILLed at varied moments;
 * the workers must keep making progress after every kill, and end. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXW 16

struct shared {
	int stop;
	int errors;
	long ops[MAXW + 1];
};
static struct shared *sh;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* slot MAXW is shared by the victims */
static int loop(const char *dir, int slot)
{
	char path[4096], buf[512];
	int fd;

	alarm(60);
	snprintf(path, sizeof(path), "%s/shared", dir);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		return 1;
	memset(buf, 'a' + slot, sizeof(buf));
	for (long i = 0; !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
		if (pwrite(fd, buf, sizeof(buf), (off_t)slot * 4096) != (ssize_t)sizeof(buf) ||
		    (i % 2 ? fdatasync(fd) : fsync(fd)) != 0) {
			fprintf(stderr, "peerdeath[%d]: %s\n", slot, strerror(errno));
			__atomic_add_fetch(&sh->errors, 1, __ATOMIC_RELAXED);
			return 1;
		}
		__atomic_add_fetch(&sh->ops[slot], 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/* Every worker completes two more requests within 10 s. */
static int progress(int workers)
{
	for (int w = 0; w < workers; w++) {
		long before = __atomic_load_n(&sh->ops[w], __ATOMIC_RELAXED);
		double t0 = now_ms();

		while (__atomic_load_n(&sh->ops[w], __ATOMIC_RELAXED) < before + 2) {
			if (now_ms() - t0 > 10000) {
				fprintf(stderr, "peerdeath: worker %d stuck for 10 s\n", w);
				return 1;
			}
			nap_ms(2);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int workers = 3, kills = 8, c, bad = 0;
	pid_t pids[MAXW];

	while ((c = getopt(argc, argv, "w:k:")) != -1) {
		if (c == 'w')
			workers = atoi(optarg);
		else if (c == 'k')
			kills = atoi(optarg);
		else
			return 2;
	}
	if (optind != argc - 1 || workers < 1 || workers > MAXW)
		return 2;
	alarm(90);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	for (int w = 0; w < workers; w++) {
		pids[w] = fork();
		if (pids[w] == 0)
			_exit(loop(argv[optind], w));
	}
	for (int k = 0; k < kills && !bad; k++) {
		long before = __atomic_load_n(&sh->ops[MAXW], __ATOMIC_RELAXED);
		pid_t v = fork();

		if (v == 0)
			_exit(loop(argv[optind], MAXW));
		/* let the victim get going, then kill it at a varied moment */
		for (double t0 = now_ms(); now_ms() - t0 < 2000 &&
		     __atomic_load_n(&sh->ops[MAXW], __ATOMIC_RELAXED) == before;)
			nap_ms(1);
		nap_ms(1 + (k * 7) % 23);
		kill(v, SIGKILL);
		waitpid(v, NULL, 0);
		bad = progress(workers);
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (int w = 0; w < workers; w++) {
		double t0 = now_ms();
		int st = 0;
		pid_t r;

		while ((r = waitpid(pids[w], &st, WNOHANG)) == 0 && now_ms() - t0 < 10000)
			nap_ms(2);
		if (r != pids[w]) {
			fprintf(stderr, "peerdeath: worker %d did not finish\n", w);
			kill(pids[w], SIGKILL);
			waitpid(pids[w], NULL, 0);
			bad = 1;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			bad = 1;
		}
	}
	printf("peerdeath: workers=%d kills=%d victim_ops=%ld errors=%d\n", workers, kills,
	       sh->ops[MAXW], sh->errors);
	return bad || sh->errors ? 1 : 0;
}
