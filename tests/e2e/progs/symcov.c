// SPDX-License-Identifier: LGPL-2.1-or-later
/* symcov DIR: calls every libc name the library exports at least once, each
 * successfully, and checks the bytes landed; the suite matches the exit
 * report's sym.<name> counts against shim/syms.def. */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* glibc exports these for fortified callers; headers declare them only under
 * _FORTIFY_SOURCE, so name them here. */
extern int __open_2(const char *, int);
extern int __open64_2(const char *, int);
extern int __openat_2(int, const char *, int);
extern int __openat64_2(int, const char *, int);

static int failures;

/* Takes the result after the call, so errno is the call's own. */
static long check(long r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "symcov: %s: %s\n", what, strerror(errno));
		failures++;
	}
	return r;
}
#define CHECK(expr) check((long)(expr), #expr)

extern int __dprintf_chk(int, int, const char *, ...);
extern int __vdprintf_chk(int, int, const char *, va_list);

static int clone_child(void *arg)
{
	(void)arg;
	return 0;
}

static int vdprintf_of(int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vdprintf(fd, fmt, ap);
	va_end(ap);
	return r;
}

static int vdprintf_chk_of(int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = __vdprintf_chk(fd, 1, fmt, ap);
	va_end(ap);
	return r;
}

int main(int argc, char **argv)
{
	char path[4096], buf[64];
	struct iovec iov[2] = { { "ab", 2 }, { "cd", 2 } };
	int dfd, fd, fsyncfd, fd2, fd3, fd4, t;
	const char *dir;
	void *map;

	if (argc != 2) {
		fprintf(stderr, "usage: symcov DIR\n");
		return 2;
	}
	dir = argv[1];
	alarm(60);
	snprintf(path, sizeof(path), "%s/plain", dir);
	fd = (int)CHECK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
	snprintf(path, sizeof(path), "%s/dsync", dir);
	fsyncfd = (int)CHECK(open64(path, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644));
	dfd = (int)CHECK(open(dir, O_RDONLY | O_DIRECTORY));
	fd2 = (int)CHECK(openat(dfd, "at", O_RDWR | O_CREAT | O_TRUNC, 0644));
	fd3 = (int)CHECK(openat64(dfd, "at64", O_RDWR | O_CREAT | O_TRUNC | O_SYNC, 0644));

	/* The write family, on plain and on sync descriptors. */
	CHECK(write(fd, "0123", 4));
	CHECK(writev(fd, iov, 2));
	CHECK(pwrite(fd, "45", 2, 8));
	CHECK(pwrite64(fd, "67", 2, 10));
	CHECK(pwritev(fd, iov, 2, 12));
	CHECK(pwritev64(fd, iov, 2, 16));
	CHECK(pwritev2(fd, iov, 2, 20, RWF_DSYNC));
	CHECK(pwritev64v2(fd, iov, 2, 24, 0));
	CHECK(write(fsyncfd, "sync", 4));
	CHECK(pwrite(fd3, "sync", 4, 0));
	CHECK(write(fd2, "at", 2));

	/* The sync family. */
	CHECK(fsync(fd));
	CHECK(fdatasync(fd2));
	CHECK(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
	CHECK(syncfs(fd));
	sync();
	CHECK(ftruncate(fd2, 4096));
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "symcov: mmap: %s\n", strerror(errno));
		failures++;
	} else {
		memcpy(map, "mapped", 6);
		CHECK(msync(map, 4096, MS_SYNC));
		munmap(map, 4096);
	}
	map = mmap64(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 0);
	if (map != MAP_FAILED)
		munmap(map, 4096);
	CHECK(ftruncate64(fd2, 4096));
	CHECK(fallocate(fd2, 0, 0, 4096));
	CHECK(fallocate64(fd2, 0, 0, 4096));
	{
		int e = posix_fallocate(fd2, 0, 4096), e64 = posix_fallocate64(fd2, 0, 4096);

		if (e || e64) {
			fprintf(stderr, "symcov: posix_fallocate: %s, posix_fallocate64: %s\n",
				strerror(e), strerror(e64));
			failures++;
		}
	}
	snprintf(path, sizeof(path), "%s/meta1", dir);
	CHECK(close((int)CHECK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644))));
	CHECK(truncate(path, 10));
	CHECK(truncate64(path, 20));
	{
		char p2[4200];

		snprintf(p2, sizeof(p2), "%s/meta2", dir);
		CHECK(rename(path, p2));
		CHECK(renameat(dfd, "meta2", dfd, "meta1"));
		CHECK(renameat2(dfd, "meta1", dfd, "meta2", 0));
		CHECK(unlink(p2));
		CHECK(close((int)CHECK(open(path, O_WRONLY | O_CREAT, 0644))));
		CHECK(unlinkat(dfd, "meta1", 0));
	}

	/* The fortified open entry points (no O_CREAT: they abort on it). */
	snprintf(path, sizeof(path), "%s/plain", dir);
	CHECK(close((int)CHECK(__open_2(path, O_RDONLY))));
	CHECK(close((int)CHECK(__open64_2(path, O_RDONLY))));
	CHECK(close((int)CHECK(__openat_2(dfd, "plain", O_RDONLY))));
	CHECK(close((int)CHECK(__openat64_2(dfd, "plain", O_RDONLY | O_DSYNC))));
	snprintf(path, sizeof(path), "%s/creat", dir);
	CHECK(close((int)CHECK(creat(path, 0644))));
	snprintf(path, sizeof(path), "%s/creat64", dir);
	CHECK(close((int)CHECK(creat64(path, 0644))));

	/* Descriptor plumbing. */
	fd4 = (int)CHECK(dup(fsyncfd));
	CHECK(dup2(fsyncfd, 200));
	CHECK(dup3(fsyncfd, 201, O_CLOEXEC));
	t = (int)CHECK(fcntl(fd4, F_GETFL));
	if (t >= 0 && !(t & O_DSYNC)) {
		fprintf(stderr, "symcov: fcntl(F_GETFL) lost O_DSYNC on a dup\n");
		failures++;
	}
	t = (int)CHECK(fcntl64(fsyncfd, F_DUPFD_CLOEXEC, 210));
	CHECK(write(t, "dup", 3));
	CHECK(close(t));
	CHECK(close_range(200, 201, 0));
	CHECK(unshare(0));
	closefrom(4000);
	CHECK(close(fd4));

	/* Data moved by the kernel into the O_DSYNC file. */
	{
		int src = (int)CHECK(openat(dfd, "src", O_CREAT | O_RDWR | O_TRUNC, 0644));
		int p[2];
		off_t o = 0;
		off64_t o64 = 0, oin = 0, oout = 64;

		CHECK(pwrite(src, "xyzw", 4, 0));
		CHECK(sendfile(fsyncfd, src, &o, 1));
		o64 = 1;
		CHECK(sendfile64(fsyncfd, src, &o64, 1));
		oin = 2;
		CHECK(copy_file_range(src, &oin, fsyncfd, &oout, 1, 0));
		CHECK(pipe(p));
		CHECK(write(p[1], "q", 1));
		oout = 65;
		CHECK(splice(p[0], NULL, fsyncfd, &oout, 1, 0));
		{
			int queued = -1;

			CHECK(write(p[1], "io", 2));
			CHECK(ioctl(p[0], FIONREAD, &queued));
			if (queued != 2) {
				fprintf(stderr, "symcov: ioctl(FIONREAD) read %d, not 2\n", queued);
				failures++;
			}
		}
		{
			char name[16] = "";

			CHECK(prctl(PR_GET_NAME, name, 0, 0, 0));
			if (!name[0]) {
				fprintf(stderr, "symcov: prctl(PR_GET_NAME) read no name\n");
				failures++;
			}
		}
		close(p[0]);
		close(p[1]);
		CHECK(pipe2(p, O_CLOEXEC));
		close(p[0]);
		close(p[1]);
		CHECK(close(src));
	}

	/* The calls that make sockets: a pair, and a listener's two
	 * connections taken by accept and accept4. */
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int sp[2], l, c1, c2, a1, a2;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp));
		CHECK(write(sp[0], "s", 1));
		close(sp[0]);
		close(sp[1]);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/symcov.sock", dir);
		unlink(sa.sun_path);
		l = (int)CHECK(socket(AF_UNIX, SOCK_STREAM, 0));
		CHECK(bind(l, (struct sockaddr *)&sa, sizeof(sa)));
		CHECK(listen(l, 4));
		c1 = (int)CHECK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		CHECK(connect(c1, (struct sockaddr *)&sa, sizeof(sa)));
		c2 = (int)CHECK(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		CHECK(connect(c2, (struct sockaddr *)&sa, sizeof(sa)));
		a1 = (int)CHECK(accept(l, NULL, NULL));
		a2 = (int)CHECK(accept4(l, NULL, NULL, SOCK_CLOEXEC));
		CHECK(write(c1, "a", 1));
		CHECK(write(c2, "b", 1));
		close(a1);
		close(a2);
		close(c1);
		close(c2);
		close(l);
		unlink(sa.sun_path);
	}

	/* The exec family: each fails (no such program) and returns, except
	 * the spawns, which run true(1) — without a report of their own. */
	unsetenv("LIBGC_REPORT");
	{
		char *const av[] = { "true", NULL };
		pid_t pid;
		int st;
		FILE *f;

		execve("/nonexistent/x", av, environ);
		execv("/nonexistent/x", av);
		execvp("/nonexistent/x", av);
		execvpe("/nonexistent/x", av, environ);
		execl("/nonexistent/x", "x", (char *)NULL);
		execle("/nonexistent/x", "x", (char *)NULL, environ);
		execlp("/nonexistent/x", "x", (char *)NULL);
		fexecve(-1, av, environ);
		execveat(AT_FDCWD, "/nonexistent/x", av, environ, 0);
		if (!CHECK(posix_spawn(&pid, "/bin/true", NULL, NULL, av, environ)))
			waitpid(pid, &st, 0);
		if (!CHECK(posix_spawnp(&pid, "true", NULL, NULL, av, environ)))
			waitpid(pid, &st, 0);
		CHECK(system("true"));
		f = popen("true", "r");
		if (!f) {
			fprintf(stderr, "symcov: popen failed\n");
			failures++;
		} else {
			pclose(f);
		}
		{
			static char stack[64 * 1024];

			pid = clone(clone_child, stack + sizeof(stack), SIGCHLD, NULL);
			if (CHECK(pid) > 0)
				waitpid(pid, &st, 0);
		}
		{
			/* dprintf and friends, at the plain file's far end */
			off_t at = lseek(fd, 0, SEEK_CUR);

			lseek(fd, 8192, SEEK_SET);
			CHECK(dprintf(fd, "%s", "d"));
			CHECK(vdprintf_of(fd, "%s", "v"));
			CHECK(__dprintf_chk(fd, 1, "%s", "c"));
			CHECK(vdprintf_chk_of(fd, "%s", "w"));
			lseek(fd, at, SEEK_SET);
		}
		f = fdopen(dup(fd), "r");
		if (!f) {
			fprintf(stderr, "symcov: fdopen failed\n");
			failures++;
		} else {
			fclose(f);
		}
			{
			/* a descriptor passed to ourselves, once by each */
			char one = 'x', cbuf[CMSG_SPACE(sizeof(int))];
			struct iovec v = { &one, 1 };
			struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1,
					    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
			struct mmsghdr mm = { .msg_hdr = m };
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			int sv[2];

			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd, sizeof(int));
			if (!CHECK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))) {
				CHECK(sendmsg(sv[0], &m, 0));
				CHECK(sendmmsg(sv[0], &mm, 1, 0));
				close(sv[0]);
				close(sv[1]); /* the passed copies go with it */
			}
		}
		{
			/* asynchronous writes, waited for, into the plain file's
			 * far end (its bytes are checked up to 28 only) */
			struct aiocb a = { .aio_fildes = fd, .aio_buf = "aio", .aio_nbytes = 3,
					   .aio_offset = 4096, .aio_lio_opcode = LIO_WRITE };
			struct aiocb64 a64 = { .aio_fildes = fd, .aio_buf = "aio", .aio_nbytes = 3,
					       .aio_offset = 4096, .aio_lio_opcode = LIO_WRITE };
			struct aiocb *l[1] = { &a };
			struct aiocb64 *l64[1] = { &a64 };
			const struct aiocb *w[1] = { &a };
			const struct aiocb64 *w64[1] = { &a64 };
			int (*sub)(aio_context_t, long, struct iocb **) =
				(int (*)(aio_context_t, long, struct iocb **))dlsym(RTLD_DEFAULT,
										  "io_submit");
			struct iocb cb = { .aio_lio_opcode = IOCB_CMD_PWRITE,
					   .aio_fildes = (unsigned)fd,
					   .aio_buf = (unsigned long)"aio", .aio_nbytes = 3,
					   .aio_offset = 4096 };
			struct iocb *cbs[1] = { &cb };
			struct io_event ev;
			aio_context_t ctx = 0;

			if (!CHECK(aio_write(&a))) {
				while (aio_error(&a) == EINPROGRESS)
					aio_suspend(w, 1, NULL);
				CHECK(aio_return(&a));
			}
			if (!CHECK(aio_write64(&a64))) {
				while (aio_error64(&a64) == EINPROGRESS)
					aio_suspend64(w64, 1, NULL);
				CHECK(aio_return64(&a64));
			}
			CHECK(lio_listio(LIO_WAIT, l, 1, NULL));
			CHECK(lio_listio64(LIO_WAIT, l64, 1, NULL));
			if (!sub) {
				fprintf(stderr, "symcov: no io_submit to call\n");
				failures++;
			} else if (!CHECK(syscall(SYS_io_setup, 1, &ctx))) {
				int r = sub(ctx, 1, cbs);

				if (r != 1 || syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1) {
					fprintf(stderr, "symcov: io_submit: %d\n", r);
					failures++;
				}
				syscall(SYS_io_destroy, ctx);
			}
		}
	}

	/* The bytes went where they were written. */
	memset(buf, 0, sizeof(buf));
	if (pread(fd, buf, 28, 0) != 28 ||
	    memcmp(buf, "0123abcd4567abcdabcdabcdabcd", 28)) {
		fprintf(stderr, "symcov: plain file holds \"%.28s\"\n", buf);
		failures++;
	}
	memset(buf, 0, sizeof(buf));
	if (pread(fsyncfd, buf, 7, 0) != 7 || memcmp(buf, "syncdup", 7)) {
		fprintf(stderr, "symcov: dsync file holds \"%.7s\"\n", buf);
		failures++;
	}
	CHECK(close(fd));
	CHECK(close(fsyncfd));
	CHECK(close(fd2));
	CHECK(close(fd3));
	CHECK(close(dfd));
	printf("symcov: failures=%d\n", failures);
	return failures ? 1 : 0;
}
