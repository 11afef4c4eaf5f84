// SPDX-License-Identifier: LGPL-2.1-or-later
/* altstack DIR: the stack a signal handler's file calls take on its
 * alternate stack (SA_ONSTACK), as a crash handler that writes and syncs a
 * report would: each step runs in the handler of its own signal, on a 64
 * KiB stack painted beforehand, and prints "STEP=BYTES", the depth the
 * handler reached (the kernel's signal frame included). Steps, in order,
 * so that each meets the library's first use of something:
 *   first   write and fsync a new file (the first request of the process)
 *   dir     fsync the directory, 2 ms later (a new descriptor; the device
 *           is looked up once its domain is 1 ms old)
 *   data    write and fdatasync the file, 150 ms later (the stats segment
 *           is made at a request 100 ms after the first)
 *   osync   open a second file O_SYNC, write, close
 *   again   write and fsync the first file (a request like any other)
 * Then "ok" if every call succeeded. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALT (64 * 1024)
#define PAINT 0xA5

static const char *dir;
static char path[4096], path2[4096];
static int fd, dfd, step, failed;

static void handler(int sig)
{
	int f;

	(void)sig;
	switch (step) {
	case 0:
	case 4:
		if (write(fd, "report\n", 7) != 7 || fsync(fd))
			failed++;
		break;
	case 1:
		if (fsync(dfd))
			failed++;
		break;
	case 2:
		if (write(fd, "data\n", 5) != 5 || fdatasync(fd))
			failed++;
		break;
	case 3:
		f = open(path2, O_WRONLY | O_CREAT | O_TRUNC | O_SYNC, 0644);
		if (f < 0 || write(f, "sync\n", 5) != 5 || close(f))
			failed++;
		break;
	}
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "first", "dir", "data", "osync", "again" };
	static const long gap_ms[] = { 0, 2, 150, 0, 0 };
	struct sigaction sa;
	stack_t ss;
	char *mem;
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: altstack DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(path, sizeof(path), "%s/altstack.%d", dir, (int)getpid());
	snprintf(path2, sizeof(path2), "%s/altstack2.%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	mem = malloc(ALT);
	if (fd < 0 || dfd < 0 || !mem) {
		perror("altstack");
		return 1;
	}
	ss = (stack_t){ .ss_sp = mem, .ss_size = ALT };
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	if (sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL)) {
		perror("altstack");
		return 1;
	}
	for (step = 0; step < 5; step++) {
		nap_ms(gap_ms[step]);
		memset(mem, PAINT, ALT);
		raise(SIGUSR1);
		for (i = 0; i < ALT && (unsigned char)mem[i] == PAINT; i++)
			;
		printf("%s=%zu ", names[step], ALT - i);
	}
	unlink(path);
	unlink(path2);
	printf("%s\n", failed ? "failed" : "ok");
	return failed ? 1 : 0;
}
