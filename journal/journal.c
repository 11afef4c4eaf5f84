// SPDX-License-Identifier: LGPL-2.1-or-later
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
#include "core/dirty.h"
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

/* Lock order: gc_domains_lock, then a domain's j_lock (journal/txn.h).
 * On a page of its own start (a process's first sync writes its first
 * entry): across two pages, read before written, it cost four faults. */
struct gc_dom_ref gc_domains[GC_MAX_DOMAINS] GC_LARGE __attribute__((aligned(4096)));
_Static_assert(sizeof(gc_domains) <= 4096, "gc_domains on one page");
GC_START int gc_ndomains;
GC_START pthread_mutex_t gc_domains_lock = PTHREAD_MUTEX_INITIALIZER;

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

	gc_made_note(GC_MADE_DOMAINS);
	pthread_mutex_lock(&gc_domains_lock);
	n = gc_ndomains;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev)
			break;
	if (i < n) {
		d = gc_domains[i].dr_dom;
		/* a segment inherited by fork, not yet joined: the child of an
		 * unshare is in another namespace, where the members' pids
		 * name other processes, or their times do not compare */
		if (gc_domain_is_segment(d) &&
		    !__atomic_load_n(&gc_domains[i].dr_joined, __ATOMIC_RELAXED)) {
			if (d->j_pidns != gc_pidns())
				gc_domain_poison(d, "another pid namespace after fork");
			else if (!gc_domain_same_clock(d))
				gc_domain_poison(d, "another time namespace after fork");
		}
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
		if (fs->fs_flags & GC_FS_SUBVOL)
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
			gc_domains[n].dr_uid = d->j_uid;
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

/* An already-known, usable domain for @dev, or NULL; never creates one.
 * *@fs: its filesystem's GC_FS_* (journal/fs.h). */
static struct gc_domain *domain_find(uint64_t dev, uint32_t *fs)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);

	if (!dev)
		return NULL;
	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dev == dev) {
			*fs = gc_domains[i].dr_fs_flags;
			return domain_usable(i);
		}
	return NULL;
}

/* What the device says, at most every GC_DEVICE_REFRESH_NS per domain:
 * the observer's flush latency when gcd runs, else /proc/diskstats'.
 * LIBGC_DEVICE=off asks neither: the library's own timing alone reads it. */
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
		       !f ? "unknown, direct calls timed"
			  : f < GC_DEVICE_GROUP_NS ? "direct calls, no probes"
						   : "grouped from the first commit, no probes");
}

/* The debug line of a change of mode, with the evidence that decided it:
 * the library's own timing (@timed: the device was not known before), or
 * the outcome check's. */
static void mode_log(const struct gc_domain *d, uint64_t now, bool timed)
{
	const struct gc_policy_state *ps = &d->j_policy;
	char why[320];

	if (gc_cfg.c_log < GC_LOG_DEBUG)
		return;
	if (timed)
		snprintf(why, sizeof(why),
			 "from own timing: the shortest direct call of two epochs %llu us, from several threads",
			 (unsigned long long)(ps->ps_fb_call_ns / GC_NSEC_PER_USEC));
	else if (ps->ps_oc_probe && ps->ps_oc_early && ps->ps_oc_paid)
		snprintf(why, sizeof(why),
			 "a probe, from the watch: grouping no longer evidently pays, %u%% of recent transactions waited for peers past a flush, %u.%u requests a transaction with something to commit, the hold's last stretch %llu us a request",
			 ps->ps_waited_x256 * 100 / 256, ps->ps_useful_x16 / 16,
			 ps->ps_useful_x16 % 16 * 10 / 16,
			 (unsigned long long)(ps->ps_oc_ref_ns / GC_NSEC_PER_USEC));
	else if (ps->ps_oc_probe && ps->ps_oc_early)
		snprintf(why, sizeof(why),
			 "a probe, from the watch: the hold's last stretch %llu us a request, the other mode %llu us when compared",
			 (unsigned long long)(ps->ps_oc_ref_ns / GC_NSEC_PER_USEC),
			 (unsigned long long)(ps->ps_oc_other_ns / GC_NSEC_PER_USEC));
	else if (ps->ps_oc_probe)
		snprintf(why, sizeof(why),
			 "a probe, from the outcome: held %llu us a request, %u%% of recent transactions waited for peers past a flush, %u.%u requests a transaction with something to commit, commits of %llu us",
			 (unsigned long long)(ps->ps_oc_ref_ns / GC_NSEC_PER_USEC),
			 ps->ps_waited_x256 * 100 / 256, ps->ps_useful_x16 / 16,
			 ps->ps_useful_x16 % 16 * 10 / 16,
			 (unsigned long long)(ps->ps_commit_ns / GC_NSEC_PER_USEC));
	else
		snprintf(why, sizeof(why),
			 "chosen, from the outcome: probed %llu us a request (%llu us with its first stretch), held %llu us",
			 (unsigned long long)(ps->ps_oc_last_ns / GC_NSEC_PER_USEC),
			 (unsigned long long)(ps->ps_oc_cost_ns / GC_NSEC_PER_USEC),
			 (unsigned long long)(ps->ps_oc_ref_ns / GC_NSEC_PER_USEC));
	gc_log(GC_LOG_DEBUG, "device %llx: %s calls now (t=%llu ms; %s)",
	       (unsigned long long)d->j_dev,
	       gc_policy_bypass(ps, &gc_cfg.c_policy, now) ? "direct" : "grouped",
	       (unsigned long long)(now / GC_NSEC_PER_MSEC), why);
}

/* Ends own timing's epoch, or the outcome check's stretch, when due (with
 * the lock: it may wake the leader). */
static void epoch_end(struct gc_domain *d, uint64_t now)
{
	struct gc_policy_state *ps = &d->j_policy;
	bool timed;

	if (!gc_policy_epoch_due(ps, &gc_cfg.c_policy, now) || !gc_domain_lock(d))
		return;
	/* for the debug line only */
	timed = gc_cfg.c_log >= GC_LOG_DEBUG && !gc_policy_device_flush(ps, now);
	if (gc_policy_epoch_end(ps, &gc_cfg.c_policy, now)) {
		/* a leader waiting for the threads now sent to direct calls
		 * decides again, and closes at once */
		if (gc_policy_bypass(ps, &gc_cfg.c_policy, now))
			gc_domain_wake(d, &d->j_wq_lead);
		mode_log(d, now, timed);
	}
	gc_domain_unlock(d);
}

/* While one request refreshes the verdict, the others keep the old one
 * for at most this long. */
#define GC_CLAIM_NS (1 * GC_NSEC_PER_MSEC)

/* The domain's verdict word (j_fast) is the adaptive policy's, shared by
 * the processes set to it. One set to a fixed wait or jbd2's rule groups
 * every request, as it was told, whatever the word says, and writes no
 * verdict into it for the others. */
static inline bool verdict_shared(void)
{
	return gc_cfg.c_policy.pc_kind == GC_POL_ADAPTIVE && gc_cfg.c_policy.pc_probe;
}

/* The verdict @w (read from j_fast) no longer holds at @now: one request
 * claims the refresh (the old verdict holds a little longer for the
 * others meanwhile), samples the policy's inputs (the device, the end of
 * an epoch or a stretch) and publishes the new verdict. Returns it.
 * @exact: the caller has just asked gc_self_exact() in this request, and
 * was told yes (no second getpid). */
static uint32_t verdict_refresh(struct gc_domain *d, uint64_t w, uint64_t now, bool exact)
{
	uint32_t was = gc_fast_kind(w);
	struct gc_verdict v;

	if (!__atomic_compare_exchange_n(&d->j_fast, &w, gc_fast_make(w, was, now + GC_CLAIM_NS),
					 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		/* refreshed, claimed, or a failure counted meanwhile */
		uint32_t k = gc_fast_verdict(w, now);

		return k != GC_V_ASK ? k : GC_V_GROUP;
	}
	/* not by a child sharing our memory (vfork): the locks these take
	 * would name its stopped parent's thread */
	if (exact || gc_self_exact()) {
		device_refresh(d, now);
		epoch_end(d, now);
	}
	v = gc_policy_verdict(&d->j_policy, &gc_cfg.c_policy, now);
	w = __atomic_load_n(&d->j_fast, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&d->j_fast, &w, gc_fast_make(w, v.v_kind, v.v_until_ns),
					    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return v.v_kind;
}

/* While on timed direct calls, a thread notes itself among the domain's
 * sync threads at most this often (no shared line written per request). */
static __thread uint64_t gc_seen_ns __attribute__((tls_model("initial-exec")));

static void count_request(struct gc_stat_slot *sl, enum gc_origin origin)
{
	switch (origin) {
	case GC_FROM_FSYNC:
		gc_stat_add_to(sl, req_fsync, 1);
		break;
	case GC_FROM_FDATASYNC:
		gc_stat_add_to(sl, req_fdatasync, 1);
		break;
	default:
		gc_stat_add_to(sl, req_osync, 1);
	}
}

/* A real sync of @d's filesystem failed while a request on @fd waited:
 * does that fail the request? Where the held-request rule of @fs
 * (GC_FS_HELD_FAIL*) applies to @fd, a directory when @dir (-1: not
 * known), and the journal no longer works (gc_fs_journal_works: a
 * failure that left it working was another file's own, a bad block under
 * it, and bare this file's sync answers 0). On xfs the rule applies to
 * directories only: a file's own real call answers for it there, as bare
 * (a failure of another file's sync leaves nothing behind, or shuts the
 * filesystem down and then fails this call too). Asked (one fstat, then
 * the probe) only once a failure makes it matter; a descriptor fstat
 * cannot tell about is taken as a directory. */
static bool held_rule(const struct gc_domain *d, uint32_t fs, int fd, int dir)
{
	struct stat st;
	int e = errno;
	bool applies;

	if (fs & GC_FS_HELD_FAIL)
		applies = true;
	else if (!(fs & GC_FS_HELD_FAIL_DIR))
		applies = false;
	else if (dir >= 0)
		applies = dir;
	else
		applies = gc_sys_fstat(fd, &st) < 0 || S_ISDIR(st.st_mode);
	errno = e;
	return applies && !gc_fs_journal_works(fd, d->j_dev);
}

/*
 * The direct path: the verdict said so (@kind, from the word @w read
 * before @t0). One real call; after it, where the filesystem (@fs, its
 * GC_FS_*) counts a failed commit as done for this inode (a directory
 * when @dir, -1: not known; held_rule), the same word again says whether
 * a real sync of it failed meanwhile, which fails this request too
 * (gc_domain_note_failure) where the journal no longer works (held_rule).
 * *@t1 is when it ended. Timed calls (own
 * timing's epoch, the outcome check's stretch) tell the policy what they
 * cost.
 */
static int direct_request(struct gc_domain *d, uint32_t fs, uint64_t w, uint32_t kind, int fd,
			  int dir, bool datasync, uint64_t t0, uint64_t *t1)
{
	int r;

	gc_stat_inc(bypass);
	r = gc_commit_direct(fd, datasync);
	if (fs & GC_FS_DEAD_EIO)
		r = gc_commit_dead_check(fd, r);
	*t1 = gc_now_ns();
	if (__builtin_expect(r < 0, 0)) {
		gc_domain_note_failure(d, r);
		return r;
	}
	if (kind == GC_V_TIMED) {
		int32_t tid = gc_gettid();

		gc_policy_direct_done(&d->j_policy, tid, t0, *t1);
		gc_policy_latency(&d->j_policy, t0, *t1);
		if (*t1 - gc_seen_ns >= GC_SEEN_EVERY_NS) {
			gc_policy_seen(&d->j_policy, tid, *t1);
			gc_seen_ns = *t1;
		}
	}
	if (__builtin_expect((fs & (GC_FS_HELD_FAIL | GC_FS_HELD_FAIL_DIR)) &&
			     gc_fast_failed(w, __atomic_load_n(&d->j_fast, __ATOMIC_ACQUIRE)), 0) &&
	    held_rule(d, fs, fd, dir))
		r = gc_domain_fail_err(d);
	return r;
}

int gc_sync_direct(int fd, bool datasync, enum gc_origin origin)
{
	count_request(gc_slot(), origin);
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

/* @d's entry in this process's own table, or NULL. */
static struct gc_dom_ref *dom_ref(const struct gc_domain *d)
{
	int i, n = __atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (gc_domains[i].dr_dom == d)
			return &gc_domains[i];
	return NULL;
}

/* GC_FS_* of @d's filesystem (journal/fs.h): the cautious rules when @d is
 * not in this process's table. */
static uint32_t fs_flags(const struct gc_domain *d)
{
	const struct gc_dom_ref *ref = dom_ref(d);

	return ref ? ref->dr_fs_flags : GC_FS_HELD_FAIL | GC_FS_DEAD_EIO;
}

/* Does a commit in flight on @d sync inode @ino? */
static bool committing_ino(const struct gc_domain *d, uint64_t ino)
{
	const struct gc_txn *c;
	uint32_t i, n;

	if (d->j_committing == GC_NONE)
		return false;
	c = &d->j_txns[RING_IX(d->j_committing)];
	for (i = 0, n = gc_txn_inodes(c); i < n; i++)
		if (c->t_islots[i].is_ino == ino)
			return true;
	return false;
}

/* With j_lock held, before a request for inode @ino joins: this process's
 * first and second requests on @d tell the policy whether processes come
 * back (gc_policy_proc_first). True for a first request where they do not,
 * when it could only wait: a commit is in flight, but not of its inode,
 * and no transaction is gathering. It makes its real call at once. With
 * no commit in flight it begins or joins a transaction as any request does,
 * so that those that sync one file or directory still share it. */
static bool once_direct(struct gc_domain *d, uint64_t ino)
{
	struct gc_dom_ref *ref = dom_ref(d);
	struct gc_policy_state *ps = &d->j_policy;
	uint32_t seen = ref ? __atomic_load_n(&ref->dr_requests, __ATOMIC_RELAXED) : 2;
	bool was, once;

	if (seen >= 2)
		return false;
	__atomic_store_n(&ref->dr_requests, seen + 1, __ATOMIC_RELAXED);
	if (seen == 1) {
		gc_policy_proc_back(ps);
		return false;
	}
	was = gc_policy_procs_once(ps, &gc_cfg.c_policy);
	once = gc_policy_proc_first(ps, &gc_cfg.c_policy);
	if (once != was)
		gc_log(GC_LOG_DEBUG,
		       "device %llx: %u of the last %u processes came back: a first request %s",
		       (unsigned long long)d->j_dev, ps->ps_procs_back, ps->ps_procs_new,
		       once ? "makes its real call rather than wait behind another inode's commit"
			    : "joins a transaction");
	return once && d->j_committing != GC_NONE &&
	       (d->j_running == GC_NONE || !d->j_txns[RING_IX(d->j_running)].t_handles) &&
	       !committing_ino(d, ino);
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

/* A request of @d that began at @begun, for a directory when @dir (-1:
 * not known yet): @r, or, where its filesystem counts a failed commit as
 * done for such an inode (GC_FS_HELD_FAIL*: ext4; xfs's directories), the
 * failure of any real sync of the filesystem since that took its journal
 * down (held_rule). Elsewhere a held request's own real call tells the
 * truth by itself (journal/fs.c). */
static int held_result(const struct gc_domain *d, int fd, uint64_t begun, int dir, int r)
{
	int held = gc_domain_held_result(d, begun, r);

	return held != r && held_rule(d, fs_flags(d), fd, dir) ? held : r;
}

static int sync_grouped(int fd, bool datasync, uint64_t begun, struct gc_domain *d);

/*
 * The request's route: shim -> here -> core (the real call, the clock,
 * the counters). With a domain whose verdict holds, no lock, no system
 * call but the real one, and two reads of its word. Everything else (no
 * verdict yet, grouping, the first request of a descriptor, a filesystem
 * seen for the first time) goes to sync_grouped. @begun: when the
 * program's call began, if before *@t0 (the intent log's requests; 0:
 * at *@t0).
 */
static int sync_route(int fd, bool datasync, enum gc_origin origin, uint64_t begun, uint64_t *t0,
		      uint64_t *t1)
{
	struct gc_stat_slot *sl = gc_slot();
	struct gc_domain *d = NULL;
	uint32_t kind = GC_V_ASK, fs = 0;
	uint64_t w = 0;
	int r;

	count_request(sl, origin);
	/* policy none: the cost of interposition alone, nothing more; and
	 * where a request could not ask its descriptor for its errors
	 * (gc_commit_pending_error), none shares another's real call */
	if (gc_cfg.c_policy.pc_kind == GC_POL_NONE ||
	    __builtin_expect(__atomic_load_n(&gc_sfr_refused, __ATOMIC_RELAXED), 0)) {
		*t0 = gc_now_ns();
		r = gc_commit_direct(fd, datasync);
		*t1 = gc_now_ns();
		return r;
	}
	/* While the domain is on direct calls, skip fstat: with many
	 * threads on one file, that alone cost a fifth of the throughput on
	 * a fast disk. The device is only a hint here: a wrong one can only
	 * send a request to a direct real call. */
	d = domain_find(gc_fd_dev_hint(fd), &fs);
	if (__builtin_expect(d != NULL, 1))
		w = __atomic_load_n(&d->j_fast, __ATOMIC_ACQUIRE);
	*t0 = gc_now_ns();
	begun = begun && begun < *t0 ? begun : *t0;
	if (__builtin_expect(d != NULL && verdict_shared(), 1)) {
		/* a refresh keeps the failure count: @w stays the baseline */
		kind = gc_fast_verdict(w, *t0);
		if (__builtin_expect(kind == GC_V_ASK, 0))
			kind = verdict_refresh(d, w, *t0, false);
		if (__builtin_expect(kind == GC_V_DIRECT || kind == GC_V_TIMED, 1)) {
			r = direct_request(d, fs, w, kind, fd, -1, datasync, *t0, t1);
			/* a failure between the program's call and the word */
			return begun < *t0 ? held_result(d, fd, begun, -1, r) : r;
		}
	}
	r = sync_grouped(fd, datasync, begun, d);
	*t1 = gc_now_ns();
	return r;
}

int gc_sync_grouped(int fd, bool datasync, enum gc_origin origin, uint64_t begun)
{
	uint64_t t0, t1;

	return sync_route(fd, datasync, origin, begun, &t0, &t1);
}

/* The intent log's step first (LIBGC_INTENT): it serves the request
 * through its log, or passes it on. */
static int sync_request(int fd, bool datasync, enum gc_origin origin, uint64_t *t0,
			uint64_t *t1)
{
	if (__builtin_expect(gc_intent_on, 0)) {
		int r;

		*t0 = gc_now_ns();
		r = gc_intent_sync(fd, datasync, origin, *t0);
		if (r != GC_INTENT_PASS) {
			*t1 = gc_now_ns();
			return r;
		}
	}
	return sync_route(fd, datasync, origin, 0, t0, t1);
}

int gc_request(int fd, bool datasync, enum gc_origin origin, uintptr_t ra)
{
	uint64_t t0, t1;
	bool grouped = true;
	int site = -1, r;

	/* a process made without atfork (_Fork, clone) shares or copied
	 * state that is not its own: it touches none of it, but for the
	 * intent log's step for such a child (its sync must stand against
	 * the parent's records) */
	if (__builtin_expect(!gc_self(), 0)) {
		t0 = gc_now_ns();
		r = GC_INTENT_PASS;
		if (__builtin_expect(gc_intent_on, 0))
			r = gc_intent_sync(fd, datasync, origin, t0);
		if (r == GC_INTENT_PASS)
			r = gc_sync_direct(fd, datasync, origin);
		gc_stats_request_end(gc_now_ns() - t0, r);
		return r;
	}
	if (__builtin_expect(__atomic_load_n(&gc_ps_idle, __ATOMIC_RELAXED), 0))
		gc_ps_need(__atomic_load_n(&gc_sites_on, __ATOMIC_RELAXED), gc_now_ns());
	if (__builtin_expect(!gc_sites_needed(), 1)) {
		r = sync_request(fd, datasync, origin, &t0, &t1);
		gc_stats_request_end(t1 - t0, r);
		return r;
	}
	/* call sites or a scope: the chain first, then the same route */
	t0 = gc_now_ns();
	site = gc_site_begin(&grouped, ra);
	if (grouped) {
		uint64_t s;

		r = sync_request(fd, datasync, origin, &s, &t1);
	} else {
		r = gc_sync_scoped_out(fd, datasync, origin);
		t1 = gc_now_ns();
	}
	gc_stats_request_end(t1 - t0, r);
	if (site >= 0)
		gc_site_end(site, t1 - t0, !grouped);
	return r;
}

/* After a request's wait: @r, unless the program put another file on @fd
 * meanwhile (another thread's dup2(), or a close and a reuse of the
 * number). Bare, its fsync held its file from its first instant; here the
 * calls made through @fd after the wait may have reached the other file,
 * or none. A syncfs of the request's filesystem covers its file then, and
 * answers for it, where @r was a success or EBADF: a failure stays a
 * failure, and so does a descriptor fstat cannot tell about (a filesystem
 * shut down answers EIO, and a syncfs through a descriptor opened now would
 * not report its earlier errors). (A copy of the descriptor held through
 * the wait would close the program's POSIX locks on the file when closed.) */
static int held_file(struct gc_domain *d, int fd, const struct stat *st, int r)
{
	if ((r != 0 && r != -EBADF) || gc_sys_fd_names(fd, st) != 0)
		return r;
	r = gc_sys_sync_file_fs((uint64_t)st->st_dev);
	gc_domain_note_failure(d, r); /* a real sync of the filesystem, as any */
	gc_log(GC_LOG_DEBUG, "fd %d: another file on it after the request waited: syncfs: %d", fd,
	       r);
	return r;
}

/* A request the verdict of the domain (or the lack of one) did not send
 * to a direct call: it finds its file's domain for sure, asks again, and
 * joins the running transaction. A failure of any real sync of the
 * filesystem since the request began (@begun, the program's call) fails
 * it (gc_domain_held_result). */
static int sync_grouped(int fd, bool datasync, uint64_t begun, struct gc_domain *d)
{
	struct gc_handle h;
	struct stat st;
	uint64_t now, w, t1;
	uint32_t kind;
	bool owner = false, rejoined, alone, clean;
	int r;

	/* From here on this process is named to others (membership, handles,
	 * the lock): not by a child sharing our memory (vfork), which would
	 * name its stopped parent's thread. */
	if (!gc_self_exact())
		return d ? direct_noted(d, fd, datasync) : gc_commit_direct(fd, datasync);
	if (gc_sys_fstat(fd, &st) < 0)
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
	w = __atomic_load_n(&d->j_fast, __ATOMIC_ACQUIRE);
	now = gc_now_ns();
	kind = verdict_shared() ? gc_fast_verdict(w, now) : GC_V_GROUP;
	if (kind == GC_V_ASK)
		kind = verdict_refresh(d, w, now, true);
	if (kind == GC_V_DIRECT || kind == GC_V_TIMED)
		return held_result(d, fd, begun, S_ISDIR(st.st_mode),
				   direct_request(d, fs_flags(d), w, kind, fd, S_ISDIR(st.st_mode),
						  datasync, gc_now_ns(), &t1));
	/* A file with nothing written through this descriptor since its last
	 * sync gains nothing from a shared commit: the policy counts such
	 * requests apart (oc_grouping_pays). */
	clean = S_ISREG(st.st_mode) && gc_dirty_synced(fd, (uint64_t)st.st_ino);
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
					.h_fs = fs_flags(d), .h_clean = clean };
		if (!gc_domain_lock(d)) {
			r = direct_noted(d, fd, datasync);
			return held_result(d, fd, begun, S_ISDIR(st.st_mode),
					   rejoined ? held_file(d, fd, &st, r) : r);
		}
		gc_undo_run(d);
		/* its own real call: a first request the rule sends alone, or
		 * one the transaction has no room for */
		alone = !rejoined && once_direct(d, (uint64_t)st.st_ino);
		if (alone || !gc_handle_join(&h, (uint64_t)st.st_ino, datasync, S_ISDIR(st.st_mode),
					     rejoined, now)) {
			gc_domain_unlock(d);
			if (alone)
				gc_stat_inc(bypass);
			r = direct_noted(d, fd, datasync);
			return held_result(d, fd, begun, S_ISDIR(st.st_mode),
					   rejoined ? held_file(d, fd, &st, r) : r);
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

		if (e > 0) /* cannot ask: its own real call answers for it */
			r = direct_noted(d, fd, datasync);
		else if (!r && e < 0)
			r = e;
	}
	r = held_file(d, fd, &st, r);
	gc_policy_latency(&d->j_policy, begun, gc_now_ns());
	return held_result(d, fd, begun, S_ISDIR(st.st_mode), r);
}
