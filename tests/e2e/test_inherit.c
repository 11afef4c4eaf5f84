// SPDX-License-Identifier: LGPL-2.1-or-later
/* Converted descriptors at the edges of the process: what exec, spawn,
 * system and fdopen hand on, which file a racing program's bytes land in,
 * that record locks never vanish, and that a write racing close is synced. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

TestSuite(inherit, .init = e2e_setup, .fini = e2e_teardown, .timeout = 90);

/* system() while another thread closes its O_DSYNC X and opens plain Y on
 * the same number: no byte meant for one file may land in the other. */
Test(inherit, exec_undo_leaves_a_reused_number_alone)
{
	const char *argv[] = { e2e_prog("inherit"), "race", e2e_dir(), NULL };
	struct e2e_run r;

	e2e_run(&r, PRE_GC, NULL, 60, argv);
	e2e_expect_ok(&r, "inherit race");
	cr_log_info("%s", r.out);
	cr_expect_gt(e2e_out_long(r.out, "same_number"), 10, "the race was not set up: %s",
		     r.out);
	cr_expect_eq(e2e_out_long(r.out, "crossed"), 0,
		     "bytes written to one file landed in the other: %s", r.out);
	e2e_run_free(&r);
}

/* posix_spawn with adddup2 of an O_CLOEXEC O_DSYNC descriptor onto 1 (how
 * Rust's Command redirects output): the bare child's fd 1 is O_DSYNC. */
Test(inherit, spawn_file_actions_dup2_keeps_the_flag)
{
	const char *argv[] = { e2e_prog("inherit"), "spawn", e2e_dir(), NULL };
	static const char *const stacks[] = { PRE_NONE, PRE_GC };

	for (size_t i = 0; i < 2; i++) {
		struct e2e_run r;

		e2e_run(&r, stacks[i], NULL, 30, argv);
		e2e_expect_ok(&r, "inherit spawn");
		cr_expect_eq(e2e_out_long(r.out, "spawn_ret"), 0, "%s", r.out);
		cr_expect(strstr(r.err, "fd=1 dsync=1"),
			  "%s: the spawned program's stdout lost O_DSYNC: %s%s",
			  stacks[i] ? "library" : "bare", r.out, r.err);
		cr_expect_eq(e2e_out_long(r.out, "parent_dsync"), 1, "%s", r.out);
		e2e_run_free(&r);
	}
}

/* A file an unprivileged user cannot reopen: the exec'd bare program gets
 * it with O_DSYNC, or the exec/spawn/system fails; never without. */
Test(inherit, unreopenable_file_is_never_inherited_unsynced)
{
	const char *argv[] = { e2e_prog("inherit"), "eacces", e2e_dir(), NULL };
	struct e2e_run r;
	long a, b, s, sp;

	if (geteuid() != 0)
		cr_skip_test("needs root to switch to an unprivileged user");
	e2e_run(&r, PRE_GC, NULL, 30, argv);
	e2e_expect_ok(&r, "inherit eacces");
	cr_log_info("%s%s", r.out, r.err);
	a = e2e_out_long(r.out, "a_exec");
	b = e2e_out_long(r.out, "b_exec");
	s = e2e_out_long(r.out, "b_system");
	sp = e2e_out_long(r.out, "b_spawn");
	/* A can be kept a real O_DSYNC description from the start. */
	cr_expect_eq(a, 0, "file created 0444: exec result %ld: %s%s", a, r.out, r.err);
	cr_expect(!strstr(r.err, "dsync=0"), "a program inherited a descriptor without O_DSYNC:\n%s",
		  r.err);
	/* B was converted, then made unreadable: the calls fail with EACCES. */
	cr_expect(b == 0 || b == 200 + 13, "b: exec result %ld", b);
	cr_expect(s == 0 || (s == -1 && e2e_out_long(r.out, "errno") == 13), "b: system %ld", s);
	cr_expect(sp == 0 || sp == 13, "b: posix_spawn %ld", sp);
	e2e_run_free(&r);
}

static void expect_lock_kept(const char *out, const char *what)
{
	const char *p = strstr(out, what);
	int ret, enolck, held;

	cr_assert(p && sscanf(p + strlen(what), ": ret=%d enolck=%d held=%d", &ret, &enolck,
			      &held) == 3, "no result for %s: %s", what, out);
	cr_expect(held == 1 || (ret != 0 && enolck),
		  "%s: the record lock disappeared (ret=%d, held=%d)", what, ret, held);
}

/* fcntl locks taken through (or on the file of) a converted descriptor
 * are still held after system(), posix_spawn() and fdopen(), or the call
 * failed with ENOLCK. */
Test(inherit, record_locks_survive_or_the_call_fails)
{
	const char *argv[] = { e2e_prog("inherit"), "locks", e2e_dir(), NULL };
	static const char *const keep[] = { "LIBGC_OSYNC=keep", NULL };
	static const char *const *envs[] = { NULL, keep };

	for (size_t i = 0; i < 2; i++) {
		struct e2e_run r;

		e2e_run(&r, PRE_GC, envs[i], 30, argv);
		e2e_expect_ok(&r, "inherit locks");
		cr_log_info("%s%s", r.out, r.err);
		expect_lock_kept(r.out, "system");
		expect_lock_kept(r.out, "spawn");
		expect_lock_kept(r.out, "\nfdopen");
		expect_lock_kept(r.out, "ofd_fdopen");
		expect_lock_kept(r.out, "other_fdopen");
		if (envs[i])
			cr_expect(!strstr(r.out, "enolck=1"), "keep mode never fails: %s", r.out);
		else if (strstr(r.out, "enolck=1"))
			cr_expect(strstr(r.err, "LIBGC_OSYNC=keep"),
				  "a call failed with ENOLCK without naming the workaround: %s", r.err);
		e2e_run_free(&r);
	}
}

/* O_DSYNC writes while another thread closes the descriptor and reopens
 * the number: every acknowledged write is followed by a real sync. */
Test(inherit, write_racing_close_is_synced)
{
	const char *argv[] = { e2e_prog("inherit"), "wrace", e2e_dir(), NULL };
	struct spy_summary s;
	struct e2e_run r;

	for (int round = 0; round < 3; round++) {
		e2e_run_spied(&r, &s, PRE_SPY_GC, NULL, 60, argv, "inherit wrace");
		e2e_expect_ok(&r, "inherit wrace");
		cr_expect_gt(s.s_prog, 100, "few synchronous writes seen: %zu", s.s_prog);
		cr_expect_eq(s.s_violations, 0, "round %d: %zu acknowledged writes without a real sync",
			     round, s.s_violations);
		e2e_run_free(&r);
	}
}

/* "inherit MODE DIR" bare, then under the library: each string of @want
 * must be in the run's stdout ("2:" before it: in its stderr). A run that
 * prints @skip_if (the kernel or the user cannot set the case up) skips
 * the test. */
static void bare_and_library(const char *mode, const char *const *want, const char *skip_if)
{
	const char *argv[] = { e2e_prog("inherit"), mode, e2e_dir(), NULL };
	static const char *const stacks[] = { PRE_NONE, PRE_GC };

	for (size_t i = 0; i < 2; i++) {
		const char *who = stacks[i] ? "library" : "bare";
		struct e2e_run r;

		e2e_run(&r, stacks[i], NULL, 30, argv);
		e2e_expect_ok(&r, mode);
		cr_log_info("%s %s: %s", mode, who, r.out);
		if (skip_if && strstr(r.out, skip_if)) {
			e2e_run_free(&r);
			cr_skip_test("inherit %s: %s here", mode, skip_if);
		}
		for (size_t k = 0; want[k]; k++) {
			bool err = !strncmp(want[k], "2:", 2);
			const char *w = err ? want[k] + 2 : want[k];

			cr_expect(strstr(err ? r.err : r.out, w), "inherit %s, %s: no \"%s\" in %s: %s%s",
				  mode, who, w, err ? "stderr" : "stdout", r.out, r.err);
		}
		e2e_run_free(&r);
	}
}

/* A converted O_DSYNC descriptor sent over a unix socket, by sendmsg and by
 * sendmmsg: the received copy is O_DSYNC in the kernel's word, as bare, so
 * a receiver writing through it (under libgc or not) writes synchronously;
 * with a record lock held, the send keeps flag and lock or fails ENOLCK. */
Test(inherit, descriptor_passed_over_a_socket_keeps_the_flag)
{
	static const char *const want[] = { "sendmsg_ret=0 received_dsync=1 sender_dsync=1",
					    "sendmmsg_ret=0 received_dsync=1 sender_dsync=1",
					    "locked_ok=1", NULL };

	bare_and_library("pass", want, NULL);
}

/* Once the process maps an io_uring (whose writes go round every wrapper),
 * every O_DSYNC description is the kernel's own again: one converted
 * before, one opened after, one opened in a fork child after. */
Test(inherit, io_uring_writes_keep_the_flag)
{
	static const char *const want[] = { "a_dsync=1 b_dsync=1", "c_dsync=1", NULL };

	bare_and_library("uring", want, "uring=unavailable");
}

/* Writes submitted asynchronously (aio_write, lio_listio, libaio's
 * io_submit) are made round every wrapper: each goes through an O_DSYNC
 * description, in the kernel's word, as bare. */
Test(inherit, asynchronous_writes_keep_the_flag)
{
	static const char *const want[] = { "aio_write=3 lio=3 io_submit=3",
					    "aio_dsync=1 lio_dsync=1 libaio_dsync=1", NULL };

	bare_and_library("aio", want, NULL);
}

/* stdio writes descriptors 1 and 2 inside libc, round every wrapper: an
 * O_DSYNC log dup2'ed onto stderr and one opened at 1 stay O_DSYNC in the
 * kernel's word, as bare, and the dup2'ed pair still shares its offset.
 * So does one written by dprintf (a stdio stream of its own). */
Test(inherit, standard_streams_keep_the_flag)
{
	static const char *const want[] = { "dup2_dsync=1 shared=1 open1=1 open1_dsync=1",
					    "dprintf_dsync=1", NULL };

	bare_and_library("stdio", want, NULL);
}

/* execveat (glibc 2.34) hands a converted O_DSYNC descriptor to a bare
 * program with its flag, as execve does. */
Test(inherit, execveat_hands_on_the_flag)
{
	/* the new program's "fd=N dsync=1" is on stderr */
	static const char *const want[] = { "execveat_exit=0", "2:dsync=1", NULL };

	bare_and_library("execveat", want, NULL);
}

/* A filesystem whose requests are never shared (ramfs here; FUSE, NFS and
 * overlayfs alike): an O_DSYNC open keeps the kernel's flag, as bare. A
 * FUSE daemon or an NFS server sees the flag at open and may honour it
 * where its fsync does less. */
Test(inherit, no_conversion_where_nothing_is_shared)
{
	static const char *const want[] = { "ramfs_dsync=1", NULL };

	bare_and_library("otherfs", want, "otherfs=unavailable");
}

/* Two processes made by clone with one descriptor table and two memories
 * (CLONE_FILES), or one memory and two tables (CLONE_VM): neither library
 * knows the other's descriptors. The library once converted an O_DSYNC
 * open in one, and the other wrote through it with no sync (or, sharing
 * the memory, dropped the entry for its own reuse of the number). Now
 * such a clone gives every conversion back first and stops converting:
 * the writer's description is O_DSYNC in the kernel's word, as bare. */
Test(inherit, processes_sharing_a_descriptor_table_keep_the_flag)
{
	static const char *const modes[] = { "parent", "child", "vm" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *argv[] = { e2e_prog("clonefiles"), e2e_dir(), modes[i], NULL };
		struct e2e_run bare, gc;

		e2e_run_as_bare(&bare, &gc, NULL, argv, modes[i]);
		cr_expect_str_eq(bare.out, "dsync=1 wrote=4096\n", "bare %s: %s", modes[i], bare.err);
		e2e_run_free(&bare);
		e2e_run_free(&gc);
	}
}

/* A vfork child runs in its parent's memory with a copy of its descriptor
 * table: its close(), dup2() or fdopen() of a converted number is its
 * own. The library once dropped the parent's entry there, and the
 * parent's O_DSYNC writes through that number then went unsynced (F_GETFL
 * showed no O_DSYNC: "getfl=0,0,0"). */
Test(inherit, a_vfork_childs_close_leaves_the_parents_conversion)
{
	e2e_same_as_bare("clonefiles", "vfork", "getfl=1,1,1 wrote=4096,4096,4096\n");
}

/* One process, one memory, two descriptor tables: a thread that calls
 * unshare(CLONE_FILES), or close_range() with CLOSE_RANGE_UNSHARE, and
 * closes its copy of a converted number there. The library once dropped
 * the entry for the whole process: the main thread's O_DSYNC writes
 * through its own copy then went unsynced ("dsync=0"). Now such a call
 * gives every conversion back first and stops converting, as a clone
 * that splits the table does. */
Test(inherit, a_thread_with_a_table_of_its_own_leaves_the_flag)
{
	e2e_same_as_bare("clonefiles", "unshare", "dsync=1 wrote=4096\n");
	e2e_same_as_bare("clonefiles", "closerange", "dsync=1 wrote=4096\n");
}
