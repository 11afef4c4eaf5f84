// SPDX-License-Identifier: LGPL-2.1-or-later
/* shapes: closed-loop workers whose transactions have the shapes real
 * programs give their syncs (SQLite's WAL and rollback journal, a mail
 * spool), with think time, bursts and a slow worker; the load of make
 * bench-shapes. A plain program: run bare and under the preload alike. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define MAX_WORKERS 256
#define PAGE 4096
/* The database a DELETE-like worker rewrites pages of, and how far a WAL
 * grows before it starts again from its beginning (a checkpoint). */
#define DB_PAGES 64
#define WAL_BYTES (8u << 20)
/* Latency histogram: 32 sub-buckets per power of two, under 3% error. */
#define SUB_BITS 5
#define SUB (1u << SUB_BITS)
#define BUCKETS ((64 - SUB_BITS + 1) * SUB)

/* A transaction's syncs, one after the other:
 *   wal    append a page to its log, fdatasync the log            (1 sync)
 *   spool  write a new message, fsync it, rename it into the spool
 *          directory, fsync that directory                        (2 syncs)
 *   delete SQLite's rollback journal: create the journal, write it,
 *          fdatasync it, fsync the directory, rewrite its header,
 *          fdatasync it, write the database, fdatasync it, unlink
 *          the journal                                            (4 syncs) */
enum shape { SH_WAL, SH_SPOOL, SH_DELETE };
static const char *const shape_names[] = { "wal", "spool", "delete" };
static const int shape_syncs[] = { 1, 2, 4 };
enum sync_kind { K_FDATASYNC, K_FSYNC, K_MIXED };
static const char *const kind_names[] = { "fdatasync", "fsync", "mixed" };

struct opts {
	int workers;
	int processes;
	enum shape shape;
	enum sync_kind kind;	/* of the file syncs; a directory is always fsync'd */
	int shared;		/* wal: one log for every worker */
	double think_us;	/* exponential mean between transactions; 0: none */
	double slow_us;		/* worker 0 thinks with this mean instead; 0: none */
	double burst_on_ms, burst_off_ms; /* all work in the on-phases only */
	double change_s;	/* the think time begins this far into the run; 0: at once */
	double secs;
	unsigned seed;
	const char *dir;
	int quiet;
};

struct result {
	uint64_t txns, reqs, errors;
	uint64_t after;		/* transactions begun after the change (-c) */
	uint64_t hist[BUCKETS];	/* transaction latency, ns */
};

struct shared {
	int stop;
	uint64_t t0;		/* when the workers start: the bursts' clock */
	struct result res[];
};

struct worker {
	int id;
	const struct opts *o;
	struct shared *sh;
	int gofd;
	int dirfd;
	uint64_t rng;
	pthread_t thread;
	pid_t pid;
};

static const char *prog = "shapes";

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static unsigned bucket(uint64_t v)
{
	unsigned e;

	if (v < SUB)
		return (unsigned)v;
	e = 63 - (unsigned)__builtin_clzll(v);
	return (e - SUB_BITS + 1) * SUB + (unsigned)((v >> (e - SUB_BITS)) & (SUB - 1));
}

static double bucket_value(unsigned b)
{
	unsigned e, s;
	double w;

	if (b < SUB)
		return b;
	e = b / SUB + SUB_BITS - 1;
	s = b % SUB;
	w = ldexp(1.0, (int)(e - SUB_BITS));
	return (SUB + s) * w + w / 2;
}

static double quantile(const uint64_t *h, uint64_t n, double q)
{
	uint64_t rank = (uint64_t)ceil(q * (double)n), seen = 0;
	unsigned b;

	if (!n)
		return 0;
	for (b = 0; b < BUCKETS; b++) {
		seen += h[b];
		if (seen >= (rank ? rank : 1))
			return bucket_value(b);
	}
	return bucket_value(BUCKETS - 1);
}

/* splitmix64: the same seed gives the same think times bare and preloaded,
 * so a pair of runs differs by what the library does, not by the draw. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t exp_ns(uint64_t *s, double mean_us)
{
	double u = ((double)(rnd(s) >> 11) + 0.5) / 9007199254740992.0;

	return (uint64_t)(-log(u) * mean_us * 1e3);
}

static void fail(struct worker *w, const char *what)
{
	fprintf(stderr, "%s: worker %d: %s: %s\n", prog, w->id, what, strerror(errno));
	w->sh->res[w->id].errors++;
	__atomic_store_n(&w->sh->stop, 1, __ATOMIC_RELAXED);
}

static int file_sync(int fd, const struct opts *o, uint64_t txn)
{
	if (o->kind == K_FSYNC || (o->kind == K_MIXED && (txn & 1)))
		return fsync(fd);
	return fdatasync(fd);
}

static int pwrite_all(int fd, const char *buf, size_t n, off_t off)
{
	ssize_t r = pwrite(fd, buf, n, off);

	if (r >= 0 && (size_t)r != n)
		errno = EIO;
	return r >= 0 && (size_t)r == n ? 0 : -1;
}

struct wstate {
	int log;		/* wal: the log; delete: the database */
	uint64_t off;		/* wal: where the next page goes */
	char path[512], path2[512];
	char buf[2 * PAGE];
};

/* One transaction of @w's shape; its syncs counted in *reqs. */
static int txn_run(struct worker *w, struct wstate *s, uint64_t txn, uint64_t *reqs)
{
	const struct opts *o = w->o;
	int fd;

	switch (o->shape) {
	case SH_WAL:
		if (pwrite_all(s->log, s->buf, PAGE, (off_t)s->off) < 0)
			return fail(w, "pwrite log"), -1;
		s->off += o->shared ? (uint64_t)o->workers * PAGE : PAGE;
		if (s->off >= WAL_BYTES)
			s->off = o->shared ? (uint64_t)w->id * PAGE : 0;
		if (file_sync(s->log, o, txn) < 0)
			return fail(w, "sync log"), -1;
		*reqs += 1;
		return 0;
	case SH_SPOOL:
		snprintf(s->path, sizeof(s->path), "%s/tmp/%d.%llu", o->dir, w->id,
			 (unsigned long long)txn);
		snprintf(s->path2, sizeof(s->path2), "%s/new/%d.%llu", o->dir, w->id,
			 (unsigned long long)txn);
		fd = open(s->path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return fail(w, "create message"), -1;
		if (pwrite_all(fd, s->buf, PAGE, 0) < 0 || file_sync(fd, o, txn) < 0) {
			fail(w, "write and sync message");
			close(fd);
			return -1;
		}
		close(fd);
		if (rename(s->path, s->path2) < 0)
			return fail(w, "rename"), -1;
		if (fsync(w->dirfd) < 0)
			return fail(w, "fsync spool"), -1;
		*reqs += 2;
		/* the reader takes the message away (not synced) */
		if (txn >= 8) {
			snprintf(s->path2, sizeof(s->path2), "%s/new/%d.%llu", o->dir, w->id,
				 (unsigned long long)(txn - 8));
			unlink(s->path2);
		}
		return 0;
	case SH_DELETE:
		fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return fail(w, "create journal"), -1;
		if (pwrite_all(fd, s->buf, 512 + PAGE, 0) < 0 || file_sync(fd, o, txn) < 0 ||
		    fsync(w->dirfd) < 0 || pwrite_all(fd, s->buf, 512, 0) < 0 ||
		    file_sync(fd, o, txn) < 0) {
			fail(w, "journal");
			close(fd);
			return -1;
		}
		if (pwrite_all(s->log, s->buf, PAGE, (off_t)(rnd(&w->rng) % DB_PAGES) * PAGE) < 0 ||
		    file_sync(s->log, o, txn) < 0) {
			fail(w, "database");
			close(fd);
			return -1;
		}
		close(fd);
		if (unlink(s->path) < 0)
			return fail(w, "unlink journal"), -1;
		*reqs += 4;
		return 0;
	}
	return -1;
}

/* In a burst's off-phase: sleep until the next on-phase begins. */
static void burst_wait(struct worker *w)
{
	const struct opts *o = w->o;
	uint64_t on = (uint64_t)(o->burst_on_ms * 1e6), off = (uint64_t)(o->burst_off_ms * 1e6);
	uint64_t at;

	if (!on || !off)
		return;
	at = (gc_now_ns() - w->sh->t0) % (on + off);
	if (at >= on)
		sleep_ns(on + off - at);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	struct result *r = &w->sh->res[w->id];
	double think = w->id == 0 && o->slow_us > 0 ? o->slow_us : o->think_us;
	uint64_t deadline, change, txn, reqs = 0;
	struct wstate *s = calloc(1, sizeof(*s));
	char go;

	if (!s)
		return fail(w, "calloc"), NULL;
	memset(s->buf, 'a' + w->id % 26, sizeof(s->buf));
	if (o->shape == SH_WAL) {
		snprintf(s->path, sizeof(s->path), "%s/log.%d", o->dir, o->shared ? 0 : w->id);
		s->off = o->shared ? (uint64_t)w->id * PAGE : 0;
	} else {
		snprintf(s->path, sizeof(s->path), "%s/db.%d", o->dir, w->id);
	}
	s->log = o->shape == SH_SPOOL ? -1 : open(s->path, O_RDWR);
	if (o->shape != SH_SPOOL && s->log < 0) {
		fail(w, "open");
		free(s);
		return NULL;
	}
	snprintf(s->path, sizeof(s->path), "%s/db.%d-journal", o->dir, w->id);

	while (read(w->gofd, &go, 1) < 0 && errno == EINTR)
		;
	deadline = w->sh->t0 + (uint64_t)(o->secs * 1e9);
	change = w->sh->t0 + (uint64_t)(o->change_s * 1e9);
	for (txn = 0; !__atomic_load_n(&w->sh->stop, __ATOMIC_RELAXED); txn++) {
		uint64_t t0, t1;

		if (think > 0 && (!o->change_s || gc_now_ns() >= change))
			sleep_ns(exp_ns(&w->rng, think));
		burst_wait(w);
		t0 = gc_now_ns();
		if (t0 >= deadline)
			break;
		if (txn_run(w, s, txn, &reqs) < 0)
			break;
		t1 = gc_now_ns();
		r->txns++;
		r->after += t0 >= change;
		r->hist[bucket(t1 - t0)]++;
		if (t1 >= deadline)
			break;
	}
	r->reqs = reqs;
	if (s->log >= 0)
		close(s->log);
	free(s);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-t N | -p N] -k wal|spool|delete [-m fdatasync|fsync|mixed] [-S]\n"
		"       [-T THINK_US] [-c SECS] [-l SLOW_US] [-b ON_MS:OFF_MS] [-d SECS] [-r SEED] [-D DIR] [-q]\n"
		"  -t/-p  N threads or forked processes (1)  -k  the transaction's shape\n"
		"  -m     how files are synced (fdatasync)   -S  wal: one log shared by all\n"
		"  -T     exponential think time, mean in us, between transactions (0: none)\n"
		"  -c     the think time begins SECS into the run (a change of shape: a storm,\n"
		"         then pauses); prints the rate after it too\n"
		"  -l     worker 0 thinks with this mean instead: one slow worker\n"
		"  -b     work only in on-phases of ON ms, every ON+OFF ms (bursts)\n"
		"  -d     seconds (2)   -r  seed of the think times (1)   -D  directory (.)\n",
		prog);
}

static double num(const char *what, const char *s, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "%s: invalid %s: '%s'\n", prog, what, s);
		usage(stderr);
		exit(2);
	}
	return v;
}

static int lookup(const char *what, const char *s, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	fprintf(stderr, "%s: invalid %s: '%s'\n", prog, what, s);
	usage(stderr);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c, have_k = 0;
	char *colon;

	*o = (struct opts){ .workers = 1, .secs = 2, .seed = 1, .dir = "." };
	while ((c = getopt(argc, argv, "t:p:k:m:ST:c:l:b:d:r:D:qh")) != -1) {
		switch (c) {
		case 'p':
			o->processes = 1;
			/* fall through */
		case 't':
			o->workers = (int)num("worker count", optarg, 1, MAX_WORKERS);
			break;
		case 'k':
			o->shape = (enum shape)lookup("shape", optarg, shape_names, 3);
			have_k = 1;
			break;
		case 'm':
			o->kind = (enum sync_kind)lookup("sync kind", optarg, kind_names, 3);
			break;
		case 'S':
			o->shared = 1;
			break;
		case 'T':
			o->think_us = num("think time", optarg, 0, 1e7);
			break;
		case 'c':
			o->change_s = num("change", optarg, 0, 1e5);
			break;
		case 'l':
			o->slow_us = num("slow think time", optarg, 0, 1e7);
			break;
		case 'b':
			colon = strchr(optarg, ':');
			if (!colon)
				num("bursts", optarg, 1, 0); /* exits */
			*colon = 0;
			o->burst_on_ms = num("burst on", optarg, 1, 1e5);
			o->burst_off_ms = num("burst off", colon + 1, 1, 1e5);
			break;
		case 'd':
			o->secs = num("duration", optarg, 0.01, 1e5);
			break;
		case 'r':
			o->seed = (unsigned)num("seed", optarg, 0, 4e9);
			break;
		case 'D':
			o->dir = optarg;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc || !have_k) {
		usage(stderr);
		exit(2);
	}
	if (o->shared && o->shape != SH_WAL) {
		fprintf(stderr, "%s: -S is for the wal shape\n", prog);
		exit(2);
	}
}

/* The files a worker opens, made before the clock starts. */
static int setup(const struct opts *o)
{
	char p[512];
	int i, fd;

	if (o->shape == SH_SPOOL) {
		snprintf(p, sizeof(p), "%s/tmp", o->dir);
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -1;
		snprintf(p, sizeof(p), "%s/new", o->dir);
		return mkdir(p, 0755) < 0 && errno != EEXIST ? -1 : 0;
	}
	for (i = 0; i < (o->shared ? 1 : o->workers); i++) {
		static char page[PAGE];

		snprintf(p, sizeof(p), "%s/%s.%d", o->dir, o->shape == SH_WAL ? "log" : "db", i);
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return -1;
		/* a database has its pages already */
		for (int k = 0; o->shape == SH_DELETE && k < DB_PAGES; k++)
			if (pwrite(fd, page, PAGE, (off_t)k * PAGE) != PAGE)
				return close(fd), -1;
		if (fsync(fd) < 0)
			return close(fd), -1;
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct shared *sh;
	struct worker *ws;
	uint64_t hist[BUCKETS] = { 0 }, txns = 0, after = 0, reqs = 0, errors = 0, t1;
	size_t len;
	int i, go[2], failed = 0, dirfd;
	double secs;

	parse(argc, argv, &o);
	len = sizeof(*sh) + (size_t)o.workers * sizeof(struct result);
	sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ws = calloc((size_t)o.workers, sizeof(*ws));
	if (sh == MAP_FAILED || !ws) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	if (setup(&o) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, o.dir, strerror(errno));
		return 1;
	}
	{
		char p[512];

		snprintf(p, sizeof(p), "%s%s", o.dir, o.shape == SH_SPOOL ? "/new" : "");
		dirfd = open(p, O_RDONLY | O_DIRECTORY);
	}
	/* the set-up made durable before the clock starts */
	if (dirfd < 0 || fsync(dirfd) < 0 || pipe(go) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, o.dir, strerror(errno));
		return 1;
	}
	fflush(NULL);
	for (i = 0; i < o.workers; i++) {
		ws[i] = (struct worker){ .id = i, .o = &o, .sh = sh, .gofd = go[0],
					 .dirfd = dirfd,
					 .rng = (uint64_t)o.seed * 1000003u + (uint64_t)i };
		if (!o.processes) {
			if (pthread_create(&ws[i].thread, NULL, worker_run, &ws[i]))
				failed = 1;
			continue;
		}
		ws[i].pid = fork();
		if (ws[i].pid < 0) {
			failed = 1;
		} else if (ws[i].pid == 0) {
			close(go[1]);
			worker_run(&ws[i]);
			exit(sh->res[i].errors ? 1 : 0);
		}
	}
	sh->t0 = gc_now_ns();
	close(go[1]);
	for (i = 0; i < o.workers; i++) {
		int st;

		if (!o.processes) {
			if (ws[i].thread && pthread_join(ws[i].thread, NULL))
				failed = 1;
		} else if (ws[i].pid > 0 && (waitpid(ws[i].pid, &st, 0) < 0 || !WIFEXITED(st) ||
					      WEXITSTATUS(st))) {
			failed = 1;
		}
	}
	t1 = gc_now_ns();
	for (i = 0; i < o.workers; i++) {
		txns += sh->res[i].txns;
		after += sh->res[i].after;
		reqs += sh->res[i].reqs;
		errors += sh->res[i].errors;
		for (unsigned b = 0; b < BUCKETS; b++)
			hist[b] += sh->res[i].hist[b];
		if (!o.quiet)
			printf("  worker %d: txns=%llu\n", i, (unsigned long long)sh->res[i].txns);
	}
	errors += failed && !errors;
	secs = (double)(t1 - sh->t0) / 1e9;
	printf("shapes: shape=%s workers=%d mode=%s kind=%s think_us=%g slow_us=%g bursts=%g:%g "
	       "txns=%llu reqs=%llu secs=%.3f txn_per_s=%.1f syncs_per_txn=%d "
	       "txn_p50_us=%.0f txn_p99_us=%.0f ",
	       shape_names[o.shape], o.workers, o.processes ? "processes" : "threads",
	       kind_names[o.kind], o.think_us, o.slow_us, o.burst_on_ms, o.burst_off_ms,
	       (unsigned long long)txns, (unsigned long long)reqs, secs,
	       secs > 0 ? (double)txns / secs : 0, shape_syncs[o.shape],
	       quantile(hist, txns, 0.5) / 1e3, quantile(hist, txns, 0.99) / 1e3);
	if (o.change_s > 0)
		printf("change_s=%g after_per_s=%.1f ", o.change_s,
		       secs > o.change_s ? (double)after / (secs - o.change_s) : 0);
	printf("errors=%llu\n", (unsigned long long)errors);
	return errors ? 1 : 0;
}
