// SPDX-License-Identifier: LGPL-2.1-or-later
/* spycheck LOG: the durability checker as a command, for runs made by hand.
 * Prints every violation and a summary line; exits 1 when the rule is broken
 * (uncovered success, EIO without a failed real call, malformed log). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/spy.h"

int main(int argc, char **argv)
{
	struct spy_summary s;
	struct spy_log log;
	size_t max = 50;
	int c, err;

	while ((c = getopt(argc, argv, "n:h")) != -1) {
		switch (c) {
		case 'n':
			max = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: spycheck [-n MAX_LINES] LOG\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: spycheck [-n MAX_LINES] LOG\n");
		return 2;
	}
	err = spy_load(argv[optind], &log);
	if (err) {
		fprintf(stderr, "spycheck: %s: %s\n", argv[optind], strerror(-err));
		return 2;
	}
	spy_check(&log, &s, stdout, max);
	spy_summary_print(&s, stdout);
	spy_free(&log);
	return s.s_violations || s.s_unexplained_fail || s.s_bad ? 1 : 0;
}
