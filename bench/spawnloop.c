// SPDX-License-Identifier: LGPL-2.1-or-later
/* spawnloop: what a preloaded library costs a short process. Runs a command
 * many times under two preload settings, run by run in alternation (A B,
 * B A, ...: each two runs an ABBA block), in pairs of N runs a side, and
 * prints each pair's ratio B / A and their median. A process is started
 * with posix_spawn and waited for, as a shell loop would, minus the shell.
 * With -j J, J such loops run at once (a mail server's deliveries, a build's
 * jobs), half of them a run ahead of the others in the alternation: at any
 * moment about as many processes run under A as under B, so that both
 * sides meet the same load.
 * Beside the wall time, each side's CPU time (the children's user and
 * system time, from wait4): on busy CPUs, where every process waits for a
 * core, that is what a library's work costs. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

extern char **environ;

#define MAX_PAIRS 1000
#define MAX_ENV 4096

static const char *prog = "spawnloop";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-n RUNS] [-k PAIRS] [-j LOOPS] [-t] [-i FILE] [-a VAR=VALUE]... [-b VAR=VALUE]... A B -- COMMAND [ARG]...\n"
		"  A, B   the preload of each side: a path, or - for none (LD_PRELOAD unset)\n"
		"  -n     runs of COMMAND per side and pair (200)\n"
		"  -k     pairs (9); within a pair the sides alternate run by run (ABBA...)\n"
		"  -j     loops at once (1), each making RUNS runs a side a pair, every\n"
		"         other loop starting with B; a pair sums the times of all loops\n"
		"  -t     a side at a time, over all loops (the side's processes meet\n"
		"         only each other), the first side alternating pair by pair\n"
		"  -i     each run's standard input: FILE, opened anew (a mail for an MDA)\n"
		"  -a/-b  an environment setting for side A/B only\n"
		"Prints one line per pair (seconds for A, for B, B/A, and the same ratio of\n"
		"CPU time), then the median of B/A, each side's median time per run, and the\n"
		"median CPU ratio with each side's median CPU time per run.\n",
		prog);
}

struct side {
	const char *preload;
	const char *extra[16];
	int nextra;
	char *env[MAX_ENV];
};

/* The environment of a side: ours without LD_PRELOAD, then its settings. */
static void make_env(struct side *s)
{
	int n = 0, i;

	for (i = 0; environ[i] && n < MAX_ENV - 20; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			s->env[n++] = environ[i];
	if (strcmp(s->preload, "-")) {
		char *e = malloc(strlen(s->preload) + 12);

		if (!e)
			exit(1);
		sprintf(e, "LD_PRELOAD=%s", s->preload);
		s->env[n++] = e;
	}
	for (i = 0; i < s->nextra; i++)
		s->env[n++] = (char *)s->extra[i];
	s->env[n] = NULL;
}

static const char *input; /* -i */

/* One run of @argv under @s: its wall time in seconds; its CPU time (user
 * and system) is added to @cpu. */
static double run_once(struct side *s, char **argv, double *cpu)
{
	struct rusage ru;
	static posix_spawn_file_actions_t fa;
	static bool fa_made;
	uint64_t t0;
	pid_t pid;
	int st, r;

	if (input && !fa_made) {
		if (posix_spawn_file_actions_init(&fa) ||
		    posix_spawn_file_actions_addopen(&fa, 0, input, O_RDONLY, 0)) {
			fprintf(stderr, "%s: -i %s: cannot set up\n", prog, input);
			exit(1);
		}
		fa_made = true;
	}
	t0 = gc_now_ns();
	r = posix_spawnp(&pid, argv[0], input ? &fa : NULL, NULL, argv, s->env);

	if (r) {
		fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(r));
		exit(1);
	}
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("wait4");
			exit(1);
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s: %s failed (status %d)\n", prog, argv[0], st);
		exit(1);
	}
	*cpu += (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	return (double)(gc_now_ns() - t0) / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static bool in_turn; /* -t */

/* One loop's share of pair @k: @runs runs a side, run by run, so that a
 * drift of the machine's speed meets both sides alike; the first side
 * alternates with the pair and the loop. With -t, a side at a time: all of
 * @sa's runs (NULL: none), then all of @sb's. Adds A's time and CPU, then
 * B's, to @sum. */
static void loop_runs(struct side *sa, struct side *sb, char **argv, int k, long runs, int j,
		      double sum[4])
{
	long i;

	if (in_turn) {
		for (i = 0; sa && i < runs; i++)
			sum[0] += run_once(sa, argv, &sum[1]);
		for (i = 0; sb && i < runs; i++)
			sum[2] += run_once(sb, argv, &sum[3]);
		return;
	}
	for (i = 0; i < runs; i++) {
		if ((k + i + j) % 2) {
			sum[2] += run_once(sb, argv, &sum[3]);
			sum[0] += run_once(sa, argv, &sum[1]);
		} else {
			sum[0] += run_once(sa, argv, &sum[1]);
			sum[2] += run_once(sb, argv, &sum[3]);
		}
	}
}

/* Pair @k's runs over @loops loops at once, each a child process that
 * reports its sums through a pipe; @sum: A's time and CPU, then B's,
 * summed over the loops. A side left NULL (-t) runs nothing. */
static void loops_run(struct side *sa, struct side *sb, char **argv, int k, long runs, int loops,
		      double sum[4])
{
	int fd[2], j, st, got = 0;
	bool failed = false;

	memset(sum, 0, 4 * sizeof(*sum));
	if (loops == 1) {
		loop_runs(sa, sb, argv, k, runs, 0, sum);
		return;
	}
	if (pipe(fd)) {
		perror("pipe");
		exit(1);
	}
	for (j = 0; j < loops; j++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			exit(1);
		}
		if (!pid) {
			double mine[4] = { 0 };

			close(fd[0]);
			loop_runs(sa, sb, argv, k, runs, j, mine);
			/* 32 bytes: one write, whole, into a pipe */
			_exit(write(fd[1], mine, sizeof(mine)) == (ssize_t)sizeof(mine) ? 0 : 1);
		}
	}
	close(fd[1]);
	for (;;) {
		double part[4];
		ssize_t n = read(fd[0], part, sizeof(part));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (n != (ssize_t)sizeof(part)) {
			failed = true;
			break;
		}
		for (j = 0; j < 4; j++)
			sum[j] += part[j];
		got++;
	}
	close(fd[0]);
	/* every loop is waited for, a failed one too (it said why) */
	for (;;) {
		if (wait(&st) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			failed = true;
	}
	if (failed || got != loops) {
		fprintf(stderr, "%s: %d of %d loops reported their sums\n", prog, got, loops);
		exit(1);
	}
}

/* Pair @k: its runs over @loops loops at once. With -t, all loops run one
 * side, then all of them the other, the first side alternating with the
 * pair: a side's processes meet only each other (one loop: all of a side's
 * runs, then the other's). */
static void pair_loops(struct side *sa, struct side *sb, char **argv, int k, long runs, int loops,
		       double sum[4])
{
	double part[4];
	int i;

	if (!in_turn) {
		loops_run(sa, sb, argv, k, runs, loops, sum);
		return;
	}
	loops_run(k % 2 ? NULL : sa, k % 2 ? sb : NULL, argv, k, runs, loops, sum);
	loops_run(k % 2 ? sa : NULL, k % 2 ? NULL : sb, argv, k, runs, loops, part);
	for (i = 0; i < 4; i++)
		sum[i] += part[i];
}

int main(int argc, char **argv)
{
	static double ta[MAX_PAIRS], tb[MAX_PAIRS], ratio[MAX_PAIRS];
	static double ca[MAX_PAIRS], cb[MAX_PAIRS], cratio[MAX_PAIRS];
	double warm = 0;
	struct side sa = { 0 }, sb = { 0 };
	long runs = 200;
	int pairs = 9, loops = 1, c, k;
	char *end;

	while ((c = getopt(argc, argv, "+n:k:j:ti:a:b:h")) != -1) {
		switch (c) {
		case 'n':
			runs = strtol(optarg, &end, 10);
			if (*end || runs < 1 || runs > 1000000) {
				fprintf(stderr, "%s: -n wants 1-1000000, not '%s'\n", prog, optarg);
				return 2;
			}
			break;
		case 'k':
			pairs = (int)strtol(optarg, &end, 10);
			if (*end || pairs < 1 || pairs > MAX_PAIRS) {
				fprintf(stderr, "%s: -k wants 1-%d, not '%s'\n", prog, MAX_PAIRS, optarg);
				return 2;
			}
			break;
		case 'j':
			loops = (int)strtol(optarg, &end, 10);
			if (*end || loops < 1 || loops > 64) {
				fprintf(stderr, "%s: -j wants 1-64, not '%s'\n", prog, optarg);
				return 2;
			}
			break;
		case 't':
			in_turn = true;
			break;
		case 'i':
			if (access(optarg, R_OK)) {
				fprintf(stderr, "%s: -i %s: %s\n", prog, optarg, strerror(errno));
				return 2;
			}
			input = optarg;
			break;
		case 'a':
		case 'b': {
			struct side *s = c == 'a' ? &sa : &sb;

			if (!strchr(optarg, '=') || s->nextra == 16) {
				fprintf(stderr, "%s: -%c wants VAR=VALUE (at most 16)\n", prog, c);
				return 2;
			}
			s->extra[s->nextra++] = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 4 || strcmp(argv[optind + 2], "--")) {
		usage(stderr);
		return 2;
	}
	sa.preload = argv[optind];
	sb.preload = argv[optind + 1];
	make_env(&sa);
	make_env(&sb);
	argv += optind + 3;
	/* one untimed run each: page cache, dynamic loader caches */
	run_once(&sa, argv, &warm);
	run_once(&sb, argv, &warm);
	for (k = 0; k < pairs; k++) {
		double sum[4];

		pair_loops(&sa, &sb, argv, k, runs, loops, sum);
		ta[k] = sum[0];
		ca[k] = sum[1];
		tb[k] = sum[2];
		cb[k] = sum[3];
		ratio[k] = tb[k] / ta[k];
		cratio[k] = ca[k] > 0 ? cb[k] / ca[k] : 0;
		printf("pair %d: A %.4f s  B %.4f s  B/A %.3f  cpu ratio %.3f\n", k + 1, ta[k], tb[k],
		       ratio[k], cratio[k]);
		fflush(stdout);
	}
	printf("median B/A %.3f over %d pairs of %ld runs; per run: A %.1f us, B %.1f us\n",
	       median(ratio, pairs), pairs, runs * loops,
	       median(ta, pairs) / (double)(runs * loops) * 1e6,
	       median(tb, pairs) / (double)(runs * loops) * 1e6);
	/* worded apart from the line above, which bench/startup.sh reads */
	printf("median cpu ratio %.3f (cpu a run: A %.1f us; B %.1f us)\n", median(cratio, pairs),
	       median(ca, pairs) / (double)(runs * loops) * 1e6,
	       median(cb, pairs) / (double)(runs * loops) * 1e6);
	return 0;
}
