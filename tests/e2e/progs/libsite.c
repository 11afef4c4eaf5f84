// SPDX-License-Identifier: LGPL-2.1-or-later
/* A library with a named function that makes the sync requests, for the
 * call-site tests: the exit report and gcstat --sites must name it and this
 * library; LIBGC_SCOPE=lib:libsite.so or fn:site_flush_log must take in
 * its requests and no others. */
#include <fcntl.h>
#include <unistd.h>

int site_flush_calls;

/* Not a tail call: the return address must lie in this function. */
__attribute__((noinline)) int site_flush_log(int fd)
{
	int r = fsync(fd);

	__atomic_fetch_add(&site_flush_calls, 1, __ATOMIC_RELAXED);
	return r;
}

/* An O_DSYNC write made here is a sync request of this function too. */
__attribute__((noinline)) int site_write_sync(int fd, const void *buf, size_t n)
{
	int r = (int)write(fd, buf, n);

	__atomic_fetch_add(&site_flush_calls, 1, __ATOMIC_RELAXED);
	return r;
}
