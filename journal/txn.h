/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the journal's files share among themselves (not part of the gc_
 * API): the handle, this process's table of domains, and the functions
 * one file calls in another. Lock order: gc_domains_lock, then a domain's
 * j_lock; no function takes j_lock while holding another domain's. */
#ifndef GC_TXN_H
#define GC_TXN_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "journal/domain.h"
#include "journal/journal.h"

/* A request in a transaction. Lives on the requester's stack. */
struct gc_handle {
	struct gc_domain *h_dom;
	struct gc_txn *h_txn;
	uint64_t h_seq;		/* t_seq when joined */
	uint32_t h_gen;		/* j_gen when joined */
	int h_slot;
	int h_ent;
	int h_fd;
	int32_t h_tid;
	int32_t h_pid;
	bool h_done;		/* left the transaction: nothing to undo */
	bool h_clean;		/* a file with nothing to write when it joined */
	int h_own;		/* own real call's result when this handle was owner */
	uint32_t h_fs;		/* GC_FS_* of its filesystem (journal/fs.h) */
	uint64_t h_close_ns;	/* its transaction's close, read at collect (0: unknown) */
};

/* Indices read from a domain were checked after the lock was taken
 * (gc_domain_check), but a peer may write anything at any time: every use
 * also stays inside its array. */
#define RING_IX(i) ((uint32_t)(i) % GC_TXN_RING)

/* This process's table of the domains in use (journal.c), under
 * gc_domains_lock for changes; read lock-free by requests. */
#define GC_MAX_DOMAINS 64
struct gc_dom_ref {
	struct gc_domain *dr_dom;
	uint64_t dr_dev;
	uint32_t dr_joined;	/* this process is in the member table */
	uint32_t dr_direct;	/* a filesystem whose fsync may not cover the inode */
	uint32_t dr_fs_flags;	/* GC_FS_* of its filesystem (journal/fs.h) */
	uint32_t dr_uid;	/* the user whose segment it is (the effective uid
				 * at its attach: a setuid since does not rename it) */
	uint32_t dr_requests;	/* this process's grouped-path requests, up to 2
				 * (j_lock held): gc_policy_proc_first */
};
extern struct gc_dom_ref gc_domains[GC_MAX_DOMAINS];
extern int gc_ndomains;
extern pthread_mutex_t gc_domains_lock;

/* journal.c: a request's route (gc_request's, without its timing, call
 * site and the intent log's step), from @begun, when the program's call
 * began (0: now): the intent log calls it for the log inode and for its
 * real path. */
int gc_sync_grouped(int fd, bool datasync, enum gc_origin origin, uint64_t begun);

/* commit.c: real calls. Results are 0 or -errno. */
int gc_commit_direct(int fd, bool datasync);
/* A writeback error @fd's description has not reported yet: -errno, 0
 * none, 1 cannot tell (sync_file_range refused: then gc_sfr_refused is
 * set, and the process's requests make real calls of their own from then
 * on, each the answer to its own description, as bare). */
int gc_commit_pending_error(int fd);
extern bool gc_sfr_refused;
/* @r, the result of a real call just made on @fd, or -EIO when @r is 0 and
 * the filesystem now fails fstat with EIO (shut down: journal/fs.h). */
int gc_commit_dead_check(int fd, int r);
/* With j_lock held, as @s's owner: drops it for the real call, takes it
 * again. false if it could not be taken again. */
bool gc_commit_owner_call(struct gc_handle *h, struct gc_islot *s, uint64_t ino);
/* @s's published result, or GC_ORPHAN when no real call produced one. */
int gc_slot_result(const struct gc_txn *t, const struct gc_islot *s);

/* txn.c, all with j_lock held. */
struct gc_wq *gc_txn_wq(struct gc_domain *d, const struct gc_txn *t);
void gc_txn_commit_end(struct gc_domain *d, struct gc_txn *t, uint64_t now);
void gc_hent_abandon(struct gc_domain *d, struct gc_txn *t, int e);
bool gc_handle_valid(const struct gc_handle *h);
/* Joins the running transaction (beginning one) for inode @ino, a
 * directory when @dir; @keep: the request was handed back once (GC_REJOIN)
 * and is not again. false: no room, or the domain's state is not one a
 * request may join: make a direct call. */
bool gc_handle_join(struct gc_handle *h, uint64_t ino, bool datasync, bool dir, bool keep,
		    uint64_t now);
/* Runs the protocol for a joined handle; returns with j_lock dropped. */
int gc_handle_collect(struct gc_handle *h, uint64_t ino, bool *owner);
/* Takes out of @d the handles of this process that lost the lock. */
void gc_undo_run(struct gc_domain *d);
/* Debug and sanitizer builds: the counters' invariants (private domains). */
void gc_txn_assert(const struct gc_domain *d);

/* peers.c, with j_lock held. */
void gc_peers_reap(struct gc_domain *d);
uint64_t gc_peers_reap_interval(const struct gc_domain *d);
#endif
