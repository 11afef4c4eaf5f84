/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The intent log file: create it (gcrun --intent-init), read and write its
 * header, and recover it (gcrun --recover, gcd at start-up). Raw system
 * calls only, so the same code serves the tools and the library, whose own
 * wrappers it never re-enters. Results are 0 or -errno. */
#ifndef GC_INTENT_LOG_H
#define GC_INTENT_LOG_H
#include <stdint.h>
#include <stdio.h>

#include "journal/intent_fmt.h"

/* Raw calls the library's wrappers would otherwise catch. */
int gi_sys_open(const char *path, int flags, int mode);
int gi_sys_close(int fd);
int gi_sys_pread(int fd, void *buf, size_t len, uint64_t off);
int gi_sys_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int gi_sys_fsync(int fd, int datasync);

/* A zero-filled, fully written log of @size bytes at @path (never
 * fallocated: unwritten extents need metadata at their first write). An
 * existing log that holds records not yet replayed is refused (-EEXIST). */
int gi_log_create(const char *path, uint64_t size);
/* Reads the current header of the open log @fd. -EINVAL: not a log. */
int gi_log_header(int fd, struct gi_hdr *h);
/* Writes @h as generation h_gen + 1 into its copy and fdatasyncs the log;
 * @h is updated. */
int gi_log_write_header(int fd, struct gi_hdr *h);
/* gi_read_fn over a descriptor (ctx: an int *). */
int gi_log_read(void *ctx, uint64_t off, void *buf, size_t len);

struct gi_recovery {
	uint64_t rc_records;	/* valid records after the checkpoint */
	uint64_t rc_replayed;	/* DATA records written back */
	uint64_t rc_retired;	/* DATA records a RETIRE cancelled */
	uint64_t rc_skipped;	/* DATA records of deleted files */
	uint64_t rc_files;	/* files written and fsynced */
	uint64_t rc_bytes;
	uint64_t rc_stale;	/* DATA records of files changed since the log
				 * was refused: not replayed */
};
/* Replays the log at @path into its files, fsyncs them, then marks the log
 * clean. Idempotent; a crash in the middle leaves it to be run again. With
 * @dry, only counts. Messages (one line each) go to @msg when not NULL.
 * Recoveries of one log run one at a time (an OFD lock on it). A log a
 * process refused (a REFUSED record) is replayed only into the files not
 * changed since (ctime before it): the others went on without it. */
int gi_log_recover(const char *path, int dry, struct gi_recovery *rc, FILE *msg);
/* Tests: when nonzero, recovery stops after this many records written
 * back, before any fsync or header: a power cut in the middle of it. */
extern unsigned long gi_recover_stop_after;
/* Records after the checkpoint of the open log @fd (0: clean); -errno. */
int64_t gi_log_pending(int fd, struct gi_end *end);
/* The same, and *@refused: the time of a REFUSED record among them (0:
 * none). */
int64_t gi_log_state(int fd, struct gi_end *end, uint64_t *refused);
/* Does a valid record follow the checkpoint of @fd? Reads the first one
 * only: 1, 0, or -errno. */
int gi_log_dirty(int fd);
#endif
