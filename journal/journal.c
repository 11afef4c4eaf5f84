/* The gc_ API's entry: a sync request finds its domain in this process's
 * table (one per filesystem), is sent to a direct real call or joins the
 * running transaction (txn.c), and collects its result. */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/devstats.h"
#include "core/fdtable.h"
#include "core/log.h"
#include "core/procstats.h"
#include "core/sites.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "journal/fs.h"
#include "journal/intent.h"
#include "journal/txn.h"
#include "policy/policy.h"

/* Lock order: gc_domains_lock, then a domain's j_lock (journal/txn.h). */
struct gc_dom_ref gc_domains[GC_MAX_DOMAINS];
int gc_ndomains;
pthread_mutex_t gc_domains_lock = PTHREAD_MUTEX_INITIALIZER;

/* A domain this process may use for @dev, or NULL (then: a direct call).
 * Never blocks on another process for long: the shared lock gives up. */
static struct gc_domain *domain_usable(int i)
{
	struct gc_domain *d = gc_domains[i].dr_dom;

	if (gc_domains[i].dr_direct || !__atomic_load_n(&gc_domains[i].dr_joined,
							__ATOMIC_ACQUIRE))
		return NULL;
	return gc_domain_poisoned(d) ? NULL : d;
}

/* Takes gc_domains_lock, then (to join) the domain's j_lock, for the first
 * use of @dev by this process; @fd is a descriptor on it. */
static struct gc_domain *domain_get(uint64_t dev, int fd)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);
	struct gc_domain *d = NULL;
	const char *why = NULL;

	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev && (gc_domains[i].dr_direct ||
						    domain_usable(i)))
			return domain_usable(i);

	pthread_mutex_lock(&gc_domains_lock);
	n = gc_ndomains;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev)
			break;
	if (i < n) {
		d = gc_domains[i].dr_dom;
		if (gc_domain_poisoned(d)) {
			/* left for good; its mapping stays, threads may be in it */
			d = gc_domain_private(dev);
			if (d) {
				gc_domains[i].dr_dom = d;
				__atomic_store_n(&gc_domains[i].dr_joined, 1, __ATOMIC_RELEASE);
			}
		}
	} else if (n < GC_MAX_DOMAINS) {
		const struct gc_fs *fs = gc_fs_of(fd);
		bool direct = !(fs->fs_flags & GC_FS_GROUP);

		/* btrfs: st_dev names a subvolume, not the disk under it */
		gc_devstats_alias(dev, fd);

		if (!direct && gc_cfg.c_share == GC_SHARE_USER) {
			d = gc_domain_attach(dev, &why);
			if (!d)
				gc_log(GC_LOG_WARN,
				       "device %llx: no shared domain (%s); grouping within this process only",
				       (unsigned long long)dev, why);
		}
		if (!d)
			d = gc_domain_private(dev);
		if (d) {
			gc_domains[n].dr_dom = d;
			gc_domains[n].dr_dev = dev;
			gc_domains[n].dr_direct = direct;
			gc_domains[n].dr_fs_flags = fs->fs_flags;
			__atomic_store_n(&gc_ndomains, n + 1, __ATOMIC_RELEASE);
		}
	}
	/* Membership is per process: after fork the child joins on first use. */
	if (d && !__atomic_load_n(&gc_domains[i].dr_joined, __ATOMIC_RELAXED)) {
		int ok = 0;

		if (!gc_domain_is_segment(d)) {
			ok = 1;
		} else if (gc_domain_lock(d)) {
			ok = gc_domain_join(d, gc_getpid()) ? 1 : -1;
			gc_domain_unlock(d);
		}
		if (ok < 0) {
			/* member table full: no retry on every request */
			gc_log(GC_LOG_WARN,
			       "device %llx: shared domain full; grouping within this process only",
			       (unsigned long long)dev);
			d = gc_domain_private(dev);
			ok = d != NULL;
			if (d)
				gc_domains[i].dr_dom = d;
		}
		if (ok > 0)
			__atomic_store_n(&gc_domains[i].dr_joined, 1, __ATOMIC_RELEASE);
	}
	d = i < gc_ndomains ? domain_usable(i) : NULL;
	pthread_mutex_unlock(&gc_domains_lock);
	return d;
}

/* An already-known, usable domain for @dev, or NULL; never creates one. */
static struct gc_domain *domain_find(uint64_t dev)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);

	if (!dev)
		return NULL;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev)
			return domain_usable(i);
	return NULL;
}

/* What the device says, at most every GC_DEVICE_REFRESH_NS per domain:
 * the observer's flush latency when gcd runs, else /proc/diskstats'.
 * LIBGC_DEVICE=off asks neither: the controller measures for itself. */
static void device_refresh(struct gc_domain *d, uint64_t now)
{
	struct gc_policy_state *ps = &d->j_policy;
	const char *src = "none";
	uint64_t f;
	uint32_t s;

	if (gc_cfg.c_policy.pc_kind != GC_POL_ADAPTIVE || !gc_cfg.c_policy.pc_probe ||
	    !gc_cfg.c_policy.pc_device || !gc_policy_device_claim(ps, now))
		return;
	f = gc_devstats_flush_ns(d->j_dev, now, &src);
	s = !strcmp(src, "observer") ? GC_DEV_OBSERVER : !strcmp(src, "diskstats")
			? GC_DEV_DISKSTATS : GC_DEV_NONE;
	if (gc_policy_device(ps, f, s, now))
		gc_log(GC_LOG_DEBUG, "device %llx: flush %llu us (from %s): %s",
		       (unsigned long long)d->j_dev, (unsigned long long)(f / GC_NSEC_PER_USEC),
		       gc_device_src_name(s),
		       !f ? "unknown, the controller measures for itself"
			  : f < GC_DEVICE_GROUP_NS ? "direct calls, no probes"
						   : "grouped from the first commit, no probes");
}

/* Ends the controller's epoch when due, then: should this request be a
 * direct real call? */
static bool domain_direct(struct gc_domain *d, uint64_t now)
{
	struct gc_policy_state *ps = &d->j_policy;

	device_refresh(d, now);

	if (gc_policy_epoch_due(ps, &gc_cfg.c_policy, now) && gc_domain_lock(d)) {
		if (gc_policy_epoch_end(ps, &gc_cfg.c_policy, now)) {
			/* a leader waiting for the threads now sent to direct
			 * calls decides again, and closes at once */
			if (gc_policy_bypass(ps, &gc_cfg.c_policy, now))
				gc_domain_wake(d, &d->j_wq_lead);
			gc_log(GC_LOG_DEBUG,
			       "device %llx: %s calls now (t=%llu ms; from own timing: shortest direct call %llu us, next epoch %llu ms)",
			       (unsigned long long)d->j_dev,
			       gc_policy_bypass(ps, &gc_cfg.c_policy, now) ? "direct" : "grouped",
			       (unsigned long long)(now / GC_NSEC_PER_MSEC),
			       (unsigned long long)(ps->ps_fb_call_ns / GC_NSEC_PER_USEC),
			       (unsigned long long)(ps->ps_fb_epoch_len / GC_NSEC_PER_MSEC));
		}
		gc_domain_unlock(d);
	}
	return gc_policy_bypass(ps, &gc_cfg.c_policy, now);
}

/* While on direct calls, a thread refreshes its place among the domain's
 * sync threads at most this often: well inside the policy's smallest active
 * window (1 ms), and no shared cache line written on every request. */
#define GC_ARRIVE_EVERY_NS (250 * GC_NSEC_PER_USEC)
static __thread uint64_t gc_arrived_ns __attribute__((tls_model("initial-exec")));

/* GC_FS_* of @d's filesystem (journal/fs.h), from this process's own
 * table: the cautious rules when @d is not found there. */
static uint32_t fs_flags(const struct gc_domain *d)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dom == d)
			return gc_domains[i].dr_fs_flags;
	return GC_FS_HELD_FAIL | GC_FS_DEAD_EIO;
}

/* A request's own real call on @d's filesystem, its failure noted there. */
static int direct_noted(struct gc_domain *d, int fd, bool datasync)
{
	int r = gc_commit_direct(fd, datasync);

	if (fs_flags(d) & GC_FS_DEAD_EIO)
		r = gc_commit_dead_check(fd, r);
	gc_domain_note_failure(d, r);
	return r;
}

/* A direct real call while the controller times direct calls. */
static int direct_accounted(struct gc_domain *d, int fd, bool datasync, uint64_t start)
{
	int32_t tid = gc_gettid();
	uint64_t t0;
	int r;

	/* The device decided: the controller is idle, nothing to note or
	 * measure, and no shared line to write */
	if (gc_policy_device_flush(&d->j_policy, start)) {
		gc_stat_inc(bypass);
		return direct_noted(d, fd, datasync);
	}
	/* Keep the count of sync threads current for when grouping resumes;
	 * not worth waiting for the lock. */
	if (start - gc_arrived_ns >= GC_ARRIVE_EVERY_NS && gc_domain_trylock(d)) {
		gc_policy_arrive(&d->j_policy, &gc_cfg.c_policy, tid, start);
		gc_domain_unlock(d);
		gc_arrived_ns = start;
	}
	gc_stat_inc(bypass);
	/* the real call alone: what one sync costs the device */
	t0 = gc_now_ns();
	r = direct_noted(d, fd, datasync);
	if (r == 0)
		gc_policy_direct_done(&d->j_policy, tid, t0, gc_now_ns());
	return r;
}

/* A request of @d that began at @begun, for a directory when @dir (-1:
 * not known yet): @r, or, where its filesystem counts a failed commit as
 * done for such an inode (GC_FS_HELD_FAIL*: ext4; xfs's directories), the
 * failure of any real sync of the filesystem since. Elsewhere a held
 * request's own real call tells the truth by itself (journal/fs.c). */
static int held_result(const struct gc_domain *d, uint64_t begun, int dir, int r)
{
	uint32_t f = fs_flags(d);

	if ((f & GC_FS_HELD_FAIL) || ((f & GC_FS_HELD_FAIL_DIR) && dir))
		return gc_domain_held_result(d, begun, r);
	return r;
}

static void count_request(enum gc_origin origin)
{
	switch (origin) {
	case GC_FROM_FSYNC:
		gc_stat_inc(req_fsync);
		break;
	case GC_FROM_FDATASYNC:
		gc_stat_inc(req_fdatasync);
		break;
	default:
		gc_stat_inc(req_osync);
	}
}

int gc_sync_direct(int fd, bool datasync, enum gc_origin origin)
{
	count_request(origin);
	return gc_commit_direct(fd, datasync);
}

int gc_sync_scoped_out(int fd, bool datasync, enum gc_origin origin)
{
	gc_stat_inc(scoped_out);
	if (__builtin_expect(gc_intent_on, 0)) {
		int r = gc_intent_real(fd, datasync, origin);

		if (r != GC_INTENT_PASS)
			return r;
	}
	return gc_sync_direct(fd, datasync, origin);
}

int gc_request(int fd, bool datasync, enum gc_origin origin, uintptr_t ra)
{
	uint64_t t0 = gc_now_ns(), ns;
	bool grouped = true;
	int site = -1, r;

	/* not in a child made without atfork: its counts are not ours */
	if (__builtin_expect(gc_self(), 1))
		gc_ps_need(__atomic_load_n(&gc_sites_on, __ATOMIC_RELAXED));
	if (__builtin_expect(gc_sites_needed(), 0))
		site = gc_site_begin(&grouped, ra);
	r = grouped ? gc_sync(fd, datasync, origin, t0) : gc_sync_scoped_out(fd, datasync, origin);
	ns = gc_now_ns() - t0;
	gc_stats_request_end(ns, r);
	if (site >= 0)
		gc_site_end(site, ns, !grouped);
	return r;
}

int gc_sync_grouped(int fd, bool datasync, enum gc_origin origin, uint64_t begun)
{
	struct gc_handle h;
	struct gc_domain *d;
	struct stat st;
	uint64_t now, start;
	bool owner = false, rejoined;
	int r;

	count_request(origin);
	/* policy none: the cost of interposition alone, nothing more; a
	 * process made without atfork (_Fork, clone, vfork) shares or copied
	 * state that is not its own: it touches none of it */
	if (gc_cfg.c_policy.pc_kind == GC_POL_NONE || !gc_self())
		return gc_commit_direct(fd, datasync);
	/* While the controller has the domain on direct calls, skip fstat:
	 * with many threads on one file, that alone cost a fifth of the
	 * throughput on a fast disk. The device is only a hint here: a wrong
	 * one can only send a request to a direct real call. */
	start = gc_now_ns();
	begun = begun && begun < start ? begun : start;
	d = domain_find(gc_fd_dev_hint(fd));
	/* Here and below: a failure of any real sync of the filesystem since
	 * the request began (@begun, the program's call) fails it where
	 * the filesystem would not tell it (held_result). */
	if (d && domain_direct(d, start))
		return held_result(d, begun, -1, direct_accounted(d, fd, datasync, start));
	/* From here on this process is named to others (membership, handles,
	 * the lock): not by a child sharing our memory (vfork), which would
	 * name its stopped parent's thread. */
	if (!gc_self_exact())
		return gc_commit_direct(fd, datasync);
	if (fstat(fd, &st) < 0)
		return -errno;
	/* Files and directories: a directory's fsync commits the entries made
	 * in it (create, rename), and many processes that fsync one spool
	 * directory share that call under the same rule as a file's. */
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return gc_commit_direct(fd, datasync);
	gc_fd_hint_dev(fd, (uint64_t)st.st_dev);
	d = domain_get((uint64_t)st.st_dev, fd);
	if (!d)
		return gc_commit_direct(fd, datasync);
	now = gc_now_ns();
	if (domain_direct(d, now))
		return held_result(d, begun, S_ISDIR(st.st_mode), direct_accounted(d, fd, datasync, start));
	/* Multi-inode transactions: write our data back before joining, so the
	 * real calls released together only have to commit. The wait reports
	 * (and marks seen) a writeback error of this request's own description,
	 * as its fsync would have: the error is this request's (DESIGN rule 8).
	 * But WAIT_BEFORE that finds one returns before writing anything back,
	 * where the fsync would have written the rest and waited for it: the
	 * real call does that, and the request gets the error once. */
	if (S_ISREG(st.st_mode) &&
	    (gc_cfg.c_stage == GC_STAGE_ALWAYS ||
	     (gc_cfg.c_stage == GC_STAGE_AUTO && __atomic_load_n(&d->j_multi, __ATOMIC_RELAXED)))) {
		gc_stat_inc(staged);
		r = gc_sys_sfr(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER);
		if (r < 0) {
			int own = direct_noted(d, fd, datasync);

			return r == -EIO || r == -ENOSPC || r == -EDQUOT ? r : own;
		}
		now = gc_now_ns();
	}

	/* A request handed back at a close (GC_REJOIN) joins the next
	 * transaction, once; a second hand-back (a peer's scribble) makes it
	 * a direct call. */
	for (rejoined = false;; rejoined = true) {
		h = (struct gc_handle){ .h_fd = fd, .h_own = INT_MIN, .h_dom = d,
					.h_tid = gc_gettid(), .h_pid = gc_getpid(),
					.h_fs = fs_flags(d) };
		if (!gc_domain_lock(d))
			return held_result(d, begun, S_ISDIR(st.st_mode), direct_noted(d, fd, datasync));
		gc_undo_run(d);
		if (!gc_handle_join(&h, (uint64_t)st.st_ino, datasync, S_ISDIR(st.st_mode),
				    rejoined, now)) {
			gc_domain_unlock(d);
			return held_result(d, begun, S_ISDIR(st.st_mode), direct_noted(d, fd, datasync));
		}
		r = gc_handle_collect(&h, (uint64_t)st.st_ino, &owner);
		if (r != GC_REJOIN)
			break;
		if (rejoined) {
			r = GC_ORPHAN;
			break;
		}
		gc_stat_inc(deferred);
		now = gc_now_ns();
	}
	if (owner || r != GC_ORPHAN) {
		gc_stats_handle_served(); /* served by a commit, counted here */
		/* for its call site: from the covering commit's close on */
		if (gc_sites_timing && h.h_close_ns)
			gc_req_note.rn_commit_ns = gc_now_ns() - h.h_close_ns;
	}
	if (owner) {
		r = h.h_own; /* its own real call, and its own pending error */
	} else if (r == GC_ORPHAN) {
		r = direct_noted(d, fd, datasync);
	} else {
		/* Writeback errors are reported once per open file description;
		 * the owner's call consumed them on its own. Collect any this
		 * descriptor has not seen yet, as its own fsync would have. */
		int e = gc_commit_pending_error(fd);

		if (!r && e < 0)
			r = e;
	}
	return held_result(d, begun, S_ISDIR(st.st_mode), r);
}

int gc_sync(int fd, bool datasync, enum gc_origin origin, uint64_t begun)
{
	if (__builtin_expect(gc_intent_on, 0)) {
		int r = gc_intent_sync(fd, datasync, origin, begun);

		if (r != GC_INTENT_PASS)
			return r;
	}
	return gc_sync_grouped(fd, datasync, origin, begun);
}
