// SPDX-License-Identifier: LGPL-2.1-or-later
/* LIBGC_* parsing through a table-driven lookup: defaults, every variable's
 * good values, and bad values that must give exactly one warning naming the
 * variable and its accepted form while the default stays. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

#define MAX_VARS 24
#define MAX_WARN 24

/* The environment the parser sees, and what it said back. */
struct harness {
	const char *name[MAX_VARS];
	const char *value[MAX_VARS];
	int n;
	const char *asked[64];	/* names looked up, in order */
	int nasked;
	char warn[MAX_WARN][600];
	int nwarn;
};

static const char *lookup(const char *name, void *ctx)
{
	struct harness *h = ctx;
	int i;

	if (h->nasked < (int)ARRAY_LEN(h->asked))
		h->asked[h->nasked++] = name;
	for (i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name))
			return h->value[i];
	return NULL;
}

static void collect(const char *line, void *ctx)
{
	struct harness *h = ctx;

	cr_assert_lt(h->nwarn, MAX_WARN, "too many warnings");
	snprintf(h->warn[h->nwarn++], sizeof(h->warn[0]), "%s", line);
}

static void set(struct harness *h, const char *name, const char *value)
{
	cr_assert_lt(h->n, MAX_VARS);
	h->name[h->n] = name;
	h->value[h->n++] = value;
}

static int parse(struct harness *h, struct gc_config *c)
{
	gc_config_defaults(c);
	return gc_config_parse(c, lookup, collect, h);
}

/* @name appears in @line as a whole word (LIBGC_WAIT_US is not found inside
 * LIBGC_MAX_WAIT_US). */
static bool names(const char *line, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = strstr(line, name); p; p = strstr(p + 1, name)) {
		bool left = p == line || !(p[-1] == '_' || (p[-1] >= 'A' && p[-1] <= 'Z'));
		bool right = !(p[n] == '_' || (p[n] >= 'A' && p[n] <= 'Z'));

		if (left && right)
			return true;
	}
	return false;
}

static void expect_default_config(const struct gc_config *c, const char *what)
{
	struct gc_config d;

	gc_config_defaults(&d);
	cr_expect_eq(memcmp(c, &d, sizeof(d)), 0, "%s: configuration differs from the defaults",
		     what);
}

/* ---- defaults ------------------------------------------------------------- */

Test(config, defaults)
{
	struct harness h = { 0 };
	struct gc_config c;

	cr_expect_eq(parse(&h, &c), 0);
	cr_expect_eq(h.nwarn, 0);
	cr_expect_not(c.c_disable);
	cr_expect_eq(c.c_osync, GC_OSYNC_CONVERT);
	cr_expect_eq(c.c_stage, GC_STAGE_AUTO);
	cr_expect_eq(c.c_log, GC_LOG_WARN);
	cr_expect_str_eq(c.c_report, "", "no report unless asked");
	cr_expect_eq(c.c_policy.pc_kind, GC_POL_ADAPTIVE);
	cr_expect_eq(c.c_policy.pc_max_wait_ns, 15000 * US, "ext4 max_batch_time");
	cr_expect_eq(c.c_policy.pc_min_wait_ns, 0, "ext4 min_batch_time");
	cr_expect_eq(c.c_policy.pc_wait_pct, 100, "one average commit");
	cr_expect_eq(c.c_policy.pc_wait_ns, 1000 * US);
	cr_expect_eq(c.c_policy.pc_siblings, 5, "PostgreSQL commit_siblings");
	cr_expect(c.c_policy.pc_probe, "the group-or-direct controller is on");
	cr_expect(c.c_policy.pc_device, "the device decides where it is known");
	cr_expect_eq(c.c_dirty.dc_mode, GC_DIRTY_AUTO, "the dirty limiter is on");
	cr_expect_eq(c.c_dirty.dc_target_ns, 100 * MS);
	cr_expect_eq(c.c_sites, GC_SITES_AUTO, "call sites when something asks for them");
	cr_expect_eq(c.c_scope_n, 0, "no scope: everything may be grouped");
	cr_expect_not(c.c_scope_bad);
	expect_default_config(&c, "empty environment");
}

/* LIBGC_SCOPE: items kept in order; a bad value warns once and groups
 * nothing rather than everything. */
Test(config, scope_items)
{
	struct harness h = { 0 };
	struct gc_config c;

	set(&h, "LIBGC_SCOPE", "lib:libsqlite3.so,fn:wal_flush");
	set(&h, "LIBGC_SITES", "0");
	cr_expect_eq(parse(&h, &c), 0);
	cr_expect_eq(h.nwarn, 0);
	cr_expect_eq(c.c_sites, GC_SITES_OFF);
	cr_assert_eq(c.c_scope_n, 2);
	cr_expect_not(c.c_scope_bad);
	cr_expect_eq(c.c_scope[0].si_kind, GC_SCOPE_LIB);
	cr_expect_str_eq(c.c_scope[0].si_name, "libsqlite3.so");
	cr_expect_eq(c.c_scope[1].si_kind, GC_SCOPE_FN);
	cr_expect_str_eq(c.c_scope[1].si_name, "wal_flush");
}

Test(config, scope_bad_groups_nothing)
{
	static const char *const bad[] = {
		"", "sql:libsqlite3.so", "lib:", "fn:", "lib:a,,fn:b", "lib:a,", ",fn:b",
		"libsqlite3.so", "fn:a,fn:b,fn:c,fn:d,fn:e,fn:f,fn:g,fn:h,fn:i",
		"fn:a_name_of_sixty_four_bytes_is_one_more_than_an_item_may_hold_xxx",
	};
	size_t i;

	for (i = 0; i < ARRAY_LEN(bad); i++) {
		struct harness h = { 0 };
		struct gc_config c;

		set(&h, "LIBGC_SCOPE", bad[i]);
		cr_expect_eq(parse(&h, &c), 1, "\"%s\"", bad[i]);
		cr_expect_eq(h.nwarn, 1, "\"%s\": one line", bad[i]);
		cr_expect(h.nwarn && strstr(h.warn[0], "LIBGC_SCOPE") &&
				  strstr(h.warn[0], "grouping nothing") && !strchr(h.warn[0], '\n'),
			  "\"%s\": %s", bad[i], h.warn[0]);
		cr_expect(c.c_scope_bad, "\"%s\": a bad scope groups nothing", bad[i]);
		cr_expect_eq(c.c_scope_n, 0, "\"%s\"", bad[i]);
	}
}

/* The parser reads its lookup only, never the process environment, and asks
 * for every documented variable. */
Test(config, reads_the_lookup_only)
{
	static const char *const vars[] = {
		"LIBGC_DISABLE",     "LIBGC_PROBE",	  "LIBGC_POLICY",  "LIBGC_OSYNC",
		"LIBGC_STAGE",	     "LIBGC_LOG",	  "LIBGC_MAX_WAIT_US", "LIBGC_MIN_WAIT_US",
		"LIBGC_WAIT_US",     "LIBGC_WAIT_PCT",	  "LIBGC_SIBLINGS", "LIBGC_REPORT",
		"LIBGC_DIRTY",	     "LIBGC_DIRTY_TARGET_MS", "LIBGC_DEVICE",
	};
	struct harness h = { 0 };
	struct gc_config c;
	size_t i;
	int j;

	setenv("LIBGC_POLICY", "none", 1);
	setenv("LIBGC_WAIT_US", "junk", 1);
	cr_expect_eq(parse(&h, &c), 0);
	cr_expect_eq(h.nwarn, 0);
	cr_expect_eq(c.c_policy.pc_kind, GC_POL_ADAPTIVE, "process environment leaked in");
	for (i = 0; i < ARRAY_LEN(vars); i++) {
		bool found = false;

		for (j = 0; j < h.nasked; j++)
			found |= !strcmp(h.asked[j], vars[i]);
		cr_expect(found, "%s is never looked up", vars[i]);
	}
	for (j = 0; j < h.nasked; j++)
		cr_expect_eq(strncmp(h.asked[j], "LIBGC_", 6), 0, "looked up %s", h.asked[j]);
}

/* ---- good values ---------------------------------------------------------- */

enum field {
	F_DISABLE, F_PROBE, F_DEVICE, F_POLICY, F_OSYNC, F_STAGE, F_LOG,
	F_MAX_WAIT, F_MIN_WAIT, F_WAIT, F_PCT, F_SIBLINGS,
	F_DIRTY_MODE, F_DIRTY_SIZE, F_DIRTY_TARGET,
};

static void set_field(struct gc_config *c, enum field f, uint64_t v)
{
	struct gc_policy_cfg *pc = &c->c_policy;

	switch (f) {
	case F_DISABLE: c->c_disable = v; break;
	case F_PROBE: pc->pc_probe = v; break;
	case F_DEVICE: pc->pc_device = v; break;
	case F_POLICY: pc->pc_kind = (enum gc_policy_kind)v; break;
	case F_OSYNC: c->c_osync = (enum gc_osync_mode)v; break;
	case F_STAGE: c->c_stage = (enum gc_stage_mode)v; break;
	case F_LOG: c->c_log = (enum gc_log_level)v; break;
	case F_MAX_WAIT: pc->pc_max_wait_ns = v; break;
	case F_MIN_WAIT: pc->pc_min_wait_ns = v; break;
	case F_WAIT: pc->pc_wait_ns = v; break;
	case F_PCT: pc->pc_wait_pct = (uint32_t)v; break;
	case F_SIBLINGS: pc->pc_siblings = (uint32_t)v; break;
	case F_DIRTY_MODE: c->c_dirty.dc_mode = (enum gc_dirty_mode)v; break;
	case F_DIRTY_SIZE: /* a size is the fixed mode with that window */
		c->c_dirty.dc_mode = GC_DIRTY_FIXED;
		c->c_dirty.dc_window = v;
		break;
	case F_DIRTY_TARGET: c->c_dirty.dc_target_ns = v; break;
	}
}

struct good_case {
	char var[24];
	char val[24];
	enum field f;
	uint64_t want;
};

ParameterizedTestParameters(config, good_values)
{
	static struct good_case cases[] = {
		{ "LIBGC_DISABLE", "0", F_DISABLE, 0 },
		{ "LIBGC_DISABLE", "1", F_DISABLE, 1 },
		{ "LIBGC_PROBE", "0", F_PROBE, 0 },
		{ "LIBGC_PROBE", "1", F_PROBE, 1 },
		{ "LIBGC_DEVICE", "auto", F_DEVICE, 1 },
		{ "LIBGC_DEVICE", "off", F_DEVICE, 0 },
		{ "LIBGC_POLICY", "adaptive", F_POLICY, GC_POL_ADAPTIVE },
		{ "LIBGC_POLICY", "none", F_POLICY, GC_POL_NONE },
		{ "LIBGC_POLICY", "fixed", F_POLICY, GC_POL_FIXED },
		{ "LIBGC_POLICY", "jbd2", F_POLICY, GC_POL_JBD2 },
		{ "LIBGC_POLICY", "siblings", F_POLICY, GC_POL_SIBLINGS },
		{ "LIBGC_OSYNC", "convert", F_OSYNC, GC_OSYNC_CONVERT },
		{ "LIBGC_OSYNC", "keep", F_OSYNC, GC_OSYNC_KEEP },
		{ "LIBGC_STAGE", "auto", F_STAGE, GC_STAGE_AUTO },
		{ "LIBGC_STAGE", "always", F_STAGE, GC_STAGE_ALWAYS },
		{ "LIBGC_STAGE", "never", F_STAGE, GC_STAGE_NEVER },
		{ "LIBGC_LOG", "error", F_LOG, GC_LOG_ERROR },
		{ "LIBGC_LOG", "trace", F_LOG, GC_LOG_TRACE },
		{ "LIBGC_LOG", "warn", F_LOG, GC_LOG_WARN },
		{ "LIBGC_LOG", "info", F_LOG, GC_LOG_INFO },
		{ "LIBGC_LOG", "debug", F_LOG, GC_LOG_DEBUG },
		{ "LIBGC_MAX_WAIT_US", "0", F_MAX_WAIT, 0 },
		{ "LIBGC_MAX_WAIT_US", "2500", F_MAX_WAIT, 2500 * US },
		{ "LIBGC_MAX_WAIT_US", "007", F_MAX_WAIT, 7 * US },
		{ "LIBGC_MAX_WAIT_US", "10000000", F_MAX_WAIT, 10 * SEC },
		{ "LIBGC_MIN_WAIT_US", "0", F_MIN_WAIT, 0 },
		{ "LIBGC_MIN_WAIT_US", "100", F_MIN_WAIT, 100 * US },
		{ "LIBGC_MIN_WAIT_US", "15000", F_MIN_WAIT, 15000 * US },
		{ "LIBGC_WAIT_US", "0", F_WAIT, 0 },
		{ "LIBGC_WAIT_US", "500", F_WAIT, 500 * US },
		{ "LIBGC_WAIT_US", "10000000", F_WAIT, 10 * SEC },
		{ "LIBGC_WAIT_PCT", "0", F_PCT, 0 },
		{ "LIBGC_WAIT_PCT", "50", F_PCT, 50 },
		{ "LIBGC_WAIT_PCT", "1000", F_PCT, 1000 },
		{ "LIBGC_SIBLINGS", "0", F_SIBLINGS, 0 },
		{ "LIBGC_SIBLINGS", "7", F_SIBLINGS, 7 },
		{ "LIBGC_SIBLINGS", "1000", F_SIBLINGS, 1000 },
		{ "LIBGC_DIRTY", "auto", F_DIRTY_MODE, GC_DIRTY_AUTO },
		{ "LIBGC_DIRTY", "off", F_DIRTY_MODE, GC_DIRTY_OFF },
		{ "LIBGC_DIRTY", "512k", F_DIRTY_SIZE, 512 << 10 },
		{ "LIBGC_DIRTY", "4m", F_DIRTY_SIZE, 4 << 20 },
		{ "LIBGC_DIRTY", "4M", F_DIRTY_SIZE, 4 << 20 },
		{ "LIBGC_DIRTY", "1g", F_DIRTY_SIZE, 1ULL << 30 },
		{ "LIBGC_DIRTY", "4k", F_DIRTY_SIZE, 4 << 10 },
		{ "LIBGC_DIRTY", "1048576", F_DIRTY_SIZE, 1 << 20 },
		{ "LIBGC_DIRTY_TARGET_MS", "1", F_DIRTY_TARGET, 1 * MS },
		{ "LIBGC_DIRTY_TARGET_MS", "20", F_DIRTY_TARGET, 20 * MS },
		{ "LIBGC_DIRTY_TARGET_MS", "10000", F_DIRTY_TARGET, 10 * SEC },
	};

	return cr_make_param_array(struct good_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct good_case *g, config, good_values)
{
	struct harness h = { 0 };
	struct gc_config c, want;

	set(&h, g->var, g->val);
	cr_expect_eq(parse(&h, &c), 0, "%s=%s rejected", g->var, g->val);
	cr_expect_eq(h.nwarn, 0, "%s=%s: warned \"%s\"", g->var, g->val, h.warn[0]);
	gc_config_defaults(&want);
	set_field(&want, g->f, g->want);
	cr_expect_eq(memcmp(&c, &want, sizeof(c)), 0,
		     "%s=%s: not exactly that field changed", g->var, g->val);
}

/* ---- bad values ----------------------------------------------------------- */

struct bad_case {
	char var[24];
	char val[40];
	char form[64];	/* words the warning must show, separated by '|' */
};

#define WAIT_FORM "0|10000000"
#define SMALL_FORM "0|1000"

ParameterizedTestParameters(config, bad_values)
{
	static struct bad_case cases[] = {
		{ "LIBGC_DISABLE", "", "0|1" },
		{ "LIBGC_DISABLE", "2", "0|1" },
		{ "LIBGC_DISABLE", "yes", "0|1" },
		{ "LIBGC_DISABLE", "-1", "0|1" },
		{ "LIBGC_DISABLE", "1x", "0|1" },
		{ "LIBGC_PROBE", "", "0|1" },
		{ "LIBGC_PROBE", "on", "0|1" },
		{ "LIBGC_DEVICE", "", "auto|off" },
		{ "LIBGC_DEVICE", "0", "auto|off" },
		{ "LIBGC_DEVICE", "Off", "auto|off" },
		{ "LIBGC_POLICY", "", "adaptive|none|fixed|jbd2|siblings" },
		{ "LIBGC_POLICY", "Adaptive", "adaptive|none|fixed|jbd2|siblings" },
		{ "LIBGC_POLICY", "group", "adaptive|none|fixed|jbd2|siblings" },
		{ "LIBGC_POLICY", "fixed ", "adaptive|none|fixed|jbd2|siblings" },
		{ "LIBGC_POLICY", "1", "adaptive|none|fixed|jbd2|siblings" },
		{ "LIBGC_OSYNC", "", "convert|keep" },
		{ "LIBGC_OSYNC", "strip", "convert|keep" },
		{ "LIBGC_STAGE", "", "auto|always|never" },
		{ "LIBGC_STAGE", "sometimes", "auto|always|never" },
		{ "LIBGC_LOG", "", "error|warn|info|debug|trace" },
		{ "LIBGC_LOG", "verbose", "error|warn|info|debug|trace" },
		{ "LIBGC_LOG", "3", "error|warn|info|debug|trace" },
		{ "LIBGC_MAX_WAIT_US", "", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "-1", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "abc", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "12x", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "12 ", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "+5", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", " +5", WAIT_FORM },	/* sign behind a blank */
		{ "LIBGC_MAX_WAIT_US", " 12", WAIT_FORM },	/* as "12 " is refused */
		{ "LIBGC_MAX_WAIT_US", "1.5", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "0x10", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "1e3", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "10000001", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "99999999999999999999999", WAIT_FORM },
		{ "LIBGC_MAX_WAIT_US", "-18446744073709551615", WAIT_FORM },
		{ "LIBGC_MIN_WAIT_US", "", WAIT_FORM },
		{ "LIBGC_MIN_WAIT_US", "-1", WAIT_FORM },
		{ "LIBGC_MIN_WAIT_US", "ten", WAIT_FORM },
		{ "LIBGC_MIN_WAIT_US", "5us", WAIT_FORM },
		{ "LIBGC_MIN_WAIT_US", "10000001", WAIT_FORM },
		{ "LIBGC_WAIT_US", "", WAIT_FORM },
		{ "LIBGC_WAIT_US", "-500", WAIT_FORM },
		{ "LIBGC_WAIT_US", "fast", WAIT_FORM },
		{ "LIBGC_WAIT_US", "500ms", WAIT_FORM },
		{ "LIBGC_WAIT_US", "20000000", WAIT_FORM },
		{ "LIBGC_WAIT_PCT", "", SMALL_FORM },
		{ "LIBGC_WAIT_PCT", "-5", SMALL_FORM },
		{ "LIBGC_WAIT_PCT", "half", SMALL_FORM },
		{ "LIBGC_WAIT_PCT", "50%", SMALL_FORM },
		{ "LIBGC_WAIT_PCT", "1001", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "-1", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "five", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "5,", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "1001", SMALL_FORM },
		{ "LIBGC_SIBLINGS", "4294967301", SMALL_FORM },
		{ "LIBGC_DIRTY", "", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "on", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "Auto", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "0", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "3k", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "2g", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "4kb", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "4 m", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "-4m", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "k", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "1.5m", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY", "99999999999999999999g", "auto|off|4k|1g" },
		{ "LIBGC_DIRTY_TARGET_MS", "", "1|10000" },
		{ "LIBGC_DIRTY_TARGET_MS", "0", "1|10000" },
		{ "LIBGC_DIRTY_TARGET_MS", "10001", "1|10000" },
		{ "LIBGC_DIRTY_TARGET_MS", "100ms", "1|10000" },
		{ "LIBGC_DIRTY_TARGET_MS", "-5", "1|10000" },
		{ "LIBGC_REPORT", "report.txt", "1|absolute path" },
		{ "LIBGC_REPORT", "./report.txt", "1|absolute path" },
		{ "LIBGC_REPORT", "~/report.txt", "1|absolute path" },
		{ "LIBGC_REPORT", "-", "1|absolute path" },
		{ "LIBGC_REPORT", "2", "1|absolute path" },
		{ "LIBGC_REPORT", "yes", "1|absolute path" },
		{ "LIBGC_SITES", "2", "auto|0|1" },
		{ "LIBGC_SITES", "on", "auto|0|1" },
		{ "LIBGC_SITES", "", "auto|0|1" },
	};

	return cr_make_param_array(struct bad_case, cases, ARRAY_LEN(cases));
}

/* Every word of @form ('|'-separated) appears in @line. */
static void expect_form(const char *line, const char *form, const char *what)
{
	char buf[64], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", form);
	for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
		cr_expect(strstr(line, tok), "%s: warning \"%s\" does not show \"%s\"", what,
			  line, tok);
}

static void expect_one_warning(const struct harness *h, const char *var,
			       const char *form, const char *what)
{
	cr_assert_eq(h->nwarn, 1, "%s: %d warnings, want exactly one", what, h->nwarn);
	cr_expect(names(h->warn[0], var), "%s: warning \"%s\" does not name %s", what,
		  h->warn[0], var);
	cr_expect_null(strchr(h->warn[0], '\n'), "%s: warning is more than one line", what);
	cr_expect_gt(strlen(h->warn[0]), strlen(var) + 10, "%s: warning too terse", what);
	expect_form(h->warn[0], form, what);
}

ParameterizedTest(struct bad_case *b, config, bad_values)
{
	struct harness h = { 0 };
	struct gc_config c;
	char what[96];

	snprintf(what, sizeof(what), "%s=\"%s\"", b->var, b->val);
	set(&h, b->var, b->val);
	cr_expect_eq(parse(&h, &c), 1, "%s: rejected count", what);
	expect_one_warning(&h, b->var, b->form, what);
	expect_default_config(&c, what);
}

/* A bad value spoils only itself: the good neighbours are taken. */
Test(config, bad_value_among_good_ones)
{
	struct harness h = { 0 };
	struct gc_config c;

	set(&h, "LIBGC_POLICY", "jbd2");
	set(&h, "LIBGC_MAX_WAIT_US", "20ms");
	set(&h, "LIBGC_MIN_WAIT_US", "250");
	set(&h, "LIBGC_OSYNC", "keep");
	cr_expect_eq(parse(&h, &c), 1);
	expect_one_warning(&h, "LIBGC_MAX_WAIT_US", WAIT_FORM, "mixed");
	cr_expect_eq(c.c_policy.pc_kind, GC_POL_JBD2);
	cr_expect_eq(c.c_policy.pc_max_wait_ns, 15000 * US, "default kept");
	cr_expect_eq(c.c_policy.pc_min_wait_ns, 250 * US);
	cr_expect_eq(c.c_osync, GC_OSYNC_KEEP);
}

/* Every variable bad at once: one line each, each naming its own. */
Test(config, every_variable_bad)
{
	static const char *const vars[] = {
		"LIBGC_DISABLE",     "LIBGC_PROBE",	  "LIBGC_POLICY",  "LIBGC_OSYNC",
		"LIBGC_STAGE",	     "LIBGC_LOG",	  "LIBGC_MAX_WAIT_US", "LIBGC_MIN_WAIT_US",
		"LIBGC_WAIT_US",     "LIBGC_WAIT_PCT",	  "LIBGC_SIBLINGS", "LIBGC_REPORT",
		"LIBGC_DIRTY",	     "LIBGC_DIRTY_TARGET_MS", "LIBGC_DEVICE",
	};
	struct harness h = { 0 };
	struct gc_config c;
	size_t i;
	int j;

	for (i = 0; i < ARRAY_LEN(vars); i++)
		set(&h, vars[i], "bogus");
	cr_expect_eq(parse(&h, &c), (int)ARRAY_LEN(vars));
	cr_expect_eq(h.nwarn, (int)ARRAY_LEN(vars));
	for (i = 0; i < ARRAY_LEN(vars); i++) {
		int lines = 0;

		for (j = 0; j < h.nwarn; j++)
			lines += names(h.warn[j], vars[i]);
		cr_expect_eq(lines, 1, "%s named in %d lines", vars[i], lines);
	}
	expect_default_config(&c, "all bad");
}

/* ---- LIBGC_MIN_WAIT_US > LIBGC_MAX_WAIT_US -------------------------------- */

struct minmax_case {
	char min[16], max[16];	/* "" = unset */
	int bad;		/* rejected values */
	uint64_t want_min, want_max;
};

ParameterizedTestParameters(config, min_above_max)
{
	static struct minmax_case cases[] = {
		{ "2000", "1000", 1, 0, 1000 * US },	/* min dropped, max kept */
		{ "20000", "", 1, 0, 15000 * US },	/* above the default max */
		{ "1000", "1000", 0, 1000 * US, 1000 * US },
		{ "999", "1000", 0, 999 * US, 1000 * US },
		{ "1", "0", 1, 0, 0 },
		{ "x", "5", 1, 0, 5 * US },		/* min bad: just one line */
		{ "20000", "x", 2, 0, 15000 * US },	/* max bad, then min too big */
	};

	return cr_make_param_array(struct minmax_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct minmax_case *m, config, min_above_max)
{
	struct harness h = { 0 };
	struct gc_config c;
	int j, min_lines = 0;

	if (*m->min)
		set(&h, "LIBGC_MIN_WAIT_US", m->min);
	if (*m->max)
		set(&h, "LIBGC_MAX_WAIT_US", m->max);
	cr_expect_eq(parse(&h, &c), m->bad, "min=%s max=%s", m->min, m->max);
	cr_expect_eq(h.nwarn, m->bad, "min=%s max=%s: %d warnings", m->min, m->max, h.nwarn);
	cr_expect_eq(c.c_policy.pc_min_wait_ns, m->want_min, "min=%s max=%s: min", m->min,
		     m->max);
	cr_expect_eq(c.c_policy.pc_max_wait_ns, m->want_max, "min=%s max=%s: max", m->min,
		     m->max);
	for (j = 0; j < h.nwarn; j++) {
		cr_expect_null(strchr(h.warn[j], '\n'));
		min_lines += names(h.warn[j], "LIBGC_MIN_WAIT_US");
	}
	if (m->bad)
		cr_expect_eq(min_lines, 1, "min=%s max=%s: LIBGC_MIN_WAIT_US named %d times",
			     m->min, m->max, min_lines);
}

Test(config, min_above_max_names_both)
{
	struct harness h = { 0 };
	struct gc_config c;

	set(&h, "LIBGC_MIN_WAIT_US", "2000");
	set(&h, "LIBGC_MAX_WAIT_US", "1000");
	parse(&h, &c);
	cr_assert_eq(h.nwarn, 1);
	cr_expect(names(h.warn[0], "LIBGC_MIN_WAIT_US"), "%s", h.warn[0]);
	cr_expect(names(h.warn[0], "LIBGC_MAX_WAIT_US"), "the line should say why: %s",
		  h.warn[0]);
}

/* ---- LIBGC_REPORT --------------------------------------------------------- */

struct report_case {
	char val[32];
	char want[32];
};

ParameterizedTestParameters(config, report)
{
	static struct report_case cases[] = {
		{ "1", "-" },			/* stderr */
		{ "0", "" },			/* off */
		{ "/tmp/gc-report.txt", "/tmp/gc-report.txt" },
		{ "/", "/" },
		{ "/dev/stderr", "/dev/stderr" },
	};

	return cr_make_param_array(struct report_case, cases, ARRAY_LEN(cases));
}

ParameterizedTest(struct report_case *r, config, report)
{
	struct harness h = { 0 };
	struct gc_config c;

	set(&h, "LIBGC_REPORT", r->val);
	cr_expect_eq(parse(&h, &c), 0, "LIBGC_REPORT=%s", r->val);
	cr_expect_eq(h.nwarn, 0, "LIBGC_REPORT=%s: %s", r->val, h.warn[0]);
	cr_expect_str_eq(c.c_report, r->want, "LIBGC_REPORT=%s", r->val);
}

/* The path must fit c_report with its NUL: 255 bytes do, 256 do not. */
Test(config, report_path_length)
{
	struct harness h = { 0 };
	struct gc_config c;
	char path[300];

	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[255] = '\0';
	set(&h, "LIBGC_REPORT", path);
	cr_expect_eq(parse(&h, &c), 0);
	cr_expect_str_eq(c.c_report, path);

	path[255] = 'a';
	path[256] = '\0';
	h = (struct harness){ 0 };
	set(&h, "LIBGC_REPORT", path);
	cr_expect_eq(parse(&h, &c), 1, "a 256-byte path cannot be kept");
	expect_one_warning(&h, "LIBGC_REPORT", "absolute path", "long path");
	cr_expect_str_eq(c.c_report, "", "report stays off");
}

/* Empty is a bad value for every variable (DESIGN: one line naming the
 * variable and the accepted form); LIBGC_REPORT is no exception. */
Test(config, report_empty_is_rejected)
{
	struct harness h = { 0 };
	struct gc_config c;

	set(&h, "LIBGC_REPORT", "");
	cr_expect_eq(parse(&h, &c), 1, "LIBGC_REPORT=\"\" accepted silently");
	cr_expect_eq(h.nwarn, 1, "LIBGC_REPORT=\"\": %d warnings", h.nwarn);
	cr_expect_str_eq(c.c_report, "", "report stays off");
}
