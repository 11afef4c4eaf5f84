// SPDX-License-Identifier: LGPL-2.1-or-later
/* errnos DIR: error results and errno of every interposed call, one line
 * per case ("name: rc errno"), to compare a run under the library with a
 * bare run line by line. */

/* Also checks the cases whose answer the kernel fixes (EBADF, EINVAL on
 * pipes and sockets, errno kept on success): exits 1 if one is wrong. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define SENTINEL 4242	/* an errno value no call ever sets */

static int failures;
/* Bad arguments the compiler must not see through. */
static void *volatile null_buf;
static volatile int neg_count = -1;

static const char *ename(int e)
{
	const char *n;

	if (e == SENTINEL)
		return "kept";
	n = strerrorname_np(e);
	return n ? n : "?";
}

/* @want_errno: the errno the kernel gives (0: the call must succeed and keep
 * errno; -1: no expectation, just print). @show_rc: print the value too. */
static void report(const char *name, long rc, int err, int want_errno, int show_rc)
{
	if (rc >= 0 && show_rc)
		printf("%s: %ld %s\n", name, rc, ename(err));
	else if (rc >= 0)
		printf("%s: ok %s\n", name, ename(err));
	else
		printf("%s: -1 %s\n", name, ename(err));
	if (want_errno > 0 && (rc != -1 || err != want_errno)) {
		fprintf(stderr, "errnos: %s: got rc=%ld errno=%s, want -1 %s\n",
			name, rc, ename(err), ename(want_errno));
		failures++;
	}
	if (want_errno == 0 && (rc < 0 || err != SENTINEL)) {
		fprintf(stderr, "errnos: %s: got rc=%ld errno=%s, want success with errno kept\n",
			name, rc, ename(err));
		failures++;
	}
}

/* Sets the sentinel, makes the call, reports. */
#define T(name, want, expr)                                                  \
	do {                                                                 \
		long rc_;                                                    \
		errno = SENTINEL;                                            \
		rc_ = (long)(expr);                                          \
		report(name, rc_, errno, want, 0);                           \
	} while (0)
#define TV(name, want, expr)                                                 \
	do {                                                                 \
		long rc_;                                                    \
		errno = SENTINEL;                                            \
		rc_ = (long)(expr);                                          \
		report(name, rc_, errno, want, 1);                           \
	} while (0)

static int closed_fd(void)
{
	int fd = open("/dev/null", O_RDONLY);

	close(fd);
	return fd;
}

static void sync_flags(const char *name, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	printf("%s: %s%s%s\n", name, fl < 0 ? "error" : "",
	       fl >= 0 && (fl & O_SYNC) == O_SYNC ? "O_SYNC" :
	       fl >= 0 && (fl & O_DSYNC) ? "O_DSYNC" : "",
	       fl >= 0 && (fl & O_APPEND) ? "|O_APPEND" : "");
}

int main(int argc, char **argv)
{
	char path[4096], dsync[4096], buf[64] = "0123456789";
	struct iovec iov = { buf, 4 };
	int p[2], sv[2], fd, ro, dfd, pathfd, nul, ds, rods, bad;
	void *map;

	if (argc != 2) {
		fprintf(stderr, "usage: errnos DIR\n");
		return 2;
	}
	alarm(30);
	snprintf(path, sizeof(path), "%s/plain", argv[1]);
	snprintf(dsync, sizeof(dsync), "%s/dsync", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ds = open(dsync, O_RDWR | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	ro = open(path, O_RDONLY);
	rods = open(dsync, O_RDONLY | O_DSYNC);
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	pathfd = open(path, O_PATH);
	nul = open("/dev/null", O_WRONLY);
	if (fd < 0 || ds < 0 || ro < 0 || rods < 0 || dfd < 0 || pathfd < 0 ||
	    nul < 0 || pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		fprintf(stderr, "errnos: setup: %s\n", strerror(errno));
		return 1;
	}
	bad = closed_fd();

	/* fsync family on descriptors that cannot be synced */
	T("fsync(-1)", EBADF, fsync(-1));
	T("fdatasync(-1)", EBADF, fdatasync(-1));
	T("fsync(closed)", EBADF, fsync(bad));
	T("fdatasync(closed)", EBADF, fdatasync(bad));
	T("fsync(pipe-r)", EINVAL, fsync(p[0]));
	T("fsync(pipe-w)", EINVAL, fsync(p[1]));
	T("fdatasync(pipe-w)", EINVAL, fdatasync(p[1]));
	T("fsync(socket)", EINVAL, fsync(sv[0]));
	T("fdatasync(socket)", EINVAL, fdatasync(sv[0]));
	T("fsync(O_PATH)", EBADF, fsync(pathfd));
	T("fsync(/dev/null)", -1, fsync(nul));
	T("fdatasync(/dev/null)", -1, fdatasync(nul));
	T("sync_file_range(pipe)", ESPIPE, sync_file_range(p[1], 0, 0, SYNC_FILE_RANGE_WRITE));
	T("sync_file_range(closed)", EBADF, sync_file_range(bad, 0, 0, SYNC_FILE_RANGE_WRITE));
	T("sync_file_range(badflags)", EINVAL, sync_file_range(fd, 0, 0, 0x100));
	T("syncfs(closed)", EBADF, syncfs(bad));
	T("msync(unaligned)", EINVAL, msync(buf + 1, 10, MS_SYNC));

	/* the write family on bad descriptors and bad arguments */
	T("write(-1)", EBADF, write(-1, buf, 4));
	T("write(closed)", EBADF, write(bad, buf, 4));
	T("pwrite(closed)", EBADF, pwrite(bad, buf, 4, 0));
	T("pwrite64(closed)", EBADF, pwrite64(bad, buf, 4, 0));
	T("writev(closed)", EBADF, writev(bad, &iov, 1));
	T("pwritev(closed)", EBADF, pwritev(bad, &iov, 1, 0));
	T("pwritev64(closed)", EBADF, pwritev64(bad, &iov, 1, 0));
	T("pwritev2(closed,RWF_DSYNC)", EBADF, pwritev2(bad, &iov, 1, 0, RWF_DSYNC));
	T("pwritev64v2(closed,RWF_SYNC)", EBADF, pwritev64v2(bad, &iov, 1, 0, RWF_SYNC));
	T("write(rdonly)", EBADF, write(ro, buf, 4));
	T("write(rdonly|O_DSYNC)", EBADF, write(rods, buf, 4));
	T("pwrite(pipe)", ESPIPE, pwrite(p[1], buf, 4, 0));
	T("pwrite(O_DSYNC,off=-1)", EINVAL, pwrite(ds, buf, 4, -1));
	T("write(O_DSYNC,NULL)", EFAULT, write(ds, null_buf, 4));
	T("pwritev2(badflags)", EOPNOTSUPP, pwritev2(fd, &iov, 1, 0, 0x40000000));
	T("pwritev2(O_DSYNC,badflags)", EOPNOTSUPP, pwritev2(ds, &iov, 1, 0, 0x40000000));
	T("writev(O_DSYNC,iovcnt=-1)", EINVAL, writev(ds, &iov, neg_count));

	/* open family failures */
	snprintf(buf, sizeof(buf), "%s", "0123456789");
	T("open(missing,O_DSYNC)", ENOENT, open("/nonexistent/x", O_RDONLY | O_DSYNC));
	T("open(file,O_DSYNC|O_DIRECTORY)", ENOTDIR, open(path, O_RDONLY | O_DSYNC | O_DIRECTORY));
	T("open(O_CREAT|O_EXCL,exists)", EEXIST, open(path, O_RDWR | O_CREAT | O_EXCL | O_SYNC, 0644));
	T("openat(closed,rel)", EBADF, openat(bad, "x", O_RDONLY | O_DSYNC));
	T("creat(missing dir)", ENOENT, creat("/nonexistent/x", 0644));
	T("open(dir,O_WRONLY|O_DSYNC)", EISDIR, open(argv[1], O_WRONLY | O_DSYNC));

	/* descriptor calls */
	T("close(-1)", EBADF, close(-1));
	T("close(closed)", EBADF, close(bad));
	T("dup(-1)", EBADF, dup(-1));
	T("dup(closed)", EBADF, dup(bad));
	T("dup2(fd,-1)", EBADF, dup2(fd, -1));
	T("dup2(closed,fd)", EBADF, dup2(bad, 300));
	T("dup3(fd,fd)", EINVAL, dup3(fd, fd, 0));
	T("dup3(badflags)", EINVAL, dup3(fd, 301, 0x1234));
	T("close_range(hi<lo)", EINVAL, close_range(10, 5, 0));
	T("fcntl(closed,F_GETFL)", EBADF, fcntl(bad, F_GETFL));
	T("fcntl(closed,F_DUPFD)", EBADF, fcntl(bad, F_DUPFD, 0));
	T("fcntl64(-1,F_GETFL)", EBADF, fcntl64(-1, F_GETFL));
	T("fcntl(fd,F_DUPFD,-1)", EINVAL, fcntl(fd, F_DUPFD, -1));

	/* successes keep errno */
	TV("write(plain)", 0, write(fd, buf, 4));
	TV("pwrite(plain)", 0, pwrite(fd, buf, 4, 8));
	TV("write(O_DSYNC)", 0, write(ds, buf, 4));
	TV("pwrite64(O_DSYNC)", 0, pwrite64(ds, buf, 4, 100));
	TV("writev(O_DSYNC)", 0, writev(ds, &iov, 1));
	TV("pwritev2(plain,RWF_DSYNC)", 0, pwritev2(fd, &iov, 1, 16, RWF_DSYNC));
	TV("pwritev2(plain,RWF_SYNC)", 0, pwritev2(fd, &iov, 1, 20, RWF_SYNC));
	TV("pwritev64v2(plain,-1 off,RWF_DSYNC)", 0, pwritev64v2(fd, &iov, 1, -1, RWF_DSYNC));
	TV("write(O_DSYNC,0 bytes)", 0, write(ds, buf, 0));
	TV("write(pipe)", 0, write(p[1], buf, 4));
	TV("write(socket)", 0, write(sv[0], buf, 4));
	T("fsync(plain)", 0, fsync(fd));
	T("fdatasync(plain)", 0, fdatasync(fd));
	T("fsync(O_DSYNC)", 0, fsync(ds));
	T("fsync(rdonly)", 0, fsync(ro));
	T("fdatasync(rdonly|O_DSYNC)", 0, fdatasync(rods));
	T("fsync(dir)", 0, fsync(dfd));
	T("sync_file_range(plain)", 0, sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
	T("syncfs(plain)", 0, syncfs(fd));
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	T("msync", 0, map == MAP_FAILED ? -1 : msync(map, 4096, MS_SYNC));
	T("open(O_DSYNC)", 0, close(open(dsync, O_RDWR | O_DSYNC)) == 0 ? 0 : -1);
	T("openat(O_SYNC)", 0, close(openat(dfd, "dsync", O_RDWR | O_SYNC)) == 0 ? 0 : -1);
	T("fcntl(F_GETFL)", 0, fcntl(ds, F_GETFL));
	T("dup", 0, close(dup(ds)) == 0 ? 0 : -1);
	T("dup2", 0, dup2(ds, 310));
	T("dup3", 0, dup3(ds, 311, O_CLOEXEC));
	T("close_range", 0, close_range(310, 311, 0));
	T("close", 0, close(dup(fd)));

	/* the sync flag as the program sees it, across F_SETFL */
	sync_flags("F_GETFL(O_DSYNC)", ds);
	sync_flags("F_GETFL(rdonly|O_DSYNC)", rods);
	T("fcntl(O_DSYNC,F_SETFL,O_APPEND)", 0, fcntl(ds, F_SETFL, O_APPEND));
	sync_flags("F_GETFL(after F_SETFL O_APPEND)", ds);
	T("fcntl(O_DSYNC,F_SETFL,0)", 0, fcntl(ds, F_SETFL, 0));
	sync_flags("F_GETFL(after F_SETFL 0)", ds);
	T("fcntl(plain,F_SETFL,O_DSYNC)", 0, fcntl(fd, F_SETFL, O_DSYNC));
	sync_flags("F_GETFL(plain after F_SETFL O_DSYNC)", fd);
	T("pwritev2(pipe,-1,RWF_DSYNC)", -1, pwritev2(p[1], &iov, 1, -1, RWF_DSYNC));
	T("pwritev2(plain,RWF_DSYNC|RWF_NOWAIT)", -1, pwritev2(fd, &iov, 1, 0, RWF_DSYNC | RWF_NOWAIT));
	T("pwritev2(plain,RWF_DSYNC|RWF_APPEND)", -1, pwritev2(fd, &iov, 1, 0, RWF_DSYNC | RWF_APPEND));
	{
		int op = open(path, O_PATH | O_DSYNC);

		sync_flags("F_GETFL(O_PATH|O_DSYNC)", op);
		T("write(O_PATH|O_DSYNC)", EBADF, write(op, buf, 4));
		close(op);
	}
	{
		int dn = open("/dev/null", O_WRONLY | O_DSYNC);

		sync_flags("F_GETFL(/dev/null O_DSYNC)", dn);
		TV("write(/dev/null O_DSYNC)", 0, write(dn, buf, 4));
		close(dn);
	}

	printf("errnos: failures=%d\n", failures);
	return failures ? 1 : 0;
}
