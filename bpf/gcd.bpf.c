// SPDX-License-Identifier: GPL-2.0
/* gcd's programs: block_rq_issue and block_rq_complete, as tp_btf and as
 * raw_tp twins (user space loads one set). They find the request's whole disk
 * and class and hand them to the accounting in gcd_acct.bpf.h. CO-RE. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/gcd_acct.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space from BTF before load: block_rq_issue still has its
 * (struct request_queue *q, struct request *rq) form (before 5.11). */
const volatile bool issue_has_q = false;

/* Before 5.17 the disk hung off the request itself. */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* Before 6.0 the op enum was called req_opf; the enumerators kept names. */
enum req_opf___old {
	REQ_OP_READ___old = 0,
	REQ_OP_WRITE___old = 1,
	REQ_OP_FLUSH___old = 2,
};

#define GCD_REQ_OP_MASK ((1u << 8) - 1) /* REQ_OP_BITS: 8 since 4.10 */

static __always_inline __u32 rq_class(struct request *rq)
{
	__u32 op = BPF_CORE_READ(rq, cmd_flags) & GCD_REQ_OP_MASK;
	__u32 flush, write, read;

	if (bpf_core_enum_value_exists(enum req_op, REQ_OP_FLUSH)) {
		flush = bpf_core_enum_value(enum req_op, REQ_OP_FLUSH);
		write = bpf_core_enum_value(enum req_op, REQ_OP_WRITE);
		read = bpf_core_enum_value(enum req_op, REQ_OP_READ);
	} else {
		flush = bpf_core_enum_value(enum req_opf___old, REQ_OP_FLUSH___old);
		write = bpf_core_enum_value(enum req_opf___old, REQ_OP_WRITE___old);
		read = bpf_core_enum_value(enum req_opf___old, REQ_OP_READ___old);
	}
	if (op == flush)
		return GCD_FLUSH;
	if (op == write)
		return GCD_WRITE;
	if (op == read)
		return GCD_READ;
	return GCD_CLASSES; /* discard, write-zeroes, zone ops, driver ops: skipped */
}

static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk;

	if (bpf_core_field_exists(((struct request_queue *)0)->disk))
		disk = BPF_CORE_READ(rq, q, disk);
	else
		disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
	if (!disk)
		return 0;
	return GCD_KDEV(BPF_CORE_READ(disk, major), BPF_CORE_READ(disk, first_minor));
}

static __always_inline int on_issue(struct request *rq)
{
	__u32 dev = rq_dev(rq);
	__u32 cls = rq_class(rq);

	if (!dev || cls >= GCD_CLASSES)
		return 0;
	return gcd_acct_issue((__u64)rq, dev, cls, BPF_CORE_READ(rq, __data_len),
			      bpf_ktime_get_ns());
}

static __always_inline int on_complete(struct request *rq, __u32 error, __u32 nr_bytes)
{
	return gcd_acct_complete((__u64)rq, error, nr_bytes, bpf_ktime_get_ns());
}

/* Two forms, one program: the verifier knows issue_has_q (read-only data)
 * and never looks at the branch the kernel's form does not take. */
static __always_inline struct request *issue_rq(__u64 *ctx)
{
	if (issue_has_q)
		return (struct request *)ctx[1];
	return (struct request *)ctx[0];
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(gcd_issue_btf)
{
	return on_issue(issue_rq(ctx));
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(gcd_complete_btf, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(gcd_issue_raw)
{
	return on_issue(issue_rq(ctx));
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(gcd_complete_raw, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}
