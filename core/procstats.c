/* The per-process stats segment: made at the first count, removed at exit,
 * given up in a fork child; and the reader's side for gcstat. The writer
 * uses raw system calls for files: open and close are interposed. */
#include "core/procstats.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/busguard.h"

enum { PS_OFF, PS_IDLE, PS_MAKING, PS_READY, PS_FAILED };
static int ps_state = PS_OFF;
static struct gc_ps_seg *ps_seg;
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

uint64_t gc_ps_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

static uint64_t starttime_of(const char *statpath)
{
	char buf[1024], *p;
	int field;

	if (slurp(statpath, buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
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
	return starttime_of(path);
}

int gc_ps_name(char *buf, size_t len, uint32_t uid, uint64_t pidns, int32_t pid)
{
	return snprintf(buf, len, GC_PS_PREFIX "%u-%" PRIu64 "-%d", uid, pidns, (int)pid);
}

bool gc_ps_parse_name(const char *name, uint32_t *uid, uint64_t *pidns, int32_t *pid)
{
	unsigned int u;
	unsigned long long ns;
	int p, end = 0;

	if (strncmp(name, GC_PS_PREFIX, strlen(GC_PS_PREFIX)) ||
	    sscanf(name + strlen(GC_PS_PREFIX), "%u-%llu-%d%n", &u, &ns, &p, &end) != 3 ||
	    name[strlen(GC_PS_PREFIX) + (size_t)end] != '\0' || p <= 0)
		return false;
	*uid = u;
	*pidns = ns;
	*pid = p;
	return true;
}

const char *gc_ps_dir(void)
{
	const char *d = getenv("LIBGC_STATS_DIR");

	return d && d[0] == '/' ? d : ps_dir;
}

static void make_path(int32_t pid)
{
	char name[96];

	gc_ps_name(name, sizeof(name), (uint32_t)getuid(), gc_ps_pidns(), pid);
	snprintf(ps_path, sizeof(ps_path), "%s/%s", ps_dir, name);
}

void gc_ps_configure(bool on, const char *dir)
{
	if (dir && dir[0] == '/' && strlen(dir) < sizeof(ps_dir))
		strcpy(ps_dir, dir);
	make_path((int32_t)getpid());
	/* the image this process was before exec never got to remove it */
	unlink(ps_path);
	__atomic_store_n(&ps_state, on ? PS_IDLE : PS_OFF, __ATOMIC_RELEASE);
}

static void fill_identity(struct gc_ps_seg *s, int32_t pid)
{
	char buf[sizeof(s->ps_cmd)];
	ssize_t n, i;
	struct timespec ts;

	__atomic_store_n(&s->ps_seq, 1, __ATOMIC_RELEASE);
	s->ps_version = GC_PS_VERSION;
	s->ps_size = sizeof(*s);
	s->ps_pid = pid;
	s->ps_uid = (uint32_t)getuid();
	s->ps_pidns = gc_ps_pidns();
	s->ps_starttime = starttime_of("/proc/self/stat");
	clock_gettime(CLOCK_REALTIME, &ts);
	s->ps_made_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	s->ps_nshards = GC_STAT_SHARDS;
	s->ps_nfields = GC_STATS_NFIELDS;
	s->ps_nbuckets = GC_HIST_BUCKETS;
	s->ps_nerrnos = GC_ERRNO_SLOTS;
	s->ps_nsites = GC_SITES;
	s->ps_site_depth = GC_SITE_DEPTH;
	s->ps_site_hist = GC_SITE_HIST;
	n = slurp("/proc/self/comm", s->ps_comm, sizeof(s->ps_comm));
	if (n > 0 && s->ps_comm[n - 1] == '\n')
		s->ps_comm[n - 1] = '\0';
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

static __thread int ps_making __attribute__((tls_model("initial-exec")));

void gc_ps_ensure(void)
{
	int st = PS_IDLE, fd, saved, tries;
	int32_t pid;
	void *m;

	if (__atomic_load_n(&ps_state, __ATOMIC_RELAXED) != PS_IDLE ||
	    !__atomic_compare_exchange_n(&ps_state, &st, PS_MAKING, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		/* another thread is making it: a few system calls; wait, so
		 * that this thread's counts land in it too (not the maker
		 * itself, re-entered from a signal handler) */
		while (!ps_making && __atomic_load_n(&ps_state, __ATOMIC_ACQUIRE) == PS_MAKING)
			sched_yield();
		return;
	}
	ps_making = 1;
	saved = errno;
	pid = (int32_t)syscall(SYS_getpid);
	make_path(pid);
	for (tries = 0; tries < 2; tries++) {
		fd = raw_open(ps_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		/* ours by name: a dead process's of a recycled pid */
		unlink(ps_path);
	}
	if (fd < 0)
		goto fail;
	if (syscall(SYS_ftruncate, fd, (long)sizeof(struct gc_ps_seg)) < 0) {
		raw_close(fd);
		unlink(ps_path);
		goto fail;
	}
	m = mmap(NULL, sizeof(struct gc_ps_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	raw_close(fd);
	if (m == MAP_FAILED) {
		unlink(ps_path);
		goto fail;
	}
	/* another process of this user may cut the file short: counts then
	 * go on into private zeroed memory instead of raising SIGBUS */
	gc_bus_guard(m, sizeof(struct gc_ps_seg), NULL);
	ps_seg = m;
	ps_owner = pid;
	fill_identity(ps_seg, pid);
	__atomic_store_n(&gc_stats_base, ps_seg->ps_shards, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_base, &ps_seg->ps_sites, __ATOMIC_RELEASE);
	__atomic_store_n(&ps_state, PS_READY, __ATOMIC_RELEASE);
	ps_making = 0;
	errno = saved;
	return;
fail:
	__atomic_store_n(&ps_state, PS_FAILED, __ATOMIC_RELEASE);
	ps_making = 0;
	errno = saved;
}

void gc_ps_exit(void)
{
	int saved = errno;

	if (__atomic_load_n(&ps_state, __ATOMIC_ACQUIRE) == PS_READY &&
	    ps_owner == (int32_t)syscall(SYS_getpid))
		unlink(ps_path);
	errno = saved;
}

void gc_ps_atfork_child(void)
{
	struct gc_ps_seg *s = ps_seg;
	int st = __atomic_load_n(&ps_state, __ATOMIC_RELAXED);

	/* gc_stats_reset, the caller, zeroes the private shards next */
	__atomic_store_n(&gc_stats_base, gc_stats_private_shards(), __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_base, gc_sites_private(), __ATOMIC_RELEASE);
	gc_stat_slot = 0;
	ps_seg = NULL;
	if (s) {
		gc_bus_unguard(s);
		munmap(s, sizeof(*s));
	}
	if (st != PS_OFF)
		__atomic_store_n(&ps_state, PS_IDLE, __ATOMIC_RELEASE);
}

/* Maps and checks the segment @path; the caller unguards and unmaps. */
static int ps_map(const char *path, struct gc_ps_seg **out)
{
	struct gc_ps_seg *s;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != (off_t)sizeof(struct gc_ps_seg)) {
		close(fd);
		return -EPROTO;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return -errno;
	gc_bus_guard(s, sizeof(*s), NULL); /* its writer may cut it short */
	if (__atomic_load_n(&s->ps_magic, __ATOMIC_ACQUIRE) != GC_PS_MAGIC) {
		gc_bus_unguard(s);
		munmap(s, sizeof(*s));
		return -EAGAIN;
	}
	if (s->ps_version != GC_PS_VERSION || s->ps_size != sizeof(*s) ||
	    s->ps_nshards != GC_STAT_SHARDS || s->ps_nfields != GC_STATS_NFIELDS ||
	    s->ps_nbuckets != GC_HIST_BUCKETS || s->ps_nerrnos != GC_ERRNO_SLOTS ||
	    s->ps_nsites != GC_SITES || s->ps_site_depth != GC_SITE_DEPTH ||
	    s->ps_site_hist != GC_SITE_HIST) {
		gc_bus_unguard(s);
		munmap(s, sizeof(*s));
		return -EPROTO;
	}
	*out = s;
	return 0;
}

static void ps_unmap(struct gc_ps_seg *s)
{
	gc_bus_unguard(s);
	munmap(s, sizeof(*s));
}

int gc_ps_read(const char *path, struct gc_ps_snap *out)
{
	struct gc_ps_seg *s;
	uint64_t seq;
	int tries, r;

	memset(out, 0, sizeof(*out));
	r = ps_map(path, &s);
	if (r < 0)
		return r;
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
	gc_stats_sum_shards(s->ps_shards, GC_STAT_SHARDS, &out->sn_s, out->sn_hist,
			    out->sn_errno);
	ps_unmap(s);
	return tries < 100 ? 0 : -EAGAIN;
}

int gc_ps_read_sites(const char *path, struct gc_ps_sites *out)
{
	struct gc_ps_seg *s;
	int i, r;

	memset(out, 0, sizeof(*out));
	r = ps_map(path, &s);
	if (r < 0)
		return r;
	for (i = 0; i < GC_SITES; i++) {
		const struct gc_site_desc *d = &s->ps_sites.sa_desc[i];
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
	gc_sites_sum(&s->ps_sites, out->ss_ctr);
	ps_unmap(s);
	return 0;
}
