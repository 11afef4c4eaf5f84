// SPDX-License-Identifier: LGPL-2.1-or-later
/* The exit report (LIBGC_REPORT): what this process asked for and what
 * reached the kernel, as a short summary, the key=value line or JSON, on
 * stderr or appended to a file; from exit handlers and from _exit/_Exit,
 * once. stderr is duplicated at the first sync request (close-on-exec, at
 * the descriptor floor) because programs such as cp, dd and tar close fd 2
 * before exit handlers run. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/procstats.h"
#include "core/sites.h"
#include "core/stats.h"
#include "shim/shim.h"

static const char *const sym_names[GC_SYM_COUNT] = {
#define SYM(ret, name, params) #name,
#include "shim/syms.def"
#undef SYM
};

GC_START static int rep_fd = -1;		/* our duplicate of stderr */
static dev_t rep_dev;		/* ... and what it was, to know it is still ours */
static ino_t rep_ino;
static int rep_done;
GC_START int gc_report_armed;

static int raw_fcntl(int fd, int cmd, long arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

void gc_report_arm(void)
{
	struct stat st;
	int fd;

	if (__atomic_exchange_n(&gc_report_armed, 1, __ATOMIC_ACQ_REL))
		return;
	if (!gc_conf() || !gc_cfg.c_report[0] || !gc_stderr_ok() || fstat(2, &st) < 0)
		return;
	/* kept for a file report too: where to say that it could not be written */
	fd = raw_fcntl(2, F_DUPFD_CLOEXEC, gc_sys_fd_floor());
	if (fd < 0)
		return;
	rep_dev = st.st_dev;
	rep_ino = st.st_ino;
	__atomic_store_n(&rep_fd, fd, __ATOMIC_RELEASE);
	gc_own_keep(&rep_fd);
}

/* Our duplicate, if the program has not closed it and put something else
 * at that number; else fd 2 if open; else -1. */
static int stderr_fd(void)
{
	struct stat st;

	if (rep_fd >= 0 && fstat(rep_fd, &st) == 0 && st.st_dev == rep_dev &&
	    st.st_ino == rep_ino && (raw_fcntl(rep_fd, F_GETFD, 0) & FD_CLOEXEC))
		return rep_fd;
	if (rep_fd >= 0)
		gc_own_drop(&rep_fd);
	rep_fd = -1;
	return gc_stderr_ok() && raw_fcntl(2, F_GETFD, 0) >= 0 ? 2 : -1;
}

static void put(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = gc_sys_write_quiet(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

/* Appends to the report file: created 0644 (umask applies), never through
 * a symlink another user planted (one of ours or root's is followed). */
static int open_report_file(const char *path)
{
	int fl = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
	struct stat st;
	int fd;

	fd = (int)syscall(SYS_openat, AT_FDCWD, path, fl | O_NOFOLLOW, 0644);
	if (fd < 0 && errno == ELOOP && lstat(path, &st) == 0 &&
	    (st.st_uid == geteuid() || st.st_uid == 0))
		fd = (int)syscall(SYS_openat, AT_FDCWD, path, fl, 0644);
	return fd;
}

struct buf {
	char *b;
	size_t len, n;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->n >= b->len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(b->b + b->n, b->len - b->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		b->n = b->n + (size_t)w < b->len ? b->n + (size_t)w : b->len;
}

static void bjson_str(struct buf *b, const char *s)
{
	bprintf(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			bprintf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			bprintf(b, "\\u%04x", c);
		else
			bprintf(b, "%c", c);
	}
	bprintf(b, "\"");
}

/* The process's name, as /proc/self/comm has it: on its main thread the
 * thread's own, without a lookup in /proc (a new process's first costs
 * about 10 us) */
static void comm_of(char *comm, size_t len)
{
	char name[17] = { 0 };
	ssize_t n = -1;
	int fd;

	if (gc_gettid() == gc_getpid() && syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0) == 0) {
		snprintf(comm, len, "%s", name);
		return;
	}
	fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (ssize_t)syscall(SYS_read, fd, comm, len - 1);
		syscall(SYS_close, fd);
	}
	if (n <= 0)
		n = 0;
	comm[n] = '\0';
	if (n && comm[n - 1] == '\n')
		comm[n - 1] = '\0';
}

/* "1.23 ms"-style duration */
static const char *dur(char *out, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(out, len, "%llu us", (unsigned long long)(ns + 500) / 1000);
	else if (ns < 10000000)
		snprintf(out, len, "%.2f ms", (double)ns / 1e6);
	else if (ns < 10000000000ULL)
		snprintf(out, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(out, len, "%.1f s", (double)ns / 1e9);
	return out;
}

/* The names of row @r: the other row has none. */
static const struct gc_site_desc *site_desc(const struct gc_site_area *a, int r)
{
	return r < GC_SITES && __atomic_load_n(&a->sa_desc[r].sd_ready, __ATOMIC_ACQUIRE) ==
				       GC_SD_NAMED
		       ? &a->sa_desc[r]
		       : NULL;
}

/* "libgc: pid N (comm): top call sites: fn (lib+0xoff) 12 requests, ..." */
static void human_sites(struct buf *b, int pid, const char *comm, const struct gc_site_area *a,
			const struct gc_site_ctr *ctr)
{
	int order[GC_SITE_ROWS], n = ctr ? gc_sites_rank(ctr, order) : 0, i;
	char d1[32], d2[32];

	if (!n)
		return;
	bprintf(b, "libgc: pid %d (%s): top call sites:", pid, comm);
	for (i = 0; i < n && i < 3; i++) {
		const struct gc_site_ctr *c = &ctr[order[i]];
		const struct gc_site_desc *d = site_desc(a, order[i]);

		if (d)
			bprintf(b, "%s %s (%s+0x%llx)", i ? ";" : "", d->sd_fn, d->sd_lib,
				(unsigned long long)d->sd_off);
		else
			bprintf(b, "%s %s", i ? ";" : "",
				order[i] == GC_SITE_OTHER ? "(other sites)" : "(unnamed)");
		bprintf(b, " %llu requests, waited %s mean, p99 %s",
			(unsigned long long)c->sc_requests,
			dur(d1, sizeof(d1), c->sc_wait_ns / c->sc_requests),
			dur(d2, sizeof(d2), gc_site_hist_pct(c->sc_hist, 99)));
		if (c->sc_scoped_out)
			bprintf(b, ", %llu out of LIBGC_SCOPE", (unsigned long long)c->sc_scoped_out);
	}
	if (n > 3)
		bprintf(b, "; %d more", n - 3);
	bprintf(b, "\n");
}

/* An errno entry's name: its E name, "other" for the overflow entry. */
static const char *err_name(const struct gc_errtab *t, int i, char *buf, size_t len)
{
	const char *n = t->et[i].e_err ? strerrorname_np(t->et[i].e_err) : "other";

	if (n)
		return n;
	snprintf(buf, len, "%d", (int)t->et[i].e_err);
	return buf;
}

static void fmt_human(struct buf *b, int pid, const char *comm, const struct gc_stats *s,
		      const struct gc_hists *h, const struct gc_errtab *errs)
{
	uint64_t req = gc_stats_requests(s), real = s->real_fsync + s->real_fdatasync;
	uint64_t other = req > s->direct + s->committed ? req - s->direct - s->committed : 0;
	char d1[32], d2[32], d3[32], nb[16];
	int e, shown = 0;

	bprintf(b, "libgc: pid %d (%s): %llu sync requests (fsync %llu, fdatasync %llu, O_SYNC writes %llu), %llu real syncs",
		pid, comm, (unsigned long long)req, (unsigned long long)s->req_fsync,
		(unsigned long long)s->req_fdatasync, (unsigned long long)s->req_osync,
		(unsigned long long)real);
	if (real)
		bprintf(b, ": %.2f requests per real sync", (double)req / (double)real);
	bprintf(b, "\n");
	bprintf(b, "libgc: pid %d (%s): %llu direct, %llu served by a commit", pid, comm,
		(unsigned long long)s->direct, (unsigned long long)s->committed);
	if (other)
		bprintf(b, ", %llu other (failed before a call, or not counted)",
			(unsigned long long)other);
	if (s->scoped_out)
		bprintf(b, " (%llu out of LIBGC_SCOPE)", (unsigned long long)s->scoped_out);
	bprintf(b, "; %llu commits; waited %s in all", (unsigned long long)s->commits,
		dur(d1, sizeof(d1), s->wait_ns));
	if (gc_hist_total(h->h_wait, GC_HIST_NS))
		bprintf(b, " (p50 %s, p99 %s)", dur(d2, sizeof(d2), gc_hist_ns_pct(h->h_wait, 50)),
			dur(d3, sizeof(d3), gc_hist_ns_pct(h->h_wait, 99)));
	if (s->pass_sync + s->pass_syncfs + s->pass_msync + s->pass_sync_file_range)
		bprintf(b, "; passed through: sync %llu, syncfs %llu, msync %llu, sync_file_range %llu",
			(unsigned long long)s->pass_sync, (unsigned long long)s->pass_syncfs,
			(unsigned long long)s->pass_msync,
			(unsigned long long)s->pass_sync_file_range);
	if (!s->errors) {
		bprintf(b, "; no errors\n");
		return;
	}
	bprintf(b, "; %llu errors:", (unsigned long long)s->errors);
	for (e = 0; e <= GC_ERRTAB; e++)
		if (errs->et[e].e_count)
			bprintf(b, "%s %s %llu", shown++ ? "," : "", err_name(errs, e, nb, sizeof(nb)),
				(unsigned long long)errs->et[e].e_count);
	bprintf(b, "\n");
}

static void fmt_kv(struct buf *b)
{
	int n, i;

	n = gc_stats_format(b->b, b->len);
	b->n = n > 0 && (size_t)n < b->len ? (size_t)n : 0;
	for (i = 0; i < GC_SYM_COUNT; i++)
		if (gc_sym_calls[i])
			bprintf(b, " sym.%s=%llu", sym_names[i],
				(unsigned long long)gc_sym_calls[i]);
	bprintf(b, "\n");
}

static void json_hist(struct buf *b, const char *name, const uint64_t *h, unsigned int n,
		      unsigned int shift)
{
	bprintf(b, ",\"%s\":{\"count\":%llu,\"p50\":%llu,\"p90\":%llu,\"p99\":%llu}", name,
		(unsigned long long)gc_hist_total(h, n),
		(unsigned long long)gc_hist_pct(h, n, shift, 50),
		(unsigned long long)gc_hist_pct(h, n, shift, 90),
		(unsigned long long)gc_hist_pct(h, n, shift, 99));
}

/* The call sites, most requests first: one object each (@ctr NULL: none). */
static void json_sites(struct buf *b, const struct gc_site_area *a, const struct gc_site_ctr *ctr)
{
	int order[GC_SITE_ROWS], n = ctr ? gc_sites_rank(ctr, order) : 0, i;

	for (i = 0; i < n; i++) {
		const struct gc_site_ctr *c = &ctr[order[i]];
		const struct gc_site_desc *d = site_desc(a, order[i]);

		bprintf(b, "%s{\"fn\":", i ? "," : "");
		bjson_str(b, d ? d->sd_fn : order[i] == GC_SITE_OTHER ? "(other)" : "?");
		bprintf(b, ",\"lib\":");
		bjson_str(b, d ? d->sd_lib : "");
		bprintf(b, ",\"offset\":\"0x%llx\",\"chain\":", d ? (unsigned long long)d->sd_off : 0ULL);
		bjson_str(b, d ? d->sd_chain : "");
		bprintf(b, ",\"requests\":%llu,\"direct\":%llu,\"committed\":%llu,\"scoped_out\":%llu"
			   ",\"wait_ns\":%llu,\"wait_p99_ns\":%llu,\"commit_ns\":%llu}",
			(unsigned long long)c->sc_requests, (unsigned long long)c->sc_direct,
			(unsigned long long)c->sc_committed, (unsigned long long)c->sc_scoped_out,
			(unsigned long long)c->sc_wait_ns,
			(unsigned long long)gc_site_hist_pct(c->sc_hist, 99),
			(unsigned long long)c->sc_commit_ns);
	}
}

static void fmt_json(struct buf *b, int pid, const char *comm, const struct gc_stats *s,
		     const struct gc_hists *h, const struct gc_errtab *errs,
		     const struct gc_site_area *a, const struct gc_site_ctr *ctr)
{
	const uint64_t *v = (const uint64_t *)s;
	struct timespec ts;
	char nb[16];
	size_t k;
	int e, first = 1;

	clock_gettime(CLOCK_REALTIME, &ts);
	bprintf(b, "{\"pid\":%d,\"ppid\":%d,\"uid\":%u,\"comm\":", pid, (int)getppid(),
		(unsigned)getuid());
	bjson_str(b, comm);
	bprintf(b, ",\"time\":%lld.%03ld,\"requests\":%llu,\"real_syncs\":%llu",
		(long long)ts.tv_sec, ts.tv_nsec / 1000000, (unsigned long long)gc_stats_requests(s),
		(unsigned long long)(s->real_fsync + s->real_fdatasync));
	bprintf(b, ",\"counters\":{");
	for (k = 0; k < GC_STATS_NFIELDS; k++)
		bprintf(b, "%s\"%s\":%llu", k ? "," : "", gc_stats_names[k],
			(unsigned long long)v[k]);
	bprintf(b, "}");
	json_hist(b, "wait_ns", h->h_wait, GC_HIST_NS, GC_HIST_NS_SHIFT);
	json_hist(b, "commit_ns", h->h_commit, GC_HIST_NS, GC_HIST_NS_SHIFT);
	json_hist(b, "batch", h->h_batch, GC_HIST_BATCH, 0);
	bprintf(b, ",\"errno\":{");
	for (e = 0; e <= GC_ERRTAB; e++)
		if (errs->et[e].e_count) {
			bprintf(b, "%s\"%s\":%llu", first ? "" : ",", err_name(errs, e, nb, sizeof(nb)),
				(unsigned long long)errs->et[e].e_count);
			first = 0;
		}
	bprintf(b, "},\"sym\":{");
	first = 1;
	for (e = 0; e < GC_SYM_COUNT; e++)
		if (gc_sym_calls[e]) {
			bprintf(b, "%s\"%s\":%llu", first ? "" : ",", sym_names[e],
				(unsigned long long)gc_sym_calls[e]);
			first = 0;
		}
	bprintf(b, "},\"sites\":[");
	json_sites(b, a, ctr);
	bprintf(b, "]}\n");
}

static struct gc_stats rep_s;
static struct gc_hists rep_h;
static struct gc_errtab rep_e;

/* Is a report due (LIBGC_REPORT set, and this process synced, or `all`)?
 * Memory only: the counters are summed into rep_s. */
static bool report_due(void)
{
	const struct gc_stats *s = &rep_s;

	if (!gc_counting || !gc_conf() || !gc_cfg.c_report[0] ||
	    __atomic_load_n(&rep_done, __ATOMIC_ACQUIRE))
		return false;
	gc_stats_sum_all(&rep_s, &rep_h, &rep_e);
	return gc_cfg.c_report_all || gc_stats_requests(s) || s->pass_sync || s->pass_syncfs ||
	       s->pass_msync || s->pass_sync_file_range;
}

/* Writes the report once per process, from report_due()'s sums; safe from
 * exit handlers and from _exit (raw system calls, no lock, no allocation). */
static void report(void)
{
	static char text[65536] GC_LARGE;
	static struct gc_site_ctr sites[GC_SITE_ROWS] GC_LARGE;
	const struct gc_site_area *area = __atomic_load_n(&gc_sites_base, __ATOMIC_ACQUIRE);
	const struct gc_stats *sp = &rep_s;
	const struct gc_site_ctr *rows = NULL;
	struct buf b = { .b = text, .len = sizeof(text) };
	char comm[32];
	int fd, pid;

	if (__atomic_exchange_n(&rep_done, 1, __ATOMIC_ACQ_REL))
		return;
	pid = (int)syscall(SYS_getpid);
	/* Rows are counted only once call sites are on (never off again):
	 * before that the tables were never written, and reading them would
	 * map their 40 pages one fault each. Rows counted before the segment
	 * existed stay in private memory. */
	if (__atomic_load_n(&gc_sites_on, __ATOMIC_ACQUIRE)) {
		memset(sites, 0, sizeof(sites));
		gc_sites_sum(gc_sites_private(), sites);
		if (area != gc_sites_private())
			gc_sites_sum(area, sites);
		rows = sites;
	}
	if (gc_cfg.c_report_fmt != GC_REPORT_KV)
		comm_of(comm, sizeof(comm));
	switch (gc_cfg.c_report_fmt) {
	case GC_REPORT_HUMAN:
		fmt_human(&b, pid, comm, sp, &rep_h, &rep_e);
		human_sites(&b, pid, comm, area, rows);
		break;
	case GC_REPORT_KV:
		fmt_kv(&b);
		break;
	case GC_REPORT_JSON:
		fmt_json(&b, pid, comm, sp, &rep_h, &rep_e, area, rows);
		break;
	}
	if (!b.n)
		return;
	if (b.b[b.n - 1] != '\n') /* cut short: keep it one record */
		b.b[b.n - 1] = '\n';
	if (!strcmp(gc_cfg.c_report, "-")) {
		fd = stderr_fd();
		if (fd >= 0)
			put(fd, b.b, b.n);
	} else if ((fd = open_report_file(gc_cfg.c_report)) >= 0) {
		put(fd, b.b, b.n); /* one write: O_APPEND keeps records whole */
		syscall(SYS_close, fd);
	} else {
		char line[400];
		int e = errno, n, efd = stderr_fd();

		n = snprintf(line, sizeof(line),
			     "libgc: pid=%d: cannot append the report to %s (%s); here it is on stderr\n",
			     pid, gc_cfg.c_report, strerror(e));
		if (efd >= 0 && n > 0) {
			put(efd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
			put(efd, b.b, b.n);
		}
	}
}

/* The report, the stats segment's removal and the duplicate's close, if
 * any is due. */
GC_ONCE static void exit_work(void)
{
	int saved = errno;
	bool due = report_due();

	/* nothing of ours: no system call */
	if (!due && !gc_ps_active() && __atomic_load_n(&rep_fd, __ATOMIC_ACQUIRE) < 0)
		return;
	/* a child made without fork's handlers (vfork, _Fork) shares or
	 * copied its parent's state and only exits */
	if (!gc_self_exact()) {
		errno = saved;
		return;
	}
	if (due)
		report();
	gc_ps_exit();
	/* the duplicate is closed only while it is still ours */
	if (rep_fd >= 0 && stderr_fd() == rep_fd) {
		int fd = rep_fd;

		gc_own_drop(&rep_fd);
		rep_fd = -1;
		syscall(SYS_close, fd);
	}
	errno = saved;
}

GC_ONCE void gc_report_exit(void)
{
	exit_work();
}

/* _exit and _Exit skip exit handlers: dash's `sh -c`, rsync's receiver and
 * many fork children end this way. The report and the segment's removal
 * run here too. Placed with the start-up, fork and exit code (GC_ONCE): a
 * fork child that ends here runs nothing else of ours. */
GC_ONCE GC_EXPORT void _exit(int status)
{
	if (__atomic_load_n(&gc_ready, __ATOMIC_ACQUIRE)) {
		GC_COUNT(_exit);
		exit_work();
	}
	if (gc_real._exit)
		gc_real._exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

GC_ONCE GC_EXPORT void _Exit(int status)
{
	if (__atomic_load_n(&gc_ready, __ATOMIC_ACQUIRE)) {
		GC_COUNT(_Exit);
		exit_work();
	}
	if (gc_real._Exit)
		gc_real._Exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}
