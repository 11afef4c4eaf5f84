/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A seccomp filter on the calling thread (and what it starts or execs) that
 * answers cachestat(2) with ENOSYS, as kernels before 6.5 do, or, with
 * @kill, kills the process at it (SIGSYS), as an allow-list that does not
 * know the call does (systemd before 255 with SystemCallFilter= and no
 * SystemCallErrorNumber=). Everything else is allowed. 0 or -1 (errno). */
#ifndef GC_TESTS_CSKILL_H
#define GC_TESTS_CSKILL_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/prctl.h>

#define CSKILL_NR_CACHESTAT 451

static inline int cskill_install(bool kill)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CSKILL_NR_CACHESTAT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 kill ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

#endif
