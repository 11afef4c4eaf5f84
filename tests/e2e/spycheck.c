// SPDX-License-Identifier: LGPL-2.1-or-later
/* The durability checker: loads a spy log and matches every successful
 * program sync request with a real call that covers it (same inode, nested in
 * time, successful, strong enough). Linked into the e2e suites and spycheck. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/spy.h"

const char *spy_kind_name(int kind)
{
	switch (kind) {
	case SPY_FSYNC: return "fsync";
	case SPY_FDATASYNC: return "fdatasync";
	case SPY_WRITE_SYNC: return "osync-write";
	case SPY_WRITE_DSYNC: return "odsync-write";
	case SPY_SYNCFS: return "syncfs";
	}
	return "?";
}

int spy_load(const char *path, struct spy_log *log)
{
	struct stat st;
	size_t n, i, k = 0;
	ssize_t got;
	char *buf;
	int fd;

	memset(log, 0, sizeof(*log));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* no record at all */
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (size_t off = 0; off < (size_t)st.st_size; off += (size_t)got) {
		got = read(fd, buf + off, (size_t)st.st_size - off);
		if (got <= 0) {
			st.st_size = (off_t)off;
			break;
		}
	}
	close(fd);
	n = (size_t)st.st_size / sizeof(struct spy_rec);
	log->l_bad = (size_t)st.st_size % sizeof(struct spy_rec) ? 1 : 0;
	log->l_recs = (struct spy_rec *)buf;
	for (i = 0; i < n; i++) {
		struct spy_rec r;

		memcpy(&r, buf + i * sizeof(r), sizeof(r));
		if (r.r_magic != SPY_MAGIC || r.r_role > SPY_REAL ||
		    r.r_kind < SPY_FSYNC || r.r_kind > SPY_SYNCFS ||
		    (r.r_kind == SPY_SYNCFS && r.r_role != SPY_REAL)) {
			log->l_bad++;
			continue;
		}
		log->l_recs[k++] = r;
	}
	log->l_n = k;
	return 0;
}

void spy_free(struct spy_log *log)
{
	free(log->l_recs);
	memset(log, 0, sizeof(*log));
}

/* Can real call @r vouch for program call @p (same inode already known)? */
static bool spy_strong_enough(const struct spy_rec *p, const struct spy_rec *r)
{
	switch (r->r_kind) {
	case SPY_FSYNC:
		return true;
	case SPY_FDATASYNC:
		return p->r_kind == SPY_FDATASYNC || p->r_kind == SPY_WRITE_DSYNC;
	case SPY_WRITE_SYNC:
	case SPY_WRITE_DSYNC:
		/* The kernel synced the range of that one write: it stands for
		 * the program write it carried out and for nothing else. */
		if (p->r_pid != r->r_pid || p->r_tid != r->r_tid)
			return false;
		if (p->r_kind == SPY_WRITE_SYNC)
			return r->r_kind == SPY_WRITE_SYNC;
		return p->r_kind == SPY_WRITE_DSYNC;
	}
	return false;
}

static const struct spy_rec *g_sort_base;

static int spy_real_cmp(const void *a, const void *b)
{
	const struct spy_rec *x = &g_sort_base[*(const size_t *)a];
	const struct spy_rec *y = &g_sort_base[*(const size_t *)b];

	if (x->r_dev != y->r_dev)
		return x->r_dev < y->r_dev ? -1 : 1;
	if (x->r_ino != y->r_ino)
		return x->r_ino < y->r_ino ? -1 : 1;
	if (x->r_start_ns != y->r_start_ns)
		return x->r_start_ns < y->r_start_ns ? -1 : 1;
	return 0;
}

/* First index in @idx (sorted) whose record is >= (dev, ino, start). */
static size_t spy_lower(const struct spy_rec *recs, const size_t *idx, size_t n,
			uint64_t dev, uint64_t ino, uint64_t start)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct spy_rec *r = &recs[idx[mid]];
		bool less = r->r_dev != dev ? r->r_dev < dev :
			    r->r_ino != ino ? r->r_ino < ino :
			    r->r_start_ns < start;

		if (less)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct spy_window {
	size_t w_cover;		/* successful, strong enough, nested */
	uint64_t w_first_cover;	/* the earliest start among those */
	size_t w_failed;	/* failed, strong enough, nested */
	size_t w_weak;		/* successful, nested, too weak */
	size_t w_partial;	/* on the inode, overlapping but not nested */
};

static void spy_scan(const struct spy_log *log, const size_t *idx, size_t nreal,
		     const struct spy_rec *p, struct spy_window *w)
{
	const struct spy_rec *recs = log->l_recs;
	size_t i;

	memset(w, 0, sizeof(*w));
	/* Calls that started before p only matter for the diagnosis; look a
	 * few back for ones that overlap it. */
	i = spy_lower(recs, idx, nreal, p->r_dev, p->r_ino, p->r_start_ns);
	for (size_t j = i; j > 0 && i - j < 64; j--) {
		const struct spy_rec *r = &recs[idx[j - 1]];

		if (r->r_dev != p->r_dev || r->r_ino != p->r_ino)
			break;
		if (r->r_end_ns >= p->r_start_ns)
			w->w_partial++;
	}
	for (; i < nreal; i++) {
		const struct spy_rec *r = &recs[idx[i]];

		if (r->r_dev != p->r_dev || r->r_ino != p->r_ino ||
		    r->r_start_ns > p->r_end_ns)
			break;
		if (r->r_end_ns > p->r_end_ns) {
			w->w_partial++;
			continue;
		}
		if (!spy_strong_enough(p, r)) {
			if (r->r_ret >= 0 && (r->r_kind == SPY_FSYNC ||
					      r->r_kind == SPY_FDATASYNC))
				w->w_weak++;
			continue;
		}
		if (r->r_ret < 0) {
			w->w_failed++;
		} else {
			if (!w->w_cover++ || r->r_start_ns < w->w_first_cover)
				w->w_first_cover = r->r_start_ns;
		}
	}
}

/* Real syncs that failed with EIO or EROFS: a failed journal commit, which
 * the kernel reports only to the syncs inside it (ext4 counts it as done:
 * a later sync that finds nothing to commit returns 0). */
static bool spy_fs_failure(const struct spy_rec *r)
{
	return r->r_role == SPY_REAL && r->r_ret < 0 &&
	       (r->r_errno == EIO || r->r_errno == EROFS);
}

/* Such a failure on @dev that ended within [lo, hi], one the kernel made
 * when @kernel_only (not injected by the spy). The few failed calls are
 * searched one by one. */
static bool spy_fs_failed_between(const struct spy_log *log, const size_t *fails,
				  size_t nfails, uint64_t dev, uint64_t lo, uint64_t hi,
				  bool kernel_only)
{
	for (size_t i = 0; i < nfails && lo <= hi; i++) {
		const struct spy_rec *r = &log->l_recs[fails[i]];

		if (kernel_only && (r->r_flags & SPY_F_INJECTED))
			continue;
		/* one file's own error lost no other file's change */
		if (r->r_flags & SPY_F_LOCAL)
			continue;
		if (r->r_dev == dev && r->r_end_ns >= lo && r->r_end_ns <= hi)
			return true;
	}
	return false;
}

/* Slack for the rule below. The library notes a failure just after its real
 * call returns and a request's start just after it enters, so a failure at
 * either edge may go either way; and a program whose threads all make their
 * first request at once waits for the CPU before its real call (2-3 ms with
 * 8 threads on 2 cores, policy none included), which the rule is not about:
 * it is about requests held for a commit. */
#define SPY_FAIL_SLACK_NS 5000000ull

/* The earliest start of a successful real syncfs of @p's filesystem inside
 * @p's window, or 0. The few syncfs records are searched one by one. */
static uint64_t spy_syncfs_covers(const struct spy_log *log, const struct spy_rec *p)
{
	uint64_t first = 0;

	for (size_t i = 0; i < log->l_n; i++) {
		const struct spy_rec *r = &log->l_recs[i];

		if (r->r_kind == SPY_SYNCFS && r->r_role == SPY_REAL && r->r_ret >= 0 &&
		    r->r_dev == p->r_dev && r->r_start_ns >= p->r_start_ns &&
		    r->r_end_ns <= p->r_end_ns && (!first || r->r_start_ns < first))
			first = r->r_start_ns;
	}
	return first;
}

size_t spy_count(const struct spy_log *log, int role, int kind, uint64_t dev,
		 uint64_t ino)
{
	size_t n = 0;

	for (size_t i = 0; i < log->l_n; i++) {
		const struct spy_rec *r = &log->l_recs[i];

		if (r->r_role != role || (kind && r->r_kind != kind))
			continue;
		if (ino && (r->r_ino != ino || r->r_dev != dev))
			continue;
		n++;
	}
	return n;
}

size_t spy_check(const struct spy_log *log, struct spy_summary *s, FILE *out,
		 size_t max_print)
{
	const struct spy_rec *recs = log->l_recs;
	uint64_t t0 = UINT64_MAX;
	size_t *idx, *fails, nreal = 0, nfails = 0, printed = 0;

	memset(s, 0, sizeof(*s));
	s->s_bad = log->l_bad;
	idx = malloc((log->l_n + 1) * sizeof(*idx));
	fails = malloc((log->l_n + 1) * sizeof(*fails));
	if (!idx || !fails) {
		free(idx);
		free(fails);
		if (out)
			fprintf(out, "spycheck: out of memory\n");
		s->s_violations = 1;
		return 1;
	}
	for (size_t i = 0; i < log->l_n; i++) {
		const struct spy_rec *r = &recs[i];

		if (r->r_start_ns < t0)
			t0 = r->r_start_ns;
		if (spy_fs_failure(r))
			fails[nfails++] = i;
		if (r->r_role == SPY_REAL) {
			idx[nreal++] = i;
			s->s_real++;
			s->s_real_by_kind[r->r_kind]++;
			if (r->r_ret < 0)
				s->s_real_fail++;
			else
				s->s_real_ok++;
		} else {
			s->s_prog++;
			s->s_prog_by_kind[r->r_kind]++;
			if (r->r_ret < 0) {
				s->s_prog_fail++;
				if (r->r_errno == EIO)
					s->s_prog_eio++;
			} else {
				s->s_prog_ok++;
			}
		}
	}
	g_sort_base = recs;
	qsort(idx, nreal, sizeof(*idx), spy_real_cmp);

	for (size_t i = 0; i < log->l_n; i++) {
		const struct spy_rec *p = &recs[i];
		struct spy_window w;
		const char *why;

		if (p->r_role != SPY_PROG)
			continue;
		if (!spy_needs_cover(p)) {
			if (p->r_ret < 0 && p->r_errno == EIO) {
				spy_scan(log, idx, nreal, p, &w);
				/* explained by a failed real call on the inode
				 * inside its window, or by a failure of its
				 * filesystem while it was held: where the kernel
				 * answers each call for itself (SPY_RULE_OWN),
				 * only by one the kernel made (a real failure may
				 * have shut the filesystem down), not by another
				 * inode's injected one */
				bool own = p->r_rule == SPY_RULE_OWN;

				if (!w.w_failed &&
				    !spy_fs_failed_between(log, fails, nfails, p->r_dev,
							   p->r_start_ns - SPY_FAIL_SLACK_NS,
							   p->r_end_ns, own)) {
					s->s_unexplained_fail++;
					if (out && printed++ < max_print)
						fprintf(out, "spycheck: unexplained EIO: pid=%d tid=%d fd=%d %s dev=%llu ino=%llu t=[%.6f,%.6f]s: no failed real call on its inode in its window%s (succeeded=%zu partial=%zu)\n",
							p->r_pid, p->r_tid, p->r_fd,
							spy_kind_name(p->r_kind),
							(unsigned long long)p->r_dev,
							(unsigned long long)p->r_ino,
							(double)(p->r_start_ns - t0) / 1e9,
							(double)(p->r_end_ns - t0) / 1e9,
							own ? ", and each call's own answer counts on its filesystem" :
							      ", nor a failure of its filesystem while it was held",
							w.w_cover, w.w_partial);
				}
			}
			continue;
		}
		spy_scan(log, idx, nreal, p, &w);
		{
			uint64_t fs = spy_syncfs_covers(log, p);

			if (fs && (!w.w_cover || fs < w.w_first_cover))
				w.w_first_cover = fs;
			if (fs)
				w.w_cover++;
		}
		/* Covered, unless every covering call came after a failure of
		 * the filesystem that happened while the request was held: the
		 * failed commit may have held its changes, and a later call
		 * that finds nothing to commit proves nothing. Not where the
		 * kernel answers each call for itself (SPY_RULE_OWN): there a
		 * later call fails if a failed commit held its changes. */
		bool hidden = p->r_rule == SPY_RULE_HELD && w.w_cover &&
			      w.w_first_cover >= p->r_start_ns + 2 * SPY_FAIL_SLACK_NS &&
			      spy_fs_failed_between(log, fails, nfails, p->r_dev,
						    p->r_start_ns + SPY_FAIL_SLACK_NS,
						    w.w_first_cover - SPY_FAIL_SLACK_NS, false);
		if (w.w_cover && !hidden) {
			if (w.w_failed)
				s->s_shadowed++;
			continue;
		}
		s->s_violations++;
		if (hidden)
			s->s_hidden++;
		if (!out || printed++ >= max_print)
			continue;
		if (hidden)
			why = "a real sync of its filesystem failed while it was held, and it was covered only after that";
		else if (w.w_failed)
			why = "the only covering real calls failed, yet the request succeeded";
		else if (w.w_weak)
			why = "only fdatasync ran in its window; fsync was needed";
		else if (w.w_partial)
			why = "real calls on the inode overlap the request but are not inside it";
		else
			why = "no real call on this inode inside its window";
		fprintf(out, "spycheck: VIOLATION pid=%d tid=%d fd=%d %s dev=%llu ino=%llu t=[%.6f,%.6f]s ret=%lld: %s (failed=%zu weak=%zu partial=%zu)\n",
			p->r_pid, p->r_tid, p->r_fd, spy_kind_name(p->r_kind),
			(unsigned long long)p->r_dev, (unsigned long long)p->r_ino,
			(double)(p->r_start_ns - t0) / 1e9,
			(double)(p->r_end_ns - t0) / 1e9, (long long)p->r_ret, why,
			w.w_failed, w.w_weak, w.w_partial);
	}
	if (out && printed > max_print)
		fprintf(out, "spycheck: ... %zu more lines not shown\n",
			printed - max_print);
	free(idx);
	free(fails);
	return s->s_violations;
}

void spy_summary_print(const struct spy_summary *s, FILE *out)
{
	fprintf(out, "spycheck: prog=%zu prog_ok=%zu prog_fail=%zu prog_eio=%zu "
		"prog_fsync=%zu prog_fdatasync=%zu prog_osync=%zu prog_odsync=%zu "
		"real=%zu real_ok=%zu real_fail=%zu real_fsync=%zu real_fdatasync=%zu "
		"real_osync=%zu real_odsync=%zu violations=%zu unexplained_eio=%zu "
		"shadowed=%zu hidden=%zu bad=%zu\n",
		s->s_prog, s->s_prog_ok, s->s_prog_fail, s->s_prog_eio,
		s->s_prog_by_kind[SPY_FSYNC], s->s_prog_by_kind[SPY_FDATASYNC],
		s->s_prog_by_kind[SPY_WRITE_SYNC], s->s_prog_by_kind[SPY_WRITE_DSYNC],
		s->s_real, s->s_real_ok, s->s_real_fail,
		s->s_real_by_kind[SPY_FSYNC], s->s_real_by_kind[SPY_FDATASYNC],
		s->s_real_by_kind[SPY_WRITE_SYNC], s->s_real_by_kind[SPY_WRITE_DSYNC],
		s->s_violations, s->s_unexplained_fail, s->s_shadowed, s->s_hidden, s->s_bad);
}
