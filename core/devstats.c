// SPDX-License-Identifier: LGPL-2.1-or-later
/* The library's side of the block-device observer (see devstats.h): sysfs
 * walks from st_dev to a whole disk, seqlock reads of gcd's file with
 * pread, and /proc/diskstats flush and write samples. No allocation, no libc
 * names that the shim interposes, no cancellation points while a lock is held. */
#include "core/devstats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/name.h"
#include "core/sys.h"

#define DS_PATH_MAX 512
#define DS_DEPTH 8		/* partition, loop, dm... a real stack is 3-4 deep */
#define DS_DISK_CACHE 16
#define DS_ALIASES 8
#define DS_DISK_TTL_NS (5 * GC_NSEC_PER_SEC) /* loop devices get re-attached */
#define DS_SAMPLES 16
#define DS_HINTS 8
#define DS_SEQ_TRIES 64
#define DS_LOCK_WAIT_NS (20 * GC_NSEC_PER_MSEC)
#define DS_MAX_LAT_NS (60 * GC_NSEC_PER_SEC)

/* ---- small pieces ------------------------------------------------------ */

/* Raw calls: open and close are the shim's names, and glibc's read and
 * pread are cancellation points, which must not end a thread holding one
 * of the locks below. */
static int sys_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC | O_NOCTTY, 0);
}

static void sys_close(int fd)
{
	syscall(SYS_close, fd);
}

static ssize_t sys_pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r;

	do
		r = syscall(SYS_pread64, fd, buf, n, off);
	while (r < 0 && errno == EINTR);
	return r;
}

static ssize_t sys_read(int fd, void *buf, size_t n)
{
	ssize_t r;

	do
		r = syscall(SYS_read, fd, buf, n);
	while (r < 0 && errno == EINTR);
	return r;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static void backoff(int i)
{
	if (i < 64)
		cpu_relax();
	else
		syscall(SYS_sched_yield);
}

/* A lock held for a few system calls, never across a cancellation point.
 * The word is the holder's tid: a waiter takes over from a holder that no
 * longer exists in this process (a fork child copied the lock held), and
 * gives up after DS_LOCK_WAIT_NS, returning "unknown", rather than hang
 * behind a holder stopped by a debugger. */
static bool spin_lock(int *l)
{
	int self = (int)gc_gettid(), cur;	/* cached: no system call a refresh */
	uint64_t start = 0, now;

	gc_made_note(GC_MADE_DEVSTATS);
	for (int i = 0;; i++) {
		/* the first try a swap, not a load: loaded first, a page never
		 * written maps the zero page, and the swap faults again */
		cur = i ? __atomic_load_n(l, __ATOMIC_RELAXED) : 0;
		if (!cur && __atomic_compare_exchange_n(l, &cur, self, false, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
			return true;
		if (cur == self)
			return false;	/* re-entered: a bug, never a deadlock */
		if (i % 256 == 255) {
			if (syscall(SYS_tgkill, (pid_t)syscall(SYS_getpid), cur, 0) != 0 &&
			    errno == ESRCH &&
			    __atomic_compare_exchange_n(l, &cur, self, false, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				return true;
			now = gc_now_ns();
			if (!start)
				start = now;
			else if (now - start > DS_LOCK_WAIT_NS)
				return false;
		}
		backoff(i);
	}
}

static void spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static bool set_path(char *dst, const char *src, const char *def)
{
	if (!src || !*src)
		src = def;
	if (strlen(src) >= DS_PATH_MAX) {
		dst[0] = '\0';	/* unusable: behave as if the file were absent */
		return false;
	}
	strcpy(dst, src);
	return true;
}

/* ---- state ------------------------------------------------------------- */

struct ds_map {
	uint64_t dm_dev, dm_disk, dm_at_ns;
};

/* An anonymous st_dev and the block device under it (gc_devstats_alias). */
struct ds_alias {
	uint64_t al_anon, al_dev;
};

struct ds_sample {
	uint64_t sa_disk;
	uint64_t sa_at_ns;		/* when sa_last was read; 0 = free slot */
	struct gc_flush_sample sa_last;
	uint64_t sa_mean_ns;		/* over the last interval that saw flushes */
};

struct ds_hint {
	uint64_t hi_disk;
	uint32_t hi_idx;
};

static struct {
	int b_lock;
	bool b_inited;
	int b_fd;			/* -1: none */
	dev_t b_dev;			/* identity of b_fd's file */
	ino_t b_ino;
	uint64_t b_checked_ns;		/* last look at the path; 0 = never */
	struct ds_hint b_hint[DS_HINTS];
	unsigned int b_hint_next;
	struct gc_blk_stats b_buf;	/* the copy, under b_lock */
	char b_path[DS_PATH_MAX];
} g_blk;			/* b_fd is set to -1 with b_inited */

/* The paths below are "" until set: the defaults apply (nothing of this
 * state is initialised data, so none of it is in memory until used). */
static struct {
	int m_lock;
	unsigned int m_next;
	bool m_set;			/* m_sys, m_mountinfo set (gc_devstats_init) */
	struct ds_map m_map[DS_DISK_CACHE];
	struct ds_alias m_alias[DS_ALIASES];
	unsigned int m_alias_next;
	char m_sys[DS_PATH_MAX];
	char m_mountinfo[DS_PATH_MAX];
} g_map;

static struct {
	int s_lock;
	bool s_set;
	struct ds_sample s_disk[DS_SAMPLES];
	char s_buf[4096];		/* /proc/diskstats, a piece at a time */
	char s_path[DS_PATH_MAX];
} g_ds;

/* The paths and buffers of the walks below the mount table and /sys: one
 * set for the process, taken for a walk, rather than a set on the stack
 * per level of map_disk's recursion (3 KB each: a walk two deep took 6 KB
 * of a signal handler's alternate stack). No walk keeps any of it across
 * a recursive call. Taken as the locks above are: another thread's walk is
 * waited for; one this thread was in when a handler interrupted it gives
 * the handler no answer, which is not kept. */
static struct {
	int w_lock;
	char w_base[DS_PATH_MAX];
	char w_p[DS_PATH_MAX + 320];
	char w_val[DS_PATH_MAX];
	char w_name[256];
	char w_buf[2048];
} g_walk;

static const char *sys_root(void)
{
	return g_map.m_set ? g_map.m_sys : "/sys";
}

static const char *mountinfo_path(void)
{
	return g_map.m_set ? g_map.m_mountinfo : "/proc/self/mountinfo";
}

static const char *diskstats_path(void)
{
	return g_ds.s_set ? g_ds.s_path : "/proc/diskstats";
}

/* ---- 1. st_dev to whole disk -------------------------------------------- */

/* Reads a small sysfs attribute; the trailing newline goes. -1 if absent. */
static int read_attr(const char *path, char *buf, size_t size)
{
	int fd = sys_open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = sys_read(fd, buf, size - 1);
	sys_close(fd);
	if (n < 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	buf[n] = '\0';
	return (int)n;
}

/* "MAJ:MIN" as found in a sysfs dev file; 0 when malformed. */
static uint64_t read_dev(const char *path)
{
	char buf[32], *end;
	unsigned long maj, min;

	if (read_attr(path, buf, sizeof(buf)) <= 0)
		return 0;
	errno = 0;
	maj = strtoul(buf, &end, 10);
	if (*end != ':' || end == buf || errno)
		return 0;
	min = strtoul(end + 1, &end, 10);
	if (*end || errno || maj > 0xfffffffful || min > 0xfffffffful || !maj)
		return 0;
	return makedev(maj, min);
}

static bool exists(const char *path)
{
	struct stat st;

	return fstatat(AT_FDCWD, path, &st, 0) == 0;
}

/* The one entry of a slaves/ directory: 1 and its name (in w_name), 0 for
 * none, 2 for several (or unreadable). Reads into w_buf. */
static int only_slave(const char *dir)
{
	char *buf = g_walk.w_buf;
	struct gc_name b;
	int fd = sys_open(dir, O_RDONLY | O_DIRECTORY), found = 0;
	long n;

	if (fd < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(g_walk.w_buf))) > 0) {
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			const char *nm = buf + off + 19;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			if (reclen < 20 || off + reclen > n) {
				found = 2;
				goto out;
			}
			off += reclen;
			if (!strcmp(nm, ".") || !strcmp(nm, ".."))
				continue;
			if (++found > 1)
				goto out;
			b = gc_name_in(g_walk.w_name, sizeof(g_walk.w_name));
			gc_name_str(&b, nm);
			gc_name_end(&b);
		}
	}
	if (n < 0)
		found = 2;
out:
	sys_close(fd);
	return found;
}

static uint64_t map_disk(uint64_t dev, int depth);

/* A loop device's requests end on the disk that holds its backing file:
 * that disk, or the loop device itself when the file is on a filesystem
 * without one (FUSE, tmpfs: major 0) or cannot be found from here (deleted,
 * another mount namespace). */
static uint64_t map_loop(uint64_t dev, const char *file, int depth)
{
	struct stat st;
	uint64_t under, disk;

	if (fstatat(AT_FDCWD, file, &st, 0) != 0)
		return dev;
	under = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	if (!major(under) || under == dev)
		return dev;
	disk = map_disk(under, depth + 1);
	return disk ? disk : dev;
}

/* w_p: the device's directory in /sys (w_base) and @tail. */
static const char *sys_path(const char *tail, const char *name, const char *tail2)
{
	struct gc_name b = gc_name_in(g_walk.w_p, sizeof(g_walk.w_p));

	gc_name_str(&b, g_walk.w_base);
	gc_name_str(&b, tail);
	if (name) {
		gc_name_str(&b, name);
		gc_name_str(&b, tail2);
	}
	return gc_name_end(&b) < (int)sizeof(g_walk.w_p) ? g_walk.w_p : "";
}

static uint64_t map_disk(uint64_t dev, int depth)
{
	struct gc_name b = gc_name_in(g_walk.w_base, sizeof(g_walk.w_base));
	uint64_t up;

	if (!major(dev) || depth >= DS_DEPTH || !sys_root()[0])
		return 0;
	gc_name_str(&b, sys_root());
	gc_name_str(&b, "/dev/block/");
	gc_name_num(&b, major(dev), 10);
	gc_name_char(&b, ':');
	gc_name_num(&b, minor(dev), 10);
	if (gc_name_end(&b) >= (int)sizeof(g_walk.w_base))
		return 0;
	if (read_dev(sys_path("/dev", NULL, NULL)) != dev)
		return 0;

	/* /sys/dev/block/M:m is a symlink into the device tree; ".." after it
	 * is resolved there, so this is the directory above: the disk. */
	if (exists(sys_path("/partition", NULL, NULL))) {
		up = read_dev(sys_path("/../dev", NULL, NULL));
		return up && up != dev ? map_disk(up, depth + 1) : 0;
	}

	if (read_attr(sys_path("/loop/backing_file", NULL, NULL), g_walk.w_val,
		      sizeof(g_walk.w_val)) > 0)
		return map_loop(dev, g_walk.w_val, depth);

	/* dm and md: one slave is the same disk further down; with several
	 * (raid, a volume over two disks) this device is where one request
	 * is seen as one. */
	if (only_slave(sys_path("/slaves", NULL, NULL)) == 1) {
		up = read_dev(sys_path("/slaves/", g_walk.w_name, "/dev"));
		if (up && up != dev && (up = map_disk(up, depth + 1)))
			return up;
	}
	return dev;
}

/* A filesystem with an anonymous st_dev (major 0): btrfs gives each
 * subvolume one, so st_dev names no block device, and not even the one the
 * mount table shows (the superblock's). The mount a descriptor is on is
 * found by its mount id (statx), and its line in the mount table names the
 * block device mounted there, if any (tmpfs, FUSE, overlay, NFS: none). */
static uint64_t mount_source(const char *line, size_t len, uint64_t mnt_id)
{
	char want[32], *src = g_walk.w_val;
	struct gc_name b = gc_name_in(want, sizeof(want));
	const char *end = line + len, *f, *sep;
	struct stat st;
	int n;

	gc_name_num(&b, mnt_id, 10);
	gc_name_char(&b, ' ');
	n = gc_name_end(&b);
	if ((size_t)n > len || memcmp(line, want, (size_t)n))
		return 0;
	/* after " - ": type, source, options */
	for (sep = line + n; (sep = memchr(sep, '-', (size_t)(end - sep))); sep++)
		if (sep[-1] == ' ' && sep + 1 < end && sep[1] == ' ')
			break;
	if (!sep)
		return 0;
	f = memchr(sep + 2, ' ', (size_t)(end - sep - 2));
	if (!f)
		return 0;
	f++;
	sep = memchr(f, ' ', (size_t)(end - f));
	n = (int)((sep ? sep : end) - f);
	if (n < 2 || n >= (int)sizeof(g_walk.w_val) || f[0] != '/')
		return 0;
	memcpy(src, f, (size_t)n);
	src[n] = '\0';
	if (fstatat(AT_FDCWD, src, &st, 0) != 0 || !S_ISBLK(st.st_mode))
		return 0;
	return st.st_rdev;
}

/* Reads into w_buf. */
static uint64_t mount_device(uint64_t mnt_id)
{
	char *buf = g_walk.w_buf;
	const size_t bs = sizeof(g_walk.w_buf);
	size_t have = 0;
	uint64_t found = 0;
	bool skip = false;
	int fd = sys_open(mountinfo_path(), O_RDONLY);

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = sys_read(fd, buf + have, bs - have);
		char *p = buf, *nl, *end;

		if (r <= 0)
			break;
		end = buf + have + r;
		while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
			if (!skip && (found = mount_source(p, (size_t)(nl - p), mnt_id)))
				goto out;
			skip = false;
			p = nl + 1;
		}
		have = (size_t)(end - p);
		if (have == bs) {
			/* a line longer than the buffer: no source of ours */
			have = 0;
			skip = true;
		} else {
			memmove(buf, p, have);
		}
	}
out:
	sys_close(fd);
	return found;
}

void gc_devstats_alias(uint64_t st_dev, int fd)
{
	struct statx sx;
	uint64_t dev = 0;
	int e = errno, i, slot = -1;

	if (!st_dev || major(st_dev))
		return;
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 &&
	    (sx.stx_mask & STATX_MNT_ID) && spin_lock(&g_walk.w_lock)) {
		dev = mount_device(sx.stx_mnt_id);
		spin_unlock(&g_walk.w_lock);
	}
	errno = e;
	if (!dev || !spin_lock(&g_map.m_lock))
		return;
	for (i = 0; i < DS_ALIASES && slot < 0; i++)
		if (g_map.m_alias[i].al_anon == st_dev || !g_map.m_alias[i].al_anon)
			slot = i;
	if (slot < 0)
		slot = (int)(g_map.m_alias_next++ % DS_ALIASES);
	g_map.m_alias[slot] = (struct ds_alias){ st_dev, dev };
	/* a mapping cached before (as no disk) is walked again */
	for (i = 0; i < DS_DISK_CACHE; i++)
		if (g_map.m_map[i].dm_dev == st_dev)
			g_map.m_map[i].dm_at_ns = 0;
	spin_unlock(&g_map.m_lock);
}

/* With m_lock held. */
static uint64_t alias_of(uint64_t st_dev)
{
	for (int i = 0; i < DS_ALIASES; i++)
		if (g_map.m_alias[i].al_anon == st_dev)
			return g_map.m_alias[i].al_dev;
	return 0;
}

static uint64_t disk_of(uint64_t st_dev)
{
	uint64_t now = gc_now_ns(), disk, dev = st_dev;
	struct ds_map *m;

	if (!st_dev)
		return 0;
	if (spin_lock(&g_map.m_lock)) {
		if (!major(st_dev))
			dev = alias_of(st_dev);
		for (int i = 0; i < DS_DISK_CACHE; i++) {
			m = &g_map.m_map[i];
			if (m->dm_at_ns && m->dm_dev == st_dev && now - m->dm_at_ns < DS_DISK_TTL_NS) {
				disk = m->dm_disk;
				spin_unlock(&g_map.m_lock);
				return disk;
			}
		}
		spin_unlock(&g_map.m_lock);
	}
	/* the walk takes a few dozen system calls: outside the lock */
	disk = 0;
	if (major(dev)) {
		if (!spin_lock(&g_walk.w_lock))
			return 0; /* no answer, none kept */
		disk = map_disk(dev, 0);
		spin_unlock(&g_walk.w_lock);
	}
	if (spin_lock(&g_map.m_lock)) {
		int slot = -1;

		for (int i = 0; i < DS_DISK_CACHE && slot < 0; i++)
			if (g_map.m_map[i].dm_dev == st_dev || !g_map.m_map[i].dm_at_ns)
				slot = i;
		if (slot < 0)
			slot = (int)(g_map.m_next++ % DS_DISK_CACHE);
		g_map.m_map[slot] = (struct ds_map){ st_dev, disk, now };
		spin_unlock(&g_map.m_lock);
	}
	return disk;
}

/* ---- 2. gcd's file ------------------------------------------------------ */

static bool blk_file_ok(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_size == (off_t)sizeof(struct gc_blk_stats) &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Under b_lock. Closes our descriptor only if it still names our file: a
 * program may have closed it and reused the number. */
static void blk_close(void)
{
	struct stat st;
	int fd = g_blk.b_fd;

	if (fd >= 0)
		gc_own_drop(&g_blk.b_fd);
	g_blk.b_fd = -1;
	if (fd >= 0 && gc_sys_fstat(fd, &st) == 0 && st.st_dev == g_blk.b_dev &&
	    st.st_ino == g_blk.b_ino)
		sys_close(fd);
	memset(g_blk.b_hint, 0, sizeof(g_blk.b_hint));
}

/* Under b_lock: at most every GC_DEVSTATS_RECHECK_NS, a stat of the path;
 * a new file there (gcd restarted, or started at last) is opened. */
static void blk_recheck(void)
{
	uint64_t now = gc_now_ns();
	struct stat st, fst;
	int fd;

	if (!g_blk.b_inited) {
		g_blk.b_fd = -1;
		set_path(g_blk.b_path, gc_env(GC_DEVSTATS_ENV), GC_BLK_PATH);
		g_blk.b_inited = true;
	}
	if (g_blk.b_checked_ns && now - g_blk.b_checked_ns < GC_DEVSTATS_RECHECK_NS)
		return;
	g_blk.b_checked_ns = now;
	if (!g_blk.b_path[0] || fstatat(AT_FDCWD, g_blk.b_path, &st, 0) != 0 ||
	    !blk_file_ok(&st)) {
		blk_close();
		return;
	}
	if (g_blk.b_fd >= 0 && st.st_dev == g_blk.b_dev && st.st_ino == g_blk.b_ino &&
	    gc_sys_fstat(g_blk.b_fd, &fst) == 0 && fst.st_dev == g_blk.b_dev &&
	    fst.st_ino == g_blk.b_ino)
		return;
	blk_close();
	/* O_NONBLOCK: a FIFO put there must not stop us in open */
	fd = sys_open(g_blk.b_path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return;
	/* moved up first, so that nothing of ours touches the low number
	 * another thread may get next (ThreadSanitizer sees neither the raw
	 * open nor the raw close, only the fstat); where it cannot be moved
	 * out of the program's range it is not kept */
	fd = gc_sys_fd_up(fd);
	if (fd < 0)
		return;
	if (gc_sys_fstat(fd, &fst) != 0 || !blk_file_ok(&fst)) {
		sys_close(fd);
		return;
	}
	g_blk.b_fd = fd;
	g_blk.b_dev = fst.st_dev;
	g_blk.b_ino = fst.st_ino;
	gc_own_keep(&g_blk.b_fd);
}

static uint64_t fresh_limit(uint32_t interval_ms)
{
	uint64_t lim = 3ULL * interval_ms * GC_NSEC_PER_MSEC;

	if (lim < GC_DEVSTATS_FRESH_MIN_NS)
		lim = GC_DEVSTATS_FRESH_MIN_NS;
	return lim > GC_DEVSTATS_FRESH_MAX_NS ? GC_DEVSTATS_FRESH_MAX_NS : lim;
}

static int hint_get(uint64_t disk)
{
	for (int i = 0; i < DS_HINTS; i++)
		if (g_blk.b_hint[i].hi_disk == disk)
			return (int)g_blk.b_hint[i].hi_idx;
	return -1;
}

static void hint_set(uint64_t disk, uint32_t idx)
{
	for (int i = 0; i < DS_HINTS; i++)
		if (g_blk.b_hint[i].hi_disk == disk) {
			g_blk.b_hint[i].hi_idx = idx;
			return;
		}
	g_blk.b_hint[g_blk.b_hint_next++ % DS_HINTS] = (struct ds_hint){ disk, idx };
}

#define HDR_LEN offsetof(struct gc_blk_stats, bs_disks)
#define SEQ_OFF offsetof(struct gc_blk_stats, bs_seq)
#define DISK_OFF(i) (HDR_LEN + (size_t)(i) * sizeof(struct gc_blk_disk))

enum { BLK_INVALID = -1, BLK_BUSY, BLK_FOUND, BLK_ABSENT };

/* Under b_lock. One seqlock read: the header (with the first bs_seq), the
 * entry where @disk was last seen or else every entry, then bs_seq again.
 * Each pread takes a fully ordered reference on the page-cache folio
 * before copying, so the three copies are ordered like the loads of an
 * ordinary seqlock reader. BLK_BUSY: the writer was at work. */
static int blk_try(uint64_t disk, int hint, struct gc_blk_disk *out)
{
	struct gc_blk_stats *s = &g_blk.b_buf;
	uint64_t seq2;
	size_t len;
	int lo, hi;

	if (sys_pread(g_blk.b_fd, s, HDR_LEN, 0) != (ssize_t)HDR_LEN)
		return BLK_INVALID;	/* truncated under us: never mapped, so no SIGBUS */
	if (s->bs_magic != GC_BLK_MAGIC || s->bs_version != GC_BLK_VERSION ||
	    s->bs_size != sizeof(struct gc_blk_stats))
		return BLK_INVALID;
	if (s->bs_seq & 1)
		return BLK_BUSY;
	/* an out-of-range count may be a torn read: read none, and let the
	 * second bs_seq tell torn from corrupt */
	if (s->bs_ndisks > GC_BLK_DISKS) {
		lo = hi = 0;
	} else if (hint >= 0 && (uint32_t)hint < s->bs_ndisks) {
		lo = hint;
		hi = hint + 1;
	} else {
		lo = 0;
		hi = (int)s->bs_ndisks;
	}
	len = (size_t)(hi - lo) * sizeof(struct gc_blk_disk);
	if (len && sys_pread(g_blk.b_fd, &s->bs_disks[lo], len, (off_t)DISK_OFF(lo)) !=
			   (ssize_t)len)
		return BLK_INVALID;
	if (sys_pread(g_blk.b_fd, &seq2, sizeof(seq2), SEQ_OFF) != sizeof(seq2))
		return BLK_INVALID;
	if (seq2 != s->bs_seq)
		return BLK_BUSY;
	if (s->bs_ndisks > GC_BLK_DISKS)
		return BLK_INVALID;
	for (int i = lo; i < hi; i++)
		if (s->bs_disks[i].bd_dev == disk) {
			*out = s->bs_disks[i];
			out->bd_name[sizeof(out->bd_name) - 1] = '\0';
			if (i != hint)
				hint_set(disk, (uint32_t)i);
			return BLK_FOUND;
		}
	if (hint >= 0)
		return blk_try(disk, -1, out);	/* moved: look at all of them */
	return BLK_ABSENT;
}

static bool blk_read(uint64_t disk, struct gc_blk_disk *out, uint64_t now_ns,
		     uint64_t *age_ns)
{
	struct gc_blk_disk tmp;
	uint64_t hb, lim, age = UINT64_MAX;
	bool ok = false;
	int r = BLK_INVALID;

	if (age_ns)
		*age_ns = UINT64_MAX;
	if (!disk || !spin_lock(&g_blk.b_lock))
		return false;
	blk_recheck();
	for (int i = 0; g_blk.b_fd >= 0 && i < DS_SEQ_TRIES; i++) {
		r = blk_try(disk, hint_get(disk), &tmp);
		if (r != BLK_BUSY)
			break;
		backoff(i);
	}
	if (r == BLK_FOUND || r == BLK_ABSENT) {
		hb = g_blk.b_buf.bs_heartbeat_ns;
		lim = fresh_limit(g_blk.b_buf.bs_interval_ms);
		age = hb > now_ns ? 0 : now_ns - hb;
		ok = r == BLK_FOUND && (hb > now_ns ? hb - now_ns <= lim : age <= lim);
	}
	spin_unlock(&g_blk.b_lock);
	if (age_ns)
		*age_ns = age;
	if (ok)
		*out = tmp;
	return ok;
}

/* The public calls leave errno as they found it. */
uint64_t gc_devstats_disk(uint64_t st_dev)
{
	int saved = errno;
	uint64_t disk = disk_of(st_dev);

	errno = saved;
	return disk;
}

bool gc_devstats_read(uint64_t disk, struct gc_blk_disk *out, uint64_t now_ns,
		      uint64_t *age_ns)
{
	int saved = errno;
	bool ok = blk_read(disk, out, now_ns, age_ns);

	errno = saved;
	return ok;
}

/* ---- 3. /proc/diskstats ------------------------------------------------- */

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* A decimal number; NULL when there is none or it overflows. */
static const char *parse_u64(const char *p, const char *end, uint64_t *v)
{
	const char *start = p;
	uint64_t x = 0;

	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return NULL;
		x = x * 10 + d;
	}
	if (p == start)
		return NULL;
	*v = x;
	return p;
}

/* One line: "MAJ MIN name f4 ... f20", fields 4-20 into @v (17 of them:
 * kernels from 5.5 on). */
#define DS_FIELDS 17
static bool parse_line(const char *p, const char *end, uint64_t disk, uint64_t *v)
{
	uint64_t maj, min;
	int n;

	if (!(p = parse_u64(skip_space(p, end), end, &maj)) ||
	    !(p = parse_u64(skip_space(p, end), end, &min)))
		return false;
	if (maj > 0xffffffffu || min > 0xffffffffu || makedev(maj, min) != disk)
		return false;
	p = skip_space(p, end);
	while (p < end && *p != ' ' && *p != '\t')
		p++;	/* the name */
	for (n = 0; n < DS_FIELDS; n++) {
		const char *q = parse_u64(skip_space(p, end), end, &v[n]);

		if (!q)
			break;
		p = q;
	}
	return n == DS_FIELDS;
}

static bool find_line(const char *text, size_t len, uint64_t disk, uint64_t *v)
{
	const char *p = text, *end = text + len;

	if (!disk)
		return false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (parse_line(p, le, disk, v))
			return true;
		p = nl ? nl + 1 : end;
	}
	return false;
}

bool gc_devstats_parse_diskstats(const char *text, size_t len, uint64_t disk,
				 uint64_t *flushes, uint64_t *flush_ms)
{
	uint64_t v[DS_FIELDS];

	if (!find_line(text, len, disk, v))
		return false;
	*flushes = v[15];
	*flush_ms = v[16];
	return true;
}

static void write_sample(const uint64_t *v, struct gc_write_sample *out)
{
	*out = (struct gc_write_sample){ .ws_sectors = v[6], .ws_read_ms = v[3],
					 .ws_write_ms = v[7], .ws_busy_ms = v[9] };
}

bool gc_devstats_parse_writes(const char *text, size_t len, uint64_t disk,
			      struct gc_write_sample *out)
{
	uint64_t v[DS_FIELDS];

	if (!find_line(text, len, disk, v))
		return false;
	write_sample(v, out);
	return true;
}

/* Under s_lock: the file read a piece at a time, whole lines parsed; @disk's
 * fields into @v. */
static bool diskstats_locked(uint64_t disk, uint64_t *v)
{
	char *buf = g_ds.s_buf;
	size_t have = 0;
	bool found = false;
	int fd;

	if (!diskstats_path()[0] || (fd = sys_open(diskstats_path(), O_RDONLY)) < 0)
		return false;
	for (;;) {
		ssize_t n = sys_read(fd, buf + have, sizeof(g_ds.s_buf) - have);
		const char *last;
		size_t done;

		if (n <= 0) {
			found = have && find_line(buf, have, disk, v);
			break;
		}
		have += (size_t)n;
		last = memrchr(buf, '\n', have);
		if (!last) {
			if (have == sizeof(g_ds.s_buf))
				have = 0;	/* a line longer than 4 KiB is no line of ours */
			continue;
		}
		done = (size_t)(last - buf) + 1;
		if (find_line(buf, done, disk, v)) {
			found = true;
			break;
		}
		memmove(buf, buf + done, have - done);
		have -= done;
	}
	sys_close(fd);
	return found;
}

static bool diskstats_flushes(uint64_t disk, uint64_t *flushes, uint64_t *flush_ms)
{
	uint64_t v[DS_FIELDS];

	if (!diskstats_locked(disk, v))
		return false;
	*flushes = v[15];
	*flush_ms = v[16];
	return true;
}

bool gc_devstats_diskstats(uint64_t disk, uint64_t *flushes, uint64_t *flush_ms)
{
	int saved = errno;
	bool found = false;

	if (disk && spin_lock(&g_ds.s_lock)) {
		found = diskstats_flushes(disk, flushes, flush_ms);
		spin_unlock(&g_ds.s_lock);
	}
	errno = saved;
	return found;
}

bool gc_devstats_writes(uint64_t st_dev, struct gc_write_sample *out)
{
	int saved = errno;
	uint64_t disk = disk_of(st_dev), v[DS_FIELDS];
	bool found = false;

	if (disk && spin_lock(&g_ds.s_lock)) {
		found = diskstats_locked(disk, v);
		spin_unlock(&g_ds.s_lock);
	}
	if (found)
		write_sample(v, out);
	errno = saved;
	return found;
}

uint64_t gc_devstats_flush_mean_ns(const struct gc_flush_sample *a,
				   const struct gc_flush_sample *b)
{
	uint64_t n, ms, mean;

	if (b->fs_flushes <= a->fs_flushes || b->fs_ms < a->fs_ms)
		return 0;
	n = b->fs_flushes - a->fs_flushes;
	ms = b->fs_ms - a->fs_ms;
	if (ms > UINT64_MAX / GC_NSEC_PER_MSEC)
		return 0;
	mean = ms * GC_NSEC_PER_MSEC / n;
	return mean ? mean : 1;
}

/* The mean over the last interval, sampling again when the last sample is
 * GC_DEVSTATS_SAMPLE_NS old. The first sample has no interval: the mean
 * since boot stands in. An interval without flushes keeps the last mean:
 * an idle device is as fast as it last was. */
static uint64_t diskstats_mean(uint64_t disk, uint64_t now_ns)
{
	struct gc_flush_sample cur, first = { 0, 0 };
	struct ds_sample *s = NULL;
	uint64_t mean;

	if (!spin_lock(&g_ds.s_lock))
		return 0;
	for (int i = 0; i < DS_SAMPLES && !s; i++)
		if (g_ds.s_disk[i].sa_at_ns && g_ds.s_disk[i].sa_disk == disk)
			s = &g_ds.s_disk[i];
	if (!s) {
		int old = 0;

		for (int i = 1; i < DS_SAMPLES; i++)
			if (g_ds.s_disk[i].sa_at_ns < g_ds.s_disk[old].sa_at_ns)
				old = i;
		s = &g_ds.s_disk[old];
		*s = (struct ds_sample){ .sa_disk = disk };
	}
	if (!s->sa_at_ns || now_ns - s->sa_at_ns >= GC_DEVSTATS_SAMPLE_NS || now_ns < s->sa_at_ns) {
		if (diskstats_flushes(disk, &cur.fs_flushes, &cur.fs_ms)) {
			mean = gc_devstats_flush_mean_ns(s->sa_at_ns ? &s->sa_last : &first, &cur);
			if (mean && mean <= DS_MAX_LAT_NS)
				s->sa_mean_ns = mean;
			s->sa_last = cur;
		}
		s->sa_at_ns = now_ns ? now_ns : 1;
	}
	mean = s->sa_mean_ns;
	spin_unlock(&g_ds.s_lock);
	return mean;
}

/* ---- 4. what the policy asks ------------------------------------------- */

uint64_t gc_devstats_flush_ns(uint64_t st_dev, uint64_t now_ns, const char **source)
{
	int saved = errno;
	uint64_t disk = disk_of(st_dev), ns = 0;
	struct gc_blk_disk d;
	const char *src = "none";

	if (disk && blk_read(disk, &d, now_ns, NULL)) {
		ns = d.bd_op[GC_BLK_FLUSH].bo_p50_ns;
		if (!ns)
			ns = d.bd_op[GC_BLK_FLUSH].bo_ewma_ns;
		if (ns > DS_MAX_LAT_NS)
			ns = 0;
		if (ns)
			src = "observer";
	}
	if (disk && !ns && (ns = diskstats_mean(disk, now_ns)))
		src = "diskstats";
	if (source)
		*source = src;
	errno = saved;
	return ns;
}

bool gc_devstats_io(uint64_t st_dev, uint64_t now_ns, struct gc_devstats_io *out)
{
	int saved = errno;
	uint64_t disk = disk_of(st_dev);
	struct gc_blk_disk d;
	bool ok = disk && blk_read(disk, &d, now_ns, NULL);

	errno = saved;
	if (!ok)
		return false;
	*out = (struct gc_devstats_io){
		.io_disk = disk,
		.io_write_bytes_per_s = d.bd_op[GC_BLK_WRITE].bo_bytes_per_s,
		.io_write_p99_ns = d.bd_op[GC_BLK_WRITE].bo_p99_ns,
		.io_read_p99_ns = d.bd_op[GC_BLK_READ].bo_p99_ns,
		.io_read_window = d.bd_op[GC_BLK_READ].bo_window_count,
		.io_flags = d.bd_flags,
	};
	return true;
}

/* ---- set-up ------------------------------------------------------------- */

void gc_devstats_init(const struct gc_devstats_paths *p)
{
	static const struct gc_devstats_paths none;

	if (!p)
		p = &none;
	spin_lock(&g_blk.b_lock);
	if (!g_blk.b_inited)
		g_blk.b_fd = -1;
	blk_close();
	g_blk.b_checked_ns = 0;
	g_blk.b_hint_next = 0;
	set_path(g_blk.b_path, p->dp_blk_stats ? p->dp_blk_stats : gc_env(GC_DEVSTATS_ENV),
		 GC_BLK_PATH);
	g_blk.b_inited = true;
	spin_unlock(&g_blk.b_lock);

	spin_lock(&g_map.m_lock);
	memset(g_map.m_map, 0, sizeof(g_map.m_map));
	memset(g_map.m_alias, 0, sizeof(g_map.m_alias));
	g_map.m_next = 0;
	set_path(g_map.m_sys, p->dp_sys, "/sys");
	set_path(g_map.m_mountinfo, p->dp_mountinfo, "/proc/self/mountinfo");
	g_map.m_set = true;
	spin_unlock(&g_map.m_lock);

	spin_lock(&g_ds.s_lock);
	memset(g_ds.s_disk, 0, sizeof(g_ds.s_disk));
	set_path(g_ds.s_path, p->dp_diskstats, "/proc/diskstats");
	g_ds.s_set = true;
	spin_unlock(&g_ds.s_lock);
}

GC_ONCE void gc_devstats_atfork_child(void)
{
	if (!gc_was_made(GC_MADE_DEVSTATS))
		return;
	__atomic_store_n(&g_blk.b_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_map.m_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_ds.s_lock, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_walk.w_lock, 0, __ATOMIC_RELAXED);
}
