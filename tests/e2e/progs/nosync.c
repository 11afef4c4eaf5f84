// SPDX-License-Identifier: LGPL-2.1-or-later
/* nosync DIR [WORD]...: what a process does that loads the library and,
 * unless told, never syncs: buffered writes to /dev/null (60 KB, under the
 * dirty limiter's first look at a descriptor) and to a file, reads, a
 * pipe (and an ioctl on it), dup2, a fork whose child ends with _exit, and
 * a spawn of true(1).
 * Then, in the order given:
 *   stream      write 1 MB more to /dev/null, as dd would
 *   bigfile     write 1 MB to DIR/big.dat (the dirty limiter's slow path)
 *   age         wait 150 ms (a process makes its stats segment at a
 *               request 100 ms or more after its first)
 *   sync        write and fsync DIR/synced (the library sets itself up)
 *   syncs=N     N more fsyncs of it (the direct path, N requests)
 *   clearenv    clear the environment (before any sync: the library keeps
 *               the variables it started with)
 *   fds         print "fds=0,1,2,...": the descriptors open now
 *   maps        print "unwind=0|1": is libunwind mapped
 *   text        print "libtext=K of T": the KiB of the preloaded libgc.so's
 *               code that this process has mapped, of its T KiB
 *   zeroed      print "zeroed=K nohuge=N": the KiB of the anonymous mapping
 *               right after the preloaded libgc.so's last one (its zeroed
 *               data), and how many mappings refuse huge pages (smaps'
 *               VmFlags nh)
 *   closehigh   close 256-319, none of them opened: print "close_ebadf=N"
 *   dup2high    (after sync) dup2 DIR/synced onto 256-263 and fsync 20
 *               times through them: print "dup2_ok=N stray=B", B the bytes
 *               in the file beyond those written to it
 *   closefrom   closefrom(3), then DIR/synced again, written and synced
 *               5 times
 *   forks=N     fork N children one at a time, each ending at once with
 *               _exit: print "fork_faults child=C parent=P", the page
 *               faults of the N children together and the parent's own
 *               over the loop
 *   firstwrite  (first word only) before the rest, one write of 8 bytes
 *               to /dev/null, this process's first: print
 *               "firstwrite_faults=N", its page faults
 *   syncforks=N fork N children one at a time, each writing and fsyncing
 *               a file of its own and ending with exit (its exit handlers,
 *               the library's report among them): print
 *               "syncfork_faults child=C", the page faults of the N
 *               children together
 *   die         end with SIGKILL (no exit handler, no _exit)
 * Prints "nosync: done" last (before die). Exit 0 when every call did
 * what it should. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int bad;

static void fail(const char *what)
{
	fprintf(stderr, "nosync: %s: %s\n", what, strerror(errno));
	bad++;
}

static void work(const char *dir)
{
	char buf[4096], path[4096];
	int fd, p[2], i, st;
	pid_t pid;

	memset(buf, 'n', sizeof(buf));
	fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		fail("open /dev/null");
	for (i = 0; fd >= 0 && i < 15; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			fail("write /dev/null");
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/nosync.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, 100) != 100 || pread(fd, buf, 100, 0) != 100)
		fail("a file");
	if (fd >= 0 && dup2(fd, 100) != 100)
		fail("dup2");
	close(100);
	if (fd >= 0)
		close(fd);
	if (pipe(p) || write(p[1], "x", 1) != 1 || ioctl(p[0], FIONREAD, &i) || i != 1 ||
	    read(p[0], buf, 1) != 1)
		fail("pipe");
	close(p[0]);
	close(p[1]);
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || st)
		fail("fork");
	{
		char *const av[] = { "true", NULL };

		if (posix_spawnp(&pid, "true", NULL, NULL, av, environ) ||
		    waitpid(pid, &st, 0) != pid || st)
			fail("spawn");
	}
}

static void print_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int fds[1024], n = 0, i, j, t, me = d ? dirfd(d) : -1;
	struct dirent *e;

	while (d && (e = readdir(d)) && n < 1024)
		if (e->d_name[0] != '.' && atoi(e->d_name) != me)
			fds[n++] = atoi(e->d_name);
	if (d)
		closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && fds[j - 1] > fds[j]; j--)
			t = fds[j], fds[j] = fds[j - 1], fds[j - 1] = t;
	printf("fds=");
	for (i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", fds[i]);
	printf("\n");
}

static void print_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "libunwind") != NULL;
	if (f)
		fclose(f);
	printf("unwind=%d\n", found);
}

/* The library's executable mapping: its resident KiB (smaps' Rss: the
 * pages this process mapped, which the kernel does a window at a time). */
static void print_text(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[4096];
	long rss = 0, size = 0, v;
	int in = 0;

	while (f && fgets(line, sizeof(line), f)) {
		char perm[8], *name;

		if (sscanf(line, "%*x-%*x %7s", perm) == 1 && strchr(line, '-') < strchr(line, ' ')) {
			name = strrchr(line, '/');
			in = perm[2] == 'x' && name && !strcmp(name, "/libgc.so\n");
		} else if (in && sscanf(line, "Size: %ld", &v) == 1) {
			size += v;
		} else if (in && sscanf(line, "Rss: %ld", &v) == 1) {
			rss += v;
		}
	}
	if (f)
		fclose(f);
	printf("libtext=%ld of %ld\n", rss, size);
}

/* The library's zeroed data (.bss), which the loader maps anonymous right
 * after the file's last mapping; and the mappings made with
 * MADV_NOHUGEPAGE, which only the library makes here. */
static void print_zeroed(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[4096], name[4096];
	unsigned long lo, hi, prev_hi = 0, kib = 0;
	int prev_lib = 0, nohuge = 0;

	while (f && fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, name);

		if (n >= 2 && strchr(line, '-') < strchr(line, ' ')) {
			const char *base = n == 3 ? strrchr(name, '/') : NULL;

			if (n == 2 && prev_lib && lo == prev_hi)
				kib = (hi - lo) / 1024;
			prev_lib = base && !strcmp(base, "/libgc.so");
			prev_hi = hi;
		} else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " nh")) {
			nohuge++;
		}
	}
	if (f)
		fclose(f);
	printf("zeroed=%lu nohuge=%d\n", kib, nohuge);
}

/* 1 MB to @fd in 4 KiB writes, as dd would; closes it. */
static void write_mb(int fd, const char *what)
{
	char buf[4096];

	memset(buf, 'd', sizeof(buf));
	for (int k = 0; fd >= 0 && k < 256; k++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			fail(what);
	if (fd < 0 || close(fd))
		fail(what);
}

static long written;

int main(int argc, char **argv)
{
	static int synced = -1;
	char path[4096];
	int i;

	if (argc < 2)
		return 2;
	if (argc > 2 && !strcmp(argv[2], "firstwrite")) {
		struct rusage a, b;
		int fd = open("/dev/null", O_WRONLY);

		/* both structures written once before: a stack page the
		 * kernel first writes at the second call is not the write's */
		getrusage(RUSAGE_SELF, &b);
		getrusage(RUSAGE_SELF, &a);
		if (fd < 0 || write(fd, "firstwr\n", 8) != 8)
			fail("the first write");
		getrusage(RUSAGE_SELF, &b);
		printf("firstwrite_faults=%ld\n", (b.ru_minflt + b.ru_majflt) - (a.ru_minflt + a.ru_majflt));
		close(fd);
	}
	work(argv[1]);
	snprintf(path, sizeof(path), "%s/synced", argv[1]);
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "sync") || !strncmp(argv[i], "syncs=", 6)) {
			long n = argv[i][4] == 's' ? atol(argv[i] + 6) : 1;

			if (synced < 0)
				synced = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (synced < 0 || write(synced, "s", 1) != 1)
				fail("synced");
			else
				written++;
			for (long k = 0; synced >= 0 && k < n; k++)
				if (fsync(synced))
					fail("fsync");
		} else if (!strcmp(argv[i], "firstwrite")) {
			; /* done before the rest */
		} else if (!strcmp(argv[i], "stream")) {
			write_mb(open("/dev/null", O_WRONLY), "stream");
		} else if (!strcmp(argv[i], "bigfile")) {
			char big[4096];

			snprintf(big, sizeof(big), "%s/big.dat", argv[1]);
			write_mb(open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644), "bigfile");
		} else if (!strcmp(argv[i], "age")) {
			usleep(150 * 1000);
		} else if (!strcmp(argv[i], "clearenv")) {
			clearenv();
		} else if (!strcmp(argv[i], "fds")) {
			print_fds();
		} else if (!strcmp(argv[i], "maps")) {
			print_maps();
		} else if (!strcmp(argv[i], "text")) {
			print_text();
		} else if (!strcmp(argv[i], "zeroed")) {
			print_zeroed();
		} else if (!strcmp(argv[i], "closehigh")) {
			int n = 0;

			for (int fd = 256; fd < 320; fd++)
				n += close(fd) < 0 && errno == EBADF;
			printf("close_ebadf=%d\n", n);
		} else if (!strcmp(argv[i], "dup2high")) {
			struct stat st;
			int n = 0;

			for (int fd = 256; fd < 264; fd++)
				n += synced >= 0 && dup2(synced, fd) == fd;
			for (int k = 0; k < 20; k++)
				if (fsync(256 + k % 8))
					fail("fsync of a dup2 copy");
			if (fstat(synced, &st))
				fail("fstat");
			printf("dup2_ok=%d stray=%ld\n", n, (long)st.st_size - written);
		} else if (!strcmp(argv[i], "closefrom")) {
			closefrom(3);
			synced = open(path, O_WRONLY | O_APPEND);
			for (int k = 0; k < 5; k++)
				if (synced < 0 || write(synced, "c", 1) != 1 || fsync(synced))
					fail("after closefrom");
				else
					written++;
		} else if (!strncmp(argv[i], "forks=", 6)) {
			long n = atol(argv[i] + 6);
			struct rusage s0, s1, c0, c1;

			getrusage(RUSAGE_SELF, &s0);
			getrusage(RUSAGE_CHILDREN, &c0);
			for (long k = 0; k < n; k++) {
				pid_t p = fork();

				if (p == 0)
					_exit(0);
				if (p < 0 || waitpid(p, NULL, 0) != p)
					fail("fork");
			}
			getrusage(RUSAGE_SELF, &s1);
			getrusage(RUSAGE_CHILDREN, &c1);
			printf("fork_faults child=%ld parent=%ld\n",
			       (c1.ru_minflt + c1.ru_majflt) - (c0.ru_minflt + c0.ru_majflt),
			       (s1.ru_minflt + s1.ru_majflt) - (s0.ru_minflt + s0.ru_majflt));
		} else if (!strncmp(argv[i], "syncforks=", 10)) {
			long n = atol(argv[i] + 10);
			struct rusage c0, c1;
			int st;

			fflush(stdout);
			getrusage(RUSAGE_CHILDREN, &c0);
			for (long k = 0; k < n; k++) {
				pid_t p = fork();

				if (p == 0) {
					char own[4200];
					int fd;

					snprintf(own, sizeof(own), "%s/child%ld", argv[1], k);
					fd = open(own, O_WRONLY | O_CREAT | O_TRUNC, 0644);
					exit(fd < 0 || write(fd, "c", 1) != 1 || fsync(fd) || close(fd));
				}
				if (p < 0 || waitpid(p, &st, 0) != p || st)
					fail("a child's sync");
			}
			getrusage(RUSAGE_CHILDREN, &c1);
			printf("syncfork_faults child=%ld\n",
			       (c1.ru_minflt + c1.ru_majflt) - (c0.ru_minflt + c0.ru_majflt));
		} else if (!strcmp(argv[i], "die")) {
			printf("nosync: done\n");
			fflush(stdout);
			raise(SIGKILL);
		} else {
			fprintf(stderr, "nosync: unknown word %s\n", argv[i]);
			return 2;
		}
	}
	printf("nosync: done\n");
	return bad ? 1 : 0;
}
