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

static bool private_shm(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0)
		return false;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return false;
	return mount("libgc-e2e-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		     "mode=1777,size=32m") == 0;
}

static void setup(void)
{
	struct stat st;

	e2e_setup();
	g_isolated = private_shm();
	cr_assert_eq(stat(e2e_dir(), &st), 0);
	g_dev = st.st_dev;
	gc_domain_path(g_seg, sizeof(g_seg), geteuid(), (uint64_t)g_dev);
}

static void teardown(void)
{
	if (g_isolated) {
		unlink(g_seg);
		umount2("/dev/shm", MNT_DETACH);
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

static struct raw_child raw_children[] = { { "_Fork" }, { "clone" }, { "sysfork" } };

ParameterizedTestParameters(hardening, raw_fork_child)
{
	return cr_make_param_array(struct raw_child, raw_children,
				   sizeof(raw_children) / sizeof(raw_children[0]));
}

/* _Fork(), clone() without CLONE_VM and the raw fork system call run no
 * atfork handler and leave the parent's thread id cached: the children's
 * requests must still each be covered by a real call, while the parent's
 * threads keep a 50 ms transaction open around them. */
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
