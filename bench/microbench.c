// SPDX-License-Identifier: LGPL-2.1-or-later
/* microbench: the micro-costs of `make bench`. Times many write() calls, or
 * fsync() calls after small writes, in a loop and prints nanoseconds per call;
 * run bare and under the preload, the difference is what the library adds. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define MAX_THREADS 64
#define MAX_ROUNDS 1000
#define MAX_SIZE (1 << 20)

enum op { OP_WRITE, OP_FSYNC };

struct opts {
	enum op op;
	long calls;		/* per thread per round */
	size_t size;
	int rounds;
	int threads;
	const char *path;
};

struct worker {
	const struct opts *o;
	int id;
	int fd;
	char *buf;
	double *ns;		/* ns per call, one per round */
	int err;
	pthread_t thread;
};

static const char *prog = "microbench";
static pthread_barrier_t round_barrier;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s write|fsync [-n CALLS] [-s BYTES] [-r ROUNDS] [-t THREADS] FILE\n"
		"  write  time N write() calls of BYTES each (the file is rewound,\n"
		"         untimed, before each round)\n"
		"  fsync  write BYTES then time one fsync(), N times per round\n"
		"  -n     calls per thread and round (write 100000, fsync 20000)\n"
		"  -s     bytes per write (64)      -r  rounds (7), the median is printed\n"
		"  -t     threads, each with its own descriptor of FILE (1)\n",
		prog);
}

static long parse_long(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: invalid %s: '%s' (%ld..%ld)\n", prog, what, s, lo, hi);
		exit(2);
	}
	return v;
}

/* A write loop that stops on the first error: the caller reports it. */
static int write_n(int fd, const char *buf, size_t size, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (write(fd, buf, size) != (ssize_t)size)
			return errno ? errno : EIO;
	return 0;
}

/*
 * One round. The write case times the whole loop, so no clock read sits
 * between the calls; the fsync case must leave its writes out, so it times
 * each fsync alone (the clock's own cost is the same bare and preloaded).
 */
static int one_round(struct worker *w, long calls, double *ns_out)
{
	const struct opts *o = w->o;
	uint64_t t0, sum = 0;
	long i;
	int err;

	if (o->op == OP_WRITE) {
		if (lseek(w->fd, 0, SEEK_SET) < 0)
			return errno;
		t0 = gc_now_ns();
		err = write_n(w->fd, w->buf, o->size, calls);
		sum = gc_now_ns() - t0;
		if (err)
			return err;
	} else {
		for (i = 0; i < calls; i++) {
			if (write(w->fd, w->buf, o->size) != (ssize_t)o->size)
				return errno ? errno : EIO;
			t0 = gc_now_ns();
			if (fsync(w->fd) < 0)
				return errno;
			sum += gc_now_ns() - t0;
		}
		/* keep the file small: the next round rewrites the same bytes */
		if (lseek(w->fd, 0, SEEK_SET) < 0)
			return errno;
	}
	if (ns_out)
		*ns_out = (double)sum / (double)calls;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	long warm = o->calls < 1000 ? o->calls : 1000;
	int r, err;

	/* an untimed round first: lazy setup (descriptor tables, segments)
	 * belongs to no measured call */
	err = one_round(w, warm, NULL);
	for (r = 0; r < o->rounds; r++) {
		/* every thread waits here even after an error, so none blocks */
		pthread_barrier_wait(&round_barrier);
		if (!err)
			err = one_round(w, o->calls, &w->ns[r]);
	}
	w->err = err;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 64, .rounds = 7, .threads = 1, .calls = 0 };
	struct worker *ws;
	double *all;
	int c, i, r, n = 0, status = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "write")) {
		o.op = OP_WRITE;
	} else if (!strcmp(argv[1], "fsync")) {
		o.op = OP_FSYNC;
	} else if (!strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	} else {
		usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt(argc, argv, "n:s:r:t:h")) != -1) {
		switch (c) {
		case 'n':
			o.calls = parse_long("call count", optarg, 1, 100000000);
			break;
		case 's':
			o.size = (size_t)parse_long("size", optarg, 1, MAX_SIZE);
			break;
		case 'r':
			o.rounds = (int)parse_long("round count", optarg, 1, MAX_ROUNDS);
			break;
		case 't':
			o.threads = (int)parse_long("thread count", optarg, 1, MAX_THREADS);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	o.path = argv[optind];
	if (!o.calls)
		o.calls = o.op == OP_WRITE ? 100000 : 20000;

	ws = calloc((size_t)o.threads, sizeof(*ws));
	all = calloc((size_t)o.threads * (size_t)o.rounds, sizeof(*all));
	if (!ws || !all) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	pthread_barrier_init(&round_barrier, NULL, (unsigned)o.threads);
	for (i = 0; i < o.threads; i++) {
		ws[i].o = &o;
		ws[i].id = i;
		ws[i].ns = all + (size_t)i * (size_t)o.rounds;
		ws[i].buf = malloc(o.size);
		ws[i].fd = open(o.path, O_WRONLY | O_CREAT, 0644);
		if (!ws[i].buf || ws[i].fd < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, o.path,
				ws[i].buf ? strerror(errno) : "out of memory");
			return 1;
		}
		memset(ws[i].buf, 'a' + i % 26, o.size);
	}
	for (i = 0; i < o.threads; i++) {
		if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i])) {
			fprintf(stderr, "%s: cannot start thread %d\n", prog, i);
			return 1;
		}
	}
	for (i = 0; i < o.threads; i++) {
		pthread_join(ws[i].thread, NULL);
		if (ws[i].err) {
			fprintf(stderr, "%s: thread %d: %s\n", prog, i, strerror(ws[i].err));
			status = 1;
		}
		for (r = 0; r < o.rounds && !ws[i].err; r++)
			all[n++] = ws[i].ns[r];
		close(ws[i].fd);
		free(ws[i].buf);
	}
	if (status || !n)
		return 1;
	qsort(all, (size_t)n, sizeof(*all), cmp_double);
	printf("%s: op=%s threads=%d size=%zu calls=%ld rounds=%d ns_per_call=%.1f "
	       "min_ns=%.1f max_ns=%.1f\n",
	       prog, o.op == OP_WRITE ? "write" : "fsync", o.threads, o.size, o.calls,
	       o.rounds, n % 2 ? all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2,
	       all[0], all[n - 1]);
	free(all);
	free(ws);
	return fflush(stdout) ? 1 : 0;
}
