// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcd, the block-layer observer: loads gcd.bpf.c (tp_btf, or raw_tp where BTF
 * trampolines are missing), then every interval publishes per-disk, per-class
 * latency percentiles, rates and in-flight counts to core/blkstats.h's file. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/blkstats.h"
#include "bpf/gcd_intent.h"
#include "bpf/gcd.h"
#include "bpf/gcd_pub.h"
#include "bpf/gcd_sweep.h"
#include "gcd.skel.h"

#define EXIT_NOPERM 3 /* not permitted here: no BTF, no CAP_BPF/CAP_PERFMON */
#define RING 10	      /* window samples: the window is RING sample periods */

struct opts {
	const char *stats;
	unsigned interval_ms;
	unsigned window_ms;
	bool once, json, daemon, synthetic, verbose, raw_tp;
	double run_s; /* 0: until a signal */
	unsigned idle_s; /* a (disk, class) this long idle is let go */
	bool recover_only;
	const char *intent_logs;
};

/* One (disk, class) as user space follows it: the map's current counters and
 * RING earlier samples of them, to take differences over the window. */
struct track {
	struct gcd_key t_key;
	struct gcd_stat t_cur;
	bool t_seen;
	uint64_t t_active_ns;	/* last seen with a new completion or in flight */
	struct gcd_stat t_ring[RING];
};

/* Every disk with a track; the busiest GC_BLK_DISKS of them are published. */
struct disk {
	uint32_t d_kdev;
	char d_name[32];
	uint32_t d_flags;
	uint64_t d_window;	/* completions in the window, and requests in flight */
};

static struct {
	int stats_fd, bss_fd, inflight_fd;
	struct track *tracks;
	unsigned ntracks;
	struct disk disks[GCD_MAX_KEYS];
	unsigned ndisks;
	struct gcd_inflight inflight[GCD_MAX_KEYS];
	struct gcd_sweep sweep;
	uint64_t aged;		/* in-flight entries aged out since start */
	uint64_t idle_ns;	/* opts.idle_s */
	uint64_t ring_t[RING]; /* sample times, ns; 0 = not taken yet */
	unsigned ring_next;
	uint64_t start_ns;
	bool has_q;
	bool tp_btf;
} g = { .stats_fd = -1, .bss_fd = -1, .inflight_fd = -1,
	.sweep = { .s_keys = g.inflight, .s_cap = GCD_MAX_KEYS } };

static volatile sig_atomic_t stop;

static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("gcd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ull),
			       .tv_nsec = (long)(t % 1000000000ull) };

	while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void on_signal(int sig)
{
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gcd [--stats PATH] [--interval-ms N] [--daemon] [--verbose]\n"
		"       gcd --once [--json]\n"
		"Watches block requests (BPF, needs CAP_BPF and CAP_PERFMON or root, and BTF)\n"
		"and publishes per-disk FLUSH/WRITE/READ latency percentiles, rates and\n"
		"in-flight counts.\n"
		"  --stats PATH       the file to publish (default %s)\n"
		"  --interval-ms N    how often to publish (default 100; 1..10000)\n"
		"  --window-ms N      the window of percentiles and rates (default 1000)\n"
		"  --daemon           detach and run in the background\n"
		"  --once             observe one window, print a snapshot, exit\n"
		"  --json             with --once: print it as JSON\n"
		"  --duration S       exit after S seconds (tests)\n"
		"  --idle-s S         forget a disk idle this long (default 60; tests)\n"
		"  --synthetic        publish synthetic snapshots, no BPF (tests of readers)\n"
		"  --raw-tp           use the raw_tp programs even where tp_btf loads (tests)\n"
		"  --verbose          libbpf's messages\n"
		"  --intent-logs FILE intent logs to recover at start-up (default %s)\n"
		"  --recover-only     recover them and exit\n"
		"Exit status: 0, 1 on errors, %d when not permitted here.\n",
		GC_BLK_PATH, GCD_INTENT_LIST, EXIT_NOPERM);
}

static unsigned parse_uint(const char *what, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die(2, "invalid %s '%s' (%u..%u)", what, s, lo, hi);
	return (unsigned)v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "stats", required_argument, NULL, 's' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "window-ms", required_argument, NULL, 'w' },
		{ "daemon", no_argument, NULL, 'd' },
		{ "once", no_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "duration", required_argument, NULL, 'D' },
		{ "idle-s", required_argument, NULL, 'I' },
		{ "synthetic", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "raw-tp", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "recover-only", no_argument, NULL, 'r' },
		{ "intent-logs", required_argument, NULL, 'l' },
		{ 0 },
	};
	int c;

	*o = (struct opts){ .stats = GC_BLK_PATH, .interval_ms = 100, .window_ms = 1000,
			    .idle_s = 60, .intent_logs = GCD_INTENT_LIST };
	while ((c = getopt_long(argc, argv, "s:i:w:dojD:I:SvRh", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->stats = optarg; break;
		case 'i': o->interval_ms = parse_uint("--interval-ms", optarg, 0, 10000); break;
		case 'w': o->window_ms = parse_uint("--window-ms", optarg, 10, 60000); break;
		case 'd': o->daemon = true; break;
		case 'o': o->once = true; break;
		case 'j': o->json = true; break;
		case 'D': o->run_s = parse_uint("--duration", optarg, 1, 86400); break;
		case 'I': o->idle_s = parse_uint("--idle-s", optarg, 1, 86400); break;
		case 'S': o->synthetic = true; break;
		case 'v': o->verbose = true; break;
		case 'R': o->raw_tp = true; break;
		case 'h': usage(stdout); exit(0);
		case 'r': o->recover_only = true; break;
		case 'l': o->intent_logs = optarg; break;
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		die(2, "unexpected argument '%s' (see --help)", argv[optind]);
	if (o->interval_ms == 0 && !o->synthetic)
		die(2, "--interval-ms 0 is only for --synthetic");
	if (o->json && !o->once)
		die(2, "--json goes with --once");
	if (o->once && (o->daemon || o->synthetic))
		die(2, "--once runs in the foreground and observes the block layer");
}

/* ---- permission and BTF checks, loading ---- */

static bool have_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

static void check_permitted(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		die(EXIT_NOPERM, "no kernel BTF (/sys/kernel/btf/vmlinux: %s); needs a kernel "
		    "built with CONFIG_DEBUG_INFO_BTF", strerror(errno));
	if (syscall(SYS_capget, &h, d))
		die(1, "capget: %s", strerror(errno));
	if (have_cap(d, CAP_SYS_ADMIN))
		return;
	if (!have_cap(d, CAP_BPF) || !have_cap(d, CAP_PERFMON))
		die(EXIT_NOPERM, "not permitted: loading the block-layer programs needs "
		    "CAP_BPF and CAP_PERFMON (or root)");
}

/* After the programs are attached nothing needs privilege: the map fds we
 * hold are readable without it, sysfs is world-readable, the stats file is
 * open. Drop every capability, for good. */
static void drop_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	int cap;

	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno == EINVAL)
			break;
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (syscall(SYS_capset, &h, d))
		fprintf(stderr, "gcd: warning: cannot drop capabilities: %s\n", strerror(errno));
}

/* The block_rq_issue prototype in BTF: btf_trace_block_rq_issue is a pointer
 * to (void *data, struct request *rq) since 5.11, with q before rq earlier. */
static bool issue_has_q(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int id, n = -1;

	if (!btf)
		die(EXIT_NOPERM, "cannot read kernel BTF: %s", strerror(errno));
	id = btf__find_by_name_kind(btf, "btf_trace_block_rq_issue", BTF_KIND_TYPEDEF);
	if (id < 0)
		die(1, "kernel BTF has no block_rq_issue tracepoint (btf_trace_block_rq_issue)");
	t = btf__type_by_id(btf, id);
	while (t && (btf_is_typedef(t) || btf_is_ptr(t) || btf_is_mod(t)))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t))
		n = btf_vlen(t);
	btf__free(btf);
	if (n != 2 && n != 3)
		die(1, "unexpected block_rq_issue prototype in BTF (%d parameters)", n);
	return n == 3;
}

/* Does a BTF trampoline program load here? A two-instruction tp_btf program
 * on block_rq_issue answers it. */
static bool probe_tp_btf(void)
{
	static const struct bpf_insn prog[] = {
		{ .code = 0xb7 /* BPF_ALU64 | BPF_MOV | BPF_K */, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 /* BPF_JMP | BPF_EXIT */ },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_RAW_TP);
	int fd;

	po.attach_btf_id = libbpf_find_vmlinux_btf_id("block_rq_issue", BPF_TRACE_RAW_TP);
	if ((int)po.attach_btf_id <= 0)
		return false;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", prog, 2, &po);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static bool verbose;

static int print_libbpf(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	/* quiet by default: failures come back as one line from the caller */
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int dup_fd(int fd)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (n < 0)
		die(1, "dup: %s", strerror(errno));
	return n;
}

/* Load, attach, then keep only what the loop needs: the maps' fds and the
 * links' fds (disconnected, so freeing the object leaves them attached).
 * The object, its ELF copy, BTF and instructions are freed. */
static void load_and_attach(bool force_raw_tp)
{
	struct gcd_bpf *skel;
	struct bpf_link *links[2];
	int err, i;

	libbpf_set_print(print_libbpf);
	g.has_q = issue_has_q();
	g.tp_btf = !force_raw_tp && probe_tp_btf();
	skel = gcd_bpf__open();
	if (!skel)
		die(1, "cannot open the BPF object: %s", strerror(errno));
	skel->rodata->issue_has_q = g.has_q;
	bpf_program__set_autoload(skel->progs.gcd_issue_btf, g.tp_btf);
	bpf_program__set_autoload(skel->progs.gcd_complete_btf, g.tp_btf);
	bpf_program__set_autoload(skel->progs.gcd_issue_raw, !g.tp_btf);
	bpf_program__set_autoload(skel->progs.gcd_complete_raw, !g.tp_btf);
	err = gcd_bpf__load(skel);
	if (err) {
		if (err == -EPERM || err == -EACCES)
			die(EXIT_NOPERM, "not permitted to load BPF programs (%s)", strerror(-err));
		die(1, "cannot load the BPF programs: %s (--verbose shows the verifier)",
		    strerror(-err));
	}
	if (g.tp_btf) {
		links[0] = bpf_program__attach(skel->progs.gcd_issue_btf);
		links[1] = links[0] ? bpf_program__attach(skel->progs.gcd_complete_btf) : NULL;
	} else {
		links[0] = bpf_program__attach(skel->progs.gcd_issue_raw);
		links[1] = links[0] ? bpf_program__attach(skel->progs.gcd_complete_raw) : NULL;
	}
	if (!links[0] || !links[1])
		die(1, "cannot attach to block_rq_issue/block_rq_complete: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		bpf_link__disconnect(links[i]);
		fcntl(bpf_link__fd(links[i]), F_SETFD, FD_CLOEXEC);
		bpf_link__destroy(links[i]);
	}
	g.stats_fd = dup_fd(bpf_map__fd(skel->maps.stats));
	g.bss_fd = dup_fd(bpf_map__fd(skel->maps.bss));
	g.inflight_fd = dup_fd(bpf_map__fd(skel->maps.inflight));
	gcd_bpf__destroy(skel);
}

/* ---- disks ---- */

static int read_sysfs(uint32_t kdev, const char *file, char *buf, size_t n)
{
	char p[128];
	ssize_t r;
	int fd;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/%s", GCD_KMAJOR(kdev), GCD_KMINOR(kdev), file);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static uint32_t disk_flags(uint32_t kdev)
{
	char b[64];
	uint32_t f = 0;

	if (!read_sysfs(kdev, "queue/write_cache", b, sizeof(b)) && !strcmp(b, "write back"))
		f |= GC_BLK_WCACHE;
	if (!read_sysfs(kdev, "queue/fua", b, sizeof(b)) && !strcmp(b, "1"))
		f |= GC_BLK_FUA;
	if (!read_sysfs(kdev, "queue/rotational", b, sizeof(b)) && !strcmp(b, "1"))
		f |= GC_BLK_ROTATIONAL;
	return f;
}

static void disk_name(uint32_t kdev, char *name, size_t n)
{
	char p[128], target[PATH_MAX];
	const char *base;
	ssize_t r;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", GCD_KMAJOR(kdev), GCD_KMINOR(kdev));
	r = readlink(p, target, sizeof(target) - 1);
	if (r <= 0) {
		snprintf(name, n, "%u:%u", GCD_KMAJOR(kdev), GCD_KMINOR(kdev));
		return;
	}
	target[r] = 0;
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	r = (ssize_t)strnlen(base, n - 1);
	memcpy(name, base, (size_t)r);
	name[r] = 0;
}

static struct disk *disk_get(uint32_t kdev)
{
	struct disk *d;
	unsigned i;

	for (i = 0; i < g.ndisks; i++)
		if (g.disks[i].d_kdev == kdev)
			return &g.disks[i];
	if (g.ndisks == GCD_MAX_KEYS)
		return NULL;
	d = &g.disks[g.ndisks++];
	d->d_kdev = kdev;
	disk_name(kdev, d->d_name, sizeof(d->d_name));
	d->d_flags = disk_flags(kdev);
	return d;
}

/* ---- sampling the maps ---- */

static struct track *track_get(const struct gcd_key *k)
{
	struct track *t;
	unsigned i;

	for (i = 0; i < g.ntracks; i++)
		if (g.tracks[i].t_key.k_dev == k->k_dev && g.tracks[i].t_key.k_class == k->k_class)
			return &g.tracks[i];
	if (g.ntracks == GCD_MAX_KEYS)
		return NULL;
	t = realloc(g.tracks, (g.ntracks + 1) * sizeof(*t));
	if (!t)
		return NULL;
	g.tracks = t;
	t = &g.tracks[g.ntracks++];
	/* a key appears at its first completion: it was all zeros at earlier samples */
	memset(t, 0, sizeof(*t));
	t->t_key = *k;
	return t;
}

static void read_maps(uint64_t now)
{
	static bool warned;
	struct gcd_key k, next, *prev = NULL;
	struct gcd_stat v;
	struct track *t;
	unsigned i;
	int err;

	while (!bpf_map_get_next_key(g.stats_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(g.stats_fd, &k, &v))
			continue;
		t = track_get(&k);
		if (t) {
			if (!t->t_seen || v.s_count != t->t_cur.s_count)
				t->t_active_ns = now;
			t->t_cur = v;
			t->t_seen = true;
		}
	}
	err = gcd_sweep_inflight(g.inflight_fd, now, GCD_AGE_NS, &g.sweep);
	if (err && !warned) {
		warned = true;
		fprintf(stderr, "gcd: warning: cannot walk the in-flight map (%s): in-flight "
			"counts read 0\n", strerror(-err));
	}
	g.aged += g.sweep.s_aged;
	for (i = 0; i < g.ntracks; i++)
		if (gcd_sweep_count(&g.sweep, &g.tracks[i].t_key))
			g.tracks[i].t_active_ns = now;
}

/* (disk, class) entries idle for --idle-s are let go: the map entry is
 * deleted (a completion racing that starts a new one from zero, which a new
 * track follows), and a disk left with none leaves the table, the others
 * keeping their order. So disks that come and go (loop devices, hot-plug)
 * fill neither the map nor the table. */
static void evict_idle(uint64_t now)
{
	unsigned i, j;
	bool used;

	for (i = 0; i < g.ntracks;) {
		if (now - g.tracks[i].t_active_ns < g.idle_ns) {
			i++;
			continue;
		}
		bpf_map_delete_elem(g.stats_fd, &g.tracks[i].t_key);
		g.tracks[i] = g.tracks[--g.ntracks];
	}
	for (i = 0; i < g.ndisks;) {
		for (used = false, j = 0; j < g.ntracks && !used; j++)
			used = g.tracks[j].t_key.k_dev == g.disks[i].d_kdev;
		if (used) {
			i++;
			continue;
		}
		memmove(&g.disks[i], &g.disks[i + 1], (g.ndisks - i - 1) * sizeof(g.disks[0]));
		g.ndisks--;
	}
}

static void take_sample(uint64_t now)
{
	unsigned i, r = g.ring_next;

	for (i = 0; i < g.ntracks; i++)
		g.tracks[i].t_ring[r] = g.tracks[i].t_cur;
	g.ring_t[r] = now;
	g.ring_next = (r + 1) % RING;
}

/* The oldest sample: the window's start. Before RING samples, gcd's start. */
static unsigned ring_oldest(uint64_t *t)
{
	unsigned r = g.ring_next;

	if (!g.ring_t[r]) {
		*t = g.start_ns;
		return RING; /* zeros */
	}
	*t = g.ring_t[r];
	return r;
}

/* Percentile p (0..1) of a histogram of n values, interpolated inside its slot */
static uint64_t percentile(const uint64_t *h, uint64_t n, double p)
{
	uint64_t rank, seen = 0;
	unsigned s;

	if (!n)
		return 0;
	rank = (uint64_t)(p * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	for (s = 0; s < GCD_SLOTS; s++) {
		if (!h[s])
			continue;
		if (seen + h[s] >= rank) {
			double f = ((double)(rank - seen) - 0.5) / (double)h[s];

			return gcd_slot_low(s) + (uint64_t)(f * (double)gcd_slot_width(s));
		}
		seen += h[s];
	}
	return gcd_slot_low(GCD_SLOTS - 1);
}

static void fill_op(struct gc_blk_op *o, const struct track *t, unsigned base, uint64_t dt)
{
	static const struct gcd_stat zero;
	const struct gcd_stat *b = base < RING ? &t->t_ring[base] : &zero;
	uint64_t h[GCD_SLOTS], n = 0, bytes;
	unsigned s;

	for (s = 0; s < GCD_SLOTS; s++) {
		h[s] = t->t_cur.s_slot[s] >= b->s_slot[s] ? t->t_cur.s_slot[s] - b->s_slot[s] : 0;
		n += h[s];
	}
	bytes = t->t_cur.s_bytes >= b->s_bytes ? t->t_cur.s_bytes - b->s_bytes : 0;
	o->bo_count = t->t_cur.s_count;
	o->bo_bytes = t->t_cur.s_bytes;
	o->bo_p50_ns = percentile(h, n, 0.50);
	o->bo_p90_ns = percentile(h, n, 0.90);
	o->bo_p99_ns = percentile(h, n, 0.99);
	o->bo_ewma_ns = t->t_cur.s_ewma_ns;
	o->bo_bytes_per_s = dt ? (uint64_t)((double)bytes * 1e9 / (double)dt) : 0;
	o->bo_window_count = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	o->bo_inflight = gcd_sweep_count(&g.sweep, &t->t_key);
}

/* Marks the disks to publish: all of them, or the GC_BLK_DISKS busiest in
 * the window (ties: the first in the table). */
static void pick_disks(bool *pick, unsigned base)
{
	unsigned i, j, best;

	for (i = 0; i < g.ndisks; i++) {
		g.disks[i].d_window = 0;
		pick[i] = g.ndisks <= GC_BLK_DISKS;
	}
	if (g.ndisks <= GC_BLK_DISKS)
		return;
	for (j = 0; j < g.ntracks; j++) {
		const struct track *t = &g.tracks[j];
		uint64_t was = base < RING ? t->t_ring[base].s_count : 0;

		for (i = 0; i < g.ndisks; i++)
			if (g.disks[i].d_kdev == t->t_key.k_dev)
				g.disks[i].d_window += (t->t_cur.s_count > was ? t->t_cur.s_count - was : 0) +
						       gcd_sweep_count(&g.sweep, &t->t_key);
	}
	for (j = 0; j < GC_BLK_DISKS; j++) {
		for (best = g.ndisks, i = 0; i < g.ndisks; i++)
			if (!pick[i] && (best == g.ndisks || g.disks[i].d_window > g.disks[best].d_window))
				best = i;
		pick[best] = true;
	}
}

/* One snapshot of everything, in next (its seq untouched). */
static void build(struct gc_blk_stats *next, uint64_t now, unsigned interval_ms)
{
	uint64_t t0;
	unsigned base = ring_oldest(&t0), i, j, n = 0;
	bool pick[GCD_MAX_KEYS];

	next->bs_magic = GC_BLK_MAGIC;
	next->bs_version = GC_BLK_VERSION;
	next->bs_size = sizeof(*next);
	next->bs_heartbeat_ns = now;
	next->bs_interval_ms = interval_ms;
	next->bs_pid = (uint32_t)getpid();
	next->bs_pad = 0;
	memset(next->bs_disks, 0, sizeof(next->bs_disks));
	for (i = 0; i < g.ntracks; i++) {
		struct track *t = &g.tracks[i];

		if (t->t_seen && t->t_key.k_class < GCD_CLASSES)
			disk_get(t->t_key.k_dev);
	}
	pick_disks(pick, base);
	for (i = 0; i < g.ndisks; i++) {
		struct gc_blk_disk *d = &next->bs_disks[n];

		if (!pick[i])
			continue;
		n++;
		d->bd_dev = makedev(GCD_KMAJOR(g.disks[i].d_kdev), GCD_KMINOR(g.disks[i].d_kdev));
		memcpy(d->bd_name, g.disks[i].d_name, sizeof(d->bd_name));
		d->bd_name[sizeof(d->bd_name) - 1] = 0;
		d->bd_flags = g.disks[i].d_flags;
		for (j = 0; j < g.ntracks; j++)
			if (g.tracks[j].t_key.k_dev == g.disks[i].d_kdev &&
			    g.tracks[j].t_key.k_class < GCD_CLASSES)
				fill_op(&d->bd_op[g.tracks[j].t_key.k_class], &g.tracks[j], base,
					now - t0);
	}
	next->bs_ndisks = n;
}

static void refresh_flags(void)
{
	unsigned i;

	for (i = 0; i < g.ndisks; i++)
		g.disks[i].d_flags = disk_flags(g.disks[i].d_kdev);
}

/* ---- the stats file ---- */

static int mkdirs(const char *dir)
{
	char p[PATH_MAX], *s;

	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return -1;
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

/* Opens, locks and maps the stats file. A second gcd on the same file finds
 * it locked and leaves without touching it. */
static struct gc_blk_stats *open_stats(const char *path)
{
	struct gc_blk_stats *m;
	char dir[PATH_MAX], *slash;
	struct stat st;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdirs(dir))
			die(1, "cannot create %s: %s", dir, strerror(errno));
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		die(errno == EACCES ? EXIT_NOPERM : 1, "cannot open %s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		struct gc_blk_stats old;
		ssize_t r = pread(fd, &old, sizeof(old), 0);

		if (errno == EWOULDBLOCK || errno == EAGAIN || r >= 0) {
			if (r == (ssize_t)sizeof(old) && old.bs_magic == GC_BLK_MAGIC)
				die(1, "another gcd (pid %u) already publishes %s", old.bs_pid, path);
			die(1, "another gcd already publishes %s", path);
		}
		die(1, "cannot lock %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) || fchmod(fd, 0644))
		die(1, "%s: %s", path, strerror(errno));
	if (st.st_size != (off_t)sizeof(*m) && ftruncate(fd, sizeof(*m)))
		die(1, "cannot size %s: %s", path, strerror(errno));
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die(1, "cannot map %s: %s", path, strerror(errno));
	/* the fd stays open: it holds the lock */
	if (m->bs_magic != GC_BLK_MAGIC)
		m->bs_seq = 0; /* new or foreign: start the sequence over */
	else if (m->bs_seq & 1)
		m->bs_seq++; /* a writer died mid-publication */
	return m;
}

/* ---- output of --once ---- */

static const char *const class_names[GC_BLK_OPS] = { "flush", "write", "read" };

static void print_snapshot(const struct gc_blk_stats *s, bool json)
{
	unsigned i, j;

	if (json)
		printf("{\"heartbeat_ns\":%llu,\"window_ms\":%u,\"tp_btf\":%s,\"disks\":[",
		       (unsigned long long)s->bs_heartbeat_ns, s->bs_interval_ms,
		       g.tp_btf ? "true" : "false");
	else
		printf("%-10s %-8s %-5s %10s %10s %10s %10s %10s %12s %8s %8s\n", "disk", "dev",
		       "class", "count", "p50_us", "p90_us", "p99_us", "ewma_us", "bytes/s",
		       "window", "inflight");
	for (i = 0; i < s->bs_ndisks; i++) {
		const struct gc_blk_disk *d = &s->bs_disks[i];

		if (json)
			printf("%s{\"name\":\"%s\",\"dev\":\"%u:%u\",\"st_dev\":%llu,"
			       "\"write_cache\":%s,\"fua\":%s,\"rotational\":%s,\"ops\":{",
			       i ? "," : "", d->bd_name, major(d->bd_dev), minor(d->bd_dev),
			       (unsigned long long)d->bd_dev,
			       d->bd_flags & GC_BLK_WCACHE ? "true" : "false",
			       d->bd_flags & GC_BLK_FUA ? "true" : "false",
			       d->bd_flags & GC_BLK_ROTATIONAL ? "true" : "false");
		for (j = 0; j < GC_BLK_OPS; j++) {
			const struct gc_blk_op *o = &d->bd_op[j];

			if (json)
				printf("%s\"%s\":{\"count\":%llu,\"bytes\":%llu,\"p50_ns\":%llu,"
				       "\"p90_ns\":%llu,\"p99_ns\":%llu,\"ewma_ns\":%llu,"
				       "\"bytes_per_s\":%llu,\"window_count\":%u,\"inflight\":%u}",
				       j ? "," : "", class_names[j],
				       (unsigned long long)o->bo_count,
				       (unsigned long long)o->bo_bytes,
				       (unsigned long long)o->bo_p50_ns,
				       (unsigned long long)o->bo_p90_ns,
				       (unsigned long long)o->bo_p99_ns,
				       (unsigned long long)o->bo_ewma_ns,
				       (unsigned long long)o->bo_bytes_per_s, o->bo_window_count,
				       o->bo_inflight);
			else
				printf("%-10s %3u:%-4u %-5s %10llu %10.1f %10.1f %10.1f %10.1f %12llu "
				       "%8u %8u\n", d->bd_name, major(d->bd_dev), minor(d->bd_dev),
				       class_names[j], (unsigned long long)o->bo_count,
				       o->bo_p50_ns / 1e3, o->bo_p90_ns / 1e3, o->bo_p99_ns / 1e3,
				       o->bo_ewma_ns / 1e3, (unsigned long long)o->bo_bytes_per_s,
				       o->bo_window_count, o->bo_inflight);
		}
		if (json)
			printf("}}");
	}
	if (json)
		printf("]}\n");
	fflush(stdout);
}

/* ---- main loops ---- */

static void run_synthetic(struct gc_blk_stats *shm, const struct opts *o, uint64_t end)
{
	static struct gc_blk_stats next;
	uint64_t gen = 1, t = now_ns();

	next.bs_magic = GC_BLK_MAGIC;
	next.bs_version = GC_BLK_VERSION;
	next.bs_size = sizeof(next);
	next.bs_interval_ms = o->interval_ms;
	next.bs_pid = (uint32_t)getpid();
	while (!stop && (!end || now_ns() < end)) {
		gcd_synth_fill(&next, gen++);
		next.bs_heartbeat_ns = now_ns();
		gcd_pub_write(shm, &next);
		if (o->interval_ms) {
			t += o->interval_ms * 1000000ull;
			sleep_until(t);
		}
	}
}

static void run(struct gc_blk_stats *shm, const struct opts *o, uint64_t end)
{
	static struct gc_blk_stats next;
	uint64_t period = o->window_ms * 1000000ull / RING;
	uint64_t interval = o->interval_ms * 1000000ull;
	uint64_t t = now_ns(), next_sample = t + period, next_flags = t + 1000000000ull;
	uint64_t until_once = t + o->window_ms * 1000000ull;
	uint64_t now;

	for (;;) {
		now = now_ns();
		read_maps(now);
		if (now >= next_sample) {
			take_sample(now);
			next_sample += period;
			if (next_sample <= now)
				next_sample = now + period;
		}
		if (now >= next_flags) {
			refresh_flags();
			evict_idle(now);
			next_flags = now + 1000000000ull;
		}
		if (o->once) {
			if (now >= until_once || stop) {
				build(&next, now, o->window_ms);
				print_snapshot(&next, o->json);
				return;
			}
		} else {
			build(&next, now, o->interval_ms);
			gcd_pub_write(shm, &next);
		}
		if (stop || (end && now >= end))
			return;
		t += o->once ? period : interval;
		if (t <= now)
			t = now + (o->once ? period : interval);
		sleep_until(t);
	}
}

int main(int argc, char **argv)
{
	struct gc_blk_stats *shm = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	struct opts o;
	uint64_t end = 0;

	parse(argc, argv, &o);
	verbose = o.verbose;
	/* before any service reads a file an intent log holds bytes of */
	if (!o.synthetic && !o.once) {
		int r = gcd_recover_intent(o.intent_logs);

		if (o.recover_only)
			return r < 0 ? 1 : 0;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!o.synthetic) {
		check_permitted();
		if (!o.once)
			shm = open_stats(o.stats);
		load_and_attach(o.raw_tp);
		drop_caps();
	} else {
		shm = open_stats(o.stats);
	}
	if (o.daemon && daemon(0, 0))
		die(1, "daemon: %s", strerror(errno));
	g.start_ns = now_ns();
	g.idle_ns = o.idle_s * 1000000000ull;
	if (o.run_s)
		end = g.start_ns + (uint64_t)(o.run_s * 1e9);
	if (o.synthetic)
		run_synthetic(shm, &o, end);
	else
		run(shm, &o, end);
	return 0;
}
