// SPDX-License-Identifier: LGPL-2.1-or-later
/* The intent log's format (journal/intent_fmt.h): CRC-32C, header copies,
 * building records, the scan with exact sequence numbers, and the replay
 * plan. Pure: the log is read through a callback. */
#include "journal/intent_fmt.h"

#include <errno.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		for (c = i, j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t gi_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	static int ready;
	const uint8_t *p = buf;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		crc_init(); /* idempotent: racing threads write the same table */
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
/* The same CRC with SSE4.2's instruction: a record is checksummed under
 * the log lock, 8 bytes a cycle instead of one a table lookup. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
							   size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	for (; len; len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

uint32_t gi_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static int hw = -1;

	/* CPUID at first use, not __builtin_cpu_supports: that links libgcc's
	 * CPU model, whose constructor runs CPUID several times in every
	 * process at load (each a trap to the hypervisor in a VM) */
	if (__builtin_expect(hw < 0, 0)) {
		unsigned int a, b, c, d;

		hw = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? 1 : 0;
	}
	return hw ? crc32c_hw(crc, buf, len) : gi_crc32c_sw(crc, buf, len);
}
#else
uint32_t gi_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return gi_crc32c_sw(crc, buf, len);
}
#endif

void gi_hdr_seal(struct gi_hdr *h)
{
	h->h_crc = 0;
	h->h_crc = gi_crc32c(0, h, sizeof(*h));
}

bool gi_hdr_valid(const struct gi_hdr *h)
{
	struct gi_hdr c = *h;

	if (h->h_magic != GI_HDR_MAGIC || h->h_version != GI_VERSION)
		return false;
	c.h_crc = 0;
	if (gi_crc32c(0, &c, sizeof(c)) != h->h_crc)
		return false;
	return h->h_size >= GI_MIN_SIZE && h->h_size % GI_ALIGN == 0 &&
	       h->h_ckpt_off >= GI_DATA_START && h->h_ckpt_off < h->h_size &&
	       h->h_ckpt_off % GI_ALIGN == 0;
}

bool gi_hdr_pick(const uint8_t *blk, struct gi_hdr *out)
{
	struct gi_hdr a, b;
	bool va, vb;

	memcpy(&a, blk, sizeof(a));
	memcpy(&b, blk + GI_ALIGN, sizeof(b));
	va = gi_hdr_valid(&a) && gi_hdr_slot(a.h_gen) == 0;
	vb = gi_hdr_valid(&b) && gi_hdr_slot(b.h_gen) == GI_ALIGN;
	if (va && vb && memcmp(a.h_id, b.h_id, sizeof(a.h_id)))
		vb = false; /* a copy of another log's: the first is the init's */
	if (!va && !vb)
		return false;
	*out = va && (!vb || a.h_gen > b.h_gen) ? a : b;
	return true;
}

uint32_t gi_rec_build(uint8_t *buf, const struct gi_rec *r, const struct gi_fid *fid,
		      const char *path, const void *data)
{
	uint32_t hlen = fid ? fid->f_hlen : 0, plen = r->r_plen, dlen = r->r_dlen;
	uint32_t len = gi_rec_len(hlen, plen, dlen);
	struct gi_rec *h = (struct gi_rec *)buf;
	uint8_t *p = buf + sizeof(*h);

	memcpy(h, r, sizeof(*h));
	h->r_magic = GI_REC_MAGIC;
	h->r_len = len;
	h->r_hlen = hlen;
	h->r_htype = fid ? fid->f_htype : 0;
	if (hlen)
		memcpy(p, fid->f_handle, hlen);
	p += hlen;
	if (plen)
		memcpy(p, path, plen);
	p += plen;
	if (dlen && data) /* NULL: the bytes are in place already */
		memcpy(p, data, dlen);
	p += dlen;
	memset(p, 0, (size_t)(buf + len - p));
	h->r_crc = 0;
	h->r_crc = gi_crc32c(0, buf, len);
	return len;
}

uint64_t gi_place(uint64_t size, uint64_t off, uint32_t len, bool *wrap)
{
	*wrap = off + len > size;
	return *wrap ? GI_DATA_START : off;
}

uint64_t gi_used(uint64_t size, uint64_t tail, uint64_t head)
{
	return head >= tail ? head - tail : (size - tail) + (head - GI_DATA_START);
}

/* A record read at @off is one to follow on from seq @want. */
static bool rec_ok(const struct gi_hdr *h, const uint8_t *buf, uint64_t off, uint64_t want,
		   size_t bufsz)
{
	const struct gi_rec *r = (const struct gi_rec *)buf;
	struct gi_rec c;

	if (r->r_magic != GI_REC_MAGIC || r->r_seq != want ||
	    memcmp(r->r_id, h->h_id, sizeof(r->r_id)) || r->r_len < GI_ALIGN ||
	    r->r_len % GI_ALIGN || r->r_len > bufsz || off + r->r_len > h->h_size)
		return false;
	if (r->r_type != GI_DATA && r->r_type != GI_RETIRE && r->r_type != GI_WRAP &&
	    r->r_type != GI_REFUSED)
		return false;
	if (r->r_hlen > GI_HANDLE_MAX || r->r_plen > GI_PATH_MAX ||
	    gi_rec_len(r->r_hlen, r->r_plen, r->r_dlen) != r->r_len)
		return false;
	memcpy(&c, r, sizeof(c));
	c.r_crc = 0;
	return gi_crc32c(gi_crc32c(0, &c, sizeof(c)), buf + sizeof(c), r->r_len - sizeof(c)) ==
	       r->r_crc;
}

int gi_scan(const struct gi_hdr *h, gi_read_fn rd, void *rctx, uint8_t *buf, size_t bufsz,
	    gi_visit_fn visit, void *vctx, struct gi_end *end)
{
	uint64_t off = h->h_ckpt_off, seq = h->h_ckpt_seq, walked = 0;
	uint64_t ring = h->h_size - GI_DATA_START;
	int r = 0;

	end->e_records = 0;
	while (walked < ring) {
		const struct gi_rec *rec = (const struct gi_rec *)buf;
		struct gi_found f;
		uint32_t len;

		if (off + GI_ALIGN > h->h_size)
			break;
		r = rd(rctx, off, buf, GI_ALIGN);
		if (r < 0)
			break;
		len = rec->r_len;
		if (rec->r_magic != GI_REC_MAGIC || rec->r_seq != seq || len < GI_ALIGN ||
		    len > bufsz || off + len > h->h_size)
			break;
		if (len > GI_ALIGN && (r = rd(rctx, off + GI_ALIGN, buf + GI_ALIGN,
					      len - GI_ALIGN)) < 0)
			break;
		if (!rec_ok(h, buf, off, seq, bufsz))
			break;
		end->e_records++;
		seq++;
		if (rec->r_type == GI_WRAP) {
			walked += h->h_size - off;
			off = GI_DATA_START;
			continue;
		}
		f.fo_off = off;
		f.fo_rec = rec;
		f.fo_handle = buf + sizeof(*rec);
		f.fo_path = f.fo_handle + rec->r_hlen;
		f.fo_data = f.fo_path + rec->r_plen;
		walked += len;
		off += len;
		if (off == h->h_size)
			off = GI_DATA_START;
		if (visit && (r = visit(vctx, &f)) != 0)
			break;
	}
	end->e_seq = seq;
	end->e_off = off;
	return r;
}

bool gi_fid_eq(const struct gi_fid *a, int32_t htype, uint32_t hlen, const uint8_t *h)
{
	return a->f_htype == htype && a->f_hlen == hlen && !memcmp(a->f_handle, h, hlen);
}

uint64_t gi_fid_hash(const struct gi_fid *f)
{
	uint64_t x = (uint64_t)gi_crc32c((uint32_t)f->f_htype, f->f_handle, f->f_hlen) << 32 |
		     gi_crc32c(0x9e3779b9u, f->f_handle, f->f_hlen);

	return x | 1; /* 0 marks a free slot */
}

static int plan_visit(void *ctx, const struct gi_found *f)
{
	struct gi_plan *p = ctx;
	struct gi_plan_ent *e;

	if (p->p_n == p->p_cap) {
		size_t cap = p->p_cap ? 2 * p->p_cap : 256;
		struct gi_plan_ent *n = realloc(p->p_ents, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->p_ents = n;
		p->p_cap = cap;
	}
	e = &p->p_ents[p->p_n++];
	memset(e, 0, sizeof(*e));
	e->pe_off = f->fo_off;
	e->pe_seq = f->fo_rec->r_seq;
	e->pe_len = f->fo_rec->r_len;
	e->pe_type = f->fo_rec->r_type;
	e->pe_fid.f_htype = f->fo_rec->r_htype;
	e->pe_fid.f_hlen = f->fo_rec->r_hlen;
	memcpy(e->pe_fid.f_handle, f->fo_handle, f->fo_rec->r_hlen);
	e->pe_upto = f->fo_rec->r_type == GI_REFUSED ? f->fo_rec->r_size : f->fo_rec->r_upto;
	e->pe_live = f->fo_rec->r_type == GI_DATA;
	if (f->fo_rec->r_type == GI_REFUSED && !p->p_refused)
		p->p_refused = f->fo_rec->r_size ? f->fo_rec->r_size : 1;
	return 0;
}

int gi_plan_build(const struct gi_hdr *h, gi_read_fn rd, void *rctx, struct gi_plan *p)
{
	size_t bufsz = gi_rec_len(GI_HANDLE_MAX, GI_PATH_MAX, 0) + (4u << 20), i, j;
	uint8_t *buf = malloc(bufsz);
	int r;

	memset(p, 0, sizeof(*p));
	if (!buf)
		return -ENOMEM;
	r = gi_scan(h, rd, rctx, buf, bufsz, plan_visit, p, &p->p_end);
	free(buf);
	if (r < 0)
		return r;
	/* a RETIRE cancels the earlier DATA records of its file up to its seq */
	for (i = 0; i < p->p_n; i++) {
		struct gi_plan_ent *rt = &p->p_ents[i];

		if (rt->pe_type != GI_RETIRE)
			continue;
		for (j = 0; j < i; j++) {
			struct gi_plan_ent *d = &p->p_ents[j];

			if (d->pe_live && d->pe_seq <= rt->pe_upto &&
			    gi_fid_eq(&d->pe_fid, rt->pe_fid.f_htype, rt->pe_fid.f_hlen,
				      rt->pe_fid.f_handle))
				d->pe_live = false;
		}
	}
	return 0;
}

void gi_plan_free(struct gi_plan *p)
{
	free(p->p_ents);
	memset(p, 0, sizeof(*p));
}

size_t gi_plan_live(const struct gi_plan *p)
{
	size_t i, n = 0;

	for (i = 0; i < p->p_n; i++)
		n += p->p_ents[i].pe_live;
	return n;
}
