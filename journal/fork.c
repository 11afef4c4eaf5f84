// SPDX-License-Identifier: LGPL-2.1-or-later
/* fork and exit: atfork handlers keep the process's tables consistent
 * across fork; a child in another pid namespace leaves its parent's
 * segments; at exit the last member removes a segment. */
#include "journal/journal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/domain.h"
#include "journal/txn.h"
#include "policy/policy.h"

/* Did prepare take the locks (glibc runs prepare, fork and the parent's or
 * child's handlers of one fork under its own lock)? */
GC_START static bool fork_took;

/* Takes gc_domains_lock and the j_lock of every private domain (shared ones
 * are not copied by fork, so they need no quiescing); nothing, and no
 * write, in a process that never began a domain. */
GC_ONCE void gc_journal_atfork_prepare(void)
{
	bool take = gc_was_made(GC_MADE_DOMAINS);
	int i;

	GC_STORE_CHANGED(fork_took, take);
	if (!take)
		return;
	/* a signal handler that syncs while we hold these goes direct */
	gc_depth++;
	pthread_mutex_lock(&gc_domains_lock);
	for (i = 0; i < gc_ndomains; i++)
		if (!gc_domain_is_segment(gc_domains[i].dr_dom))
			gc_domain_lock(gc_domains[i].dr_dom);
}

/* Drops what prepare took. */
GC_ONCE void gc_journal_atfork_parent(void)
{
	int i;

	if (!fork_took)
		return;
	for (i = gc_ndomains - 1; i >= 0; i--)
		if (!gc_domain_is_segment(gc_domains[i].dr_dom))
			gc_domain_unlock(gc_domains[i].dr_dom);
	pthread_mutex_unlock(&gc_domains_lock);
	gc_depth--;
}

/* In the child only the forking thread exists. Private domains: transactions
 * in flight belong to the parent; keep what was learned about the device.
 * Shared domains: the same memory as the parent's; the child joins as a
 * member of its own on first use. Drops what prepare took. */
GC_ONCE void gc_journal_atfork_child(void)
{
	int i;

	if (!fork_took) {
		/* Another thread began the process's first domain after
		 * prepare looked: its half-made table and the lock it held
		 * are forgotten, and the child starts without domains (no
		 * reference to one outlives a request). */
		if (gc_was_made(GC_MADE_DOMAINS)) {
			__atomic_store_n(&gc_ndomains, 0, __ATOMIC_RELEASE);
			pthread_mutex_init(&gc_domains_lock, NULL);
		}
		return;
	}
	/* Shared domains: whether the child may still use one (a child of
	 * unshare(CLONE_NEWPID) or CLONE_NEWTIME is in another namespace) is
	 * asked at its first request, when it joins (domain_get): asked here,
	 * each child read /proc/self/ns/pid, 20-40 us of CPU for a fresh pid,
	 * and most children exec or exit without a sync. */
	for (i = gc_ndomains - 1; i >= 0; i--) {
		struct gc_domain *d = gc_domains[i].dr_dom;

		gc_domains[i].dr_requests = 0; /* a process of its own */
		if (gc_domain_is_segment(d)) {
			gc_domains[i].dr_joined = 0;
			continue;
		}
		gc_domain_reset_txns(d);
		memset(&d->j_wq_lead, 0, sizeof(d->j_wq_lead));
		memset(d->j_wq_txn, 0, sizeof(d->j_wq_txn));
		d->j_policy.ps_recent_n = 0;
		gc_domain_unlock(d);
	}
	pthread_mutex_unlock(&gc_domains_lock);
	gc_depth--;
}

/* At exit: leave shared domains; the last member removes the segment. */
GC_ONCE void gc_journal_exit(void)
{
	char path[128];
	int i;

	if (!__atomic_load_n(&gc_ndomains, __ATOMIC_ACQUIRE) || !gc_self_exact())
		return; /* none, or a child made without atfork: none of it is ours */
	for (i = 0; i < gc_ndomains; i++) {
		struct gc_domain *d = gc_domains[i].dr_dom;

		if (!gc_domain_is_segment(d) || !gc_domains[i].dr_joined || !gc_domain_lock(d))
			continue;
		if (gc_domain_leave(d, gc_getpid())) {
			gc_domain_path(path, sizeof(path), gc_domains[i].dr_uid, d->j_dev);
			syscall(SYS_unlink, path);
		}
		gc_domain_unlock(d);
	}
}
