// SPDX-License-Identifier: LGPL-2.1-or-later
/* sfrdenied DIR: a seccomp filter answers sync_file_range(2) with EPERM,
 * as a sandbox whose allow-list does not name it does (the program never
 * calls it; the library does). Then 4 threads each write 4 KiB and fsync
 * (odd rounds fdatasync) their own file 20 times, and one O_DSYNC write
 * each: prints "errors=0" as bare. (The library asked the descriptor for
 * a writeback error it had not reported yet with that call, and passed
 * the EPERM on as the request's answer.) */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *dir;
static int errors;

static void *worker(void *arg)
{
	char path[4096], buf[4096];
	int fd, d, i, bad = 0;

	memset(buf, 'w', sizeof(buf));
	snprintf(path, sizeof(path), "%s/w%ld", dir, (long)arg);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (i = 0; fd >= 0 && i < 20; i++)
		if (write(fd, buf, sizeof(buf)) != sizeof(buf) || (i & 1 ? fdatasync(fd) : fsync(fd)))
			bad++;
	snprintf(path, sizeof(path), "%s/d%ld", dir, (long)arg);
	d = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0644);
	if (fd < 0 || d < 0 || write(d, buf, sizeof(buf)) != sizeof(buf))
		bad++;
	__atomic_fetch_add(&errors, bad, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sync_file_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	pthread_t t[4];
	long i;

	if (argc != 2)
		return 2;
	dir = argv[1];
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return perror("sfrdenied: seccomp"), 1;
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("errors=%d\n", errors);
	return 0;
}
