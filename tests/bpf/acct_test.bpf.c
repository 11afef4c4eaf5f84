// SPDX-License-Identifier: GPL-2.0
/* Drives gcd's accounting (bpf/gcd_acct.bpf.h, the code gcd.bpf.c runs)
 * with known inputs: BPF_PROG_TEST_RUN passes the arguments as a raw_tp
 * context, see tests/bpf/test_acct.c for their order. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "bpf/gcd_acct.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ctx: { what (0 issue, 1 complete), rq, dev, class, bytes | error,
 *        nr_bytes, now } */
SEC("raw_tp")
int acct_step(__u64 *ctx)
{
	if (ctx[0] == 0)
		return gcd_acct_issue(ctx[1], (__u32)ctx[2], (__u32)ctx[3], (__u32)ctx[4], ctx[6]);
	return gcd_acct_complete(ctx[1], (__u32)ctx[4], (__u32)ctx[5], ctx[6]);
}
