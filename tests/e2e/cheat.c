// SPDX-License-Identifier: LGPL-2.1-or-later
/* A deliberately broken sync layer, placed between the spies to prove that the
 * checker catches each way a group-commit library could weaken durability.
 * CHEAT_MODE=skip|weak|stale|swallow|otherino selects the fault. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*sync_fn)(int);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *mode(void)
{
	const char *m = getenv("CHEAT_MODE");

	return m ? m : "";
}

static uint64_t last_end;	/* when the last real call finished */

static int cheat(int fd, const char *name)
{
	sync_fn f = (sync_fn)dlsym(RTLD_NEXT, name);
	const char *m = mode();
	int ret;

	if (!strcmp(m, "skip"))		/* eatmydata: claim success, do nothing */
		return 0;
	if (!strcmp(m, "weak"))		/* fdatasync where fsync was asked */
		return ((sync_fn)dlsym(RTLD_NEXT, "fdatasync"))(fd);
	if (!strcmp(m, "stale")) {	/* reuse a call that began before us */
		uint64_t t = __atomic_load_n(&last_end, __ATOMIC_RELAXED);

		if (t && now_ns() - t < 10000ull * 1000 * 1000)
			return 0;
		ret = f(fd);
		__atomic_store_n(&last_end, now_ns(), __ATOMIC_RELAXED);
		return ret;
	}
	if (!strcmp(m, "swallow")) {	/* lose the error of the real call */
		f(fd);
		return 0;
	}
	if (!strcmp(m, "otherino")) {	/* sync some other inode */
		int d = open(".", O_RDONLY | O_DIRECTORY);

		ret = f(d);
		close(d);
		return ret;
	}
	return f(fd);
}

EXPORT int fsync(int fd)
{
	return cheat(fd, "fsync");
}

EXPORT int fdatasync(int fd)
{
	return cheat(fd, "fdatasync");
}
