// SPDX-License-Identifier: LGPL-2.1-or-later
/* Start-up and shut-down. Loading the library makes no system call of its
 * own: the constructor keeps the LIBGC_* variables, reads the loader's list
 * of objects and registers the fork handlers; the real functions are looked
 * up at the first call of a wrapper (shim/real.c), the variables parsed and
 * checked at first use (gc_conf), everything else is made when a request
 * first needs it. Survives early callers (another library's constructor)
 * and recursive ones (dlsym calling back into us). */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/devstats.h"
#include "core/dirty.h"
#include "core/fdtable.h"
#include "core/log.h"
#include "core/next.h"
#include "core/procstats.h"
#include "core/sites.h"
#include "core/stats.h"
#include "journal/intent.h"
#include "journal/journal.h"
#include "shim/shim.h"

GC_START int gc_ready;
GC_START int gc_configured;
GC_START int gc_disabled;
GC_START int gc_counting;
uint64_t gc_sym_calls[GC_SYM_COUNT];
static __thread int gc_initialising __attribute__((tls_model("initial-exec")));
GC_START static int gc_init_state;	/* 0, 1 running, 2 done */
GC_START static struct gc_once gc_conf_once;
struct gc_config gc_cfg = { .c_log = GC_LOG_WARN };

#ifndef GC_VERSION
#define GC_VERSION "0"
#endif
/* The one exported name that is not libc's: gcrun reads it from the file
 * (never by loading it) to tell this library from another libgc.so, such
 * as Boehm GC's, before it preloads anything. */
GC_EXPORT const char libgc_group_commit[] = "libgc " GC_VERSION;
extern char **environ;

static const char *env_get(const char *name, void *ctx)
{
	return gc_env(name);
}

static void env_warn(const char *line, void *ctx)
{
	gc_log_line(line);
}

/* One set of fork handlers for the whole library: the journal's locks and
 * the descriptor swap lock are held across fork, so the child starts with
 * consistent tables; the child then owns the state (gc_sys_adopt). Each
 * does nothing, and no system call, while the library has no state. The
 * first prepare fills what of the table of real functions no wrapper did: a
 * child re-faults the file pages its parent read, and children that each
 * looked up the names they called first (execve, _exit) made 7 page
 * faults more apiece than under an empty preload. */
GC_ONCE static void atfork_prepare(void)
{
	if (gc_init())
		gc_real_resolve();
	gc_journal_atfork_prepare();
	gc_intent_atfork_prepare();
	gc_fd_fork_prepare();
}

GC_ONCE static void atfork_parent(void)
{
	gc_fd_fork_parent();
	gc_intent_atfork_parent();
	gc_journal_atfork_parent();
}

GC_ONCE static void atfork_child(void)
{
	gc_sys_adopt();
	gc_fd_fork_child();
	gc_devstats_atfork_child();
	gc_dirty_atfork_child();
	gc_journal_atfork_child();
	gc_intent_atfork_child();
	/* Counters are per process: the child reports only its own calls. */
	gc_stats_reset();
	if (gc_counting)
		memset(gc_sym_calls, 0, sizeof(gc_sym_calls));
}

/* pthread_atfork is a stub in libc_nonshared.a that passes this object's
 * __dso_handle on to glibc's __register_atfork: linked last, it would sit
 * alone at the end of the library's text and cost every process a page
 * fault and its 64 KiB window there. */
#ifdef __GLIBC__
extern void *__dso_handle;
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);
#define gc_atfork(p, a, c) __register_atfork(p, a, c, __dso_handle)
#else
#define gc_atfork pthread_atfork
#endif

/* The real calls core makes (the wrappers look theirs up at first use):
 * every wrapper may run from now on. Threads whose first calls race here
 * all store the same values. */
static void resolve(void)
{
	__atomic_store_n(&gc_sys.sy_fsync, REAL(fsync), __ATOMIC_RELAXED);
	__atomic_store_n(&gc_sys.sy_fdatasync, REAL(fdatasync), __ATOMIC_RELAXED);
	__atomic_store_n(&gc_sys.sy_sync_file_range, REAL(sync_file_range), __ATOMIC_RELAXED);
	__atomic_store_n(&gc_sys.sy_syncfs, REAL(syncfs), __ATOMIC_RELAXED);
	__atomic_store_n(&gc_ready, 1, __ATOMIC_RELEASE);
}

/* No system call here: what loading the library costs a process that never
 * calls a wrapper is the loader's work and a read of its list of objects. */
static void do_init(char **envp)
{
	const char *v;
	int saved = errno;
	bool tables;

	gc_env_save(envp);
	tables = gc_next_prepare();
	/* What every wrapper asks before any other setting: read now, and
	 * checked with the rest at first use. */
	v = gc_env("LIBGC_DISABLE");
	gc_disabled = v && !strcmp(v, "1");
	v = gc_env("LIBGC_REPORT");
	gc_counting = v && *v && strcmp(v, "0");
	/* the level start-up's messages (the intent log's recovery) go out
	 * with (unset: the default it was built with, and its page is left
	 * alone); a bad value is reported with the rest at first use */
	v = gc_env("LIBGC_LOG");
	if (v)
		gc_cfg.c_log = gc_config_log_level(v);
	/* the intent log's hooks in the write family are on from the first
	 * write: its settings are read now (no system call; it opens nothing
	 * before a request in its scope) */
	if (!gc_disabled)
		gc_intent_configure();
	gc_atfork(atfork_prepare, atfork_parent, atfork_child);
	/* Now where dlsym must answer (it allocates and takes the loader's
	 * lock: not at a first call in a signal handler), and where every
	 * process reports (its exit handlers run only once it is ready). */
	if (!tables || gc_counting) {
		gc_real_resolve();
		resolve();
	}
	errno = saved;
}

/* The constructor's work, once; with @resolve, also the real functions
 * (the first call of a wrapper). */
static bool init_once(char **envp, bool resolve_them)
{
	int st = 0;

	if (gc_initialising)
		return false;
	gc_initialising = 1;
	if (__atomic_compare_exchange_n(&gc_init_state, &st, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		do_init(envp);
		__atomic_store_n(&gc_init_state, 2, __ATOMIC_RELEASE);
	} else {
		/* another thread before main: it takes microseconds */
		while (__atomic_load_n(&gc_init_state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
	}
	if (resolve_them && !__atomic_load_n(&gc_ready, __ATOMIC_ACQUIRE))
		resolve();
	gc_initialising = 0;
	return __atomic_load_n(&gc_ready, __ATOMIC_ACQUIRE);
}

bool gc_init_slow(void)
{
	return init_once(environ, true);
}

static void do_configure(void)
{
	int saved = errno;

	gc_config_defaults(&gc_cfg);
	gc_config_parse(&gc_cfg, env_get, env_warn, NULL);
	gc_disabled = gc_cfg.c_disable;
	gc_counting = gc_cfg.c_report[0] != '\0';
	gc_ps_configure(gc_cfg.c_stats && !gc_disabled,
			gc_cfg.c_stats_dir[0] ? gc_cfg.c_stats_dir : NULL);
	gc_sites_configure(&gc_cfg);
	gc_log(GC_LOG_INFO, "policy=%s osync=%s%s",
	       gc_policy_name(gc_cfg.c_policy.pc_kind),
	       gc_cfg.c_osync == GC_OSYNC_CONVERT ? "convert" : "keep",
	       gc_disabled ? " (disabled)" : "");
	/* every process reports: keep stderr now, some close it early */
	if (gc_cfg.c_report_all && !gc_disabled)
		gc_report_arm();
	__atomic_store_n(&gc_configured, 1, __ATOMIC_RELEASE);
	errno = saved;
}

bool gc_conf_slow(void)
{
	if (!gc_init())
		return false;
	return gc_once(&gc_conf_once, do_configure) &&
	       __atomic_load_n(&gc_configured, __ATOMIC_ACQUIRE);
}

/* glibc passes the initial environment to constructors. */
__attribute__((constructor)) static void gc_constructor(int argc, char **argv, char **envp)
{
	if (!__atomic_load_n(&gc_init_state, __ATOMIC_ACQUIRE))
		init_once(envp, false);
}

__attribute__((destructor)) static void gc_destructor(void)
{
	if (!gc_ready)
		return;
	/* a normal exit may name what one request left unnamed (dladdr and
	 * file maps: not from _exit, which may run in a forked child or a
	 * signal handler) */
	if (gc_counting && gc_conf() && gc_cfg.c_report[0])
		gc_sites_name_pending();
	gc_intent_exit();
	gc_report_exit();
	gc_journal_exit();
}
