// SPDX-License-Identifier: LGPL-2.1-or-later
/* spawnloop: what a preloaded library costs a short process. Runs a command
 * many times under two preload settings, run by run in alternation (A B,
 * B A, ...: each two runs an ABBA block), in pairs of N runs a side, and
 * prints each pair's ratio B / A and their median. A process is started
 * with posix_spawn and waited for, as a shell loop would, minus the shell.
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
		"usage: %s [-n RUNS] [-k PAIRS] [-i FILE] [-a VAR=VALUE]... [-b VAR=VALUE]... A B -- COMMAND [ARG]...\n"
		"  A, B   the preload of each side: a path, or - for none (LD_PRELOAD unset)\n"
		"  -n     runs of COMMAND per side and pair (200)\n"
		"  -k     pairs (9); within a pair the sides alternate run by run (ABBA...)\n"
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

int main(int argc, char **argv)
{
	static double ta[MAX_PAIRS], tb[MAX_PAIRS], ratio[MAX_PAIRS];
	static double ca[MAX_PAIRS], cb[MAX_PAIRS], cratio[MAX_PAIRS];
	double warm = 0;
	struct side sa = { 0 }, sb = { 0 };
	long runs = 200;
	int pairs = 9, c, k;
	char *end;

	while ((c = getopt(argc, argv, "+n:k:i:a:b:h")) != -1) {
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
		long i;

		/* run by run, so that a drift of the machine's speed meets
		 * both sides alike; the pair's first side alternates */
		ta[k] = tb[k] = ca[k] = cb[k] = 0;
		for (i = 0; i < runs; i++) {
			if ((k + i) % 2) {
				tb[k] += run_once(&sb, argv, &cb[k]);
				ta[k] += run_once(&sa, argv, &ca[k]);
			} else {
				ta[k] += run_once(&sa, argv, &ca[k]);
				tb[k] += run_once(&sb, argv, &cb[k]);
			}
		}
		ratio[k] = tb[k] / ta[k];
		cratio[k] = ca[k] > 0 ? cb[k] / ca[k] : 0;
		printf("pair %d: A %.4f s  B %.4f s  B/A %.3f  cpu ratio %.3f\n", k + 1, ta[k], tb[k],
		       ratio[k], cratio[k]);
		fflush(stdout);
	}
	printf("median B/A %.3f over %d pairs of %ld runs; per run: A %.1f us, B %.1f us\n",
	       median(ratio, pairs), pairs, runs, median(ta, pairs) / (double)runs * 1e6,
	       median(tb, pairs) / (double)runs * 1e6);
	/* worded apart from the line above, which bench/startup.sh reads */
	printf("median cpu ratio %.3f (cpu a run: A %.1f us; B %.1f us)\n", median(cratio, pairs),
	       median(ca, pairs) / (double)runs * 1e6, median(cb, pairs) / (double)runs * 1e6);
	return 0;
}
