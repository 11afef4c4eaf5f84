// SPDX-License-Identifier: LGPL-2.1-or-later
/* Power-cut checker: scans the files a crashload run left behind for intact
 * records and compares them with the acknowledgements the harness recorded.
 * Every acknowledged record must be found whole, with a correct checksum;
 * with -f spool, as a message under its final name in spool/new/. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/crash/record.h"

/* Per writer: how often each sequence number was found, and for acked ones
 * when the acknowledgement was sent. */
struct seqs {
	uint8_t *found;
	size_t found_cap;
	int64_t *ack_ns;
	size_t ack_cap;
	size_t acked;		/* acks arrive in order: seqs 0..acked-1 */
};

static struct seqs wr[MAX_WRITERS];
static unsigned long n_found, n_dup, n_files, n_bad_ack, n_bad_msg, n_tmp;
static unsigned long long n_bytes, n_garbage;

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 1024;

	while (n <= need)
		n *= 2;
	p = realloc(p, n * elem);
	if (!p) {
		perror("crashcheck: realloc");
		exit(2);
	}
	memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
	*cap = n;
	return p;
}

static void note_found(uint32_t w, uint64_t seq)
{
	struct seqs *s = &wr[w];

	if (seq >= s->found_cap)
		s->found = grow(s->found, &s->found_cap, seq, 1);
	if (s->found[seq] < 255)
		s->found[seq]++;
	if (s->found[seq] > 1)
		n_dup++;
	else
		n_found++;
}

static void scan_file(int dfd, const char *name)
{
	struct stat st;
	unsigned char *p;
	size_t pos = 0, size;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "crashcheck: %s: %s\n", name, strerror(errno));
		exit(2);
	}
	n_files++;
	size = (size_t)st.st_size;
	n_bytes += size;
	if (!size) {
		close(fd);
		return;
	}
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "crashcheck: mmap %s: %s\n", name, strerror(errno));
		exit(2);
	}
	/* Records are back to back, but a crash can leave zeroed blocks or a
	 * torn tail between them: on a mismatch, resync one byte further. */
	while (pos < size) {
		uint32_t n = rec_check(p + pos, size - pos);
		struct rec_hdr h;

		if (!n) {
			pos++;
			n_garbage++;
			continue;
		}
		memcpy(&h, p + pos, sizeof(h));
		note_found(h.r_writer, h.r_seq);
		pos += n;
	}
	munmap(p, size);
	close(fd);
}

/* A delivered message: a file named WW.SSSSSSSS holding exactly record
 * (WW, SSSSSSSS), nothing before or after it.  Anything else in new/ (empty,
 * torn, another record, a wrong name) is a damaged message and counts as
 * not delivered. */
static void scan_message(int dfd, const char *name)
{
	unsigned char buf[REC_MAX + 1];
	unsigned w;
	unsigned long long seq;
	struct rec_hdr h;
	ssize_t n;
	int fd, used = 0;

	n_files++;
	if (sscanf(name, "%2u.%8llu%n", &w, &seq, &used) != 2 || name[used] ||
	    w >= MAX_WRITERS) {
		n_bad_msg++;
		return;
	}
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "crashcheck: new/%s: %s\n", name, strerror(errno));
		exit(2);
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n > 0)
		n_bytes += (unsigned long long)n;
	if (n <= 0 || rec_check(buf, (size_t)n) != (uint32_t)n) {
		n_bad_msg++;
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.r_writer != w || h.r_seq != seq) {
		n_bad_msg++;
		return;
	}
	note_found(w, seq);
}

static void scan_spool(const char *dir, bool *missing)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/spool/tmp", dir);
	if ((d = opendir(path))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				n_tmp++;
		closedir(d);
	}
	snprintf(path, sizeof(path), "%s/spool/new", dir);
	d = opendir(path);
	if (!d && errno != ENOENT) {
		fprintf(stderr, "crashcheck: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	*missing = !d;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			scan_message(dirfd(d), de->d_name);
	if (d)
		closedir(d);
}

static void read_acks(const char *path)
{
	struct ack_msg a;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		fprintf(stderr, "crashcheck: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	while ((n = fread(&a, 1, sizeof(a), f)) == sizeof(a)) {
		struct seqs *s;

		/* Each writer acknowledges in order; anything else means the
		 * pipe or the workload is broken and the count is meaningless. */
		if (a.a_magic != ACK_MAGIC || a.a_writer >= MAX_WRITERS ||
		    a.a_seq != wr[a.a_writer].acked) {
			n_bad_ack++;
			continue;
		}
		s = &wr[a.a_writer];
		if (s->acked >= s->ack_cap)
			s->ack_ns = grow(s->ack_ns, &s->ack_cap, s->acked,
					 sizeof(*s->ack_ns));
		s->ack_ns[s->acked++] = a.a_ns;
	}
	if (n)
		n_bad_ack++;	/* a torn message: a writer died mid-write */
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: crashcheck -a ACKFILE [-c CUT_NS] [-f spool] [-o shared|each] [-v] DIR\n");
	exit(2);
}

/* -o: the overwrite load. Each slot must hold its last acknowledged record
 * or a later one: anything else (an older record, torn or zero bytes) is a
 * lost acknowledged write. Returns the slots checked; counts into *lost
 * and *older (an older record found in place: replayed or left stale). */
static unsigned long check_slots(const char *dir, bool shared, unsigned long *lost,
				 unsigned long *older, bool verbose)
{
	unsigned long slots = 0;
	unsigned char buf[REC_MAX];
	char path[4096];
	uint32_t w, j;

	for (w = 0; w < MAX_WRITERS; w++) {
		size_t a = wr[w].acked;
		int fd;

		if (!a)
			continue;
		if (shared)
			snprintf(path, sizeof(path), "%s/crash.dat", dir);
		else
			snprintf(path, sizeof(path), "%s/crash.%u.dat", dir, w);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		for (j = 0; j < REC_SLOTS && j < a; j++) {
			uint64_t want = (a - 1) - ((a - 1 + REC_SLOTS - j) % REC_SLOTS);
			ssize_t n = fd < 0 ? -1 : pread(fd, buf, REC_MAX, (off_t)rec_slot_off(w, j, shared));
			struct rec_hdr h;
			bool ok = false;

			slots++;
			if (n > 0 && rec_check(buf, (size_t)n)) {
				memcpy(&h, buf, sizeof(h));
				ok = h.r_writer == w && h.r_seq >= want && h.r_seq % REC_SLOTS == j;
				if (!ok && h.r_writer == w && h.r_seq < want)
					(*older)++;
			} else {
				/* torn: only by the one write in flight, record a,
				 * over its own slot (the program overwrote it) */
				ok = j == a % REC_SLOTS;
			}
			if (!ok) {
				(*lost)++;
				if (verbose || *lost <= 5)
					printf("lost writer=%u slot=%u want_seq>=%llu\n", w, j,
					       (unsigned long long)want);
			}
		}
		if (fd >= 0)
			close(fd);
	}
	return slots;
}

int main(int argc, char **argv)
{
	unsigned long acked = 0, lost = 0, lost_pre = 0, unacked = 0, shown = 0;
	const char *acks = NULL;
	long long cut_ns = 0;
	bool verbose = false, dir_missing = false, spool = false;
	struct dirent *de;
	DIR *d;
	unsigned w;
	int c;

	int over = 0; /* 1 shared, 2 each */

	while ((c = getopt(argc, argv, "a:c:f:o:v")) != -1) {
		switch (c) {
		case 'o':
			over = !strcmp(optarg, "shared") ? 1 : !strcmp(optarg, "each") ? 2 : 0;
			if (!over)
				usage();
			break;
		case 'f':
			if (strcmp(optarg, "spool"))
				usage();
			spool = true;
			break;
		case 'a':
			acks = optarg;
			break;
		case 'c':
			cut_ns = strtoll(optarg, NULL, 10);
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage();
		}
	}
	if (!acks || optind != argc - 1)
		usage();
	rec_crc_init();
	read_acks(acks);
	if (over) {
		unsigned long older = 0, slots;

		slots = check_slots(argv[optind], over == 1, &lost, &older, verbose);
		for (w = 0; w < MAX_WRITERS; w++)
			acked += wr[w].acked;
		printf("acked=%lu slots=%lu lost=%lu older_in_place=%lu bad_acks=%lu\n", acked,
		       slots, lost, older, n_bad_ack);
		if (n_bad_ack)
			return 2;
		return lost ? 1 : 0;
	}

	/* A directory that did not survive simply holds no records. */
	d = spool ? NULL : opendir(argv[optind]);
	if (!spool && !d && errno != ENOENT) {
		fprintf(stderr, "crashcheck: %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	dir_missing = !d;
	if (spool)
		scan_spool(argv[optind], &dir_missing);
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (!strncmp(de->d_name, "crash", 5) && l > 4 &&
		    !strcmp(de->d_name + l - 4, ".dat"))
			scan_file(dirfd(d), de->d_name);
	}
	if (d)
		closedir(d);

	for (w = 0; w < MAX_WRITERS; w++) {
		struct seqs *s = &wr[w];
		size_t q;

		acked += s->acked;
		for (q = 0; q < s->found_cap; q++)
			if (s->found[q] && q >= s->acked)
				unacked++;
		for (q = 0; q < s->acked; q++) {
			if (q < s->found_cap && s->found[q])
				continue;
			lost++;
			if (cut_ns && s->ack_ns[q] < cut_ns)
				lost_pre++;
			if (verbose || shown < 5) {
				shown++;
				printf("lost writer=%u seq=%zu acked_ms_before_cut=%.3f\n",
				       w, q, cut_ns ?
				       (double)(cut_ns - s->ack_ns[q]) / 1e6 : 0.0);
			}
		}
	}
	printf("acked=%lu found=%lu lost=%lu lost_before_cut=%lu unacked_found=%lu "
	       "dup=%lu files=%lu bytes=%llu garbage_bytes=%llu bad_acks=%lu",
	       acked, n_found, lost, lost_pre, unacked, n_dup, n_files, n_bytes,
	       n_garbage, n_bad_ack);
	if (spool)
		printf(" damaged_msgs=%lu left_in_tmp=%lu", n_bad_msg, n_tmp);
	printf("%s\n", dir_missing ? " dir_missing=1" : "");
	if (n_bad_ack)
		return 2;
	return lost ? 1 : 0;
}
