/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* LIBGC_* configuration: the variables the process started with, saved at
 * start-up and parsed once at first use, validated, immutable after. The
 * parser is pure (takes a lookup function) so unit tests feed it tables. */
#ifndef GC_CONFIG_H
#define GC_CONFIG_H
#include <stdbool.h>
#include <stdint.h>
#include "policy/dirty.h"
#include "policy/policy.h"

enum gc_osync_mode { GC_OSYNC_CONVERT, GC_OSYNC_KEEP };
enum gc_stage_mode { GC_STAGE_AUTO, GC_STAGE_ALWAYS, GC_STAGE_NEVER };
enum gc_share_mode { GC_SHARE_USER, GC_SHARE_PROCESS };
enum gc_log_level { GC_LOG_ERROR, GC_LOG_WARN, GC_LOG_INFO, GC_LOG_DEBUG, GC_LOG_TRACE };
/* LIBGC_SITES: auto (when something asks: the exit report's summary or
 * JSON, LIBGC_SCOPE, gcstat --sites), 0 never, 1 from the first request. */
enum gc_sites_mode { GC_SITES_AUTO, GC_SITES_OFF, GC_SITES_ON };
/* The exit report's form: a short summary, the key=value line, JSON. */
enum gc_report_fmt { GC_REPORT_HUMAN, GC_REPORT_KV, GC_REPORT_JSON };

/* LIBGC_SCOPE: grouping limited to requests whose call chain passes through
 * one of these libraries or functions. */
#define GC_SCOPE_ITEMS 8
#define GC_SCOPE_NAME 64
enum gc_scope_kind { GC_SCOPE_LIB, GC_SCOPE_FN };
struct gc_scope_item {
	enum gc_scope_kind si_kind;
	char si_name[GC_SCOPE_NAME];
};

struct gc_config {
	bool c_disable;			/* LIBGC_DISABLE */
	enum gc_osync_mode c_osync;	/* LIBGC_OSYNC */
	enum gc_stage_mode c_stage;	/* LIBGC_STAGE */
	enum gc_share_mode c_share;	/* LIBGC_SHARE */
	enum gc_log_level c_log;	/* LIBGC_LOG */
	char c_report[256];		/* LIBGC_REPORT: "" off, "-" stderr, else a path */
	enum gc_report_fmt c_report_fmt; /* LIBGC_REPORT: 1 human, kv, json; a path
					  * ending in .json is JSON, any other kv */
	bool c_report_all;		/* LIBGC_REPORT=all: processes with no sync call too */
	bool c_stats;			/* LIBGC_STATS: the per-process stats segment */
	char c_stats_dir[200];		/* LIBGC_STATS_DIR: "" is /dev/shm */
	enum gc_sites_mode c_sites;	/* LIBGC_SITES: call sites of sync requests */
	int c_scope_n;			/* LIBGC_SCOPE: items; 0 and !c_scope_bad: none */
	bool c_scope_bad;		/* LIBGC_SCOPE did not parse: group nothing */
	struct gc_scope_item c_scope[GC_SCOPE_ITEMS];
	struct gc_policy_cfg c_policy;	/* LIBGC_POLICY, LIBGC_*WAIT*, LIBGC_SIBLINGS */
	struct gc_dirty_cfg c_dirty;	/* LIBGC_DIRTY, LIBGC_DIRTY_TARGET_MS */
};

/* Returns the value of a variable or NULL. */
typedef const char *(*gc_getenv_fn)(const char *name, void *ctx);
/* Receives one complete line (no newline) describing a rejected value. */
typedef void (*gc_warn_fn)(const char *line, void *ctx);

/* Keeps the LIBGC_* entries of @envp, the environment the process started
 * with (no system call, no allocation): a program that changes or clears
 * its environment later changes nothing here. In a program run with more
 * privilege than its caller (AT_SECURE: setuid, setgid, capabilities) none
 * is kept: the defaults serve. */
void gc_env_save(char *const *envp);
/* A saved variable's value, or NULL. */
const char *gc_env(const char *name);

void gc_config_defaults(struct gc_config *c);
/* LIBGC_LOG's level from its value (warn when unset or bad): what start-up
 * logs with before the whole configuration is read at first use. */
enum gc_log_level gc_config_log_level(const char *v);
/* Fills @c from the lookup; every bad value produces one warning naming the
 * variable and the accepted form, and keeps that field's default.
 * Returns the number of rejected values. */
int gc_config_parse(struct gc_config *c, gc_getenv_fn get, gc_warn_fn warn,
		    void *ctx);

#endif
