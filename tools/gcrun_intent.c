// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcrun's intent-log actions: --intent-init PATH [--size SIZE] creates a
 * zero-filled, fully written log; --recover PATH replays the records not
 * retired into their files, fsyncs them and marks the log clean. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal/intent_log.h"
#include "tools/gcrun_intent.h"

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end || end == s)
		return -1;
	*out = v;
	return 0;
}

int gcrun_intent_init(const char *path, const char *size)
{
	uint64_t n = 64ULL << 20;
	int r;

	if (size && (parse_size(size, &n) < 0 || n < GI_MIN_SIZE || n % GI_ALIGN)) {
		fprintf(stderr, "gcrun: --size wants a size of at least 1m, a multiple of 512 (64m, 1g), not '%s'\n",
			size);
		return 2;
	}
	r = gi_log_create(path, n);
	if (r == -EEXIST) {
		fprintf(stderr, "gcrun: %s holds records not replayed yet: run gcrun --recover %s first\n",
			path, path);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "gcrun: --intent-init %s: %s\n", path, strerror(-r));
		return 1;
	}
	printf("gcrun: intent log %s: %llu bytes, zero-filled and written\n", path,
	       (unsigned long long)n);
	return 0;
}

int gcrun_intent_recover(const char *path)
{
	struct gi_recovery rc;
	int r = gi_log_recover(path, 0, &rc, stderr);

	if (r < 0) {
		fprintf(stderr, "gcrun: --recover %s: %s\n", path, strerror(-r));
		return 1;
	}
	printf("gcrun: recovered %s: records=%llu replayed=%llu retired=%llu skipped=%llu stale=%llu files=%llu bytes=%llu\n",
	       path, (unsigned long long)rc.rc_records, (unsigned long long)rc.rc_replayed,
	       (unsigned long long)rc.rc_retired, (unsigned long long)rc.rc_skipped,
	       (unsigned long long)rc.rc_stale, (unsigned long long)rc.rc_files,
	       (unsigned long long)rc.rc_bytes);
	return 0;
}
