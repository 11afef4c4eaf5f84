/* The intent log, library side (journal/intent.h, DESIGN.md "Intent log"):
 * scope and configuration, what the write family wrote to files in scope,
 * the log request (records under the log lock, then the domain's grouped
 * fdatasync of the log inode), the real path with its RETIRE, the shared
 * control segment, the checkpoint thread, and fork and exit. */
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
#include "core/log.h"
#include "core/stats.h"
#include "core/sys.h"
#include "journal/intent_fmt.h"
#include "journal/intent_log.h"
#include "journal/txn.h"

int gc_intent_on;

#define GI_DIRS 8
#define GI_FILES 1024
#define GI_FDS 4096
#define GI_RANGES 16
#define GI_SHM_FILES 512
#define GI_SHM_MEMBERS 64
#define GI_SHM_MAGIC 0x314d485354434749ULL /* "IGCTSHM1" */
#define GI_SHM_VERSION 1
#define GI_CKPT_NS (1000ULL * GC_NSEC_PER_MSEC)

/* ---- the shared control segment: untrusted, checked after each lock ---- */

enum { SF_MAPPED = 1 };
struct gi_shf {
	uint64_t sf_dev, sf_ino;
	uint64_t sf_last;	/* last DATA seq of the file (0: none) */
	uint32_t sf_flags;	/* SF_* */
	uint32_t sf_pad;
};

struct gi_shm {
	uint64_t s_magic;
	uint32_t s_version, s_size;
	uint64_t s_log_dev, s_log_ino;
	uint64_t s_mnt;		/* the log's mount (STATX_MNT_ID_UNIQUE) at creation */
	uint32_t s_uid;
	uint32_t s_broken;	/* a log write or sync failed: no new records */
	struct gi_hdr s_hdr;	/* the durable header */
	uint64_t s_head_seq, s_head_off;
	int32_t s_members[GI_SHM_MEMBERS];
	struct gi_shf s_files[GI_SHM_FILES];
};

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
};

struct gi_fdent {
	uint64_t e_dev, e_ino;
	int32_t e_file;		/* index + 1; 0: not in scope */
	uint32_t e_pad;
};

enum { GI_UNATTACHED, GI_OK, GI_OFF };

static struct {
	char dirs[GI_DIRS][GI_PATH_MAX];
	size_t dlen[GI_DIRS];
	int ndirs;
	char log[GI_PATH_MAX];
	uint64_t max;		/* bytes per request through the log */
	pthread_once_t once;
	int dirfd[GI_DIRS];	/* opened before any record: syncfs sees later errors */
	uint64_t dirdev[GI_DIRS];

	pthread_mutex_t mu;	/* the log lock's in-process half; then the OFD lock */
	int state;
	pid_t pid;
	int logfd, ctlfd;
	uint64_t log_dev, log_ino;
	struct gi_shm *shm;
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
	.logfd = -1,
	.ctlfd = -1,
};
static struct gi_file gi_files[GI_FILES];
static struct gi_fdent gi_fds[GI_FDS];

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

/* ---- configuration (start-up: one getenv when unset) ---- */

void gc_intent_configure(void)
{
	const char *v = getenv("LIBGC_INTENT"), *p, *q;
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
	v = getenv("LIBGC_INTENT_LOG");
	if (v && *v && *v == '/' && strlen(v) < GI_PATH_MAX)
		snprintf(gi.log, sizeof(gi.log), "%s", v);
	else if (v && *v)
		gc_log(GC_LOG_WARN, "LIBGC_INTENT_LOG: want an absolute path; using the default");
	if (!gi.log[0])
		snprintf(gi.log, sizeof(gi.log), "%.*s/.libgc-intent", GI_PATH_MAX - 16, gi.dirs[0]);
	gi.max = 64 * 1024;
	v = getenv("LIBGC_INTENT_MAX");
	if (v && *v) {
		unsigned long long m = strtoull(v, &end, 10);

		if (*end == 'k' || *end == 'K')
			m <<= 10, end++;
		if (*end || m < 512 || m > (1u << 20))
			gc_log(GC_LOG_WARN, "LIBGC_INTENT_MAX: want 512-1048576 bytes (or 1k-1024k); using 64k");
		else
			gi.max = m;
	}
	gc_intent_on = 1;
}

/* Scope directories resolved (realpath) and opened, once. */
static void scope_setup(void)
{
	int i, k = 0;

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
		snprintf(gi.dirs[k], GI_PATH_MAX, "%s", real);
		gi.dlen[k] = strlen(real);
		gi.dirfd[k] = fd;
		gi.dirdev[k] = (uint64_t)st.st_dev;
		k++;
	}
	gi.ndirs = k;
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
static void kernel_synced(struct gi_file *f);
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
		struct gi_shf *e = shf_find(gi.shm, dev, ino, false);

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
		    ((uint64_t)st->st_dev == gi.log_dev && (uint64_t)st->st_ino == gi.log_ino))
			goto out_none;
		n = fd_path(fd, path, sizeof(path));
		if (n < 0 || !in_scope(path) || fd_fid(fd, &fid) < 0)
			goto out_none;
		pthread_mutex_lock(&gi.files_mu);
		f = file_find((uint64_t)st->st_dev, (uint64_t)st->st_ino);
		if (!f) {
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

#define TOK_POS_MASK ((1ULL << 48) - 1)

uint64_t gc_intent_pos(int fd)
{
	int saved = errno;
	int32_t fi;
	long p;

	if (fd < 0 || fd >= GI_FDS || !(fi = gi_fds[fd].e_file) || gc_depth || !gc_self())
		return 0; /* first write through it: the range is widened below */
	__atomic_fetch_add(&gi_files[fi - 1].f_inflight, 1, __ATOMIC_ACQ_REL);
	p = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
	errno = saved;
	return (uint64_t)fi << 48 | (p < 0 ? 0 : ((uint64_t)p + 1) & TOK_POS_MASK);
}

static bool ts_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
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

void gc_intent_wrote(int fd, int64_t off, ssize_t n, uint64_t tok)
{
	int64_t pre = (tok & TOK_POS_MASK) ? (int64_t)(tok & TOK_POS_MASK) - 1 : -1;
	int saved = errno, fl;
	struct gi_file *f;
	struct stat st;

	if (n <= 0 || !gc_self() || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	if (gc_depth) {
		/* nested, or a signal handler that may have interrupted a
		 * holder of the locks below: no lock, the file is lost track of */
		struct gi_file *g = file_find((uint64_t)st.st_dev, (uint64_t)st.st_ino);

		if (g)
			__atomic_fetch_add(&g->f_lost, 1, __ATOMIC_ACQ_REL);
		goto out;
	}
	gc_depth++;
	f = file_of(fd, &st);
	if (!f) {
		gc_depth--;
		goto out;
	}
	fl = sys_fcntl(fd, F_GETFL, 0);
	pthread_mutex_lock(&f->f_lock);
	if (fl < 0 || off == GC_INTENT_OFF_UNKNOWN) {
		__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
	} else if (fl & O_APPEND) {
		f->f_append = true; /* from f_base to the end */
		f->f_app_stamp = ++f->f_wseq;
	} else if (off >= 0) {
		range_add(f, (uint64_t)off, (uint64_t)off + (uint64_t)n);
	} else {
		/* positionless: it went between the position before and after
		 * (other threads on the same description move it forward only) */
		long post = syscall(SYS_lseek, fd, 0L, SEEK_CUR);

		if (post < 0 || post < n)
			__atomic_fetch_add(&f->f_lost, 1, __ATOMIC_ACQ_REL);
		else if (pre < 0)
			range_add(f, (uint64_t)(post - n), (uint64_t)post);
		else
			range_add(f, (uint64_t)(pre < post - n ? pre : post - n),
				  (uint64_t)(post > pre + n ? post : pre + n));
	}
	/* the newest seen: notes of concurrent writes arrive in any order */
	if (!f->f_seen || ts_after(&st.st_ctim, &f->f_ctime))
		f->f_ctime = st.st_ctim;
	if (!f->f_seen || (uint64_t)st.st_size > f->f_size)
		f->f_size = (uint64_t)st.st_size;
	f->f_seen = true;
	pthread_mutex_unlock(&f->f_lock);
	if (fl >= 0 && (fl & O_DSYNC))
		kernel_synced(f);
	gc_depth--;
out:
	if (tok >> 48) /* a write in flight no more */
		__atomic_fetch_sub(&gi_files[(tok >> 48) - 1].f_inflight, 1, __ATOMIC_ACQ_REL);
	errno = saved;
}

/* ---- the log lock and the control segment ---- */

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

/* Everything read from the segment in range? (the log lock held) */
static bool shm_check(const struct gi_shm *s)
{
	uint64_t size = s->s_hdr.h_size;

	return s->s_magic == GI_SHM_MAGIC && s->s_version == GI_SHM_VERSION &&
	       s->s_size == sizeof(*s) && s->s_log_dev == gi.log_dev &&
	       s->s_log_ino == gi.log_ino && gi_hdr_valid(&s->s_hdr) &&
	       s->s_head_off >= GI_DATA_START && s->s_head_off < size &&
	       s->s_head_off % GI_ALIGN == 0 && s->s_head_seq >= s->s_hdr.h_ckpt_seq &&
	       gi_used(size, s->s_hdr.h_ckpt_off, s->s_head_off) < size - GI_DATA_START;
}

static void intent_off(const char *why)
{
	if (gi.state != GI_OFF)
		gc_log(GC_LOG_ERROR, "intent log %s: %s; making real calls", gi.log, why);
	gi.state = GI_OFF;
}

/* Takes the log lock: gi.mu, then the OFD lock on the control segment.
 * false (nothing held): the log is not usable here. */
static bool log_lock(void)
{
	pthread_mutex_lock(&gi.mu);
	if (gi.state != GI_OK || gi.pid != gc_getpid()) {
		pthread_mutex_unlock(&gi.mu);
		return false;
	}
	{
		struct stat st;

		/* the program may have closed or replaced our descriptors
		 * (close_range, dup2 onto them) */
		if (fstat(gi.logfd, &st) < 0 || (uint64_t)st.st_dev != gi.log_dev ||
		    (uint64_t)st.st_ino != gi.log_ino) {
			intent_off("its descriptor was closed or replaced by the program");
			pthread_mutex_unlock(&gi.mu);
			return false;
		}
	}
	if (ofd_lock(gi.ctlfd, F_WRLCK) < 0) {
		intent_off("the control segment cannot be locked");
		pthread_mutex_unlock(&gi.mu);
		return false;
	}
	if (!shm_check(gi.shm)) {
		intent_off("its control segment failed validation");
		ofd_lock(gi.ctlfd, F_UNLCK);
		pthread_mutex_unlock(&gi.mu);
		return false;
	}
	return true;
}

static void log_unlock(void)
{
	ofd_lock(gi.ctlfd, F_UNLCK);
	pthread_mutex_unlock(&gi.mu);
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

static bool alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
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

static int syncfs_dev(uint64_t dev)
{
	int i;

	for (i = 0; i < gi.ndirs; i++)
		if (gi.dirdev[i] == dev)
			return syscall(SYS_syncfs, gi.dirfd[i]) < 0 ? -errno : 0;
	return -ENODEV;
}

static void *ck_main(void *arg);

/* Attaches this process to the log (gi.mu held): opens it, maps or makes
 * its control segment, and refuses a log holding unreplayed records. */
static void attach(void)
{
	char path[128];
	struct gi_shm *s = NULL;
	struct stat st, cst;
	struct gi_hdr h;
	struct gi_end end;
	bool fresh = true;
	int64_t pending;
	int i, r;

	gi.state = GI_OFF;
	gi.pid = gc_getpid();
	pthread_once(&gi.once, scope_setup);
	if (!gi.ndirs) {
		gc_log(GC_LOG_ERROR, "LIBGC_INTENT: no directory of it can be opened; making real calls");
		return;
	}
	gi.logfd = move_high(gi_sys_open(gi.log, O_RDWR | O_NOFOLLOW, 0));
	if (gi.logfd < 0 || fstat(gi.logfd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    gi_log_header(gi.logfd, &h) < 0) {
		gc_log(GC_LOG_ERROR, "intent log %s: %s (create it with gcrun --intent-init %s); making real calls",
		       gi.log, gi.logfd < 0 ? strerror(-gi.logfd) : "not an intent log", gi.log);
		goto fail;
	}
	gi.log_dev = (uint64_t)st.st_dev;
	gi.log_ino = (uint64_t)st.st_ino;
	snprintf(path, sizeof(path), "/dev/shm/libgc-intent-%u-%llx-%llx", (unsigned)geteuid(),
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	gi.ctlfd = move_high(gi_sys_open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
	if (gi.ctlfd < 0 || fstat(gi.ctlfd, &cst) < 0 || cst.st_uid != geteuid() ||
	    (cst.st_mode & 077) || !S_ISREG(cst.st_mode)) {
		gc_log(GC_LOG_ERROR, "intent log %s: control segment %s is not ours; making real calls",
		       gi.log, path);
		goto fail;
	}
	if (ofd_lock(gi.ctlfd, F_WRLCK) < 0)
		goto fail;
	if (cst.st_size == (off_t)sizeof(*s) || cst.st_size == 0) {
		if (cst.st_size == 0 && ftruncate(gi.ctlfd, sizeof(*s)) < 0)
			goto fail_locked;
		s = (void *)syscall(SYS_mmap, NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED,
				    gi.ctlfd, 0L);
		if (s == MAP_FAILED)
			s = NULL;
	}
	if (!s)
		goto fail_locked;
	gc_bus_guard(s, sizeof(*s), shm_gone);
	gi.shm = s;
	if (shm_check(s) && !s->s_broken)
		for (i = 0; i < GI_SHM_MEMBERS; i++)
			if (alive(s->s_members[i]))
				fresh = false;
	if (fresh) {
		/* nobody attached: the log on disk is the truth */
		pending = gi_log_pending(gi.logfd, &end);
		if (pending < 0)
			goto fail_locked;
		if (pending > 0) {
			bool same = shm_check(s) && s->s_mnt && s->s_mnt == mount_id(gi.logfd) &&
				    s->s_hdr.h_gen == h.h_gen;

			/* No power cut since they were written (the same mount
			 * of the log, the same header): the page cache holds
			 * their bytes, a checkpoint retires them. Else refuse. */
			for (i = 0; same && i < GI_SHM_FILES; i++)
				if (s->s_files[i].sf_last && syncfs_dev(s->s_files[i].sf_dev) < 0)
					same = false;
			if (!same) {
				gc_log(GC_LOG_ERROR,
				       "intent log %s holds unreplayed records: run gcrun --recover %s; making real calls",
				       gi.log, gi.log);
				goto fail_locked;
			}
			h.h_ckpt_seq = end.e_seq;
			h.h_ckpt_off = end.e_off;
			if (gi_log_write_header(gi.logfd, &h) < 0)
				goto fail_locked;
		}
		memset(s, 0, sizeof(*s));
		s->s_version = GI_SHM_VERSION;
		s->s_size = sizeof(*s);
		s->s_log_dev = gi.log_dev;
		s->s_log_ino = gi.log_ino;
		s->s_uid = (uint32_t)geteuid();
		s->s_mnt = mount_id(gi.logfd);
		s->s_hdr = h;
		s->s_head_seq = h.h_ckpt_seq;
		s->s_head_off = h.h_ckpt_off;
		__atomic_store_n(&s->s_magic, GI_SHM_MAGIC, __ATOMIC_RELEASE);
	}
	if (!shm_check(s))
		goto fail_locked;
	for (i = 0; i < GI_SHM_MEMBERS; i++)
		if (!alive(s->s_members[i]) || s->s_members[i] == gi.pid) {
			s->s_members[i] = gi.pid;
			break;
		}
	r = i < GI_SHM_MEMBERS ? 0 : -ENOSPC;
	ofd_lock(gi.ctlfd, F_UNLCK);
	if (r < 0) {
		gc_log(GC_LOG_ERROR, "intent log %s: too many processes; making real calls", gi.log);
		goto fail;
	}
	gi.state = GI_OK;
	if (!gi.ck_started) {
		pthread_t t;
		pthread_attr_t a;
		sigset_t all, old;

		pthread_condattr_t ca;

		/* its wait is timed on the monotonic clock */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&gi.ck_cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		gi.ck_started = pthread_create(&t, &a, ck_main, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	return;
fail_locked:
	ofd_lock(gi.ctlfd, F_UNLCK);
fail:
	if (gi.shm) {
		gc_bus_unguard(gi.shm);
		syscall(SYS_munmap, gi.shm, sizeof(*gi.shm));
		gi.shm = NULL;
	}
	if (gi.logfd >= 0)
		gi_sys_close(gi.logfd);
	if (gi.ctlfd >= 0)
		gi_sys_close(gi.ctlfd);
	gi.logfd = gi.ctlfd = -1;
	gi.state = GI_OFF;
}

/* The log usable by this process (attaching on first use)? */
static bool log_ready(void)
{
	bool ok;

	pthread_mutex_lock(&gi.mu);
	if (gi.state == GI_UNATTACHED || gi.pid != gc_getpid())
		attach();
	ok = gi.state == GI_OK;
	pthread_mutex_unlock(&gi.mu);
	return ok;
}

/* ---- appending records (the log lock held) ---- */

/* Room for @need bytes at the head: the offset they go to, with a WRAP
 * written first when they do not fit before the end; -ENOSPC when the ring
 * would reach the checkpoint. */
static int64_t reserve(uint32_t need, uint64_t *seq)
{
	struct gi_shm *s = gi.shm;
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
		r = gi_sys_pwrite(gi.logfd, rec, sizeof(rec), head);
		if (r < 0)
			return r;
		s->s_head_seq++;
		s->s_head_off = GI_DATA_START;
	}
	*seq = s->s_head_seq;
	return (int64_t)at;
}

/* Writes @len bytes of built records (@nrec of them, seqs from @seq) at
 * @at and moves the head past them. */
static int commit_records(const uint8_t *buf, uint32_t len, int64_t at, uint32_t nrec)
{
	struct gi_shm *s = gi.shm;
	int r = gi_sys_pwrite(gi.logfd, buf, len, (uint64_t)at);

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
	struct gi_shm *s = gi.shm;
	uint64_t size = s->s_hdr.h_size;

	return gi_used(size, s->s_hdr.h_ckpt_off, s->s_head_off) > (size - GI_DATA_START) / 2;
}

/* A RETIRE of file (@dev, @ino, @fid) up to @upto, made durable. */
static int write_retire(uint64_t dev, uint64_t ino, const struct gi_fid *fid, uint64_t upto)
{
	uint8_t rec[GI_ALIGN * 2];
	struct gi_rec h = { .r_type = GI_RETIRE, .r_dev = dev, .r_ino = ino, .r_upto = upto };
	uint32_t len = gi_rec_len(fid->f_hlen, 0, 0);
	uint64_t seq;
	int64_t at;
	int r;

	if (!log_lock())
		return -EIO;
	if (gi.shm->s_broken) {
		log_unlock();
		return -EIO;
	}
	at = reserve(len, &seq);
	if (at < 0) {
		log_unlock();
		return (int)at;
	}
	h.r_seq = seq;
	memcpy(h.r_id, gi.shm->s_hdr.h_id, sizeof(h.r_id));
	gi_rec_build(rec, &h, fid, NULL, NULL);
	r = commit_records(rec, len, at, 1);
	log_unlock();
	if (!r)
		r = gi_sys_fsync(gi.logfd, 1);
	if (!r)
		gc_stat_inc(intent_retired);
	return r;
}

/* ---- the checkpoint ---- */

/* Makes every file with a record below the head durable (syncfs of their
 * filesystems), then writes the header that retires those records. */
static int checkpoint(void)
{
	uint64_t devs[GI_DIRS], hseq, hoff;
	int nd = 0, i, k, r = 0;
	struct gi_shm *s;

	if (!log_lock())
		return -EIO;
	s = gi.shm;
	hseq = s->s_head_seq;
	hoff = s->s_head_off;
	if (hseq == s->s_hdr.h_ckpt_seq) {
		log_unlock();
		return 0;
	}
	for (i = 0; i < GI_SHM_FILES; i++) {
		struct gi_shf *e = &s->s_files[i];

		if (!e->sf_last || e->sf_last < s->s_hdr.h_ckpt_seq)
			continue;
		for (k = 0; k < nd && devs[k] != e->sf_dev; k++)
			;
		if (k == nd) {
			if (nd == GI_DIRS || !dev_in_scope(e->sf_dev)) {
				r = -ENODEV;
				break;
			}
			devs[nd++] = e->sf_dev;
		}
	}
	log_unlock();
	for (k = 0; k < nd && !r; k++)
		r = syncfs_dev(devs[k]);
	if (r) {
		pthread_mutex_lock(&gi.mu);
		if (!gi.warned)
			gc_log(GC_LOG_ERROR, "intent log %s: checkpoint failed (%s); its records are kept",
			       gi.log, strerror(-r));
		gi.warned = true;
		pthread_mutex_unlock(&gi.mu);
		return r;
	}
	if (!log_lock())
		return -EIO;
	s = gi.shm;
	if (s->s_hdr.h_ckpt_seq < hseq) {
		struct gi_hdr h = s->s_hdr;

		h.h_ckpt_seq = hseq;
		h.h_ckpt_off = hoff;
		r = gi_log_write_header(gi.logfd, &h);
		if (!r) {
			s->s_hdr = h;
			for (i = 0; i < GI_SHM_FILES; i++)
				if (s->s_files[i].sf_last && s->s_files[i].sf_last < hseq)
					s->s_files[i].sf_last = 0;
			gc_stat_inc(intent_ckpts);
		} else {
			s->s_broken = 1;
		}
	}
	log_unlock();
	return r;
}

static void *ck_main(void *arg)
{
	gc_depth++; /* its calls are the library's own */
	pthread_mutex_lock(&gi.ck_mu);
	for (;;) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		if (!gi.ck_kick)
			pthread_cond_timedwait(&gi.ck_cv, &gi.ck_mu, &ts);
		gi.ck_kick = false;
		pthread_mutex_unlock(&gi.ck_mu);
		if (gi.pid == gc_getpid() && gi.state == GI_OK)
			checkpoint();
		pthread_mutex_lock(&gi.ck_mu);
	}
	return NULL;
}

/* ---- requests ---- */

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The real path: the program's own real call on @fd, then, when the file
 * has records in the log, a durable RETIRE of them before returning. */
static int real_and_retire(struct gi_file *f, int fd, const struct stat *st, bool datasync,
			   enum gc_origin origin, uint64_t begun, bool direct)
{
	uint64_t upto = 0, s0 = 0;
	uint32_t lost0 = 0;
	int r;
	bool live = false;
	struct gi_fid fid;

	if (log_lock()) {
		struct gi_shf *e = shf_find(gi.shm, (uint64_t)st->st_dev, (uint64_t)st->st_ino, false);

		if (e && e->sf_last >= gi.shm->s_hdr.h_ckpt_seq) {
			upto = e->sf_last;
			live = true;
		}
		log_unlock();
	}
	/* What was noted before the call is covered by it; the ranges stay
	 * until it succeeded, so that a request logged meanwhile still logs
	 * them (it must not be acknowledged on a real call not finished). */
	if (f) {
		pthread_mutex_lock(&f->f_lock);
		s0 = f->f_wseq;
		lost0 = __atomic_load_n(&f->f_lost, __ATOMIC_ACQUIRE);
		pthread_mutex_unlock(&f->f_lock);
	}
	gc_stat_inc(intent_real);
	r = direct ? gc_sync_direct(fd, datasync, origin)
		   : gc_sync_grouped(fd, datasync, origin, begun);
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
		if (fstat(fd, &now) == 0) {
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
	else if (fd_fid(fd, &fid) < 0)
		return -EIO;
	/* bytes newer than the file's records are durable and about to be
	 * acknowledged: those records must never be replayed over them */
	if (write_retire((uint64_t)st->st_dev, (uint64_t)st->st_ino, &fid, upto) < 0) {
		if (checkpoint() < 0)
			return -EIO;
	}
	return 0;
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
 * log lock. 0: written (or nothing to write); 1: the log cannot take them
 * (the real path serves); -errno. */
static int log_records(struct gi_file *f, int fd, const struct stat *st0)
{
	struct gi_range rg[GI_RANGES + 1];
	uint64_t seq, size, bytes = 0, last = 0;
	uint32_t len = 0, nrec = 0, i;
	struct gi_shf *e;
	uint8_t *buf = NULL, *p;
	struct stat st;
	int nr, rfd, r = 0;
	int64_t at;

	if (!log_lock())
		return 1;
	if (gi.shm->s_broken) {
		log_unlock();
		return 1;
	}
	/* the row found last time, if it still names the file (a hint only:
	 * anything read from the segment is checked before use) */
	e = f->f_shf && f->f_shf <= GI_SHM_FILES ? &gi.shm->s_files[f->f_shf - 1] : NULL;
	if (!e || e->sf_dev != f->f_dev || e->sf_ino != f->f_ino || (!e->sf_last && !e->sf_flags))
		e = shf_find(gi.shm, f->f_dev, f->f_ino, true);
	if (e)
		f->f_shf = (uint32_t)(e - gi.shm->s_files) + 1;
	if (!e || (e->sf_flags & SF_MAPPED)) {
		gc_log(GC_LOG_TRACE, "intent: %s: %s", f->f_path,
		       e ? "mapped writable by a process" : "the control segment's file table is full");
		log_unlock();
		return 1;
	}
	/* a write of ours between its real call and its note would look
	 * like another writer's change: let those finish (they take no lock
	 * of the log's) */
	for (i = 0; i < 5000 && __atomic_load_n(&f->f_inflight, __ATOMIC_ACQUIRE); i++)
		sched_yield();
	pthread_mutex_lock(&f->f_lock);
	/* read under the lock: the content of any lower seq was read earlier */
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_ino != f->f_ino ||
	    __atomic_load_n(&f->f_lost, __ATOMIC_ACQUIRE) != f->f_lost_ok || !f->f_seen ||
	    !same_time(&st.st_ctim, &f->f_ctime) || (uint64_t)st.st_size != f->f_size) {
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
		uint64_t lo = f->f_r[i].lo, hi = f->f_r[i].hi < size ? f->f_r[i].hi : size;

		if (lo < hi)
			rg[nr++] = (struct gi_range){ lo, hi, 0 };
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
	if (nr) {
		rfd = read_fd(f, fd);
		buf = malloc(len);
		if (rfd < 0 || !buf) {
			r = 1;
			goto out;
		}
		at = reserve(len, &seq);
		if (at < 0) {
			r = at == -ENOSPC ? 2 : 1;
			goto out;
		}
		for (p = buf, i = 0; i < (uint32_t)nr; i++) {
			uint32_t dlen = (uint32_t)(rg[i].hi - rg[i].lo);
			uint8_t *data = p + sizeof(struct gi_rec) + f->f_fid.f_hlen + f->f_plen;
			struct gi_rec rec = { .r_type = GI_DATA, .r_seq = seq + i, .r_dev = f->f_dev,
					      .r_ino = f->f_ino, .r_off = rg[i].lo, .r_size = size,
					      .r_dlen = dlen, .r_plen = f->f_plen };

			memcpy(rec.r_id, gi.shm->s_hdr.h_id, sizeof(rec.r_id));
			/* the bytes read in place first, then the record around them */
			if ((r = gi_sys_pread(rfd, data, dlen, rg[i].lo)) < 0)
				break;
			p += gi_rec_build(p, &rec, &f->f_fid, f->f_path, NULL);
			last = seq + i;
			nrec++;
		}
		if (r < 0) {
			r = 1;
			goto out;
		}
		r = commit_records(buf, len, at, nrec);
		if (r < 0) {
			r = 1;
			goto out;
		}
		e->sf_last = last;
		gc_stat_add(intent_records, nrec);
		gc_stat_add(intent_bytes, bytes);
	}
	f->f_nr = 0;
	f->f_append = false;
	f->f_base = size;
	if (log_half_full())
		ck_kick();
out:
	pthread_mutex_unlock(&f->f_lock);
	log_unlock();
	free(buf);
	return r;
}

int gc_intent_real(int fd, bool datasync, enum gc_origin origin)
{
	struct gi_file *f;
	struct stat st;

	if (!gc_self() || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return GC_INTENT_PASS;
	f = file_of(fd, &st);
	if (!f || !log_ready())
		return GC_INTENT_PASS;
	return real_and_retire(f, fd, &st, datasync, origin, 0, true);
}

void gc_intent_synced_all(void)
{
	if (!gc_self() || gc_depth || gi.state != GI_OK || gi.pid != gc_getpid())
		return;
	gc_depth++;
	checkpoint();
	gc_depth--;
}

/* A write the kernel itself made durable (a descriptor opened O_SYNC or
 * O_DSYNC that libgc left to the kernel): acknowledged when it returns,
 * so the file's older records are retired first. */
static void kernel_synced(struct gi_file *f)
{
	uint64_t upto = 0;
	struct gi_fid fid;
	bool live = false;

	if (!log_ready() || !log_lock())
		return;
	{
		struct gi_shf *e = shf_find(gi.shm, f->f_dev, f->f_ino, false);

		if (e && e->sf_last >= gi.shm->s_hdr.h_ckpt_seq) {
			upto = e->sf_last;
			live = true;
		}
	}
	log_unlock();
	pthread_mutex_lock(&f->f_lock);
	fid = f->f_fid;
	pthread_mutex_unlock(&f->f_lock);
	if (live && write_retire(f->f_dev, f->f_ino, &fid, upto) < 0)
		checkpoint();
}

int gc_intent_sync(int fd, bool datasync, enum gc_origin origin, uint64_t begun)
{
	struct gi_file *f;
	struct stat st;
	bool eligible;
	int r, tries;

	if (!gc_self() || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
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
		r = log_records(f, fd, &st);
		if (r != 2 || tries)
			break;
		checkpoint(); /* the log is full: wait for room once */
	}
	if (r) {
		gc_log(GC_LOG_TRACE, "intent: %s: real call (%s)", f->f_path,
		       r == 2 ? "the log is full" : "the log cannot take it");
		return real_and_retire(f, fd, &st, datasync, origin, begun, false);
	}
	gc_stat_inc(intent_logged);
	/* one real fdatasync of the log inode, started after our records
	 * (and every lower seq) were written, shared with the domain's other
	 * requests on it (rule 1, for the log inode) */
	r = gc_sync_grouped(gi.logfd, true, origin, begun);
	if (r < 0) {
		pthread_mutex_lock(&gi.mu);
		if (gi.shm)
			gi.shm->s_broken = 1;
		pthread_mutex_unlock(&gi.mu);
		return r;
	}
	/* a writeback error of the file this description has not seen yet is
	 * this request's, as the kernel would have reported it */
	return gc_commit_pending_error(fd);
}

/* ---- calls that change a file other than by writing its bytes ---- */

static void meta(const struct stat *st, bool mapped)
{
	struct gi_file *f = file_find((uint64_t)st->st_dev, (uint64_t)st->st_ino);
	bool live = false;

	if (f) {
		pthread_mutex_lock(&f->f_lock);
		f->f_synced = false; /* its next sync is a real call */
		f->f_mapped |= mapped;
		pthread_mutex_unlock(&f->f_lock);
	}
	if (!log_ready() || !log_lock())
		return;
	{
		struct gi_shf *e = shf_find(gi.shm, (uint64_t)st->st_dev, (uint64_t)st->st_ino, mapped);

		live = e && e->sf_last >= gi.shm->s_hdr.h_ckpt_seq;
		if (e && mapped)
			e->sf_flags |= SF_MAPPED;
	}
	log_unlock();
	if (live)
		checkpoint();
}

void gc_intent_meta_fd(int fd, bool mapped)
{
	int saved = errno;
	struct stat st;

	if (gc_self() && !gc_depth && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pthread_once(&gi.once, scope_setup);
		if (dev_in_scope((uint64_t)st.st_dev)) {
			gc_depth++;
			meta(&st, mapped);
			gc_depth--;
		}
	}
	errno = saved;
}

void gc_intent_meta_path(int dirfd, const char *path, int how)
{
	int saved = errno;
	struct stat st;

	if (gc_self() && !gc_depth && path &&
	    fstatat(dirfd, path, &st, how & GC_INTENT_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
	    S_ISREG(st.st_mode)) {
		pthread_once(&gi.once, scope_setup);
		if (dev_in_scope((uint64_t)st.st_dev)) {
			gc_depth++;
			meta(&st, false);
			if ((how & GC_INTENT_GONE) && st.st_nlink <= 1)
				file_forget((uint64_t)st.st_dev, (uint64_t)st.st_ino);
			gc_depth--;
		}
	}
	errno = saved;
}

/* ---- fork and exit ---- */

void gc_intent_atfork_prepare(void)
{
	if (!gc_intent_on)
		return;
	pthread_mutex_lock(&gi.mu);
	pthread_mutex_lock(&gi.files_mu);
}

void gc_intent_atfork_parent(void)
{
	if (!gc_intent_on)
		return;
	pthread_mutex_unlock(&gi.files_mu);
	pthread_mutex_unlock(&gi.mu);
}

/* The child has its parent's descriptions of the log and segment (and so
 * its OFD lock): it attaches again with its own on first use. */
void gc_intent_atfork_child(void)
{
	int i;

	if (!gc_intent_on)
		return;
	pthread_mutex_init(&gi.files_mu, NULL);
	pthread_mutex_init(&gi.mu, NULL);
	pthread_mutex_init(&gi.ck_mu, NULL);
	for (i = 0; i < gi.nfiles; i++)
		pthread_mutex_init(&gi_files[i].f_lock, NULL);
	if (gi.shm) {
		gc_bus_unguard(gi.shm);
		syscall(SYS_munmap, gi.shm, sizeof(*gi.shm));
	}
	if (gi.logfd >= 0)
		gi_sys_close(gi.logfd);
	if (gi.ctlfd >= 0)
		gi_sys_close(gi.ctlfd);
	gi.shm = NULL;
	gi.logfd = gi.ctlfd = -1;
	gi.state = GI_UNATTACHED;
	gi.ck_started = false;
}

void gc_intent_exit(void)
{
	int i;
	bool last = true, clean;
	char path[128];

	if (!gc_intent_on || !gc_self() || gi.pid != gc_getpid() || gi.state != GI_OK)
		return;
	gc_depth++;
	checkpoint();
	if (log_lock()) {
		struct gi_shm *s = gi.shm;

		for (i = 0; i < GI_SHM_MEMBERS; i++) {
			if (s->s_members[i] == gi.pid)
				s->s_members[i] = 0;
			else if (alive(s->s_members[i]))
				last = false;
		}
		clean = s->s_head_seq == s->s_hdr.h_ckpt_seq && !s->s_broken;
		if (last && clean) {
			snprintf(path, sizeof(path), "/dev/shm/libgc-intent-%u-%llx-%llx",
				 (unsigned)geteuid(), (unsigned long long)gi.log_dev,
				 (unsigned long long)gi.log_ino);
			syscall(SYS_unlink, path);
		}
		log_unlock();
	}
	pthread_mutex_lock(&gi.mu);
	gi.state = GI_OFF; /* later requests of this exit: real calls */
	pthread_mutex_unlock(&gi.mu);
	gc_depth--;
}
