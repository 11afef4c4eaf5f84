// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcstat: a live view of every process under libgc (their stats segments,
 * core/procstats.h) and, when gcd's stats file is fresh, of each disk
 * (core/blkstats.h). A terminal gets a redrawn screen; a pipe a scrolling
 * table; --json one snapshot. Segments of dead processes are removed. The
 * directory is everyone's: only regular files owned by the uid their name
 * carries are read, without blocking or following links. A process that
 * ends between two samples is shown once more, from its last counts (its
 * segment stays mapped here after its name goes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/blkstats.h"
#include "core/clock.h"
#include "core/procstats.h"
#include "core/sys.h"

#define MAXP 512

struct proc {
	char name[256];
	struct gc_ps_map map;	/* kept across samples */
	struct gc_ps_snap now, prev;
	int have_prev, seen, exited;
};

static struct proc procs[MAXP];
static int nprocs;
static int opt_pid, opt_json, opt_sites, opt_count = -1, pruned;
static double opt_interval = 1.0;
static volatile sig_atomic_t stop;
static uint64_t scan_ns, prev_scan_ns;	/* when the last two scans ran */

static void on_sig(int s)
{
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gcstat [-p PID] [-i SECONDS] [-n COUNT] [--json]\n"
		"       gcstat -p PID --sites [--json]\n"
		"A live view of the processes running under libgc and of the disks gcd observes.\n"
		"  -p, --pid PID       only this process\n"
		"  -i, --interval S    seconds between samples (default 1; 0 with --json: totals only)\n"
		"  -n, --count N       stop after N samples\n"
		"  -j, --json          one JSON snapshot (rates over one interval) and exit\n"
		"  -s, --sites         with -p: the process's call sites (totals) and exit; a\n"
		"                      process not recording them is asked to, from its next\n"
		"                      sync request, and its sites are shown after -i seconds\n"
		"  -h, --help          this text\n"
		"Columns: requests/s, real syncs/s, mean batch (requests per real sync), time a\n"
		"request waited in the library and a commit took (p50/p99 over the interval),\n"
		"MB/s written through the interposed write calls (buffered and synchronous),\n"
		"THR%%: time the dirty limiter held writers, as %% of the interval (summed over\n"
		"threads), errors in the interval.\n"
		"Segments: $LIBGC_STATS_DIR or /dev/shm; gcd's file: $LIBGC_BLK_STATS or %s.\n",
		GC_BLK_PATH);
}

/* A segment whose process is gone (or whose pid now names another process,
 * @snap when known) is removed; only segments of our pid namespace can be
 * judged, and only a regular file owned by the uid in its name is one. */
static bool stale(int32_t pid, uint64_t pidns, const struct gc_ps_snap *snap)
{
	uint64_t st;

	if (pidns != gc_sys_pidns())
		return false;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	st = gc_ps_starttime(pid);
	return snap && st && snap->sn_starttime && snap->sn_starttime != st;
}

static void prune_one(const char *dir, const char *name, uint32_t uid)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid &&
	    unlink(path) == 0)
		pruned++;
}

static struct proc *find(const char *name, bool add)
{
	int i;

	for (i = 0; i < nprocs; i++)
		if (!strcmp(procs[i].name, name))
			return &procs[i];
	if (!add || nprocs == MAXP)
		return NULL;
	memset(&procs[nprocs], 0, sizeof(procs[0]));
	snprintf(procs[nprocs].name, sizeof(procs[0].name), "%s", name);
	return &procs[nprocs++];
}

/* A new sample of @p from its mapping. */
static void sample(struct proc *p, const struct gc_ps_snap *snap)
{
	if (p->now.sn_pid && p->now.sn_made_ns != snap->sn_made_ns) {
		p->have_prev = 0; /* a new image or process of that name */
	} else if (p->now.sn_pid) {
		p->prev = p->now;
		p->have_prev = 1;
	}
	p->now = *snap;
	p->seen = 1;
}

static void scan(void)
{
	const char *dir = gc_ps_dir();
	struct dirent *de;
	uint32_t uid;
	uint64_t pidns;
	int32_t pid;
	DIR *d;
	int i, j;

	/* processes shown as ended last time are gone for good */
	for (i = j = 0; i < nprocs; i++) {
		if (procs[i].exited) {
			gc_ps_close(&procs[i].map);
			continue;
		}
		procs[i].seen = 0;
		procs[j++] = procs[i];
	}
	nprocs = j;
	prev_scan_ns = scan_ns;
	scan_ns = gc_now_ns();
	d = opendir(dir);
	if (d) {
		while ((de = readdir(d))) {
			struct gc_ps_snap snap;
			struct proc *p;
			bool have;

			if (!gc_ps_parse_name(de->d_name, &uid, &pidns, &pid))
				continue;
			if (opt_pid && pid != opt_pid && !stale(pid, pidns, NULL))
				continue;
			p = find(de->d_name, false);
			if (p && p->map.pm_ino != (uint64_t)de->d_ino) {
				/* another file under the name: a new image or process */
				gc_ps_close(&p->map);
				if (gc_ps_open(dir, de->d_name, &p->map) < 0)
					memset(&p->map, 0, sizeof(p->map));
			}
			have = p && p->map.pm_seg && gc_ps_snap(&p->map, &snap) == 0;
			if (!have && !p) {
				struct gc_ps_map m;

				if (gc_ps_open(dir, de->d_name, &m) == 0) {
					if (gc_ps_snap(&m, &snap) == 0 && (p = find(de->d_name, true))) {
						p->map = m;
						have = true;
					} else {
						gc_ps_close(&m);
					}
				}
			}
			if (stale(pid, pidns, have ? &snap : NULL)) {
				prune_one(dir, de->d_name, uid);
				if (p)
					p->seen = 0;
				continue;
			}
			if (have && (!opt_pid || pid == opt_pid))
				sample(p, &snap);
		}
		closedir(d);
	}
	/* A process seen last time whose segment went meanwhile ended: its
	 * mapping still holds its last counts; shown once more. */
	for (i = 0; i < nprocs; i++) {
		struct gc_ps_snap snap;

		if (procs[i].seen || !procs[i].map.pm_seg)
			continue;
		if (gc_ps_snap(&procs[i].map, &snap) == 0 && snap.sn_pid == procs[i].now.sn_pid) {
			sample(&procs[i], &snap);
			procs[i].exited = 1;
		}
	}
	for (i = j = 0; i < nprocs; i++) {
		if (procs[i].seen)
			procs[j++] = procs[i];
		else
			gc_ps_close(&procs[i].map);
	}
	nprocs = j;
}

static const char *lat(char *buf, size_t len, uint64_t ns);
static void json_str(const char *s);

/* ---- call sites (-p PID --sites) ---------------------------------------- */

static void print_sites(const struct proc *p, const struct gc_ps_sites *ss)
{
	int order[GC_SITE_ROWS], n = gc_sites_rank(ss->ss_ctr, order), k;
	char a[16], b[16], c[16];

	if (opt_json) {
		printf("{\"pid\":%d,\"comm\":", (int)p->now.sn_pid);
		json_str(p->now.sn_comm);
		printf(",\"cmd\":");
		json_str(p->now.sn_cmd);
		printf(",\"sites\":[");
	} else {
		printf("pid %d (%s): %d call site%s\n", (int)p->now.sn_pid, p->now.sn_comm, n,
		       n == 1 ? "" : "s");
		printf("%9s %9s %9s %9s %7s %7s %7s  %s\n", "REQUESTS", "DIRECT", "COMMITTED",
		       "SCOPEDOUT", "WAIT", "WAIT99", "COMMIT", "FUNCTION (LIBRARY+OFFSET) < CALLERS");
	}
	for (k = 0; k < n; k++) {
		int row = order[k];
		const struct gc_site_ctr *ct = &ss->ss_ctr[row];
		const struct gc_site_desc *d = row < GC_SITES && ss->ss_desc[row].sd_ready
						       ? &ss->ss_desc[row]
						       : NULL;
		const char *fn = d ? d->sd_fn : row == GC_SITE_OTHER ? "(other)" : "?";
		uint64_t wait = ct->sc_wait_ns / ct->sc_requests, p99 = gc_site_hist_pct(ct->sc_hist, 99);
		uint64_t com = ct->sc_commit_ns / ct->sc_requests;

		if (opt_json) {
			printf("%s{\"fn\":", k ? "," : "");
			json_str(fn);
			printf(",\"lib\":");
			json_str(d ? d->sd_lib : "");
			printf(",\"offset\":\"0x%" PRIx64 "\",\"chain\":", d ? d->sd_off : 0);
			json_str(d ? d->sd_chain : "");
			printf(",\"requests\":%" PRIu64 ",\"direct\":%" PRIu64 ",\"committed\":%" PRIu64
			       ",\"scoped_out\":%" PRIu64 ",\"wait_mean_ns\":%" PRIu64
			       ",\"wait_p99_ns\":%" PRIu64 ",\"commit_mean_ns\":%" PRIu64 "}",
			       ct->sc_requests, ct->sc_direct, ct->sc_committed, ct->sc_scoped_out, wait,
			       p99, com);
			continue;
		}
		printf("%9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %7s %7s %7s  %s", ct->sc_requests,
		       ct->sc_direct, ct->sc_committed, ct->sc_scoped_out, lat(a, sizeof(a), wait),
		       lat(b, sizeof(b), p99), lat(c, sizeof(c), com), fn);
		if (d)
			printf(" (%s+0x%" PRIx64 ")", d->sd_lib, d->sd_off);
		if (d && strchr(d->sd_chain, '<'))
			printf(" < %s", strchr(d->sd_chain, '<') + 2);
		printf("\n");
	}
	if (opt_json)
		printf("]}\n");
}

static int show_sites(void)
{
	static struct gc_ps_sites ss;
	struct gc_ps_map m;
	int r, tries;

	scan();
	if (!nprocs) {
		fprintf(stderr, "gcstat: no process %d under libgc (no stats segment in %s)\n", opt_pid,
			gc_ps_dir());
		return 1;
	}
	r = gc_ps_snap_sites(&procs[0].map, &ss);
	if (r == -ENOENT) {
		/* Not recording them: asked to from its next sync request on,
		 * then given one interval to make some. */
		r = gc_ps_ask_sites(gc_ps_dir(), procs[0].name);
		if (r < 0) {
			fprintf(stderr, "gcstat: cannot ask pid %d for call sites: %s\n", opt_pid,
				strerror(-r));
			return 1;
		}
		for (tries = 0, r = -ENOENT; tries < 20 && r == -ENOENT; tries++) {
			struct timespec d = { 0, 100 * 1000 * 1000 };

			nanosleep(&d, NULL);
			if (gc_ps_open(gc_ps_dir(), procs[0].name, &m) < 0)
				break;
			r = gc_ps_snap_sites(&m, &ss);
			gc_ps_close(&m);
		}
		if (r == 0) {
			struct timespec d = { (time_t)opt_interval,
					      (long)((opt_interval - (time_t)opt_interval) * 1e9) };

			nanosleep(&d, NULL);
			r = gc_ps_open(gc_ps_dir(), procs[0].name, &m);
			if (r == 0) {
				r = gc_ps_snap_sites(&m, &ss);
				gc_ps_close(&m);
			}
		} else if (r == -ENOENT) {
			fprintf(stderr, "gcstat: pid %d records call sites from its next sync request on; none yet\n",
				opt_pid);
			memset(&ss, 0, sizeof(ss));
			r = 0;
		}
	}
	if (r < 0) {
		fprintf(stderr, "gcstat: %s/%s: %s\n", gc_ps_dir(), procs[0].name, strerror(-r));
		return 1;
	}
	print_sites(&procs[0], &ss);
	return 0;
}

/* ---- gcd's file -------------------------------------------------------- */

static bool read_blk(struct gc_blk_stats *out)
{
	const char *path = getenv("LIBGC_BLK_STATS");
	struct gc_blk_stats *m;
	uint64_t seq, now, age, fresh;
	struct stat st;
	int fd, tries;
	bool ok = false;

	fd = open(path && *path ? path : GC_BLK_PATH, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(*m)) {
		close(fd);
		return false;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return false;
	for (tries = 0; tries < 100 && !ok; tries++) {
		seq = __atomic_load_n(&m->bs_seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;
		memcpy(out, m, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		ok = __atomic_load_n(&m->bs_seq, __ATOMIC_RELAXED) == seq;
	}
	munmap(m, sizeof(*m));
	if (!ok || out->bs_magic != GC_BLK_MAGIC || out->bs_version != GC_BLK_VERSION ||
	    out->bs_size != sizeof(*out) || out->bs_ndisks > GC_BLK_DISKS)
		return false;
	now = gc_now_ns();
	age = now > out->bs_heartbeat_ns ? now - out->bs_heartbeat_ns : 0;
	fresh = 3ULL * out->bs_interval_ms * 1000000ULL;
	if (fresh < 500000000ULL)
		fresh = 500000000ULL;
	if (fresh > 10000000000ULL)
		fresh = 10000000000ULL;
	return age <= fresh;
}

/* ---- rendering --------------------------------------------------------- */

struct row {
	const struct proc *p;
	double dt, req_s, real_s, batch, mb_s, thr_pct;
	uint64_t req, real, errors;
	uint64_t wait50, wait99, com50, com99;
};

static void delta_hist(const uint64_t *a, const uint64_t *b, uint64_t *out)
{
	int i;

	for (i = 0; i < GC_HIST_NS; i++)
		out[i] = b && b[i] <= a[i] ? a[i] - b[i] : a[i];
}

static void make_row(const struct proc *p, struct row *r)
{
	const struct gc_stats *a = &p->now.sn_s, *b = p->have_prev ? &p->prev.sn_s : NULL;
	uint64_t h[GC_HIST_NS], req, real;

	memset(r, 0, sizeof(*r));
	r->p = p;
	r->req = gc_stats_requests(a);
	r->real = a->real_fsync + a->real_fdatasync;
	r->errors = a->errors;
	r->dt = prev_scan_ns ? (double)(scan_ns - prev_scan_ns) / 1e9 : 0;
	req = r->req - (b ? gc_stats_requests(b) : 0);
	real = r->real - (b ? b->real_fsync + b->real_fdatasync : 0);
	if (b && r->dt > 0) {
		r->req_s = (double)req / r->dt;
		r->real_s = (double)real / r->dt;
		r->mb_s = (double)(a->bytes_written + a->bytes_buffered - b->bytes_written -
				   b->bytes_buffered) / r->dt / 1e6;
		r->thr_pct = (double)(a->dirty_wait_ns - b->dirty_wait_ns) / r->dt / 1e7;
		r->errors = a->errors - b->errors;
	}
	r->batch = real ? (double)req / (double)real : 0;
	delta_hist(p->now.sn_h.h_wait, b ? p->prev.sn_h.h_wait : NULL, h);
	r->wait50 = gc_hist_ns_pct(h, 50);
	r->wait99 = gc_hist_ns_pct(h, 99);
	delta_hist(p->now.sn_h.h_commit, b ? p->prev.sn_h.h_commit : NULL, h);
	r->com50 = gc_hist_ns_pct(h, 50);
	r->com99 = gc_hist_ns_pct(h, 99);
}

static const char *lat(char *buf, size_t len, uint64_t ns)
{
	if (!ns)
		snprintf(buf, len, "-");
	else if (ns < 1000000)
		snprintf(buf, len, "%.0fu", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1fm", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
	return buf;
}

static void print_table(FILE *f, const struct gc_blk_stats *blk, bool have_blk)
{
	char a[16], b[16], c[16], d[16], e[16], g[16];
	struct row r;
	unsigned int i;
	int k;

	fprintf(f, "%7s %-16s %9s %9s %6s %7s %7s %7s %7s %7s %5s %6s\n", "PID", "COMMAND",
		"REQ/s", "REAL/s", "BATCH", "WAIT50", "WAIT99", "COMM50", "COMM99", "MB/s", "THR%",
		"ERR");
	for (k = 0; k < nprocs; k++) {
		char cmd[24];

		make_row(&procs[k], &r);
		snprintf(cmd, sizeof(cmd), "%.*s%s", r.p->exited ? 14 : 16, r.p->now.sn_comm,
			 r.p->exited ? " *" : "");
		fprintf(f, "%7d %-16.16s %9.1f %9.1f %6.2f %7s %7s %7s %7s %7.2f %5.1f %6" PRIu64
			"\n", (int)r.p->now.sn_pid, cmd, r.req_s, r.real_s, r.batch,
			lat(a, sizeof(a), r.wait50), lat(b, sizeof(b), r.wait99),
			lat(c, sizeof(c), r.com50), lat(d, sizeof(d), r.com99), r.mb_s, r.thr_pct,
			r.errors);
	}
	if (!nprocs)
		fprintf(f, "        (no process under libgc%s)\n", opt_pid ? " with that pid" : "");
	for (k = 0; k < nprocs && !procs[k].exited; k++)
		;
	if (k < nprocs)
		fprintf(f, "        (* ended during the interval: its last counts)\n");
	if (!have_blk)
		return;
	fprintf(f, "\n%-10s %7s %7s %7s %7s %7s %7s %8s %8s\n", "DISK", "FLUSH50", "FLUSH99",
		"WRITE50", "WRITE99", "READ50", "READ99", "WMB/s", "RMB/s");
	for (i = 0; i < blk->bs_ndisks; i++) {
		const struct gc_blk_disk *dk = &blk->bs_disks[i];
		char name[sizeof(dk->bd_name) + 1];

		memcpy(name, dk->bd_name, sizeof(dk->bd_name));
		name[sizeof(dk->bd_name)] = '\0';
		fprintf(f, "%-10.10s %7s %7s %7s %7s %7s %7s %8.2f %8.2f\n", name,
			lat(a, sizeof(a), dk->bd_op[GC_BLK_FLUSH].bo_p50_ns),
			lat(b, sizeof(b), dk->bd_op[GC_BLK_FLUSH].bo_p99_ns),
			lat(c, sizeof(c), dk->bd_op[GC_BLK_WRITE].bo_p50_ns),
			lat(d, sizeof(d), dk->bd_op[GC_BLK_WRITE].bo_p99_ns),
			lat(e, sizeof(e), dk->bd_op[GC_BLK_READ].bo_p50_ns),
			lat(g, sizeof(g), dk->bd_op[GC_BLK_READ].bo_p99_ns),
			(double)dk->bd_op[GC_BLK_WRITE].bo_bytes_per_s / 1e6,
			(double)dk->bd_op[GC_BLK_READ].bo_bytes_per_s / 1e6);
	}
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct gc_blk_stats *blk, bool have_blk)
{
	struct timespec ts;
	struct row r;
	unsigned int i, o;
	size_t f;
	int k;
	static const char *const ops[] = { "flush", "write", "read" };

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("{\"time\":%lld.%03ld,\"interval_s\":%.3f,\"pruned\":%d,\"processes\":[",
	       (long long)ts.tv_sec, ts.tv_nsec / 1000000, opt_interval, pruned);
	for (k = 0; k < nprocs; k++) {
		const struct gc_stats *s = &procs[k].now.sn_s;
		const uint64_t *v = (const uint64_t *)s;

		make_row(&procs[k], &r);
		printf("%s{\"pid\":%d,\"uid\":%u,\"exited\":%s,\"comm\":", k ? "," : "",
		       (int)r.p->now.sn_pid, r.p->now.sn_uid, r.p->exited ? "true" : "false");
		json_str(r.p->now.sn_comm);
		printf(",\"cmd\":");
		json_str(r.p->now.sn_cmd);
		printf(",\"requests\":%" PRIu64 ",\"real_syncs\":%" PRIu64
		       ",\"requests_per_s\":%.2f,\"real_per_s\":%.2f,\"mean_batch\":%.3f"
		       ",\"mb_per_s\":%.3f,\"throttled_pct\":%.2f,\"errors_in_interval\":%" PRIu64
		       ",\"wait_ns\":{\"p50\":%" PRIu64 ",\"p99\":%" PRIu64 "}"
		       ",\"commit_ns\":{\"p50\":%" PRIu64 ",\"p99\":%" PRIu64 "},\"counters\":{",
		       r.req, r.real, r.req_s, r.real_s, r.batch, r.mb_s, r.thr_pct, r.errors, r.wait50,
		       r.wait99, r.com50, r.com99);
		for (f = 0; f < GC_STATS_NFIELDS; f++)
			printf("%s\"%s\":%" PRIu64, f ? "," : "", gc_stats_names[f], v[f]);
		printf("}}");
	}
	printf("],\"disks\":[");
	for (i = 0; have_blk && i < blk->bs_ndisks; i++) {
		const struct gc_blk_disk *dk = &blk->bs_disks[i];
		char name[sizeof(dk->bd_name) + 1];

		memcpy(name, dk->bd_name, sizeof(dk->bd_name));
		name[sizeof(dk->bd_name)] = '\0';
		printf("%s{\"name\":", i ? "," : "");
		json_str(name);
		printf(",\"dev\":\"%u:%u\"", major(dk->bd_dev), minor(dk->bd_dev));
		for (o = 0; o < GC_BLK_OPS; o++)
			printf(",\"%s\":{\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64
			       ",\"bytes_per_s\":%" PRIu64 ",\"count\":%" PRIu64 "}",
			       ops[o], dk->bd_op[o].bo_p50_ns, dk->bd_op[o].bo_p99_ns,
			       dk->bd_op[o].bo_bytes_per_s, dk->bd_op[o].bo_count);
		printf("}");
	}
	printf("]}\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "sites", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gc_blk_stats blk;
	bool tty = isatty(1), have_blk;
	char *end;
	int c, iter = 0;

	while ((c = getopt_long(argc, argv, "p:i:n:jsh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			opt_pid = (int)strtol(optarg, &end, 10);
			if (*end || opt_pid <= 0) {
				fprintf(stderr, "gcstat: -p wants a pid, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'i':
			opt_interval = strtod(optarg, &end);
			if (*end || opt_interval < 0 || opt_interval > 3600) {
				fprintf(stderr, "gcstat: -i wants seconds (0-3600), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'n':
			opt_count = (int)strtol(optarg, &end, 10);
			if (*end || opt_count <= 0) {
				fprintf(stderr, "gcstat: -n wants a count, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'j':
			opt_json = 1;
			break;
		case 's':
			opt_sites = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (opt_sites && !opt_pid) {
		fprintf(stderr, "gcstat: --sites wants a process: -p PID\n");
		return 2;
	}
	if (opt_sites)
		return show_sites();
	if (!opt_json && opt_interval <= 0)
		opt_interval = 1;
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGPIPE, SIG_DFL);
	scan();
	if (opt_json) {
		if (opt_interval > 0) {
			struct timespec d = { (time_t)opt_interval,
					      (long)((opt_interval - (time_t)opt_interval) * 1e9) };

			nanosleep(&d, NULL);
			scan();
		}
		have_blk = read_blk(&blk);
		print_json(&blk, have_blk);
		return 0;
	}
	for (;;) {
		struct timespec d = { (time_t)opt_interval,
				      (long)((opt_interval - (time_t)opt_interval) * 1e9) };

		nanosleep(&d, NULL);
		if (stop)
			break;
		scan();
		have_blk = read_blk(&blk);
		if (tty) {
			printf("\033[H\033[2J");
			printf("gcstat  every %.1f s  %d process%s under libgc%s   (q: ctrl-c)\n\n",
			       opt_interval, nprocs, nprocs == 1 ? "" : "es",
			       have_blk ? "" : "   (no fresh gcd stats: disks not shown)");
		} else {
			time_t t = time(NULL);
			char when[32];

			strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
			printf("-- %s\n", when);
		}
		print_table(stdout, &blk, have_blk);
		fflush(stdout);
		if (opt_count > 0 && ++iter >= opt_count)
			break;
		if (stop)
			break;
	}
	return 0;
}
