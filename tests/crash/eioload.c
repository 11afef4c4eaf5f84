// SPDX-License-Identifier: LGPL-2.1-or-later
/* eioload: the programs of the injected-EIO suite (eio.sh): a concurrent
 * write+sync load that has a fault injected mid-run, a scripted sequence of
 * calls whose results are compared bare against libgc, and a spy-log check. */

/*
 * eioload prep FILE KIB
 *	create or truncate FILE, write KIB KiB, make it and its directory entry
 *	durable and commit the filesystem's journal (syncfs): later overwrites
 *	then change no allocation, and no journal commit is pending.
 * eioload extent FILE
 *	one line "OFFSET LENGTH" (bytes on the device) per extent of FILE.
 * eioload seq [-x CMD]... FILE OP...
 *	one thread runs OPs in order and prints "OP=RESULT" for each, on one
 *	line. Descriptors A-D are separate opens of FILE (separate open file
 *	descriptions), all opened before the first OP.
 *	  wX  pwrite 4 KiB at offset 0 of X   aX  append 4 KiB through X
 *	  fX  fsync(X)                        dX  fdatasync(X)
 *	  sX  syncfs(X)
 *	  oX  close X and open it again       xK  run the K-th -x command
 *	  OP+OP+...  these calls at once, one thread each (a barrier starts them)
 * eioload run [-t N | -p N] [-S] [-m fsync|fdatasync] [-w overwrite|append]
 *	       [-b ROUNDS] [-a ROUNDS] [-x CMD] FILE
 *	N threads (or processes) each loop: write 4 KiB, sync, record the
 *	result. Once every worker has done -b rounds the -x command runs (the
 *	fault); then each worker does -a more rounds. -S: every worker uses one
 *	descriptor (threads) or one inherited open file description (processes);
 *	otherwise each worker opens FILE itself. Prints a line per worker and a
 *	total line (see report()).
 * eioload waitfail [-p] [-x CMD] [-d MS] DIR dir|file|over
 *	two threads, each with its own entry in DIR: B changes its entry (dir:
 *	renames it, and fsyncs DIR; file: appends 4 KiB, and fdatasyncs the
 *	file; over: overwrites the first 4 KiB of its 64 KiB file, written and
 *	synced before, and fdatasyncs it: a cache flush and nothing to log on
 *	ext4 and xfs) at once, A does the same -d MS later (default 8), both going
 *	into one journal commit when B's real call is slow to reach the
 *	kernel (-p: two processes instead of threads, which share commits
 *	through the shared segment). The -x command (the fault) runs after the entries are made
 *	durable. Prints "B=RESULT A=RESULT" (RESULT of A's change is shown as
 *	rename=ERR or write=ERR when that fails first).
 * eioload check LOG
 *	reads a spy log and prints key=value counts for what the shared checker
 *	does not look at: failed program calls whose errno no failed real call
 *	on the same inode inside their window returned, nor a real call of the
 *	filesystem that failed with it (EIO, EROFS) while they were held
 *	("unexplained"), and
 *	the failed real calls, with EIO among them.
 *
 * Commands run through /bin/sh with the preload and library variables
 * removed from their environment, so the injector is never interposed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/e2e/spy.h"

#define BLK 4096
#define MAX_WORKERS 32
#define MAX_ROUNDS 4096
#define MAX_CMDS 8
#define MAX_FDS 4

extern char **environ;

static void die(const char *what)
{
	fprintf(stderr, "eioload: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: eioload prep FILE KIB\n"
		"       eioload extent FILE\n"
		"       eioload seq [-x CMD]... FILE OP...\n"
		"       eioload run [-t N | -p N] [-S] [-m fsync|fdatasync] [-w overwrite|append]\n"
		"                   [-b ROUNDS] [-a ROUNDS] [-x CMD] FILE\n"
		"       eioload waitfail [-p] [-x CMD] [-d MS] DIR dir|file|over\n"
		"       eioload check LOG\n");
	exit(2);
}

static const char *ename(int e)
{
	const char *s = e ? strerrorname_np(e) : "0";

	return s ? s : "E?";
}

static long num(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		usage();
	return v;
}

/* The injector must see neither the library nor the spies: it would be
 * counted, and could itself be grouped with the load's requests. */
static int run_cmd(const char *cmd)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	char **envp;
	size_t n = 0, k = 0;
	pid_t pid;
	int st, err;

	for (char **e = environ; *e; e++)
		n++;
	envp = calloc(n + 1, sizeof(*envp));
	if (!envp)
		die("calloc");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "LIBGC_", 6) &&
		    strncmp(*e, "SPY_", 4))
			envp[k++] = *e;
	err = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, envp);
	free(envp);
	if (err) {
		errno = err;
		die("posix_spawn /bin/sh");
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "eioload: command failed: %s\n", cmd);
		exit(2);
	}
	return 0;
}

static void fill(char *buf, unsigned int tag)
{
	for (size_t i = 0; i < BLK; i++)
		buf[i] = (char)('a' + (tag + i) % 26);
}

/* ---- prep, extent ------------------------------------------------------ */

static int cmd_prep(int argc, char **argv)
{
	char buf[BLK], *dir, *slash;
	long kib, i;
	int fd, dfd;

	if (argc != 3)
		usage();
	kib = num(argv[2], 4, 1 << 20);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(argv[1]);
	/* btrfs writes every change elsewhere (copy-on-write): a fault armed
	 * on a block's place on disk would never be hit again. No-COW files
	 * are overwritten in place, as on ext4 and xfs. Empty files only. */
	{
		struct statfs sf;
		int fl;

		if (fstatfs(fd, &sf) == 0 && sf.f_type == 0x9123683E &&
		    ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
			fl |= FS_NOCOW_FL;
			if (ioctl(fd, FS_IOC_SETFLAGS, &fl) < 0)
				die("FS_IOC_SETFLAGS nocow");
		}
	}
	for (i = 0; i < (kib + 3) / 4; i++) {
		fill(buf, (unsigned int)i);
		if (pwrite(fd, buf, BLK, (off_t)i * BLK) != BLK)
			die("pwrite");
	}
	if (fsync(fd) < 0)
		die("fsync");
	dir = strdup(argv[1]);
	if (!dir)
		die("strdup");
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		die("fsync directory");
	/* Commit whatever the journal still holds, so that no commit of
	 * earlier work is due during the next few seconds of the test. The
	 * filesystem reports a writeback error to the first syncfs of each
	 * open file after it: the work is done all the same, ask again. */
	if (syncfs(fd) < 0 && (errno != EIO || syncfs(fd) < 0))
		die("syncfs");	/* EIO once: an earlier test's writeback error */
	close(dfd);
	close(fd);
	free(dir);
	return 0;
}

static int cmd_extent(int argc, char **argv)
{
	struct fiemap *fm;
	unsigned int n = 64;
	int fd;

	if (argc != 2)
		usage();
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(argv[1]);
	fm = calloc(1, sizeof(*fm) + n * sizeof(struct fiemap_extent));
	if (!fm)
		die("calloc");
	fm->fm_start = 0;
	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = n;
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
		die("FIEMAP");
	for (unsigned int i = 0; i < fm->fm_mapped_extents; i++)
		printf("%llu %llu\n", (unsigned long long)fm->fm_extents[i].fe_physical,
		       (unsigned long long)fm->fm_extents[i].fe_length);
	free(fm);
	close(fd);
	return 0;
}

/* ---- seq --------------------------------------------------------------- */

static const char *g_file;
static int g_fds[MAX_FDS];

static int fd_of(char name)
{
	if (name < 'A' || name >= 'A' + MAX_FDS) {
		fprintf(stderr, "eioload: descriptor %c: use A-%c\n", name, 'A' + MAX_FDS - 1);
		exit(2);
	}
	return name - 'A';
}

static bool g_append;

static int open_file(void)
{
	int fd = open(g_file, O_RDWR | (g_append ? O_APPEND : 0) | O_CLOEXEC);

	if (fd < 0)
		die(g_file);
	return fd;
}

struct seq_op {
	const char *so_text;
	char so_res[24];
	pthread_barrier_t *so_bar;
};

/* One call of a sequence; its result goes to so_res. */
static void seq_do(struct seq_op *op)
{
	const char *s = op->so_text;
	char buf[BLK];
	struct stat st;
	long r = 0;
	int fd, i;

	if (strlen(s) != 2) {
		fprintf(stderr, "eioload: bad op '%s'\n", s);
		exit(2);
	}
	if (op->so_bar)
		pthread_barrier_wait(op->so_bar);
	i = fd_of(s[1]);
	fd = g_fds[i];
	fill(buf, (unsigned int)s[1]);
	switch (s[0]) {
	case 'w':
		r = pwrite(fd, buf, BLK, 0);
		break;
	case 'a':
		r = fstat(fd, &st) < 0 ? -1 : pwrite(fd, buf, BLK, st.st_size);
		break;
	case 'f':
		r = fsync(fd);
		break;
	case 'd':
		r = fdatasync(fd);
		break;
	case 's':
		r = syncfs(fd);
		break;
	case 'o':
		close(fd);
		g_fds[i] = open_file();
		break;
	default:
		fprintf(stderr, "eioload: bad op '%s'\n", s);
		exit(2);
	}
	if (r < 0)
		snprintf(op->so_res, sizeof(op->so_res), "%s", ename(errno));
	else
		snprintf(op->so_res, sizeof(op->so_res), "%ld", r);
}

static void *seq_thread(void *arg)
{
	seq_do(arg);
	return NULL;
}

/* One step: a single op, or OP+OP+... run at once. */
static void seq_step(char *step, const char *const *cmds, int ncmds)
{
	struct seq_op ops[MAX_FDS * 4];
	pthread_t th[MAX_FDS * 4];
	pthread_barrier_t bar;
	char *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(step, "+", &save); tok; tok = strtok_r(NULL, "+", &save)) {
		if (n == (int)(sizeof(ops) / sizeof(ops[0])))
			usage();
		memset(&ops[n], 0, sizeof(ops[n]));
		ops[n++].so_text = tok;
	}
	for (int i = 0; n > 1 && i < n; i++)
		if (ops[i].so_text[0] == 'x')
			usage();	/* a command is never run concurrently */
	if (n == 1 && ops[0].so_text[0] == 'x') {
		int k = (int)num(ops[0].so_text + 1, 0, ncmds - 1);

		run_cmd(cmds[k]);
		printf("%s ", ops[0].so_text);
		return;
	}
	if (n == 1) {
		seq_do(&ops[0]);
	} else {
		pthread_barrier_init(&bar, NULL, (unsigned int)n);
		for (int i = 0; i < n; i++) {
			ops[i].so_bar = &bar;
			if (pthread_create(&th[i], NULL, seq_thread, &ops[i]))
				die("pthread_create");
		}
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
	}
	for (int i = 0; i < n; i++)
		printf("%s%s=%s", i ? "+" : "", ops[i].so_text, ops[i].so_res);
	printf(" ");
}

static int cmd_seq(int argc, char **argv)
{
	const char *cmds[MAX_CMDS];
	int ncmds = 0, c;

	while ((c = getopt(argc, argv, "+x:")) != -1) {
		if (c != 'x' || ncmds == MAX_CMDS)
			usage();
		cmds[ncmds++] = optarg;
	}
	if (optind + 2 > argc)
		usage();
	g_file = argv[optind++];
	for (int i = 0; i < MAX_FDS; i++)
		g_fds[i] = open_file();
	for (; optind < argc; optind++)
		seq_step(argv[optind], cmds, ncmds);
	printf("\n");
	return 0;
}

/* ---- waitfail ----------------------------------------------------------- */

static const char *g_wf_dir;
static bool g_wf_file, g_wf_over;
static long g_wf_delay_ms = 8;

struct wf_side {
	char w_name;		/* 'a' or 'b' */
	int w_fd;		/* directory (dir) or the entry (file) */
	char w_res[32];
};

/* One change of the side's entry, then its sync. */
static void *wf_side_run(void *arg)
{
	struct wf_side *w = arg;
	char from[4096], to[4096], buf[BLK];

	if (w->w_name == 'a' && g_wf_delay_ms) {
		struct timespec ts = { g_wf_delay_ms / 1000, (g_wf_delay_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (g_wf_file) {
		fill(buf, (unsigned int)w->w_name);
		if ((g_wf_over ? pwrite(w->w_fd, buf, BLK, 0) : write(w->w_fd, buf, BLK)) != BLK) {
			snprintf(w->w_res, sizeof(w->w_res), "write=%s", ename(errno));
			return NULL;
		}
	} else {
		snprintf(from, sizeof(from), "%s/%c.0", g_wf_dir, w->w_name);
		snprintf(to, sizeof(to), "%s/%c.1", g_wf_dir, w->w_name);
		if (rename(from, to) < 0) {
			snprintf(w->w_res, sizeof(w->w_res), "rename=%s", ename(errno));
			return NULL;
		}
	}
	snprintf(w->w_res, sizeof(w->w_res), "%s",
		 ename((g_wf_file ? fdatasync(w->w_fd) : fsync(w->w_fd)) < 0 ? errno : 0));
	return NULL;
}

static int cmd_waitfail(int argc, char **argv)
{
	struct wf_side side[2] = { { .w_name = 'b' }, { .w_name = 'a' } }, *sh;
	const char *cmd = NULL;
	pthread_t th[2];
	pid_t pid[2];
	bool procs = false;
	int c, dfd;

	while ((c = getopt(argc, argv, "+px:d:")) != -1) {
		if (c == 'p')
			procs = true;
		else if (c == 'x')
			cmd = optarg;
		else if (c == 'd')
			g_wf_delay_ms = num(optarg, 0, 10000);
		else
			usage();
	}
	if (optind + 2 != argc || (strcmp(argv[optind + 1], "dir") &&
				   strcmp(argv[optind + 1], "file") &&
				   strcmp(argv[optind + 1], "over")))
		usage();
	g_wf_dir = argv[optind];
	g_wf_over = !strcmp(argv[optind + 1], "over");
	g_wf_file = g_wf_over || !strcmp(argv[optind + 1], "file");
	if (mkdir(g_wf_dir, 0755) < 0 && errno != EEXIST)
		die(g_wf_dir);
	dfd = open(g_wf_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		die(g_wf_dir);
	for (int i = 0; i < 2; i++) {
		char path[4096];
		int fd;

		snprintf(path, sizeof(path), "%s/%c%s", g_wf_dir, side[i].w_name,
			 g_wf_file ? "" : ".0");
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC |
				(g_wf_file && !g_wf_over ? O_APPEND : 0), 0644);
		if (fd < 0)
			die(path);
		for (int b = 0; g_wf_over && b < 16; b++) {
			char blk[BLK];

			fill(blk, (unsigned int)b);
			if (pwrite(fd, blk, BLK, (off_t)b * BLK) != BLK)
				die(path);
		}
		if (fsync(fd) < 0)
			die(path);
		if (g_wf_file) {
			side[i].w_fd = fd;
		} else {
			close(fd);
			if ((side[i].w_fd = open(g_wf_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
				die(g_wf_dir);
		}
	}
	/* The entries and the directory durable, the journal committed: the
	 * fault then hits the commit of the two changes. */
	if (fsync(dfd) < 0 || syncfs(dfd) < 0)
		die("fsync/syncfs");
	if (cmd)
		run_cmd(cmd);
	/* the results in a shared mapping, so that forked sides fill it too */
	sh = mmap(NULL, sizeof(side), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	memcpy(sh, side, sizeof(side));
	fflush(NULL);
	for (int i = 0; i < 2; i++) {
		if (!procs) {
			if (pthread_create(&th[i], NULL, wf_side_run, &sh[i]))
				die("pthread_create");
		} else if ((pid[i] = fork()) < 0) {
			die("fork");
		} else if (!pid[i]) {
			wf_side_run(&sh[i]);
			exit(0);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (!procs)
			pthread_join(th[i], NULL);
		else
			while (waitpid(pid[i], NULL, 0) < 0 && errno == EINTR)
				;
	}
	printf("B=%s A=%s\n", sh[0].w_res, sh[1].w_res);
	return 0;
}

/* ---- run --------------------------------------------------------------- */

/* Lives in a shared mapping so that forked workers fill it too. */
struct run_state {
	atomic_int rs_min_done;		/* workers that finished the rounds before */
	atomic_int rs_injected;		/* the fault command has returned */
	atomic_int rs_wfail;		/* failed writes */
	struct worker {
		int w_n;		/* requests made */
		int w_inject_at;	/* first request started after the fault */
		int w_err[MAX_ROUNDS];	/* 0 or errno of each sync request */
	} rs_w[MAX_WORKERS];
};

static struct run_state *g_rs;
static int g_nworkers, g_before = 20, g_after = 40, g_shared_fd = -1;
static bool g_datasync;

static void worker(int id)
{
	struct worker *w = &g_rs->rs_w[id];
	int fd = g_shared_fd >= 0 ? g_shared_fd : open_file();
	int after = 0, counted = 0;
	char buf[BLK];

	fill(buf, (unsigned int)id);
	while (w->w_n < MAX_ROUNDS) {
		ssize_t wr;
		int r;

		if (atomic_load(&g_rs->rs_injected)) {
			if (w->w_inject_at < 0)
				w->w_inject_at = w->w_n;
			if (after++ == g_after)
				break;
		}
		wr = g_append ? write(fd, buf, BLK) : pwrite(fd, buf, BLK, (off_t)id * BLK);
		if (wr != BLK)
			atomic_fetch_add(&g_rs->rs_wfail, 1);
		r = g_datasync ? fdatasync(fd) : fsync(fd);
		w->w_err[w->w_n++] = r < 0 ? errno : 0;
		if (w->w_n == g_before && !counted) {
			counted = 1;
			atomic_fetch_add(&g_rs->rs_min_done, 1);
		}
	}
	if (!counted)
		atomic_fetch_add(&g_rs->rs_min_done, 1);
}

static void *worker_thread(void *arg)
{
	worker((int)(intptr_t)arg);
	return NULL;
}

/* Run-length form of a worker's results: "0*12,EIO,0*30". */
static void print_runs(const struct worker *w)
{
	int i = 0;

	if (!w->w_n)
		printf("-");
	while (i < w->w_n) {
		int j = i;

		while (j < w->w_n && w->w_err[j] == w->w_err[i])
			j++;
		printf("%s%s", i ? "," : "", ename(w->w_err[i]));
		if (j - i > 1)
			printf("*%d", j - i);
		i = j;
	}
}

/* One line per worker, then the sums:
 *   worker=I n= ok= eio= erofs= other= inject_at= last= seq=RUNS
 *   total requests= ok= eio= erofs= other= wfail= */
static void report(void)
{
	long tot = 0, ok = 0, eio = 0, erofs = 0, other = 0;

	for (int id = 0; id < g_nworkers; id++) {
		const struct worker *w = &g_rs->rs_w[id];
		int c_ok = 0, c_eio = 0, c_erofs = 0, c_other = 0;

		for (int i = 0; i < w->w_n; i++) {
			int e = w->w_err[i];

			if (!e)
				c_ok++;
			else if (e == EIO)
				c_eio++;
			else if (e == EROFS)
				c_erofs++;
			else
				c_other++;
		}
		printf("worker=%d n=%d ok=%d eio=%d erofs=%d other=%d inject_at=%d last=%s seq=",
		       id, w->w_n, c_ok, c_eio, c_erofs, c_other, w->w_inject_at,
		       w->w_n ? ename(w->w_err[w->w_n - 1]) : "-");
		print_runs(w);
		printf("\n");
		tot += w->w_n;
		ok += c_ok;
		eio += c_eio;
		erofs += c_erofs;
		other += c_other;
	}
	printf("total requests=%ld ok=%ld eio=%ld erofs=%ld other=%ld wfail=%d\n",
	       tot, ok, eio, erofs, other, atomic_load(&g_rs->rs_wfail));
}

static int cmd_run(int argc, char **argv)
{
	const char *cmd = NULL;
	pthread_t th[MAX_WORKERS];
	pid_t pids[MAX_WORKERS];
	bool procs = false, shared = false;
	int c, status = 0;

	g_nworkers = 8;
	while ((c = getopt(argc, argv, "t:p:Sm:w:b:a:x:")) != -1) {
		switch (c) {
		case 't':
		case 'p':
			procs = c == 'p';
			g_nworkers = (int)num(optarg, 1, MAX_WORKERS);
			break;
		case 'S':
			shared = true;
			break;
		case 'm':
			if (strcmp(optarg, "fsync") && strcmp(optarg, "fdatasync"))
				usage();
			g_datasync = !strcmp(optarg, "fdatasync");
			break;
		case 'w':
			if (strcmp(optarg, "overwrite") && strcmp(optarg, "append"))
				usage();
			g_append = !strcmp(optarg, "append");
			break;
		case 'b':
			g_before = (int)num(optarg, 1, MAX_ROUNDS / 2);
			break;
		case 'a':
			g_after = (int)num(optarg, 1, MAX_ROUNDS / 2);
			break;
		case 'x':
			cmd = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	g_file = argv[optind];
	g_rs = mmap(NULL, sizeof(*g_rs), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (g_rs == MAP_FAILED)
		die("mmap");
	for (int i = 0; i < g_nworkers; i++)
		g_rs->rs_w[i].w_inject_at = -1;
	if (shared) {
		g_shared_fd = open(g_file, O_RDWR | (g_append ? O_APPEND : 0) | O_CLOEXEC);
		if (g_shared_fd < 0)
			die(g_file);
	} else if (g_append) {
		/* Each worker's own description appends too. */
		int fd = open(g_file, O_RDWR | O_APPEND | O_CLOEXEC);

		if (fd < 0)
			die(g_file);
		close(fd);
	}
	fflush(NULL);
	for (intptr_t i = 0; i < g_nworkers; i++) {
		if (procs) {
			pids[i] = fork();
			if (pids[i] < 0)
				die("fork");
			if (!pids[i]) {
				worker((int)i);
				exit(0);	/* exit, not _exit: the library reports at exit */
			}
		} else if (pthread_create(&th[i], NULL, worker_thread, (void *)i)) {
			die("pthread_create");
		}
	}
	while (atomic_load(&g_rs->rs_min_done) < g_nworkers) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	if (cmd)
		run_cmd(cmd);
	atomic_store(&g_rs->rs_injected, 1);
	for (int i = 0; i < g_nworkers; i++) {
		if (procs) {
			int st;

			if (waitpid(pids[i], &st, 0) < 0)
				die("waitpid");
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				status = 1;
		} else {
			pthread_join(th[i], NULL);
		}
	}
	report();
	return status;
}

/* ---- check ------------------------------------------------------------- */

/* For every failed program sync: is there a real call on the same inode,
 * nested in its window, that failed with the same errno? The shared checker
 * asks this for EIO only and accepts any errno. */
static int cmd_check(int argc, char **argv)
{
	struct spy_rec *r;
	size_t n = 0, cap = 0, prog_fail = 0, unexplained = 0, real_fail = 0, real_eio = 0;
	FILE *f;

	if (argc != 2)
		usage();
	f = fopen(argv[1], "re");
	if (!f)
		die(argv[1]);
	r = NULL;
	for (;;) {
		struct spy_rec x;

		if (fread(&x, sizeof(x), 1, f) != 1)
			break;
		if (x.r_magic != SPY_MAGIC)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			r = realloc(r, cap * sizeof(*r));
			if (!r)
				die("realloc");
		}
		r[n++] = x;
	}
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		const struct spy_rec *p = &r[i];
		bool found = false;

		if (p->r_role == SPY_REAL && p->r_ret < 0) {
			real_fail++;
			real_eio += p->r_errno == EIO;
		}
		if (p->r_role != SPY_PROG || p->r_ret >= 0 ||
		    (p->r_kind != SPY_FSYNC && p->r_kind != SPY_FDATASYNC))
			continue;
		prog_fail++;
		for (size_t j = 0; j < n && !found; j++) {
			const struct spy_rec *q = &r[j];

			/* a failed real call on the inode inside its window,
			 * or a failure of its filesystem (EIO, EROFS) that
			 * ended while the library held it */
			found = q->r_role == SPY_REAL && q->r_ret < 0 &&
				q->r_errno == p->r_errno && q->r_dev == p->r_dev &&
				q->r_end_ns <= p->r_end_ns &&
				((q->r_ino == p->r_ino && q->r_start_ns >= p->r_start_ns) ||
				 ((q->r_errno == EIO || q->r_errno == EROFS) &&
				  q->r_end_ns + 1000000 >= p->r_start_ns));
		}
		if (!found) {
			unexplained++;
			if (unexplained <= 10)
				printf("# unexplained: pid=%d tid=%d fd=%d %s -> %s\n", p->r_pid,
				       p->r_tid, p->r_fd,
				       p->r_kind == SPY_FSYNC ? "fsync" : "fdatasync",
				       ename(p->r_errno));
		}
	}
	printf("records=%zu real_fail=%zu real_eio=%zu prog_fail=%zu unexplained=%zu\n", n,
	       real_fail, real_eio, prog_fail, unexplained);
	free(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	signal(SIGPIPE, SIG_DFL);
	if (!strcmp(argv[1], "prep"))
		return cmd_prep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "extent"))
		return cmd_extent(argc - 1, argv + 1);
	if (!strcmp(argv[1], "seq"))
		return cmd_seq(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "waitfail"))
		return cmd_waitfail(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	usage();
	return 2;
}
