// SPDX-License-Identifier: LGPL-2.1-or-later
/* LIBGC_* parsing and validation. Pure: values come from a lookup function
 * and complaints go to a callback, so the same code serves the library's
 * constructor and the unit tests. */
#include "core/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "core/clock.h"
#include "core/sys.h"

#define GC_ENV_MAX 64
GC_START static const char *gc_envs[GC_ENV_MAX];
GC_START static int gc_nenv;

void gc_env_save(char *const *envp)
{
	/* an array on the stack, made with immediates: a string constant here
	 * was a page fault on the library's read-only data in every process,
	 * which nothing else reads before a first sync */
	const char prefix[] = "LIBGC_";
	int n = 0;

	if (!envp || getauxval(AT_SECURE))
		return;
	for (; *envp && n < GC_ENV_MAX; envp++)
		if (gc_str_after(*envp, prefix))
			gc_envs[n++] = *envp;
	__atomic_store_n(&gc_nenv, n, __ATOMIC_RELEASE);
}

const char *gc_env(const char *name)
{
	int i, n = __atomic_load_n(&gc_nenv, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++) {
		const char *v = gc_str_after(gc_envs[i], name);

		if (v && *v == '=')
			return v + 1;
	}
	return NULL;
}

void gc_config_defaults(struct gc_config *c)
{
	memset(c, 0, sizeof(*c));
	c->c_osync = GC_OSYNC_CONVERT;
	c->c_stage = GC_STAGE_AUTO;
	c->c_log = GC_LOG_WARN;
	c->c_stats = true;
	c->c_sites = GC_SITES_AUTO;
	gc_policy_cfg_defaults(&c->c_policy);
	gc_dirty_cfg_defaults(&c->c_dirty);
}

struct parse_ctx {
	gc_getenv_fn get;
	gc_warn_fn warn;
	void *ctx;
	int bad;
};

static void reject(struct parse_ctx *p, const char *name, const char *val,
		   const char *form)
{
	char line[512];

	snprintf(line, sizeof(line),
		 "libgc: ignoring %s=\"%.64s\": expected %s; using the default", name,
		 val, form);
	p->warn(line, p->ctx);
	p->bad++;
}

/* Returns the index of @val in @words, or -1 after a warning. */
static int parse_word(struct parse_ctx *p, const char *name,
		      const char *const *words, int n, const char *form)
{
	const char *v = p->get(name, p->ctx);
	int i;

	if (!v)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(v, words[i]))
			return i;
	reject(p, name, v, form);
	return -1;
}

/* Unsigned decimal in [lo, hi]; leaves *out alone on absence or error. */
static void parse_uint(struct parse_ctx *p, const char *name, uint64_t lo,
		       uint64_t hi, uint64_t *out)
{
	const char *v = p->get(name, p->ctx);
	char form[96], *end;
	unsigned long long x;

	if (!v)
		return;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (*v < '0' || *v > '9' || *end != '\0' || errno == ERANGE ||
	    x < lo || x > hi) {
		snprintf(form, sizeof(form), "an integer from %llu to %llu",
			 (unsigned long long)lo, (unsigned long long)hi);
		reject(p, name, v, form);
		return;
	}
	*out = x;
}

#define REPORT_FORM "0, 1, kv, json, all, or an absolute path (joined by commas: all,json,/tmp/gc.json)"

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* LIBGC_REPORT: comma-separated words; where (stderr or one absolute path),
 * what form, and whether processes with no sync call report too. Nothing
 * of it is kept unless all of it is good. */
static void parse_report(struct parse_ctx *p, struct gc_config *c, const char *v)
{
	char buf[512], *tok, *save = NULL;
	char where[sizeof(c->c_report)] = "-";
	int fmt = -1;
	bool all = false;

	if (!*v || strlen(v) >= sizeof(buf)) {
		reject(p, "LIBGC_REPORT", v, REPORT_FORM);
		return;
	}
	strcpy(buf, v);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "1") || !strcmp(tok, "human"))
			fmt = GC_REPORT_HUMAN;
		else if (!strcmp(tok, "kv"))
			fmt = GC_REPORT_KV;
		else if (!strcmp(tok, "json"))
			fmt = GC_REPORT_JSON;
		else if (!strcmp(tok, "all"))
			all = true;
		else if (tok[0] == '/' && strlen(tok) < sizeof(where))
			strcpy(where, tok);
		else
			break;
	}
	if (tok || v[strlen(v) - 1] == ',' || v[0] == ',') {
		reject(p, "LIBGC_REPORT", v, REPORT_FORM);
		return;
	}
	if (fmt < 0)
		fmt = strcmp(where, "-") ? (ends_with(where, ".json") ? GC_REPORT_JSON : GC_REPORT_KV)
					 : GC_REPORT_HUMAN;
	strcpy(c->c_report, where);
	c->c_report_fmt = (enum gc_report_fmt)fmt;
	c->c_report_all = all;
}

#define SCOPE_FORM "lib:NAME or fn:NAME, comma-separated (lib:libsqlite3.so,fn:wal_flush)"

/* LIBGC_SCOPE: up to GC_SCOPE_ITEMS items "lib:NAME" or "fn:NAME". Unlike
 * the other variables, a bad value does not fall back to the default (no
 * scope: group everything): the program asked for grouping to be limited,
 * and a typo must not widen it to the whole program. Grouping nothing is
 * what the program would do without the library. */
static void parse_scope(struct parse_ctx *p, struct gc_config *c, const char *v)
{
	const char *item = v, *end;
	char line[512];
	int n = 0;

	for (;;) {
		size_t len, pre;
		enum gc_scope_kind kind;

		end = strchr(item, ',');
		len = end ? (size_t)(end - item) : strlen(item);
		if (len > 4 && !strncmp(item, "lib:", 4)) {
			kind = GC_SCOPE_LIB;
			pre = 4;
		} else if (len > 3 && !strncmp(item, "fn:", 3)) {
			kind = GC_SCOPE_FN;
			pre = 3;
		} else {
			break;
		}
		if (n == GC_SCOPE_ITEMS || len - pre >= GC_SCOPE_NAME)
			break;
		c->c_scope[n].si_kind = kind;
		memcpy(c->c_scope[n].si_name, item + pre, len - pre);
		c->c_scope[n].si_name[len - pre] = '\0';
		n++;
		if (!end) {
			c->c_scope_n = n;
			return;
		}
		item = end + 1;
	}
	snprintf(line, sizeof(line),
		 "libgc: bad LIBGC_SCOPE=\"%.64s\": expected " SCOPE_FORM
		 ", at most %d items of at most %d bytes; grouping nothing (every request a direct call)",
		 v, GC_SCOPE_ITEMS, GC_SCOPE_NAME - 1);
	p->warn(line, p->ctx);
	p->bad++;
	memset(c->c_scope, 0, sizeof(c->c_scope));
	c->c_scope_n = 0;
	c->c_scope_bad = true;
}

#define MAX_US 10000000ULL /* 10 s: anything longer is a typo, not a wait */

static const char *const log_levels[] = { "error", "warn", "info", "debug", "trace" };

enum gc_log_level gc_config_log_level(const char *v)
{
	int i;

	for (i = 0; v && i < 5; i++)
		if (!strcmp(v, log_levels[i]))
			return (enum gc_log_level)i;
	return GC_LOG_WARN;
}

int gc_config_parse(struct gc_config *c, gc_getenv_fn get, gc_warn_fn warn,
		    void *ctx)
{
	static const char *const bools[] = { "0", "1" };
	static const char *const policies[] = { "adaptive", "none", "fixed", "jbd2",
						"siblings" };
	static const char *const osync[] = { "convert", "keep" };
	static const char *const stage[] = { "auto", "always", "never" };
	static const char *const share[] = { "user", "process" };
	static const char *const device[] = { "off", "auto" };
	static const char *const sites[] = { "auto", "0", "1" };
	struct parse_ctx p = { .get = get, .warn = warn, .ctx = ctx };
	struct gc_policy_cfg *pc = &c->c_policy;
	uint64_t us;
	const char *v;
	int i;

	if ((i = parse_word(&p, "LIBGC_DISABLE", bools, 2, "0 or 1")) >= 0)
		c->c_disable = i == 1;
	if ((i = parse_word(&p, "LIBGC_PROBE", bools, 2, "0 or 1")) >= 0)
		c->c_policy.pc_probe = i == 1;
	if ((i = parse_word(&p, "LIBGC_DEVICE", device, 2, "auto or off")) >= 0)
		pc->pc_device = i == 1;
	if ((i = parse_word(&p, "LIBGC_POLICY", policies, 5,
			    "adaptive, none, fixed, jbd2 or siblings")) >= 0)
		pc->pc_kind = (enum gc_policy_kind)i;
	if ((i = parse_word(&p, "LIBGC_OSYNC", osync, 2, "convert or keep")) >= 0)
		c->c_osync = (enum gc_osync_mode)i;
	if ((i = parse_word(&p, "LIBGC_STAGE", stage, 3, "auto, always or never")) >= 0)
		c->c_stage = (enum gc_stage_mode)i;
	if ((i = parse_word(&p, "LIBGC_SHARE", share, 2, "user or process")) >= 0)
		c->c_share = (enum gc_share_mode)i;
	if ((i = parse_word(&p, "LIBGC_LOG", log_levels, 5,
			    "error, warn, info, debug or trace")) >= 0)
		c->c_log = (enum gc_log_level)i;

	us = pc->pc_max_wait_ns / GC_NSEC_PER_USEC;
	parse_uint(&p, "LIBGC_MAX_WAIT_US", 0, MAX_US, &us);
	pc->pc_max_wait_ns = us * GC_NSEC_PER_USEC;
	us = pc->pc_min_wait_ns / GC_NSEC_PER_USEC;
	parse_uint(&p, "LIBGC_MIN_WAIT_US", 0, MAX_US, &us);
	pc->pc_min_wait_ns = us * GC_NSEC_PER_USEC;
	us = pc->pc_wait_ns / GC_NSEC_PER_USEC;
	parse_uint(&p, "LIBGC_WAIT_US", 0, MAX_US, &us);
	pc->pc_wait_ns = us * GC_NSEC_PER_USEC;
	us = pc->pc_wait_pct;
	parse_uint(&p, "LIBGC_WAIT_PCT", 0, 1000, &us);
	pc->pc_wait_pct = (uint32_t)us;
	us = pc->pc_siblings;
	parse_uint(&p, "LIBGC_SIBLINGS", 0, 1000, &us);
	pc->pc_siblings = (uint32_t)us;

	if (pc->pc_min_wait_ns > pc->pc_max_wait_ns) {
		char line[256];

		snprintf(line, sizeof(line),
			 "libgc: ignoring LIBGC_MIN_WAIT_US: larger than LIBGC_MAX_WAIT_US (%llu); using 0",
			 (unsigned long long)(pc->pc_max_wait_ns / GC_NSEC_PER_USEC));
		warn(line, ctx);
		pc->pc_min_wait_ns = 0;
		p.bad++;
	}

	v = get("LIBGC_DIRTY", ctx);
	if (v) {
		uint64_t sz;

		if (!strcmp(v, "auto"))
			c->c_dirty.dc_mode = GC_DIRTY_AUTO;
		else if (!strcmp(v, "off"))
			c->c_dirty.dc_mode = GC_DIRTY_OFF;
		else if (gc_dirty_parse_size(v, &sz) && sz >= GC_DIRTY_FIXED_MIN &&
			 sz <= GC_DIRTY_FIXED_MAX) {
			c->c_dirty.dc_mode = GC_DIRTY_FIXED;
			c->c_dirty.dc_window = sz;
		} else {
			reject(&p, "LIBGC_DIRTY", v,
			       "auto, off or a size from 4k to 1g (digits, optional k, m or g)");
		}
	}
	us = c->c_dirty.dc_target_ns / GC_NSEC_PER_MSEC;
	parse_uint(&p, "LIBGC_DIRTY_TARGET_MS", GC_DIRTY_TARGET_MIN_MS, GC_DIRTY_TARGET_MAX_MS,
		   &us);
	c->c_dirty.dc_target_ns = us * GC_NSEC_PER_MSEC;

	v = get("LIBGC_REPORT", ctx);
	if (v && strcmp(v, "0"))
		parse_report(&p, c, v);
	if ((i = parse_word(&p, "LIBGC_STATS", bools, 2, "0 or 1")) >= 0)
		c->c_stats = i == 1;
	v = get("LIBGC_STATS_DIR", ctx);
	if (v) {
		if (v[0] != '/' || strlen(v) >= sizeof(c->c_stats_dir))
			reject(&p, "LIBGC_STATS_DIR", v, "an absolute path shorter than 200 bytes");
		else
			strcpy(c->c_stats_dir, v);
	}
	if ((i = parse_word(&p, "LIBGC_SITES", sites, 3, "auto, 0 or 1")) >= 0)
		c->c_sites = (enum gc_sites_mode)i;
	v = get("LIBGC_SCOPE", ctx);
	if (v)
		parse_scope(&p, c, v);
	return p.bad;
}
