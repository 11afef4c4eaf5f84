// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log, library side (journal/intent.h, DESIGN.md "Intent log"):
 * scope and configuration, what the write family wrote to files in scope,
 * the log request (records under the log lock, then the domain's grouped
 * fdatasync of the log inode), the real path with its RETIRE, the shared
 * control segment, the checkpoint thread, and fork and exit. */
#include "journal/fs.h"
#include "journal/intent.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/busguard.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/intent_fmt.h"
#include "journal/intent_log.h"
#include "journal/intent_shm.h"
#include "journal/txn.h"

GC_START int gc_intent_on;

#define GI_DIRS 8
#define GI_FILES 1024
#define GI_FDS 4096
#define GI_RANGES 16
/* ---- this process's view ---- */

struct gi_range {
	uint64_t lo, hi;
	uint64_t stamp;		/* f_wseq of its newest write */
};

struct gi_file {
	uint64_t f_dev, f_ino;
	struct gi_fid f_fid;
	char f_path[GI_PATH_MAX];
	uint16_t f_plen;
	int f_rfd;		/* our read-only descriptor, -1 until needed */
	uint64_t f_rfd_ino;
	pthread_mutex_t f_lock;	/* under the log lock when both are held */
	bool f_synced;		/* a real sync made its inode and name durable */
	bool f_mapped;		/* writable shared mapping: never logged */
	uint32_t f_lost;	/* [atomic] bumped by each write not seen exactly */
	uint32_t f_lost_ok;	/* f_lost a real call covered: lost iff they differ */
	uint32_t f_inflight;	/* [atomic] writes between gc_intent_pos and _wrote */
	bool f_append;		/* appends since f_base */
	uint64_t f_app_stamp;	/* f_wseq of the newest append */
	uint64_t f_wseq;	/* bumped by each write noted */
	uint32_t f_shf;		/* a hint: its row in the segment's file table + 1 */
	uint64_t f_base;	/* size at the last record or real sync */
	int f_nr;
	struct gi_range f_r[GI_RANGES];
	bool f_seen;		/* f_ctime, f_size: what libgc last saw */
	struct timespec f_ctime;
	uint64_t f_size;
	uint32_t f_bucket;	/* its write counts (gi_wb_of) */
	bool f_base_ok;		/* f_foreign holds */
	uint64_t f_foreign;	/* other writers' writes, counted, all made
				 * durable (by a real call) or logged */
};

struct gi_fdent {
	uint64_t e_dev, e_ino;
	int32_t e_file;		/* index + 1; 0: not in scope */
	uint32_t e_pad;
};

enum { GI_UNATTACHED, GI_OK, GI_OFF };

/* The log as one holder sees it: its descriptions (the OFD lock belongs
 * to the control segment's) and the segment mapped. The process's own
 * (gi.v), or one made for a single call where no lock of the process may
 * be taken (view_open). */
struct gi_view {
	struct gi_shm *v_shm;
	int v_logfd, v_ctlfd;
	uint64_t v_log_dev, v_log_ino;
	uint8_t v_id[16];	/* the log's id, from its header */
};

static struct {
	char dirs[GI_DIRS][GI_PATH_MAX];
	size_t dlen[GI_DIRS];
	int ndirs;
	char log[GI_PATH_MAX];
	uint64_t max;		/* bytes per request through the log */
	unsigned ckpt_ms;	/* the checkpoint's period */
	pthread_once_t once;
	int scope_ready;	/* [atomic] dirfd[] and dirdev[] set */
	int dirfd[GI_DIRS];	/* opened before any record: syncfs sees later errors */
	uint64_t dirdev[GI_DIRS];

	pthread_mutex_t mu;	/* the log lock's in-process half; then the OFD lock */
	int state;
	pid_t pid;
	struct gi_view v;	/* [mu] this process's, once attached */
	int slot;		/* [mu] its member slot in the segment */
	uint8_t *buf;		/* [the log lock] records are built here */
	size_t bufsz;
	bool warned;

	pthread_mutex_t ck_mu;
	pthread_cond_t ck_cv;
	bool ck_started, ck_kick;
	uint64_t ck_last;

	pthread_mutex_t files_mu;
	int nfiles;
} gi = {
	.once = PTHREAD_ONCE_INIT,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.ck_mu = PTHREAD_MUTEX_INITIALIZER,
	.ck_cv = PTHREAD_COND_INITIALIZER,
	.files_mu = PTHREAD_MUTEX_INITIALIZER,
	.v = { .v_logfd = -1, .v_ctlfd = -1 },
};
/* Mapped with the first file tracked (1.7 MiB, never a huge page): in the
 * zeroed data it made the library's mapping there large enough to hold a
 * transparent huge page (test_startup: zeroed_data_too_small_for_a_huge_page).
 * Set once, under files_mu, before gi.nfiles counts any entry: every entry
 * read (below gi.nfiles, or named by a descriptor's or a write's entry
 * made since) is in it. */
static struct gi_file *gi_files;
static struct gi_fdent gi_fds[GI_FDS] GC_LARGE;

/* ---- write counts, shared by every process of the user ----
 *
 * A sync served through the log covers the bytes this process noted. Bare,
 * it would cover every byte written to the file before it began, by any
 * process (a forked child, PostgreSQL's backends). So each write to a
 * regular file, in every libgc process with LIBGC_INTENT set, is counted
 * in a bucket of (device, inode) before it is made. A sync may use the log
 * only if the writes counted in its file's bucket by others are the ones
 * its last real call covered (f_foreign); otherwise it makes the real call.
 * A real call covers them only if each had returned before it began: each
 * process has a slot where its writes in flight are counted, held by an
 * OFD write lock on the slot's byte of the segment file, so that the
 * writes of a process that died in the middle of one are known gone (the
 * kernel dropped its lock), not forever in flight. This process's own
 * share of each bucket (gi_own_start) changes with the shared count under
 * gi_cnt_mu, so that a reader holding it sees both or neither. Collisions
 * only ever send a sync to a real call. Untrusted like every segment: a
 * wrong count can only do the same. */
#define GI_WB 8192
#define GI_WSLOTS 256
#define GI_WSLOT_LOCK 4096 /* byte of slot i's lock: GI_WSLOT_LOCK + i */
#define GI_WB_MAGIC 0x32544e4354434749ULL /* "IGCTCNT2" */
struct gi_wslot {
	uint32_t s_own;		/* [atomic] writes in flight, counted as its own */
	uint32_t s_anon;	/* [atomic] the others (nested, children without atfork) */
	int32_t s_pid;		/* for the curious: liveness is the lock */
	uint32_t s_pad[13];
};
struct gi_wseg {
	uint64_t w_magic;
	uint32_t w_version, w_size;
	uint32_t w_overflow;	/* [atomic] in flight in processes without a slot */
	uint32_t w_pad[11];
	struct gi_wslot w_s[GI_WSLOTS];
	uint64_t w_start[GI_WB]; /* [atomic] writes begun, per bucket */
};
static struct gi_wseg *gi_w;	/* [atomic] mapped once, never unmapped */
static int gi_wfd = -1;		/* its description, holding our slot's lock */
static int gi_wslot = -1;	/* our slot (-1: none) */
static uint64_t gi_own_start[GI_WB] GC_LARGE; /* [gi_cnt_mu] */
#define GI_CNT_LOCKS 16
static pthread_mutex_t gi_cnt_mu[GI_CNT_LOCKS] = {
	[0 ... GI_CNT_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER
};

static uint32_t gi_wb_of(uint64_t dev, uint64_t ino)
{
	uint64_t x = dev * 0x9e3779b97f4a7c15ULL ^ ino;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (uint32_t)(x & (GI_WB - 1));
}

static void wseg_gone(void *addr)
{
	/* a truncated segment reads as zeros: counts that never match */
}

static int move_high(int fd);

static int wslot_lock(int fd, int i, short type, int cmd)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = GI_WSLOT_LOCK + i, .l_len = 1 };

	if (syscall(SYS_fcntl, fd, cmd, &fl) < 0)
		return -errno;
	return cmd == F_OFD_GETLK ? fl.l_type != F_UNLCK : 0;
}

/* A slot of our own through description @fd: the first one no live
 * process holds, its counts of a dead holder cleared. -1: none free. */
static int wslot_take(struct gi_wseg *w, int fd)
{
	int i;

	for (i = 0; i < GI_WSLOTS; i++)
		if (wslot_lock(fd, i, F_WRLCK, F_OFD_SETLK) == 0) {
			__atomic_store_n(&w->w_s[i].s_own, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&w->w_s[i].s_anon, 0, __ATOMIC_SEQ_CST);
			w->w_s[i].s_pid = (int32_t)syscall(SYS_getpid);
			return i;
		}
	return -1;
}

/* The user's write-count segment, mapped on first use with raw calls and
 * no lock (a child made without atfork counts too). NULL: none here; then
 * nothing of this process is served through the log. */
static struct gi_wseg *wseg(void)
{
	struct gi_wseg *w = __atomic_load_n(&gi_w, __ATOMIC_ACQUIRE), *none = NULL;
	char path[96];
	struct stat st;
	int fd, slot;

	if (w)
		return w;
	snprintf(path, sizeof(path), "/dev/shm/libgc-intent-w2-%u", (unsigned)geteuid());
	fd = move_high(gi_sys_open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		gi_sys_close(fd);
		return NULL;
	}
	if (st.st_size != 0 && st.st_size != (off_t)sizeof(*w)) {
		/* another layout: made anew when no writer of it lives */
		for (slot = 0; slot < GI_WSLOTS && wslot_lock(fd, slot, F_RDLCK, F_OFD_GETLK) == 0;
		     slot++)
			;
		if (slot == GI_WSLOTS && syscall(SYS_ftruncate, fd, 0L) == 0)
			st.st_size = 0;
	}
	if ((st.st_size != 0 && st.st_size != (off_t)sizeof(*w)) ||
	    (st.st_size == 0 && (!gc_sys_fsize_ok(sizeof(*w)) ||
				 syscall(SYS_ftruncate, fd, (long)sizeof(*w)) < 0))) {
		gi_sys_close(fd);
		return NULL;
	}
	w = (void *)syscall(SYS_mmap, NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0L);
	if (w == MAP_FAILED) {
		gi_sys_close(fd);
		return NULL;
	}
	gc_bus_guard(w, sizeof(*w), wseg_gone);
	/* the fields are constants: racing creators write the same */
	if (__atomic_load_n(&w->w_magic, __ATOMIC_ACQUIRE) != GI_WB_MAGIC) {
		w->w_version = 1;
		w->w_size = sizeof(*w);
		__atomic_store_n(&w->w_magic, GI_WB_MAGIC, __ATOMIC_RELEASE);
	}
	slot = w->w_version == 1 && w->w_size == sizeof(*w) ? wslot_take(w, fd) : -2;
	if (slot == -2 || !__atomic_compare_exchange_n(&gi_w, &none, w, false, __ATOMIC_ACQ_REL,
						       __ATOMIC_ACQUIRE)) {
		gc_bus_unguard(w);
		syscall(SYS_munmap, w, sizeof(*w));
		gi_sys_close(fd);
		return slot == -2 ? NULL : none;
	}
	gi_wfd = fd;
	gi_wslot = slot;
	return w;
}

/* The in-flight count a write of ours goes to. */
static uint32_t *wslot_count(struct gi_wseg *w, bool own)
{
	int i = __atomic_load_n(&gi_wslot, __ATOMIC_ACQUIRE);

	if (i < 0 || i >= GI_WSLOTS)
		return &w->w_overflow;
	return own ? &w->w_s[i].s_own : &w->w_s[i].s_anon;
}

/* Counts a write (or a change) of bucket @b starting: in flight first,
 * then begun, so that a reader who sees it begun sees it in flight until
 * it returned. As this process's own when @own (gi_cnt_mu taken here). */
static void count_start(struct gi_wseg *w, uint32_t b, bool own)
{
	pthread_mutex_t *m = &gi_cnt_mu[b % GI_CNT_LOCKS];

	__atomic_fetch_add(wslot_count(w, own), 1, __ATOMIC_SEQ_CST);
	if (!own) {
		__atomic_fetch_add(&w->w_start[b], 1, __ATOMIC_SEQ_CST);
		return;
	}
	pthread_mutex_lock(m);
	gi_own_start[b]++;
	__atomic_fetch_add(&w->w_start[b], 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(m);
}

static void count_done(struct gi_wseg *w, uint32_t b, bool own)
{
	uint32_t *c = wslot_count(w, own), v = __atomic_load_n(c, __ATOMIC_SEQ_CST);

	/* never below zero (a slot taken over, a segment forged) */
	while (v && !__atomic_compare_exchange_n(c, &v, v - 1, false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
		;
}

/* Others' writes of bucket @b counted so far; *@all_done tells whether
 * every one of them had also returned (or its process is gone; NULL: not
 * asked): no live
 * process but ours has a write in flight, read after the count, so that
 * none counted is still on its way. false: no counts here. */
static bool count_foreign(uint32_t b, uint64_t *foreign, bool *all_done)
{
	struct gi_wseg *w = __atomic_load_n(&gi_w, __ATOMIC_ACQUIRE);
	pthread_mutex_t *m = &gi_cnt_mu[b % GI_CNT_LOCKS];
	int i, me = __atomic_load_n(&gi_wslot, __ATOMIC_ACQUIRE);

	if (!w)
		return false;
	pthread_mutex_lock(m);
	*foreign = __atomic_load_n(&w->w_start[b], __ATOMIC_SEQ_CST) - gi_own_start[b];
	pthread_mutex_unlock(m);
	if (!all_done)
		return true;
	*all_done = !__atomic_load_n(&w->w_overflow, __ATOMIC_SEQ_CST);
	for (i = 0; i < GI_WSLOTS && *all_done; i++) {
		uint32_t o = __atomic_load_n(&w->w_s[i].s_own, __ATOMIC_SEQ_CST);
		uint32_t a = __atomic_load_n(&w->w_s[i].s_anon, __ATOMIC_SEQ_CST);

		if (i == me)
			*all_done = !a;
		else if ((o || a) && wslot_lock(gi_wfd, i, F_RDLCK, F_OFD_GETLK) != 0)
			*all_done = false; /* held (or cannot tell) */
	}
	return true;
}

static int sys_fcntl(int fd, int cmd, long arg)
{
	long r = syscall(SYS_fcntl, fd, cmd, arg);

	return r < 0 ? -errno : (int)r;
}

/* Moves a descriptor of ours out of the numbers a program uses first. */
static int move_high(int fd)
{
	struct rlimit rl;
	long lo = 512;
	int n;

	if (fd < 0)
		return fd;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		lo = (long)(rl.rlim_cur * 3 / 4);
	n = sys_fcntl(fd, F_DUPFD_CLOEXEC, lo);
	if (n < 0)
		return fd;
	gi_sys_close(fd);
	return n;
}

/* ---- configuration (start-up: from the LIBGC_* variables kept then, gc_env) ---- */

static void boot_check(void);

GC_ONCE void gc_intent_configure(void)
{
	const char *v = gc_env("LIBGC_INTENT"), *p, *q;
	char *end;

	if (!v || !*v)
		return;
	for (p = v; *p && gi.ndirs < GI_DIRS; p = *q ? q + 1 : q) {
		size_t n;

		q = strchr(p, ':');
		if (!q)
			q = p + strlen(p);
		n = (size_t)(q - p);
		if (!n)
			continue;
		if (*p != '/' || n >= GI_PATH_MAX - 1) {
			gc_log(GC_LOG_WARN, "LIBGC_INTENT: want absolute directories joined by ':'; ignored");
			return;
		}
		memcpy(gi.dirs[gi.ndirs], p, n);
		gi.dirs[gi.ndirs][n] = '\0';
		gi.ndirs++;
	}
	if (!gi.ndirs)
		return;
	v = gc_env("LIBGC_INTENT_LOG");
	if (v && *v && *v == '/' && strlen(v) < GI_PATH_MAX)
		snprintf(gi.log, sizeof(gi.log), "%s", v);
	else if (v && *v)
		gc_log(GC_LOG_WARN, "LIBGC_INTENT_LOG: want an absolute path; using the default");
	if (!gi.log[0])
		snprintf(gi.log, sizeof(gi.log), "%.*s/.libgc-intent", GI_PATH_MAX - 16, gi.dirs[0]);
	gi.max = 64 * 1024;
	v = gc_env("LIBGC_INTENT_MAX");
	if (v && *v) {
		unsigned long long m = strtoull(v, &end, 10);

		if (*end == 'k' || *end == 'K')
			m <<= 10, end++;
		if (*end || m < 512 || m > (1u << 20))
			gc_log(GC_LOG_WARN, "LIBGC_INTENT_MAX: want 512-1048576 bytes (or 1k-1024k); using 64k");
		else
			gi.max = m;
	}
	gi.ckpt_ms = 1000;
	v = gc_env("LIBGC_INTENT_CKPT_MS");
	if (v && *v) {
		unsigned long m = strtoul(v, &end, 10);

		if (*end || m < 10 || m > 60000)
			gc_log(GC_LOG_WARN, "LIBGC_INTENT_CKPT_MS: want 10-60000 (milliseconds); using 1000");
		else
			gi.ckpt_ms = (unsigned)m;
	}
	gc_intent_on = 1;
	boot_check();
}

/* May the intent log serve files (or keep its log) on @fd's filesystem?
 * Only where its power-cut trials passed (journal/fs.c); elsewhere the
 * files make their real calls, said once. */
static bool intent_fs(int fd, const char *what)
{
	const struct gc_fs *f = gc_fs_of(fd);

	if (f->fs_flags & GC_FS_INTENT)
		return true;
	gc_log(GC_LOG_WARN, "LIBGC_INTENT: %s is on %s, where the intent log is not proven at a power cut: real calls there",
	       what, f->fs_name);
	return false;
}

/* Scope directories resolved (realpath) and opened, once; none when the
 * log itself is on a filesystem the intent log does not serve. */
static void scope_setup(void)
{
	int i, k = 0, lfd = gi_sys_open(gi.log, O_RDONLY | O_NOFOLLOW, 0);
	bool log_ok = lfd < 0 || intent_fs(lfd, gi.log);

	if (lfd >= 0)
		gi_sys_close(lfd);
	if (!log_ok)
		gi.ndirs = 0;

	for (i = 0; i < gi.ndirs; i++) {
		char real[PATH_MAX];
		struct stat st;
		int fd;

		if (!realpath(gi.dirs[i], real) || strlen(real) >= GI_PATH_MAX)
			continue;
		fd = move_high(gi_sys_open(real, O_RDONLY | O_DIRECTORY, 0));
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				gi_sys_close(fd);
			continue;
		}
		if (!intent_fs(fd, real)) {
			gi_sys_close(fd);
			continue;
		}
		snprintf(gi.dirs[k], GI_PATH_MAX, "%s", real);
		gi.dlen[k] = strlen(real);
		gi.dirfd[k] = fd;
		gi.dirdev[k] = (uint64_t)st.st_dev;
		k++;
	}
	gi.ndirs = k;
	__atomic_store_n(&gi.scope_ready, 1, __ATOMIC_RELEASE);
}

static bool in_scope(const char *path)
{
	int i;

	for (i = 0; i < gi.ndirs; i++)
		if (!strncmp(path, gi.dirs[i], gi.dlen[i]) &&
		    (path[gi.dlen[i]] == '/' || (gi.dlen[i] == 1 && path[0] == '/')))
			return true;
	return false;
}

static bool dev_in_scope(uint64_t dev)
{
	int i;

	for (i = 0; i < gi.ndirs; i++)
		if (gi.dirdev[i] == dev)
			return true;
	return false;
}

static int fd_path(int fd, char *buf, size_t len)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		return -ENOENT;
	return (int)n;
}

static int fd_fid(int fd, struct gi_fid *fid)
{
	struct {
		struct file_handle fh;
		uint8_t b[GI_HANDLE_MAX];
	} h;
	int mid;

	h.fh.handle_bytes = GI_HANDLE_MAX;
	if (name_to_handle_at(fd, "", &h.fh, &mid, AT_EMPTY_PATH) < 0)
		return -errno;
	fid->f_htype = h.fh.handle_type;
	fid->f_hlen = h.fh.handle_bytes;
	memcpy(fid->f_handle, h.fh.f_handle, h.fh.handle_bytes);
	return 0;
}

/* ---- which file a descriptor names ---- */

/* gi_files, mapped once (files_mu held); false if it cannot be. */
static bool files_map(void)
{
	struct gi_file *m;

	if (gi_files)
		return true;
	m = gc_sys_map_table(GI_FILES * sizeof(struct gi_file));
	if (!m)
		return false;
	__atomic_store_n(&gi_files, m, __ATOMIC_RELEASE);
	return true;
}

static struct gi_file *file_find(uint64_t dev, uint64_t ino)
{
	int i, n = __atomic_load_n(&gi.nfiles, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (__atomic_load_n(&gi_files[i].f_dev, __ATOMIC_ACQUIRE) == dev &&
		    gi_files[i].f_ino == ino)
			return &gi_files[i];
	return NULL;
}

static bool log_lock(void);
static void log_unlock(void);
static struct gi_shf *shf_find(struct gi_shm *s, uint64_t dev, uint64_t ino, bool make);

/* Everything but the lock, as for a file never seen (f_lock held or the
 * entry not published yet). */
static void file_reset(struct gi_file *f)
{
	pthread_mutex_t keep = f->f_lock;
	uint32_t inflight = f->f_inflight;

	memset(f, 0, sizeof(*f));
	f->f_lock = keep;
	f->f_inflight = inflight;
	f->f_rfd = -1;
}

/* The file @dev/@ino loses its last name: its entry is let go, so that a
 * new file that takes the inode number starts afresh. */
static void shf_clear(uint64_t dev, uint64_t ino);
static int kernel_synced(int fd, const struct stat *st, bool mine);
static void file_forget(uint64_t dev, uint64_t ino)
{
	struct gi_file *f;

	pthread_mutex_lock(&gi.files_mu);
	f = file_find(dev, ino);
	if (f) {
		pthread_mutex_lock(&f->f_lock);
		if (f->f_rfd >= 0)
			gi_sys_close(f->f_rfd);
		file_reset(f);
		pthread_mutex_unlock(&f->f_lock);
	}
	pthread_mutex_unlock(&gi.files_mu);
	shf_clear(dev, ino);
}

/* The shared "mapped" mark of @dev/@ino, for every process: its inode
 * number names a new file now (its records, if any, stay until a
 * checkpoint). */
static void shf_clear(uint64_t dev, uint64_t ino)
{
	if (gi.state == GI_OK && log_lock()) {
		struct gi_shf *e = shf_find(gi.v.v_shm, dev, ino, false);

		if (e)
			e->sf_flags = 0;
		log_unlock();
	}
}

/* The tracked file @fd (@st) names, made on first sight when in scope;
 * NULL when not in scope (or untrackable). */
static struct gi_file *file_of(int fd, const struct stat *st)
{
	struct gi_fdent *e = fd >= 0 && fd < GI_FDS ? &gi_fds[fd] : NULL;
	char path[GI_PATH_MAX];
	struct gi_file *f;
	struct gi_fid fid;
	int n;

	pthread_once(&gi.once, scope_setup);
	if (e && e->e_dev == (uint64_t)st->st_dev && e->e_ino == (uint64_t)st->st_ino) {
		if (!e->e_file)
			return NULL;
		f = &gi_files[e->e_file - 1];
		if (f->f_dev == e->e_dev && f->f_ino == e->e_ino)
			return f;
		/* its entry was forgotten (unlinked): look again */
	}
	f = file_find((uint64_t)st->st_dev, (uint64_t)st->st_ino);
	if (!f) {
		if (!dev_in_scope((uint64_t)st->st_dev) ||
		    ((uint64_t)st->st_dev == gi.v.v_log_dev && (uint64_t)st->st_ino == gi.v.v_log_ino))
			goto out_none;
		n = fd_path(fd, path, sizeof(path));
		if (n < 0 || !in_scope(path) || fd_fid(fd, &fid) < 0)
			goto out_none;
		pthread_mutex_lock(&gi.files_mu);
		f = file_find((uint64_t)st->st_dev, (uint64_t)st->st_ino);
		if (!f && files_map()) {
			int k, nf = gi.nfiles;

			/* a forgotten entry, else the next new one */
			for (k = 0; k < nf && __atomic_load_n(&gi_files[k].f_dev, __ATOMIC_ACQUIRE); k++)
				;
			if (k < GI_FILES) {
				f = &gi_files[k];
				if (k == nf) {
					memset(f, 0, sizeof(*f));
					pthread_mutex_init(&f->f_lock, NULL);
				}
				pthread_mutex_lock(&f->f_lock);
				file_reset(f);
				f->f_fid = fid;
				memcpy(f->f_path, path, (size_t)n + 1);
				f->f_plen = (uint16_t)n;
				f->f_ino = (uint64_t)st->st_ino;
				f->f_bucket = gi_wb_of((uint64_t)st->st_dev, (uint64_t)st->st_ino);
				/* last: file_find matches on it */
				__atomic_store_n(&f->f_dev, (uint64_t)st->st_dev, __ATOMIC_RELEASE);
				pthread_mutex_unlock(&f->f_lock);
				if (k == nf)
					__atomic_store_n(&gi.nfiles, nf + 1, __ATOMIC_RELEASE);
			}
		}
		pthread_mutex_unlock(&gi.files_mu);
		if (!f)
			goto out_none;
	} else if (fd_fid(fd, &fid) == 0 &&
		   !gi_fid_eq(&f->f_fid, fid.f_htype, fid.f_hlen, fid.f_handle)) {
		/* the inode number of a deleted file, reused: a new file */
		pthread_mutex_lock(&f->f_lock);
		if (f->f_rfd >= 0)
			gi_sys_close(f->f_rfd);
		file_reset(f);
		f->f_dev = (uint64_t)st->st_dev;
		f->f_ino = (uint64_t)st->st_ino;
		f->f_bucket = gi_wb_of((uint64_t)st->st_dev, (uint64_t)st->st_ino);
		f->f_fid = fid;
		n = fd_path(fd, path, sizeof(path));
		if (n > 0) {
			memcpy(f->f_path, path, (size_t)n + 1);
			f->f_plen = (uint16_t)n;
		}
		pthread_mutex_unlock(&f->f_lock);
		shf_clear((uint64_t)st->st_dev, (uint64_t)st->st_ino);
	}
	if (e) {
		e->e_dev = (uint64_t)st->st_dev;
		e->e_ino = (uint64_t)st->st_ino;
		e->e_file = (int32_t)(f - gi_files) + 1;
	}
	return f;
out_none:
	if (e) {
		e->e_dev = (uint64_t)st->st_dev;
		e->e_ino = (uint64_t)st->st_ino;
		e->e_file = 0;
	}
	return NULL;
}

/* ---- the write family ---- */

/* A token: bit 63, the write was counted (count_done is due); bit 62
 * GC_INTENT_TOK_KSYNC; bit 61, made where this process's locks may not be
 * taken; bits 48-60 its bucket; bits 37-47 the file's index + 1 (0: not
 * tracked here); bits 0-36 the position before the write + 1 (0: unknown). */
#define TOK_COUNTED (1ULL << 63)
#define TOK_NESTED (1ULL << 61)
#define TOK_BUCKET(t) ((uint32_t)((t) >> 48) & (GI_WB - 1))
#define TOK_FILE(t) ((int32_t)((t) >> 37) & 0x7ff)
#define TOK_POS_MASK ((1ULL << 37) - 1)

static bool ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

int64_t gc_intent_where(int64_t off, int flags)
{
	/* RWF_HIPRI 1, DSYNC 2, SYNC 4, NOWAIT 8, APPEND 0x10, NOAPPEND 0x20,
	 * ATOMIC 0x40, DONTCACHE 0x80: none moves the bytes elsewhere but
	 * the two append flags; a flag unknown here may */
	if (flags & ~0xff)
		return GC_INTENT_OFF_UNKNOWN;
	if (flags & 0x10)
		return GC_INTENT_APPEND;
	if (flags & 0x20)
		return off >= 0 ? GC_INTENT_AT(off) : GC_INTENT_OFF_UNKNOWN;
	return off >= 0 ? off : GC_INTENT_POS;
}

uint64_t gc_intent_pos(int fd)
{
	int saved = errno;
	struct gi_wseg *w;
	struct gi_file *f;
	struct stat st;
	uint64_t tok;
	uint32_t b;
	bool self;
	long p;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		errno = saved;
		return 0;
	}
	w = wseg();
	b = gi_wb_of((uint64_t)st.st_dev, (uint64_t)st.st_ino);
	tok = (uint64_t)b << 48;
	self = gc_self();
	if (!self || gc_depth) {
		/* a child made without atfork, a signal handler that may have
		 * interrupted a holder of our locks, a nested call: counted as
		 * anyone's, and the file (if tracked) is lost track of */
		if (w)
			count_start(w, b, false);
		f = self ? file_find((uint64_t)st.st_dev, (uint64_t)st.st_ino) : NULL;
		if (f)
			__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
		errno = saved;
		return tok | TOK_NESTED | (w ? TOK_COUNTED : 0);
	}
	gc_depth++;
	f = file_of(fd, &st);
	if (!f) {
		if (w)
			count_start(w, b, false);
		gc_depth--;
		errno = saved;
		return w ? tok | TOK_COUNTED : 0;
	}
	pthread_mutex_lock(&f->f_lock);
	/* the file changed since libgc last looked, with no write of ours
	 * in flight: something libgc did not see wrote it (stdio, mmap
	 * stores, a process without LIBGC_INTENT), and the note this write
	 * makes after it must not hide that */
	if (f->f_seen && !__atomic_load_n(&f->f_inflight, __ATOMIC_ACQUIRE) &&
	    ts_after(&st.st_ctim, &f->f_ctime))
		__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
	__atomic_fetch_add(&f->f_inflight, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&f->f_lock);
	if (w)
		count_start(w, b, true); /* gi_cnt_mu: still at gc_depth > 0 */
	gc_depth--;
	p = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
	errno = saved;
	tok |= (uint64_t)(f - gi_files + 1) << 37 | (w ? TOK_COUNTED : 0);
	if (p >= 0 && (uint64_t)p < TOK_POS_MASK)
		tok |= (uint64_t)p + 1;
	return tok;
}


static void range_add(struct gi_file *f, uint64_t lo, uint64_t hi)
{
	int i, best = 0;
	uint64_t gap = UINT64_MAX;

	for (i = 0; i < f->f_nr; i++) {
		struct gi_range *r = &f->f_r[i];

		if (lo <= r->hi && hi >= r->lo) {
			r->lo = lo < r->lo ? lo : r->lo;
			r->hi = hi > r->hi ? hi : r->hi;
			r->stamp = ++f->f_wseq;
			return;
		}
	}
	if (f->f_nr < GI_RANGES) {
		f->f_r[f->f_nr++] = (struct gi_range){ lo, hi, ++f->f_wseq };
		return;
	}
	/* full: widen the nearest range (a superset is always safe) */
	for (i = 0; i < f->f_nr; i++) {
		struct gi_range *r = &f->f_r[i];
		uint64_t g = lo > r->hi ? lo - r->hi : r->lo > hi ? r->lo - hi : 0;

		if (g < gap)
			gap = g, best = i;
	}
	f->f_r[best].lo = lo < f->f_r[best].lo ? lo : f->f_r[best].lo;
	f->f_r[best].hi = hi > f->f_r[best].hi ? hi : f->f_r[best].hi;
	f->f_r[best].stamp = ++f->f_wseq;
}

ssize_t gc_intent_wrote(int fd, int64_t where, ssize_t n, uint64_t tok)
{
	int64_t pre = (tok & TOK_POS_MASK) ? (int64_t)(tok & TOK_POS_MASK) - 1 : -1;
	int saved = errno, fl = -1, r = 0;
	int32_t fi = TOK_FILE(tok);
	struct gi_file *f = fi ? &gi_files[fi - 1] : NULL;
	struct gi_wseg *w = __atomic_load_n(&gi_w, __ATOMIC_ACQUIRE);
	struct stat st;

	if (!f) {
		/* not tracked here: a write the kernel acknowledged still
		 * retires the file's records (from any process) */
		if (n > 0 && (tok & TOK_NESTED) && fstat(fd, &st) == 0 &&
		    (((fl = sys_fcntl(fd, F_GETFL, 0)) >= 0 && (fl & O_DSYNC)) ||
		     (tok & GC_INTENT_TOK_KSYNC)))
			r = kernel_synced(fd, &st, false);
		goto out;
	}
	/* the token's file: the description may name another one by now
	 * (closed and reopened by another thread), then the bytes went to
	 * that one, which a note here would not describe */
	gc_depth++;
	if (n > 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != f->f_dev ||
		      (uint64_t)st.st_ino != f->f_ino)) {
		__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
		n = 0;
	}
	if (n > 0)
		fl = sys_fcntl(fd, F_GETFL, 0);
	pthread_mutex_lock(&f->f_lock);
	if (n <= 0) {
		/* nothing written */
	} else if (fl < 0 || where == GC_INTENT_OFF_UNKNOWN) {
		__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
	} else if (where == GC_INTENT_APPEND || (where > GC_INTENT_AT(0) && (fl & O_APPEND))) {
		f->f_append = true; /* from f_base to the end */
		f->f_app_stamp = ++f->f_wseq;
	} else if (where >= 0 || where <= GC_INTENT_AT(0)) {
		uint64_t off = where >= 0 ? (uint64_t)where : (uint64_t)(GC_INTENT_AT(0) - where);

		range_add(f, off, off + (uint64_t)n);
	} else {
		/* at the position: it went between the position before and
		 * after (other threads on the same description move it
		 * forward only) */
		long post = syscall(SYS_lseek, fd, 0L, SEEK_CUR);

		if (post < 0 || post < n || pre < 0)
			__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
		else
			range_add(f, (uint64_t)(pre < post - n ? pre : post - n),
				  (uint64_t)(post > pre + n ? post : pre + n));
	}
	if (n > 0) {
		/* the newest seen: notes of concurrent writes arrive in any order */
		if (!f->f_seen || ts_after(&st.st_ctim, &f->f_ctime))
			f->f_ctime = st.st_ctim;
		if (!f->f_seen || (uint64_t)st.st_size > f->f_size)
			f->f_size = (uint64_t)st.st_size;
		f->f_seen = true;
	}
	pthread_mutex_unlock(&f->f_lock);
	/* a write in flight no more (after its note: see gc_intent_pos) */
	__atomic_fetch_sub(&f->f_inflight, 1, __ATOMIC_ACQ_REL);
	if ((tok & TOK_COUNTED) && w)
		count_done(w, TOK_BUCKET(tok), true);
	if (n > 0 && fl >= 0 && ((fl & O_DSYNC) || (tok & GC_INTENT_TOK_KSYNC)))
		r = kernel_synced(fd, &st, true);
	gc_depth--;
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return n;
out:
	if ((tok & TOK_COUNTED) && w)
		count_done(w, TOK_BUCKET(tok), false);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	errno = saved;
	return n;
}

/* ---- signals, and the log lock ---- */

/* A request made where this process's locks may not be taken (a signal
 * handler that interrupted the library, a call nested in it, a child made
 * without atfork) takes the log's OFD lock through descriptions of its own
 * (view_open). If its thread already held that lock it would wait for
 * itself: so asynchronous signals are blocked on a thread while it holds
 * the log lock. Synchronous ones (a fault, the SIGBUS of a truncated
 * segment) are not: the kernel would kill the process rather than queue
 * them. Lock order: a file's f_lock, then gi.mu, then the OFD lock; the
 * holder of the log lock takes no f_lock, and only ck_mu. */
static __thread int gi_held __attribute__((tls_model("initial-exec")));
static __thread sigset_t gi_oldmask __attribute__((tls_model("initial-exec")));

static void sig_block(void)
{
	sigset_t all;

	if (gi_held++)
		return;
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, &gi_oldmask);
}

static void sig_restore(void)
{
	if (!--gi_held)
		pthread_sigmask(SIG_SETMASK, &gi_oldmask, NULL);
}

static int ofd_lock(int fd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	long r;

	do
		r = syscall(SYS_fcntl, fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

static void shm_gone(void *addr)
{
	/* async-signal context: the next check fails on the zeroed copy */
}

static void shm_path(char *buf, size_t len, uint64_t dev, uint64_t ino)
{
	snprintf(buf, len, "/dev/shm/libgc-intent%d-%u-%llx-%llx", GI_SHM_VERSION,
		 (unsigned)geteuid(), (unsigned long long)dev, (unsigned long long)ino);
}

/* The segment is @v's log's, of this layout? */
static bool shm_ours(const struct gi_view *v)
{
	const struct gi_shm *s = v->v_shm;

	return s->s_magic == GI_SHM_MAGIC && s->s_version == GI_SHM_VERSION &&
	       s->s_size == sizeof(*s) && s->s_log_dev == v->v_log_dev &&
	       s->s_log_ino == v->v_log_ino;
}

/* Everything read from the segment in range? (the log lock held) */
static bool shm_check(const struct gi_view *v)
{
	const struct gi_shm *s = v->v_shm;
	uint64_t size = s->s_hdr.h_size;

	return shm_ours(v) && gi_hdr_valid(&s->s_hdr) &&
	       !memcmp(s->s_hdr.h_id, v->v_id, sizeof(v->v_id)) && s->s_head_off >= GI_DATA_START &&
	       s->s_head_off < size && s->s_head_off % GI_ALIGN == 0 &&
	       s->s_head_seq >= s->s_hdr.h_ckpt_seq &&
	       gi_used(size, s->s_hdr.h_ckpt_off, s->s_head_off) < size - GI_DATA_START;
}

static void intent_off(const char *why)
{
	if (gi.state != GI_OFF)
		gc_log(GC_LOG_ERROR, "intent log %s: %s; making real calls", gi.log, why);
	gi.state = GI_OFF;
}

static struct gi_shf *shf_find(struct gi_shm *s, uint64_t dev, uint64_t ino, bool make)
{
	int i, freei = -1;

	for (i = 0; i < GI_SHM_FILES; i++) {
		struct gi_shf *e = &s->s_files[i];

		if (e->sf_dev == dev && e->sf_ino == ino && (e->sf_last || e->sf_flags))
			return e;
		if (freei < 0 && !e->sf_last && !e->sf_flags)
			freei = i;
	}
	if (!make || freei < 0)
		return NULL;
	s->s_files[freei] = (struct gi_shf){ .sf_dev = dev, .sf_ino = ino };
	return &s->s_files[freei];
}

/* Does row @e have DATA records a recovery would replay? (the lock held) */
static bool shf_live(const struct gi_shm *s, const struct gi_shf *e)
{
	return e && e->sf_last >= s->s_hdr.h_ckpt_seq && e->sf_last > e->sf_retired;
}

struct rebuild_ctx {
	struct gi_shm *s;
};

static int rebuild_visit(void *ctx, const struct gi_found *fo)
{
	struct rebuild_ctx *c = ctx;
	struct gi_shf *e;

	if (fo->fo_rec->r_type != GI_DATA)
		return 0;
	e = shf_find(c->s, fo->fo_rec->r_dev, fo->fo_rec->r_ino, true);
	if (e && e->sf_last < fo->fo_rec->r_seq)
		e->sf_last = fo->fo_rec->r_seq;
	return 0;
}

/* A holder of the lock died while it changed the segment (the kernel
 * dropped its OFD lock): the durable header and the records after it are
 * the truth. The head goes after the last valid record, and each file's
 * last DATA seq is at least the scan's. 0 or -errno. */
static int rebuild(struct gi_view *v)
{
	size_t bufsz = gi_rec_len(GI_HANDLE_MAX, GI_PATH_MAX, 0) + (2u << 20);
	struct gi_shm *s = v->v_shm;
	struct rebuild_ctx c = { s };
	struct gi_hdr h;
	struct gi_end end;
	uint8_t *buf;
	int r;

	if (!shm_ours(v))
		return -EINVAL;
	r = gi_log_header(v->v_logfd, &h);
	if (r < 0)
		return r;
	buf = (void *)syscall(SYS_mmap, NULL, bufsz, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
	if (buf == MAP_FAILED)
		return -ENOMEM;
	r = gi_scan(&h, gi_log_read, &v->v_logfd, buf, bufsz, rebuild_visit, &c, &end);
	syscall(SYS_munmap, buf, bufsz);
	if (r < 0)
		return r;
	s->s_hdr = h;
	s->s_head_seq = end.e_seq;
	s->s_head_off = end.e_off;
	gc_log(GC_LOG_WARN, "intent log %s: a process died holding its lock; its state was rebuilt from the log",
	       gi.log);
	return 0;
}

/* The OFD lock of @v (asynchronous signals already blocked), the segment
 * checked, and marked busy until view_unlock: a holder that dies between
 * leaves the mark, and the next one rebuilds from the log. 0; -EIO: the
 * lock cannot be taken; -EINVAL: the segment fails validation. */
static int view_lock(struct gi_view *v)
{
	struct gi_shm *s = v->v_shm;

	if (ofd_lock(v->v_ctlfd, F_WRLCK) < 0)
		return -EIO;
	if ((__atomic_load_n(&s->s_busy, __ATOMIC_ACQUIRE) && rebuild(v) < 0) || !shm_check(v)) {
		ofd_lock(v->v_ctlfd, F_UNLCK);
		return -EINVAL;
	}
	__atomic_store_n(&s->s_busy, 1, __ATOMIC_RELEASE);
	return 0;
}

static void view_unlock(struct gi_view *v)
{
	__atomic_store_n(&v->v_shm->s_busy, 0, __ATOMIC_RELEASE);
	ofd_lock(v->v_ctlfd, F_UNLCK);
}

/* gi.mu, with asynchronous signals blocked while it is held. */
static void mu_lock(void)
{
	sig_block();
	pthread_mutex_lock(&gi.mu);
}

static void mu_unlock(void)
{
	pthread_mutex_unlock(&gi.mu);
	sig_restore();
}

/* Takes the log lock: gi.mu, then the OFD lock on the control segment.
 * false (nothing held): the log is not usable here. */
static bool log_lock(void)
{
	struct stat st;
	int r;

	mu_lock();
	if (gi.state != GI_OK || gi.pid != gc_getpid())
		goto out;
	/* the program may have closed or replaced our descriptors
	 * (close_range, dup2 onto them) */
	if (fstat(gi.v.v_logfd, &st) < 0 || (uint64_t)st.st_dev != gi.v.v_log_dev ||
	    (uint64_t)st.st_ino != gi.v.v_log_ino) {
		intent_off("its descriptor was closed or replaced by the program");
		goto out;
	}
	r = view_lock(&gi.v);
	if (r == 0)
		return true;
	intent_off(r == -EIO ? "the control segment cannot be locked"
			     : "its control segment failed validation");
out:
	mu_unlock();
	return false;
}

static void log_unlock(void)
{
	view_unlock(&gi.v);
	mu_unlock();
}

/* The lock of either kind of view. */
static bool vlock(struct gi_view *v)
{
	if (v == &gi.v)
		return log_lock();
	sig_block();
	if (view_lock(v) == 0)
		return true;
	sig_restore();
	return false;
}

static void vunlock(struct gi_view *v)
{
	if (v == &gi.v) {
		log_unlock();
		return;
	}
	view_unlock(v);
	sig_restore();
}

/* Membership: member slot @i is held by a read lock of its process's own
 * description on byte GI_LOCK_MEMBER + @i of the segment file. The kernel
 * drops it when that process dies or execs (the descriptions are
 * close-on-exec); a pid would not do, it is reused (pid_max is often
 * 32768), and a stale segment whose dead member's pid came back would be
 * taken for a log in use. */
#define GI_LOCK_MEMBER 64

static bool member_alive(const struct gi_view *v, int i)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = GI_LOCK_MEMBER + i, .l_len = 1 };

	if (syscall(SYS_fcntl, v->v_ctlfd, F_OFD_GETLK, &fl) < 0)
		return true; /* cannot tell: taken as alive */
	return fl.l_type != F_UNLCK;
}

static bool member_take(const struct gi_view *v, int i)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
			    .l_start = GI_LOCK_MEMBER + i, .l_len = 1 };

	return syscall(SYS_fcntl, v->v_ctlfd, F_OFD_SETLK, &fl) == 0;
}

static void member_drop(const struct gi_view *v, int i)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET,
			    .l_start = GI_LOCK_MEMBER + i, .l_len = 1 };

	syscall(SYS_fcntl, v->v_ctlfd, F_OFD_SETLK, &fl);
}

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8: never reused in a boot */
#endif
static uint64_t mount_id(int fd)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID_UNIQUE, &sx) == 0 &&
	    (sx.stx_mask & STATX_MNT_ID_UNIQUE))
		return sx.stx_mnt_id;
	return 0;
}

/* A syncfs of filesystem @dev: through the scope directory opened before
 * any record (a writeback error after its open is reported to it), or,
 * before the scope is set up (a signal handler, a child made without
 * atfork), through one opened now with a raw call. 0 or -errno. */
static int syncfs_dev(uint64_t dev)
{
	struct stat st;
	int i, fd, r;

	if (__atomic_load_n(&gi.scope_ready, __ATOMIC_ACQUIRE)) {
		for (i = 0; i < gi.ndirs; i++)
			if (gi.dirdev[i] == dev)
				return syscall(SYS_syncfs, gi.dirfd[i]) < 0 ? -errno : 0;
		return -ENODEV;
	}
	for (i = 0; i < gi.ndirs && i < GI_DIRS; i++) {
		fd = gi_sys_open(gi.dirs[i], O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			continue;
		r = fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev ? 1 : 0;
		if (r)
			r = syscall(SYS_syncfs, fd) < 0 ? -errno : 0;
		else
			r = -ENODEV;
		gi_sys_close(fd);
		if (r != -ENODEV)
			return r;
	}
	return -ENODEV;
}

/* The errors a checkpoint's syncfs reports about the files' bytes; any
 * other (a descriptor closed by the program) says nothing of them. */
static bool bytes_error(int r)
{
	return r == -EIO || r == -ENOSPC || r == -EDQUOT || r == -EROFS;
}

/* ---- a view of the log of its own, for one call ---- */

static void view_close(struct gi_view *v)
{
	if (v->v_shm) {
		gc_bus_unguard(v->v_shm);
		syscall(SYS_munmap, v->v_shm, sizeof(*v->v_shm));
	}
	if (v->v_logfd >= 0)
		gi_sys_close(v->v_logfd);
	if (v->v_ctlfd >= 0)
		gi_sys_close(v->v_ctlfd);
	v->v_shm = NULL;
	v->v_logfd = v->v_ctlfd = -1;
}

/* Descriptions of the log and its segment opened here, with raw calls and
 * no lock of this process (async-signal-safe). false: no log is in use
 * (no segment: nobody attached since the boot, or the last one left it
 * clean; a log refused is never replayed over files changed since). */
static bool view_open(struct gi_view *v)
{
	char path[128];
	struct gi_hdr h;
	struct stat st;
	void *m;

	v->v_shm = NULL;
	v->v_logfd = v->v_ctlfd = -1;
	if (!gi.log[0])
		return false;
	v->v_logfd = gi_sys_open(gi.log, O_RDWR | O_NOFOLLOW, 0);
	if (v->v_logfd < 0 || fstat(v->v_logfd, &st) < 0 || !S_ISREG(st.st_mode))
		goto fail;
	v->v_log_dev = (uint64_t)st.st_dev;
	v->v_log_ino = (uint64_t)st.st_ino;
	if (gi_log_header(v->v_logfd, &h) < 0)
		goto fail;
	memcpy(v->v_id, h.h_id, sizeof(h.h_id));
	shm_path(path, sizeof(path), v->v_log_dev, v->v_log_ino);
	v->v_ctlfd = gi_sys_open(path, O_RDWR | O_NOFOLLOW, 0);
	if (v->v_ctlfd < 0 || fstat(v->v_ctlfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) || st.st_size != (off_t)sizeof(*v->v_shm))
		goto fail;
	m = (void *)syscall(SYS_mmap, NULL, sizeof(*v->v_shm), PROT_READ | PROT_WRITE, MAP_SHARED,
			    v->v_ctlfd, 0L);
	if (m == MAP_FAILED)
		goto fail;
	v->v_shm = m;
	gc_bus_guard(m, sizeof(*v->v_shm), shm_gone);
	return true;
fail:
	view_close(v);
	return false;
}

/* ---- attaching ---- */

static void *ck_main(void *arg);

/* Leaves a durable mark at the end of a log that is refused: its records
 * are replayed later only into files not changed since (gi_log_recover),
 * and every process refuses the log until then. 0 or -errno. */
static int mark_refused(int fd, const struct gi_hdr *h, const struct gi_end *end)
{
	uint8_t rec[2 * GI_ALIGN];
	struct gi_rec w = { .r_type = GI_WRAP, .r_seq = end->e_seq };
	struct gi_rec m = { .r_type = GI_REFUSED, .r_seq = end->e_seq };
	struct timespec now;
	bool wrap;
	uint64_t at = gi_place(h->h_size, end->e_off, GI_ALIGN, &wrap), n = 0;
	uint64_t take = GI_ALIGN + (wrap ? h->h_size - end->e_off : 0);
	int r;

	if (gi_used(h->h_size, h->h_ckpt_off, end->e_off) + take + GI_ALIGN >=
	    h->h_size - GI_DATA_START)
		return -ENOSPC;
	clock_gettime(CLOCK_REALTIME, &now);
	m.r_size = (uint64_t)now.tv_sec * GC_NSEC_PER_SEC + (uint64_t)now.tv_nsec;
	memcpy(w.r_id, h->h_id, sizeof(w.r_id));
	memcpy(m.r_id, h->h_id, sizeof(m.r_id));
	if (wrap) {
		gi_rec_build(rec, &w, NULL, NULL, NULL);
		r = gi_sys_pwrite(fd, rec, GI_ALIGN, end->e_off);
		if (r < 0)
			return r;
		m.r_seq++;
		n++;
	}
	gi_rec_build(rec, &m, NULL, NULL, NULL);
	r = gi_sys_pwrite(fd, rec, GI_ALIGN, at);
	return r < 0 ? r : gi_sys_fsync(fd, 1);
}

/* Nobody is attached (the segment lock held): the log on disk is the
 * truth. Records after its checkpoint are those of processes gone: if no
 * power cut came since (the same mount of the log, the header they
 * wrote, no checkpoint failed), the page cache holds their bytes and a
 * checkpoint retires them; else they are replayed now, before this
 * process reads anything, as this user, by path with the handle check.
 * 0: the log is clean now; -errno: refused (one line said why). */
static int take_over(struct gi_shm *s, struct gi_hdr *h)
{
	struct gi_recovery rc;
	struct gi_end end;
	uint64_t refused = 0;
	int64_t pending = gi_log_state(gi.v.v_logfd, &end, &refused);
	bool same;
	int i, r;

	if (pending <= 0)
		return (int)pending;
	if (refused) {
		gc_log(GC_LOG_ERROR,
		       "intent log %s holds unreplayed records and was refused before: run gcrun --recover %s; making real calls",
		       gi.log, gi.log);
		return -EAGAIN;
	}
	same = shm_check(&gi.v) && !s->s_frozen && !s->s_broken && !s->s_ckpting && s->s_mnt &&
	       s->s_mnt == mount_id(gi.v.v_logfd) && s->s_hdr.h_gen == h->h_gen;
	for (i = 0; same && i < GI_SHM_FILES; i++)
		if (s->s_files[i].sf_last && syncfs_dev(s->s_files[i].sf_dev) < 0)
			same = false;
	if (same) {
		h->h_ckpt_seq = end.e_seq;
		h->h_ckpt_off = end.e_off;
		return gi_log_write_header(gi.v.v_logfd, h);
	}
	r = gi_log_recover(gi.log, 0, &rc, NULL);
	if (r == 0) {
		gc_log(GC_LOG_WARN,
		       "intent log %s: recovered (a crash, or a checkpoint that failed): %llu records replayed into %llu files",
		       gi.log, (unsigned long long)rc.rc_replayed, (unsigned long long)rc.rc_files);
		return gi_log_header(gi.v.v_logfd, h);
	}
	r = mark_refused(gi.v.v_logfd, h, &end);
	gc_log(GC_LOG_ERROR,
	       "intent log %s holds unreplayed records this process cannot replay (%s): run gcrun --recover %s%s; making real calls",
	       gi.log, strerror(r < 0 ? -r : EPERM), gi.log,
	       r < 0 ? " (the log could not be marked: replay only before its files change)" : "");
	return -EAGAIN;
}

/* Attaches this process to the log (gi.mu held): opens it, maps or makes
 * its control segment, and recovers or refuses a log holding records of
 * processes gone. */
static void attach(void)
{
	char path[128];
	struct gi_shm *s = NULL;
	struct stat st, cst;
	struct gi_hdr h;
	bool fresh = true;
	int i, r;

	gi.state = GI_OFF;
	gi.pid = gc_getpid();
	pthread_once(&gi.once, scope_setup);
	if (!gi.ndirs) {
		gc_log(GC_LOG_ERROR, "LIBGC_INTENT: no directory of it can be opened; making real calls");
		return;
	}
	gi.v.v_logfd = move_high(gi_sys_open(gi.log, O_RDWR | O_NOFOLLOW, 0));
	if (gi.v.v_logfd < 0 || fstat(gi.v.v_logfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    gi_log_header(gi.v.v_logfd, &h) < 0) {
		gc_log(GC_LOG_ERROR, "intent log %s: %s (create it with gcrun --intent-init %s); making real calls",
		       gi.log, gi.v.v_logfd < 0 ? strerror(-gi.v.v_logfd) : "not an intent log", gi.log);
		goto fail;
	}
	gi.v.v_log_dev = (uint64_t)st.st_dev;
	gi.v.v_log_ino = (uint64_t)st.st_ino;
	memcpy(gi.v.v_id, h.h_id, sizeof(h.h_id));
	if (!gi.buf) {
		gi.bufsz = gi.max + (GI_RANGES + 1) * (size_t)gi_rec_len(GI_HANDLE_MAX, GI_PATH_MAX, 0);
		gi.buf = (void *)syscall(SYS_mmap, NULL, gi.bufsz, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
		if (gi.buf == MAP_FAILED) {
			gi.buf = NULL;
			goto fail;
		}
	}
	shm_path(path, sizeof(path), st.st_dev, st.st_ino);
	gi.v.v_ctlfd = move_high(gi_sys_open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
	if (gi.v.v_ctlfd < 0 || fstat(gi.v.v_ctlfd, &cst) < 0 || cst.st_uid != geteuid() ||
	    (cst.st_mode & 077) || !S_ISREG(cst.st_mode)) {
		gc_log(GC_LOG_ERROR, "intent log %s: control segment %s is not ours; making real calls",
		       gi.log, path);
		goto fail;
	}
	if (ofd_lock(gi.v.v_ctlfd, F_WRLCK) < 0)
		goto fail;
	if (cst.st_size != (off_t)sizeof(*s) && cst.st_size != 0) {
		/* another layout (a library of another version): made anew
		 * when none of its members lives */
		for (i = 0; i < GI_SHM_MEMBERS && !member_alive(&gi.v, i); i++)
			;
		if (i == GI_SHM_MEMBERS && syscall(SYS_ftruncate, gi.v.v_ctlfd, 0L) == 0)
			cst.st_size = 0;
	}
	if (cst.st_size == (off_t)sizeof(*s) || cst.st_size == 0) {
		if (cst.st_size == 0 && (!gc_sys_fsize_ok(sizeof(*s)) ||
					 syscall(SYS_ftruncate, gi.v.v_ctlfd, (long)sizeof(*s)) < 0))
			goto fail_locked;
		s = (void *)syscall(SYS_mmap, NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED,
				    gi.v.v_ctlfd, 0L);
		if (s == MAP_FAILED)
			s = NULL;
	}
	if (!s)
		goto fail_locked;
	gc_bus_guard(s, sizeof(*s), shm_gone);
	gi.v.v_shm = s;
	if (shm_ours(&gi.v) && s->s_busy && !memcmp(s->s_hdr.h_id, h.h_id, sizeof(h.h_id)) &&
	    rebuild(&gi.v) < 0)
		goto fail_locked;
	/* a segment of another log that had the same device and inode
	 * numbers (a new filesystem on the same device, a log made again)
	 * is not this one's, whoever is in it */
	if (shm_check(&gi.v) && !memcmp(s->s_hdr.h_id, h.h_id, sizeof(h.h_id)))
		for (i = 0; i < GI_SHM_MEMBERS; i++)
			if (member_alive(&gi.v, i))
				fresh = false;
	if (fresh) {
		if (take_over(s, &h) < 0)
			goto fail_locked;
		memset(s, 0, sizeof(*s));
		s->s_version = GI_SHM_VERSION;
		s->s_size = sizeof(*s);
		s->s_log_dev = gi.v.v_log_dev;
		s->s_log_ino = gi.v.v_log_ino;
		s->s_uid = (uint32_t)geteuid();
		s->s_mnt = mount_id(gi.v.v_logfd);
		s->s_hdr = h;
		s->s_head_seq = h.h_ckpt_seq;
		s->s_head_off = h.h_ckpt_off;
		__atomic_store_n(&s->s_magic, GI_SHM_MAGIC, __ATOMIC_RELEASE);
	}
	if (!shm_check(&gi.v))
		goto fail_locked;
	for (i = 0; i < GI_SHM_MEMBERS; i++)
		if (!member_alive(&gi.v, i) && member_take(&gi.v, i)) {
			s->s_members[i] = gi.pid; /* for the curious: liveness is the lock */
			gi.slot = i;
			break;
		}
	r = i < GI_SHM_MEMBERS ? 0 : -ENOSPC;
	ofd_lock(gi.v.v_ctlfd, F_UNLCK);
	if (r < 0) {
		gc_log(GC_LOG_ERROR, "intent log %s: too many processes; making real calls", gi.log);
		goto fail;
	}
	gi.state = GI_OK;
	return;
fail_locked:
	ofd_lock(gi.v.v_ctlfd, F_UNLCK);
fail:
	if (gi.v.v_shm) {
		gc_bus_unguard(gi.v.v_shm);
		syscall(SYS_munmap, gi.v.v_shm, sizeof(*gi.v.v_shm));
		gi.v.v_shm = NULL;
	}
	if (gi.v.v_logfd >= 0)
		gi_sys_close(gi.v.v_logfd);
	if (gi.v.v_ctlfd >= 0)
		gi_sys_close(gi.v.v_ctlfd);
	gi.v.v_logfd = gi.v.v_ctlfd = -1;
	gi.state = GI_OFF;
}

/* The checkpoint thread, once per process (and again in a child that
 * needs it), with every asynchronous signal blocked. */
static void ck_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t a;
	sigset_t all, old;
	pthread_t t;

	pthread_mutex_lock(&gi.ck_mu);
	if (gi.ck_started) {
		pthread_mutex_unlock(&gi.ck_mu);
		return;
	}
	/* its wait is timed on the monotonic clock */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gi.ck_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	sigdelset(&all, SIGBUS); /* the guard of the segments' mappings */
	sigdelset(&all, SIGSEGV);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	gi.ck_started = pthread_create(&t, &a, ck_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	pthread_mutex_unlock(&gi.ck_mu);
}

/* The log usable by this process (attaching on first use)? */
static bool log_ready(void)
{
	bool ok;

	mu_lock();
	if (gi.state == GI_UNATTACHED || gi.pid != gc_getpid())
		attach();
	ok = gi.state == GI_OK;
	mu_unlock();
	if (ok)
		ck_start();
	return ok;
}

/* At start-up, before main (LIBGC_INTENT set): a log holding records of
 * processes gone is recovered (or refused) now, before the program reads
 * a file. Two reads when it is clean; nothing is kept open. */
static void boot_check(void)
{
	struct gi_view v;
	bool live = false;
	int fd = gi_sys_open(gi.log, O_RDONLY | O_NOFOLLOW, 0), i;

	if (fd < 0)
		return;
	i = gi_log_dirty(fd);
	gi_sys_close(fd);
	if (i <= 0)
		return;
	/* records are expected while their writers live */
	if (view_open(&v)) {
		for (i = 0; shm_ours(&v) && i < GI_SHM_MEMBERS && !live; i++)
			live = member_alive(&v, i);
		view_close(&v);
	}
	if (!live)
		log_ready();
}

/* ---- appending records (the log lock of @v held) ---- */

/* Room for @need bytes at the head: the offset they go to, with a WRAP
 * written first when they do not fit before the end; -ENOSPC when the ring
 * would reach the checkpoint. */
static int64_t reserve(struct gi_view *v, uint32_t need, uint64_t *seq)
{
	struct gi_shm *s = v->v_shm;
	uint64_t size = s->s_hdr.h_size, ring = size - GI_DATA_START;
	uint64_t head = s->s_head_off, used = gi_used(size, s->s_hdr.h_ckpt_off, head);
	bool wrap;
	uint64_t at = gi_place(size, head, need, &wrap);
	uint64_t take = need + (wrap ? size - head : 0);

	if (need > ring / 4 || used + take + 2 * GI_ALIGN >= ring)
		return -ENOSPC;
	if (wrap) {
		uint8_t rec[GI_ALIGN];
		struct gi_rec w = { .r_type = GI_WRAP, .r_seq = s->s_head_seq };
		int r;

		memcpy(w.r_id, s->s_hdr.h_id, sizeof(w.r_id));
		gi_rec_build(rec, &w, NULL, NULL, NULL);
		r = gi_sys_pwrite(v->v_logfd, rec, sizeof(rec), head);
		if (r < 0)
			return r;
		s->s_head_seq++;
		s->s_head_off = GI_DATA_START;
	}
	*seq = s->s_head_seq;
	return (int64_t)at;
}

/* Writes @len bytes of built records (@nrec of them) at @at and moves the
 * head past them. */
static int commit_records(struct gi_view *v, const uint8_t *buf, uint32_t len, int64_t at,
			  uint32_t nrec)
{
	struct gi_shm *s = v->v_shm;
	int r = gi_sys_pwrite(v->v_logfd, buf, len, (uint64_t)at);

	if (r < 0) {
		s->s_broken = 1;
		return r;
	}
	s->s_head_seq += nrec;
	s->s_head_off = (uint64_t)at + len == s->s_hdr.h_size ? GI_DATA_START : (uint64_t)at + len;
	return 0;
}

static void ck_kick(void)
{
	pthread_mutex_lock(&gi.ck_mu);
	gi.ck_kick = true;
	pthread_cond_signal(&gi.ck_cv);
	pthread_mutex_unlock(&gi.ck_mu);
}

static bool log_half_full(void)
{
	struct gi_shm *s = gi.v.v_shm;
	uint64_t size = s->s_hdr.h_size;

	return gi_used(size, s->s_hdr.h_ckpt_off, s->s_head_off) > (size - GI_DATA_START) / 2;
}

/* A RETIRE of file (@dev, @ino, @fid) up to @upto, written (the lock of
 * @v held); the caller makes it durable. 0 or -errno. */
static int retire_locked(struct gi_view *v, uint64_t dev, uint64_t ino, const struct gi_fid *fid,
			 uint64_t upto)
{
	uint8_t rec[GI_ALIGN * 2];
	struct gi_rec h = { .r_type = GI_RETIRE, .r_dev = dev, .r_ino = ino, .r_upto = upto };
	uint32_t len = gi_rec_len(fid->f_hlen, 0, 0);
	struct gi_shf *e;
	uint64_t seq;
	int64_t at;
	int r;

	if (v->v_shm->s_broken)
		return -EIO;
	at = reserve(v, len, &seq);
	if (at < 0)
		return (int)at;
	h.r_seq = seq;
	memcpy(h.r_id, v->v_shm->s_hdr.h_id, sizeof(h.r_id));
	gi_rec_build(rec, &h, fid, NULL, NULL);
	r = commit_records(v, rec, len, at, 1);
	e = r ? NULL : shf_find(v->v_shm, dev, ino, false);
	if (e && e->sf_retired < upto)
		e->sf_retired = upto;
	return r;
}

/* ---- the checkpoint ---- */

/* Makes every file with a record below the head durable (syncfs of their
 * filesystems), then writes the header that retires those records. A
 * syncfs that fails with an error of the files' bytes freezes the log
 * for every process: a later syncfs through the same description would
 * not report that error again, and a header written then would retire
 * records whose bytes never reached their files. */
static int checkpoint(struct gi_view *v)
{
	uint64_t devs[GI_DIRS], hseq, hoff;
	int nd = 0, i, k, r = 0;
	struct gi_shm *s;

	if (!vlock(v))
		return -EIO;
	s = v->v_shm;
	hseq = s->s_head_seq;
	hoff = s->s_head_off;
	if (s->s_frozen) {
		vunlock(v);
		return -EIO;
	}
	if (hseq == s->s_hdr.h_ckpt_seq) {
		vunlock(v);
		return 0;
	}
	for (i = 0; i < GI_SHM_FILES; i++) {
		struct gi_shf *e = &s->s_files[i];

		if (!e->sf_last || e->sf_last < s->s_hdr.h_ckpt_seq)
			continue;
		for (k = 0; k < nd && devs[k] != e->sf_dev; k++)
			;
		if (k == nd) {
			if (nd == GI_DIRS) {
				r = -ENODEV;
				break;
			}
			devs[nd++] = e->sf_dev;
		}
	}
	if (!r)
		s->s_ckpting++;
	vunlock(v);
	if (r)
		return r;
	for (k = 0; k < nd && !r; k++)
		r = syncfs_dev(devs[k]);
	if (r) {
		bool freeze = bytes_error(r);

		if (vlock(v)) {
			if (v->v_shm->s_ckpting)
				v->v_shm->s_ckpting--;
			/* the syncfs marked the filesystem's error seen: a
			 * program's syncfs through a description opened from
			 * now on would not hear of it; the first one of a
			 * libgc process is told (gc_intent_syncfs) */
			if (freeze && !v->v_shm->s_frozen) {
				v->v_shm->s_frozen = 1;
				v->v_shm->s_frozen_err = -r;
				v->v_shm->s_frozen_dev = devs[k - 1];
			}
			vunlock(v);
		}
		if (!__atomic_exchange_n(&gi.warned, true, __ATOMIC_ACQ_REL))
			gc_log(GC_LOG_ERROR, "intent log %s: checkpoint failed (%s); its records are kept%s",
			       gi.log, strerror(-r),
			       freeze ? ", to be replayed by gcrun --recover; making real calls" : "");
		return r;
	}
	if (!vlock(v))
		return -EIO;
	s = v->v_shm;
	if (s->s_ckpting)
		s->s_ckpting--;
	if (s->s_hdr.h_ckpt_seq < hseq && !s->s_frozen) {
		struct gi_hdr h = s->s_hdr;

		h.h_ckpt_seq = hseq;
		h.h_ckpt_off = hoff;
		r = gi_log_write_header(v->v_logfd, &h);
		if (!r) {
			s->s_hdr = h;
			for (i = 0; i < GI_SHM_FILES; i++)
				if (s->s_files[i].sf_last && s->s_files[i].sf_last < hseq)
					s->s_files[i].sf_last = s->s_files[i].sf_retired = 0;
			gc_stat_inc(intent_ckpts);
		} else {
			s->s_broken = 1;
		}
	}
	vunlock(v);
	return r;
}

static void *ck_main(void *arg)
{
	gc_depth++; /* its calls are the library's own */
	pthread_mutex_lock(&gi.ck_mu);
	for (;;) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += gi.ckpt_ms / 1000;
		ts.tv_nsec += (long)(gi.ckpt_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		if (!gi.ck_kick)
			pthread_cond_timedwait(&gi.ck_cv, &gi.ck_mu, &ts);
		gi.ck_kick = false;
		pthread_mutex_unlock(&gi.ck_mu);
		if (gi.pid == gc_getpid() && gi.state == GI_OK)
			checkpoint(&gi.v);
		pthread_mutex_lock(&gi.ck_mu);
	}
	return NULL;
}

/* ---- requests ---- */

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Does file @dev/@ino have records a recovery would replay? Sets *@upto to
 * its last DATA seq. 1, 0, or -1: the log cannot be read here. */
static int live_upto(struct gi_view *v, uint64_t dev, uint64_t ino, uint64_t *upto)
{
	struct gi_shf *e;
	int live;

	if (!vlock(v))
		return -1;
	e = shf_find(v->v_shm, dev, ino, false);
	live = shf_live(v->v_shm, e);
	*upto = live ? e->sf_last : 0;
	vunlock(v);
	return live;
}

/* The bytes of file @dev/@ino were acknowledged by a real call that began
 * after its records up to @upto were read: those records must never be
 * replayed over them. A durable RETIRE, else a checkpoint; -EIO when
 * neither can be made (the acknowledgement would not hold after a crash). */
static int retire_after(struct gi_view *v, uint64_t dev, uint64_t ino, const struct gi_fid *fid,
			uint64_t upto)
{
	int r = -EIO;

	if (vlock(v)) {
		r = retire_locked(v, dev, ino, fid, upto);
		vunlock(v);
	}
	if (!r)
		r = gi_sys_fsync(v->v_logfd, 1);
	if (!r)
		gc_stat_inc(intent_retired);
	else if (checkpoint(v) == 0)
		r = 0;
	else
		r = -EIO;
	return r;
}

/* The real path: the program's own real call on @fd, then, when the file
 * has records in the log, a durable RETIRE of them before returning. */
static int real_and_retire(struct gi_file *f, int fd, const struct stat *st, bool datasync,
			   enum gc_origin origin, uint64_t begun, bool direct)
{
	uint64_t upto = 0, s0 = 0, foreign = 0;
	uint32_t lost0 = 0;
	int r, live;
	bool base = false, all_done, moved;
	struct gi_fid fid;

	live = live_upto(&gi.v, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &upto) > 0;
	/* What was noted before the call is covered by it; the ranges stay
	 * until it succeeded, so that a request logged meanwhile still logs
	 * them (it must not be acknowledged on a real call not finished). */
	if (f) {
		int i;

		/* the writes of others counted now are covered by the call
		 * only if each had returned before it starts: a write still
		 * in flight may land after (then the next sync is real too) */
		for (i = 0; i < 100; i++) {
			base = count_foreign(f->f_bucket, &foreign, &all_done) && all_done;
			if (base || i == 99)
				break;
			sched_yield();
		}
		pthread_mutex_lock(&f->f_lock);
		s0 = f->f_wseq;
		lost0 = __atomic_load_n(&f->f_lost, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&f->f_lock);
	}
	gc_stat_inc(intent_real);
	r = direct ? gc_sync_direct(fd, datasync, origin)
		   : gc_sync_grouped(fd, datasync, origin, begun);
	/* another thread moved (dup2) or closed the descriptor meanwhile:
	 * the call may have reached another file, or none; a syncfs of this
	 * file's filesystem covers it, and nothing is learnt from the number */
	moved = (r == 0 || r == -EBADF) && gc_sys_fd_names(fd, st) == 0;
	if (moved)
		r = gc_sys_sync_file_fs((uint64_t)st->st_dev);
	if (f && r == 0) {
		struct stat now;
		char path[GI_PATH_MAX];
		int n = fd_path(fd, path, sizeof(path)), i, k;

		pthread_mutex_lock(&f->f_lock);
		for (i = 0, k = 0; i < f->f_nr; i++)
			if (f->f_r[i].stamp > s0)
				f->f_r[k++] = f->f_r[i];
		f->f_nr = k;
		if (f->f_append && f->f_app_stamp <= s0) {
			f->f_append = false;
			f->f_base = (uint64_t)st->st_size; /* the size before the call */
		} else if (!f->f_append) {
			f->f_base = (uint64_t)st->st_size;
		}
		f->f_lost_ok = lost0;
		f->f_base_ok = base;
		f->f_foreign = foreign;
		if (moved) {
			f->f_synced = false; /* the next request makes a real call */
		} else if (fstat(fd, &now) == 0) {
			f->f_synced = n > 0;
			if (n > 0) {
				memcpy(f->f_path, path, (size_t)n + 1);
				f->f_plen = (uint16_t)n;
			}
			if (!f->f_nr && !f->f_append) {
				f->f_ctime = now.st_ctim;
				f->f_size = (uint64_t)now.st_size;
				f->f_seen = true;
			}
		}
		pthread_mutex_unlock(&f->f_lock);
	}
	if (r < 0 || !live)
		return r;
	if (f)
		fid = f->f_fid;
	else if (moved || fd_fid(fd, &fid) < 0)
		return -EIO;
	/* bytes newer than the file's records are durable and about to be
	 * acknowledged: those records must never be replayed over them */
	return retire_after(&gi.v, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &fid, upto);
}

/* A descriptor to read @f's bytes through: @fd when it can read, else our
 * own read-only description of the file. */
static int read_fd(struct gi_file *f, int fd)
{
	char proc[64];
	struct stat st;
	int fl = sys_fcntl(fd, F_GETFL, 0);

	if (fl >= 0 && (fl & O_ACCMODE) != O_WRONLY && !(fl & O_PATH))
		return fd;
	if (f->f_rfd >= 0 && fstat(f->f_rfd, &st) == 0 && (uint64_t)st.st_ino == f->f_ino &&
	    (uint64_t)st.st_dev == f->f_dev)
		return f->f_rfd;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	f->f_rfd = move_high(gi_sys_open(proc, O_RDONLY, 0));
	return f->f_rfd;
}

/* Records of @f's bytes written since its last sync, appended under the
 * log lock; [*@lo, *@hi) spans them (empty: none). 0: written (or nothing
 * to write); 1: the log cannot take them (the real path serves); 2: the
 * log is full. f_lock is taken first, so that the holder of the log lock
 * never waits for a file's lock. */
static int log_records(struct gi_file *f, int fd, uint64_t *lo, uint64_t *hi)
{
	struct gi_range rg[GI_RANGES + 1];
	uint64_t seq, size, bytes = 0, last = 0, foreign;
	uint32_t len = 0, nrec = 0, i;
	struct gi_shf *e;
	struct gi_shm *s;
	uint8_t *p;
	struct stat st;
	int nr, rfd, r = 0;
	bool busy;
	int64_t at;

	/* a write of ours between its real call and its note would look
	 * like another writer's change: let those finish (their note takes
	 * f_lock) */
	for (i = 0; i < 5000 && __atomic_load_n(&f->f_inflight, __ATOMIC_ACQUIRE); i++)
		sched_yield();
	pthread_mutex_lock(&f->f_lock);
	/* every write counted by another process (or not seen here) since
	 * the last real call is one it covered: else that call's bytes are
	 * not ours to leave out, and the real call serves */
	if (!f->f_base_ok || !count_foreign(f->f_bucket, &foreign, NULL) ||
	    foreign != f->f_foreign) {
		gc_log(GC_LOG_TRACE, "intent: %s: real call (another writer%s)", f->f_path,
		       f->f_base_ok ? "" : " when it last synced");
		r = 1;
		goto out;
	}
	/* A ctime or size that changed since our last look, with no write
	 * of ours in flight, is a write libgc did not see. One of ours still
	 * in flight (its note waits for f_lock) explains it: it has not
	 * returned, so this sync need not cover it, as bare; a write by
	 * another libgc process shows in the counts above whatever. */
	busy = __atomic_load_n(&f->f_inflight, __ATOMIC_ACQUIRE) != 0;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != f->f_ino ||
	    __atomic_load_n(&f->f_lost, __ATOMIC_ACQUIRE) != f->f_lost_ok || !f->f_seen ||
	    (!busy && (!same_time(&st.st_ctim, &f->f_ctime) || (uint64_t)st.st_size != f->f_size))) {
		/* changed by a write libgc did not see exactly (or at all) */
		gc_log(GC_LOG_TRACE, "intent: %s: real call (lost=%u seen=%d ctime %s size %s)",
		       f->f_path, f->f_lost - f->f_lost_ok, f->f_seen,
		       same_time(&st.st_ctim, &f->f_ctime) ? "same" : "changed",
		       (uint64_t)st.st_size == f->f_size ? "same" : "changed");
		r = 1;
		goto out;
	}
	size = (uint64_t)st.st_size;
	for (nr = 0, i = 0; i < (uint32_t)f->f_nr; i++) {
		uint64_t a = f->f_r[i].lo, b = f->f_r[i].hi < size ? f->f_r[i].hi : size;

		if (a < b)
			rg[nr++] = (struct gi_range){ a, b, 0 };
	}
	if (f->f_append && f->f_base < size)
		rg[nr++] = (struct gi_range){ f->f_base, size, 0 };
	for (i = 0; i < (uint32_t)nr; i++) {
		bytes += rg[i].hi - rg[i].lo;
		len += gi_rec_len(f->f_fid.f_hlen, f->f_plen, (uint32_t)(rg[i].hi - rg[i].lo));
	}
	if (bytes > gi.max) {
		gc_log(GC_LOG_TRACE, "intent: %s: %llu bytes, over LIBGC_INTENT_MAX", f->f_path,
		       (unsigned long long)bytes);
		r = 1;
		goto out;
	}
	rfd = nr ? read_fd(f, fd) : fd;
	if (rfd < 0 || !log_lock()) {
		r = 1;
		goto out;
	}
	s = gi.v.v_shm;
	if (s->s_broken || s->s_frozen || len > gi.bufsz) {
		r = 1;
		goto out_locked;
	}
	/* the row found last time, if it still names the file (a hint only:
	 * anything read from the segment is checked before use) */
	e = f->f_shf && f->f_shf <= GI_SHM_FILES ? &s->s_files[f->f_shf - 1] : NULL;
	if (!e || e->sf_dev != f->f_dev || e->sf_ino != f->f_ino || (!e->sf_last && !e->sf_flags))
		e = shf_find(s, f->f_dev, f->f_ino, true);
	if (e)
		f->f_shf = (uint32_t)(e - s->s_files) + 1;
	if (!e || (e->sf_flags & SF_MAPPED)) {
		gc_log(GC_LOG_TRACE, "intent: %s: %s", f->f_path,
		       e ? "mapped writable by a process" : "the control segment's file table is full");
		r = 1;
		goto out_locked;
	}
	if (nr) {
		at = reserve(&gi.v, len, &seq);
		if (at < 0) {
			r = at == -ENOSPC ? 2 : 1;
			goto out_locked;
		}
		/* read under the lock: the content of any lower seq was read earlier */
		for (p = gi.buf, i = 0; i < (uint32_t)nr; i++) {
			uint32_t dlen = (uint32_t)(rg[i].hi - rg[i].lo);
			uint8_t *data = p + sizeof(struct gi_rec) + f->f_fid.f_hlen + f->f_plen;
			struct gi_rec rec = { .r_type = GI_DATA, .r_seq = seq + i, .r_dev = f->f_dev,
					      .r_ino = f->f_ino, .r_off = rg[i].lo, .r_size = size,
					      .r_dlen = dlen, .r_plen = f->f_plen };

			memcpy(rec.r_id, s->s_hdr.h_id, sizeof(rec.r_id));
			/* the bytes read in place first, then the record around them */
			if ((r = gi_sys_pread(rfd, data, dlen, rg[i].lo)) < 0)
				break;
			p += gi_rec_build(p, &rec, &f->f_fid, f->f_path, NULL);
			last = seq + i;
			nrec++;
		}
		if (r < 0 || commit_records(&gi.v, gi.buf, len, at, nrec) < 0) {
			r = 1;
			goto out_locked;
		}
		e->sf_last = last;
		gc_stat_add(intent_records, nrec);
		gc_stat_add(intent_bytes, bytes);
		for (*lo = UINT64_MAX, *hi = 0, i = 0; i < (uint32_t)nr; i++) {
			*lo = rg[i].lo < *lo ? rg[i].lo : *lo;
			*hi = rg[i].hi > *hi ? rg[i].hi : *hi;
		}
	}
	if (log_half_full())
		ck_kick();
	log_unlock();
	/* The next append is logged from f_base. Past the size read above
	 * only where every byte below it was noted and logged: a write of
	 * ours in flight (busy) may have landed under that size already,
	 * its note still to come; with no append noted, nothing logged
	 * [f_base, size), and moving f_base over its bytes would leave them
	 * out of its own sync's records, acknowledged and never made
	 * durable (threads appending to one file: records lost at a power
	 * cut, tests/crash/intent_race.sh). */
	if (f->f_append || !busy)
		f->f_base = size;
	f->f_nr = 0;
	f->f_append = false;
	pthread_mutex_unlock(&f->f_lock);
	return 0;
out_locked:
	log_unlock();
out:
	pthread_mutex_unlock(&f->f_lock);
	return r;
}

/* ---- where no lock of this process may be taken ---- */

/* @fd's file was acknowledged by a real call to be made now (@datasync),
 * where the coordinator is not used: a signal handler that may have
 * interrupted the library, a call nested in it, a child made without
 * atfork (which must not use its parent's descriptions: OFD locks belong
 * to them). Through a view of the log of its own: @upto read before the
 * call, the RETIRE after it. */
int gc_intent_nested_sync(int fd, bool datasync)
{
	int saved = errno, live, r;
	struct gi_view v;
	struct gi_fid fid;
	struct stat st;
	uint64_t upto;

	if (!gc_intent_on || gi_held || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return GC_INTENT_PASS;
	if (!view_open(&v)) {
		errno = saved;
		return GC_INTENT_PASS;
	}
	live = live_upto(&v, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &upto);
	if (live <= 0) {
		view_close(&v);
		errno = saved;
		return GC_INTENT_PASS;
	}
	r = gc_sync_direct(fd, datasync, datasync ? GC_FROM_FDATASYNC : GC_FROM_FSYNC);
	if (r == 0)
		r = fd_fid(fd, &fid) < 0
			    ? -EIO
			    : retire_after(&v, (uint64_t)st.st_dev, (uint64_t)st.st_ino, &fid, upto);
	view_close(&v);
	errno = saved;
	return r;
}

/* A write the kernel itself made durable (a descriptor opened O_SYNC or
 * O_DSYNC that libgc left to the kernel, RWF_DSYNC left to it) returned:
 * it is acknowledged, so the file's older records must not be replayed
 * over it. Only its range was synced, and a RETIRE cancels every record of
 * the file: so the whole file is made durable first, by a fdatasync on the
 * program's own descriptor (this request's), records read before it, the
 * RETIRE after. 0, or -errno: the write cannot be acknowledged safely. */
static int kernel_synced(int fd, const struct stat *st, bool mine)
{
	struct gi_view v, *vp = &gi.v;
	struct gi_fid fid;
	uint64_t upto;
	int live, r;

	if (!mine) {
		if (gi_held || !view_open(&v))
			return 0;
		vp = &v;
	} else if (!log_ready()) {
		return 0;
	}
	live = live_upto(vp, (uint64_t)st->st_dev, (uint64_t)st->st_ino, &upto);
	r = 0;
	if (live > 0) {
		r = gc_sync_direct(fd, true, GC_FROM_OSYNC);
		if (r == 0)
			r = fd_fid(fd, &fid) < 0 ? -EIO
						 : retire_after(vp, (uint64_t)st->st_dev,
								(uint64_t)st->st_ino, &fid, upto);
	}
	if (vp == &v)
		view_close(&v);
	return r;
}

int gc_intent_real(int fd, bool datasync, enum gc_origin origin)
{
	struct gi_file *f;
	struct stat st;

	if (!gc_self())
		return gc_intent_nested_sync(fd, datasync);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return GC_INTENT_PASS;
	f = file_of(fd, &st);
	if (!f || !log_ready())
		return GC_INTENT_PASS;
	return real_and_retire(f, fd, &st, datasync, origin, 0, true);
}

/* After the program's syncfs(@fd) returned @r (0 or -errno), through @v:
 * the error a checkpoint's syncfs saw on that filesystem, not told yet,
 * is this call's, as it would have been bare (the first syncfs after it).
 * An error the kernel gave it counts as told. */
static int syncfs_told(struct gi_view *v, int fd, int r)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !vlock(v))
		return r;
	if (v->v_shm->s_frozen_err && !v->v_shm->s_frozen_told &&
	    v->v_shm->s_frozen_dev == (uint64_t)st.st_dev) {
		v->v_shm->s_frozen_told = 1;
		if (r == 0)
			r = -v->v_shm->s_frozen_err;
	}
	vunlock(v);
	return r;
}

/* sync() and syncfs() acknowledged every file's bytes: a checkpoint
 * before they return, through a view of its own where this process's
 * locks may not be taken. */
int gc_intent_syncfs(int fd, int r)
{
	int saved = errno;
	struct gi_view v;

	if (gi_held)
		return r;
	if (gc_self() && !gc_depth && gi.state == GI_OK && gi.pid == gc_getpid()) {
		gc_depth++;
		r = syncfs_told(&gi.v, fd, r);
		if (r == 0)
			checkpoint(&gi.v);
		gc_depth--;
	} else if (view_open(&v)) {
		r = syncfs_told(&v, fd, r);
		if (r == 0)
			checkpoint(&v);
		view_close(&v);
	}
	errno = saved;
	return r;
}

int gc_intent_sync(int fd, bool datasync, enum gc_origin origin, uint64_t begun)
{
	struct gi_file *f;
	struct stat st;
	bool eligible;
	uint64_t lo = 0, hi = 0;
	int r, e, tries;

	if (!gc_self())
		return gc_intent_nested_sync(fd, datasync);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return GC_INTENT_PASS;
	f = file_of(fd, &st);
	if (!f || !log_ready())
		return GC_INTENT_PASS;
	pthread_mutex_lock(&f->f_lock);
	eligible = f->f_synced && !f->f_mapped &&
		   __atomic_load_n(&f->f_lost, __ATOMIC_ACQUIRE) == f->f_lost_ok;
	pthread_mutex_unlock(&f->f_lock);
	if (!eligible) {
		gc_log(GC_LOG_TRACE, "intent: %s: real call (%s)", f->f_path,
		       f->f_mapped ? "mapped" : f->f_synced ? "a write not seen exactly" : "not synced yet");
		return real_and_retire(f, fd, &st, datasync, origin, begun, false);
	}
	for (tries = 0;; tries++) {
		r = log_records(f, fd, &lo, &hi);
		if (r != 2 || tries)
			break;
		checkpoint(&gi.v); /* the log is full: wait for room once */
	}
	if (r) {
		gc_log(GC_LOG_TRACE, "intent: %s: real call (%s)", f->f_path,
		       r == 2 ? "the log is full" : "the log cannot take it");
		return real_and_retire(f, fd, &st, datasync, origin, begun, false);
	}
	gc_stat_inc(intent_logged);
	/* The file's own writeback of these bytes starts now, beside the
	 * log's flush (SYNC_FILE_RANGE_WRITE alone leaves error state be):
	 * bare, this request's fsync would have written them back and told
	 * it of a failure; so it waits for them below, on its own
	 * description, which reports that description's error once, as its
	 * fsync would have. */
	if (hi > lo)
		gc_sys_sfr(fd, (int64_t)lo, (int64_t)(hi - lo), SYNC_FILE_RANGE_WRITE);
	/* one real fdatasync of the log inode, started after our records
	 * (and every lower seq) were written, shared with the domain's other
	 * requests on it (rule 1, for the log inode) */
	r = gc_sync_grouped(gi.v.v_logfd, true, origin, begun);
	if (r < 0) {
		if (log_lock()) {
			gi.v.v_shm->s_broken = 1;
			log_unlock();
		}
		return r;
	}
	/* the program moved or closed the descriptor while the request
	 * waited for the log (another thread's dup2 or close): its bytes are
	 * durable in the log, and no description of its file is left here
	 * to report an error through (bare, its fsync would have held one) */
	if (gc_sys_fd_names(fd, &st) == 0)
		return 0;
	e = hi > lo ? gc_sys_sfr(fd, (int64_t)lo, (int64_t)(hi - lo),
				 SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER)
		    : -EINVAL;
	/* nothing to wait for (or a descriptor that cannot): a writeback
	 * error of the file this description has not seen yet is still
	 * this request's, as the kernel would have reported it */
	if (e == -EIO || e == -ENOSPC || e == -EDQUOT || e == -EROFS || e == 0)
		return e;
	e = gc_commit_pending_error(fd);
	/* cannot ask (the call refused): its own real call answers */
	return e > 0 ? gc_commit_direct(fd, datasync) : e;
}

/* ---- calls that change a file other than by writing its bytes ---- */

static void meta(struct gi_view *v, const struct stat *st, bool mapped)
{
	struct gi_file *f = gc_self() ? file_find((uint64_t)st->st_dev, (uint64_t)st->st_ino) : NULL;
	bool live = false;

	if (f && v == &gi.v) {
		pthread_mutex_lock(&f->f_lock);
		f->f_synced = false; /* its next sync is a real call */
		f->f_mapped |= mapped;
		pthread_mutex_unlock(&f->f_lock);
	} else if (f) {
		/* no lock here: its next sync is a real call */
		__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
	}
	if (v == &gi.v && !log_ready())
		return;
	if (!vlock(v))
		return;
	{
		struct gi_shf *e = shf_find(v->v_shm, (uint64_t)st->st_dev, (uint64_t)st->st_ino, mapped);

		live = shf_live(v->v_shm, e);
		if (e && mapped)
			e->sf_flags |= SF_MAPPED;
	}
	vunlock(v);
	if (live)
		checkpoint(v);
}

/* Counted as a change by anyone, checkpointed first, from any context:
 * through this process's view, or (a signal handler, a nested call, a
 * child without atfork) one of its own. */
static uint64_t meta_stat(const struct stat *st, bool mapped, int how)
{
	struct gi_wseg *w = wseg();
	uint32_t b = gi_wb_of((uint64_t)st->st_dev, (uint64_t)st->st_ino);
	struct gi_view v;

	if (w)
		count_start(w, b, false);
	if (gi_held) {
		/* the library's own call, under its lock: not a file in scope */
	} else if (gc_self() && !gc_depth) {
		pthread_once(&gi.once, scope_setup);
		if (dev_in_scope((uint64_t)st->st_dev)) {
			gc_depth++;
			meta(&gi.v, st, mapped);
			if ((how & GC_INTENT_GONE) && st->st_nlink <= 1)
				file_forget((uint64_t)st->st_dev, (uint64_t)st->st_ino);
			gc_depth--;
		}
	} else if (view_open(&v)) {
		meta(&v, st, mapped);
		view_close(&v);
	}
	return w ? TOK_COUNTED | (uint64_t)b << 48 : 0;
}

uint64_t gc_intent_meta_fd(int fd, bool mapped)
{
	int saved = errno;
	struct stat st;
	uint64_t tok = 0;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		tok = meta_stat(&st, mapped, 0);
	errno = saved;
	return tok;
}

uint64_t gc_intent_meta_path(int dirfd, const char *path, int how)
{
	int saved = errno;
	struct stat st;
	uint64_t tok = 0;

	if (path && fstatat(dirfd, path, &st, how & GC_INTENT_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
	    S_ISREG(st.st_mode))
		tok = meta_stat(&st, false, how);
	errno = saved;
	return tok;
}

void gc_intent_meta_done(uint64_t tok)
{
	struct gi_wseg *w = __atomic_load_n(&gi_w, __ATOMIC_ACQUIRE);

	if ((tok & TOK_COUNTED) && w)
		count_done(w, TOK_BUCKET(tok), false);
}

void gc_intent_fdopen(int fd, const char *mode)
{
	int saved = errno;

	if (mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+')))
		gc_intent_meta_done(gc_intent_meta_fd(fd, true));
	errno = saved;
}

/* ---- fork and exit ---- */

GC_ONCE void gc_intent_atfork_prepare(void)
{
	if (!gc_intent_on)
		return;
	mu_lock();
	pthread_mutex_lock(&gi.files_mu);
}

GC_ONCE void gc_intent_atfork_parent(void)
{
	if (!gc_intent_on)
		return;
	pthread_mutex_unlock(&gi.files_mu);
	mu_unlock();
}

/* The child has its parent's descriptions of the log and segment (and so
 * its OFD lock): it attaches again with its own on first use. Its copy of
 * what the parent's threads were doing is not its own: a write in flight
 * there never ends here, ranges may be half noted, the parent's share of
 * the write counts is not the child's. So every file's next sync is a
 * real call, and the child's share starts from nothing. */
GC_ONCE void gc_intent_atfork_child(void)
{
	int i;

	if (!gc_intent_on)
		return;
	pthread_mutex_init(&gi.files_mu, NULL);
	pthread_mutex_init(&gi.mu, NULL);
	pthread_mutex_init(&gi.ck_mu, NULL);
	sig_restore(); /* what mu_lock in prepare blocked */
	for (i = 0; i < GI_CNT_LOCKS; i++)
		pthread_mutex_init(&gi_cnt_mu[i], NULL);
	memset(gi_own_start, 0, sizeof(gi_own_start));
	/* a slot of its own: the parent's description holds the parent's */
	if (gi_w) {
		char path[96];
		int fd;

		snprintf(path, sizeof(path), "/dev/shm/libgc-intent-w2-%u", (unsigned)geteuid());
		fd = move_high(gi_sys_open(path, O_RDWR | O_NOFOLLOW, 0));
		if (gi_wfd >= 0)
			gi_sys_close(gi_wfd);
		gi_wfd = fd;
		gi_wslot = fd >= 0 ? wslot_take(gi_w, fd) : -1;
	}
	for (i = 0; i < gi.nfiles; i++) {
		struct gi_file *f = &gi_files[i];

		pthread_mutex_init(&f->f_lock, NULL);
		f->f_inflight = 0;
		f->f_synced = false;
		f->f_base_ok = false;
	}
	if (gi.v.v_shm) {
		gc_bus_unguard(gi.v.v_shm);
		syscall(SYS_munmap, gi.v.v_shm, sizeof(*gi.v.v_shm));
	}
	if (gi.v.v_logfd >= 0)
		gi_sys_close(gi.v.v_logfd);
	if (gi.v.v_ctlfd >= 0)
		gi_sys_close(gi.v.v_ctlfd);
	gi.v.v_shm = NULL;
	gi.v.v_logfd = gi.v.v_ctlfd = -1;
	gi.state = GI_UNATTACHED;
	gi.ck_started = false;
}

GC_ONCE void gc_intent_exit(void)
{
	int i;
	bool last = true, clean;
	char path[128];

	if (!gc_intent_on || !gc_self() || gi.pid != gc_getpid() || gi.state != GI_OK)
		return;
	gc_depth++;
	checkpoint(&gi.v);
	if (log_lock()) {
		struct gi_shm *s = gi.v.v_shm;

		member_drop(&gi.v, gi.slot);
		s->s_members[gi.slot] = 0;
		for (i = 0; i < GI_SHM_MEMBERS; i++)
			if (member_alive(&gi.v, i))
				last = false;
		clean = s->s_head_seq == s->s_hdr.h_ckpt_seq && !s->s_broken && !s->s_frozen;
		if (last && clean) {
			shm_path(path, sizeof(path), gi.v.v_log_dev, gi.v.v_log_ino);
			syscall(SYS_unlink, path);
		}
		log_unlock();
	}
	mu_lock();
	gi.state = GI_OFF; /* later requests of this exit: real calls */
	mu_unlock();
	gc_depth--;
}
