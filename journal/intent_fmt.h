/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The intent log's on-disk format, pure: header copies, records, CRC-32C,
 * the scan from the checkpoint (exact sequence numbers), and the replay
 * plan (which DATA records a RETIRE cancels). No system calls here: the
 * log is read through a callback, so unit tests drive it from memory. */
#ifndef GC_INTENT_FMT_H
#define GC_INTENT_FMT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GI_HDR_MAGIC 0x31474f4c54434749ULL /* "IGCTLOG1" */
#define GI_REC_MAGIC 0x52474349u	    /* "ICGR" */
#define GI_VERSION 1
#define GI_ALIGN 512
#define GI_DATA_START 4096
#define GI_HANDLE_MAX 128
#define GI_PATH_MAX 1024
#define GI_MIN_SIZE (1u << 20)

/* REFUSED: a process could not replay the records before it and ran on
 * with real calls from r_size (CLOCK_REALTIME ns): they may only be
 * replayed into files not changed since. */
enum gi_type { GI_DATA = 1, GI_RETIRE = 2, GI_WRAP = 3, GI_REFUSED = 4 };

/* One of the two copies at 0 and GI_ALIGN. */
struct gi_hdr {
	uint64_t h_magic;
	uint32_t h_version;
	uint32_t h_crc;		/* CRC-32C of the struct with h_crc = 0 */
	uint64_t h_size;	/* the log file's size */
	uint8_t h_id[16];	/* random at --intent-init */
	uint64_t h_gen;		/* bumped at each header write */
	uint64_t h_ckpt_seq;	/* first seq not retired */
	uint64_t h_ckpt_off;	/* where record h_ckpt_seq starts (or will) */
};

/* A file's identity as records carry it. */
struct gi_fid {
	int32_t f_htype;
	uint32_t f_hlen;
	uint8_t f_handle[GI_HANDLE_MAX];
};

/* Fixed part of a record; handle, path and bytes follow, then zero padding
 * to GI_ALIGN. */
struct gi_rec {
	uint32_t r_magic;
	uint32_t r_type;
	uint64_t r_seq;
	uint32_t r_len;		/* whole record, multiple of GI_ALIGN */
	uint32_t r_crc;		/* CRC-32C of the whole record with r_crc = 0 */
	uint8_t r_id[16];
	int32_t r_htype;
	uint32_t r_hlen;
	uint64_t r_dev;
	uint64_t r_ino;
	uint64_t r_off;		/* DATA: file offset */
	uint64_t r_size;	/* DATA: file size after the write */
	uint64_t r_upto;	/* RETIRE: DATA records of the file up to this seq */
	uint32_t r_dlen;	/* DATA: bytes */
	uint16_t r_plen;	/* path bytes, no NUL */
	uint16_t r_pad;
};

uint32_t gi_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven one, which gi_crc32c uses where the CPU has no CRC32C
 * instruction (the tests compare the two). */
uint32_t gi_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Header: fill the CRC, check one copy read from disk. */
void gi_hdr_seal(struct gi_hdr *h);
bool gi_hdr_valid(const struct gi_hdr *h);
/* The current header from the two copies (each GI_ALIGN bytes at @blk and
 * @blk + GI_ALIGN): the valid one with the higher generation. false: none. */
bool gi_hdr_pick(const uint8_t *blk, struct gi_hdr *out);
/* The copy a header of generation @gen is written to (byte offset). */
static inline uint64_t gi_hdr_slot(uint64_t gen)
{
	return (gen & 1) * GI_ALIGN;
}

/* Bytes a record takes with @hlen handle, @plen path and @dlen data bytes. */
static inline uint32_t gi_rec_len(uint32_t hlen, uint32_t plen, uint32_t dlen)
{
	uint64_t n = sizeof(struct gi_rec) + hlen + plen + dlen;

	return (uint32_t)((n + GI_ALIGN - 1) / GI_ALIGN * GI_ALIGN);
}

/* Builds a record into @buf (gi_rec_len bytes): header fields from @r,
 * then handle, path, data (NULL: already in place); pads with zeros and
 * seals. Returns its length. */
uint32_t gi_rec_build(uint8_t *buf, const struct gi_rec *r, const struct gi_fid *fid,
		      const char *path, const void *data);

/* Reads @len bytes of the log at @off into @buf; 0 or -errno. */
typedef int (*gi_read_fn)(void *ctx, uint64_t off, void *buf, size_t len);

/* One record found by the scan; @buf holds the whole record. */
struct gi_found {
	uint64_t fo_off;
	const struct gi_rec *fo_rec;
	const uint8_t *fo_handle, *fo_path, *fo_data;
};
/* Called per valid record in seq order; nonzero stops the scan. */
typedef int (*gi_visit_fn)(void *ctx, const struct gi_found *f);

/* Where a scan ended: the seq and offset the next record would take. */
struct gi_end {
	uint64_t e_seq;
	uint64_t e_off;
	uint64_t e_records;	/* valid records (WRAP included) */
};

/* Scans from the checkpoint of @h. @buf is scratch of @bufsz bytes (at
 * least the largest record). Returns 0 (stopped at the first invalid
 * record), the visitor's nonzero value, or -errno from @rd. */
int gi_scan(const struct gi_hdr *h, gi_read_fn rd, void *rctx, uint8_t *buf, size_t bufsz,
	    gi_visit_fn visit, void *vctx, struct gi_end *end);

/* The next record's place: @len bytes at @off, or (when they do not fit
 * before the end) a WRAP at @off and the record at GI_DATA_START. Returns
 * the offset the record goes to; *@wrap tells whether a WRAP comes first. */
uint64_t gi_place(uint64_t size, uint64_t off, uint32_t len, bool *wrap);
/* Bytes of the ring in use from @tail to @head (both offsets; equal:
 * empty, the writer never fills the ring whole). */
uint64_t gi_used(uint64_t size, uint64_t tail, uint64_t head);

/* Does @a name the same file as record handle (@htype, @hlen, @h)? */
bool gi_fid_eq(const struct gi_fid *a, int32_t htype, uint32_t hlen, const uint8_t *h);
uint64_t gi_fid_hash(const struct gi_fid *f);

/* The replay plan: the scan's records, each DATA marked live unless a
 * later RETIRE of the same file covers its seq. */
struct gi_plan_ent {
	uint64_t pe_off;	/* of the record in the log */
	uint64_t pe_seq;
	uint32_t pe_len;
	uint32_t pe_type;
	struct gi_fid pe_fid;
	uint64_t pe_upto;	/* RETIRE; REFUSED: its time */
	bool pe_live;		/* DATA to replay */
};
struct gi_plan {
	struct gi_plan_ent *p_ents;
	size_t p_n, p_cap;
	struct gi_end p_end;
	uint64_t p_refused;	/* the first REFUSED record's time (0: none) */
};
/* Scans @h's log into @p (malloc'ed entries; gi_plan_free). 0 or -errno. */
int gi_plan_build(const struct gi_hdr *h, gi_read_fn rd, void *rctx, struct gi_plan *p);
void gi_plan_free(struct gi_plan *p);
/* Live DATA records in the plan. */
size_t gi_plan_live(const struct gi_plan *p);
#endif
