// SPDX-License-Identifier: LGPL-2.1-or-later
/* lockstall: worker processes keep syncing one file through the shared
 * segment while another process takes the segment's lock and is stopped
 * with it (SIGSTOP) for longer than the library waits for a lock, several
 * times; handles waiting in transactions give up on the lock meanwhile.
 * Then, with the workers still alive but idle, two fresh processes sync the
 * same file: they must still find room to share commits. */

/* Usage: lockstall -D DIR [-w WORKERS] [-n STALLS] [-H HOLD_MS] [-g GAP_MS]
 *                  [-o FRESH_OPS] [-W FRESH_WAIT_US]
 * Run under the library with a shared segment (its only one in /dev/shm: a
 * private tmpfs) and LIBGC_POLICY=fixed. The fresh processes run this
 * program again (exec) with LIBGC_WAIT_US=FRESH_WAIT_US. Prints one line
 * "lockstall: key=value ...": stalls, workers, worker_ops, fresh_a,
 * fresh_b (pids, for their exit report lines), fresh_ops, errors. Exits 1
 * when a request failed or the segment could not be found or locked. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "journal/domain.h"

#define MAXW 16

enum { PH_RUN, PH_IDLE, PH_EXIT };

struct ctl {
	int phase;
	int idle;		/* workers that saw PH_IDLE */
	long ops;
	int errors;
	int go;			/* the fresh pair starts together */
};

static struct ctl *ctl;
static const char *dir;

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int open_shared(void)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/shared", dir);
	return open(path, O_RDWR | O_CREAT, 0644);
}

/* One request: a small write and its fsync. */
static int one_sync(int fd, long i, char tag)
{
	char buf[128];

	memset(buf, tag, sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf), (off_t)(i % 64) * (off_t)sizeof(buf)) !=
	    (ssize_t)sizeof(buf))
		return -1;
	return fsync(fd);
}

static int worker(int id)
{
	int fd = open_shared();
	long i;

	if (fd < 0)
		return 1;
	for (i = 0; __atomic_load_n(&ctl->phase, __ATOMIC_ACQUIRE) == PH_RUN; i++) {
		if (one_sync(fd, i, (char)('a' + id)) != 0) {
			fprintf(stderr, "lockstall: worker %d: %s\n", id, strerror(errno));
			__atomic_add_fetch(&ctl->errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_add_fetch(&ctl->ops, 1, __ATOMIC_RELAXED);
	}
	/* alive and idle: whatever this process left in the segment stays */
	__atomic_add_fetch(&ctl->idle, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&ctl->phase, __ATOMIC_ACQUIRE) != PH_EXIT)
		nap_ms(5);
	close(fd);
	return 0;	/* exit(), not _exit(): the library leaves the segment */
}

/* The fresh process: OPS requests on the shared file. */
static int fresh(long ops)
{
	int fd = open_shared(), errors = 0;

	if (fd < 0)
		return 1;
	for (long i = 0; i < ops; i++)
		if (one_sync(fd, i, 'F') != 0) {
			fprintf(stderr, "lockstall: fresh %d: %s\n", (int)getpid(),
				strerror(errno));
			errors++;
		}
	close(fd);
	return errors ? 1 : 0;
}

/* The segment the workers use: the only libgc one in /dev/shm. */
static int find_segment(char *path, size_t len)
{
	for (int tries = 0; tries < 400; tries++) {
		DIR *d = opendir("/dev/shm");
		struct dirent *e;

		if (!d)
			return -1;
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, "libgc-", 6)) {
				snprintf(path, len, "/dev/shm/%s", e->d_name);
				closedir(d);
				return 0;
			}
		closedir(d);
		nap_ms(5);
	}
	return -1;
}

/* A process that takes the segment's lock and is stopped holding it for
 * @hold_ms; then it is continued, drops the lock and exits. */
static int stall(const char *seg, long hold_ms)
{
	int fd, st;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct gc_domain *d;
		int r;

		fd = open(seg, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			_exit(3);
		d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (d == MAP_FAILED)
			_exit(3);
		/* the lock names its holder: pid << 32 | tid (journal/domain.h) */
		uint64_t me = (uint64_t)getpid() << 32 | (uint32_t)gettid(), free_;

		r = 0;
		for (;;) {
			free_ = 0;
			if (__atomic_compare_exchange_n(&d->j_lock.l_owner, &free_, me, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				break;
			if (++r > 5000)
				_exit(4);
			nap_ms(1);
		}
		raise(SIGSTOP);
		__atomic_store_n(&d->j_lock.l_owner, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&d->j_lock.l_seq, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &d->j_lock.l_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
		_exit(0);
	}
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st)) {
		fprintf(stderr, "lockstall: the lock holder did not stop (status 0x%x)\n", st);
		return -1;
	}
	nap_ms(hold_ms);
	kill(pid, SIGCONT);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "lockstall: the lock holder ended with status 0x%x\n", st);
		return -1;
	}
	return 0;
}

static pid_t spawn_fresh(char *self, long ops, long wait_us)
{
	char n[32], w[32];
	pid_t pid;

	snprintf(n, sizeof(n), "%ld", ops);
	snprintf(w, sizeof(w), "%ld", wait_us);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { self, "-D", (char *)dir, "-F", n, NULL };

		setenv("LIBGC_WAIT_US", w, 1);
		while (!__atomic_load_n(&ctl->go, __ATOMIC_ACQUIRE))
			nap_ms(1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	int workers = 4, stalls = 5, c, bad = 0, st;
	long hold_ms = 2500, gap_ms = 300, fresh_ops = 40, fresh_wait_us = 3000, fresh_only = -1;
	pid_t pids[MAXW], fa, fb;
	char seg[512];

	while ((c = getopt(argc, argv, "D:w:n:H:g:o:W:F:")) != -1) {
		switch (c) {
		case 'D': dir = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 'n': stalls = atoi(optarg); break;
		case 'H': hold_ms = atol(optarg); break;
		case 'g': gap_ms = atol(optarg); break;
		case 'o': fresh_ops = atol(optarg); break;
		case 'W': fresh_wait_us = atol(optarg); break;
		case 'F': fresh_only = atol(optarg); break;
		default: return 2;
		}
	}
	if (!dir || workers < 1 || workers > MAXW)
		return 2;
	if (fresh_only >= 0)
		return fresh(fresh_only);

	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	memset(ctl, 0, sizeof(*ctl));
	for (int i = 0; i < workers; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			exit(worker(i));
		if (pids[i] < 0)
			return 1;
	}
	if (find_segment(seg, sizeof(seg)) != 0) {
		fprintf(stderr, "lockstall: no segment in /dev/shm\n");
		bad++;
	}
	for (int i = 0; !bad && i < stalls; i++) {
		nap_ms(gap_ms);	/* the workers are back in transactions */
		if (stall(seg, hold_ms) != 0)
			bad++;
	}
	nap_ms(gap_ms);
	__atomic_store_n(&ctl->phase, PH_IDLE, __ATOMIC_RELEASE);
	while (__atomic_load_n(&ctl->idle, __ATOMIC_ACQUIRE) < workers)
		nap_ms(5);

	fa = spawn_fresh(argv[0], fresh_ops, fresh_wait_us);
	fb = spawn_fresh(argv[0], fresh_ops, fresh_wait_us);
	__atomic_store_n(&ctl->go, 1, __ATOMIC_RELEASE);
	if (fa < 0 || fb < 0 || waitpid(fa, &st, 0) != fa || !WIFEXITED(st) || WEXITSTATUS(st))
		bad++;
	if (fb > 0 && (waitpid(fb, &st, 0) != fb || !WIFEXITED(st) || WEXITSTATUS(st)))
		bad++;

	__atomic_store_n(&ctl->phase, PH_EXIT, __ATOMIC_RELEASE);
	for (int i = 0; i < workers; i++)
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	printf("lockstall: stalls=%d workers=%d worker_ops=%ld fresh_a=%d fresh_b=%d fresh_ops=%ld errors=%d\n",
	       stalls, workers, ctl->ops, (int)fa, (int)fb, fresh_ops, ctl->errors + bad);
	return bad || ctl->errors ? 1 : 0;
}
