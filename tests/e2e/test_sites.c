// SPDX-License-Identifier: LGPL-2.1-or-later
/* Call sites: the exit report names the function that made the sync
 * requests and its library (fsync and O_DSYNC writes), LIBGC_SITES=0 turns
 * them off, and LIBGC_SCOPE groups the requests whose chain passes through
 * it while every other one is its own real call, with durability checked
 * by the spies either way; a bad scope groups nothing; a full table counts
 * into its "other" row; and capturing and
 * naming sites allocates nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/e2e/e2e.h"

TestSuite(sites, .init = e2e_setup, .fini = e2e_teardown, .timeout = 90);

#define PER 20	/* requests per thread */

/* The number after "@key": in the JSON object of the site whose function
 * is @fn; false when there is no such site or key. */
static bool site_get(const char *json, const char *fn, const char *key,
		     unsigned long long *v)
{
	char want[128];
	const char *p, *end, *k;

	snprintf(want, sizeof(want), "{\"fn\":\"%s\"", fn);
	p = strstr(json, want);
	if (!p || !(end = strchr(p, '}')))
		return false;
	snprintf(want, sizeof(want), "\"%s\":", key);
	k = strstr(p, want);
	if (!k || k > end)
		return false;
	*v = strtoull(k + strlen(want), NULL, 10);
	return true;
}

/* The number after "\"@key\":" in the counters of the report. */
static unsigned long long counter(const char *json, const char *key)
{
	char want[96];
	const char *p = strstr(json, "\"counters\":{");

	snprintf(want, sizeof(want), "\"%s\":", key);
	p = p ? strstr(p, want) : NULL;
	cr_assert(p, "no counter %s in:\n%s", key, json);
	return strtoull(p + strlen(want), NULL, 10);
}

/* siteprog with @per requests a thread. */
static void run_siteprog_n(struct e2e_run *r, int per, const char *mode, const char *threads,
			   const char *const *env)
{
	char n[16];
	const char *argv[] = { e2e_prog("siteprog"), e2e_dir(), n, mode, threads, NULL };

	snprintf(n, sizeof(n), "%d", per);
	e2e_run(r, PRE_GC, env, 60, argv);
	e2e_expect_ok(r, mode);
}

static void run_siteprog(struct e2e_run *r, const char *mode, const char *threads,
			 const char *const *env)
{
	run_siteprog_n(r, PER, mode, threads, env);
}

/* siteprog with its JSON report in a file: the report's text (to free). */
static char *run_siteprog_json(struct e2e_run *r, const char *mode, const char *threads)
{
	char envs[600];
	const char *env[] = { envs, NULL };

	snprintf(envs, sizeof(envs), "LIBGC_REPORT=%s", e2e_path("r.json"));
	run_siteprog(r, mode, threads, env);
	return e2e_slurp(e2e_path("r.json"));
}

/* The summary's call-site part, which must be there. */
static const char *sites_line(const struct e2e_run *r)
{
	const char *line = strstr(r->err, "top call sites:");

	cr_assert(line, "no call sites in the report:\n%s", r->err);
	return line;
}

Test(sites, summary_names_the_function_and_its_library)
{
	const char *env[] = { "LIBGC_REPORT=1", NULL };
	struct e2e_run r;
	const char *line;

	run_siteprog(&r, "lib", "threads=2", env);
	line = sites_line(&r);
	cr_expect(strstr(line, "site_flush_log (libsite.so+0x"),
		  "the function that called fsync and its library:\n%s", r.err);
	cr_expect(strstr(line, "40 requests"), "its 2 x %d requests:\n%s", PER, r.err);
	e2e_run_free(&r);
}

/* A site is named at its second request, or at exit for the report: a
 * process that syncs once maps no object file on its sync path, and its
 * report still names the site. */
Test(sites, a_site_seen_once_is_named_at_exit)
{
	const char *env[] = { "LIBGC_REPORT=1", NULL };
	struct e2e_run r;
	const char *line;

	run_siteprog_n(&r, 1, "lib", "threads=1", env);
	line = sites_line(&r);
	cr_expect(strstr(line, "site_flush_log (libsite.so+0x") && strstr(line, " 1 requests"),
		  "the one request's site, named:\n%s", r.err);
	e2e_run_free(&r);
}

Test(sites, json_report_has_a_sites_array)
{
	unsigned long long req = 0, direct = 0, committed = 0;
	struct e2e_run r;
	char *text = run_siteprog_json(&r, "mix", "threads=1");

	cr_expect(strstr(text, "\"sites\":[{"), "%s", text);
	cr_expect(strstr(text, "{\"fn\":\"site_flush_log\",\"lib\":\"libsite.so\""), "%s", text);
	cr_expect(strstr(text, "{\"fn\":\"local_flush\",\"lib\":\"siteprog\""),
		  "a static function of the program, by its symbol table:\n%s", text);
	cr_assert(site_get(text, "site_flush_log", "requests", &req), "%s", text);
	cr_expect_eq(req, PER, "%s", text);
	cr_assert(site_get(text, "local_flush", "direct", &direct));
	cr_assert(site_get(text, "local_flush", "committed", &committed));
	cr_assert(site_get(text, "local_flush", "requests", &req));
	cr_expect_eq(req, PER, "%s", text);
	cr_expect_eq(direct + committed, req, "each request served once:\n%s", text);
	free(text);
	e2e_run_free(&r);
}

Test(sites, osync_writes_are_requests_of_their_site)
{
	unsigned long long req = 0;
	struct e2e_run r;
	char *text = run_siteprog_json(&r, "osync", "threads=1");

	cr_assert(site_get(text, "site_write_sync", "requests", &req),
		  "the O_DSYNC write's function:\n%s", text);
	cr_expect_eq(req, PER, "%s", text);
	cr_expect(strstr(text, "{\"fn\":\"site_write_sync\",\"lib\":\"libsite.so\""), "%s", text);
	free(text);
	e2e_run_free(&r);
}

Test(sites, sites_off_records_none)
{
	const char *env[] = { "LIBGC_REPORT=1", "LIBGC_SITES=0", NULL };
	struct e2e_run r;

	run_siteprog(&r, "lib", "threads=1", env);
	cr_expect(strstr(r.err, "20 sync requests"), "%s", r.err);
	cr_expect_null(strstr(r.err, "call sites"), "%s", r.err);
	e2e_run_free(&r);
}

/* Two threads sync through libsite.so and two from the program, under a
 * policy that groups every request it may: the scope's side is grouped,
 * the other side is all direct calls, and every request is covered. */
static void scope_run(const char *scope, const char *in_fn, const char *out_fn)
{
	char envs[600], envscope[200], n[16];
	const char *env[] = { envs, envscope, "LIBGC_PROBE=0", "LIBGC_POLICY=fixed",
			      "LIBGC_WAIT_US=2000", NULL };
	const char *argv[] = { e2e_prog("siteprog"), e2e_dir(), n, "mix", "threads=2", NULL };
	unsigned long long req, direct, committed, scoped;
	struct spy_summary s;
	struct e2e_run r;
	char *text;

	snprintf(n, sizeof(n), "%d", PER);
	snprintf(envs, sizeof(envs), "LIBGC_REPORT=%s", e2e_path("scope.json"));
	snprintf(envscope, sizeof(envscope), "LIBGC_SCOPE=%s", scope);
	e2e_run_spied(&r, &s, PRE_SPY_GC, env, 60, argv, scope);
	e2e_expect_ok(&r, scope);
	cr_expect_eq(s.s_violations, 0, "%s: %zu requests without a covering real call", scope,
		     s.s_violations);
	cr_expect_eq(s.s_prog, 4 * PER, "%s: the outer spy saw %zu requests", scope, s.s_prog);
	cr_expect_eq(s.s_real_fail + s.s_unexplained_fail + s.s_bad, 0, "%s", scope);
	text = e2e_slurp(e2e_path("scope.json"));
	cr_expect_eq(counter(text, "scoped_out"), 2 * PER, "%s:\n%s", scope, text);

	cr_assert(site_get(text, out_fn, "requests", &req), "%s: no site %s:\n%s", scope, out_fn,
		  text);
	cr_assert(site_get(text, out_fn, "direct", &direct));
	cr_assert(site_get(text, out_fn, "committed", &committed));
	cr_assert(site_get(text, out_fn, "scoped_out", &scoped));
	cr_expect_eq(req, 2 * PER, "%s: %s:\n%s", scope, out_fn, text);
	cr_expect(scoped == req && direct == req && committed == 0,
		  "%s: out of scope, %s: %llu requests, %llu scoped out, %llu direct, %llu committed",
		  scope, out_fn, req, scoped, direct, committed);

	cr_assert(site_get(text, in_fn, "requests", &req), "%s: no site %s:\n%s", scope, in_fn,
		  text);
	cr_assert(site_get(text, in_fn, "direct", &direct));
	cr_assert(site_get(text, in_fn, "committed", &committed));
	cr_assert(site_get(text, in_fn, "scoped_out", &scoped));
	cr_expect_eq(req, 2 * PER, "%s: %s:\n%s", scope, in_fn, text);
	cr_expect(scoped == 0 && committed >= 1 && direct + committed == req,
		  "%s: in scope, %s: %llu requests, %llu scoped out, %llu direct, %llu committed",
		  scope, in_fn, req, scoped, direct, committed);
	free(text);
	e2e_run_free(&r);
}

Test(sites, scope_by_library)
{
	scope_run("lib:libsite.so", "site_flush_log", "local_flush");
}

Test(sites, scope_by_function)
{
	scope_run("fn:nothing_of_this_name,fn:local_flush", "local_flush", "site_flush_log");
}

Test(sites, bad_scope_says_so_once_and_groups_nothing)
{
	char envs[600];
	const char *env[] = { envs, "LIBGC_SCOPE=library:libsite.so", "LIBGC_PROBE=0",
			      "LIBGC_POLICY=fixed", "LIBGC_WAIT_US=2000", NULL };
	struct e2e_run r;
	const char *p;
	char *text;
	int said = 0;

	snprintf(envs, sizeof(envs), "LIBGC_REPORT=%s", e2e_path("bad.json"));
	run_siteprog(&r, "mix", "threads=2", env);
	for (p = r.err; (p = strstr(p, "LIBGC_SCOPE")); p++)
		said++;
	cr_expect_eq(said, 1, "one line on stderr:\n%s", r.err);
	cr_expect(strstr(r.err, "grouping nothing"), "%s", r.err);
	text = e2e_slurp(e2e_path("bad.json"));
	cr_expect_eq(counter(text, "scoped_out"), 4 * PER, "%s", text);
	cr_expect_eq(counter(text, "committed"), 0, "%s", text);
	cr_expect_eq(counter(text, "direct"), 4 * PER, "%s", text);
	free(text);
	e2e_run_free(&r);
}

/* The first request of each site is named there, on the sync path, which
 * a signal handler's O_SYNC write may reach: no allocation on the way. */
Test(sites, capture_and_naming_allocate_nothing)
{
	static const char *const modes[] = { "mix", "osync" };
	static const char *const scopes[] = { NULL, "LIBGC_SCOPE=lib:libsite.so" };
	char pre[4096], n[16];
	struct e2e_run r;

	snprintf(pre, sizeof(pre), "%s %s", e2e_prog("libmcount.so"), "gc");
	snprintf(n, sizeof(n), "%d", PER);
	for (int m = 0; m < 2; m++)
		for (int k = 0; k < 2; k++) {
			const char *env[] = { "LIBGC_SITES=1", scopes[k], NULL };
			const char *argv[] = { e2e_prog("siteprog"), e2e_dir(), n, modes[m],
					       "threads=2", NULL };

			e2e_run(&r, pre, env, 60, argv);
			e2e_expect_ok(&r, modes[m]);
			cr_expect(e2e_out_long(r.out, "mallocs") == 0 && strstr(r.out, "mallocs=0"),
				  "%s %s: allocations during the sync loops:\n%s", modes[m],
				  scopes[k] ? scopes[k] : "", r.out);
			e2e_run_free(&r);
		}
}

/* 40 places that fsync, a table of 32: the rest is counted, as "(other)". */
Test(sites, a_full_table_counts_into_other)
{
	unsigned long long req = 0;
	struct e2e_run r;
	const char *p;
	char *text = run_siteprog_json(&r, "many", "threads=1");
	int rows = 0;

	for (p = text; (p = strstr(p, "{\"fn\":")); p++)
		rows++;
	cr_expect_eq(rows, 33, "32 named sites and the other row:\n%s", text);
	cr_assert(site_get(text, "(other)", "requests", &req), "no other row:\n%s", text);
	cr_expect_eq(req, 8 * PER, "the 8 sites that found no room:\n%s", text);
	cr_expect(site_get(text, "many_sites", "requests", &req) && req == PER,
		  "a named one, with its own count:\n%s", text);
	free(text);
	e2e_run_free(&r);
}
