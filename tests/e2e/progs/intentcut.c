// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log's power-cut cases (tests/crash/intent_cases.sh): each case
 * makes a file durable once, acknowledges a write through the log, then
 * does what the case attacks and a last sync; after every sync returned,
 * the bytes each file held are copied to EXP/NAME (what the program was
 * told is durable), "ready" is printed and the process stops itself, so
 * that no checkpoint runs before the harness cuts the power.
 *
 *   intentcut CASE DIR EXP        (and "intentcut writer FILE OFF" for spawn;
 *                                  "intentcut again DIR READ EXP" for restart)
 *
 * "walk" writes through every write-family name of shim/syms.def (each
 * pwritev2 flag too) into a file of its own, then syncs; a name of the
 * list that is neither walked nor named as no write here fails the case. */
#include <aio.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RWF_HIPRI
#define RWF_HIPRI 0x01
#endif
#ifndef RWF_DSYNC
#define RWF_DSYNC 0x02
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x04
#endif
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x08
#endif
#ifndef RWF_APPEND
#define RWF_APPEND 0x10
#endif
#define RWF_NOAPPEND_ 0x20
#define RWF_DONTCACHE_ 0x80

extern char **environ;
static const char *dir, *exp_dir;
static char names[64][64];
static struct timespec t_start, t_end;
static const char *alt; /* after a failed sync: what the first file may hold at 0 instead */
static int nnames;

static void die(const char *what)
{
	fprintf(stderr, "intentcut: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put(int fd, const void *s, size_t n, off_t off)
{
	if (pwrite(fd, s, n, off) != (ssize_t)n)
		die("pwrite");
}

static void sync_fd(int fd)
{
	if (fsync(fd))
		die("fsync");
}

/* A file of 16 KiB made durable by a first (real) sync, then a small
 * write acknowledged through the log. */
static int prepare(const char *name)
{
	char path[4096], buf[16384];
	int fd, d;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open");
	memset(buf, 'a', sizeof(buf));
	put(fd, buf, sizeof(buf), 0);
	sync_fd(fd);
	d = open(dir, O_RDONLY | O_DIRECTORY);
	if (d < 0 || fsync(d))
		die("fsync dir");
	close(d);
	put(fd, "L1L1", 4, 0);
	sync_fd(fd);
	snprintf(names[nnames++], sizeof(names[0]), "%s", name);
	return fd;
}

/* The acknowledged state: every file's bytes now, copied outside the disk. */
static void ready(void)
{
	char path[8192], buf[65536];
	int i;

	for (i = 0; i < nnames; i++) {
		ssize_t n;
		int in, out;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		in = open(path, O_RDONLY);
		snprintf(path, sizeof(path), "%s/%s", exp_dir, names[i]);
		out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0)
			die("open for the copy");
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n)
				die("write the copy");
		close(in);
		close(out);
	}
	if (alt && nnames) {
		/* NAME.alt: the first file with the bytes a failed sync may
		 * have left at 0 instead: either is right */
		char path2[8192];
		int in, out;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", exp_dir, names[0]);
		snprintf(path2, sizeof(path2), "%s/%s.alt", exp_dir, names[0]);
		in = open(path, O_RDONLY);
		out = open(path2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0 || (n = read(in, buf, sizeof(buf))) < 4)
			die("the alternative copy");
		memcpy(buf, alt, strlen(alt));
		if (write(out, buf, (size_t)n) != n)
			die("write the alternative copy");
		close(in);
		close(out);
	}
	clock_gettime(CLOCK_MONOTONIC, &t_end);
	/* a checkpoint (every second) would make everything durable, and
	 * the case prove nothing: the harness notes a slow run */
	printf("ready %ld ms\n", (long)((t_end.tv_sec - t_start.tv_sec) * 1000 +
					(t_end.tv_nsec - t_start.tv_nsec) / 1000000));
	fflush(stdout);
	raise(SIGSTOP);
	_exit(0);
}

/* Another libgc process writes "BBBB" at @off and exits, syncing nothing. */
static void spawn_writer(const char *name, off_t off)
{
	char path[4096], offs[32], self[4096];
	char *argv[] = { self, "writer", path, offs, NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	pid_t pid;
	int st;

	if (n < 0)
		die("readlink");
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(offs, sizeof(offs), "%lld", (long long)off);
	if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0)
		die("posix_spawn");
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("writer");
}

/* The device offset of @fd's first block (FIEMAP; the data made durable
 * by the caller first, so that it is allocated). */
static unsigned long long first_block(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe[1];
	} m;

	memset(&m, 0, sizeof(m));
	m.fm.fm_length = FIEMAP_MAX_OFFSET;
	m.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.fm) < 0 || m.fm.fm_mapped_extents < 1)
		die("FIEMAP");
	return (unsigned long long)m.fe[0].fe_physical;
}

/* Runs $INTENTCUT_FAULT with OFF replaced by @off (the disk's fault
 * command), outside the library. */
static void fault(unsigned long long off)
{
	const char *t = getenv("INTENTCUT_FAULT");
	char cmd[4096], num[32];
	const char *p;
	size_t n = 0;

	if (!t)
		die("INTENTCUT_FAULT unset");
	snprintf(num, sizeof(num), "%llu", off);
	for (p = t; *p && n < sizeof(cmd) - 32; p++) {
		if (!strncmp(p, "OFF", 3)) {
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s", num);
			p += 2;
		} else {
			cmd[n++] = *p;
		}
	}
	cmd[n] = '\0';
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
		pid_t pid;
		int st;

		if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, envp) != 0 ||
		    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			die("fault command");
	}
}

/* ---- the walk ---- */

/* Every name of shim/syms.def: walked here, or why it writes no bytes. */
static const struct {
	const char *name, *why;
} syms[] = {
#define SYM(ret, name, args) { #name, NULL },
#include "shim/syms.def"
#undef SYM
};
static const char *const walked[] = { "write", "pwrite", "pwrite64", "writev", "pwritev",
				      "pwritev64", "pwritev2", "pwritev64v2", "sendfile",
				      "sendfile64", "splice", "copy_file_range", "fdopen",
				      "aio_write", "aio_write64", "lio_listio", "lio_listio64",
				      "io_submit", "dprintf", "vdprintf", "__dprintf_chk",
				      "__vdprintf_chk" };
/* Names that change a file other than through its bytes (tests/e2e/intent.sh
 * covers each: truncate, fallocate, rename, unlink, mmap, O_TRUNC; ioctl's
 * clones are checkpointed as fallocate is, and the filesystems the suite
 * runs on clone nothing) or write nothing (prctl, clone, unshare). */
static const char *const not_writes[] = {
	"fsync", "fdatasync", "sync_file_range", "syncfs", "sync", "msync", "open", "open64",
	"openat", "openat64", "__open_2", "__open64_2", "__openat_2", "__openat64_2", "creat",
	"creat64", "close", "pipe", "pipe2", "socket", "socketpair", "accept", "accept4",
	"close_range", "closefrom", "dup", "dup2", "dup3",
	"fcntl", "fcntl64", "sendmsg", "sendmmsg", "execve", "execv", "execvp", "execvpe", "execl", "execle", "execlp",
	"fexecve", "execveat", "posix_spawn", "posix_spawnp", "system", "popen", "_exit", "_Exit", "truncate",
	"truncate64", "ftruncate", "ftruncate64", "fallocate", "fallocate64", "posix_fallocate",
	"posix_fallocate64", "rename", "renameat",
	"renameat2", "unlink", "unlinkat", "mmap", "mmap64", "ioctl", "prctl", "clone",
	"unshare"
};

static int listed(const char *n, const char *const *l, size_t k)
{
	for (size_t i = 0; i < k; i++)
		if (!strcmp(n, l[i]))
			return 1;
	return 0;
}

static char wbuf[8192] __attribute__((aligned(4096)));

/* The bytes of case @name: its name, repeated. */
static const char *fill(const char *name, size_t n)
{
	size_t k = strlen(name), i;

	for (i = 0; i < n; i++)
		wbuf[i] = i % (k + 1) == k ? '|' : name[i % (k + 1)];
	return wbuf;
}

static int src_fd(const char *name, size_t n)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/src.%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, fill(name, n), n) != (ssize_t)n)
		die("source");
	return fd;
}

extern int __dprintf_chk(int, int, const char *, ...);
extern int __vdprintf_chk(int, int, const char *, va_list);

/* dprintf, vdprintf, __dprintf_chk or __vdprintf_chk (@how 0-3) */
static int dprintf_by(int how, int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	switch (how) {
	case 0: r = dprintf(fd, fmt, va_arg(ap, const char *)); break;
	case 1: r = vdprintf(fd, fmt, ap); break;
	case 2: r = __dprintf_chk(fd, 1, fmt, va_arg(ap, const char *)); break;
	default: r = __vdprintf_chk(fd, 1, fmt, ap); break;
	}
	va_end(ap);
	return r;
}

static void walk(void)
{
	struct iovec iov[2];
	size_t i;
	int fd, t, p[2];
	ssize_t n;
	off_t o, io;

	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!listed(syms[i].name, walked, sizeof(walked) / sizeof(walked[0])) &&
		    !listed(syms[i].name, not_writes, sizeof(not_writes) / sizeof(not_writes[0]))) {
			fprintf(stderr, "intentcut: %s (shim/syms.def) is not walked: add it\n",
				syms[i].name);
			exit(1);
		}
#define CASE(nm) (fd = prepare(nm), nm)
#define IOV1(nm, n) (iov[0] = (struct iovec){ (void *)fill(nm, n), n }, iov)
	fd = prepare("write");
	lseek(fd, 4096, SEEK_SET);
	if (write(fd, fill("write", 100), 100) != 100)
		die("write");
	sync_fd(fd);
	fd = prepare("pwrite");
	put(fd, fill("pwrite", 100), 100, 4096);
	sync_fd(fd);
	fd = prepare("pwrite64");
	if (pwrite64(fd, fill("pwrite64", 100), 100, 4096) != 100)
		die("pwrite64");
	sync_fd(fd);
	fd = prepare("writev");
	lseek(fd, 5000, SEEK_SET);
	iov[0] = (struct iovec){ (void *)fill("writev", 100), 50 };
	iov[1] = (struct iovec){ wbuf + 50, 50 };
	if (writev(fd, iov, 2) != 100)
		die("writev");
	sync_fd(fd);
	fd = prepare("pwritev");
	if (pwritev(fd, IOV1("pwritev", 100), 1, 6000) != 100)
		die("pwritev");
	sync_fd(fd);
	fd = prepare("pwritev64");
	if (pwritev64(fd, IOV1("pwritev64", 100), 1, 6000) != 100)
		die("pwritev64");
	sync_fd(fd);
	{
		static const struct {
			const char *nm;
			int flags, append_fd;
			off_t off;
			int sync;
		} v2[] = {
			{ "pwritev2.0", 0, 0, 7000, 0 },
			{ "pwritev2.pos", 0, 0, -1, 0 },
			{ "pwritev2.append", RWF_APPEND, 0, 100, 0 },
			{ "pwritev2.noappend", RWF_NOAPPEND_, 1, 100, 0 },
			{ "pwritev2.hipri", RWF_HIPRI, 0, 7000, 0 },
			{ "pwritev2.nowait", RWF_NOWAIT, 0, 7000, 0 },
			{ "pwritev2.dontcache", RWF_DONTCACHE_, 0, 7000, 0 },
			{ "pwritev2.dsync", RWF_DSYNC, 0, 7000, 1 },
			{ "pwritev2.sync", RWF_SYNC, 0, 7000, 1 },
		};

		for (i = 0; i < sizeof(v2) / sizeof(v2[0]); i++) {
			fd = prepare(v2[i].nm);
			t = fd;
			if (v2[i].append_fd) {
				char path[4096];

				snprintf(path, sizeof(path), "%s/%s", dir, v2[i].nm);
				t = open(path, O_WRONLY | O_APPEND);
				if (t < 0)
					die("open O_APPEND");
			}
			lseek(t, 3000, SEEK_SET);
			n = pwritev2(t, IOV1(v2[i].nm, 100), 1, v2[i].off, v2[i].flags);
			if (n < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == EAGAIN))
				n = pwritev2(t, IOV1(v2[i].nm, 100), 1, v2[i].off, 0);
			if (n != 100)
				die(v2[i].nm);
			if (!v2[i].sync)
				sync_fd(fd);
		}
	}
	fd = prepare("pwritev64v2");
	if (pwritev64v2(fd, IOV1("pwritev64v2", 100), 1, 7000, 0) != 100)
		die("pwritev64v2");
	sync_fd(fd);
	fd = prepare("pwritev64v2.append");
	if (pwritev64v2(fd, IOV1("pwritev64v2.append", 100), 1, 0, RWF_APPEND) != 100)
		die("pwritev64v2 RWF_APPEND");
	sync_fd(fd);
	t = src_fd("sendfile", 200);
	fd = prepare("sendfile");
	lseek(fd, 9000, SEEK_SET);
	o = 0;
	if (sendfile(fd, t, &o, 200) != 200)
		die("sendfile");
	sync_fd(fd);
	close(t);
	t = src_fd("sendfile64", 200);
	fd = prepare("sendfile64");
	lseek(fd, 9000, SEEK_SET);
	o = 0;
	if (sendfile64(fd, t, &o, 200) != 200)
		die("sendfile64");
	sync_fd(fd);
	close(t);
	fd = prepare("splice");
	if (pipe(p) || write(p[1], fill("splice", 200), 200) != 200)
		die("pipe");
	io = 9000;
	if (splice(p[0], NULL, fd, &io, 200, 0) != 200)
		die("splice");
	sync_fd(fd);
	close(p[0]);
	close(p[1]);
	t = src_fd("copy_file_range", 200);
	fd = prepare("copy_file_range");
	o = 0;
	io = 9000;
	if (copy_file_range(t, &o, fd, &io, 200, 0) != 200)
		die("copy_file_range");
	sync_fd(fd);
	close(t);
	fd = prepare("fdopen");
	{
		FILE *f = fdopen(dup(fd), "r+");

		if (!f || fseek(f, 10000, SEEK_SET) || fwrite(fill("fdopen", 100), 1, 100, f) != 100 ||
		    fflush(f))
			die("fdopen");
		sync_fd(fd);
		fclose(f);
	}
	fd = prepare("append");
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/append", dir);
		t = open(path, O_WRONLY | O_APPEND);
		if (t < 0 || write(t, fill("append", 100), 100) != 100)
			die("O_APPEND write");
		sync_fd(t);
	}
	fd = prepare("direct");
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/direct", dir);
		t = open(path, O_RDWR | O_DIRECT);
		if (t < 0 || pwrite(t, fill("direct", 4096), 4096, 4096) != 4096)
			die("O_DIRECT pwrite");
		sync_fd(t);
	}
	fd = prepare("odsync");
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/odsync", dir);
		t = open(path, O_WRONLY | O_DSYNC);
		if (t < 0 || pwrite(t, fill("odsync", 100), 100, 4096) != 100)
			die("O_DSYNC pwrite");
	}
	fd = prepare("osync");
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/osync", dir);
		t = open(path, O_WRONLY | O_SYNC);
		if (t < 0 || pwrite(t, fill("osync", 100), 100, 4096) != 100)
			die("O_SYNC pwrite");
	}
	for (i = 0; i < 4; i++) {
		static const char *const dn[] = { "dprintf", "vdprintf", "__dprintf_chk",
						  "__vdprintf_chk" };
		/* stdio streams of their own, written inside libc */
		fd = prepare(dn[i]);
		lseek(fd, 9000, SEEK_SET);
		if (dprintf_by(i, fd, "%.100s", fill(dn[i], 100)) != 100)
			die(dn[i]);
		sync_fd(fd);
	}
	for (i = 0; i < 5; i++) {
		static const char *const an[] = { "aio_write", "aio_write64", "lio_listio",
						  "lio_listio64", "io_submit" };
		/* asynchronous writes, made round the library's wrappers */
		struct aiocb a = { 0 }, *l[1] = { &a };
		struct aiocb64 a64 = { 0 }, *l64[1] = { &a64 };
		const struct aiocb *w[1] = { &a };
		const struct aiocb64 *w64[1] = { &a64 };
		int ok = 0;

		fd = prepare(an[i]);
		a.aio_fildes = a64.aio_fildes = fd;
		a.aio_buf = a64.aio_buf = (void *)fill(an[i], 100);
		a.aio_nbytes = a64.aio_nbytes = 100;
		a.aio_offset = a64.aio_offset = 8000;
		a.aio_lio_opcode = a64.aio_lio_opcode = LIO_WRITE;
		if (i == 0 && !aio_write(&a)) {
			while (aio_error(&a) == EINPROGRESS)
				aio_suspend(w, 1, NULL);
			ok = aio_return(&a) == 100;
		} else if (i == 1 && !aio_write64(&a64)) {
			while (aio_error64(&a64) == EINPROGRESS)
				aio_suspend64(w64, 1, NULL);
			ok = aio_return64(&a64) == 100;
		} else if (i == 2) {
			ok = !lio_listio(LIO_WAIT, l, 1, NULL) && aio_return(&a) == 100;
		} else if (i == 3) {
			ok = !lio_listio64(LIO_WAIT, l64, 1, NULL) && aio_return64(&a64) == 100;
		} else if (i == 4) {
			/* libaio's io_submit, as a program linked with it calls it */
			int (*sub)(aio_context_t, long, struct iocb **) =
				(int (*)(aio_context_t, long, struct iocb **))dlsym(RTLD_DEFAULT,
										  "io_submit");
			struct iocb cb = { 0 }, *cbs[1] = { &cb };
			struct io_event ev;
			aio_context_t ctx = 0;

			cb.aio_lio_opcode = IOCB_CMD_PWRITE;
			cb.aio_fildes = (unsigned)fd;
			cb.aio_buf = (unsigned long)wbuf;
			cb.aio_nbytes = 100;
			cb.aio_offset = 8000;
			/* bare, no such name: the system call */
			ok = !syscall(SYS_io_setup, 1, &ctx) &&
			     (sub ? sub(ctx, 1, cbs) : syscall(SYS_io_submit, ctx, 1, cbs)) == 1 &&
			     syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) == 1 && ev.res == 100;
			if (ctx)
				syscall(SYS_io_destroy, ctx);
		}
		if (!ok)
			die(an[i]);
		sync_fd(fd);
	}
#undef CASE
#undef IOV1
}

/* ---- signal handlers and children made without atfork ---- */

static volatile sig_atomic_t in_lib, acted;
static int sig_fd = -1, sig_how;
static pthread_t main_thread;

/* Runs while the main thread is inside fsync (so, as the library sees it,
 * nested): a write and its acknowledgement. */
static void on_usr1(int sig)
{
	int e = errno;

	if (!in_lib || acted)
		return;
	if (pwrite(sig_fd, "HHHHHHHH", 8, 0) == 8) {
		if (sig_how == 0)
			fsync(sig_fd);
		else if (sig_how == 1)
			fdatasync(sig_fd);
		else if (sig_how == 2)
			sync();
		acted = 1;
	}
	errno = e;
}

static void *kicker(void *arg)
{
	struct timespec ts = { 0, 300 * 1000 };

	while (!acted) {
		nanosleep(&ts, NULL);
		pthread_kill(main_thread, SIGUSR1);
	}
	return NULL;
}

/* The main thread acknowledges "M%07d" at 0 through the log, again and
 * again, while a handler writes and syncs "HHHHHHHH" there: once it did,
 * that is the newest acknowledged content. */
static void handler_case(int how)
{
	struct sigaction sa;
	pthread_t k;
	char m[9];
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sig_fd = prepare("f");
	sig_how = how;
	main_thread = pthread_self();
	pthread_create(&k, NULL, kicker, NULL);
	for (i = 0; !acted && i < 100000; i++) {
		snprintf(m, sizeof(m), "M%07d", i);
		put(sig_fd, m, 8, 0);
		in_lib = 1;
		sync_fd(sig_fd);
		in_lib = 0;
	}
	pthread_join(k, NULL);
	if (!acted)
		die("the handler never ran inside fsync");
}

int main(int argc, char **argv)
{
	const char *c;
	int fd;

	if (argc == 4 && !strcmp(argv[1], "writer")) {
		fd = open(argv[2], O_WRONLY);
		if (fd < 0)
			die("writer open");
		put(fd, "BBBB", 4, atoll(argv[3]));
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "again")) {
		/* after the cut, started again without a recovery: what the
		 * program reads first (to READ/f), then newer bytes made
		 * durable (copied to EXP/f), and a clean exit */
		char path[4096], buf[64];
		ssize_t n;
		int out;

		snprintf(path, sizeof(path), "%s/f", argv[2]);
		fd = open(path, O_RDWR);
		if (fd < 0 || (n = pread(fd, buf, sizeof(buf), 0)) < 0)
			die("read again");
		snprintf(path, sizeof(path), "%s/f", argv[3]);
		out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || write(out, buf, (size_t)n) != n)
			die("the copy of what was read");
		close(out);
		put(fd, "NEWERNEWER", 10, 0);
		sync_fd(fd);
		{
			static char b2[65536];

			snprintf(path, sizeof(path), "%s/f", argv[4]);
			out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (out < 0 || (n = pread(fd, b2, sizeof(b2), 0)) < 0 ||
			    write(out, b2, (size_t)n) != n)
				die("the copy");
			close(out);
		}
		return 0;
	}
	if (argc != 4)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	c = argv[1];
	dir = argv[2];
	exp_dir = argv[3];
	if (!strcmp(c, "fork")) {
		/* a forked child writes B; the parent writes C after it (its
		 * look at the file then includes B's change), then fsyncs:
		 * bare, that fsync makes B durable too */
		pid_t pid;
		int st;

		fd = prepare("f");
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			put(fd, "BBBB", 4, 4096);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			die("child");
		put(fd, "CCCC", 4, 8192);
		sync_fd(fd);
	} else if (!strcmp(c, "spawn")) {
		/* the same with another libgc process, not a fork of this one */
		fd = prepare("f");
		spawn_writer("f", 4096);
		put(fd, "CCCC", 4, 8192);
		sync_fd(fd);
	} else if (!strcmp(c, "other")) {
		/* another process writes B; this one only fsyncs (PostgreSQL:
		 * backends write, the checkpointer fsyncs) */
		fd = prepare("f");
		spawn_writer("f", 4096);
		sync_fd(fd);
	} else if (!strcmp(c, "die")) {
		/* acknowledged through the log, then killed: its segment stays */
		fd = prepare("f");
		put(fd, "DDDD", 4, 0);
		sync_fd(fd);
		raise(SIGKILL);
	} else if (!strcmp(c, "stale")) {
		/* a plain load on a log whose segment was left by another */
		int i;
		char m[16];

		fd = prepare("f");
		for (i = 0; i < 20; i++) {
			snprintf(m, sizeof(m), "S%03d", i);
			put(fd, m, 4, (off_t)i * 512);
			sync_fd(fd);
		}
	} else if (!strcmp(c, "eio")) {
		/* a write acknowledged through the log; then the file's block
		 * fails every write while checkpoints run: its bytes must not
		 * be retired from the log unless they reached the file */
		struct timespec ts = { 2, 500 * 1000 * 1000 };
		int e;

		fd = prepare("f");
		put(fd, "WWWW", 4, 0);
		sync_fd(fd);
		fault(first_block(fd));
		put(fd, "XXXX", 4, 0); /* the next one, into the failing block */
		e = fsync(fd) ? errno : 0;
		printf("fsync after the fault: %s\n", e ? strerror(e) : "0");
		/* not acknowledged: its bytes may be either */
		if (e)
			alt = "WWWW";
		nanosleep(&ts, NULL); /* two checkpoints */
	} else if (!strcmp(c, "restart")) {
		/* records acknowledged through the log only: the harness then
		 * starts the program again before anyone recovers the log */
		int i;
		char m[16];

		fd = prepare("f");
		for (i = 0; i < 8; i++) {
			snprintf(m, sizeof(m), "R%03d", i);
			put(fd, m, 4, (off_t)i * 4);
			sync_fd(fd);
		}
	} else if (!strcmp(c, "walk")) {
		walk();
	} else if (!strcmp(c, "sig-fsync")) {
		handler_case(0);
	} else if (!strcmp(c, "sig-fdatasync")) {
		handler_case(1);
	} else if (!strcmp(c, "sig-sync")) {
		handler_case(2);
	} else if (!strcmp(c, "sig-odsync")) {
		/* the handler writes through an O_DSYNC descriptor the kernel
		 * keeps (run with LIBGC_OSYNC=keep) */
		char path[4096];

		snprintf(path, sizeof(path), "%s/f", dir);
		sig_how = 3;
		{
			struct sigaction sa;
			pthread_t k;
			char m[9];
			int i, d;

			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_usr1;
			sigaction(SIGUSR1, &sa, NULL);
			fd = prepare("f");
			d = open(path, O_WRONLY | O_DSYNC);
			if (d < 0)
				die("open O_DSYNC");
			sig_fd = d;
			main_thread = pthread_self();
			pthread_create(&k, NULL, kicker, NULL);
			for (i = 0; !acted && i < 100000; i++) {
				snprintf(m, sizeof(m), "M%07d", i);
				put(fd, m, 8, 0);
				in_lib = 1;
				sync_fd(fd);
				in_lib = 0;
			}
			pthread_join(k, NULL);
		}
	} else if (!strcmp(c, "vfork") || !strcmp(c, "_Fork")) {
		/* a child made without atfork handlers writes and fsyncs: its
		 * acknowledgement must stand against the parent's records */
		pid_t pid;
		int st;

		fd = prepare("f");
		put(fd, "MMMM", 4, 0);
		sync_fd(fd);
		pid = !strcmp(c, "vfork") ? vfork() : _Fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			if (pwrite(fd, "KKKK", 4, 0) != 4 || fsync(fd))
				_exit(1);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			die("child");
	} else {
		fprintf(stderr, "intentcut: unknown case %s\n", c);
		return 2;
	}
	ready();
	return 3;
}
