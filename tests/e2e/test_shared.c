// SPDX-License-Identifier: LGPL-2.1-or-later
/* Cross-process domains (shared segments) seen from outside: durability and
 * batching across processes, SIGKILLed participants (chaos), segments that
 * fail validation, and stale segments left by processes that all died. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "journal/domain.h"
#include "tests/e2e/e2e.h"

/*
 * Each test mounts a tmpfs of its own over /dev/shm in a private mount
 * namespace (root only): the segment of the scratch filesystem is then ours
 * alone. Other processes of this user syncing on the same filesystem (other
 * test suites, benchmarks) neither join our transactions nor see the bad
 * segments we plant, and what we leave behind vanishes with the namespace.
 */
static bool g_isolated;
static dev_t g_dev;
static char g_seg[128];

static void setup(void)
{
	struct stat st;

	e2e_setup();
	g_isolated = e2e_private_shm();
	cr_assert_eq(stat(e2e_dir(), &st), 0);
	g_dev = st.st_dev;
	gc_domain_path(g_seg, sizeof(g_seg), geteuid(), (uint64_t)g_dev);
}

static void teardown(void)
{
	/* Whatever killed processes left (ours alone when isolated). */
	if (g_isolated) {
		unlink(g_seg);
		e2e_private_shm_end();
	}
	e2e_teardown();
}

static void need_isolation(void)
{
	if (!g_isolated)
		cr_skip_test("needs root for a private /dev/shm: planting or killing at the shared "
			     "segment path would disturb other processes of this user");
}

TestSuite(shared, .init = setup, .fini = teardown, .timeout = 150);

static const char *storm_path(void)
{
	static char path[4096];
	char cwd[4000];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	snprintf(path, sizeof(path), "%s/%s/examples/fsync_storm", cwd, E2E_BUILD);
	cr_assert(access(path, X_OK) == 0, "%s is missing: build it with make first", path);
	return path;
}

static bool seg_exists(void)
{
	struct stat st;

	return lstat(g_seg, &st) == 0;
}

/* ---- who made the real call of each request ------------------------- */

struct xproc {
	size_t foreign;		/* successful requests with no adequate real call of their
				 * own process in their window: served by another process */
	size_t pids;		/* processes that made requests */
	size_t short_pids;	/* of which made fewer real calls than requests */
};

/* Can real call @r stand for request @p (same inode, nested in time)? */
static bool adequate(const struct spy_rec *p, const struct spy_rec *r)
{
	if (r->r_ret < 0 || r->r_start_ns < p->r_start_ns || r->r_end_ns > p->r_end_ns)
		return false;
	if (r->r_kind == SPY_FSYNC)
		return true;
	if (r->r_kind == SPY_FDATASYNC)
		return p->r_kind == SPY_FDATASYNC || p->r_kind == SPY_WRITE_DSYNC;
	return r->r_tid == p->r_tid && p->r_kind == r->r_kind;
}

static const struct spy_rec *g_recs;

static int by_inode_start(const void *a, const void *b)
{
	const struct spy_rec *x = &g_recs[*(const size_t *)a], *y = &g_recs[*(const size_t *)b];

	if (x->r_dev != y->r_dev)
		return x->r_dev < y->r_dev ? -1 : 1;
	if (x->r_ino != y->r_ino)
		return x->r_ino < y->r_ino ? -1 : 1;
	return x->r_start_ns < y->r_start_ns ? -1 : x->r_start_ns > y->r_start_ns;
}

static void xproc_scan(const char *log, struct xproc *x)
{
	struct { int pid; size_t prog, real; } *per = NULL;
	size_t nper = 0, nreal = 0, *idx;
	struct spy_log l;

	memset(x, 0, sizeof(*x));
	cr_assert_eq(spy_load(log, &l), 0, "cannot read %s", log);
	idx = calloc(l.l_n + 1, sizeof(*idx));
	per = calloc(l.l_n + 1, sizeof(*per));
	cr_assert(idx && per);
	for (size_t i = 0; i < l.l_n; i++) {
		const struct spy_rec *r = &l.l_recs[i];
		size_t k;

		if (r->r_role == SPY_REAL)
			idx[nreal++] = i;
		for (k = 0; k < nper && per[k].pid != r->r_pid; k++)
			;
		if (k == nper)
			per[nper++].pid = r->r_pid;
		if (r->r_role == SPY_REAL)
			per[k].real++;
		else
			per[k].prog++;
	}
	g_recs = l.l_recs;
	qsort(idx, nreal, sizeof(*idx), by_inode_start);
	for (size_t i = 0; i < l.l_n; i++) {
		const struct spy_rec *p = &l.l_recs[i];
		size_t lo = 0, hi = nreal;
		bool own = false;

		if (!spy_needs_cover(p))
			continue;
		while (lo < hi) {	/* first real call on the inode starting >= p */
			size_t mid = lo + (hi - lo) / 2;
			const struct spy_rec *r = &l.l_recs[idx[mid]];
			bool less = r->r_dev != p->r_dev ? r->r_dev < p->r_dev :
				    r->r_ino != p->r_ino ? r->r_ino < p->r_ino :
				    r->r_start_ns < p->r_start_ns;

			if (less)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < nreal && !own; lo++) {
			const struct spy_rec *r = &l.l_recs[idx[lo]];

			if (r->r_dev != p->r_dev || r->r_ino != p->r_ino ||
			    r->r_start_ns > p->r_end_ns)
				break;
			own = r->r_pid == p->r_pid && adequate(p, r);
		}
		x->foreign += !own;
	}
	for (size_t k = 0; k < nper; k++) {
		if (!per[k].prog)
			continue;
		x->pids++;
		x->short_pids += per[k].real < per[k].prog;
	}
	free(per);
	free(idx);
	spy_free(&l);
}

static size_t real_syncs(const struct spy_summary *s)
{
	return s->s_real_by_kind[SPY_FSYNC] + s->s_real_by_kind[SPY_FDATASYNC];
}

/* No process said it could not use the shared segment. */
static void expect_no_warning(const struct e2e_run *r, const char *what)
{
	cr_expect(!strstr(r->err, "no shared domain"),
		  "%s: a process did not use the shared segment:\n%s", what, r->err);
}

/* ---- one fsync_storm run between the spies ---------------------------- */

struct storm {
	int procs;
	const char *layout;	/* shared | each */
	const char *mode;	/* fsync | fdatasync | odsync */
	int count;		/* requests per process */
};

/* Runs it with the checks every run must pass: clean exit, every request
 * seen and covered, no failure, no more real calls than requests. */
static void storm_run(struct e2e_run *r, struct spy_summary *s, struct xproc *x,
		      const struct storm *w, const char *const *env, const char *what)
{
	char p[16], n[16];
	const char *argv[] = { storm_path(), "-p", p, "-D", e2e_dir(), "-f", w->layout,
			       "-m", w->mode, "-n", n, "-q", NULL };
	long want = (long)w->procs * w->count;

	snprintf(p, sizeof(p), "%d", w->procs);
	snprintf(n, sizeof(n), "%d", w->count);
	e2e_run_spied(r, s, PRE_SPY_GC, env, 60, argv, what);
	e2e_expect_ok(r, what);
	xproc_scan(e2e_spy_log(), x);
	cr_expect_eq(e2e_out_long(r->out, "ops"), want, "%s: %s", what, r->out);
	cr_expect_eq(s->s_prog, (size_t)want, "%s: the outer spy saw %zu requests, want %ld",
		     what, s->s_prog, want);
	cr_expect_eq(s->s_violations, 0, "%s: %zu requests reported durable without a covering real call",
		     what, s->s_violations);
	cr_expect_eq(s->s_prog_fail + s->s_real_fail + s->s_unexplained_fail + s->s_bad, 0,
		     "%s: failed requests %zu, failed real calls %zu, bad records %zu", what,
		     s->s_prog_fail, s->s_real_fail, s->s_bad);
	cr_expect(real_syncs(s) <= s->s_prog, "%s: %zu real calls for %zu requests", what,
		  real_syncs(s), s->s_prog);
	cr_expect_eq(s->s_real_by_kind[SPY_WRITE_SYNC] + s->s_real_by_kind[SPY_WRITE_DSYNC], 0,
		     "%s: O_DSYNC was not converted", what);
}

/* ---- 1. outside-in durability across processes ----------------------- */

static const char *const slow_fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000",
					  "SPY_DELAY_US=2000", NULL };

static void across_case(const char *const *env, int procs, const char *layout,
			const char *mode)
{
	struct storm w = { procs, layout, mode, 6 };
	struct spy_summary s;
	struct xproc x;
	struct e2e_run r;
	char what[128];

	snprintf(what, sizeof(what), "%s, %d processes, %s file, %s", env[0], procs, layout, mode);
	storm_run(&r, &s, &x, &w, env, what);
	expect_no_warning(&r, what);
	cr_expect_eq(x.pids, (size_t)procs, "%s: requests from %zu processes", what, x.pids);
	/* every process left: the last one removed the segment */
	if (g_isolated)
		cr_expect(!seg_exists(), "%s: %s left behind", what, g_seg);
	cr_log_info("%s: %zu real calls for %zu requests, %zu served by another process", what,
		    real_syncs(&s), s.s_prog, x.foreign);
	e2e_run_free(&r);
}

/* 2-16 processes, one file and a file each, every sync route, on a fast
 * device (adaptive) and a slow one with a fixed window, where transactions
 * of several processes form on every commit. */
Test(shared, durable_across_processes)
{
	static const char *const adaptive[] = { "LIBGC_POLICY=adaptive", NULL };
	static const char *const *const envs[] = { adaptive, slow_fixed };
	static const char *const layouts[] = { "shared", "each" };
	static const char *const modes[] = { "fsync", "fdatasync", "odsync" };
	static const int procs[] = { 2, 4, 8, 16 };

	for (size_t i = 0; i < 2 * 2 * 3 * 4; i++)
		across_case(envs[i / 24], procs[i % 4], layouts[i / 12 % 2], modes[i / 4 % 3]);
}

/* 8 single-threaded processes on one file with slow real calls and a 3 ms
 * window: commits must carry requests of different processes. The same
 * with LIBGC_SHARE=process: each process makes its own real calls. */
Test(shared, batching_needs_the_shared_segment)
{
	static const char *const modes[] = { "fsync", "fdatasync", "odsync" };
	const char *report = e2e_path("report");
	char *repenv;

	cr_assert(asprintf(&repenv, "LIBGC_REPORT=%s", report) > 0);
	for (size_t m = 0; m < 3; m++)
		for (int share = 0; share < 2; share++) {
			const char *env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000",
					      "SPY_DELAY_US=3000", repenv,
					      share ? "LIBGC_SHARE=user" : "LIBGC_SHARE=process",
					      NULL };
			struct storm w = { 8, "shared", modes[m], 8 };
			unsigned long long commits = 0, batched = 0;
			struct spy_summary s;
			struct xproc x;
			struct e2e_run r;
			char what[96], *text;

			snprintf(what, sizeof(what), "%s, 8 processes on one file, %s", modes[m], env[4]);
			remove(report);
			storm_run(&r, &s, &x, &w, env, what);
			text = e2e_slurp(report);
			cr_expect(e2e_report_lines(text) >= 8, "%s: %zu report lines:\n%s", what,
				  e2e_report_lines(text), text);
			cr_expect(e2e_report_get(text, 0, "commits", &commits) &&
				  e2e_report_get(text, 0, "batched", &batched), "%s: report:\n%s",
				  what, text);
			if (share) {
				expect_no_warning(&r, what);
				cr_expect(real_syncs(&s) < s.s_prog,
					  "%s: no batching: %zu real calls for %zu requests", what,
					  real_syncs(&s), s.s_prog);
				cr_expect(x.foreign > 0, "%s: no request was served by another process's real call",
					  what);
				/* single-threaded processes: a commit carrying two
				 * handles carried two processes */
				cr_expect(batched > commits, "%s: commits=%llu batched=%llu", what,
					  commits, batched);
			} else {
				cr_expect_eq(x.foreign, 0, "%s: %zu requests served by another process",
					     what, x.foreign);
				cr_expect_eq(x.short_pids, 0, "%s: %zu processes made fewer real calls than requests",
					     what, x.short_pids);
				cr_expect_eq(batched, commits, "%s: commits=%llu batched=%llu", what,
					     commits, batched);
				if (g_isolated)
					cr_expect(!seg_exists(), "%s: a segment was created", what);
			}
			cr_log_info("%s: %zu real calls for %zu requests, %zu served by another process, commits=%llu batched=%llu",
				    what, real_syncs(&s), s.s_prog, x.foreign, commits, batched);
			free(text);
			e2e_run_free(&r);
		}
	free(repenv);
}

/* ---- 2. chaos: participants SIGKILLed at any point ------------------- */

/*
 * The latency bound. A request waits for (a) its commit window (1 ms here),
 * (b) the commit ahead of it and its own: real calls of ~3 ms (SPY_DELAY_US
 * plus the disk), and (c) when a participant it depends on was killed, until
 * a survivor notices: liveness is checked every 4 x commit latency clamped to
 * 10-200 ms, and even a live but silent owner is given up on after
 * max(2 s, 20 x commit latency) = 2 s here. No request may therefore take
 * longer than the 2 s give-up plus its own real call; 1 s of margin covers
 * scheduling on a loaded 2-core machine.
 */
#define CHAOS_BOUND_US 3000000ULL

/* After a disturbance, a new set of processes still shares the segment. */
static void processes_share(const char *what, bool last_out)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000",
					   "SPY_DELAY_US=3000", NULL };
	struct storm w = { 4, "shared", "fsync", 8 };
	struct spy_summary s;
	struct xproc x;
	struct e2e_run r;

	storm_run(&r, &s, &x, &w, env, what);
	expect_no_warning(&r, what);
	cr_expect(x.foreign > 0 && real_syncs(&s) < s.s_prog,
		  "%s: no request was served by another process's real call "
		  "(%zu real calls for %zu requests)", what, real_syncs(&s), s.s_prog);
	if (g_isolated && last_out)
		cr_expect(!seg_exists(), "%s: the last process did not remove %s", what, g_seg);
	cr_log_info("%s: %zu real calls for %zu requests, %zu served by another process", what,
		    real_syncs(&s), s.s_prog, x.foreign);
	e2e_run_free(&r);
}

/* The same, the segment theirs alone: the last one out removes it. */
static void fresh_processes_share(const char *what)
{
	processes_share(what, true);
}

/* One chaos run between the spies: @kills SIGKILLs and @stops SIGSTOPs of
 * 6-8 workers; the checks every such run must pass. */
static void chaos_run(const char *const *env, int workers, int kills, int stops,
		      bool must_share, const char *what)
{
	char w[16], k[16], p[16];
	const char *argv[] = { e2e_prog("chaos"), "-D", e2e_dir(), "-w", w, "-k", k,
			       "-P", p, "-g", "80", "-S", g_seg, NULL };
	struct spy_summary s;
	struct xproc x;
	struct e2e_run r;
	long ops;

	snprintf(w, sizeof(w), "%d", workers);
	snprintf(k, sizeof(k), "%d", kills);
	snprintf(p, sizeof(p), "%d", stops);
	remove(e2e_spy_log());
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 120, argv, what);
	e2e_expect_ok(&r, what);
	cr_log_info("%s: %s", what, r.out);
	/* always shown: where the kills landed (read from the segment) */
	fprintf(stderr, "%s: %ld kills, %ld stops; victims inside the library %ld, issuing a real "
		"call for others %ld, holding a handle %ld, leading a transaction %ld, holding "
		"the lock %ld; slowest request %ld us (seed %ld)\n", what,
		e2e_out_long(r.out, "kills"), e2e_out_long(r.out, "stops"),
		e2e_out_long(r.out, "in_call"), e2e_out_long(r.out, "owner"),
		e2e_out_long(r.out, "handle"), e2e_out_long(r.out, "leader"),
		e2e_out_long(r.out, "lock"), e2e_out_long(r.out, "max_us"),
		e2e_out_long(r.out, "seed"));
	cr_expect_eq(e2e_out_long(r.out, "kills"), kills, "%s: %s", what, r.out);
	cr_expect_eq(e2e_out_long(r.out, "restarts"), kills, "%s: %s", what, r.out);
	cr_expect_eq(e2e_out_long(r.out, "stops"), stops, "%s: %s", what, r.out);
	cr_expect_eq(e2e_out_long(r.out, "stalled"), 0,
		     "%s: processes stranded behind a stopped one:\n%s", what, r.err);
	cr_expect_eq(e2e_out_long(r.out, "errors"), 0, "%s: requests failed:\n%s", what, r.err);
	cr_expect_eq(e2e_out_long(r.out, "early") + e2e_out_long(r.out, "stuck"), 0, "%s: %s",
		     what, r.out);
	cr_expect((unsigned long long)e2e_out_long(r.out, "max_us") < CHAOS_BOUND_US,
		  "%s: a request took %ld us (bound %llu us)", what,
		  e2e_out_long(r.out, "max_us"), CHAOS_BOUND_US);
	cr_expect((unsigned long long)e2e_out_long(r.out, "inflight_max_us") < CHAOS_BOUND_US,
		  "%s: a request was in flight for %ld us (bound %llu us)", what,
		  e2e_out_long(r.out, "inflight_max_us"), CHAOS_BOUND_US);
	/* the driver found the segment where the library keeps it */
	cr_expect(strstr(r.out, "segment=seen"), "%s: %s", what, r.out);
	expect_no_warning(&r, what);

	/* Every request that returned success was covered; killed processes
	 * simply left no record of the request they were in. */
	ops = e2e_out_long(r.out, "ops");
	cr_expect_eq(s.s_violations, 0, "%s: %zu requests reported durable without a covering real call",
		     what, s.s_violations);
	cr_expect_eq(s.s_prog_fail + s.s_unexplained_fail + s.s_bad + s.s_real_fail, 0,
		     "%s: failed requests %zu, failed real calls %zu, bad records %zu", what,
		     s.s_prog_fail, s.s_real_fail, s.s_bad);
	cr_expect(ops > 0 && s.s_prog >= (size_t)ops && s.s_prog <= (size_t)(ops + kills),
		  "%s: the spy saw %zu requests, the workers completed %ld", what, s.s_prog, ops);
	xproc_scan(e2e_spy_log(), &x);
	/* adaptive may find direct calls faster and stop grouping */
	if (must_share)
		cr_expect(x.foreign > 0, "%s: no request was served by another process", what);
	cr_log_info("%s: %zu requests, %zu real calls, %zu served by another process", what,
		    s.s_prog, real_syncs(&s), x.foreign);
	e2e_run_free(&r);
	remove(e2e_spy_log());
}

static const char *const chaos_fixed[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=1000",
					   "SPY_DELAY_US=3000", NULL };
static const char *const chaos_adaptive[] = { "LIBGC_POLICY=adaptive", "SPY_DELAY_US=3000",
					      NULL };

/* 260 SIGKILLs of 8 processes syncing a shared file (fsync and O_DSYNC
 * writes) and files of their own (fsync, fdatasync), a third of them aimed
 * at a process issuing a real call for others, a third at one waiting in a
 * transaction; then fresh processes still batch through the segment. */
Test(shared, chaos_kills, .timeout = 200)
{
	need_isolation();
	chaos_run(chaos_fixed, 8, 200, 0, true, "chaos, policy fixed, 200 kills");
	chaos_run(chaos_adaptive, 8, 60, 0, false, "chaos, policy adaptive, 60 kills");
	fresh_processes_share("fresh processes after the kills");
}

/* A participant stopped (SIGSTOP: alive but silent) for 6 s, once while it
 * issues a real call for others and once while it waits in a transaction:
 * the others give up on it within the bound and keep going. */
Test(shared, stopped_participant_is_given_up_on, .timeout = 100)
{
	need_isolation();
	chaos_run(chaos_fixed, 6, 0, 2, true, "two 6 s stops, policy fixed");
	fresh_processes_share("fresh processes after the stops");
}

/* ---- 3. segments that fail validation -------------------------------- */

struct bad_seg {
	char name[32];
	char reason[64];	/* part of the reason the warning must give */
	bool replaced;		/* ours but broken: a fresh segment takes its place */
};

static struct bad_seg bad_segs[] = {
	{ "random bytes", "", true },
	{ "truncated", "", true },
	{ "half-created", "", true },
	{ "other owner", "not a private regular file", false },
	{ "group-readable", "not a private regular file", false },
	{ "symlink", "cannot open the segment", false },
	{ "other version", "", true },
	{ "other device", "", true },
};

ParameterizedTestParameters(shared, bad_segment)
{
	return cr_make_param_array(struct bad_seg, bad_segs, sizeof(bad_segs) / sizeof(bad_segs[0]));
}

/* A well-formed segment image of the scratch filesystem, as the library
 * would make it: each case spoils exactly one thing. */
static struct gc_domain *good_image(void)
{
	struct gc_domain *d = calloc(1, sizeof(*d));

	cr_assert(d);
	gc_domain_init(d, (uint64_t)g_dev, true);
	d->j_magic = GC_DOM_MAGIC;
	return d;
}

static void write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, mode);

	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

struct snap {
	struct stat st;
	char link[256];
	char *bytes;		/* of the file, or of the link's target */
	struct stat target;
};

static void take_snap(struct snap *sn)
{
	memset(sn, 0, sizeof(*sn));
	cr_assert_eq(lstat(g_seg, &sn->st), 0);
	if (S_ISLNK(sn->st.st_mode)) {
		cr_assert(readlink(g_seg, sn->link, sizeof(sn->link) - 1) > 0);
		cr_assert_eq(stat(sn->link, &sn->target), 0);
		sn->bytes = e2e_slurp(sn->link);
	} else {
		sn->bytes = e2e_slurp(g_seg);
	}
}

static void expect_same_snap(const struct snap *a, const struct snap *b, const char *what)
{
	cr_expect(a->st.st_ino == b->st.st_ino && a->st.st_mode == b->st.st_mode &&
		  a->st.st_uid == b->st.st_uid && a->st.st_size == b->st.st_size &&
		  a->st.st_mtim.tv_sec == b->st.st_mtim.tv_sec &&
		  a->st.st_mtim.tv_nsec == b->st.st_mtim.tv_nsec,
		  "%s: the planted segment was changed (inode, mode, owner, size or mtime)", what);
	cr_expect(!memcmp(a->bytes, b->bytes, (size_t)(S_ISLNK(a->st.st_mode) ?
							 a->target.st_size : a->st.st_size)),
		  "%s: the planted bytes were changed", what);
	if (S_ISLNK(a->st.st_mode))
		cr_expect(!strcmp(a->link, b->link) && a->target.st_size == b->target.st_size &&
			  a->target.st_mtim.tv_nsec == b->target.st_mtim.tv_nsec &&
			  a->target.st_mtim.tv_sec == b->target.st_mtim.tv_sec,
			  "%s: the symlink or its target was changed", what);
}

/* Checks stderr: exactly one line per process, each "libgc[PID]: device
 * DEV: no shared domain (REASON...)", from the processes that made
 * requests, and nothing else. */
static void expect_warnings(const char *err, int procs, const char *reason, const char *what)
{
	char head[64];
	int pids[64], n = 0;
	const char *line = err;

	snprintf(head, sizeof(head), ": device %llx: no shared domain (",
		 (unsigned long long)g_dev);
	while (*line) {
		size_t len = strcspn(line, "\n");
		char *l = strndup(line, len), *dev;
		int pid = 0;

		cr_assert(l);
		cr_expect(sscanf(l, "libgc[%d]", &pid) == 1 && (dev = strstr(l, head)) &&
			  strstr(dev, reason), "%s: unexpected stderr line (want \"libgc[PID]%s%s...\"): %s",
			  what, head, reason, l);
		for (int i = 0; i < n; i++)
			cr_expect_neq(pids[i], pid, "%s: pid %d warned twice", what, pid);
		if (n < 64)
			pids[n++] = pid;
		free(l);
		line += len + (line[len] == '\n');
	}
	cr_expect_eq(n, procs, "%s: %d warning lines for %d processes:\n%s", what, n, procs, err);
	/* the warners are the processes that made the requests */
	{
		struct spy_log l;
		int found = 0;

		cr_assert_eq(spy_load(e2e_spy_log(), &l), 0);
		for (int i = 0; i < n; i++)
			for (size_t k = 0; k < l.l_n; k++)
				if (l.l_recs[k].r_role == SPY_PROG && l.l_recs[k].r_pid == pids[i]) {
					found++;
					break;
				}
		spy_free(&l);
		cr_expect_eq(found, n, "%s: %d of %d warning pids made requests", what, found, n);
	}
}

/* Nothing but @keep (a name in /dev/shm, may be NULL) is left there. */
static void expect_shm_only(const char *keep, const char *what)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	cr_assert(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && (!keep || strcmp(e->d_name, keep)))
			cr_expect_fail("%s: /dev/shm/%s was created", what, e->d_name);
	closedir(d);
}

ParameterizedTest(struct bad_seg *c, shared, bad_segment)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000",
					   "SPY_DELAY_US=1000", NULL };
	struct storm w = { 4, "shared", "fsync", 12 };
	size_t n = sizeof(struct gc_domain);
	struct gc_domain *img = good_image();
	const char *target = e2e_path("segment.target");
	struct snap before, after;
	struct spy_summary s;
	struct xproc x;
	struct e2e_run r;

	need_isolation();
	if (!strcmp(c->name, "random bytes")) {
		unsigned char *b = (unsigned char *)img;

		srand(4242);
		for (size_t i = 0; i < n; i++)
			b[i] = (unsigned char)rand();
		write_file(g_seg, img, n, 0600);
	} else if (!strcmp(c->name, "truncated")) {
		write_file(g_seg, img, n / 2, 0600);
	} else if (!strcmp(c->name, "half-created")) {
		/* its creator died before writing the magic */
		img->j_magic = 0;
		write_file(g_seg, img, n, 0600);
	} else if (!strcmp(c->name, "other owner")) {
		write_file(g_seg, img, n, 0600);
		cr_assert_eq(chown(g_seg, 65534, 65534), 0, "chown: %s", strerror(errno));
	} else if (!strcmp(c->name, "group-readable")) {
		write_file(g_seg, img, n, 0640);
	} else if (!strcmp(c->name, "symlink")) {
		/* a perfect segment behind the link: only the link is wrong */
		write_file(target, img, n, 0600);
		cr_assert_eq(symlink(target, g_seg), 0);
	} else if (!strcmp(c->name, "other version")) {
		img->j_version = GC_DOM_VERSION + 1;
		write_file(g_seg, img, n, 0600);
	} else {
		img->j_dev = (uint64_t)g_dev ^ 0x100;
		write_file(g_seg, img, n, 0600);
	}
	free(img);
	take_snap(&before);

	storm_run(&r, &s, &x, &w, env, c->name);
	if (c->replaced) {
		/* A broken segment of ours is never used: the first process puts
		 * a fresh one in its place, and all of them share that one (the
		 * last to leave removes it). */
		cr_expect(!strstr(r.err, "no shared domain"), "%s: %s", c->name, r.err);
		cr_expect(x.foreign > 0, "%s: the fresh segment was not shared", c->name);
		cr_expect(access(g_seg, F_OK) != 0, "%s: the broken segment is still there",
			  c->name);
		cr_log_info("%s: replaced; %zu requests, %zu real calls", c->name, s.s_prog,
			    real_syncs(&s));
		e2e_run_free(&r);
		free(before.bytes);
		return;
	}
	expect_warnings(r.err, w.procs, c->reason, c->name);
	/* each process grouped within itself: it made its own real calls */
	cr_expect_eq(x.foreign, 0, "%s: %zu requests served by another process: the bad segment was used",
		     c->name, x.foreign);
	cr_expect_eq(x.short_pids, 0, "%s: %zu processes made fewer real calls than requests",
		     c->name, x.short_pids);
	take_snap(&after);
	expect_same_snap(&before, &after, c->name);
	expect_shm_only(strrchr(g_seg, '/') + 1, c->name);
	cr_log_info("%s: %zu requests, %zu real calls, stderr:\n%s", c->name, s.s_prog,
		    real_syncs(&s), r.err);
	free(before.bytes);
	free(after.bytes);
	e2e_run_free(&r);
	cr_expect_eq(unlink(g_seg), 0);
	unlink(target);
}

/* ---- 4. stale segments ------------------------------------------------ */

/* Every process of a workload SIGKILLed while a commit is in flight: the
 * segment stays, with dead members and a transaction half done. */
/* A root process that syncs, then becomes nobody (setuid) and exits,
 * leaves the segment it was in: root's. It once named the segment to
 * remove by the user it was at exit, and removed nobody's from under a
 * nobody process still in it ("nobody=0"). */
Test(shared, a_setuid_process_leaves_the_segment_it_was_in)
{
	const char *argv[] = { e2e_prog("uidexit"), NULL };
	struct e2e_run r;

	if (geteuid() != 0)
		cr_skip_test("needs root (two users)");
	e2e_run(&r, PRE_GC, NULL, 30, argv);
	e2e_expect_ok(&r, "uidexit");
	cr_expect_str_eq(r.out, "nobody=1\n", "%s", r.err);
	e2e_run_free(&r);
}

Test(shared, stale_segment_after_killing_everyone)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000",
					   "SPY_DELAY_US=3000", NULL };
	const char *argv[] = { e2e_prog("chaos"), "-D", e2e_dir(), "-w", "6", "-A", "-S", g_seg,
			       NULL };
	struct spy_summary s;
	struct e2e_run r;
	int members = 0, alive = 0;
	struct stat st;

	need_isolation();
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, argv, "kill everyone");
	e2e_expect_ok(&r, "kill everyone");
	cr_expect_eq(e2e_out_long(r.out, "killed_all"), 6, "%s", r.out);
	cr_expect_eq(s.s_violations + s.s_prog_fail + s.s_bad, 0, "kill everyone: checker");
	cr_log_info("kill everyone: %s", r.out);
	e2e_run_free(&r);

	cr_assert_eq(stat(g_seg, &st), 0, "no segment left after killing every process");
	{
		int fd = open(g_seg, O_RDONLY);
		const struct gc_domain *d;

		cr_assert(fd >= 0);
		d = mmap(NULL, sizeof(*d), PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		cr_assert(d != MAP_FAILED);
		cr_expect_eq(d->j_magic, GC_DOM_MAGIC);
		for (int i = 0; i < GC_MEMBERS; i++)
			if (d->j_members[i]) {
				members++;
				alive += kill(d->j_members[i], 0) == 0;
			}
		cr_log_info("stale segment: %d members (%d alive), running=%d committing=%d",
			    members, alive, d->j_running, d->j_committing);
		munmap((void *)d, sizeof(*d));
	}
	cr_expect(members >= 6 && alive == 0, "stale segment: %d members, %d alive", members, alive);
	fresh_processes_share("fresh processes on a stale segment");
}

/* A segment whose only member died holding its lock. */
Test(shared, stale_segment_with_a_dead_lock_owner)
{
	int status;
	pid_t pid;

	need_isolation();
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		const char *why = NULL;
		struct gc_domain *d = gc_domain_attach((uint64_t)g_dev, &why);

		if (!d || !gc_domain_lock(d) || !gc_domain_join(d, getpid()))
			_exit(1);
		/* a transaction left running, led by us */
		d->j_running = 0;
		d->j_txns[0].t_state = T_RUNNING;
		d->j_txns[0].t_handles = 1;
		d->j_txns[0].t_leader = d->j_txns[0].t_leader_pid = getpid();
		kill(getpid(), SIGKILL);
		_exit(1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the lock holder did not die as planned (status %d)", status);
	cr_assert(seg_exists(), "no segment at %s", g_seg);
	fresh_processes_share("fresh processes after a dead lock owner");
}

/* This test process as a live member of the scratch filesystem's segment,
 * standing for another program's process. */
static struct gc_domain *member_of_segment(void)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach((uint64_t)g_dev, &why);

	cr_assert(d, "no segment: %s", why ? why : "?");
	cr_assert(gc_domain_lock(d), "the segment's lock");
	cr_assert(gc_domain_join(d, getpid()), "joining the segment");
	gc_domain_unlock(d);
	return d;
}

static void leave_segment(struct gc_domain *d)
{
	cr_assert(gc_domain_lock(d), "the segment's lock");
	gc_domain_leave(d, getpid());
	gc_domain_unlock(d);
}

/* The domain's verdict word is the adaptive policy's. A process set to a
 * fixed wait (or jbd2's rule) groups as it was told beside processes that
 * read direct calls from the word (a fast device), and writes no verdict
 * of its own into it for them. Before, it followed the word: a program
 * run with LIBGC_POLICY=fixed beside any default one on the same disk
 * made every request a direct call. */
Test(shared, a_fixed_wait_beside_a_domain_on_direct_calls)
{
	struct gc_domain *d;
	uint64_t word, until;

	need_isolation();
	/* the adaptive process: a member, its verdict direct calls for the
	 * next 1.9 s */
	d = member_of_segment();
	until = gc_now_ns() + GC_FAST_AHEAD_MAX_NS - 100 * 1000 * 1000;
	word = __atomic_load_n(&d->j_fast, __ATOMIC_RELAXED);
	__atomic_store_n(&d->j_fast, gc_fast_make(word, GC_V_DIRECT, until), __ATOMIC_RELEASE);

	processes_share("4 processes set to a fixed wait beside a domain on direct calls", false);
	word = __atomic_load_n(&d->j_fast, __ATOMIC_ACQUIRE);
	cr_expect(gc_now_ns() >= until || gc_fast_verdict(word, gc_now_ns()) == GC_V_DIRECT,
		  "the fixed processes wrote their verdict (%u) into the domain's word",
		  gc_fast_kind(word));
	leave_segment(d);
}

/* Every transaction of the ring done, each kept by the handle of a process
 * that died before it collected its result (SIGKILL), while another member
 * lives on. Nobody waits on those transactions to find the dead, and the
 * requests that find no free transaction make direct calls, which wait on
 * nothing either: before, that domain never grouped again while its live
 * member lived (a daemon beside short processes an OOM killer took). */
Test(shared, a_ring_kept_by_dead_handles_beside_a_live_member)
{
	struct gc_domain *d;
	int status;
	pid_t dead;

	need_isolation();
	dead = fork();
	cr_assert(dead >= 0);
	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, &status, 0), dead);
	d = member_of_segment();
	cr_assert(gc_domain_lock(d), "the segment's lock");
	for (int i = 0; i < GC_TXN_RING; i++) {
		struct gc_txn *t = &d->j_txns[i];

		memset(t, 0, sizeof(*t));
		t->t_seq = ++d->j_seq;
		t->t_state = T_DONE;
		t->t_handles = t->t_joined = t->t_refs = 1;
		t->t_inodes = 1;
		t->t_islots[0].is_ino = 1000 + (uint64_t)i;
		t->t_islots[0].is_handles = 1;
		t->t_islots[0].is_flags = IS_DONE;
		t->t_hents[0] = (struct gc_hent){ .he_pid = dead, .he_tid = dead, .he_used = 1 };
	}
	d->j_running = d->j_committing = GC_NONE;
	gc_domain_unlock(d);

	processes_share("a ring kept by dead handles, a live member", false);
	leave_segment(d);
}

/* A sync thread that ended is not waited for: a thread syncs and ends,
 * then the main thread syncs. Its process lives on, so nothing leaves the
 * domain at the thread's end; the leader looks for ended threads when the
 * policy tells it to wait, and decides again without them. Under the
 * adaptive head count (grouped, no probes) and under PostgreSQL's rule
 * (wait while a sibling syncs), the main thread's transaction closes at
 * once, not by its timeout. */
Test(shared, an_ended_thread_is_not_waited_for)
{
	static const char *const how[][2] = {
		{ "LIBGC_POLICY=adaptive", "LIBGC_PROBE=0" },
		{ "LIBGC_POLICY=siblings", "LIBGC_SIBLINGS=1" },
	};
	const char *argv[] = { e2e_prog("threadgone"), e2e_dir(), NULL };

	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		char rep[300], tag[32];
		const char *env[] = { how[i][0], how[i][1], "LIBGC_WAIT_US=300000", rep, NULL };
		unsigned long long now = 0, timeout = 0;
		struct e2e_run r;
		char *text;

		snprintf(tag, sizeof(tag), "report.%zu", i);
		snprintf(rep, sizeof(rep), "LIBGC_REPORT=%s", e2e_path(tag));
		e2e_run(&r, PRE_GC, env, 60, argv);
		e2e_expect_ok(&r, how[i][0]);
		text = e2e_slurp(e2e_path(tag));
		cr_expect(e2e_report_get(text, r.pid, "close_immediate", &now) &&
				  e2e_report_get(text, r.pid, "close_timeout", &timeout) &&
				  now == 2 && timeout == 0,
			  "%s: the ended thread was waited for:\n%s", how[i][0], text);
		free(text);
		e2e_run_free(&r);
	}
}
