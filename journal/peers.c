// SPDX-License-Identifier: LGPL-2.1-or-later
/* Peers: finding the handles, claims and leadership of processes and
 * threads that died, and taking them over, at least every reap interval
 * of a waiter's sleep. */
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

/* Waiters look for dead peers at least this often... */
#define GC_REAP_MIN_NS (10 * GC_NSEC_PER_MSEC)
#define GC_REAP_MAX_NS (200 * GC_NSEC_PER_MSEC)

/* Finds the parts of dead peers in every transaction and undoes them: their
 * handles leave, their claims on slots are released for a survivor to make
 * the real call, a dead leader's place becomes vacant. */
void gc_peers_reap(struct gc_domain *d)
{
	bool changed = false;
	int i, e;
	uint32_t k, n;

	for (i = 0; i < GC_TXN_RING; i++) {
		struct gc_txn *t = &d->j_txns[i];

		if (t->t_state == T_FREE)
			continue;
		for (e = 0; e < GC_TXN_HANDLES && t->t_state != T_FREE; e++) {
			struct gc_hent *he = &t->t_hents[e];

			if (he->he_used && !gc_alive(he->he_pid, he->he_tid))
				gc_hent_abandon(d, t, e); /* wakes everyone */
		}
		if (t->t_state == T_RUNNING && t->t_leader &&
		    !gc_alive(t->t_leader_pid, t->t_leader)) {
			t->t_leader = 0;
			changed = true;
		}
		if (t->t_state != T_COMMITTING)
			continue;
		for (k = 0, n = gc_txn_inodes(t); k < n; k++) {
			struct gc_islot *s = &t->t_islots[k];

			if ((s->is_flags & (IS_CLAIMED | IS_DONE)) != IS_CLAIMED ||
			    gc_alive(s->is_owner_pid, s->is_owner))
				continue;
			s->is_flags &= ~IS_CLAIMED;
			s->is_owner = 0;
			changed = true;
			if (!s->is_handles) {
				s->is_flags |= IS_DONE;
				s->is_err = GC_ORPHAN;
				if (!--t->t_pending)
					gc_txn_commit_end(d, t, gc_now_ns());
			}
		}
	}
	if (changed)
		gc_domain_wake_all(d);
}

uint64_t gc_peers_reap_interval(const struct gc_domain *d)
{
	uint64_t r = 4 * d->j_policy.ps_commit_ns;

	return r < GC_REAP_MIN_NS ? GC_REAP_MIN_NS : r > GC_REAP_MAX_NS ? GC_REAP_MAX_NS : r;
}
