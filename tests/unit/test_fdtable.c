// SPDX-License-Identifier: LGPL-2.1-or-later
/* The descriptor table: set/get, dup-style copies, the close protocol
 * against a reused number, iteration, range clears across chunks, bounds,
 * and concurrent use from several threads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>

#include "core/fdtable.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

static void reset(void)
{
	gc_fd_reset();
}

TestSuite(fdtable, .init = reset, .timeout = 20);

Test(fdtable, set_get)
{
	cr_expect_eq(gc_fd_get(5), 0, "nothing converted yet");
	cr_expect_eq(gc_fd_set(5, O_SYNC), 0);
	cr_expect_eq(gc_fd_get(5), O_SYNC);
	cr_expect_eq(gc_fd_get(4), 0, "neighbours untouched");
	cr_expect_eq(gc_fd_get(6), 0);
	cr_expect_eq(gc_fd_set(5, O_DSYNC), 0);
	cr_expect_eq(gc_fd_get(5), O_DSYNC, "a new open replaces the entry");
	cr_expect_eq(gc_fd_set(5, 0), 0);
	cr_expect_eq(gc_fd_get(5), 0, "set 0 clears");
	cr_expect_eq(gc_fd_set(0, O_SYNC), 0, "fd 0 is an fd like any other");
	cr_expect_eq(gc_fd_get(0), O_SYNC);
	cr_expect_eq(gc_fd_set(77777, 0), 0, "clearing an untracked fd is fine");
	cr_expect_eq(gc_fd_get(77777), 0);
}

Test(fdtable, bounds)
{
	cr_expect_eq(gc_fd_set(-1, O_SYNC), -EBADF);
	cr_expect_eq(gc_fd_set(INT_MIN, O_SYNC), -EBADF);
	cr_expect_eq(gc_fd_set(GC_FD_MAX, O_SYNC), -EBADF);
	cr_expect_eq(gc_fd_set(GC_FD_MAX + 1, O_DSYNC), -EBADF);
	cr_expect_eq(gc_fd_set(INT_MAX, O_SYNC), -EBADF);
	cr_expect_eq(gc_fd_set(GC_FD_MAX, 0), -EBADF, "even a clear beyond the table");
	cr_expect_eq(gc_fd_get(-1), 0);
	cr_expect_eq(gc_fd_get(GC_FD_MAX), 0);
	cr_expect_eq(gc_fd_get(INT_MAX), 0);
	cr_expect_eq(gc_fd_set(GC_FD_MAX - 1, O_SYNC), 0, "the last fd is tracked");
	cr_expect_eq(gc_fd_get(GC_FD_MAX - 1), O_SYNC);
	cr_expect_eq(gc_fd_next(0), GC_FD_MAX - 1, "and found");
	cr_expect_eq(gc_fd_close_begin(GC_FD_MAX), 0);
	gc_fd_close_end(GC_FD_MAX, 1);	/* harmless */
	gc_fd_close_end(-1, 1);
	gc_fd_copy(3, GC_FD_MAX);	/* dropped: beyond the table */
	cr_expect_eq(gc_fd_get(GC_FD_MAX), 0);
}

Test(fdtable, copy_like_dup)
{
	gc_fd_set(3, O_SYNC);
	gc_fd_copy(3, 10);
	cr_expect_eq(gc_fd_get(10), O_SYNC, "the copy names the same description");
	cr_expect_eq(gc_fd_get(3), O_SYNC, "the original stays");
	gc_fd_copy(3, 3);
	cr_expect_eq(gc_fd_get(3), O_SYNC, "dup2(fd, fd) changes nothing");

	/* closing either one leaves the other */
	gc_fd_close_end(3, gc_fd_close_begin(3));
	cr_expect_eq(gc_fd_get(3), 0);
	cr_expect_eq(gc_fd_get(10), O_SYNC, "closing the original keeps the copy");

	gc_fd_copy(10, 2000);	/* into a chunk not mapped yet */
	cr_expect_eq(gc_fd_get(2000), O_SYNC);
}

/* dup2(plain, converted): the target now names a description with nothing
 * converted, so its entry must go. */
Test(fdtable, copy_of_unconverted_clears_target)
{
	gc_fd_set(10, O_DSYNC);
	gc_fd_copy(4, 10);
	cr_expect_eq(gc_fd_get(10), 0, "stale O_DSYNC entry survived dup2");
	gc_fd_set(11, O_SYNC);
	gc_fd_copy(-1, 11);
	cr_expect_eq(gc_fd_get(11), 0, "copy from an invalid fd carries nothing");
	gc_fd_set(12, O_SYNC);
	gc_fd_copy(GC_FD_MAX + 5, 12);
	cr_expect_eq(gc_fd_get(12), 0);
}

Test(fdtable, close_protocol)
{
	uint64_t tok;

	gc_fd_set(7, O_SYNC);
	tok = gc_fd_close_begin(7);
	cr_expect_neq(tok, 0, "a tracked fd has a token");
	cr_expect_eq(gc_fd_get(7), O_SYNC, "still valid until the real close returns");
	gc_fd_close_end(7, tok);
	cr_expect_eq(gc_fd_get(7), 0, "closed");

	/* an unconverted fd: token 0, and end leaves a racing open alone */
	tok = gc_fd_close_begin(8);
	cr_expect_eq(tok, 0);
	gc_fd_set(8, O_DSYNC);
	gc_fd_close_end(8, tok);
	cr_expect_eq(gc_fd_get(8), O_DSYNC);
}

/* close(fd) races with open() in another thread that gets the same number:
 * the new entry, set between begin and end, must survive end. */
Test(fdtable, reuse_between_begin_and_end_survives)
{
	static const int again[] = { O_SYNC, O_DSYNC };
	uint64_t tok;

	for (size_t i = 0; i < ARRAY_LEN(again); i++) {
		gc_fd_set(9, O_SYNC);
		tok = gc_fd_close_begin(9);
		gc_fd_set(9, again[i]);		/* the same flags, too */
		gc_fd_close_end(9, tok);
		cr_expect_eq(gc_fd_get(9), again[i], "re-set #%zu lost by close_end", i);
	}

	/* reopened unconverted, then converted again, all before end */
	gc_fd_set(9, O_SYNC);
	tok = gc_fd_close_begin(9);
	gc_fd_set(9, 0);
	gc_fd_set(9, O_SYNC);
	gc_fd_close_end(9, tok);
	cr_expect_eq(gc_fd_get(9), O_SYNC);

	/* reused through dup2 onto the closing number */
	gc_fd_set(20, O_DSYNC);
	gc_fd_set(9, O_SYNC);
	tok = gc_fd_close_begin(9);
	gc_fd_copy(20, 9);
	gc_fd_close_end(9, tok);
	cr_expect_eq(gc_fd_get(9), O_DSYNC);

	/* a stale token from an earlier life of the fd does nothing */
	gc_fd_set(9, O_SYNC);
	tok = gc_fd_close_begin(9);
	gc_fd_close_end(9, tok);
	gc_fd_set(9, O_SYNC);
	gc_fd_close_end(9, tok);
	cr_expect_eq(gc_fd_get(9), O_SYNC, "old token cleared a new entry");
}

Test(fdtable, next_iterates_entries_only)
{
	static const int fds[] = { 3, 700, 1023, 1024, 5000, 400000 };
	int fd = -1;
	size_t i;

	cr_expect_eq(gc_fd_next(0), -1, "empty table");
	for (i = 0; i < ARRAY_LEN(fds); i++)
		gc_fd_set(fds[i], i % 2 ? O_DSYNC : O_SYNC);
	for (i = 0; i < ARRAY_LEN(fds); i++) {
		fd = gc_fd_next(fd + 1);
		cr_expect_eq(fd, fds[i], "entry %zu: got %d", i, fd);
	}
	cr_expect_eq(gc_fd_next(fd + 1), -1);
	cr_expect_eq(gc_fd_next(-5), 3, "negative start counts from 0");
	cr_expect_eq(gc_fd_next(701), 1023);
	cr_expect_eq(gc_fd_next(5001), 400000, "skips unmapped chunks");
	cr_expect_eq(gc_fd_next(GC_FD_MAX), -1);
	cr_expect_eq(gc_fd_next(INT_MAX), -1);

	gc_fd_set(1023, 0);
	cr_expect_eq(gc_fd_next(701), 1024, "a cleared entry is skipped");
	gc_fd_close_end(1024, gc_fd_close_begin(1024));
	cr_expect_eq(gc_fd_next(701), 5000, "a closed entry is skipped");
}

/* close_range(1000, 3000) spans chunks 0..2 (1024 fds each). */
Test(fdtable, clear_range_across_chunks)
{
	int fd, n = 0;

	for (fd = 990; fd <= 3010; fd++)
		gc_fd_set(fd, fd % 2 ? O_SYNC : O_DSYNC);
	gc_fd_set(5, O_SYNC);
	gc_fd_set(9000, O_SYNC);
	gc_fd_clear_range(1000, 3000);
	for (fd = 990; fd <= 3010; fd++) {
		int want = fd >= 1000 && fd <= 3000 ? 0 : fd % 2 ? O_SYNC : O_DSYNC;

		if (gc_fd_get(fd) != want)
			n++;
		cr_expect_eq(gc_fd_get(fd), want, "fd %d", fd);
		if (n > 5)
			break;	/* enough said */
	}
	cr_expect_eq(gc_fd_get(5), O_SYNC);
	cr_expect_eq(gc_fd_get(9000), O_SYNC);
	cr_expect_eq(gc_fd_next(1000), 3001);
	cr_expect_eq(gc_fd_next(991), 991);
}

Test(fdtable, clear_range_edges)
{
	gc_fd_set(10, O_SYNC);
	gc_fd_set(500000, O_SYNC);
	gc_fd_set(GC_FD_MAX - 1, O_SYNC);
	gc_fd_clear_range(20, 10);	/* empty range */
	cr_expect_eq(gc_fd_get(10), O_SYNC);
	gc_fd_clear_range(10, 10);
	cr_expect_eq(gc_fd_get(10), 0, "a one-fd range");
	gc_fd_set(10, O_SYNC);
	gc_fd_clear_range(11, UINT_MAX);	/* close_range(11, ~0U) */
	cr_expect_eq(gc_fd_get(10), O_SYNC);
	cr_expect_eq(gc_fd_get(500000), 0, "through unmapped chunks");
	cr_expect_eq(gc_fd_get(GC_FD_MAX - 1), 0, "up to the last fd");
	gc_fd_clear_range(GC_FD_MAX + 10u, UINT_MAX);	/* beyond: no-op */
	cr_expect_eq(gc_fd_get(10), O_SYNC);
}

Test(fdtable, reset_forgets_everything)
{
	gc_fd_set(1, O_SYNC);
	gc_fd_set(3000, O_DSYNC);
	gc_fd_set(GC_FD_MAX - 1, O_SYNC);
	gc_fd_reset();
	cr_expect_eq(gc_fd_next(0), -1);
	cr_expect_eq(gc_fd_get(1), 0);
	cr_expect_eq(gc_fd_set(1, O_DSYNC), 0, "usable after a reset");
	cr_expect_eq(gc_fd_get(1), O_DSYNC);
}

/* ---- threads ---------------------------------------------------------------- */

#define NTHREADS 4
#define SPAN 4096	/* fds per run: four fresh chunks, shared by all threads */
#define BASE 300000	/* away from anything mapped by other tests */
#define ROUNDS 200

static pthread_barrier_t start_line;

struct worker {
	int id;
	int errors;
	int first_bad_fd;
};

/* Thread @id owns fds BASE + k * NTHREADS + id: every chunk is shared, and
 * all threads map the fresh chunks at the same moment. Each round it sets
 * its fds to a flag pattern and reads them back. */
static void *worker(void *arg)
{
	struct worker *w = arg;
	int r, k;

	pthread_barrier_wait(&start_line);
	for (r = 0; r < ROUNDS; r++) {
		int flags = (r + w->id) % 3 == 0 ? 0 : (r + w->id) % 3 == 1 ? O_SYNC : O_DSYNC;

		for (k = 0; k < SPAN / NTHREADS; k++) {
			int fd = BASE + k * NTHREADS + w->id;

			if (gc_fd_set(fd, flags))
				w->errors++;
		}
		for (k = 0; k < SPAN / NTHREADS; k++) {
			int fd = BASE + k * NTHREADS + w->id;

			if (gc_fd_get(fd) != flags) {
				if (!w->errors)
					w->first_bad_fd = fd;
				w->errors++;
			}
		}
		/* others' entries must always hold one of the legal values */
		for (k = 0; k < 64; k++) {
			int v = gc_fd_get(BASE + (k * 61 + r) % SPAN);

			if (v != 0 && v != O_SYNC && v != O_DSYNC)
				w->errors++;
		}
	}
	return NULL;
}

Test(fdtable, concurrent_set_get)
{
	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];
	int i, fd, count = 0, live = 0;

	pthread_barrier_init(&start_line, NULL, NTHREADS);
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .id = i, .first_bad_fd = -1 };
		cr_assert_eq(pthread_create(&th[i], NULL, worker, &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start_line);
	for (i = 0; i < NTHREADS; i++)
		cr_expect_eq(w[i].errors, 0, "thread %d: %d errors, first at fd %d", i,
			     w[i].errors, w[i].first_bad_fd);

	/* the final state is each thread's last pattern, nothing lost */
	for (fd = BASE; fd < BASE + SPAN; fd++) {
		int id = (fd - BASE) % NTHREADS, r = ROUNDS - 1;
		int want = (r + id) % 3 == 0 ? 0 : (r + id) % 3 == 1 ? O_SYNC : O_DSYNC;

		if (gc_fd_get(fd) != want)
			count++;
		live += want != 0;
	}
	cr_expect_eq(count, 0, "%d entries differ from their owner's last write", count);
	cr_assert_gt(live, 0);
	for (fd = gc_fd_next(BASE), count = 0; fd >= 0; fd = gc_fd_next(fd + 1))
		count++;
	cr_expect_eq(count, live, "iteration saw %d of %d live entries", count, live);
}

/* The description the program opened, held for its entry: at the floor or
 * above, close-on-exec, the library's own; copied with the entry; closed
 * when the entry goes; at most GC_FD_HELD at once. */
Test(fdtable, held_follows_its_entry)
{
	char path[] = "/tmp/libgc-fdtable-XXXXXX";
	int fd = mkostemp(path, O_DSYNC), fd2 = dup(fd), h, h2, i, n = 0;
	int many[GC_FD_HELD + 1];

	/* (a held description is closed only while it still is one: a sync
	 * description, of the entry's file where that is known) */
	cr_assert(fd >= 0 && fd2 >= 0);
	unlink(path);
	cr_expect_eq(gc_fd_held(fd), -1, "nothing held before");
	gc_fd_set(fd, O_DSYNC);
	cr_assert_eq(gc_fd_hold(fd), 0);
	h = gc_fd_held(fd);
	cr_expect_geq(h, gc_sys_fd_floor(), "held at the floor or above");
	cr_expect(fcntl(h, F_GETFD) & FD_CLOEXEC, "close-on-exec");
	cr_expect(gc_own_is(h), "the library's own: the program's close fails");
	gc_fd_copy(fd, fd2);
	h2 = gc_fd_held(fd2);
	cr_expect(h2 >= 0 && h2 != h, "a copy gets a held description, at its own number");
	gc_fd_close_end(fd, gc_fd_close_begin(fd));
	cr_expect_eq(gc_fd_held(fd), -1);
	cr_expect_eq(fcntl(h, F_GETFD), -1, "closed with its entry");
	cr_expect_eq(gc_fd_held(fd2), h2, "the copy's stays");
	gc_fd_set(fd2, 0);
	cr_expect_eq(fcntl(h2, F_GETFD), -1, "closed when the entry is cleared");

	for (i = 0; i <= GC_FD_HELD; i++) {
		many[i] = 400 + i;
		gc_fd_set(many[i], O_SYNC);
	}
	for (i = 0; i <= GC_FD_HELD; i++) {
		int r = dup2(fd, many[i]) < 0 ? -errno : gc_fd_hold(many[i]);

		if (r == 0)
			n++;
		else
			cr_expect_eq(r, -ENFILE, "only a full pool refuses");
	}
	cr_expect_eq(n, GC_FD_HELD, "GC_FD_HELD held at once");
	/* the one left without: the same description as the others (all
	 * dup2s of @fd), whose held numbers stand for it */
	cr_expect_eq(gc_fd_held(many[GC_FD_HELD]), -1, "none of its own");
	cr_expect_geq(gc_fd_held_shared(many[GC_FD_HELD]), gc_sys_fd_floor(),
		      "another number's of the same description");
	cr_expect_eq(gc_fd_held_shared(fd), -1, "none for a number with no entry");
	gc_fd_clear_range(400, 400 + GC_FD_HELD);
	for (i = 0; i <= GC_FD_HELD; i++)
		cr_expect_eq(gc_fd_held(many[i]), -1);
	cr_expect_eq(gc_fd_hold(many[0]), 0, "free again once cleared");
	gc_fd_set(many[0], 0);
	for (i = 0; i <= GC_FD_HELD; i++)
		close(many[i]);
	close(fd);
	close(fd2);
}
