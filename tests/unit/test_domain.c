// SPDX-License-Identifier: LGPL-2.1-or-later
/* Shared-segment protocol: creation, attachment from another process,
 * validation of bad segments (random bytes, truncated, wrong owner or mode,
 * symlink), recovery from a lock owner that died, membership and reclaim,
 * and a request whose segment is spoiled between the lock's check and use.
 * Uses made-up device numbers so real segments are never touched. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "journal/txn.h"
#include "unit.h"

GC_UNIT_GLOBALS;

static uint64_t dev;
static char path[128];

static void setup(void)
{
	/* unique per test process: pid in the high bits */
	dev = 0x7e57000000000000ULL | ((uint64_t)getpid() << 8);
	gc_domain_path(path, sizeof(path), geteuid(), dev);
	unlink(path);
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(domain, .init = setup, .fini = teardown, .timeout = 30);

static void write_file(const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, mode);

	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	fchmod(fd, mode);
	close(fd);
}

Test(domain, create_is_private_0600_and_valid)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	struct stat st;

	cr_assert_not_null(d, "attach: %s", why ? why : "?");
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	cr_expect_eq(st.st_uid, geteuid());
	cr_expect_eq(st.st_size, (off_t)sizeof(struct gc_domain));
	cr_expect_eq(d->j_magic, GC_DOM_MAGIC);
	cr_expect_eq(d->j_shared, 1);
	cr_expect_eq(d->j_dev, dev);
}

/* The segment's name and check carry the pid namespace's inode, read from
 * the link's text: the number stat gives, in this process and in a child
 * in a new pid namespace (where it differs), never 0. */
Test(domain, the_pid_namespace_is_the_inode_stat_gives)
{
	struct stat st;
	pid_t pid;
	int status;

	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	cr_expect_eq(gc_sys_pidns(), (uint64_t)st.st_ino);
	cr_expect_eq(gc_sys_pidns(), (uint64_t)st.st_ino, "asked again");
	if (unshare(CLONE_NEWPID) != 0) {
		cr_log_warn("no new pid namespace here (%s): the child case is left out",
			    strerror(errno));
		return;
	}
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct stat mine;

		/* the child's cache was copied: a fork that starts a new pid
		 * namespace must not keep the parent's (gc_sys_adopt) */
		gc_sys_adopt();
		_exit(stat("/proc/self/ns/pid", &mine) == 0 && mine.st_ino != st.st_ino &&
			      gc_sys_pidns() == (uint64_t)mine.st_ino
		      ? 0
		      : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child in a new pid namespace read another number (status %d)", status);
}

Test(domain, second_process_sees_the_same_memory)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	int st;
	pid_t pid;

	cr_assert_not_null(d);
	d->j_seq = 4242;
	pid = fork();
	if (pid == 0) {
		const char *w = NULL;
		struct gc_domain *c = gc_domain_attach(dev, &w);

		/* a fresh mapping of the same segment, not the inherited one */
		_exit(c && c != d && c->j_seq == 4242 ? (c->j_seq = 77, 0) : 1);
	}
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_expect_eq(d->j_seq, 77);
}

struct bad_case {
	const char *name;
	int kind; /* 0 random, 1 truncated, 2 empty-forever, 3 mode 0644, 4 symlink, 5 other owner */
	bool replaced; /* broken but ours: a fresh one takes its place */
};

static struct bad_case bad_cases[] = {
	{ "random bytes", 0, true }, { "truncated", 1, true }, { "empty", 2, true },
	{ "group-readable", 3, false }, { "symlink", 4, false }, { "other owner", 5, false },
};

ParameterizedTestParameters(domain, bad_segment_is_not_used)
{
	return cr_make_param_array(struct bad_case, bad_cases, ARRAY_LEN(bad_cases));
}

ParameterizedTest(struct bad_case *c, domain, bad_segment_is_not_used)
{
	size_t n = sizeof(struct gc_domain);
	unsigned char *buf = malloc(n);
	const char *why = NULL;
	struct gc_domain *d;
	size_t i;

	cr_assert_not_null(buf);
	srand(12345);
	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)rand();
	switch (c->kind) {
	case 0:
		write_file(buf, n, 0600);
		break;
	case 1: {
		/* a valid segment cut short */
		struct gc_domain *ok = gc_domain_attach(dev, &why);

		cr_assert_not_null(ok);
		cr_assert_eq(truncate(path, (off_t)n / 2), 0);
		munmap(ok, n);
		break;
	}
	case 2:
		write_file(buf, 0, 0600);
		break;
	case 3: {
		struct gc_domain *ok = gc_domain_attach(dev, &why);

		cr_assert_not_null(ok);
		cr_assert_eq(chmod(path, 0644), 0);
		break;
	}
	case 4: {
		char target[160];

		snprintf(target, sizeof(target), "%s.target", path);
		unlink(target);
		cr_assert_not_null(gc_domain_attach(dev, &why));
		cr_assert_eq(rename(path, target), 0);
		cr_assert_eq(symlink(target, path), 0);
		break;
	}
	case 5:
		if (geteuid() != 0)
			cr_skip_test("needs root to chown the segment to another user");
		write_file(buf, 0, 0600);
		cr_assert_eq(truncate(path, (off_t)n), 0);
		cr_assert_eq(chown(path, 65534, 65534), 0);
		break;
	}
	why = NULL;
	d = gc_domain_attach(dev, &why);
	if (c->replaced) {
		/* never the broken memory: a fresh, valid segment at its name */
		cr_expect_not_null(d, "%s: not replaced (%s)", c->name, why ? why : "?");
		if (d) {
			cr_expect_eq(d->j_magic, GC_DOM_MAGIC, "%s", c->name);
			cr_expect(gc_domain_check(d), "%s", c->name);
			cr_expect_eq(d->j_seq, 0, "%s: old contents kept", c->name);
		}
	} else {
		cr_expect_null(d, "%s: a bad segment was accepted", c->name);
		cr_expect_not_null(why, "%s: no reason given", c->name);
	}
	if (c->kind == 4) {
		char target[160];

		snprintf(target, sizeof(target), "%s.target", path);
		unlink(target);
	}
	free(buf);
}

Test(domain, dead_lock_owner_is_recovered)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	uint32_t gen;
	int st;
	pid_t pid;

	cr_assert_not_null(d);
	d->j_running = 1;
	d->j_txns[1].t_state = T_RUNNING;
	gen = d->j_gen;
	pid = fork();
	if (pid == 0) {
		gc_domain_lock(d);
		kill(getpid(), SIGKILL); /* dies holding the lock */
		_exit(0);
	}
	waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st));
	cr_assert(gc_domain_lock(d), "lock not recovered");
	cr_expect_eq(d->j_gen, gen + 1, "generation not bumped");
	cr_expect_eq(d->j_recoveries, 1);
	cr_expect_eq(d->j_running, GC_NONE);
	cr_expect_eq(d->j_txns[1].t_state, T_FREE);
	gc_domain_unlock(d);
	/* and it keeps working */
	cr_assert(gc_domain_lock(d));
	gc_domain_unlock(d);
}

/* A peer writes j_committing out of range after the lock's check: every use
 * reads it as RING_IX of it, and that transaction (here the running one,
 * never closed, so past the give-up bound) is detached. The detach must
 * clear the index it was read from, or the request goes round the protocol
 * with the lock held for as long as the scribble stays. */
Test(domain, committing_index_spoiled_after_the_check)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	char file[160];
	struct stat st;
	int fd, ws = 0, waited;
	pid_t pid;

	cr_assert_not_null(d, "attach: %s", why ? why : "?");
	snprintf(file, sizeof(file), "%s.file", path);
	fd = open(file, O_CREAT | O_RDWR | O_TRUNC, 0600);
	cr_assert(fd >= 0, "create %s: %s", file, strerror(errno));
	unlink(file);
	cr_assert_eq(fstat(fd, &st), 0);
	gc_config_defaults(&gc_cfg);
	gc_cfg.c_policy.pc_kind = GC_POL_FIXED;
	gc_cfg.c_policy.pc_wait_ns = 1 * MS;
	pid = fork();
	if (pid == 0) {
		struct gc_handle h = { .h_fd = fd, .h_own = INT_MIN, .h_dom = d,
				       .h_tid = gc_gettid(), .h_pid = gc_getpid() };
		bool owner = false;
		int r;

		if (!gc_domain_lock(d))
			_exit(2);
		if (!gc_handle_join(&h, (uint64_t)st.st_ino, false, false, false, gc_now_ns()))
			_exit(3);
		/* the scribble, after gc_domain_check: RING_IX names the running one */
		d->j_committing = GC_TXN_RING + d->j_running;
		r = gc_handle_collect(&h, (uint64_t)st.st_ino, &owner);
		_exit(r == 0 || r == GC_ORPHAN ? 0 : 4);
	}
	cr_assert(pid > 0);
	/* 3 s: past every give-up bound (2 s), which a request going round
	 * with the lock held never meets */
	for (waited = 0; waited < 300; waited++) {
		if (waitpid(pid, &ws, WNOHANG) == pid)
			break;
		usleep(10000);
	}
	if (waited == 300) {
		kill(pid, SIGKILL);
		waitpid(pid, &ws, 0);
	}
	close(fd);
	cr_assert(WIFEXITED(ws), "the request never returned (%s)",
		  WIFSIGNALED(ws) ? strsignal(WTERMSIG(ws)) : "?");
	cr_expect_eq(WEXITSTATUS(ws), 0, "the request failed (%d)", WEXITSTATUS(ws));
}

/* A peer writes a transaction's inode count far out of range after the
 * lock's check: a join reads it bounded, finds the slots full and is
 * refused (the request then makes its own real call) instead of walking
 * and writing past the slots. */
Test(domain, inode_count_spoiled_after_the_check)
{
	struct gc_domain *d = gc_domain_private(dev);
	struct gc_handle a = { .h_fd = -1, .h_own = INT_MIN, .h_dom = d, .h_tid = 11,
			       .h_pid = 12 };
	struct gc_handle b = a;

	cr_assert_not_null(d);
	gc_config_defaults(&gc_cfg);
	gc_cfg.c_policy.pc_kind = GC_POL_FIXED;
	cr_assert(gc_domain_lock(d));
	cr_assert(gc_handle_join(&a, 1001, false, false, false, gc_now_ns()));
	a.h_txn->t_inodes = 0x7fffffff;
	b.h_tid = 13;
	cr_expect_not(gc_handle_join(&b, 1002, false, false, false, gc_now_ns()),
		      "a join past a spoiled inode count");
	cr_expect_eq(a.h_txn->t_inodes, 0x7fffffff, "nothing written past the slots");
	gc_domain_unlock(d);
	munmap(d, sizeof(*d));
}

Test(domain, members_reaped_and_stale_segment_reclaimed)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	uint32_t gen;
	int st;
	pid_t pid;

	cr_assert_not_null(d);
	pid = fork();
	if (pid == 0) {
		gc_domain_lock(d);
		gc_domain_join(d, getpid());
		d->j_running = 2;
		d->j_txns[2].t_state = T_RUNNING;
		gc_domain_unlock(d);
		_exit(0); /* leaves without saying so */
	}
	waitpid(pid, &st, 0);
	gen = d->j_gen;
	cr_assert(gc_domain_lock(d));
	/* the only member is dead: joining resets the stale state */
	cr_assert(gc_domain_join(d, getpid()));
	cr_expect_eq(d->j_reclaims, 1);
	cr_expect_eq(d->j_gen, gen + 1);
	cr_expect_eq(d->j_running, GC_NONE);
	/* the dead pid is gone from the table, we are in it */
	{
		int i, me = 0, dead = 0;

		for (i = 0; i < GC_MEMBERS; i++) {
			me += d->j_members[i] == getpid();
			dead += d->j_members[i] == pid;
		}
		cr_expect_eq(me, 1);
		cr_expect_eq(dead, 0);
	}
	cr_expect(gc_domain_leave(d, getpid()), "last member should be told so");
	gc_domain_unlock(d);
}

Test(domain, live_members_are_not_reclaimed)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	int p[2], st;
	char c;
	pid_t pid;

	cr_assert_not_null(d);
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		gc_domain_lock(d);
		gc_domain_join(d, getpid());
		gc_domain_unlock(d);
		close(p[1]);
		read(p[0], &c, 1); /* stay alive until the parent is done */
		_exit(0);
	}
	close(p[0]);
	usleep(100000);
	cr_assert(gc_domain_lock(d));
	cr_assert(gc_domain_join(d, getpid()));
	cr_expect_eq(d->j_reclaims, 0, "a live member's segment was reset");
	cr_expect_not(gc_domain_leave(d, getpid()), "a member is still alive");
	gc_domain_unlock(d);
	close(p[1]);
	waitpid(pid, &st, 0);
}

/* A member that died without leaving costs whoever joins after it a
 * kill() only while no live member was found before it; the table's room
 * and the last one to leave reap the rest. (Every join asked every member:
 * eight short processes in a loop each made a kill() per departed one.) */
Test(domain, a_join_asks_no_member_past_a_live_one)
{
	const char *why = NULL;
	struct gc_domain *d = gc_domain_attach(dev, &why);
	int p[2], st, i, dead_left = 0;
	pid_t live, dead;
	char c;

	cr_assert_not_null(d);
	cr_assert_eq(pipe(p), 0);
	live = fork();
	if (live == 0) {
		close(p[1]);
		read(p[0], &c, 1); /* alive until the parent is done */
		_exit(0);
	}
	close(p[0]);
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, &st, 0);
	cr_assert(gc_domain_lock(d));
	memset(d->j_members, 0, sizeof(d->j_members));
	d->j_members[0] = live;
	d->j_members[1] = dead;
	cr_assert(gc_domain_join(d, getpid()));
	cr_expect_eq(d->j_members[1], dead, "a member past a live one was asked (and reaped)");
	cr_expect_eq(d->j_reclaims, 0);
	/* no room: the dead make some */
	for (i = 2; i < GC_MEMBERS; i++)
		if (d->j_members[i] != getpid())
			d->j_members[i] = dead;
	cr_assert(gc_domain_leave(d, getpid()) == false, "a member is alive");
	for (i = 0; i < GC_MEMBERS; i++)
		if (!d->j_members[i])
			d->j_members[i] = dead;
	cr_assert(gc_domain_join(d, getpid()), "a full table of the dead had no room");
	for (i = 0; i < GC_MEMBERS; i++)
		dead_left += d->j_members[i] == dead;
	cr_expect_eq(dead_left, 0, "%d dead members left after a join that needed room", dead_left);
	/* the last to leave is told so once the live one is gone */
	close(p[1]);
	waitpid(live, &st, 0);
	d->j_members[5] = dead;
	cr_expect(gc_domain_leave(d, getpid()), "the last live member leaving was not told so");
	for (i = 0; i < GC_MEMBERS; i++)
		cr_expect_eq(d->j_members[i], 0, "member %d left behind: %d", i, d->j_members[i]);
	gc_domain_unlock(d);
}

Test(domain, private_domain_is_not_shared)
{
	struct gc_domain *d = gc_domain_private(dev);
	struct stat st;

	cr_assert_not_null(d);
	cr_expect_eq(d->j_shared, 0);
	cr_expect_neq(stat(path, &st), 0, "a private domain created a segment");
}

/* A real sync that fails with EIO or EROFS fails the requests of the domain
 * that began before it (gc_domain_held_result), and no later one; other
 * errors are a descriptor's own and fail no one else. A failure time still
 * to come is a peer's scribble: it fails nothing, and the next real failure
 * replaces it. */
Test(domain, a_failed_real_sync_fails_the_requests_in_flight)
{
	struct gc_domain *d = gc_domain_private(dev);
	uint64_t before, after;

	cr_assert_not_null(d);
	before = gc_now_ns();
	cr_expect_eq(gc_domain_held_result(d, before, 0), 0, "no failure yet");
	gc_domain_note_failure(d, -EBADF);
	gc_domain_note_failure(d, -ENOSPC);
	cr_expect_eq(gc_domain_held_result(d, before, 0), 0, "a descriptor's error is its own");
	gc_domain_note_failure(d, -EIO);
	after = gc_now_ns() + 1;
	cr_expect_eq(gc_domain_held_result(d, before, 0), -EIO, "in flight during an EIO");
	cr_expect_eq(gc_domain_held_result(d, before, -ENOSPC), -ENOSPC, "its own error stays");
	cr_expect_eq(gc_domain_held_result(d, after, 0), 0, "began after the failure");
	gc_domain_note_failure(d, -EROFS);
	cr_expect_eq(gc_domain_held_result(d, after, 0), -EROFS);

	d->j_fail_ns = gc_now_ns() + 3600 * GC_NSEC_PER_SEC;
	d->j_fail_err = 12345;
	after = gc_now_ns();
	cr_expect_eq(gc_domain_held_result(d, after, 0), 0, "a scribbled future time fails nothing");
	gc_domain_note_failure(d, -EIO);
	cr_expect_leq(d->j_fail_ns, gc_now_ns(), "the next failure replaces the scribble");
	d->j_fail_err = 12345;
	cr_expect_eq(gc_domain_held_result(d, after, 0), -EIO, "a scribbled errno reads as EIO");
	munmap(d, sizeof(*d));
}

/* The direct path's word: a verdict holds until its time and no further
 * ahead than the policy gives; a failure noted between two reads of it is
 * seen, and leaves the verdict as it was; its own errors are not counted. */
Test(domain, the_direct_paths_word)
{
	struct gc_domain *d = gc_domain_private(dev);
	uint64_t now = gc_now_ns(), w0, w1;

	cr_assert_not_null(d);
	cr_expect_eq(gc_fast_verdict(d->j_fast, now), GC_V_ASK, "a new domain asks");
	d->j_fast = gc_fast_make(d->j_fast, GC_V_DIRECT, now + 100 * GC_NSEC_PER_MSEC);
	cr_expect_eq(gc_fast_verdict(d->j_fast, now), GC_V_DIRECT);
	cr_expect_eq(gc_fast_verdict(d->j_fast, now + 101 * GC_NSEC_PER_MSEC), GC_V_ASK,
		     "past its time");
	w0 = d->j_fast;
	gc_domain_note_failure(d, -EBADF);
	cr_expect_not(gc_fast_failed(w0, d->j_fast), "a descriptor's error is not the filesystem's");
	gc_domain_note_failure(d, -EIO);
	w1 = d->j_fast;
	cr_expect(gc_fast_failed(w0, w1), "an EIO between the reads");
	cr_expect_eq(gc_fast_verdict(w1, now), GC_V_DIRECT, "the verdict stays");
	cr_expect_eq(gc_domain_fail_err(d), -EIO);
	for (int i = 0; i < 0x4000; i++)
		gc_domain_note_failure(d, -EROFS);
	cr_expect_not(gc_fast_failed(w1, d->j_fast), "the count wraps after 16384 (no request lasts that long)");
	cr_expect_eq(gc_domain_fail_err(d), -EROFS);
	d->j_fast = gc_fast_make(d->j_fast, GC_V_GROUP, now + 3600 * GC_NSEC_PER_SEC);
	cr_expect_eq(gc_fast_verdict(d->j_fast, now), GC_V_ASK,
		     "an hour ahead is a peer's scribble, not a verdict");
	munmap(d, sizeof(*d));
}

/* A peer scribbles the running and committing indexes while a process
 * checks the segment: the check reads each once, so an index that passed
 * its range test is the one it follows (it read them again, and a value
 * changed in between sent it far past the ring). */
static volatile int flip_stop;

static void *flipper(void *arg)
{
	struct gc_domain *d = arg;

	while (!flip_stop) {
		__atomic_store_n(&d->j_running, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&d->j_committing, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&d->j_running, INT_MAX - 7, __ATOMIC_RELAXED);
		__atomic_store_n(&d->j_committing, INT_MAX - 3, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(domain, check_follows_the_index_it_tested)
{
	struct gc_domain *d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_t t;
	uint64_t end;
	long checks = 0;

	cr_assert_neq(d, MAP_FAILED);
	gc_domain_init(d, 1, true);
	d->j_txns[0].t_state = T_RUNNING;
	d->j_txns[1].t_state = T_COMMITTING;
	flip_stop = 0;
	cr_assert_eq(pthread_create(&t, NULL, flipper, d), 0);
	end = gc_now_ns() + 300 * GC_NSEC_PER_MSEC;
	while (gc_now_ns() < end) {
		(void)gc_domain_check(d);
		checks++;
	}
	flip_stop = 1;
	pthread_join(t, NULL);
	cr_log_info("%ld checks", checks);
	munmap(d, sizeof(*d));
}
