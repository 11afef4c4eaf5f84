// SPDX-License-Identifier: LGPL-2.1-or-later
/* slowdiskd: FUSE daemon serving one disk image to a loop device, with set
 * flush latency and bandwidth, a volatile write cache that a power cut drops,
 * and injected faults; also the client of its control socket (`ctl`). */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BLK_SHIFT 12
#define BLK_SIZE (1U << BLK_SHIFT)
#define INO_ROOT 1
#define INO_IMG 2
#define IMG_NAME "disk.img"
#define MAX_RANGES 8
#define CTL_MAX 4096
#define OUT_MAX 8192

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

/* One cached 4 KiB block of the disk, chained in a blkmap slot. */
struct blk {
	struct blk *b_next;
	uint64_t b_nr;
	unsigned char b_data[BLK_SIZE];
};

/* Block number -> cached block; a power-of-two chained hash table. */
struct blkmap {
	struct blk **m_slot;
	size_t m_nslots;
	size_t m_count;
};

struct range {
	uint64_t r_off;
	uint64_t r_len;
};

/* Bandwidth as a virtual clock: each request books its transfer time after
 * the previous booking, so concurrent requests share the rate. */
struct throttle {
	pthread_mutex_t t_lock;
	uint64_t t_next_ns;
};

struct disk {
	int d_fd;
	uint64_t d_size;
	int d_volatile;
	char *d_image;

	_Atomic uint64_t d_flush_us;
	_Atomic uint64_t d_write_bps;
	_Atomic uint64_t d_read_bps;
	_Atomic uint64_t d_read_lat_us;

	struct throttle d_wr;
	struct throttle d_rd;

	/* One flush at a time, as one disk's cache flushes go; taken before
	 * d_lock and held across the flush sleep. */
	pthread_mutex_t d_flush_lock;

	/* Guards everything below.  Held across image pread/pwrite in the
	 * volatile path so a reader never sees a block between cache and
	 * image, and so nothing reaches the image once d_dead is set. */
	pthread_mutex_t d_lock;
	struct blkmap d_dirty;
	struct blkmap *d_flushing;	/* being written by a flush, read-only */
	_Atomic int d_dead;

	uint64_t f_eio_flush;		/* next N flushes fail */
	uint64_t f_win_start_ns;	/* flushes in [start, end) fail */
	uint64_t f_win_end_ns;
	uint64_t f_enospc_after;	/* writes ending past this fail, 0 = off */
	struct range f_eio_read[MAX_RANGES];
	int f_neio_read;
	struct range f_eio_write[MAX_RANGES];
	int f_neio_write;

	uint64_t c_flushes;
	uint64_t c_flush_errors;
	uint64_t c_flush_ns;
	uint64_t c_writes;
	uint64_t c_bytes_written;
	uint64_t c_write_errors;
	uint64_t c_reads;
	uint64_t c_bytes_read;
	uint64_t c_read_errors;
	uint64_t c_cut_discarded;
	uint64_t c_cut_survived;
	uint64_t c_dirty_peak;
	uint64_t c_cut_seed;
	uint64_t c_cut_pct;
};

static struct disk disk;
static time_t start_time;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ULL,
			       .tv_nsec = ns % 1000000000ULL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void throttle(struct throttle *t, uint64_t bps, size_t n)
{
	uint64_t now, begin, end;

	if (!bps || !n)
		return;
	pthread_mutex_lock(&t->t_lock);
	now = mono_ns();
	begin = t->t_next_ns > now ? t->t_next_ns : now;
	end = begin + (uint64_t)((unsigned __int128)n * 1000000000ULL / bps);
	t->t_next_ns = end;
	pthread_mutex_unlock(&t->t_lock);
	sleep_until(end);
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {	/* past the end of a short image reads zeros */
			memset(p, 0, len);
			return 0;
		}
		p += n, len -= n, off += n;
	}
	return 0;
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n, len -= n, off += n;
	}
	return 0;
}

/* ---- block map ---- */

static size_t map_hash(uint64_t nr, size_t nslots)
{
	return (size_t)((nr * 0x9e3779b97f4a7c15ULL) >> 20) & (nslots - 1);
}

static int map_init(struct blkmap *m)
{
	m->m_nslots = 1024;
	m->m_count = 0;
	m->m_slot = calloc(m->m_nslots, sizeof(*m->m_slot));
	return m->m_slot ? 0 : -ENOMEM;
}

static struct blk *map_find(const struct blkmap *m, uint64_t nr)
{
	struct blk *b;

	if (!m)
		return NULL;
	for (b = m->m_slot[map_hash(nr, m->m_nslots)]; b; b = b->b_next)
		if (b->b_nr == nr)
			return b;
	return NULL;
}

static void map_grow(struct blkmap *m)
{
	size_t n = m->m_nslots * 2, i;
	struct blk **slot = calloc(n, sizeof(*slot));

	if (!slot)
		return;		/* longer chains, still correct */
	for (i = 0; i < m->m_nslots; i++) {
		struct blk *b = m->m_slot[i], *next;

		for (; b; b = next) {
			size_t h = map_hash(b->b_nr, n);

			next = b->b_next;
			b->b_next = slot[h];
			slot[h] = b;
		}
	}
	free(m->m_slot);
	m->m_slot = slot;
	m->m_nslots = n;
}

static void map_insert(struct blkmap *m, struct blk *b)
{
	size_t h;

	if (m->m_count >= m->m_nslots * 2)
		map_grow(m);
	h = map_hash(b->b_nr, m->m_nslots);
	b->b_next = m->m_slot[h];
	m->m_slot[h] = b;
	m->m_count++;
}

static int blk_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct blk *const *)a)->b_nr;
	uint64_t y = (*(struct blk *const *)b)->b_nr;

	return x < y ? -1 : x > y;
}

/* All blocks of m sorted by number: a flush writes the image in order and a
 * seeded cut draws survivors in an order that does not depend on timing. */
static struct blk **map_sorted(const struct blkmap *m)
{
	struct blk **v = malloc((m->m_count + 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return NULL;
	for (i = 0; i < m->m_nslots; i++)
		for (struct blk *b = m->m_slot[i]; b; b = b->b_next)
			v[k++] = b;
	qsort(v, k, sizeof(*v), blk_cmp);
	v[k] = NULL;
	return v;
}

static void map_free(struct blkmap *m)
{
	size_t i;

	for (i = 0; i < m->m_nslots; i++) {
		struct blk *b = m->m_slot[i], *next;

		for (; b; b = next) {
			next = b->b_next;
			free(b);
		}
	}
	free(m->m_slot);
	m->m_slot = NULL;
	m->m_count = 0;
}

/* ---- disk operations; all return 0 or -errno ---- */

static int in_ranges(const struct range *r, int n, uint64_t off, uint64_t len)
{
	for (int i = 0; i < n; i++)
		if (off < r[i].r_off + r[i].r_len && r[i].r_off < off + len)
			return 1;
	return 0;
}

/* Called with d_lock held. */
static int cache_write(struct disk *d, const unsigned char *buf, size_t len,
		       uint64_t off)
{
	while (len) {
		uint64_t nr = off >> BLK_SHIFT;
		size_t in = off & (BLK_SIZE - 1);
		size_t n = BLK_SIZE - in < len ? BLK_SIZE - in : len;
		struct blk *b = map_find(&d->d_dirty, nr), *f;

		if (!b) {
			b = malloc(sizeof(*b));
			if (!b)
				return -ENOMEM;
			b->b_nr = nr;
			if (n < BLK_SIZE) {
				f = map_find(d->d_flushing, nr);
				if (f) {
					memcpy(b->b_data, f->b_data, BLK_SIZE);
				} else {
					int err = pread_full(d->d_fd, b->b_data, BLK_SIZE,
							     nr << BLK_SHIFT);
					if (err) {
						free(b);
						return err;
					}
				}
			}
			map_insert(&d->d_dirty, b);
		}
		memcpy(b->b_data + in, buf, n);
		buf += n, off += n, len -= n;
	}
	if (d->d_dirty.m_count * BLK_SIZE > d->c_dirty_peak)
		d->c_dirty_peak = d->d_dirty.m_count * BLK_SIZE;
	return 0;
}

/* Called with d_lock held: overlays cached blocks on what the image holds. */
static int cache_read(struct disk *d, unsigned char *buf, size_t len,
		      uint64_t off)
{
	int err = pread_full(d->d_fd, buf, len, off);

	if (err)
		return err;
	while (len) {
		uint64_t nr = off >> BLK_SHIFT;
		size_t in = off & (BLK_SIZE - 1);
		size_t n = BLK_SIZE - in < len ? BLK_SIZE - in : len;
		struct blk *b = map_find(&d->d_dirty, nr);

		if (!b)
			b = map_find(d->d_flushing, nr);
		if (b)
			memcpy(buf, b->b_data + in, n);
		buf += n, off += n, len -= n;
	}
	return 0;
}

static int disk_write(struct disk *d, const void *buf, size_t len, uint64_t off)
{
	int err = 0;

	if (off >= d->d_size || len > d->d_size - off)
		return -ENOSPC;
	throttle(&d->d_wr, atomic_load(&d->d_write_bps), len);

	pthread_mutex_lock(&d->d_lock);
	if (d->d_dead)
		err = -EIO;
	else if (d->f_enospc_after && off + len > d->f_enospc_after)
		err = -ENOSPC;
	else if (in_ranges(d->f_eio_write, d->f_neio_write, off, len))
		err = -EIO;
	else if (d->d_volatile)
		err = cache_write(d, buf, len, off);
	else
		err = pwrite_full(d->d_fd, buf, len, off);
	if (err) {
		d->c_write_errors++;
	} else {
		d->c_writes++;
		d->c_bytes_written += len;
	}
	pthread_mutex_unlock(&d->d_lock);
	return err;
}

static int disk_read(struct disk *d, void *buf, size_t len, uint64_t off)
{
	uint64_t lat = atomic_load(&d->d_read_lat_us);
	int err = 0;

	if (lat)
		sleep_until(mono_ns() + lat * 1000);
	throttle(&d->d_rd, atomic_load(&d->d_read_bps), len);

	pthread_mutex_lock(&d->d_lock);
	if (d->d_dead)
		err = -EIO;
	else if (in_ranges(d->f_eio_read, d->f_neio_read, off, len))
		err = -EIO;
	else if (d->d_volatile)
		err = cache_read(d, buf, len, off);
	pthread_mutex_unlock(&d->d_lock);

	/* Without a cache the image is the truth and needs no lock: a read
	 * racing a write may see either, as on any disk. */
	if (!err && !d->d_volatile)
		err = pread_full(d->d_fd, buf, len, off);

	pthread_mutex_lock(&d->d_lock);
	if (err) {
		d->c_read_errors++;
	} else {
		d->c_reads++;
		d->c_bytes_read += len;
	}
	pthread_mutex_unlock(&d->d_lock);
	return err;
}

/*
 * A cache flush: everything written before it was issued reaches the image
 * with a real pwrite + fdatasync.  The media is busy for flush_us first and
 * only then is the data written, so a cut during that time loses all of it
 * (a flush is durable when acknowledged, never earlier).  Writes arriving
 * meanwhile go to a fresh dirty map.
 */
static int disk_flush(struct disk *d)
{
	uint64_t t0;
	struct blkmap *fl = NULL;
	struct blk **v = NULL;
	int err = 0;

	pthread_mutex_lock(&d->d_flush_lock);
	t0 = mono_ns();

	pthread_mutex_lock(&d->d_lock);
	if (d->d_dead) {
		err = -EIO;
	} else if (d->f_eio_flush) {
		d->f_eio_flush--;
		err = -EIO;
	} else if (t0 >= d->f_win_start_ns && t0 < d->f_win_end_ns) {
		err = -EIO;
	} else if (d->d_volatile && d->d_dirty.m_count) {
		struct blkmap fresh;

		fl = malloc(sizeof(*fl));
		if (fl && !map_init(&fresh)) {
			*fl = d->d_dirty;
			d->d_dirty = fresh;
			d->d_flushing = fl;
		} else {
			free(fl);
			fl = NULL;
			err = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&d->d_lock);

	sleep_until(t0 + atomic_load(&d->d_flush_us) * 1000);

	/* Under d_lock, so a cut sees the blocks either all in the image or
	 * all still in the flushing map, never half. */
	pthread_mutex_lock(&d->d_lock);
	if (!err && d->d_dead)
		err = -EIO;
	if (fl) {
		if (!err && !(v = map_sorted(fl)))
			err = -ENOMEM;
		for (struct blk **p = v; !err && *p; p++)
			err = pwrite_full(d->d_fd, (*p)->b_data, BLK_SIZE,
					  (*p)->b_nr << BLK_SHIFT);
		if (err && !d->d_dead) {
			/* not written: keep the blocks cached, under any
			 * newer copy written since */
			for (size_t i = 0; i < fl->m_nslots; i++) {
				struct blk *b = fl->m_slot[i], *next;

				for (; b; b = next) {
					next = b->b_next;
					if (map_find(&d->d_dirty, b->b_nr))
						free(b);
					else
						map_insert(&d->d_dirty, b);
				}
			}
			free(fl->m_slot);
			fl->m_slot = NULL;
		}
		d->d_flushing = NULL;
	}
	pthread_mutex_unlock(&d->d_lock);

	if (!err && fdatasync(d->d_fd))
		err = -errno;
	if (fl) {
		if (fl->m_slot)
			map_free(fl);
		free(fl);
	}
	free(v);

	pthread_mutex_lock(&d->d_lock);
	d->c_flushes++;
	d->c_flush_ns += mono_ns() - t0;
	if (err)
		d->c_flush_errors++;
	pthread_mutex_unlock(&d->d_lock);
	pthread_mutex_unlock(&d->d_flush_lock);
	return err;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Power cut: from now on every request fails with EIO.  Unflushed blocks
 * (the dirty map, and a flush's blocks not yet written) are dropped, except
 * a seeded random pct% of them that reach the image, the way a disk may have
 * destaged part of its cache in any order before dying.
 */
static void disk_cut(struct disk *d, unsigned pct, uint64_t seed)
{
	struct blkmap lost_map, fresh;
	struct blk **v = NULL;
	uint64_t s = seed, kept = 0, lost = 0;

	if (map_init(&fresh))
		memset(&fresh, 0, sizeof(fresh));

	pthread_mutex_lock(&d->d_lock);
	if (d->d_dead) {
		pthread_mutex_unlock(&d->d_lock);
		if (fresh.m_slot)
			map_free(&fresh);
		return;
	}
	atomic_store(&d->d_dead, 1);
	lost_map = d->d_dirty;
	d->d_dirty = fresh;
	/* The flusher owns its map and frees it when it sees d_dead; copy the
	 * blocks that no newer dirty copy supersedes. */
	if (d->d_flushing) {
		for (size_t i = 0; i < d->d_flushing->m_nslots; i++) {
			for (struct blk *b = d->d_flushing->m_slot[i]; b; b = b->b_next) {
				struct blk *c;

				if (map_find(&lost_map, b->b_nr) || !(c = malloc(sizeof(*c))))
					continue;
				memcpy(c, b, sizeof(*c));
				map_insert(&lost_map, c);
			}
		}
	}
	pthread_mutex_unlock(&d->d_lock);

	/* Nothing else touches the image once d_dead is set. */
	if (pct && lost_map.m_count)
		v = map_sorted(&lost_map);
	for (struct blk **p = v; p && *p; p++) {
		if (splitmix64(&s) % 100 < pct &&
		    !pwrite_full(d->d_fd, (*p)->b_data, BLK_SIZE, (*p)->b_nr << BLK_SHIFT))
			kept++;
	}
	lost = lost_map.m_count - kept;
	if (kept)
		fdatasync(d->d_fd);
	free(v);
	map_free(&lost_map);

	pthread_mutex_lock(&d->d_lock);
	d->c_cut_discarded = lost * BLK_SIZE;
	d->c_cut_survived = kept * BLK_SIZE;
	d->c_cut_seed = seed;
	d->c_cut_pct = pct;
	pthread_mutex_unlock(&d->d_lock);
}

/* ---- FUSE side: a root directory holding disk.img ---- */

static void fill_attr(struct stat *st, fuse_ino_t ino)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atime = st->st_mtime = st->st_ctime = start_time;
	if (ino == INO_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = disk.d_size;
		st->st_blocks = disk.d_size / 512;
		st->st_blksize = BLK_SIZE;
	}
}

static void sd_init(void *ud, struct fuse_conn_info *conn)
{
	/* Large requests so the loop device's bios arrive whole. */
	conn->max_write = 1U << 20;
	conn->max_readahead = 0;
	/* Room for the loop device's queue of asynchronous direct I/O. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	/* No page cache of ours may hold written data. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void sd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != INO_ROOT || strcmp(name, IMG_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = INO_IMG;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_attr(&e.attr, INO_IMG);
	fuse_reply_entry(req, &e);
}

static void sd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (ino != INO_ROOT && ino != INO_IMG) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(&st, ino);
	fuse_reply_attr(req, &st, 3600);
}

static void sd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct stat st;

	/* A disk does not change size; times and modes are ignored. */
	if ((to_set & FUSE_SET_ATTR_SIZE) && ((uint64_t)attr->st_size != disk.d_size ||
					      ino != INO_IMG)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(&st, ino);
	fuse_reply_attr(req, &st, 3600);
}

static void sd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != INO_IMG) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* direct_io: the kernel keeps no page cache for this file, so the
	 * loop device's writes and reads all come here. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void sd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	unsigned char *buf;
	int err;

	if ((uint64_t)off >= disk.d_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > disk.d_size - off)
		size = disk.d_size - off;
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = disk_read(&disk, buf, size, off);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, (char *)buf, size);
	free(buf);
}

static void sd_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	int err = disk_write(&disk, buf, size, off);

	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, size);
}

static void sd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	fuse_reply_err(req, -disk_flush(&disk));
}

/* close(2) of the image is not a cache flush: only fsync is. */
static void sd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void sd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void sd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const struct {
		const char *name;
		fuse_ino_t ino;
	} ent[] = { { ".", INO_ROOT }, { "..", INO_ROOT }, { IMG_NAME, INO_IMG } };
	char buf[512];
	size_t pos = 0;

	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < 3; i++) {
		struct stat st;
		size_t n;

		fill_attr(&st, ent[i].ino);
		n = fuse_add_direntry(req, buf + pos, size - pos, ent[i].name,
				      &st, i + 1);
		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
}

static void sd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = BLK_SIZE;
	sv.f_blocks = disk.d_size / BLK_SIZE;
	sv.f_files = 1;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void sd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	/* No discard: a trimmed block would have to be a cached write too. */
	fuse_reply_err(req, EOPNOTSUPP);
}

static const struct fuse_lowlevel_ops sd_ops = {
	.init = sd_init,
	.lookup = sd_lookup,
	.getattr = sd_getattr,
	.setattr = sd_setattr,
	.open = sd_open,
	.read = sd_read,
	.write = sd_write,
	.fsync = sd_fsync,
	.flush = sd_flush,
	.release = sd_release,
	.readdir = sd_readdir,
	.statfs = sd_statfs,
	.fallocate = sd_fallocate,
};

/* ---- control socket ---- */

struct out {
	char o_buf[OUT_MAX];
	size_t o_len;
};

static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->o_len >= sizeof(o->o_buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->o_buf + o->o_len, sizeof(o->o_buf) - o->o_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->o_len += n;
	if (o->o_len > sizeof(o->o_buf))
		o->o_len = sizeof(o->o_buf);
}

/* Numbers with an optional K/M/G suffix (powers of 1024). */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': x <<= 10; end++; break;
	case 'm': case 'M': x <<= 20; end++; break;
	case 'g': case 'G': x <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*v = x;
	return 0;
}

static void status(struct disk *d, struct out *o)
{
	uint64_t now = mono_ns();

	pthread_mutex_lock(&d->d_lock);
	outf(o, "state=%s\n", d->d_dead ? "cut" : "running");
	outf(o, "image=%s\n", d->d_image);
	outf(o, "size_bytes=%" PRIu64 "\n", d->d_size);
	outf(o, "volatile=%d\n", d->d_volatile);
	outf(o, "flush_us=%" PRIu64 "\n", atomic_load(&d->d_flush_us));
	outf(o, "write_mbps=%" PRIu64 "\n", atomic_load(&d->d_write_bps) / 1000000);
	outf(o, "read_mbps=%" PRIu64 "\n", atomic_load(&d->d_read_bps) / 1000000);
	outf(o, "read_lat_us=%" PRIu64 "\n", atomic_load(&d->d_read_lat_us));
	outf(o, "flushes=%" PRIu64 "\n", d->c_flushes);
	outf(o, "flush_errors=%" PRIu64 "\n", d->c_flush_errors);
	outf(o, "flush_avg_us=%" PRIu64 "\n",
	     d->c_flushes ? d->c_flush_ns / d->c_flushes / 1000 : 0);
	outf(o, "writes=%" PRIu64 "\n", d->c_writes);
	outf(o, "bytes_written=%" PRIu64 "\n", d->c_bytes_written);
	outf(o, "write_errors=%" PRIu64 "\n", d->c_write_errors);
	outf(o, "reads=%" PRIu64 "\n", d->c_reads);
	outf(o, "bytes_read=%" PRIu64 "\n", d->c_bytes_read);
	outf(o, "read_errors=%" PRIu64 "\n", d->c_read_errors);
	outf(o, "dirty_bytes=%" PRIu64 "\n",
	     (uint64_t)(d->d_dirty.m_count + (d->d_flushing ? d->d_flushing->m_count : 0)) *
		     BLK_SIZE);
	outf(o, "dirty_peak_bytes=%" PRIu64 "\n", d->c_dirty_peak);
	if (d->d_dead) {
		outf(o, "cut_discarded_bytes=%" PRIu64 "\n", d->c_cut_discarded);
		outf(o, "cut_survived_bytes=%" PRIu64 "\n", d->c_cut_survived);
		outf(o, "cut_survive_pct=%" PRIu64 "\n", d->c_cut_pct);
		outf(o, "cut_seed=%" PRIu64 "\n", d->c_cut_seed);
	}
	outf(o, "fault_eio_flush=%" PRIu64 "\n", d->f_eio_flush);
	if (d->f_win_end_ns > now)
		outf(o, "fault_eio_window_ms=%" PRIu64 "+%" PRIu64 "\n",
		     d->f_win_start_ns > now ? (d->f_win_start_ns - now) / 1000000 : 0,
		     (d->f_win_end_ns - (d->f_win_start_ns > now ? d->f_win_start_ns : now)) /
			     1000000);
	else
		outf(o, "fault_eio_window_ms=none\n");
	outf(o, "fault_enospc_after=%" PRIu64 "\n", d->f_enospc_after);
	outf(o, "fault_eio_read=");
	for (int i = 0; i < d->f_neio_read; i++)
		outf(o, "%s%" PRIu64 "+%" PRIu64, i ? "," : "",
		     d->f_eio_read[i].r_off, d->f_eio_read[i].r_len);
	outf(o, "%s\nfault_eio_write=", d->f_neio_read ? "" : "none");
	for (int i = 0; i < d->f_neio_write; i++)
		outf(o, "%s%" PRIu64 "+%" PRIu64, i ? "," : "",
		     d->f_eio_write[i].r_off, d->f_eio_write[i].r_len);
	outf(o, "%s\n", d->f_neio_write ? "" : "none");
	pthread_mutex_unlock(&d->d_lock);
}

static int add_range(struct range *r, int *n, const char *a, const char *b)
{
	uint64_t off, len;

	if (parse_u64(a, &off) || parse_u64(b, &len) || !len)
		return -1;
	if (*n == MAX_RANGES)
		return -2;
	r[*n].r_off = off;
	r[*n].r_len = len;
	(*n)++;
	return 0;
}

static void cmd_fault(struct disk *d, char **av, int ac, struct out *o)
{
	uint64_t a, b;
	int rc = 0;

	pthread_mutex_lock(&d->d_lock);
	if (ac == 2 && !strcmp(av[1], "clear")) {
		d->f_eio_flush = 0;
		d->f_win_start_ns = d->f_win_end_ns = 0;
		d->f_enospc_after = 0;
		d->f_neio_read = d->f_neio_write = 0;
	} else if (ac == 3 && !strcmp(av[1], "eio-flush") && !parse_u64(av[2], &a)) {
		d->f_eio_flush = a;
	} else if (ac == 4 && !strcmp(av[1], "eio-window") && !parse_u64(av[2], &a) &&
		   !parse_u64(av[3], &b)) {
		d->f_win_start_ns = mono_ns() + a * 1000000;
		d->f_win_end_ns = d->f_win_start_ns + b * 1000000;
	} else if (ac == 3 && !strcmp(av[1], "enospc-after") && !parse_u64(av[2], &a)) {
		d->f_enospc_after = a << 20;
	} else if (ac == 4 && !strcmp(av[1], "eio-read")) {
		rc = add_range(d->f_eio_read, &d->f_neio_read, av[2], av[3]);
	} else if (ac == 4 && !strcmp(av[1], "eio-write")) {
		rc = add_range(d->f_eio_write, &d->f_neio_write, av[2], av[3]);
	} else {
		rc = -1;
	}
	pthread_mutex_unlock(&d->d_lock);
	if (rc == -2)
		outf(o, "error: at most %d ranges\n", MAX_RANGES);
	else if (rc)
		outf(o, "error: fault eio-flush N | eio-window START_MS LEN_MS | "
			"enospc-after MB | eio-read OFFSET LEN | eio-write OFFSET LEN | clear\n");
	else
		status(d, o);
}

static void cmd_set(struct disk *d, char **av, int ac, struct out *o)
{
	for (int i = 1; i < ac; i++) {
		char *eq = strchr(av[i], '=');
		uint64_t v;

		if (!eq || parse_u64(eq + 1, &v)) {
			outf(o, "error: set KEY=N (flush_us write_mbps read_mbps read_lat_us)\n");
			return;
		}
		*eq = 0;
		if (!strcmp(av[i], "flush_us")) {
			atomic_store(&d->d_flush_us, v);
		} else if (!strcmp(av[i], "write_mbps")) {
			atomic_store(&d->d_write_bps, v * 1000000);
		} else if (!strcmp(av[i], "read_mbps")) {
			atomic_store(&d->d_read_bps, v * 1000000);
		} else if (!strcmp(av[i], "read_lat_us")) {
			atomic_store(&d->d_read_lat_us, v);
		} else {
			outf(o, "error: unknown setting %s\n", av[i]);
			return;
		}
	}
	status(d, o);
}

static void ctl_command(struct disk *d, char *line, struct out *o)
{
	char *av[16], *save = NULL, *tok;
	int ac = 0;

	for (tok = strtok_r(line, " \t\r\n", &save); tok && ac < 16;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		av[ac++] = tok;
	if (!ac) {
		outf(o, "error: empty command\n");
	} else if (!strcmp(av[0], "ping") && ac == 1) {
		outf(o, "pong\n");
	} else if (!strcmp(av[0], "status") && ac == 1) {
		status(d, o);
	} else if (!strcmp(av[0], "cut") && ac <= 3) {
		uint64_t pct = 0, seed = 0;

		if ((ac > 1 && (parse_u64(av[1], &pct) || pct > 100)) ||
		    (ac > 2 && parse_u64(av[2], &seed))) {
			outf(o, "error: cut [PCT [SEED]] with PCT in 0..100\n");
			return;
		}
		disk_cut(d, (unsigned)pct, seed);
		status(d, o);
	} else if (!strcmp(av[0], "fault")) {
		cmd_fault(d, av, ac, o);
	} else if (!strcmp(av[0], "set")) {
		cmd_set(d, av, ac, o);
	} else {
		outf(o, "error: unknown command %s (ping status cut fault set)\n", av[0]);
	}
}

static void *ctl_thread(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		char line[CTL_MAX];
		struct out o = { .o_len = 0 };
		struct timeval tv = { .tv_sec = 5 };
		size_t len = 0;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (len < sizeof(line) - 1) {
			ssize_t n = read(fd, line + len, sizeof(line) - 1 - len);

			if (n <= 0)
				break;
			len += n;
			if (memchr(line, '\n', len))
				break;
		}
		line[len] = 0;
		ctl_command(&disk, line, &o);
		for (size_t off = 0; off < o.o_len;) {
			ssize_t n = write(fd, o.o_buf + off, o.o_len - off);

			if (n <= 0)
				break;
			off += n;
		}
		close(fd);
	}
	return NULL;
}

static int ctl_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "slowdiskd: socket path too long: %s\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, 0600) || listen(fd, 8)) {
		fprintf(stderr, "slowdiskd: control socket %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Client: send one command, print the reply; exit 1 on "error:", 2 when the
 * daemon cannot be reached. */
static int ctl_client(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	char cmd[CTL_MAX], reply[OUT_MAX + 1];
	size_t len = 0, rlen = 0;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: slowdiskd ctl SOCKET COMMAND [ARGS...]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		int n = snprintf(cmd + len, sizeof(cmd) - len, "%s%s", i > 3 ? " " : "",
				 argv[i]);

		if (n < 0 || (size_t)n >= sizeof(cmd) - len - 1) {
			fprintf(stderr, "slowdiskd: command too long\n");
			return 2;
		}
		len += n;
	}
	cmd[len++] = '\n';
	if (strlen(argv[2]) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, argv[2]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "slowdiskd: cannot reach %s: %s\n", argv[2], strerror(errno));
		return 2;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (write(fd, cmd, len) != (ssize_t)len) {
		fprintf(stderr, "slowdiskd: send: %s\n", strerror(errno));
		return 2;
	}
	for (;;) {
		ssize_t n = read(fd, reply + rlen, sizeof(reply) - 1 - rlen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "slowdiskd: no reply: %s\n", strerror(errno));
			return 2;
		}
		if (n == 0 || (rlen += n) == sizeof(reply) - 1)
			break;
	}
	close(fd);
	reply[rlen] = 0;
	if (!rlen) {
		fprintf(stderr, "slowdiskd: empty reply\n");
		return 2;
	}
	if (!strncmp(reply, "error:", 6)) {
		fprintf(stderr, "slowdiskd: %s", reply + 7);
		return 1;
	}
	fputs(reply, stdout);
	return 0;
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: slowdiskd [OPTIONS] --image PATH --ctl SOCKET MOUNTPOINT\n"
		"       slowdiskd ctl SOCKET COMMAND [ARGS...]\n"
		"Serves PATH as MOUNTPOINT/" IMG_NAME " (run in the foreground).\n"
		"  --image PATH       backing image: the persisted state of the disk\n"
		"  --size-mb N        image size in MiB (default: the image's size)\n"
		"  --flush-us N       cache flush (fsync) latency in microseconds\n"
		"  --write-mbps N     write bandwidth, 10^6 bytes/s (0 = unlimited)\n"
		"  --read-mbps N      read bandwidth, 10^6 bytes/s (0 = unlimited)\n"
		"  --read-lat-us N    latency added to each read request\n"
		"  --volatile         hold writes in memory until a flush\n"
		"  --ctl SOCKET       control socket (commands: ping status cut fault set)\n"
		"  --debug            FUSE debug output\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "size-mb", required_argument, NULL, 's' },
		{ "flush-us", required_argument, NULL, 'f' },
		{ "write-mbps", required_argument, NULL, 'w' },
		{ "read-mbps", required_argument, NULL, 'r' },
		{ "read-lat-us", required_argument, NULL, 'l' },
		{ "volatile", no_argument, NULL, 'v' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *ctl = NULL, *mnt;
	uint64_t size_mb = 0, v;
	int debug = 0, c, lfd, rc;
	char *fargv[4];
	struct fuse_args args;
	struct fuse_session *se;
	struct fuse_loop_config *cfg;
	pthread_t tid;
	struct stat st;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_client(argc, argv);

	pthread_mutex_init(&disk.d_lock, NULL);
	pthread_mutex_init(&disk.d_flush_lock, NULL);
	pthread_mutex_init(&disk.d_wr.t_lock, NULL);
	pthread_mutex_init(&disk.d_rd.t_lock, NULL);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (strchr("sfwrl", c) && parse_u64(optarg, &v)) {
			fprintf(stderr, "slowdiskd: bad number: %s\n", optarg);
			return 2;
		}
		switch (c) {
		case 'i': disk.d_image = optarg; break;
		case 's': size_mb = v; break;
		case 'f': disk.d_flush_us = v; break;
		case 'w': disk.d_write_bps = v * 1000000; break;
		case 'r': disk.d_read_bps = v * 1000000; break;
		case 'l': disk.d_read_lat_us = v; break;
		case 'v': disk.d_volatile = 1; break;
		case 'c': ctl = optarg; break;
		case 'd': debug = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!disk.d_image || !ctl || optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	mnt = argv[optind];

	disk.d_fd = open(disk.d_image, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (disk.d_fd < 0 || fstat(disk.d_fd, &st)) {
		fprintf(stderr, "slowdiskd: %s: %s\n", disk.d_image, strerror(errno));
		return 1;
	}
	if (size_mb && (uint64_t)st.st_size != size_mb << 20 &&
	    ftruncate(disk.d_fd, size_mb << 20)) {
		fprintf(stderr, "slowdiskd: resize %s: %s\n", disk.d_image, strerror(errno));
		return 1;
	}
	disk.d_size = size_mb ? size_mb << 20 : (uint64_t)st.st_size;
	disk.d_size &= ~(uint64_t)(BLK_SIZE - 1);
	if (!disk.d_size) {
		fprintf(stderr, "slowdiskd: %s is empty; give --size-mb\n", disk.d_image);
		return 1;
	}
	if (map_init(&disk.d_dirty))
		return 1;

	/* We serve the I/O that writeback of the filesystem above waits on:
	 * our own allocations must not recurse into that writeback. */
	prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	start_time = time(NULL);

	fargv[0] = argv[0];
	fargv[1] = "-o";
	fargv[2] = "fsname=slowdisk,subtype=slowdisk";
	fargv[3] = debug ? "-d" : NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(debug ? 4 : 3, fargv);
	se = fuse_session_new(&args, &sd_ops, sizeof(sd_ops), NULL);
	fuse_opt_free_args(&args);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) || fuse_session_mount(se, mnt)) {
		fuse_session_destroy(se);
		return 1;
	}
	/* The socket appears once the mount is ready: callers wait on it. */
	lfd = ctl_listen(ctl);
	if (lfd < 0) {
		fuse_session_unmount(se);
		fuse_session_destroy(se);
		return 1;
	}
	if (pthread_create(&tid, NULL, ctl_thread, (void *)(intptr_t)lfd)) {
		fuse_session_unmount(se);
		fuse_session_destroy(se);
		return 1;
	}
	pthread_detach(tid);

	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_idle_threads(cfg, 16);
	fuse_loop_cfg_set_max_threads(cfg, 64);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);

	/* Stopping the daemon is pulling the disk: the cache is not saved. */
	unlink(ctl);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc ? 1 : 0;
}
