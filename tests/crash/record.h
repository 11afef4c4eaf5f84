/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* On-disk record and acknowledgement formats shared by the power-cut workload
 * (crashload) and the checker (crashcheck): a record's length and payload are
 * both derived from its id, so the checker can rebuild and compare it. */
#ifndef CRASH_RECORD_H
#define CRASH_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define REC_MAGIC	0x52434743u	/* "CGCR" little-endian */
#define REC_MIN		32u
/* At most 4 KiB, written whole, so O_APPEND keeps writers apart. */
#define REC_MAX		4096u
#define ACK_MAGIC	0x4b434147u	/* "GACK" */
#define MAX_WRITERS	64u

/* Every record length is a multiple of 8, so records always start on an
 * 8-byte boundary; the checker still scans byte by byte to resync. */
struct rec_hdr {
	uint32_t r_magic;
	uint32_t r_writer;
	uint64_t r_seq;
	uint32_t r_len;		/* whole record, header included */
	uint32_t r_crc;		/* CRC-32 of header (with r_crc = 0) + payload */
};

/* One message per acknowledged record; 24 bytes, far below PIPE_BUF, so a
 * single write() of it to the pipe is atomic even with many writers. */
struct ack_msg {
	uint32_t a_magic;
	uint32_t a_writer;
	uint64_t a_seq;
	int64_t a_ns;		/* CLOCK_REALTIME when the sync returned */
};

static inline uint64_t rec_mix(uint64_t x)
{
	/* splitmix64 finaliser: cheap, well spread, deterministic */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t rec_key(uint32_t writer, uint64_t seq)
{
	return ((uint64_t)writer << 48) ^ seq;
}

/* Length of record (writer, seq) given the workload's largest length. */
static inline uint32_t rec_len(uint32_t writer, uint64_t seq, uint32_t max)
{
	uint32_t slots = (max - REC_MIN) / 8 + 1;

	return REC_MIN + 8 * (uint32_t)(rec_mix(rec_key(writer, seq) ^ 0x1e9) % slots);
}

static inline void rec_payload(uint32_t writer, uint64_t seq, unsigned char *p,
			       size_t n)
{
	uint64_t s = rec_key(writer, seq);
	size_t i;

	for (i = 0; i < n; i += 8) {
		uint64_t v = rec_mix(s + i);
		size_t k = n - i < 8 ? n - i : 8;

		memcpy(p + i, &v, k);
	}
}

/* Reflected CRC-32 (polynomial 0xEDB88320).  rec_crc_init() must run once
 * before any thread or child process starts. */
static uint32_t rec_crc_table[256];

static inline void rec_crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		for (c = i, j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
		rec_crc_table[i] = c;
	}
}

static inline uint32_t rec_crc32(uint32_t crc, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	crc = ~crc;
	while (n--)
		crc = rec_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* Builds record (writer, seq) into @buf (at least REC_MAX bytes); returns
 * its length. */
static inline uint32_t rec_build(unsigned char *buf, uint32_t writer,
				 uint64_t seq, uint32_t max)
{
	struct rec_hdr h = {
		.r_magic = REC_MAGIC,
		.r_writer = writer,
		.r_seq = seq,
		.r_len = rec_len(writer, seq, max),
	};

	rec_payload(writer, seq, buf + sizeof(h), h.r_len - sizeof(h));
	memcpy(buf, &h, sizeof(h));
	h.r_crc = rec_crc32(0, buf, h.r_len);
	memcpy(buf, &h, sizeof(h));
	return h.r_len;
}

/* Length of the intact record at @p (@avail bytes readable), or 0 when the
 * bytes there are not a whole, correct record. */
static inline uint32_t rec_check(const unsigned char *p, size_t avail)
{
	unsigned char body[REC_MAX];
	struct rec_hdr h;
	uint32_t crc;

	if (avail < sizeof(h))
		return 0;
	memcpy(&h, p, sizeof(h));
	if (h.r_magic != REC_MAGIC || h.r_writer >= MAX_WRITERS ||
	    h.r_len < REC_MIN || h.r_len > REC_MAX || h.r_len % 8 ||
	    h.r_len > avail)
		return 0;
	crc = h.r_crc;
	h.r_crc = 0;
	memcpy(body, &h, sizeof(h));
	memcpy(body + sizeof(h), p + sizeof(h), h.r_len - sizeof(h));
	if (rec_crc32(0, body, h.r_len) != crc)
		return 0;
	/* A right checksum over the wrong payload would mean a writer bug. */
	rec_payload(h.r_writer, h.r_seq, body, h.r_len - sizeof(h));
	if (memcmp(body, p + sizeof(h), h.r_len - sizeof(h)))
		return 0;
	return h.r_len;
}

/* -w overwrite: each writer rewrites REC_SLOTS fixed slots in turn, so a
 * power cut can show bytes older than an acknowledged write in its place. */
#define REC_SLOTS 4u
static inline uint64_t rec_slot_off(uint32_t writer, uint64_t seq, int shared)
{
	return ((shared ? (uint64_t)writer * REC_SLOTS : 0) + seq % REC_SLOTS) * REC_MAX;
}

#endif
