// SPDX-License-Identifier: LGPL-2.1-or-later
/* Hardening seen from outside: children that ran no atfork handler, peers in
 * another pid namespace, a descriptor's own error, a stopped lock holder,
 * segments corrupted under live processes or left half made, a full member
 * table, and filesystems whose fsync does not cover every descriptor. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "journal/domain.h"
#include "policy/policy.h"
#include "tests/e2e/e2e.h"

/*
 * As in the shared suite: each test mounts a tmpfs of its own over /dev/shm
 * in a private mount namespace (root only), so the segments it corrupts,
 * plants or locks are its own, and no other process of this user (another
 * suite, a benchmark, a developer's shell) is disturbed.
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

static pid_t g_fuse_pid;		/* a FUSE daemon a test started */
static char g_fuse_mnt[4096];

static void teardown(void)
{
	if (g_fuse_pid) {
		umount2(g_fuse_mnt, MNT_DETACH);
		kill(g_fuse_pid, SIGKILL);
		waitpid(g_fuse_pid, NULL, 0);
		g_fuse_pid = 0;
	}
	if (g_isolated) {
		unlink(g_seg);
		e2e_private_shm_end();
	}
	e2e_teardown();
}

static void need_isolation(void)
{
	if (!g_isolated)
		cr_skip_test("needs root for a private /dev/shm: corrupting, planting or locking the "
			     "shared segment would disturb other processes of this user");
}

TestSuite(hardening, .init = setup, .fini = teardown, .timeout = 120);

/* Every request the outer spy saw that succeeded was covered, none failed
 * unless @fail_ok, and the spy saw at least @min_prog of them. */
static void expect_covered(const struct spy_summary *s, size_t min_prog, bool fail_ok,
			   const char *what)
{
	cr_expect(s->s_prog >= min_prog, "%s: the spy saw %zu requests, want at least %zu", what,
		  s->s_prog, min_prog);
	cr_expect_eq(s->s_violations, 0,
		     "%s: %zu of %zu requests returned 0 without a covering real call (%zu real calls)",
		     what, s->s_violations, s->s_prog, s->s_real);
	cr_expect_eq(s->s_bad, 0, "%s: %zu malformed spy records", what, s->s_bad);
	if (!fail_ok)
		cr_expect_eq(s->s_prog_fail, 0, "%s: %zu of %zu requests failed", what,
			     s->s_prog_fail, s->s_prog);
}

static size_t real_syncs(const struct spy_summary *s)
{
	return s->s_real_by_kind[SPY_FSYNC] + s->s_real_by_kind[SPY_FDATASYNC];
}

/* ---- 1. children that ran no atfork handler ---------------------------- */

struct raw_child {
	char how[16];
};

static struct raw_child raw_children[] = { { "_Fork" }, { "clone" }, { "sysfork" }, { "vfork" } };

ParameterizedTestParameters(hardening, raw_fork_child)
{
	return cr_make_param_array(struct raw_child, raw_children,
				   sizeof(raw_children) / sizeof(raw_children[0]));
}

/* _Fork(), clone() without CLONE_VM and the raw fork system call run no
 * atfork handler and leave the parent's thread id cached; a vfork child
 * runs in its parent's memory: the children's requests must still each be
 * covered by a real call, while the parent's threads keep a 50 ms
 * transaction open around them. */
ParameterizedTest(struct raw_child *c, hardening, raw_fork_child)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=50000", NULL };
	const char *argv[] = { e2e_prog("rawfork"), "-m", c->how, "-t", "3", "-k", "3", "-n", "20",
			       e2e_dir(), NULL };
	struct spy_summary s;
	struct e2e_run r;
	char what[64];

	need_isolation();
	snprintf(what, sizeof(what), "child made by %s", c->how);
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, what);
	e2e_expect_ok(&r, what);
	expect_covered(&s, 60, false, what);
	cr_log_info("%s: %s; %zu requests, %zu real calls", what, r.out, s.s_prog, real_syncs(&s));
	e2e_run_free(&r);
}

ParameterizedTestParameters(hardening, raw_fork_child_first)
{
	return cr_make_param_array(struct raw_child, raw_children,
				   sizeof(raw_children) / sizeof(raw_children[0]));
}

/* A vfork child, or a child of the others, makes the process's first
 * request: what it sets up (in its parent's memory, for vfork) must not
 * name it as the process, which groups its own requests afterwards. */
ParameterizedTest(struct raw_child *c, hardening, raw_fork_child_first)
{
	char rep[600];
	const char *env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=50000", rep, NULL };
	const char *argv[] = { e2e_prog("rawfork"), "-m", c->how, "-F", "-t", "3", "-k", "1",
			       "-n", "10", e2e_dir(), NULL };
	unsigned long long committed = 0;
	struct spy_summary s;
	struct e2e_run r;
	char what[64], *text;

	need_isolation();
	snprintf(rep, sizeof(rep), "LIBGC_REPORT=%s", e2e_path("first.report"));
	snprintf(what, sizeof(what), "first request by a child made by %s", c->how);
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, what);
	e2e_expect_ok(&r, what);
	expect_covered(&s, 20, false, what);
	text = e2e_slurp(e2e_path("first.report"));
	cr_expect(e2e_report_get(text, r.pid, "committed", &committed) && committed >= 1,
		  "%s: the parent no longer groups (committed=%llu):\n%s", what, committed, text);
	free(text);
	e2e_run_free(&r);
}

/* ---- 2. peers in another pid namespace --------------------------------- */

/* Workers in this pid namespace and in a new one (as containers sharing
 * /dev/shm are) sync on one filesystem at once, on one file and on a file
 * each. A pid read from the segment names another process, or none, on the
 * other side: no peer's liveness may be judged by it, and every request
 * must be covered. */
Test(hardening, peers_in_another_pid_namespace)
{
	/* windows longer than the look for dead peers (10 ms at least) */
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=50000", NULL };
	static const char *const layouts[] = { "shared", "each" };

	need_isolation();
	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = { e2e_prog("pidns"), e2e_prog("hammer"), "-p", "2", "-t", "2",
				       "-n", "20", e2e_path("file"), NULL, NULL };

		if (i) {	/* -e before the file */
			argv[9] = argv[8];
			argv[8] = "-e";
		}
		struct spy_summary s;
		struct e2e_run r;
		char what[96];

		snprintf(what, sizeof(what), "two pid namespaces, %s file", layouts[i]);
		e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, what);
		if (r.code == 77)
			cr_skip_test("cannot make a pid namespace: %s", r.err);
		e2e_expect_ok(&r, what);
		/* 2 copies x 2 processes x 2 threads x 20 */
		expect_covered(&s, 160, false, what);
		cr_log_info("%s: %s; %zu requests, %zu real calls", what, r.out, s.s_prog,
			    real_syncs(&s));
		e2e_run_free(&r);
	}
}

/* The same, with the second copy in a new time namespace (the same pid
 * namespace) whose monotonic clock runs a day ahead: the times the members
 * write in a segment (a failure's, a deadline) would mean another instant
 * there. Its processes stay out of the others' segment (grouping within
 * each process, said once each), and every request is covered. */
Test(hardening, peers_in_another_time_namespace)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=50000", NULL };
	const char *argv[] = { e2e_prog("pidns"), "-T", "86400", e2e_prog("hammer"), "-p", "2",
			       "-t", "2", "-n", "20", e2e_path("file"), NULL };
	struct spy_summary s;
	struct e2e_run r;

	need_isolation();
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, "two time namespaces");
	if (r.code == 77)
		cr_skip_test("cannot make a time namespace: %s", r.err);
	e2e_expect_ok(&r, "two time namespaces");
	expect_covered(&s, 160, false, "two time namespaces");
	cr_expect(strstr(r.err, "another time namespace"),
		  "the copy a day ahead joined the others' segment: %s", r.err);
	e2e_run_free(&r);
}

/* ---- 3. a descriptor's own error --------------------------------------- */

/* Threads fsync an ordinary descriptor of a file while others fsync an
 * O_PATH descriptor of it, in shared 2 ms windows. EBADF belongs to the
 * O_PATH descriptor alone: every fsync of the ordinary one succeeds (and
 * is covered), every fsync of the O_PATH one fails with EBADF, as bare. */
Test(hardening, o_path_error_stays_with_its_descriptor)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000",
					   "SPY_DELAY_US=1000", NULL };
	const char *argv[] = { e2e_prog("opath"), "-t", "3", "-n", "50", e2e_path("file"), NULL };
	struct spy_summary s;
	struct e2e_run r;

	e2e_run(&r, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(&r, "opath bare");
	e2e_run_free(&r);

	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, argv, "opath");
	cr_expect_eq(e2e_out_long(r.out, "good_ok"), 150,
		     "fsync of the ordinary descriptor took the O_PATH descriptor's error: %s",
		     r.out);
	cr_expect_eq(e2e_out_long(r.out, "path_ebadf"), 150,
		     "fsync of the O_PATH descriptor did not fail with EBADF: %s", r.out);
	e2e_expect_ok(&r, "opath");
	expect_covered(&s, 300, true, "opath");
	e2e_run_free(&r);
}

/* ---- 4. a stopped process holding the segment's lock ------------------- */

/* Forks a member of the scratch filesystem's segment that takes its lock
 * and stops itself (SIGSTOP) holding it; returns once it is stopped. It dies
 * with the test process at the latest. */
static pid_t stopped_lock_holder(void)
{
	int st;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		const char *why = "?";
		struct gc_domain *d;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		d = gc_domain_attach((uint64_t)g_dev, &why);
		if (!d) {
			fprintf(stderr, "lock holder: no segment: %s\n", why);
			_exit(1);
		}
		if (!gc_domain_lock(d))
			_exit(2);
		gc_domain_join(d, getpid());
		raise(SIGSTOP);
		gc_domain_unlock(d);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
	cr_assert(WIFSTOPPED(st), "the lock holder did not stop (status 0x%x)", st);
	return pid;
}

static void end_holder(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* A same-user member stopped while it holds the segment's lock: a process
 * that then makes 20 requests on that filesystem must not wait for the
 * lock on each of them. All succeed, all are covered, and the run ends
 * well inside 15 s (20 give-ups of 2 s each would take 40 s). */
Test(hardening, stopped_lock_holder)
{
	const char *argv[] = { e2e_prog("hammer"), "-n", "20", e2e_path("file"), NULL };
	struct spy_summary s;
	struct e2e_run r;
	pid_t holder;

	need_isolation();
	holder = stopped_lock_holder();
	e2e_run_spied(&r, &s, PRE_SPY_GC, NULL, 15, argv, "behind a stopped lock holder");
	cr_expect(!r.timed_out, "20 requests behind a stopped lock holder did not end within 15 s "
		  "(each waited for the lock?): %s", r.out);
	e2e_expect_ok(&r, "behind a stopped lock holder");
	cr_expect_eq(e2e_out_long(r.out, "ok"), 20, "%s", r.out);
	expect_covered(&s, 20, false, "behind a stopped lock holder");
	e2e_run_free(&r);
	end_holder(holder);
}

/* ---- 5. a segment corrupted under live processes ----------------------- */

enum corruption {
	CORRUPT_RUNNING,	/* j_running = 1000, over and over */
	CORRUPT_FIELDS,		/* one index or count field at a time, out of range */
	CORRUPT_RANDOM,		/* the whole segment overwritten with random bytes */
	CORRUPT_TRUNCATE,	/* the file truncated to 0 or to half, then regrown */
};

static const char *const corruption_names[] = { "j_running=1000", "one field out of range",
						"random bytes", "truncation" };

#define MEMBER_SIZE(type, m) sizeof(((type *)0)->m)
#define TXN_OFF(t) (offsetof(struct gc_domain, j_txns) + (size_t)(t) * sizeof(struct gc_txn))

struct seg_field {
	const char *f_name;
	size_t f_size;
	uint64_t f_limit;	/* first value out of range */
	bool f_count;		/* a count: 0 disagrees with the entries it counts */
};

/* The fields the protocol indexes or counts with; their offsets are found
 * per use (a transaction, a slot or an entry of it chosen at random). */
static const struct seg_field seg_fields[] = {
	{ "j_committing", MEMBER_SIZE(struct gc_domain, j_committing), GC_TXN_RING, false },
	{ "j_running", MEMBER_SIZE(struct gc_domain, j_running), GC_TXN_RING, false },
	{ "t_inodes", MEMBER_SIZE(struct gc_txn, t_inodes), GC_TXN_INODES + 1, false },
	{ "t_handles", MEMBER_SIZE(struct gc_txn, t_handles), GC_TXN_HANDLES + 1, true },
	{ "t_pending", MEMBER_SIZE(struct gc_txn, t_pending), GC_TXN_INODES + 1, true },
	{ "t_refs", MEMBER_SIZE(struct gc_txn, t_refs), GC_TXN_HANDLES + 1, true },
	{ "he_slot", MEMBER_SIZE(struct gc_hent, he_slot), GC_TXN_INODES, false },
	{ "is_handles", MEMBER_SIZE(struct gc_islot, is_handles), GC_TXN_HANDLES + 1, true },
	{ "ps_recent_n", MEMBER_SIZE(struct gc_policy_state, ps_recent_n), GC_RECENT_MAX + 1, false },
};
#define N_SEG_FIELDS (sizeof(seg_fields) / sizeof(seg_fields[0]))

static size_t seg_field_off(size_t f, unsigned int *rs)
{
	int t = rand_r(rs) % GC_TXN_RING;

	switch (f) {
	case 0: return offsetof(struct gc_domain, j_committing);
	case 1: return offsetof(struct gc_domain, j_running);
	case 2: return TXN_OFF(t) + offsetof(struct gc_txn, t_inodes);
	case 3: return TXN_OFF(t) + offsetof(struct gc_txn, t_handles);
	case 4: return TXN_OFF(t) + offsetof(struct gc_txn, t_pending);
	case 5: return TXN_OFF(t) + offsetof(struct gc_txn, t_refs);
	case 6: return TXN_OFF(t) + offsetof(struct gc_txn, t_hents) +
		       (size_t)(rand_r(rs) % 4) * sizeof(struct gc_hent) +
		       offsetof(struct gc_hent, he_slot);
	case 7: return TXN_OFF(t) + offsetof(struct gc_txn, t_islots) +
		       (size_t)(rand_r(rs) % 4) * sizeof(struct gc_islot) +
		       offsetof(struct gc_islot, is_handles);
	default: return offsetof(struct gc_domain, j_policy) +
			offsetof(struct gc_policy_state, ps_recent_n);
	}
}

/* A value no consistent segment holds in the field: at or past its limit,
 * huge, or negative when read as signed; for a count, also 0 while the
 * entries it counts are in use (a slot nobody completed must still never
 * read as success). */
static uint64_t bad_value(const struct seg_field *f, unsigned int *rs)
{
	switch (rand_r(rs) % 7) {
	case 6: return f->f_count ? 0 : f->f_limit;
	case 0: return f->f_limit;
	case 1: return f->f_limit + 1 + (uint64_t)(rand_r(rs) % 1000);
	case 2: return 0xffffffffu;
	case 3: return 0x80000000u;
	case 4: return 0x7fffffffu;
	default: return f->f_limit + ((uint64_t)rand_r(rs) << 1) % (0xffffffffu - f->f_limit);
	}
}

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* One act of @kind on the segment at its path, whichever file is there now
 * (the library may have replaced a bad one); @field: the one field to spoil
 * (-1: any, drawn each time). */
static void corrupt_once(enum corruption kind, int field, unsigned int *rs)
{
	size_t n = sizeof(struct gc_domain);
	unsigned char *p;
	struct stat st;
	int fd = open(g_seg, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (kind == CORRUPT_TRUNCATE) {
		/* gone for a while under the mappings, then zeros where it was */
		if (ftruncate(fd, rand_r(rs) % 2 ? 0 : (off_t)n / 2) == 0) {
			nap_us(1000 + rand_r(rs) % 10000);
			if (ftruncate(fd, (off_t)n) != 0)
				fprintf(stderr, "corrupter: regrow: %s\n", strerror(errno));
		}
		close(fd);
		return;
	}
	if (fstat(fd, &st) != 0 || st.st_size != (off_t)n) {
		close(fd);
		return;
	}
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	if (kind == CORRUPT_RUNNING) {
		int32_t v = 1000;

		memcpy(p + offsetof(struct gc_domain, j_running), &v, sizeof(v));
	} else if (kind == CORRUPT_RANDOM) {
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)rand_r(rs);
	} else {
		size_t f = field >= 0 ? (size_t)field : (size_t)rand_r(rs) % N_SEG_FIELDS;
		uint64_t v = bad_value(&seg_fields[f], rs);
		size_t off = seg_field_off(f, rs);

		if (seg_fields[f].f_size == 8)
			memcpy(p + off, &v, 8);
		else if (seg_fields[f].f_size == 4) {
			uint32_t v32 = (uint32_t)v;

			memcpy(p + off, &v32, 4);
		} else {
			memcpy(p + off, &v, seg_fields[f].f_size < 8 ? seg_fields[f].f_size : 8);
		}
	}
	munmap(p, n);
}

/* Forks the corrupter: from the segment's first appearance until it is
 * killed, one act of @kind every 0.5-5 ms, drawn from @seed. */
static pid_t start_corrupter(enum corruption kind, int field, unsigned int seed)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		unsigned int rs = seed;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			corrupt_once(kind, field, &rs);
			nap_us(500 + rand_r(&rs) % 4500);
		}
	}
	return pid;
}

/* Processes syncing one file and files of their own through the shared
 * segment while it is corrupted: none crashes or hangs, every request
 * succeeds (the disk is fine) and is covered by a real call. */
static void corrupt_run(enum corruption kind, int field, unsigned int seed)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=1000",
					   "SPY_DELAY_US=500", NULL };
	/* where fields are spoiled, victims die in the transactions too, so
	 * that survivors walk a dead peer's entries */
	const char *kill_opt = kind == CORRUPT_FIELDS ? "-k" : "-T";
	/* 800 ms a run: about 300 corruptions each (one every 0.5-5 ms), and
	 * the suite stays within make test's budget */
	const char *kill_ms = kind == CORRUPT_FIELDS ? "30" : "800";
	const char *shared[] = { e2e_prog("hammer"), "-p", "3", "-t", "2", "-T", "800",
				 kill_opt, kill_ms, e2e_path("file"), NULL };
	const char *each[] = { e2e_prog("hammer"), "-p", "3", "-t", "2", "-T", "800", "-e",
			       kill_opt, kill_ms, e2e_path("file"), NULL };
	struct spy_summary s;
	struct e2e_run r;
	char what[128];
	pid_t c;

	for (int layout = 0; layout < 2; layout++) {
		snprintf(what, sizeof(what), "segment corrupted (%s%s%s, seed %u), %s",
			 corruption_names[kind], field >= 0 ? ": " : "",
			 field >= 0 ? seg_fields[field].f_name : "", seed,
			 layout ? "a file each" : "one file");
		unlink(g_seg);
		c = start_corrupter(kind, field, seed + (unsigned int)layout * 7919);
		e2e_run_spied(&r, &s, PRE_SPY_GC, env, 20, layout ? each : shared, what);
		end_holder(c);
		cr_expect(!strstr(r.err, "killed by signal"), "%s: a process crashed:\n%s", what, r.err);
		e2e_expect_ok(&r, what);
		expect_covered(&s, 6, false, what);
		cr_log_info("%s: %s; %zu requests, %zu real calls", what, r.out, s.s_prog,
			    real_syncs(&s));
		e2e_run_free(&r);
	}
	unlink(g_seg);
}

/* (a) The running transaction's index far out of the ring. */
Test(hardening, corrupt_running_index)
{
	need_isolation();
	corrupt_run(CORRUPT_RUNNING, -1, 1);
}

/* (b) Each index or count field alone set out of range, over and over... */
struct field_case {
	int fc_field;
};

static struct field_case field_cases[N_SEG_FIELDS];

ParameterizedTestParameters(hardening, corrupt_one_field)
{
	for (size_t i = 0; i < N_SEG_FIELDS; i++)
		field_cases[i].fc_field = (int)i;
	return cr_make_param_array(struct field_case, field_cases, N_SEG_FIELDS);
}

ParameterizedTest(struct field_case *fc, hardening, corrupt_one_field)
{
	need_isolation();
	for (unsigned int seed = 1; seed <= 2; seed++)
		corrupt_run(CORRUPT_FIELDS, fc->fc_field, seed);
}

/* ...and one field at a time drawn at random. */
Test(hardening, corrupt_fields_fuzz)
{
	need_isolation();
	for (unsigned int seed = 1; seed <= 3; seed++)
		corrupt_run(CORRUPT_FIELDS, -1, seed);
}

/* (c) The whole segment overwritten with random bytes, over and over. */
Test(hardening, corrupt_random_bytes_fuzz)
{
	need_isolation();
	for (unsigned int seed = 1; seed <= 2; seed++)
		corrupt_run(CORRUPT_RANDOM, -1, seed);
}

/* (d) The segment's file truncated to 0 or to half under its mappings. */
Test(hardening, corrupt_truncate_fuzz)
{
	need_isolation();
	for (unsigned int seed = 1; seed <= 2; seed++)
		corrupt_run(CORRUPT_TRUNCATE, -1, seed);
}

/* ---- 6. a segment its creator never finished --------------------------- */

/* A segment file of the right size whose magic was never written (its
 * creator died between sizing and initialising it), and nobody alive using
 * it. Once a process under the library has met it, processes that come
 * later share commits again: the half-made file was replaced, not kept as
 * a reason to group privately forever. */
Test(hardening, half_created_segment_is_replaced)
{
	const char *report = e2e_path("report");
	const char *one[] = { e2e_prog("hammer"), "-n", "5", e2e_path("file"), NULL };
	const char *four[] = { e2e_prog("hammer"), "-p", "4", "-n", "8", e2e_path("file"), NULL };
	unsigned long long commits = 0, batched = 0;
	struct gc_domain *zero = calloc(1, sizeof(*zero));
	struct spy_summary s;
	struct e2e_run r;
	char *repenv, *text;
	int fd;

	need_isolation();
	cr_assert(zero);
	fd = open(g_seg, O_CREAT | O_EXCL | O_WRONLY, 0600);
	cr_assert(fd >= 0, "create %s: %s", g_seg, strerror(errno));
	cr_assert_eq(write(fd, zero, sizeof(*zero)), (ssize_t)sizeof(*zero));
	close(fd);
	free(zero);

	e2e_run(&r, PRE_GC, NULL, 20, one);
	e2e_expect_ok(&r, "first process after the half-made segment");
	e2e_run_free(&r);

	cr_assert(asprintf(&repenv, "LIBGC_REPORT=%s", report) > 0);
	{
		const char *env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000",
				      "SPY_DELAY_US=3000", repenv, NULL };

		e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, four, "four processes afterwards");
	}
	e2e_expect_ok(&r, "four processes afterwards");
	expect_covered(&s, 32, false, "four processes afterwards");
	text = e2e_slurp(report);
	cr_expect(e2e_report_get(text, 0, "commits", &commits) &&
		  e2e_report_get(text, 0, "batched", &batched), "no exit report:\n%s", text);
	/* single-threaded processes: a commit of two handles had two processes */
	cr_expect(batched > commits,
		  "four processes on one file after a half-made segment shared no commit "
		  "(commits=%llu batched=%llu):\n%s", commits, batched, r.err);
	cr_log_info("after a half-made segment: commits=%llu batched=%llu, %zu real calls for %zu requests",
		    commits, batched, real_syncs(&s), s.s_prog);
	free(text);
	free(repenv);
	e2e_run_free(&r);
}

/* ---- 7. a full member table -------------------------------------------- */

/* System calls that strace -c counted in @path ("N total"), or -1. */
static long strace_total(const char *path)
{
	char *text = e2e_slurp(path), *line, *save = NULL;
	long total = -1;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long n;
		char word[16];

		if (sscanf(line, " %ld %15s", &n, word) == 2 && !strcmp(word, "total"))
			total = n;
	}
	free(text);
	return total;
}

/* GC_MEMBERS live processes, each a member of the scratch filesystem's
 * segment after one fsync under the library, then one more process makes
 * 40 requests there. Its requests succeed and are covered (it may group
 * within itself), and it does not try to join again on every request:
 * counted by strace, its system calls stay within a fixed cost of joining
 * a few times plus a bounded number per request, where one join attempt
 * per request (a liveness check of every member each time) is at least
 * GC_MEMBERS calls per request. */
Test(hardening, full_member_table, .timeout = 90)
{
	enum { REQS = 40, PER_REQ = 40 };
	const char *counts = e2e_path("strace.out");
	char members[16], ldp[8192];
	const char *argv[] = { e2e_prog("members"), "-n", members, e2e_path("member.file"),
			       "strace", "-f", "-c", "-U", "calls,name", "-o", counts, "-E", ldp,
			       e2e_prog("hammer"), "-n", "40", e2e_path("file"), NULL };
	struct spy_summary s;
	struct e2e_run r;
	long total;

	need_isolation();
	if (system("strace -V >/dev/null 2>&1") != 0)
		cr_skip_test("strace is needed to count the system calls of the late process");
	snprintf(members, sizeof(members), "%d", GC_MEMBERS);
	snprintf(ldp, sizeof(ldp), "LD_PRELOAD=%s", e2e_preload(PRE_SPY_GC));
	e2e_run_spied(&r, &s, PRE_GC, NULL, 80, argv, "late process, full member table");
	e2e_expect_ok(&r, "late process, full member table");
	expect_covered(&s, REQS, false, "late process, full member table");
	total = strace_total(counts);
	cr_expect(total > 0, "no strace count in %s", counts);
	cr_expect(total <= 4 * GC_MEMBERS + PER_REQ * REQS,
		  "the process beyond a full member table made %ld system calls for %d requests "
		  "(bound %d): it tries to join on every request", total, REQS,
		  4 * GC_MEMBERS + PER_REQ * REQS);
	cr_log_info("full member table: %ld system calls for %d requests; %s", total, REQS, r.out);
	e2e_run_free(&r);
}

/* ---- 8. a filesystem whose fsync may not cover every descriptor --------- */

/* Starts the slow disk's FUSE daemon on a small image in the scratch
 * directory; returns the path of the file it serves, or skips. */
static const char *fuse_file(int flush_us)
{
	const char *daemon = e2e_tool("../slowdisk/slowdiskd");
	const char *ctl = e2e_path("fuse.ctl");
	char flush[16];
	struct stat st;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0)
		cr_skip_test("needs root and /dev/fuse for a FUSE filesystem");
	if (access(daemon, X_OK) != 0)
		cr_skip_test("%s is missing: build it with make (needs fuse3)", daemon);
	snprintf(g_fuse_mnt, sizeof(g_fuse_mnt), "%s", e2e_path("fuse"));
	cr_assert_eq(mkdir(g_fuse_mnt, 0755), 0, "mkdir %s: %s", g_fuse_mnt, strerror(errno));
	snprintf(flush, sizeof(flush), "%d", flush_us);
	fflush(NULL);
	g_fuse_pid = fork();
	cr_assert(g_fuse_pid >= 0);
	if (g_fuse_pid == 0) {
		int null = open("/dev/null", O_RDWR);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 0);
		dup2(null, 1);
		execl(daemon, daemon, "--image", e2e_path("fuse.img"), "--size-mb", "8",
		      "--flush-us", flush, "--ctl", ctl, g_fuse_mnt, (char *)NULL);
		_exit(127);
	}
	/* the control socket appears once the mount is ready */
	for (int i = 0; i < 1000 && stat(ctl, &st) != 0; i++) {
		if (waitpid(g_fuse_pid, NULL, WNOHANG) == g_fuse_pid) {
			g_fuse_pid = 0;
			cr_skip_test("the FUSE daemon could not mount %s", g_fuse_mnt);
		}
		nap_us(10000);
	}
	cr_assert_eq(stat(ctl, &st), 0, "the FUSE daemon did not come up in 10 s");
	return e2e_path("fuse/disk.img");
}

/* On FUSE each descriptor's fsync goes to the daemon with its own file
 * handle, and a daemon may flush only what that handle wrote: one
 * descriptor's fsync need not cover another's. Threads and processes
 * syncing one FUSE file through descriptors of their own, in windows that
 * would group them, must each get a real call of their own. */
Test(hardening, fuse_fsyncs_are_never_shared)
{
	static const char *const env[] = { "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=3000", NULL };
	const char *file = fuse_file(2000);
	const char *threads[] = { e2e_prog("hammer"), "-t", "4", "-n", "10", file, NULL };
	const char *procs[] = { e2e_prog("hammer"), "-p", "3", "-t", "2", "-n", "10", file, NULL };
	const char *const *runs[] = { threads, procs };
	static const char *const names[] = { "4 threads", "3 processes of 2 threads" };
	struct statfs sf;

	cr_assert_eq(statfs(file, &sf), 0, "statfs %s: %s", file, strerror(errno));
	cr_assert_eq((unsigned long)sf.f_type, 0x65735546UL, "%s is not on FUSE", file);
	for (int i = 0; i < 2; i++) {
		struct spy_summary s;
		struct e2e_run r;
		char what[96];

		snprintf(what, sizeof(what), "FUSE file, %s", names[i]);
		e2e_run_spied(&r, &s, PRE_SPY_GC, env, 30, runs[i], what);
		e2e_expect_ok(&r, what);
		expect_covered(&s, i ? 60 : 40, false, what);
		cr_expect_eq(real_syncs(&s), s.s_prog,
			     "%s: %zu real fsyncs for %zu requests: requests on different descriptors "
			     "shared a real call", what, real_syncs(&s), s.s_prog);
		cr_log_info("%s: %zu real calls for %zu requests", what, real_syncs(&s), s.s_prog);
		e2e_run_free(&r);
	}
}
