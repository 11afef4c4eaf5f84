// SPDX-License-Identifier: LGPL-2.1-or-later
/* chaos: worker processes keep syncing a shared file and files of their own
 * while the driver SIGKILLs one at a time (at a random moment, while the
 * shared segment shows it issuing a real call, or while it waits in a
 * transaction) and starts a replacement, or SIGSTOPs one for a while (-P).
 * Every request that returns is timed. With -A, every worker is killed at
 * once mid-commit, leaving a stale segment. */

/* Usage: chaos -D DIR [-w WORKERS] [-k KILLS] [-g GAP_MS] [-S SEGMENT] [-A]
 *              [-P STOPS [-H HOLD_MS]] [-s SEED]
 * Prints one line "chaos: key=value ...": kills, stops; of the victims,
 * in_call (inside a sync request, i.e. in the library), owner (issuing a real
 * call for a committing transaction), handle (holding a handle in a
 * transaction), leader, lock (holding the domain lock) - read from SEGMENT
 * without its lock, so hints; ops, errors, max_us (slowest request that
 * returned), inflight_max_us (oldest request seen in flight), stalled,
 * stuck. Exits 1 when a request failed, a worker stopped making progress or
 * did not finish when told to. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "journal/domain.h"

#define MAXW 16
#define REC 512
/* A worker that has not completed a request for this long is stuck. */
#define STUCK_NS (10 * 1000000000ULL)

struct slot {
	int32_t pid;
	int32_t errors;
	uint64_t ops;		/* requests completed */
	uint64_t max_ns;	/* slowest completed request */
	uint64_t call_start;	/* start of the request in flight, 0 when none */
	uint32_t pauses;	/* bumped when the driver stops this worker */
	uint32_t paused_ops;	/* requests that spanned a stop: not timed */
};

struct shared {
	int stop;
	struct slot s[MAXW];
};

static struct shared *sh;
static const char *dir;
static const volatile struct gc_domain *seg;	/* read without the lock: hints only */
static const char *seg_path;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Roles by slot: which file and which kind of request. */
enum { R_SHARED_FSYNC, R_OWN_FDATASYNC, R_SHARED_ODSYNC, R_OWN_FSYNC };

static int worker(int slot)
{
	int role = slot % 4, fd;
	struct slot *me = &sh->s[slot];
	char path[4096], buf[REC];
	bool shared = role == R_SHARED_FSYNC || role == R_SHARED_ODSYNC;

	alarm(150);
	if (shared)
		snprintf(path, sizeof(path), "%s/chaos.shared", dir);
	else
		snprintf(path, sizeof(path), "%s/chaos.%d", dir, slot);
	fd = open(path, O_RDWR | O_CREAT | (role == R_SHARED_ODSYNC ? O_DSYNC : 0), 0644);
	if (fd < 0) {
		fprintf(stderr, "chaos[%d]: open %s: %s\n", slot, path, strerror(errno));
		__atomic_add_fetch(&me->errors, 1, __ATOMIC_RELAXED);
		return 1;
	}
	for (uint64_t i = 0; !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); i++) {
		off_t off = shared ? (off_t)slot * 4096 : (off_t)(i % 16) * REC;
		uint64_t t0, t1;
		const char *what;
		uint32_t pauses;
		int r;

		memset(buf, 'a' + (int)((i + (uint64_t)slot) % 26), sizeof(buf));
		if (role != R_SHARED_ODSYNC &&
		    pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf)) {
			what = "pwrite";
			goto failed;
		}
		pauses = __atomic_load_n(&me->pauses, __ATOMIC_RELAXED);
		t0 = now_ns();
		__atomic_store_n(&me->call_start, t0, __ATOMIC_RELAXED);
		switch (role) {
		case R_SHARED_FSYNC:
		case R_OWN_FSYNC:
			what = "fsync";
			r = fsync(fd);
			break;
		case R_OWN_FDATASYNC:
			what = "fdatasync";
			r = fdatasync(fd);
			break;
		default:
			what = "O_DSYNC pwrite";
			r = pwrite(fd, buf, sizeof(buf), off) == (ssize_t)sizeof(buf) ? 0 : -1;
		}
		t1 = now_ns();
		__atomic_store_n(&me->call_start, 0, __ATOMIC_RELAXED);
		if (r != 0)
			goto failed;
		/* a request the driver held stopped is not timed */
		if (pauses != __atomic_load_n(&me->pauses, __ATOMIC_RELAXED))
			__atomic_add_fetch(&me->paused_ops, 1, __ATOMIC_RELAXED);
		else if (t1 - t0 > __atomic_load_n(&me->max_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&me->max_ns, t1 - t0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&me->ops, 1, __ATOMIC_RELAXED);
		continue;
failed:
		fprintf(stderr, "chaos[%d]: %s: %s\n", slot, what, strerror(errno));
		__atomic_add_fetch(&me->errors, 1, __ATOMIC_RELAXED);
		return 1;
	}
	close(fd);
	return 0;
}

static pid_t start(int slot)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
		exit(worker(slot));	/* exit: the library's exit handlers run */
	if (pid > 0)
		__atomic_store_n(&sh->s[slot].pid, pid, __ATOMIC_RELAXED);
	return pid;
}

/* ---- what the shared segment says about a process (racy hints) ---- */

static void seg_map(void)
{
	int fd;
	void *p;

	if (seg || !seg_path)
		return;
	fd = open(seg_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	p = mmap(NULL, sizeof(struct gc_domain), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		seg = p;
}

/* Issuing a real call for a transaction being committed. */
static bool seg_owner(pid_t pid)
{
	if (!seg)
		return false;
	for (int i = 0; i < GC_TXN_RING; i++) {
		const volatile struct gc_txn *t = &seg->j_txns[i];

		if (t->t_state != T_COMMITTING)
			continue;
		for (uint32_t k = 0; k < t->t_inodes && k < GC_TXN_INODES; k++) {
			const volatile struct gc_islot *s = &t->t_islots[k];

			if ((s->is_flags & (IS_CLAIMED | IS_DONE)) == IS_CLAIMED &&
			    s->is_owner_pid == pid)
				return true;
		}
	}
	return false;
}

/* Holding a handle in a running or committing transaction. */
static bool seg_handle(pid_t pid)
{
	if (!seg)
		return false;
	for (int i = 0; i < GC_TXN_RING; i++) {
		const volatile struct gc_txn *t = &seg->j_txns[i];

		if (t->t_state != T_RUNNING && t->t_state != T_COMMITTING)
			continue;
		for (int e = 0; e < GC_TXN_HANDLES; e++)
			if (t->t_hents[e].he_used && t->t_hents[e].he_pid == pid)
				return true;
	}
	return false;
}

static bool seg_leader(pid_t pid)
{
	if (!seg)
		return false;
	for (int i = 0; i < GC_TXN_RING; i++) {
		const volatile struct gc_txn *t = &seg->j_txns[i];

		if (t->t_state == T_RUNNING && t->t_leader && t->t_leader_pid == pid)
			return true;
	}
	return false;
}

/* The lock names its holder as pid << 32 | tid. */
static bool seg_lock(pid_t pid)
{
	return seg && (pid_t)(seg->j_lock.l_owner >> 32) == pid;
}

static bool seg_committing(void)
{
	return seg && seg->j_committing != GC_NONE;
}

/* ---- the driver ---- */

static struct {
	unsigned kills, in_call, owner, handle, leader, lock, restarts, stuck, early;
	unsigned stops, stalled;
	uint64_t inflight_max_ns;
} st;
static int paused_slot = -1;
static uint64_t paused_call;	/* its request in flight when it was stopped */

/* Longest request now in flight (a request that never returns shows here),
 * but for the one of a worker the driver holds stopped. */
static void watch(int workers)
{
	uint64_t now = now_ns();

	for (int w = 0; w < workers; w++) {
		uint64_t t = __atomic_load_n(&sh->s[w].call_start, __ATOMIC_RELAXED);

		/* the stopped worker's own request spans the stop, also for
		 * the moment after SIGCONT until it returns */
		if (w == paused_slot) {
			if (t == paused_call)
				continue;
			paused_slot = -1;
		}

		if (t && now > t && now - t > st.inflight_max_ns)
			st.inflight_max_ns = now - t;
	}
}

static void sleep_watching(int workers, long us)
{
	uint64_t until = now_ns() + (uint64_t)us * 1000;

	while (now_ns() < until) {
		watch(workers);
		nap_us(500);
	}
}

/* Waits until every worker completed @more requests beyond @base. */
static bool progress(int workers, const uint64_t *base, uint64_t more)
{
	uint64_t t0 = now_ns();

	for (int w = 0; w < workers; w++)
		while (__atomic_load_n(&sh->s[w].ops, __ATOMIC_RELAXED) < base[w] + more) {
			if (now_ns() - t0 > STUCK_NS) {
				fprintf(stderr, "chaos: worker %d made no progress for %llu s\n",
					w, STUCK_NS / 1000000000ULL);
				return false;
			}
			watch(workers);
			nap_us(500);
		}
	return true;
}

static void snapshot(int workers, uint64_t *ops)
{
	for (int w = 0; w < workers; w++)
		ops[w] = __atomic_load_n(&sh->s[w].ops, __ATOMIC_RELAXED);
}

/* Kills slot @w and starts its replacement. */
static bool kill_one(int w, int strategy)
{
	pid_t pid = sh->s[w].pid;
	uint64_t until = now_ns() + 100 * 1000000ULL;
	int status;

	/* Aim: 0 anywhere, 1 while it issues a real call, 2 while it
	 * waits in a transaction; give up aiming after 100 ms. */
	while (strategy && now_ns() < until) {
		if (strategy == 1 ? seg_owner(pid) : seg_handle(pid) && !seg_owner(pid))
			break;
		nap_us(50);
	}
	if (!strategy)
		nap_us(rand() % 8000);
	if (__atomic_load_n(&sh->s[w].call_start, __ATOMIC_RELAXED))
		st.in_call++;
	st.owner += seg_owner(pid);
	st.handle += seg_handle(pid);
	st.leader += seg_leader(pid);
	st.lock += seg_lock(pid);
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	st.kills++;
	if (!WIFSIGNALED(status)) {
		/* it ended by itself: a failed request */
		st.early++;
		return false;
	}
	__atomic_store_n(&sh->s[w].call_start, 0, __ATOMIC_RELAXED);
	if (start(w) < 0)
		return false;
	st.restarts++;
	return true;
}

/* Others may wait for a stopped (alive but silent) participant until they
 * give up on it: max(2 s, 20 x commit latency), 2 s at these latencies. */
#define GIVE_UP_MS 2000

/* Stops a worker (SIGSTOP) for @hold_ms, aimed (as in kill_one) at one that
 * issues a real call for others or at one waiting in a transaction. Once the
 * others could have given up on it, each must be completing requests again:
 * one at least in the rest of the stop, which outlasts any request that
 * keeps the bound. */
static bool stop_one(int workers, int hold_ms, int aim)
{
	uint64_t until = now_ns() + 3000000000ULL, base[MAXW];
	int v = -1, window = hold_ms - GIVE_UP_MS - 500;
	bool ok = true;
	pid_t pid;

	while (v < 0 && now_ns() < until) {
		for (int w = 0; w < workers && v < 0; w++) {
			pid_t p = sh->s[w].pid;

			if (aim == 1 ? seg_owner(p) : seg_handle(p) && !seg_owner(p))
				v = w;
		}
		if (v < 0)
			nap_us(50);
	}
	if (v < 0)
		v = rand() % workers;
	pid = sh->s[v].pid;
	/* its request in flight will span the stop: not timed */
	__atomic_add_fetch(&sh->s[v].pauses, 1, __ATOMIC_RELAXED);
	paused_slot = v;
	kill(pid, SIGSTOP);
	paused_call = __atomic_load_n(&sh->s[v].call_start, __ATOMIC_RELAXED);
	if (__atomic_load_n(&sh->s[v].call_start, __ATOMIC_RELAXED))
		st.in_call++;
	st.owner += seg_owner(pid);
	st.handle += seg_handle(pid);
	st.leader += seg_leader(pid);
	st.lock += seg_lock(pid);
	st.stops++;
	sleep_watching(workers, (hold_ms - window) * 1000L);
	snapshot(workers, base);
	sleep_watching(workers, window * 1000L);
	for (int w = 0; w < workers; w++)
		if (w != v && __atomic_load_n(&sh->s[w].ops, __ATOMIC_RELAXED) == base[w]) {
			fprintf(stderr, "chaos: worker %d completed no request in the last %d ms of "
				"the %d ms worker %d (%s) was stopped\n", w, window, hold_ms, v,
				aim == 1 ? "issuing a real call" : "waiting in a transaction");
			st.stalled++;
			ok = false;
		}
	kill(pid, SIGCONT);
	return ok;
}

/* Lets every worker finish; false if one does not within 10 s or failed. */
static bool finish(int workers)
{
	bool ok = true;

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (int w = 0; w < workers; w++) {
		uint64_t t0 = now_ns();
		int status = 0;
		pid_t r;

		while ((r = waitpid(sh->s[w].pid, &status, WNOHANG)) == 0 &&
		       now_ns() - t0 < STUCK_NS) {
			watch(workers);
			nap_us(1000);
		}
		if (r != sh->s[w].pid) {
			fprintf(stderr, "chaos: worker %d (pid %d) did not finish\n", w,
				sh->s[w].pid);
			kill(sh->s[w].pid, SIGKILL);
			waitpid(sh->s[w].pid, NULL, 0);
			st.stuck++;
			ok = false;
		} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			ok = false;
		}
	}
	return ok;
}

/* Every worker killed at once, at a moment when a transaction is being
 * committed (a real call in flight) if one shows up within 3 s. */
static bool kill_all(int workers)
{
	uint64_t until = now_ns() + 3000000000ULL;
	bool owner = false;

	while (now_ns() < until) {
		for (int w = 0; w < workers && !owner; w++)
			owner = seg_owner(sh->s[w].pid);
		if (owner)
			break;
		nap_us(50);
	}
	for (int w = 0; w < workers; w++)
		kill(sh->s[w].pid, SIGKILL);
	for (int w = 0; w < workers; w++) {
		waitpid(sh->s[w].pid, NULL, 0);
		st.kills++;
	}
	printf("chaos: killed_all=%u committing=%d owner_in_real_call=%d\n", st.kills,
	       seg_committing(), owner);
	return true;
}

int main(int argc, char **argv)
{
	int workers = 8, kills = 200, gap_ms = 100, stops = 0, hold_ms = 6000, c, w;
	uint64_t base[MAXW], ops = 0, max_ns = 0;
	unsigned seed = (unsigned)getpid();
	bool all = false, ok = true;
	int errors = 0;

	while ((c = getopt(argc, argv, "D:w:k:g:S:AP:H:s:")) != -1) {
		switch (c) {
		case 'D': dir = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 'k': kills = atoi(optarg); break;
		case 'g': gap_ms = atoi(optarg); break;
		case 'S': seg_path = optarg; break;
		case 'A': all = true; break;
		case 'P': stops = atoi(optarg); break;
		case 'H': hold_ms = atoi(optarg); break;
		case 's': seed = (unsigned)strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: chaos -D DIR [-w N] [-k N] [-g MS] [-S SEGMENT] [-A] "
				"[-P STOPS [-H HOLD_MS]] [-s SEED]\n");
			return 2;
		}
	}
	if (!dir || workers < 1 || workers > MAXW || kills < 0 || gap_ms < 1 || stops < 0 ||
	    hold_ms < GIVE_UP_MS + 1500)
		return 2;
	alarm(170);
	srand(seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	for (w = 0; w < workers; w++)
		if (start(w) < 0)
			return 1;
	/* every worker joined and completed a request */
	memset(base, 0, sizeof(base));
	if (!progress(workers, base, all ? 3 : 1)) {
		finish(workers);
		return 1;
	}
	seg_map();
	if (all)
		return kill_all(workers) ? 0 : 1;

	for (int k = 0; k < kills && ok; k++) {
		sleep_watching(workers, (gap_ms / 2 + rand() % (gap_ms + 1)) * 1000L);
		ok = kill_one(rand() % workers, k % 3);
	}
	for (int k = 0; k < stops && ok; k++) {
		sleep_watching(workers, (gap_ms / 2 + rand() % (gap_ms + 1)) * 1000L);
		ok = stop_one(workers, hold_ms, 1 + k % 2);
	}
	/* after the last kill everyone still gets through */
	snapshot(workers, base);
	ok = ok && progress(workers, base, 2);
	ok = finish(workers) && ok;
	for (w = 0; w < workers; w++) {
		ops += sh->s[w].ops;
		errors += sh->s[w].errors;
		if (sh->s[w].max_ns > max_ns)
			max_ns = sh->s[w].max_ns;
	}
	printf("chaos: workers=%d kills=%u restarts=%u stops=%u stalled=%u in_call=%u owner=%u "
	       "handle=%u leader=%u lock=%u early=%u stuck=%u ops=%llu errors=%d max_us=%llu "
	       "inflight_max_us=%llu segment=%s seed=%u\n",
	       workers, st.kills, st.restarts, st.stops, st.stalled, st.in_call, st.owner,
	       st.handle, st.leader, st.lock, st.early, st.stuck, (unsigned long long)ops, errors,
	       (unsigned long long)(max_ns / 1000), (unsigned long long)(st.inflight_max_ns / 1000),
	       seg ? "seen" : "unseen", seed);
	return ok && !errors ? 0 : 1;
}
