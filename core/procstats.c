// SPDX-License-Identifier: LGPL-2.1-or-later
/* The per-process stats segment: made at the first sync request, removed
 * at exit, given up in a fork child; the pruning of segments that killed
 * processes left; and the reader's side for gcstat. The writer uses raw
 * system calls for files: open and close are interposed. */
#include "core/procstats.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/busguard.h"
#include "core/name.h"
#include "core/sys.h"

enum { PS_OFF, PS_IDLE, PS_MAKING, PS_READY, PS_FAILED };
GC_START static int ps_state = PS_OFF;
GC_START int gc_ps_idle;			/* ps_state == PS_IDLE, for gc_ps_need */
GC_START uint64_t gc_ps_first_ns;	/* CLOCK_MONOTONIC at the first sync request */

static void ps_set(int st)
{
	__atomic_store_n(&ps_state, st, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_ps_idle, st == PS_IDLE, __ATOMIC_RELEASE);
}
GC_START static struct gc_ps_seg *ps_seg;
static size_t ps_len;			/* the mapping of ps_seg */
GC_START static void *ps_sites_map;		/* the call sites, mapped after the fact */
static uint64_t ps_ino;			/* the file made, to grow the right one */
static int32_t ps_owner;		/* pid that made ps_seg */
static char ps_dir[200] = GC_PS_DIR;
static char ps_path[300];

static int raw_open(const char *path, int flags, int mode)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
}

static void raw_close(int fd)
{
	syscall(SYS_close, fd);
}

/* Reads up to @len - 1 bytes of a small file; returns the length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = raw_open(path, O_RDONLY, 0);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 &&
	       (n = (ssize_t)syscall(SYS_read, fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	raw_close(fd);
	buf[got] = '\0';
	return got;
}

/* /proc/PID/stat's start time (field 22) and, into @comm when not NULL,
 * the command between its parentheses. */
static uint64_t starttime_of(const char *statpath, char *comm, size_t len)
{
	char buf[512], *p, *o;	/* 52 numbers and a 16-byte name */
	int field;

	if (slurp(statpath, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
	o = strchr(buf, '(');
	if (comm && o && o < p) {
		size_t n = (size_t)(p - o - 1) < len - 1 ? (size_t)(p - o - 1) : len - 1;

		memcpy(comm, o + 1, n);
		comm[n] = '\0';
	}
	/* after "pid (comm)": field 3 is the state; the start time is 22 */
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

uint64_t gc_ps_starttime(int32_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return starttime_of(path, NULL, 0);
}

int gc_ps_name(char *buf, size_t len, uint32_t uid, uint64_t pidns, int32_t pid)
{
	struct gc_name b = gc_name_in(buf, len);

	/* GC_PS_PREFIX "%u-%" PRIu64 "-%d", without snprintf's stack */
	gc_name_str(&b, GC_PS_PREFIX);
	gc_name_num(&b, uid, 10);
	gc_name_char(&b, '-');
	gc_name_num(&b, pidns, 10);
	gc_name_char(&b, '-');
	if (pid < 0)
		gc_name_char(&b, '-');
	gc_name_num(&b, pid < 0 ? -(uint64_t)pid : (uint64_t)pid, 10);
	return gc_name_end(&b);
}

/* @dir/@name into @buf; false if cut. */
static bool ps_join(char *buf, size_t len, const char *dir, const char *name)
{
	struct gc_name b = gc_name_in(buf, len);

	gc_name_str(&b, dir);
	gc_name_char(&b, '/');
	gc_name_str(&b, name);
	return gc_name_end(&b) < (int)len;
}

/* Decimal digits up to @stop, at most @max; advances *@s past @stop. */
static bool parse_dec(const char **s, char stop, uint64_t max, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (max - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (*p != stop)
		return false;
	*s = stop ? p + 1 : p;
	*out = v;
	return true;
}

/* By hand: the library parses every name in the directory, and scanf's
 * code is more of libc than the rest of the library touches. */
bool gc_ps_parse_name(const char *name, uint32_t *uid, uint64_t *pidns, int32_t *pid)
{
	const char *p = name + strlen(GC_PS_PREFIX);
	uint64_t u, ns, pd;

	if (strncmp(name, GC_PS_PREFIX, strlen(GC_PS_PREFIX)) ||
	    !parse_dec(&p, '-', UINT32_MAX, &u) || !parse_dec(&p, '-', UINT64_MAX, &ns) ||
	    !parse_dec(&p, '\0', INT32_MAX, &pd) || pd == 0)
		return false;
	*uid = (uint32_t)u;
	*pidns = ns;
	*pid = (int32_t)pd;
	return true;
}

const char *gc_ps_dir(void)
{
	const char *d = getenv("LIBGC_STATS_DIR");

	return d && d[0] == '/' ? d : ps_dir;
}

void gc_ps_configure(bool on, const char *dir)
{
	if (dir && dir[0] == '/' && strlen(dir) < sizeof(ps_dir))
		strcpy(ps_dir, dir);
	ps_set(on ? PS_IDLE : PS_OFF);
}

bool gc_ps_active(void)
{
	return __atomic_load_n(&ps_state, __ATOMIC_ACQUIRE) == PS_READY;
}

static void fill_identity(struct gc_ps_seg *s, int32_t pid, uint32_t uid, uint64_t pidns)
{
	char buf[sizeof(s->ps_cmd)];
	ssize_t n, i;
	struct timespec ts;

	__atomic_store_n(&s->ps_seq, 1, __ATOMIC_RELEASE);
	s->ps_version = GC_PS_VERSION;
	s->ps_size = sizeof(*s);
	s->ps_pid = pid;
	s->ps_uid = uid;
	s->ps_pidns = pidns;
	/* the command too: one file read, not two */
	s->ps_starttime = starttime_of("/proc/self/stat", s->ps_comm, sizeof(s->ps_comm));
	clock_gettime(CLOCK_REALTIME, &ts);
	s->ps_made_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	s->ps_nslots = GC_STAT_ALL;
	s->ps_nfields = GC_STATS_NFIELDS;
	s->ps_nhist_ns = GC_HIST_NS;
	s->ps_nhist_batch = GC_HIST_BATCH;
	s->ps_nsites = GC_SITES;
	s->ps_site_depth = GC_SITE_DEPTH;
	s->ps_site_hist = GC_SITE_HIST;
	s->ps_site_shards = GC_SITE_SHARDS;
	n = slurp("/proc/self/cmdline", buf, sizeof(buf));
	for (i = 0; i < n - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
	if (n > 0)
		memcpy(s->ps_cmd, buf, (size_t)n + 1 <= sizeof(s->ps_cmd) ? (size_t)n + 1
									    : sizeof(s->ps_cmd));
	s->ps_cmd[sizeof(s->ps_cmd) - 1] = '\0';
	__atomic_store_n(&s->ps_seq, 2, __ATOMIC_RELEASE);
	__atomic_store_n(&s->ps_magic, GC_PS_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Segments that processes of this user and pid namespace left behind
 * (SIGKILL, a crash: exit and _exit remove theirs) are removed by the next
 * process of the user that makes one, not only by gcstat: a thousand
 * killed backends must not keep their segments in memory. Only regular
 * files owned by this user whose pid is gone; one pass over the directory,
 * under ps_state's MAKING (a single user of the buffer).
 */
static void prune(uint32_t uid, uint64_t pidns, int32_t self)
{
	static char buf[16384] GC_LARGE;
	int dir, checked = 0;
	long n;

	dir = raw_open(ps_dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK, 0);
	if (dir < 0)
		return;
	while (checked < 256 && (n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && checked < 256;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
				 unsigned char type; char name[]; } *d = (void *)(buf + off);
			uint32_t u;
			uint64_t ns;
			int32_t pid;
			struct stat st;

			off += d->reclen;
			if (!gc_ps_parse_name(d->name, &u, &ns, &pid) || u != uid || ns != pidns ||
			    pid == self)
				continue;
			checked++;
			if (syscall(SYS_kill, pid, 0) == 0 || errno != ESRCH)
				continue;
			if (syscall(SYS_newfstatat, dir, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISREG(st.st_mode) && st.st_uid == uid)
				syscall(SYS_unlinkat, dir, d->name, 0);
		}
	}
	raw_close(dir);
}

/* Maps the call sites of the open segment file @fd (sized for them). */
static void *map_sites(int fd)
{
	void *m = gc_sys_mmap(NULL, sizeof(struct gc_site_area), PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, (off_t)GC_PS_SITES_OFF);

	if (m == MAP_FAILED)
		return NULL;
	gc_bus_guard(m, sizeof(struct gc_site_area), NULL);
	return m;
}

void gc_ps_ensure(bool sites)
{
	int st = PS_IDLE, fd, saved, tries;
	size_t len = sites ? GC_PS_SIZE_SITES : sizeof(struct gc_ps_seg);
	struct stat fst;
	uint64_t pidns;
	uint32_t uid;
	int32_t pid;
	char name[96];
	void *m;

	if (__atomic_load_n(&ps_state, __ATOMIC_RELAXED) != PS_IDLE ||
	    !__atomic_compare_exchange_n(&ps_state, &st, PS_MAKING, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return; /* made, off, failed, or being made: its counts go on privately */
	__atomic_store_n(&gc_ps_idle, 0, __ATOMIC_RELEASE);
	saved = errno;
	pid = gc_getpid();
	uid = (uint32_t)syscall(SYS_geteuid);
	pidns = gc_sys_pidns();
	gc_ps_name(name, sizeof(name), uid, pidns, pid);
	ps_join(ps_path, sizeof(ps_path), ps_dir, name);
	for (tries = 0; tries < 2; tries++) {
		fd = raw_open(ps_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		/* ours by name: a dead process's of a recycled pid, or the
		 * image this process was before exec */
		syscall(SYS_unlink, ps_path);
	}
	if (fd < 0)
		goto fail;
	if (!gc_sys_fsize_ok(len) || syscall(SYS_ftruncate, fd, (long)len) < 0 ||
	    syscall(SYS_fstat, fd, &fst) < 0) {
		raw_close(fd);
		syscall(SYS_unlink, ps_path);
		goto fail;
	}
	m = gc_sys_mmap(NULL, sizeof(struct gc_ps_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED && sites)
		ps_sites_map = map_sites(fd);
	raw_close(fd);
	if (m == MAP_FAILED) {
		syscall(SYS_unlink, ps_path);
		goto fail;
	}
	/* another process of this user may cut the file short: counts then
	 * go on into private zeroed memory instead of raising SIGBUS */
	gc_bus_guard(m, sizeof(struct gc_ps_seg), NULL);
	ps_seg = m;
	ps_len = sizeof(struct gc_ps_seg);
	ps_ino = (uint64_t)fst.st_ino;
	ps_owner = pid;
	fill_identity(ps_seg, pid, uid, pidns);
	gc_stats_switch(&ps_seg->ps_stats);
	if (ps_sites_map) {
		__atomic_store_n(&gc_sites_base, ps_sites_map, __ATOMIC_RELEASE);
		__atomic_store_n(&ps_seg->ps_sites_at, (uint32_t)GC_PS_SITES_OFF, __ATOMIC_RELEASE);
	}
	ps_set(PS_READY);
	prune(uid, pidns, pid);
	errno = saved;
	return;
fail:
	ps_set(PS_FAILED);
	errno = saved;
}

bool gc_ps_sites_wanted(void)
{
	struct gc_ps_seg *s = __atomic_load_n(&ps_seg, __ATOMIC_ACQUIRE);

	return s && __atomic_load_n(&s->ps_want_sites, __ATOMIC_RELAXED);
}

bool gc_ps_add_sites(void)
{
	struct gc_ps_seg *s = __atomic_load_n(&ps_seg, __ATOMIC_ACQUIRE);
	struct stat st;
	void *m = NULL;
	int fd, saved = errno;

	if (!s || __atomic_load_n(&ps_sites_map, __ATOMIC_ACQUIRE))
		return s != NULL;
	/* the file we made, not one put at its name since */
	fd = raw_open(ps_path, O_RDWR | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_ino == ps_ino && gc_sys_fsize_ok(GC_PS_SIZE_SITES) &&
	    syscall(SYS_ftruncate, fd, (long)GC_PS_SIZE_SITES) == 0)
		m = map_sites(fd);
	if (fd >= 0)
		raw_close(fd);
	errno = saved;
	if (!m)
		return false;
	/* rows counted so far stay in private memory: the report adds them */
	__atomic_store_n(&ps_sites_map, m, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_base, m, __ATOMIC_RELEASE);
	__atomic_store_n(&s->ps_sites_at, (uint32_t)GC_PS_SITES_OFF, __ATOMIC_RELEASE);
	return true;
}

void gc_ps_exit(void)
{
	int saved = errno;

	if (__atomic_load_n(&ps_state, __ATOMIC_ACQUIRE) == PS_READY &&
	    ps_owner == gc_getpid())
		syscall(SYS_unlink, ps_path);
	errno = saved;
}

GC_ONCE void gc_ps_atfork_child(void)
{
	struct gc_ps_seg *s = ps_seg;
	void *sm = ps_sites_map;
	int st = __atomic_load_n(&ps_state, __ATOMIC_RELAXED);

	if (st == PS_OFF || (st == PS_IDLE && !s && !sm))
		return; /* no segment: nothing to forget, and no page written */
	/* gc_stats_reset, the caller, zeroes the private counters next */
	__atomic_store_n(&gc_stats_base, gc_stats_private(), __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_base, gc_sites_private(), __ATOMIC_RELEASE);
	ps_seg = NULL;
	ps_sites_map = NULL;
	if (s) {
		gc_bus_unguard(s);
		munmap(s, ps_len);
	}
	if (sm) {
		gc_bus_unguard(sm);
		munmap(sm, sizeof(struct gc_site_area));
	}
	ps_set(PS_IDLE);
}

/* ---- the reader's side -------------------------------------------------- */

static bool layout_ok(const struct gc_ps_seg *s)
{
	return s->ps_version == GC_PS_VERSION && s->ps_size == sizeof(*s) &&
	       s->ps_nslots == GC_STAT_ALL && s->ps_nfields == GC_STATS_NFIELDS &&
	       s->ps_nhist_ns == GC_HIST_NS && s->ps_nhist_batch == GC_HIST_BATCH &&
	       s->ps_nsites == GC_SITES && s->ps_site_depth == GC_SITE_DEPTH &&
	       s->ps_site_hist == GC_SITE_HIST && s->ps_site_shards == GC_SITE_SHARDS;
}

void gc_ps_close(struct gc_ps_map *m)
{
	if (m->pm_seg) {
		gc_bus_unguard(m->pm_seg);
		munmap(m->pm_seg, m->pm_len);
	}
	m->pm_seg = NULL;
	m->pm_len = 0;
}

/* Opens the segment @name in @dir for @mode (O_RDONLY, O_RDWR), whatever a
 * peer planted there: a FIFO under the name must not stop us in open, nor
 * a symlink take us elsewhere; it must be a regular file of at least a
 * segment's header, owned by the uid its name claims (the counts are
 * that user's). Returns the descriptor, -EPROTO for a file that is not a
 * segment, -EPERM for another owner, or -errno. */
static int seg_open(const char *dir, const char *name, int mode, struct stat *st,
		    uint32_t *uid, int32_t *pid)
{
	char path[4096];
	uint64_t pidns;
	int fd;

	if (!gc_ps_parse_name(name, uid, &pidns, pid) || !ps_join(path, sizeof(path), dir, name))
		return -EPROTO;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path,
			  mode | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0);
	if (fd < 0)
		return -errno;
	if (gc_sys_fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    st->st_size < (off_t)sizeof(struct gc_ps_seg)) {
		close(fd);
		return -EPROTO;
	}
	if (st->st_uid != *uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gc_ps_open(const char *dir, const char *name, struct gc_ps_map *out)
{
	struct gc_ps_seg *s;
	struct stat st;
	uint32_t uid;
	int32_t pid;
	size_t len;
	int fd, e;

	memset(out, 0, sizeof(*out));
	fd = seg_open(dir, name, O_RDONLY, &st, &uid, &pid);
	if (fd < 0)
		return fd;
	len = st.st_size >= (off_t)GC_PS_SIZE_SITES ? GC_PS_SIZE_SITES : sizeof(struct gc_ps_seg);
	s = gc_sys_mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	if (s == MAP_FAILED)
		return -e;
	gc_bus_guard(s, len, NULL); /* its writer may cut it short */
	out->pm_seg = s;
	out->pm_len = len;
	out->pm_ino = (uint64_t)st.st_ino;
	if (__atomic_load_n(&s->ps_magic, __ATOMIC_ACQUIRE) != GC_PS_MAGIC) {
		gc_ps_close(out);
		return -EAGAIN;
	}
	if (!layout_ok(s) || s->ps_uid != uid || s->ps_pid != pid) {
		gc_ps_close(out);
		return -EPROTO;
	}
	return 0;
}

int gc_ps_snap(const struct gc_ps_map *m, struct gc_ps_snap *out)
{
	const struct gc_ps_seg *s = m->pm_seg;
	uint64_t seq;
	int tries;

	memset(out, 0, sizeof(*out));
	for (tries = 0; tries < 100; tries++) {
		seq = __atomic_load_n(&s->ps_seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;
		out->sn_pid = s->ps_pid;
		out->sn_uid = s->ps_uid;
		out->sn_pidns = s->ps_pidns;
		out->sn_starttime = s->ps_starttime;
		out->sn_made_ns = s->ps_made_ns;
		memcpy(out->sn_comm, s->ps_comm, sizeof(out->sn_comm));
		memcpy(out->sn_cmd, s->ps_cmd, sizeof(out->sn_cmd));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->ps_seq, __ATOMIC_RELAXED) == seq)
			break;
	}
	out->sn_comm[sizeof(out->sn_comm) - 1] = '\0';
	out->sn_cmd[sizeof(out->sn_cmd) - 1] = '\0';
	gc_stats_sum_area(&s->ps_stats, &out->sn_s, &out->sn_h, &out->sn_err);
	return tries < 100 ? 0 : -EAGAIN;
}

int gc_ps_read(const char *dir, const char *name, struct gc_ps_snap *out)
{
	struct gc_ps_map m;
	int r = gc_ps_open(dir, name, &m);

	if (r < 0)
		return r;
	r = gc_ps_snap(&m, out);
	gc_ps_close(&m);
	return r;
}

int gc_ps_snap_sites(const struct gc_ps_map *m, struct gc_ps_sites *out)
{
	const struct gc_ps_seg *s = m->pm_seg;
	const struct gc_site_area *a;
	int i;

	memset(out, 0, sizeof(*out));
	if (m->pm_len < GC_PS_SIZE_SITES ||
	    __atomic_load_n(&s->ps_sites_at, __ATOMIC_ACQUIRE) != GC_PS_SITES_OFF)
		return -ENOENT;
	a = (const struct gc_site_area *)((const char *)s + GC_PS_SITES_OFF);
	for (i = 0; i < GC_SITES; i++) {
		const struct gc_site_desc *d = &a->sa_desc[i];
		struct gc_site_desc *o = &out->ss_desc[i];

		if (__atomic_load_n(&d->sd_ready, __ATOMIC_ACQUIRE) != GC_SD_NAMED)
			continue;
		memcpy(o, d, sizeof(*o));
		o->sd_ready = 1;
		if (o->sd_depth > GC_SITE_DEPTH)
			o->sd_depth = GC_SITE_DEPTH;
		o->sd_fn[sizeof(o->sd_fn) - 1] = '\0';
		o->sd_lib[sizeof(o->sd_lib) - 1] = '\0';
		o->sd_chain[sizeof(o->sd_chain) - 1] = '\0';
	}
	gc_sites_sum(a, out->ss_ctr);
	return 0;
}

int gc_ps_ask_sites(const char *dir, const char *name)
{
	struct gc_ps_seg *s;
	struct stat st;
	uint32_t uid;
	int32_t pid;
	int fd, e;

	fd = seg_open(dir, name, O_RDWR, &st, &uid, &pid);
	if (fd < 0)
		return fd == -EPERM ? -EPROTO : fd;
	s = gc_sys_mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	if (s == MAP_FAILED)
		return -e;
	gc_bus_guard(s, sizeof(*s), NULL);
	e = __atomic_load_n(&s->ps_magic, __ATOMIC_ACQUIRE) == GC_PS_MAGIC && layout_ok(s) ? 0
											    : -EPROTO;
	if (!e)
		__atomic_store_n(&s->ps_want_sites, 1, __ATOMIC_RELEASE);
	gc_bus_unguard(s);
	munmap(s, sizeof(*s));
	return e;
}
