// SPDX-License-Identifier: LGPL-2.1-or-later
/* durable: threads (and processes) doing synchronous writes through every
 * route the library converts, for the spy to judge; each request writes its
 * own region, read back and verified at the end. */

/* Prints "durable: ... ok=N fail=M eio=K other=J"; exits 1 on any error
 * unless -e (tolerate sync errors: count them). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

enum mode { M_FSYNC, M_FDATASYNC, M_ODSYNC, M_OSYNC, M_RWF_DSYNC, M_RWF_SYNC };
enum layout { L_SHARED, L_SHAREDFD, L_EACH };

static const char *const mode_names[] = { "fsync", "fdatasync", "odsync",
					  "osync", "rwf_dsync", "rwf_sync" };
static const char *const layout_names[] = { "shared", "sharedfd", "each" };

static struct {
	int threads, procs, count, size;
	enum mode mode;
	enum layout layout;
	const char *dir;
	int tolerate;
} opt = { 1, 1, 20, 512, M_FSYNC, L_SHARED, NULL, 0 };

struct counters {
	long ok, fail, eio, bad_errno;
};
static struct counters *cnt;	/* shared between the processes */
static pthread_barrier_t start_line;
static int shared_fd = -1;

static int open_flags(void)
{
	int fl = O_RDWR | O_CREAT;

	if (opt.mode == M_ODSYNC)
		fl |= O_DSYNC;
	if (opt.mode == M_OSYNC)
		fl |= O_SYNC;
	return fl;
}

static void file_name(char *buf, size_t len, int proc, int thread)
{
	if (opt.layout == L_EACH)
		snprintf(buf, len, "%s/durable.%d.%d", opt.dir, proc, thread);
	else
		snprintf(buf, len, "%s/durable.shared", opt.dir);
}

static off_t region(int proc, int thread, int i)
{
	long slot = opt.layout == L_EACH ? i :
		    ((long)proc * opt.threads + thread) * opt.count + i;

	return (off_t)slot * opt.size;
}

static unsigned char pattern(int proc, int thread, int i)
{
	return (unsigned char)(1 + (proc * 131 + thread * 31 + i) % 251);
}

static void account(ssize_t ret, int err, const char *what)
{
	if (ret >= 0) {
		__atomic_add_fetch(&cnt->ok, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&cnt->fail, 1, __ATOMIC_RELAXED);
	if (err == EIO)
		__atomic_add_fetch(&cnt->eio, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&cnt->bad_errno, 1, __ATOMIC_RELAXED);
	if (!opt.tolerate) {
		fprintf(stderr, "durable: %s: %s\n", what, strerror(err));
		exit(1);
	}
}

/* Writes one region. Rotates through the write calls so each gets exercised
 * on the sync route; write/writev use lseek on a private descriptor only. */
static ssize_t put(int fd, const char *buf, off_t off, int i, int private_fd)
{
	struct iovec iov[2] = {
		{ (void *)buf, (size_t)opt.size / 2 },
		{ (void *)(buf + opt.size / 2), (size_t)(opt.size - opt.size / 2) },
	};
	int rwf = opt.mode == M_RWF_DSYNC ? RWF_DSYNC :
		  opt.mode == M_RWF_SYNC ? RWF_SYNC : 0;

	if (rwf)
		return i % 2 ? pwritev2(fd, iov, 2, off, rwf) :
			       pwritev64v2(fd, iov, 2, off, rwf);
	switch (private_fd ? i % 4 : i % 2) {
	case 0:
		return pwrite(fd, buf, (size_t)opt.size, off);
	case 1:
		return pwritev(fd, iov, 2, off);
	case 2:
		if (lseek(fd, off, SEEK_SET) < 0)
			return -1;
		return write(fd, buf, (size_t)opt.size);
	default:
		if (lseek(fd, off, SEEK_SET) < 0)
			return -1;
		return writev(fd, iov, 2);
	}
}

struct worker {
	int proc, thread;
	pthread_t tid;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[512], *buf = malloc((size_t)opt.size);
	int fd, i;

	if (!buf)
		exit(1);
	if (opt.layout == L_SHAREDFD) {
		fd = shared_fd;
	} else {
		file_name(name, sizeof(name), w->proc, w->thread);
		fd = open(name, open_flags(), 0644);
		if (fd < 0) {
			fprintf(stderr, "durable: open %s: %s\n", name, strerror(errno));
			exit(1);
		}
	}
	pthread_barrier_wait(&start_line);
	for (i = 0; i < opt.count; i++) {
		off_t off = region(w->proc, w->thread, i);
		ssize_t r;

		memset(buf, pattern(w->proc, w->thread, i), (size_t)opt.size);
		r = put(fd, buf, off, i, opt.layout != L_SHAREDFD);
		if (r < 0) {
			/* A failed sync write still wrote its bytes: the error
			 * is about durability, and -e counts it. */
			account(-1, errno, "write");
			continue;
		}
		if (r != opt.size) {
			fprintf(stderr, "durable: short write %zd\n", r);
			exit(1);
		}
		if (opt.mode == M_FSYNC) {
			r = fsync(fd);
			account(r, errno, "fsync");
		} else if (opt.mode == M_FDATASYNC) {
			r = fdatasync(fd);
			account(r, errno, "fdatasync");
		} else {
			account(0, 0, "write");
		}
	}
	if (opt.layout != L_SHAREDFD)
		close(fd);
	free(buf);
	return NULL;
}

/* Every region this process wrote holds its pattern. */
static int verify(int proc)
{
	char name[512], *buf = malloc((size_t)opt.size);
	int bad = 0;

	for (int t = 0; t < opt.threads && buf; t++) {
		int fd;

		file_name(name, sizeof(name), proc, t);
		fd = open(name, O_RDONLY);
		if (fd < 0)
			return 1;
		for (int i = 0; i < opt.count; i++) {
			unsigned char want = pattern(proc, t, i);

			if (pread(fd, buf, (size_t)opt.size, region(proc, t, i)) != opt.size) {
				bad++;
				continue;
			}
			for (int k = 0; k < opt.size; k++)
				if ((unsigned char)buf[k] != want) {
					bad++;
					break;
				}
		}
		close(fd);
	}
	free(buf);
	if (bad)
		fprintf(stderr, "durable: %d regions read back wrong\n", bad);
	return bad ? 1 : 0;
}

static int run_proc(int proc)
{
	struct worker *w = calloc((size_t)opt.threads, sizeof(*w));
	char name[512];

	if (!w)
		return 1;
	if (opt.layout == L_SHAREDFD) {
		file_name(name, sizeof(name), proc, 0);
		shared_fd = open(name, open_flags(), 0644);
		if (shared_fd < 0) {
			fprintf(stderr, "durable: open %s: %s\n", name, strerror(errno));
			return 1;
		}
	}
	pthread_barrier_init(&start_line, NULL, (unsigned)opt.threads);
	for (int t = 0; t < opt.threads; t++) {
		w[t].proc = proc;
		w[t].thread = t;
		if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0)
			return 1;
	}
	for (int t = 0; t < opt.threads; t++)
		pthread_join(w[t].tid, NULL);
	if (shared_fd >= 0)
		close(shared_fd);
	free(w);
	return verify(proc);
}

static int lookup(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	fprintf(stderr, "durable: unknown value %s\n", s);
	exit(2);
}

int main(int argc, char **argv)
{
	int c, rc = 0;

	while ((c = getopt(argc, argv, "t:p:n:s:m:f:D:e")) != -1) {
		switch (c) {
		case 't': opt.threads = atoi(optarg); break;
		case 'p': opt.procs = atoi(optarg); break;
		case 'n': opt.count = atoi(optarg); break;
		case 's': opt.size = atoi(optarg); break;
		case 'm': opt.mode = (enum mode)lookup(optarg, mode_names, 6); break;
		case 'f': opt.layout = (enum layout)lookup(optarg, layout_names, 3); break;
		case 'D': opt.dir = optarg; break;
		case 'e': opt.tolerate = 1; break;
		default:
			fprintf(stderr, "usage: durable -D DIR [-t N] [-p N] [-n N] [-s BYTES] "
				"[-m fsync|fdatasync|odsync|osync|rwf_dsync|rwf_sync] "
				"[-f shared|sharedfd|each] [-e]\n");
			return 2;
		}
	}
	if (!opt.dir || opt.threads < 1 || opt.procs < 1 || opt.size < 2 ||
	    opt.count < 1) {
		fprintf(stderr, "durable: bad arguments\n");
		return 2;
	}
	alarm(120);	/* a hang shows as a failure, not a stuck run */
	cnt = mmap(NULL, sizeof(*cnt), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cnt == MAP_FAILED)
		return 1;
	if (opt.procs == 1) {
		rc = run_proc(0);
	} else {
		pid_t *kids = calloc((size_t)opt.procs, sizeof(*kids));

		for (int p = 0; p < opt.procs && kids; p++) {
			kids[p] = fork();
			if (kids[p] == 0)
				_exit(run_proc(p));
			if (kids[p] < 0)
				rc = 1;
		}
		for (int p = 0; p < opt.procs && kids; p++) {
			int st;

			if (kids[p] > 0 && (waitpid(kids[p], &st, 0) != kids[p] ||
					    !WIFEXITED(st) || WEXITSTATUS(st)))
				rc = 1;
		}
		free(kids);
	}
	printf("durable: mode=%s layout=%s threads=%d procs=%d ok=%ld fail=%ld eio=%ld other=%ld\n",
	       mode_names[opt.mode], layout_names[opt.layout], opt.threads,
	       opt.procs, cnt->ok, cnt->fail, cnt->eio, cnt->bad_errno);
	if (cnt->bad_errno)
		rc = 1;
	return rc;
}
