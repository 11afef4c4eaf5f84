// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcd's start-up recovery of intent logs: every log listed in
 * /etc/libgc/intent-logs (one absolute path a line, # comments) that holds
 * records not retired is replayed before gcd observes anything; run alone
 * (--recover-only) by libgc-recover.service, ordered before services. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bpf/gcd_intent.h"
#include "journal/intent_log.h"

int gcd_recover_intent(const char *list)
{
	char line[4096];
	int bad = 0;
	FILE *f = fopen(list, "re");

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct gi_recovery rc;
		struct gi_end e;
		int64_t n;
		int fd, r;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] != '/')
			continue;
		/* read-only first: a clean log is never written (gcd's own
		 * unit may see the filesystem read-only) */
		fd = gi_sys_open(line, O_RDONLY, 0);
		n = fd < 0 ? fd : gi_log_pending(fd, &e);
		if (fd >= 0)
			gi_sys_close(fd);
		if (n == 0)
			continue;
		if (n < 0) {
			fprintf(stderr, "gcd: intent log %s: %s\n", line, strerror((int)-n));
			bad++;
			continue;
		}
		r = gi_log_recover(line, 0, &rc, stderr);
		if (r < 0) {
			bad++;
			continue;
		}
		fprintf(stderr, "gcd: recovered intent log %s: replayed=%llu retired=%llu files=%llu\n",
			line, (unsigned long long)rc.rc_replayed, (unsigned long long)rc.rc_retired,
			(unsigned long long)rc.rc_files);
	}
	fclose(f);
	return bad ? -EIO : 0;
}
