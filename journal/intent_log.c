// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log file (journal/intent_log.h): creation, header I/O, and
 * recovery: replay of the records not retired, in seq order, into files
 * found by path when the handle there matches, else by handle (root). */
#include "journal/intent_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sys.h"

int gi_sys_open(const char *path, int flags, int mode)
{
	long r = syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);

	return r < 0 ? -errno : (int)r;
}

int gi_sys_close(int fd)
{
	return syscall(SYS_close, fd) < 0 ? -errno : 0;
}

int gi_sys_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pread64, fd, (char *)buf + done, len - done,
				 (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) { /* past the end: zeros, as a hole would read */
			memset((char *)buf + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	return 0;
}

int gi_sys_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		long n = syscall(SYS_pwrite64, fd, (const char *)buf + done, len - done,
				 (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int gi_sys_fsync(int fd, int datasync)
{
	return syscall(datasync ? SYS_fdatasync : SYS_fsync, fd) < 0 ? -errno : 0;
}

int gi_log_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	return gi_sys_pread(*(int *)ctx, buf, len, off);
}

int gi_log_header(int fd, struct gi_hdr *h)
{
	uint8_t blk[2 * GI_ALIGN];
	struct stat st;
	int r = gi_sys_pread(fd, blk, sizeof(blk), 0);

	if (r < 0)
		return r;
	if (!gi_hdr_pick(blk, h))
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	return (uint64_t)st.st_size == h->h_size ? 0 : -EINVAL;
}

int gi_log_write_header(int fd, struct gi_hdr *h)
{
	uint8_t blk[GI_ALIGN];
	struct gi_hdr n = *h;
	int r;

	n.h_gen++;
	gi_hdr_seal(&n);
	memset(blk, 0, sizeof(blk));
	memcpy(blk, &n, sizeof(n));
	r = gi_sys_pwrite(fd, blk, sizeof(blk), gi_hdr_slot(n.h_gen));
	if (!r)
		r = gi_sys_fsync(fd, 1);
	if (!r)
		*h = n;
	return r;
}

static int refused_visit(void *ctx, const struct gi_found *f)
{
	uint64_t *t = ctx;

	if (f->fo_rec->r_type == GI_REFUSED && !*t)
		*t = f->fo_rec->r_size ? f->fo_rec->r_size : 1;
	return 0;
}

/* The records the log holds past its checkpoint (their count, and the end
 * in @end), each shown to @visit when it is given. */
static int64_t scan_log(int fd, struct gi_end *end, gi_visit_fn visit, void *vctx)
{
	size_t bufsz = gi_rec_len(GI_HANDLE_MAX, GI_PATH_MAX, 0) + (4u << 20);
	uint8_t *buf = malloc(bufsz);
	struct gi_hdr h;
	int r = gi_log_header(fd, &h);

	if (!buf)
		return -ENOMEM;
	if (!r)
		r = gi_scan(&h, gi_log_read, &fd, buf, bufsz, visit, vctx, end);
	free(buf);
	return r < 0 ? r : (int64_t)end->e_records;
}

int64_t gi_log_state(int fd, struct gi_end *end, uint64_t *refused)
{
	*refused = 0;
	return scan_log(fd, end, refused_visit, refused);
}

static int first_visit(void *ctx, const struct gi_found *f)
{
	return 1;
}

int gi_log_dirty(int fd)
{
	uint8_t blk[GI_ALIGN], *buf;
	const struct gi_rec *rec = (const struct gi_rec *)blk;
	struct gi_hdr h;
	struct gi_end end;
	int r = gi_log_header(fd, &h);

	if (r < 0)
		return r;
	r = gi_sys_pread(fd, blk, sizeof(blk), h.h_ckpt_off);
	if (r < 0)
		return r;
	if (rec->r_magic != GI_REC_MAGIC || rec->r_seq != h.h_ckpt_seq ||
	    memcmp(rec->r_id, h.h_id, sizeof(h.h_id)))
		return 0;
	/* it looks like one: the scan checks it whole (a torn one is not) */
	if (rec->r_len < GI_ALIGN || rec->r_len > (64u << 20))
		return 0;
	buf = malloc(rec->r_len);
	if (!buf)
		return -ENOMEM;
	r = gi_scan(&h, gi_log_read, &fd, buf, rec->r_len, first_visit, NULL, &end);
	free(buf);
	return r < 0 ? r : end.e_records > 0;
}

int64_t gi_log_pending(int fd, struct gi_end *end)
{
	return scan_log(fd, end, NULL, NULL);
}

int gi_log_create(const char *path, uint64_t size)
{
	/* not const: in .bss it costs no page of the file (.rodata is mapped
	 * into every process around what it reads there) */
	static uint8_t zero[1 << 16] GC_LARGE;
	struct gi_hdr h;
	struct gi_end e;
	uint64_t off;
	int fd, r;

	if (size < GI_MIN_SIZE || size % GI_ALIGN)
		return -EINVAL;
	fd = gi_sys_open(path, O_RDWR, 0);
	if (fd >= 0) {
		int64_t n = gi_log_pending(fd, &e);

		gi_sys_close(fd);
		if (n > 0)
			return -EEXIST;
	}
	fd = gi_sys_open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fd;
	for (off = 0, r = 0; off < size && !r; off += sizeof(zero))
		r = gi_sys_pwrite(fd, zero, size - off < sizeof(zero) ? size - off : sizeof(zero),
				  off);
	memset(&h, 0, sizeof(h));
	h.h_magic = GI_HDR_MAGIC;
	h.h_version = GI_VERSION;
	h.h_size = size;
	h.h_ckpt_seq = 1;
	h.h_ckpt_off = GI_DATA_START;
	if (!r && getrandom(h.h_id, sizeof(h.h_id), 0) != sizeof(h.h_id))
		r = -errno ? -errno : -EIO;
	if (!r)
		r = gi_sys_fsync(fd, 0); /* the zeros and their extents first */
	if (!r)
		r = gi_log_write_header(fd, &h);
	gi_sys_close(fd);
	if (!r) { /* its name too */
		char dir[4096];
		char *s;
		int dfd;

		snprintf(dir, sizeof(dir), "%s", path);
		s = strrchr(dir, '/');
		if (s == dir)
			s[1] = '\0';
		else if (s)
			*s = '\0';
		else
			strcpy(dir, ".");
		dfd = gi_sys_open(dir, O_RDONLY | O_DIRECTORY, 0);
		if (dfd >= 0) {
			r = gi_sys_fsync(dfd, 0);
			gi_sys_close(dfd);
		}
	}
	return r;
}

/* ---- recovery ---- */

struct open_file {
	struct gi_fid of_fid;
	int of_fd;		/* -1: the file is gone (skip its records) */
};

/* The file of record @fid at @path: by path when the handle there is the
 * record's, else by handle through a directory of the same filesystem. */
static int find_file(const struct gi_fid *fid, const char *path, FILE *msg)
{
	struct {
		struct file_handle fh;
		uint8_t b[GI_HANDLE_MAX];
	} h;
	char dir[GI_PATH_MAX + 1];
	int fd, mnt, mid, e;
	char *s;

	fd = gi_sys_open(path, O_WRONLY | O_NOFOLLOW, 0);
	if (fd >= 0) {
		h.fh.handle_bytes = GI_HANDLE_MAX;
		if (name_to_handle_at(fd, "", &h.fh, &mid, AT_EMPTY_PATH) == 0 &&
		    gi_fid_eq(fid, h.fh.handle_type, h.fh.handle_bytes, h.fh.f_handle))
			return fd;
		gi_sys_close(fd);
	}
	/* a directory on the same filesystem: the nearest that exists */
	snprintf(dir, sizeof(dir), "%s", path);
	mnt = -1;
	while ((s = strrchr(dir, '/')) && mnt < 0) {
		if (s == dir) {
			s[1] = '\0';
			mnt = gi_sys_open(dir, O_RDONLY | O_DIRECTORY, 0);
			break;
		}
		*s = '\0';
		mnt = gi_sys_open(dir, O_RDONLY | O_DIRECTORY, 0);
	}
	if (mnt < 0)
		return -ENOENT;
	h.fh.handle_bytes = fid->f_hlen;
	h.fh.handle_type = fid->f_htype;
	memcpy(h.fh.f_handle, fid->f_handle, fid->f_hlen);
	fd = open_by_handle_at(mnt, &h.fh, O_WRONLY | O_CLOEXEC);
	e = fd < 0 ? -errno : 0;
	gi_sys_close(mnt);
	if (fd >= 0)
		return fd;
	if (e == -ESTALE)
		return -ESTALE; /* deleted: nobody can read its bytes */
	if (msg)
		fprintf(msg, "intent recovery: %s: not found by path or handle (%s)\n", path,
			strerror(-e));
	return e == -EPERM ? -EPERM : -ENOENT;
}

unsigned long gi_recover_stop_after;

int gi_log_recover(const char *path, int dry, struct gi_recovery *rc, FILE *msg)
{
	size_t bufsz = gi_rec_len(GI_HANDLE_MAX, GI_PATH_MAX, 0) + (4u << 20), i, k, nf = 0;
	struct open_file *files = NULL;
	struct gi_plan p;
	struct gi_hdr h;
	uint8_t *buf = NULL;
	int fd, r;

	memset(rc, 0, sizeof(*rc));
	fd = gi_sys_open(path, dry ? O_RDONLY : O_RDWR, 0);
	if (fd < 0)
		return fd;
	if (!dry) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

		/* one recovery at a time (a tool, gcd, a process at start-up) */
		while (syscall(SYS_fcntl, fd, F_OFD_SETLKW, &fl) < 0 && errno == EINTR)
			;
	}
	r = gi_log_header(fd, &h);
	if (!r)
		r = gi_plan_build(&h, gi_log_read, &fd, &p);
	if (r) {
		gi_sys_close(fd);
		return r;
	}
	rc->rc_records = p.p_end.e_records;
	buf = malloc(bufsz);
	files = calloc(p.p_n ? p.p_n : 1, sizeof(*files));
	if (!buf || !files)
		r = -ENOMEM;
	for (i = 0; i < p.p_n && !r; i++) {
		const struct gi_plan_ent *e = &p.p_ents[i];
		const struct gi_rec *rec = (const struct gi_rec *)buf;
		char fpath[GI_PATH_MAX + 1];
		struct stat st;
		int ffd = -1;

		if (e->pe_type != GI_DATA)
			continue;
		if (!e->pe_live) {
			rc->rc_retired++;
			continue;
		}
		r = gi_sys_pread(fd, buf, e->pe_len, e->pe_off);
		if (r)
			break;
		memcpy(fpath, buf + sizeof(*rec) + rec->r_hlen, rec->r_plen);
		fpath[rec->r_plen] = '\0';
		for (k = 0; k < nf; k++)
			if (gi_fid_eq(&files[k].of_fid, e->pe_fid.f_htype, e->pe_fid.f_hlen,
				      e->pe_fid.f_handle))
				break;
		if (k == nf) {
			files[nf].of_fid = e->pe_fid;
			files[nf].of_fd = dry ? -1 : find_file(&e->pe_fid, fpath, msg);
			if (files[nf].of_fd < 0 && files[nf].of_fd != -ESTALE && !dry) {
				r = files[nf].of_fd;
				break;
			}
			/* refused before: a file changed since went on without
			 * these records, and they must not go over its bytes */
			if (files[nf].of_fd >= 0 && p.p_refused && fstat(files[nf].of_fd, &st) == 0 &&
			    (uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec >=
				    p.p_refused) {
				if (msg)
					fprintf(msg,
						"intent recovery: %s: changed since the log was refused; its records are not replayed\n",
						fpath);
				gi_sys_close(files[nf].of_fd);
				files[nf].of_fd = -ESRCH;
			}
			nf++;
		}
		ffd = files[k].of_fd;
		if (dry) {
			rc->rc_replayed++;
			rc->rc_bytes += rec->r_dlen;
			continue;
		}
		if (ffd == -ESRCH) {
			rc->rc_stale++;
			continue;
		}
		if (ffd < 0) {
			rc->rc_skipped++;
			continue;
		}
		r = gi_sys_pwrite(ffd, buf + sizeof(*rec) + rec->r_hlen + rec->r_plen, rec->r_dlen,
				  rec->r_off);
		if (!r && fstat(ffd, &st) < 0)
			r = -errno;
		if (!r && (uint64_t)st.st_size < rec->r_size && ftruncate(ffd, (off_t)rec->r_size))
			r = -errno;
		rc->rc_replayed++;
		rc->rc_bytes += rec->r_dlen;
		if (gi_recover_stop_after && rc->rc_replayed >= gi_recover_stop_after) {
			r = -EINTR; /* the cut: nothing synced, the header as it was */
			for (k = 0; k < nf; k++)
				if (files[k].of_fd >= 0)
					gi_sys_close(files[k].of_fd);
			nf = 0;
			break;
		}
	}
	for (k = 0; k < nf; k++) {
		if (files[k].of_fd < 0)
			continue;
		if (!r)
			r = gi_sys_fsync(files[k].of_fd, 0);
		rc->rc_files++;
		gi_sys_close(files[k].of_fd);
	}
	if (!r && !dry && p.p_end.e_records) {
		h.h_ckpt_seq = p.p_end.e_seq;
		h.h_ckpt_off = p.p_end.e_off;
		r = gi_log_write_header(fd, &h);
	}
	if (r && msg)
		fprintf(msg, "intent recovery: %s: %s; the log is left as it was\n", path,
			strerror(-r));
	gi_plan_free(&p);
	free(files);
	free(buf);
	gi_sys_close(fd);
	return r;
}
