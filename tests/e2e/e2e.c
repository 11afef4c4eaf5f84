// SPDX-License-Identifier: LGPL-2.1-or-later
/* Harness shared by the end-to-end suites: scratch directory, spawning under
 * LD_PRELOAD with a deadline, exit report and spy log helpers. The runner is
 * started from the project root; paths are made absolute from there. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

extern char **environ;

static char g_root[4096];
static char g_dir[4096];
static int g_seq;

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	cr_assert(n >= 0, "out of memory");
	return s;	/* lives as long as the test process */
}

void e2e_setup(void)
{
	/* E2E_DIR_BASE: run on another filesystem (tests/crash/fs.sh) */
	const char *base = getenv("E2E_DIR_BASE");
	char tmpl[512];

	snprintf(tmpl, sizeof(tmpl), "%s/libgc-e2e.XXXXXX", base && *base ? base : "/var/tmp");
	cr_assert(getcwd(g_root, sizeof(g_root)), "getcwd: %s", strerror(errno));
	cr_assert(mkdtemp(tmpl), "mkdtemp in %s: %s", tmpl, strerror(errno));
	snprintf(g_dir, sizeof(g_dir), "%s", tmpl);
	signal(SIGPIPE, SIG_IGN);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

void e2e_teardown(void)
{
	const char *spy = getenv("E2E_SPY_DIR");

	if (g_dir[0] && getenv("E2E_KEEP") == NULL) {
		nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		if (spy && *spy) {
			remove(e2e_spy_log());
			remove(xasprintf("%s.aborted", e2e_spy_log()));
		}
	} else if (g_dir[0]) {
		fprintf(stderr, "e2e: kept %s%s%s\n", g_dir, spy && *spy ? " and " : "",
			spy && *spy ? e2e_spy_log() : "");
	}
}

const char *e2e_dir(void)
{
	return g_dir;
}

const char *e2e_path(const char *name)
{
	return xasprintf("%s/%s", g_dir, name);
}

const char *e2e_prog(const char *name)
{
	return xasprintf("%s/%s/tests/e2e/progs/%s", g_root, E2E_BUILD, name);
}

const char *e2e_tool(const char *name)
{
	return xasprintf("%s/%s/tests/e2e/%s", g_root, E2E_BUILD, name);
}

const char *e2e_build_path(const char *name)
{
	return xasprintf("%s/%s/%s", g_root, E2E_BUILD, name);
}

const char *e2e_libgc(void)
{
	return xasprintf("%s/%s/libgc.so", g_root, E2E_BUILD);
}

void e2e_need_libgc(void)
{
	cr_assert(access(e2e_libgc(), R_OK) == 0,
		  "%s is missing: build it with make first", e2e_libgc());
}

const char *e2e_preload(const char *stack)
{
	char *out = NULL, *copy, *tok, *save = NULL;

	if (!stack)
		return NULL;
	copy = xasprintf("%s", stack);
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		const char *p;

		if (!strcmp(tok, "gc")) {
			e2e_need_libgc();
			p = e2e_libgc();
		} else if (!strcmp(tok, "outer")) {
			p = e2e_tool("spy_outer.so");
		} else if (!strcmp(tok, "inner")) {
			p = e2e_tool("spy_inner.so");
		} else if (!strcmp(tok, "cheat")) {
			p = e2e_tool("cheat.so");
		} else {
			p = tok;
		}
		cr_assert(access(p, R_OK) == 0, "preload %s is missing", p);
		out = out ? xasprintf("%s %s", out, p) : xasprintf("%s", p);
	}
	return out;
}

char *e2e_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return xasprintf("%s", "");
	{
		FILE *m = open_memstream(&buf, &len);
		char chunk[4096];
		size_t n;

		cr_assert(m, "open_memstream");
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, m);
		fclose(m);
	}
	fclose(f);
	return buf;
}

static bool env_filtered(const char *kv)
{
	return !strncmp(kv, "LD_PRELOAD=", 11) || !strncmp(kv, "LIBGC_", 6) ||
	       !strncmp(kv, "SPY_", 4) || !strncmp(kv, "CHEAT_", 6);
}

void e2e_run(struct e2e_run *r, const char *stack, const char *const *env,
	     int timeout_s, const char *const *argv)
{
	const char *preload = e2e_preload(stack);
	const char *outp, *errp;
	struct timespec t0, now;
	size_t n = 0, k = 0;
	char **envp;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	g_seq++;
	outp = xasprintf("%s/.out.%d", g_dir, g_seq);
	errp = xasprintf("%s/.err.%d", g_dir, g_seq);
	for (char **e = environ; *e; e++)
		n++;
	for (const char *const *e = env; e && *e; e++)
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	cr_assert(envp);
	for (char **e = environ; *e; e++)
		if (!env_filtered(*e))
			envp[k++] = *e;
	if (preload)
		envp[k++] = xasprintf("LD_PRELOAD=%s", preload);
	for (const char *const *e = env; e && *e; e++)
		envp[k++] = (char *)*e;
	envp[k] = NULL;

	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		setpgid(0, 0);
		/* If the test process dies (Criterion's own timeout), so do we. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		close(o);
		close(e);
		signal(SIGPIPE, SIG_DFL);
		execve(argv[0], (char *const *)argv, envp);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	r->pid = pid;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t w = waitpid(pid, &r->status, WNOHANG);
		struct timespec nap = { 0, 2 * 1000 * 1000 };

		if (w == pid)
			break;
		cr_assert(w == 0, "waitpid: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= timeout_s) {
			r->timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &r->status, 0);
			break;
		}
		nanosleep(&nap, NULL);
	}
	/* Whatever the program forked must not outlive the test. */
	kill(-pid, SIGKILL);
	free(envp);
	r->code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) :
		  WIFSIGNALED(r->status) ? -WTERMSIG(r->status) : -1;
	r->out = e2e_slurp(outp);
	r->err = e2e_slurp(errp);
	unlink(outp);
	unlink(errp);
}

void e2e_run_free(struct e2e_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

void e2e_expect_ok(const struct e2e_run *r, const char *what)
{
	cr_expect(!r->timed_out && r->code == 0,
		  "%s: %s (code %d)\n--- stdout:\n%s--- stderr:\n%s", what,
		  r->timed_out ? "timed out (hang)" : "failed", r->code, r->out,
		  r->err);
}

void e2e_run_as_bare(struct e2e_run *bare, struct e2e_run *gc, const char *const *env,
		     const char *const *argv, const char *what)
{
	e2e_run(bare, PRE_NONE, NULL, 30, argv);
	e2e_expect_ok(bare, "bare");
	e2e_run(gc, PRE_GC, env, 30, argv);
	e2e_expect_ok(gc, "libgc");
	cr_expect_str_eq(gc->out, bare->out, "libgc %s: %s%s", what, gc->out, gc->err);
}

void e2e_same_as_bare(const char *prog, const char *arg, const char *want)
{
	const char *argv[] = { e2e_prog(prog), e2e_dir(), arg, NULL };
	struct e2e_run bare, gc;

	e2e_run_as_bare(&bare, &gc, NULL, argv, prog);
	cr_expect_str_eq(bare.out, want, "bare %s: %s", prog, bare.err);
	e2e_run_free(&bare);
	e2e_run_free(&gc);
}

/* The line of @pid, or each line in turn when @pid is 0. */
bool e2e_report_get(const char *text, int pid, const char *key,
		    unsigned long long *val)
{
	char needle[128];
	bool found = false;
	const char *line;

	*val = 0;
	snprintf(needle, sizeof(needle), " %s=", key);
	for (line = text; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *l = strstr(line, "libgc: pid=");

		if (l && l < line + len) {
			int lpid = atoi(l + 11);

			if (!pid || lpid == pid) {
				char *copy = strndup(line, len), *hit;

				hit = strstr(copy, needle);
				if (hit) {
					*val += strtoull(hit + strlen(needle), NULL, 10);
					found = true;
				}
				free(copy);
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return found;
}

size_t e2e_report_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, "libgc: pid=")); p++)
		n++;
	return n;
}

void e2e_spy_check(const char *log, struct spy_summary *s, const char *what)
{
	struct spy_log l;
	int err = spy_load(log, &l);

	cr_assert(err == 0, "%s: cannot read spy log %s: %s", what, log,
		  strerror(-err));
	if (spy_check(&l, s, stderr, 20) || s->s_unexplained_fail || s->s_bad) {
		fprintf(stderr, "%s: ", what);
		spy_summary_print(s, stderr);
	}
	spy_free(&l);
}

void e2e_spy_check_quiet(const char *log, struct spy_summary *s)
{
	struct spy_log l;
	int err = spy_load(log, &l);

	cr_assert(err == 0, "cannot read spy log %s: %s", log, strerror(-err));
	spy_check(&l, s, NULL, 0);
	spy_free(&l);
}

/* E2E_SPY_DIR: the spies' log elsewhere than the scratch directory
 * (tests/crash/fs.sh: on a tmpfs, off the filesystem under test, whose
 * commits would otherwise hold up the spy's own append between a real call
 * and the library seeing its answer). One log per test process. */
const char *e2e_spy_log(void)
{
	static char *path;
	const char *dir = getenv("E2E_SPY_DIR");

	if (!dir || !*dir)
		return e2e_path("spy.log");
	if (!path)
		path = xasprintf("%s/spy.%d.log", dir, (int)getpid());
	return path;
}

void e2e_run_spied(struct e2e_run *r, struct spy_summary *s, const char *stack,
		   const char *const *env, int timeout_s, const char *const *argv,
		   const char *what)
{
	const char *log = e2e_spy_log();
	const char *full[32];
	size_t k = 0;

	remove(log);
	remove(xasprintf("%s.aborted", log)); /* the spies' made-up abort (spy.c) */
	full[k++] = xasprintf("SPY_LOG=%s", log);
	for (const char *const *e = env; e && *e; e++) {
		cr_assert(k < 31, "too many variables");
		full[k++] = *e;
	}
	full[k] = NULL;
	e2e_run(r, stack, full, timeout_s, argv);
	e2e_spy_check(log, s, what);
}

long e2e_out_long(const char *text, const char *key)
{
	char needle[128];
	const char *hit;

	snprintf(needle, sizeof(needle), "%s=", key);
	for (hit = strstr(text, needle); hit; hit = strstr(hit + 1, needle))
		if (hit == text || hit[-1] == ' ' || hit[-1] == '\n')
			return strtol(hit + strlen(needle), NULL, 10);
	return -1;
}

bool e2e_private_shm(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0)
		return false;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return false;
	return mount("libgc-e2e-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		     "mode=1777,size=32m") == 0;
}

void e2e_private_shm_end(void)
{
	umount2("/dev/shm", MNT_DETACH);
}
