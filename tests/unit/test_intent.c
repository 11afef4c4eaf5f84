// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log's format and recovery: CRC-32C, header copies (a torn one
 * leaves the previous), the scan's exact sequence numbers (a stale lap, a
 * torn record, WRAP), RETIRE in the replay plan (a real call over logged
 * bytes), and recovery into real files: twice (idempotent), cut in the
 * middle, a deleted file, a new file at the same path, a dirty log kept. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal/intent_fmt.h"
#include "journal/intent_log.h"
#include "tests/unit/unit.h"

GC_UNIT_GLOBALS;

TestSuite(intent, .timeout = 30);

/* ---- an in-memory log ---- */

#define MEM_SIZE (2u << 20)
static uint8_t mem[MEM_SIZE];

static int mem_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	if (off + len > MEM_SIZE)
		return -EIO;
	memcpy(buf, mem + off, len);
	return 0;
}

static struct gi_hdr mem_init(void)
{
	struct gi_hdr h = { .h_magic = GI_HDR_MAGIC, .h_version = GI_VERSION,
			    .h_size = MEM_SIZE, .h_gen = 1, .h_ckpt_seq = 1,
			    .h_ckpt_off = GI_DATA_START };

	memset(mem, 0, sizeof(mem));
	memset(h.h_id, 0x5a, sizeof(h.h_id));
	gi_hdr_seal(&h);
	memcpy(mem + gi_hdr_slot(h.h_gen), &h, sizeof(h));
	return h;
}

static struct gi_fid fid_of(int n)
{
	struct gi_fid f = { .f_htype = 1, .f_hlen = 8 };

	memset(f.f_handle, n, 8);
	return f;
}

/* A record at @off: DATA of file @file (or RETIRE up to @upto, or WRAP). */
static uint32_t put(const struct gi_hdr *h, uint64_t off, uint64_t seq, int type, int file,
		    uint64_t upto, const char *data)
{
	struct gi_rec r = { .r_type = (uint32_t)type, .r_seq = seq, .r_upto = upto,
			    .r_dlen = data ? (uint32_t)strlen(data) : 0, .r_plen = 3,
			    .r_off = 0, .r_size = data ? strlen(data) : 0 };
	struct gi_fid f = fid_of(file);

	memcpy(r.r_id, h->h_id, sizeof(r.r_id));
	if (type == GI_WRAP)
		r.r_plen = 0;
	return gi_rec_build(mem + off, &r, type == GI_WRAP ? NULL : &f, "/x", data);
}

static struct gi_plan plan(const struct gi_hdr *h)
{
	struct gi_plan p;

	cr_assert_eq(gi_plan_build(h, mem_read, NULL, &p), 0);
	return p;
}

Test(intent, crc32c_known_vector)
{
	uint8_t b[1031];
	size_t i, n;

	cr_expect_eq(gi_crc32c(0, "123456789", 9), 0xe3069283u);
	cr_expect_eq(gi_crc32c_sw(0, "123456789", 9), 0xe3069283u);
	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 131 + 7);
	for (n = 0; n < sizeof(b); n += 97)
		cr_expect_eq(gi_crc32c(0x1234, b + (n & 7), n), gi_crc32c_sw(0x1234, b + (n & 7), n),
			     "length %zu", n);
}

Test(intent, header_torn_copy_leaves_the_previous)
{
	struct gi_hdr h = mem_init(), got, n = h;

	cr_assert(gi_hdr_pick(mem, &got));
	cr_expect_eq(got.h_gen, 1);
	n.h_gen = 2;
	n.h_ckpt_seq = 7;
	gi_hdr_seal(&n);
	memcpy(mem + gi_hdr_slot(2), &n, sizeof(n));
	cr_assert(gi_hdr_pick(mem, &got));
	cr_expect_eq(got.h_gen, 2, "the newer valid copy wins");
	mem[gi_hdr_slot(2) + 40] ^= 1; /* torn */
	cr_assert(gi_hdr_pick(mem, &got));
	cr_expect_eq(got.h_gen, 1, "a torn newer copy leaves the previous header");
	cr_expect_eq(got.h_ckpt_seq, 1);
}

Test(intent, scan_follows_exact_seqs)
{
	struct gi_hdr h = mem_init();
	uint64_t off = GI_DATA_START;
	struct gi_plan p;

	off += put(&h, off, 1, GI_DATA, 1, 0, "one");
	off += put(&h, off, 2, GI_DATA, 1, 0, "two");
	put(&h, off, 3, GI_DATA, 2, 0, "three");
	p = plan(&h);
	cr_expect_eq(p.p_n, 3);
	cr_expect_eq(p.p_end.e_seq, 4);
	gi_plan_free(&p);
}

Test(intent, stale_record_of_an_earlier_lap_is_never_replayed)
{
	struct gi_hdr h = mem_init();
	uint64_t off = GI_DATA_START, a, b;
	struct gi_plan p;

	/* lap 1 wrote seqs 1..3 here; a checkpoint moved to seq 4 at @b */
	a = off;
	off += put(&h, off, 1, GI_DATA, 1, 0, "old1");
	b = off;
	off += put(&h, off, 2, GI_DATA, 1, 0, "old2");
	put(&h, off, 3, GI_DATA, 1, 0, "old3");
	/* lap 2: seq 4 overwrote the place of seq 2 only, then nothing */
	put(&h, b, 4, GI_DATA, 1, 0, "new4");
	h.h_ckpt_seq = 4;
	h.h_ckpt_off = b;
	p = plan(&h);
	cr_expect_eq(p.p_n, 1, "seq 3 after seq 4 has a valid CRC but the wrong seq");
	cr_expect_eq(p.p_ents[0].pe_seq, 4);
	gi_plan_free(&p);
	(void)a;
}

Test(intent, torn_record_ends_the_scan)
{
	struct gi_hdr h = mem_init();
	uint64_t off = GI_DATA_START, second;
	struct gi_plan p;

	off += put(&h, off, 1, GI_DATA, 1, 0, "one");
	second = off;
	off += put(&h, off, 2, GI_DATA, 1, 0, "two");
	put(&h, off, 3, GI_DATA, 1, 0, "three");
	mem[second + sizeof(struct gi_rec) + 12] ^= 0xff;
	p = plan(&h);
	cr_expect_eq(p.p_n, 1, "nothing past a torn record");
	gi_plan_free(&p);
}

Test(intent, wrap_goes_back_to_the_start)
{
	struct gi_hdr h = mem_init();
	uint64_t last = MEM_SIZE - GI_ALIGN;
	struct gi_plan p;
	bool wrap;

	cr_expect_eq(gi_place(MEM_SIZE, last, 2 * GI_ALIGN, &wrap), GI_DATA_START);
	cr_expect(wrap);
	cr_expect_eq(gi_place(MEM_SIZE, last, GI_ALIGN, &wrap), last);
	cr_expect(!wrap);
	h.h_ckpt_seq = 10;
	h.h_ckpt_off = last;
	put(&h, last, 10, GI_WRAP, 0, 0, NULL);
	put(&h, GI_DATA_START, 11, GI_DATA, 1, 0, "after the wrap");
	p = plan(&h);
	cr_expect_eq(p.p_n, 1);
	cr_expect_eq(p.p_ents[0].pe_seq, 11);
	cr_expect_eq(p.p_end.e_records, 2);
	gi_plan_free(&p);
	cr_expect_eq(gi_used(MEM_SIZE, last, GI_DATA_START + 1024), GI_ALIGN + 1024);
}

Test(intent, retire_cancels_older_records_of_its_file_only)
{
	struct gi_hdr h = mem_init();
	uint64_t off = GI_DATA_START;
	struct gi_plan p;

	/* F logged (1), F written through a real fsync and retired up to 1
	 * (2: RETIRE), G logged (3), F logged again (4) */
	off += put(&h, off, 1, GI_DATA, 1, 0, "F-old");
	off += put(&h, off, 2, GI_RETIRE, 1, 1, NULL);
	off += put(&h, off, 3, GI_DATA, 2, 0, "G");
	put(&h, off, 4, GI_DATA, 1, 0, "F-new");
	p = plan(&h);
	cr_assert_eq(p.p_n, 4);
	cr_expect(!p.p_ents[0].pe_live, "F's record before the real call is never replayed");
	cr_expect(p.p_ents[2].pe_live, "another file's record is");
	cr_expect(p.p_ents[3].pe_live, "so is F's later one");
	cr_expect_eq(gi_plan_live(&p), 2);
	gi_plan_free(&p);
}

/* ---- recovery into real files ---- */

static char dir[] = "/tmp/gc-intent-XXXXXX";
static char logp[4200];

static void mkdir_tmp(void)
{
	cr_assert(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/log", dir);
	cr_assert_eq(gi_log_create(logp, GI_MIN_SIZE), 0);
}

static void rm_tmp(void)
{
	char cmd[4300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Appends a DATA record of @fd's file (@path) for @data at @off to the log
 * at @logp, returning the next seq. */
static uint64_t log_data(int lfd, struct gi_hdr *h, uint64_t *head, uint64_t seq, int fd,
			 const char *path, uint64_t off, const char *data, uint64_t size)
{
	struct {
		struct file_handle fh;
		uint8_t b[GI_HANDLE_MAX];
	} fh = { .fh.handle_bytes = GI_HANDLE_MAX };
	struct gi_rec r = { .r_type = GI_DATA, .r_seq = seq, .r_off = off, .r_size = size,
			    .r_dlen = (uint32_t)strlen(data), .r_plen = (uint16_t)strlen(path) };
	struct gi_fid fid;
	uint8_t buf[8192];
	int mid;
	uint32_t len;

	cr_assert_eq(name_to_handle_at(fd, "", &fh.fh, &mid, AT_EMPTY_PATH), 0,
		     "name_to_handle_at: %s", strerror(errno));
	fid.f_htype = fh.fh.handle_type;
	fid.f_hlen = fh.fh.handle_bytes;
	memcpy(fid.f_handle, fh.fh.f_handle, fid.f_hlen);
	memcpy(r.r_id, h->h_id, sizeof(r.r_id));
	len = gi_rec_build(buf, &r, &fid, path, data);
	cr_assert_eq(gi_sys_pwrite(lfd, buf, len, *head), 0);
	*head += len;
	return seq + 1;
}

static void slurp(const char *path, char *out, size_t n)
{
	int fd = open(path, O_RDONLY);
	ssize_t k;

	memset(out, 0, n);
	cr_assert(fd >= 0);
	k = read(fd, out, n - 1);
	cr_assert(k >= 0);
	close(fd);
}

Test(intent, recovery_replays_in_order_is_idempotent_and_survives_a_cut, .init = mkdir_tmp,
     .fini = rm_tmp)
{
	char fpath[4300], got[64];
	struct gi_recovery rc;
	struct gi_hdr h;
	uint64_t head = GI_DATA_START, seq = 1;
	int lfd, fd;
	struct gi_end e;

	snprintf(fpath, sizeof(fpath), "%s/f", dir);
	fd = open(fpath, O_RDWR | O_CREAT, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "aaaaaaaa", 8), 8);
	lfd = open(logp, O_RDWR);
	cr_assert_eq(gi_log_header(lfd, &h), 0);
	seq = log_data(lfd, &h, &head, seq, fd, fpath, 0, "11111111", 8);
	seq = log_data(lfd, &h, &head, seq, fd, fpath, 4, "2222", 8);
	seq = log_data(lfd, &h, &head, seq, fd, fpath, 8, "3333", 12);
	cr_expect_eq(gi_log_pending(lfd, &e), 3);
	cr_expect_eq(gi_log_create(logp, GI_MIN_SIZE), -EEXIST, "a dirty log is never re-made");
	/* the crash lost what the file had: replay must rebuild it */
	cr_assert_eq(ftruncate(fd, 0), 0);
	close(fd);

	gi_recover_stop_after = 2;
	cr_expect_eq(gi_log_recover(logp, 0, &rc, NULL), -EINTR);
	gi_recover_stop_after = 0;
	cr_expect_eq(gi_log_pending(lfd, &e), 3, "a cut during replay leaves the log dirty");
	slurp(fpath, got, sizeof(got));
	cr_expect_str_eq(got, "11112222", "half replayed: %s", got);

	cr_assert_eq(gi_log_recover(logp, 0, &rc, NULL), 0);
	cr_expect_eq(rc.rc_replayed, 3);
	slurp(fpath, got, sizeof(got));
	cr_expect_str_eq(got, "111122223333", "in seq order: %s", got);
	cr_expect_eq(gi_log_pending(lfd, &e), 0, "marked clean");

	cr_assert_eq(gi_log_recover(logp, 0, &rc, NULL), 0);
	cr_expect_eq(rc.rc_replayed, 0, "a clean log replays nothing the second time");
	slurp(fpath, got, sizeof(got));
	cr_expect_str_eq(got, "111122223333");
	close(lfd);
}

Test(intent, recovery_never_writes_a_new_file_at_the_path, .init = mkdir_tmp, .fini = rm_tmp)
{
	char fpath[4300], gpath[4300], got[64];
	struct gi_recovery rc;
	struct gi_hdr h;
	uint64_t head = GI_DATA_START;
	int lfd, fd;

	snprintf(fpath, sizeof(fpath), "%s/f", dir);
	snprintf(gpath, sizeof(gpath), "%s/g", dir);
	fd = open(fpath, O_RDWR | O_CREAT, 0644);
	cr_assert(fd >= 0);
	lfd = open(logp, O_RDWR);
	cr_assert_eq(gi_log_header(lfd, &h), 0);
	log_data(lfd, &h, &head, 1, fd, fpath, 0, "logged", 6);
	/* F renamed away (by a program outside libgc) and a new file made
	 * at its path: the new one must never receive F's bytes */
	cr_assert_eq(rename(fpath, gpath), 0);
	close(fd);
	fd = open(fpath, O_RDWR | O_CREAT, 0644);
	cr_assert_eq(write(fd, "fresh", 5), 5);
	close(fd);
	rc.rc_replayed = 0;
	if (geteuid() == 0) {
		cr_assert_eq(gi_log_recover(logp, 0, &rc, NULL), 0);
		slurp(gpath, got, sizeof(got));
		cr_expect_str_eq(got, "logged", "found by its handle: %s", got);
	} else {
		cr_expect_neq(gi_log_recover(logp, 0, &rc, NULL), 0,
			      "without root it cannot be found, and recovery says so");
	}
	slurp(fpath, got, sizeof(got));
	cr_expect_str_eq(got, "fresh", "the new file at the path is untouched: %s", got);
	close(lfd);
}

Test(intent, recovery_skips_a_deleted_file, .init = mkdir_tmp, .fini = rm_tmp)
{
	char fpath[4300];
	struct gi_recovery rc;
	struct gi_hdr h;
	uint64_t head = GI_DATA_START;
	int lfd, fd;
	struct gi_end e;

	if (geteuid() != 0)
		cr_skip_test("open_by_handle_at needs root");
	snprintf(fpath, sizeof(fpath), "%s/f", dir);
	fd = open(fpath, O_RDWR | O_CREAT, 0644);
	lfd = open(logp, O_RDWR);
	cr_assert_eq(gi_log_header(lfd, &h), 0);
	log_data(lfd, &h, &head, 1, fd, fpath, 0, "gone", 4);
	close(fd);
	cr_assert_eq(unlink(fpath), 0);
	cr_assert_eq(gi_log_recover(logp, 0, &rc, NULL), 0);
	cr_expect_eq(rc.rc_skipped, 1);
	cr_expect_eq(access(fpath, F_OK), -1, "not made again");
	cr_expect_eq(gi_log_pending(lfd, &e), 0);
	close(lfd);
}
