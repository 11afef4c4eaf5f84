// SPDX-License-Identifier: LGPL-2.1-or-later
/* Power-cut workload: threads or processes append numbered, checksummed
 * records to a shared file or one file each, make each durable (fsync,
 * fdatasync, O_DSYNC) and only then report its id on the ack descriptor.
 * In spool mode (-f spool) each record is a message delivered the maildir
 * way: written to spool/tmp/, made durable, renamed into spool/new/, and the
 * directory fsynced before the acknowledgement. With -x (processes, a file
 * each, appended) each record is written by a process of its own, started
 * with exec, which syncs once and exits: a delivery agent run per message.
 * With -T each writer pauses between records (exponential, of the mean
 * given in microseconds): work with think time, where the adaptive policy
 * moves between grouping and direct calls by what they cost. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/crash/record.h"

enum sync_mode { SYNC_FSYNC, SYNC_FDATASYNC, SYNC_ODSYNC };

static struct {
	const char *dir;
	unsigned writers;
	bool procs;
	bool shared;
	bool spool;		/* one message file per record, tmp/ -> new/ */
	bool exec_each;		/* -x: a process (exec) per record */
	const char *self;	/* argv[0], for -x */
	bool use_pwrite;
	bool overwrite;		/* -w overwrite: each record over an older one */
	enum sync_mode sync;
	uint64_t count;		/* records per writer, 0 = until stopped */
	unsigned think_us;	/* -T: mean pause between records */
	uint32_t max_len;
	int ack_fd;
	int shared_fd;		/* threads writing one shared file share this fd */
	uint64_t *next_off;	/* offset reservations for pwrite; shared mapping */
} opt = { .max_len = REC_MAX, .ack_fd = 3, .shared_fd = -1 };

/* Set by SIGUSR1, which the harness sends just before it cuts the power:
 * from then on an I/O error is the expected outcome, not a failure. */
static volatile sig_atomic_t cut_expected;
static pid_t children[MAX_WRITERS];

static void on_usr1(int sig)
{
	unsigned i;

	cut_expected = 1;
	for (i = 0; i < opt.writers; i++)
		if (children[i] > 0)
			kill(children[i], SIGUSR1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: crashload -d DIR (-t N | -p N) [-f shared|each|spool]\n"
		"                 [-s fsync|fdatasync|odsync] [-w append|pwrite|overwrite]\n"
		"                 [-n RECORDS] [-l MAXLEN] [-a ACKFD] [-x] [-T THINK_US]\n"
		"  -x  (with -p, -f each, -w append) a process per record, by exec\n"
		"  -T  an exponential pause of this mean between a writer's records\n");
	exit(2);
}

/* A failed call ends the writer: quietly once the cut is announced,
 * otherwise as an error of the whole workload. */
static void *fail(unsigned w, uint64_t seq, const char *what, int err)
{
	if (cut_expected) {
		if (opt.procs)
			_exit(0);
		return NULL;
	}
	fprintf(stderr, "crashload: writer %u record %llu: %s: %s\n", w,
		(unsigned long long)seq, what, err ? strerror(err) : "short");
	exit(1);
}

static void file_path(char *buf, size_t n, unsigned w)
{
	if (opt.shared)
		snprintf(buf, n, "%s/crash.dat", opt.dir);
	else
		snprintf(buf, n, "%s/crash.%u.dat", opt.dir, w);
}

/* Plain open() by path, not openat(): some sync-disabling preloads only
 * wrap open/open64, and the control must see its O_DSYNC stripped too. */
static int open_file(unsigned w)
{
	char path[4096];
	int flags = O_WRONLY | (opt.use_pwrite ? 0 : O_APPEND);

	if (opt.sync == SYNC_ODSYNC)
		flags |= O_DSYNC;
	file_path(path, sizeof(path), w);
	return open(path, flags | O_CLOEXEC);
}

/* One message: create tmp/NAME, write, make it durable, rename it to
 * new/NAME and fsync new/ (@new_fd).  By path with open() and rename(), as
 * open_file() does, so the control's preload strips O_DSYNC here too.
 * Returns the failing step, or NULL. */
static const char *deliver(int new_fd, unsigned w, uint64_t seq,
			   const unsigned char *buf, uint32_t len, int *err)
{
	char tmp[4096], dst[4096];
	int fd, flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s/spool/tmp/%02u.%08llu", opt.dir, w,
		 (unsigned long long)seq);
	snprintf(dst, sizeof(dst), "%s/spool/new/%02u.%08llu", opt.dir, w,
		 (unsigned long long)seq);
	if (opt.sync == SYNC_ODSYNC)
		flags |= O_DSYNC;
	*err = 0;
	if ((fd = open(tmp, flags, 0644)) < 0)
		return *err = errno, "create in tmp/";
	n = write(fd, buf, len);
	if (n != (ssize_t)len) {
		*err = n < 0 ? errno : 0;
		close(fd);
		return "write";
	}
	if ((opt.sync == SYNC_FSYNC && fsync(fd)) ||
	    (opt.sync == SYNC_FDATASYNC && fdatasync(fd))) {
		*err = errno;
		close(fd);
		return "sync the message";
	}
	if (close(fd))
		return *err = errno, "close";
	if (rename(tmp, dst))
		return *err = errno, "rename into new/";
	if (fsync(new_fd))
		return *err = errno, "fsync new/";
	return NULL;
}

static int open_dir(const char *sub)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/spool/%s", opt.dir, sub);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* -x: record @seq of writer @w by a new process (the one_record() of
 * "crashload -X W:SEQ"), waited for. */
static void *exec_record(unsigned w, uint64_t seq)
{
	char ws[48], ls[16], as[16];
	const char *sync = opt.sync == SYNC_FSYNC ? "fsync" :
			   opt.sync == SYNC_FDATASYNC ? "fdatasync" : "odsync";
	int status;
	pid_t pid;

	snprintf(ws, sizeof(ws), "%u:%llu", w, (unsigned long long)seq);
	snprintf(ls, sizeof(ls), "%u", opt.max_len);
	snprintf(as, sizeof(as), "%d", opt.ack_fd);
	pid = fork();
	if (pid < 0)
		return fail(w, seq, "fork", errno);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(opt.self, opt.self, "-X", ws, "-d", opt.dir, "-s", sync, "-l", ls, "-a", as,
		      (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return fail(w, seq, "waitpid", errno);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail(w, seq, "record process", 0);
	return NULL;
}

/* Record @seq of writer @w: written to @fd (or, in spool mode, delivered
 * as a message into @new_fd's spool), made durable, then acknowledged.
 * false once it failed (fail(): after the cut announced, the writer ends). */
static bool record(int fd, int new_fd, unsigned w, uint64_t seq, uint64_t *own_off)
{
	unsigned char buf[REC_MAX];
	uint32_t len = rec_build(buf, w, seq, opt.max_len);
	struct ack_msg a = {
		.a_magic = ACK_MAGIC, .a_writer = w, .a_seq = seq,
	};
	struct timespec ts;
	ssize_t n;

	if (opt.spool) {
		int err;
		const char *step = deliver(new_fd, w, seq, buf, len, &err);

		if (step)
			return fail(w, seq, step, err), false;
		goto ack;
	}
	if (opt.use_pwrite) {
		/* Reserve the range first so no two writers overlap. */
		uint64_t off = opt.shared ?
			__atomic_fetch_add(opt.next_off, len, __ATOMIC_RELAXED) :
			*own_off;

		/* overwrite: record seq goes to its writer's slot seq % REC_SLOTS,
		 * in place of the one REC_SLOTS before it */
		if (opt.overwrite)
			off = rec_slot_off(w, seq, opt.shared);

		*own_off += len;
		n = pwrite(fd, buf, len, (off_t)off);
	} else {
		n = write(fd, buf, len);
	}
	if (n != (ssize_t)len)
		return fail(w, seq, "write", n < 0 ? errno : 0), false;
	if (opt.sync == SYNC_FSYNC && fsync(fd))
		return fail(w, seq, "fsync", errno), false;
	if (opt.sync == SYNC_FDATASYNC && fdatasync(fd))
		return fail(w, seq, "fdatasync", errno), false;
ack:
	clock_gettime(CLOCK_REALTIME, &ts);
	a.a_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (write(opt.ack_fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
		return fail(w, seq, "ack", errno), false;
	return true;
}

/* After exec (-X W:SEQ): one record appended to writer W's file, made
 * durable, acknowledged. */
static int one_record(const char *ws)
{
	unsigned w;
	unsigned long long seq;
	uint64_t off = 0;
	int fd;

	if (sscanf(ws, "%u:%llu", &w, &seq) != 2 || w >= MAX_WRITERS)
		usage();
	if ((fd = open_file(w)) < 0)
		return fail(w, seq, "open", errno), 1;
	return record(fd, -1, w, seq, &off) ? 0 : 1;
}

/* -T: a pause drawn from an exponential of mean opt.think_us (xorshift,
 * seeded by the writer). */
static void think(uint64_t *rng)
{
	struct timespec ts;
	double u, us;

	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	u = (double)((*rng >> 11) + 1) / 9007199254740993.0; /* (0, 1] */
	us = -log(u) * opt.think_us;
	ts.tv_sec = (time_t)(us / 1e6);
	ts.tv_nsec = (long)((us - (double)ts.tv_sec * 1e6) * 1e3);
	nanosleep(&ts, NULL);
}

static void *writer(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg;
	uint64_t own_off = 0, seq, rng = 0x9e3779b97f4a7c15ULL * (w + 1);
	int fd = opt.shared_fd;

	int new_fd = -1;

	if (opt.exec_each) {
		for (seq = 0; !opt.count || seq < opt.count; seq++)
			exec_record(w, seq);
		return NULL;
	}
	if (opt.spool) {
		if ((new_fd = open_dir("new")) < 0)
			return fail(w, 0, "open spool/new", errno);
	} else if (fd < 0 && (fd = open_file(w)) < 0) {
		return fail(w, 0, "open", errno);
	}
	for (seq = 0; !opt.count || seq < opt.count; seq++) {
		if (!record(fd, new_fd, w, seq, &own_off))
			break;
		if (opt.think_us)
			think(&rng);
	}
	return NULL;
}

/* Creates the files and makes them and their names durable before any
 * record is written. Raw system calls, past any preload: only records are at
 * stake in a trial, and the control (whose fsync does nothing) must start
 * from the same durable files as the real run, so that what it loses is
 * acknowledged records and not a whole directory entry. */
static void mkdir_durable(const char *path)
{
	int fd;

	if (mkdir(path, 0755) && errno != EEXIST) {
		fprintf(stderr, "crashload: mkdir %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_fsync, fd) || close(fd)) {
		fprintf(stderr, "crashload: fsync %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static void prepare_files(void)
{
	unsigned i, n = opt.shared ? 1 : opt.writers;
	int dir_fd = open(opt.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dir_fd < 0) {
		fprintf(stderr, "crashload: %s: %s\n", opt.dir, strerror(errno));
		exit(1);
	}
	if (opt.spool) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/spool", opt.dir);
		mkdir_durable(path);
		snprintf(path, sizeof(path), "%s/spool/tmp", opt.dir);
		mkdir_durable(path);
		snprintf(path, sizeof(path), "%s/spool/new", opt.dir);
		mkdir_durable(path);
		n = 0;
	}
	for (i = 0; i < n; i++) {
		char path[4096];
		int fd;

		file_path(path, sizeof(path), i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || syscall(SYS_fsync, fd) || close(fd)) {
			fprintf(stderr, "crashload: create %s: %s\n", path,
				strerror(errno));
			exit(1);
		}
	}
	if (syscall(SYS_fsync, dir_fd) || close(dir_fd)) {
		fprintf(stderr, "crashload: fsync %s: %s\n", opt.dir, strerror(errno));
		exit(1);
	}
}

static int run_threads(void)
{
	pthread_t tid[MAX_WRITERS];
	unsigned i;

	if (opt.shared && (opt.shared_fd = open_file(0)) < 0) {
		fprintf(stderr, "crashload: open: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < opt.writers; i++) {
		int err = pthread_create(&tid[i], NULL, writer, (void *)(uintptr_t)i);

		if (err) {
			fprintf(stderr, "crashload: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	for (i = 0; i < opt.writers; i++)
		pthread_join(tid[i], NULL);
	return 0;
}

static int run_procs(void)
{
	pid_t parent = getpid();
	unsigned i, live = 0;
	int rc = 0, status;

	for (i = 0; i < opt.writers; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "crashload: fork: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		if (pid == 0) {
			/* A SIGKILL of the parent must take every writer with it. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			writer((void *)(uintptr_t)i);
			_exit(0);
		}
		children[i] = pid;
		live++;
	}
	while (live) {
		pid_t pid = wait(&status);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		live--;
		for (i = 0; i < opt.writers; i++)
			if (children[i] == pid)
				children[i] = 0;
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		/* One writer failed: the run is over, do not leave the
		 * others appending until the harness kills them. */
		rc = 1;
		for (i = 0; i < opt.writers; i++)
			if (children[i] > 0)
				kill(children[i], SIGKILL);
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	const char *one = NULL;
	int c;

	opt.self = argv[0];
	while ((c = getopt(argc, argv, "d:t:p:f:s:w:n:l:a:xX:T:")) != -1) {
		switch (c) {
		case 'x':
			opt.exec_each = true;
			break;
		case 'X':
			one = optarg;
			break;
		case 'T':
			opt.think_us = (unsigned)atoi(optarg);
			break;
		case 'd':
			opt.dir = optarg;
			break;
		case 't':
		case 'p':
			opt.writers = (unsigned)atoi(optarg);
			opt.procs = c == 'p';
			break;
		case 'f':
			if (!strcmp(optarg, "shared"))
				opt.shared = true;
			else if (!strcmp(optarg, "spool"))
				opt.spool = true;
			else if (strcmp(optarg, "each"))
				usage();
			break;
		case 's':
			if (!strcmp(optarg, "fsync"))
				opt.sync = SYNC_FSYNC;
			else if (!strcmp(optarg, "fdatasync"))
				opt.sync = SYNC_FDATASYNC;
			else if (!strcmp(optarg, "odsync"))
				opt.sync = SYNC_ODSYNC;
			else
				usage();
			break;
		case 'w':
			if (!strcmp(optarg, "pwrite"))
				opt.use_pwrite = true;
			else if (!strcmp(optarg, "overwrite"))
				opt.use_pwrite = opt.overwrite = true;
			else if (strcmp(optarg, "append"))
				usage();
			break;
		case 'n':
			opt.count = strtoull(optarg, NULL, 10);
			break;
		case 'l':
			opt.max_len = (uint32_t)atoi(optarg);
			break;
		case 'a':
			opt.ack_fd = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (one) {
		if (!opt.dir || opt.max_len < REC_MIN || opt.max_len > REC_MAX || optind != argc)
			usage();
		rec_crc_init();
		return one_record(one);
	}
	if (opt.exec_each && (!opt.procs || opt.shared || opt.spool || opt.use_pwrite ||
			      opt.think_us))
		usage();
	if (!opt.dir || opt.writers < 1 || opt.writers > MAX_WRITERS ||
	    opt.max_len < REC_MIN || opt.max_len > REC_MAX || optind != argc)
		usage();

	rec_crc_init();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	/* A vanished reader is an error to report, not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	opt.next_off = mmap(NULL, sizeof(*opt.next_off), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (opt.next_off == MAP_FAILED) {
		fprintf(stderr, "crashload: mmap: %s\n", strerror(errno));
		return 1;
	}
	prepare_files();
	return opt.procs ? run_procs() : run_threads();
}
