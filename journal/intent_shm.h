/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The intent log's control segment (/dev/shm/libgc-intent2-UID-DEV-INO):
 * its layout, shared by journal/intent.c and the tests that play a peer
 * who died in the middle of changing it. Untrusted: every field is
 * checked after each lock (DESIGN.md rule 6). */
#ifndef GC_INTENT_SHM_H
#define GC_INTENT_SHM_H
#include <stdint.h>

#include "journal/intent_fmt.h"

#define GI_SHM_FILES 512
#define GI_SHM_MEMBERS 64
#define GI_SHM_MAGIC 0x314d485354434749ULL /* "IGCTSHM1" */
#define GI_SHM_VERSION 2

enum { SF_MAPPED = 1 };
struct gi_shf {
	uint64_t sf_dev, sf_ino;
	uint64_t sf_last;	/* last DATA seq of the file (0: none) */
	uint64_t sf_retired;	/* a RETIRE covers its DATA records up to this */
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
	uint32_t s_frozen;	/* a checkpoint's syncfs failed: its records are
				 * never retired by a checkpoint, only replayed */
	uint32_t s_busy;	/* set while a holder of the lock changes what
				 * follows: found set, its holder died there */
	uint32_t s_ckpting;	/* checkpoints between their two locked parts:
				 * one that died there may have seen an error */
	int32_t s_frozen_err;	/* the errno that froze it, on filesystem */
	uint32_t s_frozen_told;	/* a syncfs() of the program was told of it */
	uint64_t s_frozen_dev;
	struct gi_hdr s_hdr;	/* the durable header */
	uint64_t s_head_seq, s_head_off;
	int32_t s_members[GI_SHM_MEMBERS];
	struct gi_shf s_files[GI_SHM_FILES];
};

#endif
