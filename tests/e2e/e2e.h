/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Harness shared by the end-to-end suites: a scratch directory on the real
 * disk, spawning programs under a chosen LD_PRELOAD with a hard timeout, and
 * reading the library's exit report and the spy log. */
#ifndef GC_E2E_H
#define GC_E2E_H
#include <stdbool.h>
#include <stddef.h>

#include "tests/e2e/spy.h"

#ifndef E2E_BUILD
#define E2E_BUILD "build"
#endif

/* Preload stacks, by the names e2e_preload() understands. */
#define PRE_NONE NULL
#define PRE_GC "gc"
#define PRE_SPY "outer inner"		/* bare program between the spies */
#define PRE_SPY_GC "outer gc inner"	/* the library between the spies */

struct e2e_run {
	int status;		/* raw waitpid status */
	int code;		/* exit code, or -signal */
	bool timed_out;		/* killed at the deadline */
	int pid;
	char *out;		/* captured stdout / stderr, NUL-terminated */
	char *err;
};

/* Fixtures: a fresh scratch directory per test, removed afterwards. */
void e2e_setup(void);
void e2e_teardown(void);
const char *e2e_dir(void);
/* "<scratch>/<name>", in a buffer that lives until teardown. */
const char *e2e_path(const char *name);
/* "<root>/<build>/tests/e2e/progs/<name>" and friends. */
const char *e2e_prog(const char *name);
const char *e2e_tool(const char *name);
const char *e2e_libgc(void);
/* "<root>/<build>/<name>": the tools and examples. */
const char *e2e_build_path(const char *name);
/* Fails the current test unless build/libgc.so exists. */
void e2e_need_libgc(void);

/* A tmpfs of the test's own over /dev/shm in a private mount namespace
 * (root only; false elsewhere): the segments a suite plants, corrupts or
 * locks are its own, and no other process of this user is disturbed. */
bool e2e_private_shm(void);
void e2e_private_shm_end(void);

/* LD_PRELOAD value from space-separated names: gc, outer, inner, cheat, or a
 * path. NULL for none. */
const char *e2e_preload(const char *stack);

/* Runs argv (NULL-terminated) under @stack with the extra NAME=VALUE strings
 * of @env (NULL-terminated, may be NULL), from a clean environment without
 * LD_PRELOAD, LIBGC_* or SPY_*. Kills the process group at @timeout_s. */
void e2e_run(struct e2e_run *r, const char *stack, const char *const *env,
	     int timeout_s, const char *const *argv);
void e2e_run_free(struct e2e_run *r);
/* Asserts a clean exit 0 (prints output otherwise). */
void e2e_expect_ok(const struct e2e_run *r, const char *what);
/* The differential run: @argv bare into @bare, then under the library
 * (with @env) into @gc; both exit 0 and the library's stdout is bare's.
 * The caller checks what bare must have said, and frees both. */
void e2e_run_as_bare(struct e2e_run *bare, struct e2e_run *gc, const char *const *env,
		     const char *const *argv, const char *what);
/* e2e_run_as_bare of e2e_prog(@prog) on e2e_dir() (then @arg, if any):
 * bare must print @want. */
void e2e_same_as_bare(const char *prog, const char *arg, const char *want);

/* Exit report ("libgc: pid=N key=value ..."): value of @key on the line of
 * @pid (0: summed over all lines). Returns false when the key is absent. */
bool e2e_report_get(const char *text, int pid, const char *key,
		    unsigned long long *val);
size_t e2e_report_lines(const char *text);
/* Reads a whole file into a NUL-terminated buffer ("" when missing). */
char *e2e_slurp(const char *path);

/* Loads and checks a spy log; prints violations to stderr under @what. */
void e2e_spy_check(const char *log, struct spy_summary *s, const char *what);
/* The same, silent: for runs that are meant to break the rule. */
void e2e_spy_check_quiet(const char *log, struct spy_summary *s);
/* e2e_run with SPY_LOG=e2e_spy_log() (emptied first) added to @env,
 * then e2e_spy_check on it. */
void e2e_run_spied(struct e2e_run *r, struct spy_summary *s, const char *stack,
		   const char *const *env, int timeout_s, const char *const *argv,
		   const char *what);
const char *e2e_spy_log(void);
/* Number of "key=value" value parsed from a program's stdout line. */
long e2e_out_long(const char *text, const char *key);

#endif
