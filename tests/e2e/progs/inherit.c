// SPDX-License-Identifier: LGPL-2.1-or-later
/* inherit: converted O_SYNC/O_DSYNC descriptors around exec, spawn, system
 * and fdopen, and writes racing close: what a new program inherits, which
 * file the bytes land in, and that record locks are never dropped silently. */

/*   inherit getfl FD     (run bare) prints "fd=FD dsync=0|1" on stderr
 *   inherit race DIR     system() while another thread reuses a number
 *   inherit spawn DIR    posix_spawn with adddup2 of an O_CLOEXEC fd onto 1
 *   inherit eacces DIR   (root) files an unprivileged user cannot reopen
 *   inherit locks DIR    POSIX and OFD locks through converted descriptors
 *   inherit wrace DIR    O_DSYNC writes while another thread swaps the fd
 *   inherit pass DIR     O_DSYNC descriptors sent over a unix socket
 *   inherit uring DIR    O_DSYNC descriptors once the process maps an io_uring
 *   inherit aio DIR      O_DSYNC descriptors written by POSIX aio and libaio
 *   inherit stdio DIR    O_DSYNC descriptors at 1 and 2, where stdio writes
 *   inherit execveat DIR an O_DSYNC descriptor across execveat
 *   inherit otherfs DIR  (root) an O_DSYNC open on a filesystem not examined */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <aio.h>
#include <dlfcn.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kflags.h"

extern char **environ;

static const char *self;
static char dir[4096];

static char *path_of(const char *name)
{
	static char buf[8][4200];
	static int k;
	char *p = buf[k++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

/* The environment without LD_PRELOAD: the child runs bare, so what it sees
 * is the kernel's word, not the library's. */
static char **bare_env(void)
{
	static char *env[512];
	size_t n = 0;

	for (char **e = environ; *e && n < 511; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11))
			env[n++] = *e;
	env[n] = NULL;
	return env;
}

static int getfl(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	dprintf(2, "fd=%d dsync=%d\n", fd, fl >= 0 && (fl & O_DSYNC) ? 1 : 0);
	return fl < 0 ? 1 : 0;
}

/* Execs "inherit getfl FD" bare in a fork child; returns the child's exit
 * code, or 200 + errno when the exec failed. */
static int exec_getfl(int fd)
{
	char num[16], *argv[] = { (char *)self, "getfl", num, NULL };
	int st;
	pid_t kid;

	snprintf(num, sizeof(num), "%d", fd);
	kid = fork();
	if (kid == 0) {
		execve(self, argv, bare_env());
		_exit(200 + errno);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* --- race: exec_undo must not put X back over the Y that took its number */

static volatile int stop;
static int same_number;

static void *reuser(void *arg)
{
	(void)arg;
	while (!stop) {
		int fx = open(path_of("x"), O_WRONLY | O_APPEND | O_DSYNC);
		int fy;

		if (fx < 0 || write(fx, "X", 1) != 1)
			perror("x");
		close(fx);
		fy = open(path_of("y"), O_WRONLY | O_APPEND);
		if (fy == fx)
			same_number++;
		usleep(300);
		if (fy < 0 || write(fy, "Y", 1) != 1)
			perror("y");
		close(fy);
	}
	return NULL;
}

static long count_in(const char *name, char c)
{
	FILE *f = fopen(path_of(name), "r");
	long n = 0;
	int ch;

	if (!f)
		return -1;
	while ((ch = fgetc(f)) != EOF)
		n += ch == c;
	fclose(f);
	return n;
}

static int race(void)
{
	long long t0 = now_ms();
	pthread_t t;
	int calls = 0;

	close(open(path_of("x"), O_WRONLY | O_CREAT | O_TRUNC, 0644));
	close(open(path_of("y"), O_WRONLY | O_CREAT | O_TRUNC, 0644));
	pthread_create(&t, NULL, reuser, NULL);
	while (calls < 300 && now_ms() - t0 < 6000) {
		if (system("true") != 0)
			perror("system");
		calls++;
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("calls=%d same_number=%d\n", calls, same_number);
	printf("y_in_x=%ld x_in_y=%ld\n", count_in("x", 'Y'), count_in("y", 'X'));
	printf("crossed=%ld\n", count_in("x", 'Y') + count_in("y", 'X'));
	return 0;
}

/* --- spawn: file actions dup2 an O_CLOEXEC converted fd onto stdout */

static int spawn(void)
{
	char *argv[] = { (char *)self, "getfl", "1", NULL };
	posix_spawn_file_actions_t fa;
	int fd, r, st = 0;
	pid_t pid;

	fd = open(path_of("s"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return perror("open"), 1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 1);
	r = posix_spawn(&pid, self, &fa, NULL, argv, bare_env());
	if (r == 0)
		waitpid(pid, &st, 0);
	posix_spawn_file_actions_destroy(&fa);
	printf("spawn_ret=%d exit=%d\n", r, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	printf("parent_dsync=%d\n", (fcntl(fd, F_GETFL) & O_DSYNC) ? 1 : 0);
	return 0;
}

/* --- pass: a converted descriptor sent over a unix socket (SCM_RIGHTS) */

/* Sends @fd over @sock by sendmsg (@mm false) or sendmmsg: 0 or -1. */
static int send_fd(int sock, int fd, bool mm)
{
	char one = 'x', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &one, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	struct mmsghdr h = { .msg_hdr = m };

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (mm)
		return sendmmsg(sock, &h, 1, 0) == 1 ? 0 : -1;
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char one, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &one, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd = -1;

	if (recvmsg(sock, &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Each way: the receiver's copy (here, a new number of ours the library
 * never saw) is O_DSYNC as the sender opened it, and the sender's writes
 * stay synchronous. With a record lock held, the send either keeps both
 * the flag and the lock, or fails with ENOLCK. */
static int pass(void)
{
	static const char *const ways[] = { "sendmsg", "sendmmsg", "locked" };

	for (int w = 0; w < 3; w++) {
		struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd, sv[2], got, r, e;

		fd = open(path_of(ways[w]), O_WRONLY | O_CREAT | O_APPEND | O_DSYNC, 0644);
		if (fd < 0 || write(fd, "a", 1) != 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			return perror("pass"), 1;
		if (w == 2 && fcntl(fd, F_SETLK, &lk))
			return perror("lock"), 1;
		r = send_fd(sv[0], fd, w == 1);
		e = errno;
		got = r ? -1 : recv_fd(sv[1]);
		if (write(fd, "b", 1) != 1)
			perror("write after");
		if (w < 2) {
			printf("%s_ret=%d received_dsync=%d sender_dsync=%d\n", ways[w], r,
			       got >= 0 ? kernel_dsync(got) : -1, kernel_dsync(fd));
		} else {
			/* another process sees whether we still hold the lock */
			pid_t kid = fork();
			int st = 0;

			if (kid == 0) {
				struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
				int f2 = open(path_of(ways[w]), O_WRONLY);

				_exit(f2 >= 0 && !fcntl(f2, F_GETLK, &q) && q.l_type == F_WRLCK ? 0 : 1);
			}
			waitpid(kid, &st, 0);
			printf("locked_ok=%d\n",
			       ((r == 0 && got >= 0 && kernel_dsync(got) == 1) ||
				(r < 0 && e == ENOLCK)) &&
				       WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		close(sv[0]);
		close(sv[1]);
		if (got >= 0)
			close(got);
		close(fd);
	}
	return 0;
}

/* --- uring: io_uring writes go round the library */

/* A O_DSYNC before the process maps an io_uring, B after it, C in a fork
 * child after it: each description is O_DSYNC in the kernel's word, as
 * bare, so the ring's writes through them are synchronous. */
static int uring(void)
{
	struct io_uring_params p;
	int a, b, ring, st = 0;
	pid_t kid;
	void *sqes;

	a = open(path_of("ua"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (a < 0 || write(a, "a", 1) != 1)
		return perror("ua"), 1;
	memset(&p, 0, sizeof(p));
	ring = (int)syscall(SYS_io_uring_setup, 4, &p);
	if (ring < 0) {
		printf("uring=unavailable errno=%d\n", errno);
		return 0;
	}
	sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sqes == MAP_FAILED)
		return perror("mmap sqes"), 1;
	b = open(path_of("ub"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (b < 0 || write(b, "b", 1) != 1)
		return perror("ub"), 1;
	printf("a_dsync=%d b_dsync=%d\n", kernel_dsync(a), kernel_dsync(b));
	fflush(stdout);
	kid = fork();
	if (kid == 0) {
		int c = open(path_of("uc"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);

		printf("c_dsync=%d\n", c >= 0 && write(c, "c", 1) == 1 ? kernel_dsync(c) : -1);
		fflush(stdout);
		_exit(0);
	}
	waitpid(kid, &st, 0);
	return 0;
}

/* --- aio: asynchronous writes go round the library */

static int open_dsync(const char *name)
{
	int fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);

	if (fd < 0 || write(fd, "0", 1) != 1)
		return -1;
	return fd;
}

/* libaio's io_submit as a program linked with libaio calls it: the first
 * definition of the name (the library's, under it), else the system call. */
static long submit_one(aio_context_t ctx, struct iocb *cb)
{
	int (*fn)(aio_context_t, long, struct iocb **) =
		(int (*)(aio_context_t, long, struct iocb **))dlsym(RTLD_DEFAULT, "io_submit");
	long r;

	if (fn)
		return fn(ctx, 1, &cb);
	r = syscall(SYS_io_submit, ctx, 1, &cb);
	return r < 0 ? -errno : r;
}

/* An O_DSYNC file written by aio_write, one by lio_listio, one by libaio's
 * io_submit: each write went through an O_DSYNC description. */
static int aio(void)
{
	static char buf[4] = "aio";
	struct aiocb a = { 0 }, l = { 0 }, *list[1] = { &l };
	const struct aiocb *wait1[1] = { &a };
	struct iocb cb = { 0 };
	struct io_event ev;
	aio_context_t ctx = 0;
	int fa = open_dsync("aa"), fl = open_dsync("al"), fk = open_dsync("ak");
	long r;

	if (fa < 0 || fl < 0 || fk < 0)
		return perror("aio open"), 1;
	a.aio_fildes = fa;
	a.aio_buf = buf;
	a.aio_nbytes = 3;
	if (aio_write(&a))
		return perror("aio_write"), 1;
	while (aio_error(&a) == EINPROGRESS)
		aio_suspend(wait1, 1, NULL);
	l = a;
	l.aio_fildes = fl;
	l.aio_lio_opcode = LIO_WRITE;
	if (lio_listio(LIO_WAIT, list, 1, NULL))
		return perror("lio_listio"), 1;
	if (syscall(SYS_io_setup, 4, &ctx))
		return perror("io_setup"), 1;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (unsigned)fk;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = 3;
	cb.aio_offset = 1;
	r = submit_one(ctx, &cb);
	if (r != 1 || syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
		return fprintf(stderr, "io_submit: %ld\n", r), 1;
	printf("aio_write=%zd lio=%zd io_submit=%lld\n", aio_return(&a), aio_return(&l),
	       (long long)ev.res);
	printf("aio_dsync=%d lio_dsync=%d libaio_dsync=%d\n", kernel_dsync(fa), kernel_dsync(fl),
	       kernel_dsync(fk));
	syscall(SYS_io_destroy, ctx);
	return 0;
}

/* --- stdio: descriptors 0 to 2, which stdio writes inside libc */

/* An O_DSYNC log put on stderr with dup2 (a daemon's redirect) and one
 * opened at 1 after close(1): both O_DSYNC in the kernel's word, as bare,
 * so printf and perror write them synchronously; the dup2'ed pair still
 * shares one offset. And one written with dprintf. Results go to a copy
 * of the first stdout. */
static int stdio_fds(void)
{
	int a = open(path_of("s2"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644), b;
	int out = dup(1);
	off_t pa, p2;

	if (a < 0 || out < 0 || write(a, "a", 1) != 1 || dup2(a, 2) != 2)
		return perror("stdio a"), 1;
	fprintf(stderr, "through stdio\n");
	if (write(a, "b", 1) != 1)
		return 1;
	pa = lseek(a, 0, SEEK_CUR);
	p2 = lseek(2, 0, SEEK_CUR);
	fflush(stdout);
	close(1);
	b = open(path_of("s1"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	dprintf(out, "dup2_dsync=%d shared=%d open1=%d open1_dsync=%d\n", kernel_dsync(2),
		pa == p2 && pa == 16, b, kernel_dsync(b));
	/* dprintf: a stream of its own on any descriptor */
	a = open(path_of("s3"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (a < 0 || dprintf(a, "%s\n", "dprintf") != 8)
		return perror("dprintf"), 1;
	dprintf(out, "dprintf_dsync=%d\n", kernel_dsync(a));
	return 0;
}

/* --- execveat: the exec family's newest name */

static int execveat_fl(void)
{
	char num[16], *argv[] = { (char *)self, "getfl", num, NULL };
	int fd = open(path_of("ea"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644), st = 0;
	pid_t kid;

	if (fd < 0 || write(fd, "a", 1) != 1)
		return perror("execveat open"), 1;
	snprintf(num, sizeof(num), "%d", fd);
	fflush(stdout);
	kid = fork();
	if (kid == 0) {
		execveat(AT_FDCWD, self, argv, bare_env(), 0);
		_exit(200 + errno);
	}
	waitpid(kid, &st, 0);
	printf("execveat_exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

/* --- otherfs: a filesystem whose requests are never shared */

/* ramfs, mounted in a mount namespace of this process's own: an O_DSYNC
 * open there keeps the kernel's flag (nothing to share, so nothing to
 * convert), as bare. */
static int otherfs(void)
{
	char *mnt = path_of("ramfs");
	int fd;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		printf("otherfs=unavailable errno=%d\n", errno);
		return 0;
	}
	if ((mkdir(mnt, 0755) && errno != EEXIST) || mount("ramfs", mnt, "ramfs", 0, NULL)) {
		printf("otherfs=unavailable errno=%d\n", errno);
		return 0;
	}
	fd = open(path_of("ramfs/f"), O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || write(fd, "r", 1) != 1)
		return perror("ramfs file"), 1;
	printf("ramfs_dsync=%d\n", kernel_dsync(fd));
	close(fd);
	umount2(mnt, MNT_DETACH);
	return 0;
}

/* --- eacces: an unprivileged user, files it cannot reopen */

static int eacces_child(void)
{
	char num[16];
	int fd, r;

	if (setgid(65534) || setuid(65534))
		return perror("setuid"), 1;
	/* A: created 0444 by this open, which itself may write. */
	fd = open(path_of("u/a"), O_WRONLY | O_CREAT | O_EXCL | O_DSYNC, 0444);
	if (fd < 0)
		return perror("open a"), 1;
	if (write(fd, "a", 1) != 1)
		perror("write a");
	printf("a_exec=%d\n", exec_getfl(fd));
	fflush(stdout);
	close(fd);

	/* B: reopenable at open time, made unreadable before the exec. */
	close(open(path_of("u/b"), O_WRONLY | O_CREAT | O_EXCL, 0644));
	fd = open(path_of("u/b"), O_WRONLY | O_DSYNC);
	if (fd < 0)
		return perror("open b"), 1;
	fchmod(fd, 0444);
	printf("b_exec=%d\n", exec_getfl(fd));
	r = system("true");
	printf("b_system=%d errno=%d\n", r, r == -1 ? errno : 0);
	{
		char *argv[] = { (char *)self, "getfl", num, NULL };
		pid_t pid;
		int st = 0;

		snprintf(num, sizeof(num), "%d", fd);
		r = posix_spawn(&pid, self, NULL, NULL, argv, bare_env());
		if (r == 0)
			waitpid(pid, &st, 0);
		printf("b_spawn=%d\n", r);
	}
	fflush(stdout);
	return 0;
}

static int eacces(void)
{
	pid_t kid;
	int st;

	if (geteuid() != 0)
		return printf("skip=not root\n"), 0;
	chmod(dir, 0755);
	if (mkdir(path_of("u"), 0777) || chmod(path_of("u"), 0777))
		return perror("mkdir"), 1;
	fflush(stdout);
	kid = fork();
	if (kid == 0)
		_exit(eacces_child());
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return 1;
	return WEXITSTATUS(st);
}

/* --- locks: a lock taken through a converted fd must stay held */

/* From another process: is [0, 100) of @name locked by someone? */
static int held(const char *name)
{
	pid_t kid;
	int st;

	kid = fork();
	if (kid == 0) {
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100 };
		int fd = open(path_of(name), O_RDWR);

		if (fd < 0 || fcntl(fd, F_GETLK, &l) < 0)
			_exit(2);
		_exit(l.l_type != F_UNLCK ? 0 : 1);
	}
	if (kid < 0 || waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st) == 0 ? 1 : WEXITSTATUS(st) == 1 ? 0 : -1;
}

static int locked_fd(const char *name, int cmd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 100 };
	int fd = open(path_of(name), O_RDWR | O_CREAT | O_DSYNC, 0644);

	if (fd < 0 || fcntl(fd, cmd, &l) < 0)
		perror(name);
	return fd;
}

static int locks(void)
{
	int fd, r, e;
	FILE *f;

	fd = locked_fd("l_system", F_SETLK);
	r = system("true");
	e = errno;
	printf("system: ret=%d enolck=%d held=%d\n", r, r == -1 && e == ENOLCK, held("l_system"));

	fd = locked_fd("l_spawn", F_SETLK);
	{
		char *argv[] = { "true", NULL };
		pid_t pid;

		r = posix_spawnp(&pid, "true", NULL, NULL, argv, environ);
		if (r == 0)
			waitpid(pid, NULL, 0);
		printf("spawn: ret=%d enolck=%d held=%d\n", r, r == ENOLCK, held("l_spawn"));
	}

	fd = locked_fd("l_fdopen", F_SETLK);
	f = fdopen(fd, "r+");
	e = errno;
	printf("fdopen: ret=%d enolck=%d held=%d\n", f ? 0 : -1, !f && e == ENOLCK,
	       held("l_fdopen"));

	fd = locked_fd("l_ofd", F_OFD_SETLK);
	f = fdopen(fd, "r+");
	e = errno;
	printf("ofd_fdopen: ret=%d enolck=%d held=%d\n", f ? 0 : -1, !f && e == ENOLCK,
	       held("l_ofd"));

	/* A lock taken through another descriptor of the same file. */
	fd = open(path_of("l_other"), O_RDWR | O_CREAT | O_DSYNC, 0644);
	locked_fd("l_other", F_SETLK);
	f = fdopen(fd, "r+");
	e = errno;
	printf("other_fdopen: ret=%d enolck=%d held=%d\n", f ? 0 : -1, !f && e == ENOLCK,
	       held("l_other"));
	return 0;
}

/* --- wrace: writes through a number another thread keeps swapping */

static int wnum = -1;
static volatile int wstop;

/* The shared number sits high (100) so that nothing else, such as the
 * spy's log opened per record, takes it while it is closed. It always
 * names the same file when open: a write either fails with EBADF or its
 * bytes are in that file. */
static void *swapper(void *arg)
{
	(void)arg;
	while (!stop) {
		int fd;

		close(wnum);
		usleep(20);
		fd = open(path_of("sync"), O_WRONLY | O_APPEND | O_DSYNC);
		dup2(fd, wnum);
		close(fd);
		usleep(200);
	}
	return NULL;
}

static void *wwriter(void *arg)
{
	(void)arg;
	while (!wstop)
		if (write(wnum, "0123456789abcdef", 16) < 0 && errno != EBADF)
			perror("write");
	return NULL;
}

static int wrace(void)
{
	pthread_t s, w[3];

	close(open(path_of("plain"), O_WRONLY | O_CREAT, 0644));
	wnum = open(path_of("sync"), O_WRONLY | O_CREAT | O_APPEND | O_DSYNC, 0644);
	if (wnum < 0 || dup2(wnum, 100) != 100)
		return perror("open"), 1;
	close(wnum);
	wnum = 100;
	pthread_create(&s, NULL, swapper, NULL);
	for (int i = 0; i < 3; i++)
		pthread_create(&w[i], NULL, wwriter, NULL);
	usleep(1500 * 1000);
	wstop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	stop = 1;
	pthread_join(s, NULL);
	printf("done=1\n");
	return 0;
}

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc == 3 && !strcmp(argv[1], "getfl"))
		return getfl(atoi(argv[2]));
	if (argc != 3) {
		fprintf(stderr, "usage: inherit getfl FD | race|spawn|eacces|locks|wrace|pass|uring|aio|stdio|execveat|otherfs DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "race"))
		return race();
	if (!strcmp(argv[1], "spawn"))
		return spawn();
	if (!strcmp(argv[1], "eacces"))
		return eacces();
	if (!strcmp(argv[1], "locks"))
		return locks();
	if (!strcmp(argv[1], "wrace"))
		return wrace();
	if (!strcmp(argv[1], "pass"))
		return pass();
	if (!strcmp(argv[1], "uring"))
		return uring();
	if (!strcmp(argv[1], "aio"))
		return aio();
	if (!strcmp(argv[1], "stdio"))
		return stdio_fds();
	if (!strcmp(argv[1], "execveat"))
		return execveat_fl();
	if (!strcmp(argv[1], "otherfs"))
		return otherfs();
	return 2;
}
