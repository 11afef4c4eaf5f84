// SPDX-License-Identifier: LGPL-2.1-or-later
/* fsync_storm: many threads or processes making small writes durable, the
 * workload of the demo, tests and benchmarks. A plain program with no tie to
 * the library: it is run bare and under the preload and must behave the same. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 1024
#define MAX_SIZE (1ULL << 30)
/* Private-offset mode wraps within this many bytes in total, so a long run
 * rewrites the same blocks instead of filling the disk. */
#define SPAN_BYTES (64ULL << 20)

/*
 * Latency histogram in nanoseconds: exact below 128 ns, then 128 linear
 * sub-buckets per power of two, i.e. under 0.8% relative error. Fixed size,
 * so per-worker copies can live in a shared mapping and be summed.
 */
#define SUB_BITS 7
#define SUB_COUNT (1U << SUB_BITS)
#define HIST_BUCKETS ((64 - SUB_BITS + 1) * SUB_COUNT)

enum sync_method { SYNC_FSYNC, SYNC_FDATASYNC, SYNC_ODSYNC, SYNC_OSYNC };
static const char *const sync_names[] = { "fsync", "fdatasync", "odsync", "osync" };

struct opts {
	int workers;
	int processes;		/* fork workers instead of starting threads */
	const char *dir;
	int file_each;		/* one file per worker instead of one shared */
	size_t size;
	enum sync_method sync;
	double secs;
	uint64_t count;		/* ops per worker; 0 means run for secs */
	int append;
	int quiet;
	int keep;
};

/* One per worker, in a MAP_SHARED mapping so forked workers report back. */
struct result {
	uint64_t ops;
	uint64_t errors;
	uint64_t hist[HIST_BUCKETS];
};

struct shared {
	int stop;		/* set by the first worker that fails */
	struct result res[];
};

struct worker {
	int id;
	const struct opts *o;
	struct shared *sh;
	const char *path;
	int gofd;		/* read end of the start pipe */
	pthread_t thread;
	pid_t pid;
};

static const char *prog = "fsync_storm";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned int hist_bucket(uint64_t v)
{
	unsigned int e;

	if (v < SUB_COUNT)
		return (unsigned int)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	return (e - SUB_BITS + 1) * SUB_COUNT +
	       (unsigned int)((v >> (e - SUB_BITS)) & (SUB_COUNT - 1));
}

/* The middle of the values that fall in bucket b. */
static double hist_value(unsigned int b)
{
	unsigned int e, sub;
	double lo, width;

	if (b < SUB_COUNT)
		return b;
	e = b / SUB_COUNT + SUB_BITS - 1;
	sub = b % SUB_COUNT;
	width = ldexp(1.0, (int)(e - SUB_BITS));
	lo = (double)(SUB_COUNT + sub) * width;
	return lo + (width - 1) / 2;
}

static double hist_quantile(const uint64_t *hist, uint64_t total, double q)
{
	uint64_t rank, seen = 0;
	unsigned int b;

	if (!total)
		return 0;
	rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	for (b = 0; b < HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= rank)
			return hist_value(b);
	}
	return hist_value(HIST_BUCKETS - 1);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-t N | -p N] [-D DIR] [-f shared|each] [-s BYTES]\n"
		"       [-m fsync|fdatasync|odsync|osync] [-d SECONDS | -n COUNT] [-a] [-q] [-k]\n"
		"  -t N   N threads (default 1)          -p N  N forked processes\n"
		"  -D DIR directory for the files (.)    -f    shared storm.dat or storm.N.dat each\n"
		"  -s     write size, k/m suffixes (4096) -m    how each write is made durable\n"
		"  -d     duration in seconds (2)        -n    operations per worker instead\n"
		"  -a     append with O_APPEND           -q    only the final summary line\n"
		"  -k     keep the files\n",
		prog);
}

static void bad_option(const char *what, const char *arg)
{
	fprintf(stderr, "%s: invalid %s: '%s'\n", prog, what, arg);
	usage(stderr);
	exit(2);
}

static int parse_workers(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > MAX_WORKERS)
		bad_option("worker count (1..1024)", s);
	return (int)v;
}

static size_t parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		bad_option("size", s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		bad_option("size", s);
	if (*end == 'k' || *end == 'K') {
		v <<= 10;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v <<= 20;
		end++;
	}
	if (*end || v < 1 || v > MAX_SIZE)
		bad_option("size (1 byte to 1 GiB)", s);
	return (size_t)v;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int have_t = 0, have_p = 0, have_d = 0, c;
	char *end;

	*o = (struct opts){ .workers = 1, .dir = ".", .size = 4096,
			    .sync = SYNC_FSYNC, .secs = 2.0 };
	while ((c = getopt(argc, argv, "t:p:D:f:s:m:d:n:aqkh")) != -1) {
		switch (c) {
		case 't':
		case 'p':
			o->workers = parse_workers(optarg);
			if (c == 't')
				have_t = 1;
			else
				have_p = 1;
			break;
		case 'D':
			o->dir = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "shared"))
				o->file_each = 0;
			else if (!strcmp(optarg, "each"))
				o->file_each = 1;
			else
				bad_option("file mode (shared|each)", optarg);
			break;
		case 's':
			o->size = parse_size(optarg);
			break;
		case 'm': {
			int m;

			for (m = 0; m < 4; m++)
				if (!strcmp(optarg, sync_names[m]))
					break;
			if (m == 4)
				bad_option("sync method", optarg);
			o->sync = (enum sync_method)m;
			break;
		}
		case 'd':
			errno = 0;
			o->secs = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->secs > 0) ||
			    o->secs > 1e6)
				bad_option("duration", optarg);
			have_d = 1;
			break;
		case 'n': {
			unsigned long long n;

			errno = 0;
			n = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-' || !n)
				bad_option("count", optarg);
			o->count = n;
			break;
		}
		case 'a':
			o->append = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'k':
			o->keep = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		bad_option("argument", argv[optind]);
	if (have_t && have_p) {
		fprintf(stderr, "%s: -t and -p are exclusive\n", prog);
		usage(stderr);
		exit(2);
	}
	if (have_d && o->count) {
		fprintf(stderr, "%s: -d and -n are exclusive\n", prog);
		usage(stderr);
		exit(2);
	}
	o->processes = have_p;
}

static void fail(struct worker *w, const char *what, int err)
{
	fprintf(stderr, "%s: worker %d: %s: %s\n", prog, w->id, what,
		err ? strerror(err) : "short write");
	w->sh->res[w->id].errors++;
	__atomic_store_n(&w->sh->stop, 1, __ATOMIC_RELAXED);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	struct result *r = &w->sh->res[w->id];
	uint64_t slots, stride, slot_base, op, deadline = 0;
	int flags = O_WRONLY, fd;
	char *buf, go;
	ssize_t n;

	if (o->append)
		flags |= O_APPEND;
	if (o->sync == SYNC_ODSYNC)
		flags |= O_DSYNC;
	else if (o->sync == SYNC_OSYNC)
		flags |= O_SYNC;
	fd = open(w->path, flags);
	if (fd < 0) {
		fail(w, "open", errno);
		return NULL;
	}
	buf = malloc(o->size);
	if (!buf) {
		fail(w, "malloc", ENOMEM);
		close(fd);
		return NULL;
	}
	memset(buf, 'a' + w->id % 26, o->size);

	/* Worker-private offsets: a shared file interleaves the workers'
	 * blocks; a private file is written from its start. */
	slots = SPAN_BYTES / ((uint64_t)o->size * (uint64_t)o->workers);
	if (!slots)
		slots = 1;
	stride = o->file_each ? 1 : (uint64_t)o->workers;
	slot_base = o->file_each ? 0 : (uint64_t)w->id;

	/* Everyone starts on the same signal, the parent closing the pipe,
	 * so the timed window holds no start-up work. */
	while (read(w->gofd, &go, 1) < 0 && errno == EINTR)
		;
	if (!o->count)
		deadline = now_ns() + (uint64_t)(o->secs * 1e9);
	for (op = 0; !o->count || op < o->count; op++) {
		uint64_t t0, t1;
		off_t off;

		if (__atomic_load_n(&w->sh->stop, __ATOMIC_RELAXED))
			break;
		t0 = now_ns();
		if (o->append) {
			n = write(fd, buf, o->size);
		} else {
			off = (off_t)(((op % slots) * stride + slot_base) * o->size);
			n = pwrite(fd, buf, o->size, off);
		}
		if (n < 0 || (size_t)n != o->size) {
			fail(w, o->append ? "write" : "pwrite", n < 0 ? errno : 0);
			break;
		}
		if (o->sync == SYNC_FSYNC && fsync(fd) < 0) {
			fail(w, "fsync", errno);
			break;
		}
		if (o->sync == SYNC_FDATASYNC && fdatasync(fd) < 0) {
			fail(w, "fdatasync", errno);
			break;
		}
		t1 = now_ns();
		r->ops++;
		r->hist[hist_bucket(t1 - t0)]++;
		if (deadline && t1 >= deadline)
			break;
	}
	free(buf);
	if (close(fd) < 0)
		fail(w, "close", errno);
	return NULL;
}

static char *worker_path(const struct opts *o, int id)
{
	char *p;
	int rc;

	if (o->file_each)
		rc = asprintf(&p, "%s/storm.%d.dat", o->dir, id);
	else
		rc = asprintf(&p, "%s/storm.dat", o->dir);
	if (rc < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	return p;
}

static void free_workers(struct worker *ws, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free((char *)ws[i].path);
	free(ws);
}

/* Starts worker w; returns 0 or an errno value. */
static int start_worker(struct worker *w, int gowr)
{
	if (!w->o->processes)
		return pthread_create(&w->thread, NULL, worker_run, w);
	w->pid = fork();
	if (w->pid < 0)
		return errno;
	if (w->pid == 0) {
		int status;

		close(gowr);
		worker_run(w);
		status = w->sh->res[w->id].errors ? 1 : 0;
		free_workers(w - w->id, w->o->workers);
		/* exit, not _exit: a preloaded library's exit handlers run
		 * (its per-process report); stdio was flushed before fork. */
		exit(status);
	}
	return 0;
}

/* Waits for worker w; returns 0, or -1 if it died without saying why. */
static int join_worker(struct worker *w)
{
	int status;

	if (!w->o->processes)
		return pthread_join(w->thread, NULL) ? -1 : 0;
	while (waitpid(w->pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s: worker %d (pid %d) killed by signal %d\n",
			prog, w->id, (int)w->pid, WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status) && !w->sh->res[w->id].errors) {
		fprintf(stderr, "%s: worker %d (pid %d) exited with status %d\n",
			prog, w->id, (int)w->pid, WEXITSTATUS(status));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct shared *sh;
	struct worker *ws;
	uint64_t *hist, ops = 0, errors = 0, t_start, t_end;
	size_t shlen;
	int nfiles, created = 0, started, i, gofd[2], rc, failed = 0;
	double secs, p50, p99;

	parse_opts(argc, argv, &o);

	shlen = sizeof(*sh) + (size_t)o.workers * sizeof(struct result);
	sh = mmap(NULL, shlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	hist = calloc(HIST_BUCKETS, sizeof(*hist));
	ws = calloc((size_t)o.workers, sizeof(*ws));
	if (sh == MAP_FAILED || !hist || !ws) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}

	/* Files are created and emptied up front so workers only open them,
	 * and a bad directory fails before anything starts. */
	nfiles = o.file_each ? o.workers : 1;
	for (i = 0; i < o.workers; i++) {
		ws[i] = (struct worker){ .id = i, .o = &o, .sh = sh,
					 .path = worker_path(&o, i) };
		if (i >= nfiles)
			continue;
		rc = open(ws[i].path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (rc < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, ws[i].path, strerror(errno));
			goto setup_failed;
		}
		close(rc);
		created++;
	}

	if (pipe(gofd) < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		goto setup_failed;
	}
	fflush(NULL);
	for (started = 0; started < o.workers; started++) {
		ws[started].gofd = gofd[0];
		rc = start_worker(&ws[started], gofd[1]);
		if (rc) {
			fprintf(stderr, "%s: cannot start worker %d: %s\n", prog,
				started, strerror(rc));
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
			failed = 1;
			break;
		}
	}
	t_start = now_ns();
	close(gofd[1]);
	for (i = 0; i < started; i++)
		if (join_worker(&ws[i]))
			failed = 1;
	t_end = now_ns();
	close(gofd[0]);

	for (i = 0; i < o.workers; i++) {
		struct result *r = &sh->res[i];
		unsigned int b;

		ops += r->ops;
		errors += r->errors;
		for (b = 0; b < HIST_BUCKETS; b++)
			hist[b] += r->hist[b];
	}
	if (failed && !errors)
		errors = 1;
	secs = (double)(t_end - t_start) / 1e9;
	p50 = hist_quantile(hist, ops, 0.50) / 1e3;
	p99 = hist_quantile(hist, ops, 0.99) / 1e3;

	if (!o.quiet) {
		printf("%s: %d %s%s, %s in %s, %zu-byte %s, sync=%s\n", prog,
		       o.workers, o.processes ? "process" : "thread",
		       o.workers > 1 ? (o.processes ? "es" : "s") : "",
		       o.file_each ? "a file each" : "one shared file", o.dir,
		       o.size, o.append ? "appends" : "writes at private offsets",
		       sync_names[o.sync]);
		for (i = 0; i < o.workers && o.workers > 1; i++) {
			struct result *r = &sh->res[i];

			printf("  worker %d: ops=%llu p50_us=%.1f p99_us=%.1f\n", i,
			       (unsigned long long)r->ops,
			       hist_quantile(r->hist, r->ops, 0.50) / 1e3,
			       hist_quantile(r->hist, r->ops, 0.99) / 1e3);
		}
	}
	printf("%s: workers=%d mode=%s file=%s size=%zu sync=%s ops=%llu secs=%.3f "
	       "ops_per_s=%.1f p50_us=%.1f p99_us=%.1f errors=%llu\n",
	       prog, o.workers, o.processes ? "processes" : "threads",
	       o.file_each ? "each" : "shared", o.size, sync_names[o.sync],
	       (unsigned long long)ops, secs, secs > 0 ? (double)ops / secs : 0.0,
	       p50, p99, (unsigned long long)errors);

	for (i = 0; i < nfiles && !o.keep; i++)
		if (unlink(ws[i].path) < 0 && errno != ENOENT)
			fprintf(stderr, "%s: unlink %s: %s\n", prog, ws[i].path,
				strerror(errno));
	free_workers(ws, o.workers);
	free(hist);
	munmap(sh, shlen);
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "%s: stdout: %s\n", prog, strerror(errno));
		return 1;
	}
	return errors ? 1 : 0;

setup_failed:
	while (created > 0)
		unlink(ws[--created].path);
	free_workers(ws, o.workers);
	free(hist);
	munmap(sh, shlen);
	return 1;
}
