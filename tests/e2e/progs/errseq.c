// SPDX-License-Identifier: LGPL-2.1-or-later
/* errseq: the programs of the differential error suite (tests/e2e/errors.sh).
 * Each scenario writes over a file whose blocks fail to write back (the slow
 * disk's eio-write fault) and prints, on one line, what its syncs answered;
 * run bare and under libgc, the lines must be the same.
 *   errseq prep FILE KB            writes and fsyncs KB KiB, prints the
 *                                  file's extents: "ext OFFSET LENGTH"
 *   errseq prepmany DIR N KB       N such files DIR/f0.., their extents merged
 *   errseq two|fork|exec|dup|signal|dsync|reuse|handoff|write FILE KB
 *   errseq sandbox FILE KB         writes KB KiB, then puts its thread under
 *                                  a seccomp filter that kills the process
 *                                  at cachestat(2) (cskill.h), then writes
 *                                  them again: "wrote"
 *   errseq fsync FILE              a later process opens FILE and fsyncs
 *   errseq many DIR N KB           N files written and closed, a healthy one
 *                                  written and fsynced, then the N reopened
 *   errseq forklock|cancellock FILE  (under libgc) the limiter's slot lock
 *                                  after a fork / a cancelled writer: "stuck=K"
 *                                  children (or trials) whose writes it no
 *                                  longer started writeback for */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cskill.h"

#define CHUNK (256 * 1024)
#define KIB 1024L

static char buf[CHUNK];

static const char *ename(int r, int e)
{
	static char other[32];

	if (r >= 0)
		return "0";
	switch (e) {
	case EIO: return "EIO";
	case ENOSPC: return "ENOSPC";
	case EROFS: return "EROFS";
	case EBADF: return "EBADF";
	}
	snprintf(other, sizeof(other), "errno%d", e);
	return other;
}

static const char *do_fsync(int fd)
{
	int r = fsync(fd);

	return ename(r, errno);
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0) {
		fprintf(stderr, "errseq: open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Writes @kb KiB from offset @from through @fd in whole chunks (the last
 * one shorter); a failed write ends the program. */
static void write_all(int fd, long kb, off_t from)
{
	long left = kb * KIB;
	off_t off = from;

	while (left > 0) {
		size_t n = left < CHUNK ? (size_t)left : CHUNK;

		if (pwrite(fd, buf, n, off) != (ssize_t)n) {
			fprintf(stderr, "errseq: write: %s\n", strerror(errno));
			exit(1);
		}
		off += (off_t)n;
		left -= (long)n;
	}
}

/* ---- preparation: files and their extents on the disk ------------------ */

struct ext {
	unsigned long long off, len;
};

static int extents(int fd, struct ext *out, int max)
{
	struct {
		struct fiemap f;
		struct fiemap_extent e[64];
	} m;
	int i, n = 0;

	memset(&m, 0, sizeof(m));
	m.f.fm_length = ~0ULL;
	m.f.fm_flags = FIEMAP_FLAG_SYNC;
	m.f.fm_extent_count = 64;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.f) < 0)
		return -1;
	for (i = 0; i < (int)m.f.fm_mapped_extents && n < max; i++)
		out[n++] = (struct ext){ m.e[i].fe_physical, m.e[i].fe_length };
	return n;
}

static void make_file(const char *path, long kb)
{
	int fd = open_or_die(path, O_RDWR | O_CREAT | O_TRUNC);

	write_all(fd, kb, 0);
	if (fsync(fd) || close(fd)) {
		fprintf(stderr, "errseq: prep %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static int cmp_ext(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Prints the extents, sorted, those less than @gap apart as one. */
static void print_merged(struct ext *e, int n, unsigned long long gap)
{
	int i, m = 0;

	qsort(e, (size_t)n, sizeof(*e), cmp_ext);
	for (i = 1; i < n; i++) {
		if (e[i].off <= e[m].off + e[m].len + gap) {
			unsigned long long end = e[i].off + e[i].len;

			if (end > e[m].off + e[m].len)
				e[m].len = end - e[m].off;
		} else {
			e[++m] = e[i];
		}
	}
	for (i = 0; n && i <= m; i++)
		printf("ext %llu %llu\n", e[i].off, e[i].len);
}

static int prep(const char *path, long kb)
{
	struct ext e[64];
	int fd, n;

	make_file(path, kb);
	fd = open_or_die(path, O_RDONLY);
	n = extents(fd, e, 64);
	if (n <= 0)
		return 1;
	print_merged(e, n, 0);
	return 0;
}

static int prepmany(const char *dir, int nf, long kb)
{
	static struct ext e[4096];
	char path[4096];
	int i, n = 0;

	for (i = 0; i < nf; i++) {
		int fd, k;

		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		make_file(path, kb);
		fd = open_or_die(path, O_RDONLY);
		k = extents(fd, e + n, (int)(sizeof(e) / sizeof(e[0])) - n);
		close(fd);
		if (k <= 0)
			return 1;
		n += k;
	}
	print_merged(e, n, 1ULL << 20);
	return 0;
}

/* ---- scenarios ---------------------------------------------------------- */

/* Two descriptions of one file, the second opened after the writes: each
 * reports the error once (a description opened while nobody has seen an
 * error hears of it too). */
static void two(const char *path, long kb)
{
	int a = open_or_die(path, O_WRONLY), b;
	const char *ra, *rb, *ra2;

	write_all(a, kb, 0);
	b = open_or_die(path, O_WRONLY);
	ra = do_fsync(a);
	rb = do_fsync(b);
	ra2 = do_fsync(a);
	printf("a=%s b=%s a=%s\n", ra, rb, ra2);
}

/* A child writes through the description it shares with its parent and
 * exits without a sync; the parent's fsync hears of the failure. */
static void forked(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY), st;
	const char *r1, *r2;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		exit(1);
	if (pid == 0) {
		write_all(fd, kb, 0);
		exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
	r1 = do_fsync(fd);
	r2 = do_fsync(fd);
	printf("parent=%s again=%s\n", r1, r2);
}

/* The writer execs; the new program syncs the descriptor it inherited. */
static void execed(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY);
	char num[16];

	write_all(fd, kb, 0);
	snprintf(num, sizeof(num), "%d", fd);
	fflush(stdout);
	execl("/proc/self/exe", "errseq", "exec-fsync", num, (char *)NULL);
	exit(1);
}

static void exec_fsync(int fd)
{
	const char *r1 = do_fsync(fd), *r2 = do_fsync(fd);

	printf("exec=%s again=%s\n", r1, r2);
}

/* A later process (errseq fsync) opens the file and syncs it. */
static void writer(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY);

	write_all(fd, kb, 0);
	close(fd);
	printf("wrote\n");
}

/* A program that sandboxes itself between two streams of writes. */
static void sandboxed(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY);

	write_all(fd, kb, 0);
	if (cskill_install(true)) {
		fprintf(stderr, "errseq: seccomp: %s\n", strerror(errno));
		exit(1);
	}
	write_all(fd, kb, 0);
	close(fd);
	printf("wrote\n");
}

static void later(const char *path)
{
	int fd = open_or_die(path, O_WRONLY);
	const char *r1 = do_fsync(fd), *r2 = do_fsync(fd);

	printf("later=%s again=%s\n", r1, r2);
}

/* A dup'd descriptor shares the description: one report between them. */
static void dupped(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY), d = dup(fd);
	const char *r1, *r2;

	if (d < 0)
		exit(1);
	write_all(fd, kb, 0);
	r1 = do_fsync(d);
	r2 = do_fsync(fd);
	printf("dup=%s orig=%s\n", r1, r2);
}

/* A signal handler syncs the failed file while the thread streams another
 * file (inside the library's throttled write path, under libgc). */
static volatile sig_atomic_t handled;
static int sig_fd;
static const char *sig_res;
static volatile long ok_writes;

static void on_usr1(int sig)
{
	int saved = errno;

	(void)sig;
	sig_res = do_fsync(sig_fd);
	handled = 1;
	errno = saved;
}

static void *kicker(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;

	/* once the healthy file's stream is under way */
	while (ok_writes < 4)
		usleep(1000);
	pthread_kill(main_thread, SIGUSR1);
	return NULL;
}

static void signalled(const char *path, long kb)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	pthread_t self = pthread_self(), t;
	char okpath[4096];
	long i;
	int ok;

	snprintf(okpath, sizeof(okpath), "%s.ok", path);
	sig_fd = open_or_die(path, O_WRONLY);
	ok = open_or_die(okpath, O_WRONLY | O_CREAT | O_TRUNC);
	sigaction(SIGUSR1, &sa, NULL);
	write_all(sig_fd, kb, 0);
	if (pthread_create(&t, NULL, kicker, &self))
		exit(1);
	for (i = 0; !handled || i < 2 * kb / (CHUNK / KIB); i++) {
		write_all(ok, CHUNK / KIB, (off_t)i * CHUNK);
		ok_writes = i + 1;
	}
	pthread_join(t, NULL);
	printf("handler=%s after=%s ok=%s\n", sig_res, do_fsync(sig_fd), do_fsync(ok));
	unlink(okpath);
}

/* O_DSYNC writes: each reports its own failure; a plain description
 * opened before them still hears of it, the O_DSYNC one has nothing left. */
static void dsync(const char *path, long kb)
{
	int plain = open_or_die(path, O_WRONLY), ds = open_or_die(path, O_WRONLY | O_DSYNC);
	char seq[256] = "";
	const char *last = NULL;
	long off, runs = 0;
	int count = 0;

	for (off = 0; off < kb * KIB; off += CHUNK) {
		ssize_t w = pwrite(ds, buf, CHUNK, off);
		const char *r = ename(w == CHUNK ? 0 : -1, w < 0 ? errno : EIO);

		if (last && strcmp(last, r)) {
			snprintf(seq + strlen(seq), sizeof(seq) - strlen(seq), "%s%sx%d",
				 runs ? "," : "", last, count);
			runs++;
			count = 0;
		}
		last = r;
		count++;
	}
	snprintf(seq + strlen(seq), sizeof(seq) - strlen(seq), "%s%sx%d", runs ? "," : "", last,
		 count);
	printf("writes=%s plain=%s dsync=%s\n", seq, do_fsync(plain), do_fsync(ds));
}

/* The failed file is removed unsynced; a new file (often with the same
 * inode number) is written and synced: nothing of the old file's error. */
static void reuse(const char *path, long kb)
{
	int fd = open_or_die(path, O_WRONLY), nfd;
	char npath[4096];
	struct stat a, b;

	write_all(fd, kb, 0);
	fstat(fd, &a);
	close(fd);
	unlink(path);
	snprintf(npath, sizeof(npath), "%s.new", path);
	nfd = open_or_die(npath, O_WRONLY | O_CREAT | O_TRUNC);
	fstat(nfd, &b);
	fprintf(stderr, "errseq: reuse: inode %s\n",
		a.st_ino == b.st_ino ? "reused" : "not reused");
	write_all(nfd, 64, 0);
	printf("new=%s\n", do_fsync(nfd));
	close(nfd);
	unlink(npath);
}

/* Descriptors opened O_DSYNC before the error, which another description
 * then reports (the error is SEEN): each still hears of it once, after it
 * has gone through what gives a description its flag back under libgc:
 * stdio (fdopen), a socket (SCM_RIGHTS), a spawned child, and an exec.
 * First, one whose own write reported an error goes through fdopen: it
 * does not hear of that error twice. */
static int pass_self(int fd)
{
	char c = 'x', ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct cmsghdr *h;
	int sv[2], r = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		exit(1);
	memset(ctl, 0, sizeof(ctl));
	h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	if (sendmsg(sv[0], &m, 0) != 1 || recvmsg(sv[1], &m, 0) != 1)
		exit(1);
	h = CMSG_FIRSTHDR(&m);
	if (h && h->cmsg_type == SCM_RIGHTS)
		memcpy(&r, CMSG_DATA(h), sizeof(int));
	close(sv[0]);
	close(sv[1]);
	if (r < 0)
		exit(1);
	return r;
}

static void handoff(const char *path, long kb)
{
	int a1 = open_or_die(path, O_WRONLY | O_DSYNC), a2 = open_or_die(path, O_WRONLY | O_DSYNC);
	int a3 = open_or_die(path, O_WRONLY | O_DSYNC), a4 = open_or_die(path, O_WRONLY | O_DSYNC);
	int a5 = open_or_die(path, O_WRONLY | O_DSYNC), b = open_or_die(path, O_WRONLY), got, st;
	char num[16], *args[] = { "errseq", "handoff-child", num, NULL };
	extern char **environ;
	const char *r1;
	FILE *f;
	pid_t pid;

	{
		ssize_t w = pwrite(a5, buf, CHUNK, 0);

		r1 = ename(w == CHUNK ? 0 : -1, w < 0 ? errno : EIO);
	}
	f = fdopen(a5, "w");
	if (!f)
		exit(1);
	printf("told=%s again=%s ", r1, do_fsync(fileno(f)));
	write_all(b, kb, 0);
	printf("b=%s ", do_fsync(b));
	f = fdopen(a1, "w");
	if (!f)
		exit(1);
	printf("fdopen=%s ", do_fsync(fileno(f)));
	got = pass_self(a2);
	r1 = do_fsync(got);
	printf("sent=%s orig=%s ", r1, do_fsync(a2));
	snprintf(num, sizeof(num), "%d", a4);
	fflush(stdout);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) ||
	    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		exit(1);
	printf("parent=%s ", do_fsync(a4));
	snprintf(num, sizeof(num), "%d", a3);
	fflush(stdout);
	execl("/proc/self/exe", "errseq", "handoff-exec", num, (char *)NULL);
	exit(1);
}

/* N failed files written and closed unsynced, then a healthy one synced,
 * then each failed one reopened and synced. */
static void many(const char *dir, int nf, long kb)
{
	char path[4096];
	int i, fd, eio = 0, zero = 0, other = 0;
	const char *okr;

	for (i = 0; i < nf; i++) {
		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		fd = open_or_die(path, O_WRONLY);
		/* 64 KiB a call, as small writers do */
		for (long off = 0; off < kb * KIB; off += 64 * KIB)
			if (pwrite(fd, buf, 64 * KIB, off) != 64 * KIB)
				exit(1);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/ok", dir);
	fd = open_or_die(path, O_WRONLY | O_CREAT | O_TRUNC);
	write_all(fd, 256, 0);
	okr = do_fsync(fd);
	close(fd);
	for (i = 0; i < nf; i++) {
		int r;

		snprintf(path, sizeof(path), "%s/f%d", dir, i);
		fd = open_or_die(path, O_WRONLY);
		r = fsync(fd);
		if (!r)
			zero++;
		else if (errno == EIO)
			eio++;
		else
			other++;
		close(fd);
	}
	printf("healthy=%s failed: EIO=%d 0=%d other=%d\n", okr, eio, zero, other);
}

/* ---- the limiter's slot lock across fork and cancellation --------------- */

struct cs_range {
	uint64_t off, len;
};
struct cs_stat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

#define LOCK_BASE (256L << 20) /* far past the streaming writer's bytes */
#define LOCK_WRITES 10

/* Writes 10 x 64 KiB at @base through @fd, as a writer whose every call
 * crosses a 64 KiB window; with the limiter working, writeback of all of it
 * has been started by the time the last write returns. Returns the pages
 * still dirty, or -1 when cachestat cannot say. */
static long written_still_dirty(int fd, off_t base)
{
	struct cs_range r = { (uint64_t)base, LOCK_WRITES * 64 * KIB };
	struct cs_stat cs;
	int i;

	for (i = 0; i < LOCK_WRITES; i++)
		if (pwrite(fd, buf, 64 * KIB, base + i * 64 * KIB) != 64 * KIB)
			return -2;
	if (syscall(451, fd, &r, &cs, 0) < 0)
		return -1;
	return (long)cs.nr_dirty;
}

static volatile int stream_on = 1;
static volatile long streamed;

/* Streams over the first 64 MiB of the file for ever: under the limiter it
 * spends most of its time in the slow path, the slot lock held. */
static void *streamer(void *arg)
{
	int fd = *(int *)arg;
	long i;

	for (i = 0; stream_on; i++) {
		if (pwrite(fd, buf, 64 * KIB, (i % 1024) * 64 * KIB) != 64 * KIB)
			break;
		streamed = i + 1;
	}
	return NULL;
}

static void wait_streamed(long n)
{
	long from = streamed;

	while (streamed < from + n)
		usleep(1000);
}

/* Children forked while another thread streams through the same descriptor
 * must still have their writes limited: none inherits a lock for good. */
static int forklock(const char *path)
{
	int fd = open_or_die(path, O_WRONLY | O_CREAT), i, stuck = 0, nocs = 0;
	pthread_t t;

	if (pthread_create(&t, NULL, streamer, &fd))
		return 1;
	for (i = 0; i < 10; i++) {
		int st;
		pid_t pid;

		wait_streamed(4);
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			long d = written_still_dirty(fd, LOCK_BASE + (off_t)i * (1 << 20));

			_exit(d == -1 ? 3 : d < 0 ? 4 : d > 16 ? 2 : 0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
			return 1;
		stuck += WEXITSTATUS(st) == 2;
		nocs += WEXITSTATUS(st) == 3;
		if (WEXITSTATUS(st) == 4)
			return 1;
	}
	stream_on = 0;
	pthread_join(t, NULL);
	if (nocs)
		printf("no cachestat\n");
	else
		printf("forks=10 stuck=%d\n", stuck);
	return 0;
}

static void *streamer_cancellable(void *arg)
{
	int fd = *(int *)arg;
	long i;

	for (i = 0;; i++) {
		if (pwrite(fd, buf, 64 * KIB, (i % 1024) * 64 * KIB) != 64 * KIB)
			break;
		streamed = i + 1;
	}
	return NULL;
}

/* A writer cancelled while it streams (inside the slow path's waits, most
 * of the time) must not leave the descriptor's slot held. */
static int cancellock(const char *path)
{
	int fd = open_or_die(path, O_WRONLY | O_CREAT), i, stuck = 0;

	for (i = 0; i < 5; i++) {
		pthread_t t;
		long d;

		streamed = 0;
		if (pthread_create(&t, NULL, streamer_cancellable, &fd))
			return 1;
		wait_streamed(4 + i);
		pthread_cancel(t);
		pthread_join(t, NULL);
		d = written_still_dirty(fd, LOCK_BASE + (off_t)i * (1 << 20));
		if (d == -1) {
			printf("no cachestat\n");
			return 0;
		}
		if (d < 0)
			return 1;
		stuck += d > 16;
	}
	printf("cancels=5 stuck=%d\n", stuck);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	memset(buf, 'e', sizeof(buf));
	if (!strcmp(cmd, "prep") && argc == 4)
		return prep(argv[2], atol(argv[3]));
	if (!strcmp(cmd, "prepmany") && argc == 5)
		return prepmany(argv[2], atoi(argv[3]), atol(argv[4]));
	if (!strcmp(cmd, "exec-fsync") && argc == 3) {
		exec_fsync(atoi(argv[2]));
		return 0;
	}
	if (!strcmp(cmd, "handoff-child") && argc == 3) {
		printf("spawn=%s ", do_fsync(atoi(argv[2])));
		return 0;
	}
	if (!strcmp(cmd, "handoff-exec") && argc == 3) {
		printf("exec=%s\n", do_fsync(atoi(argv[2])));
		return 0;
	}
	if (!strcmp(cmd, "fsync") && argc == 3) {
		later(argv[2]);
		return 0;
	}
	if (!strcmp(cmd, "many") && argc == 5) {
		many(argv[2], atoi(argv[3]), atol(argv[4]));
		return 0;
	}
	if (!strcmp(cmd, "forklock") && argc == 3)
		return forklock(argv[2]);
	if (!strcmp(cmd, "cancellock") && argc == 3)
		return cancellock(argv[2]);
	if (argc != 4) {
		fprintf(stderr, "usage: see the head of tests/e2e/progs/errseq.c\n");
		return 2;
	}
	if (!strcmp(cmd, "two"))
		two(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "fork"))
		forked(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "exec"))
		execed(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "write"))
		writer(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "sandbox"))
		sandboxed(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "dup"))
		dupped(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "signal"))
		signalled(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "dsync"))
		dsync(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "reuse"))
		reuse(argv[2], atol(argv[3]));
	else if (!strcmp(cmd, "handoff"))
		handoff(argv[2], atol(argv[3]));
	else
		return 2;
	return 0;
}
