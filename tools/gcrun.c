// SPDX-License-Identifier: LGPL-2.1-or-later
/* gcrun: runs a command under libgc. Puts libgc.so (next to gcrun, else the
 * installed one) first in LD_PRELOAD, keeping what was there; maps its
 * options to LIBGC_*; warns when the target cannot be interposed (static,
 * Go) and when LD_PRELOAD or /etc/ld.so.preload names a libgc.so that is
 * another library (Boehm GC's); then execs the command, so its exit status
 * and a death by signal reach the caller unchanged. --check says what would
 * be loaded and from where, and runs nothing. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/blkstats.h"
#include "tools/gcrun_intent.h"

#ifndef GC_VERSION
#define GC_VERSION "0.1"
#endif
#ifndef GC_PKGLIBDIR
#define GC_PKGLIBDIR "/usr/local/lib/libgc-commit"
#endif
#ifndef GC_PKGLIBDIR_REL
#define GC_PKGLIBDIR_REL "lib/libgc-commit"
#endif
#ifndef GC_SBINDIR
#define GC_SBINDIR "/usr/local/sbin"
#endif

static bool quiet;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gcrun [options] [--] command [argument...]\n"
		"       gcrun --check [options] [[--] command]\n"
		"Runs command with libgc preloaded: its fsync, fdatasync and O_SYNC writes are\n"
		"grouped into shared commits, never made less durable.\n"
		"  --policy P        adaptive (default), none, fixed, jbd2, siblings  (LIBGC_POLICY)\n"
		"  --share S         user (default: processes of this user share commits) or\n"
		"                    process                                        (LIBGC_SHARE)\n"
		"  --osync M         convert (default) or keep O_SYNC/O_DSYNC        (LIBGC_OSYNC)\n"
		"  --report[=WHAT]   exit report: 1 (summary on stderr, the default), kv, json,\n"
		"                    all, an absolute path, or several joined by commas (LIBGC_REPORT)\n"
		"  --sites=0|1|auto  name the call sites of sync requests (default auto: when the\n"
		"                    report shows them, a scope needs them or gcstat asks)  (LIBGC_SITES)\n"
		"  --scope LIST      group only requests whose call chain passes through\n"
		"                    lib:NAME or fn:NAME, comma-separated            (LIBGC_SCOPE)\n"
		"  --observe         start gcd, the block-device observer, if it is not running\n"
		"                    and this user may (root)\n"
		"  --disable         preload libgc but pass every call through      (LIBGC_DISABLE=1)\n"
		"  --lib PATH        the libgc.so to preload\n"
		"  --check           run nothing: say which libgc.so gcrun would preload, what\n"
		"                    LD_PRELOAD and /etc/ld.so.preload name and which file the\n"
		"                    loader maps for each (a libgc.so that is Boehm GC's is\n"
		"                    flagged), and whether gcd publishes; exit 1 on a problem\n"
		"  --intent DIRS     acknowledge small syncs of files under DIRS (':'-joined)\n"
		"                    through an intent log                      (LIBGC_INTENT)\n"
		"  --intent-log PATH the log (default: DIR/.libgc-intent)        (LIBGC_INTENT_LOG)\n"
		"  --intent-init PATH [--size SIZE]  create a zero-filled log (default 64m); exit\n"
		"  --recover PATH    replay the log's records into their files, mark it clean; exit\n"
		"  -q, --quiet       no warnings\n"
		"  -h, --help        this text\n"
		"  -V, --version     the version\n"
		"The command's exit status (or the signal that ended it) is gcrun's.\n"
		"See gcrun(1) and libgc(7).\n");
}

static void warn(const char *fmt, const char *a, const char *b)
{
	if (quiet)
		return;
	fprintf(stderr, "gcrun: warning: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
}

static bool one_of(const char *v, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(v, *words))
			return true;
	return false;
}

static void need(const char *opt, const char *v, const char *const *words, const char *form)
{
	if (!one_of(v, words)) {
		fprintf(stderr, "gcrun: %s wants %s, not '%s'\n", opt, form, v);
		exit(2);
	}
}

/* The form LIBGC_SCOPE accepts (the library checks the lengths too). */
static bool scope_ok(const char *v)
{
	const char *item = v, *end;

	for (;;) {
		size_t len;

		end = strchr(item, ',');
		len = end ? (size_t)(end - item) : strlen(item);
		if (!((len > 4 && !strncmp(item, "lib:", 4)) || (len > 3 && !strncmp(item, "fn:", 3))))
			return false;
		if (!end)
			return true;
		item = end + 1;
	}
}

/* What gcrun learns from an ELF file without loading it (loading would run
 * its constructors: Boehm GC's, or libgc's own inside gcrun). */
struct elf_info {
	int kind;		/* 0 dynamic, 1 static (no PT_INTERP), 2 Go, -1 not an ELF we read */
	bool dso;		/* ET_DYN */
	bool libgc;		/* defines libgc_group_commit: this library */
	bool boehm;		/* defines GC_malloc and GC_init: Boehm-Demers-Weiser GC */
	char version[48];	/* libgc_group_commit's text, "libgc 0.1" */
	char soname[64];
	char interp[256];	/* PT_INTERP */
};

#define ELF_MAX_TABLE (8u << 20) /* a larger symbol or string table is not read */

static void *read_at(int fd, uint64_t off, uint64_t len)
{
	char *p;

	if (len == 0 || len > ELF_MAX_TABLE)
		return NULL;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	if (pread(fd, p, len, (off_t)off) != (ssize_t)len) {
		free(p);
		return NULL;
	}
	p[len] = '\0';
	return p;
}

/* A NUL-terminated name at @off of a string table of @len bytes, or "". */
static const char *str_at(const char *tab, uint64_t len, uint64_t off)
{
	return tab && off < len && memchr(tab + off, '\0', len - off) ? tab + off : "";
}

/* The dynamic symbols and the soname: which library this is. */
static void elf_dynamic(int fd, const Elf64_Shdr *sh, unsigned n, struct elf_info *in)
{
	for (unsigned i = 0; i < n; i++) {
		const Elf64_Shdr *s = &sh[i], *st;
		char *tab, *strs;

		if ((s->sh_type != SHT_DYNSYM && s->sh_type != SHT_DYNAMIC) || s->sh_link >= n)
			continue;
		st = &sh[s->sh_link];
		tab = read_at(fd, s->sh_offset, s->sh_size);
		strs = read_at(fd, st->sh_offset, st->sh_size);
		if (tab && strs && s->sh_type == SHT_DYNSYM) {
			const Elf64_Sym *sym = (const Elf64_Sym *)tab;
			bool gc_malloc = false, gc_init = false;

			for (uint64_t k = 0; k < s->sh_size / sizeof(*sym); k++) {
				const char *name = str_at(strs, st->sh_size, sym[k].st_name);

				if (sym[k].st_shndx == SHN_UNDEF)
					continue;
				if (!strcmp(name, "libgc_group_commit")) {
					in->libgc = true;
					/* its text, from the section that holds it */
					for (unsigned j = 0; j < n; j++) {
						uint64_t a = sh[j].sh_addr, v = sym[k].st_value;
						uint64_t len = sym[k].st_size;

						if (sh[j].sh_type != SHT_PROGBITS || v < a ||
						    v >= a + sh[j].sh_size)
							continue;
						if (len >= sizeof(in->version))
							len = sizeof(in->version) - 1;
						if (pread(fd, in->version, len,
							  (off_t)(sh[j].sh_offset + v - a)) <= 0)
							in->version[0] = '\0';
						in->version[sizeof(in->version) - 1] = '\0';
						break;
					}
				}
				gc_malloc |= !strcmp(name, "GC_malloc");
				gc_init |= !strcmp(name, "GC_init");
			}
			in->boehm = gc_malloc && gc_init;
		} else if (tab && strs) {
			const Elf64_Dyn *d = (const Elf64_Dyn *)tab;

			for (uint64_t k = 0; k < s->sh_size / sizeof(*d) && d[k].d_tag != DT_NULL; k++)
				if (d[k].d_tag == DT_SONAME)
					snprintf(in->soname, sizeof(in->soname), "%s",
						 str_at(strs, st->sh_size, d[k].d_un.d_val));
		}
		free(tab);
		free(strs);
	}
}

/* Reads @file's headers into @in; false when it is not a 64-bit ELF file. */
static bool elf_read(const char *file, struct elf_info *in)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr *sh = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	memset(in, 0, sizeof(*in));
	in->kind = -1;
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph)) {
		close(fd);
		return false;
	}
	in->kind = 1;
	in->dso = eh.e_type == ET_DYN;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP) {
			uint64_t len = ph.p_filesz < sizeof(in->interp) ? ph.p_filesz
									: sizeof(in->interp) - 1;

			in->kind = 0;
			if (pread(fd, in->interp, len, (off_t)ph.p_offset) != (ssize_t)len)
				in->interp[0] = '\0';
			in->interp[sizeof(in->interp) - 1] = '\0';
		}
	}
	if (eh.e_shentsize == sizeof(*sh) && eh.e_shnum > 0 && eh.e_shnum < 4096)
		sh = read_at(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(*sh));
	if (sh && eh.e_shstrndx < eh.e_shnum) {
		char *names = read_at(fd, sh[eh.e_shstrndx].sh_offset, sh[eh.e_shstrndx].sh_size);

		for (unsigned i = 0; names && i < eh.e_shnum; i++) {
			const char *name = str_at(names, sh[eh.e_shstrndx].sh_size, sh[i].sh_name);

			if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"))
				in->kind = 2;
		}
		free(names);
		elf_dynamic(fd, sh, eh.e_shnum, in);
	}
	free(sh);
	close(fd);
	return true;
}

/* One line saying what the library at @path is. */
static const char *describe(const char *path, const struct elf_info *in)
{
	static char buf[160];

	if (in->libgc)
		snprintf(buf, sizeof(buf), "libgc (%s)", in->version[0] ? in->version : "marker");
	else if (in->boehm)
		snprintf(buf, sizeof(buf), "NOT libgc: the Boehm-Demers-Weiser garbage collector%s%s%s",
			 in->soname[0] ? " (" : "", in->soname, in->soname[0] ? ")" : "");
	else if (in->kind < 0)
		snprintf(buf, sizeof(buf), "not a 64-bit ELF library");
	else
		snprintf(buf, sizeof(buf), "another library%s%s%s (no libgc_group_commit symbol)",
			 in->soname[0] ? " (" : "", in->soname, in->soname[0] ? ")" : "");
	return buf;
}

static bool is_libgc(const char *path, struct elf_info *in)
{
	struct elf_info tmp;

	if (!in)
		in = &tmp;
	return elf_read(path, in) && in->dso && in->libgc;
}

/* The directory gcrun runs from. */
static bool self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return true;
}

/* The libgc.so to preload: --lib, else next to gcrun (the build tree), else
 * where make install put it relative to gcrun, else the compiled-in place.
 * A candidate that is not libgc (no marker) is passed over. */
static const char *find_lib(const char *given)
{
	static char path[PATH_MAX + 64];
	char dir[PATH_MAX], cand[PATH_MAX + 64];
	const char *cands[3];
	int n = 0;

	if (given) {
		if (!realpath(given, path))
			snprintf(path, sizeof(path), "%s", given);
		return path;
	}
	if (self_dir(dir, sizeof(dir))) {
		snprintf(cand, sizeof(cand), "%s/libgc.so", dir);
		cands[n++] = strdup(cand);
		if (GC_PKGLIBDIR_REL[0] != '/') {
			snprintf(cand, sizeof(cand), "%s/../%s/libgc.so", dir, GC_PKGLIBDIR_REL);
			cands[n++] = strdup(cand);
		}
	}
	cands[n++] = GC_PKGLIBDIR "/libgc.so";
	for (int i = 0; i < n; i++)
		if (cands[i] && is_libgc(cands[i], NULL) && realpath(cands[i], path))
			return path;
	return NULL;
}

/* The file execvp would run for @cmd, or NULL. */
static const char *which(const char *cmd, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *e;

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0 ? cmd : NULL;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = e + 1) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(buf, len, "%.*s/%s", (int)(e - p), e > p ? p : ".", cmd);
		if (access(buf, X_OK) == 0)
			return buf;
		if (!*e)
			return NULL;
	}
}

/* A name from LD_PRELOAD or /etc/ld.so.preload, and the file the loader
 * would map for it. */
struct preload {
	char name[PATH_MAX];
	char path[PATH_MAX];	/* "" when the loader would not find it */
	const char *from;
	struct elf_info in;
};

#define MAX_PRELOADS 32

/* Splits @list the way the loader does (spaces, colons; tabs and newlines
 * too in /etc/ld.so.preload) and appends the names to @p. */
static int split_preloads(const char *list, const char *from, struct preload *p, int n)
{
	const char *s = list;

	while (s && *s && n < MAX_PRELOADS) {
		size_t len = strcspn(s, " :\t\n");

		if (len > 0 && len < sizeof(p[n].name)) {
			memcpy(p[n].name, s, len);
			p[n].name[len] = '\0';
			p[n].path[0] = '\0';
			p[n].from = from;
			n++;
		}
		s += len;
		s += strspn(s, " :\t\n");
	}
	return n;
}

static char *slurp_fd(int fd, size_t max)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1), *nb;
	ssize_t r;

	while (buf && (r = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)r;
		if (len == cap && cap < max) {
			nb = realloc(buf, cap * 2 + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		} else if (len == cap) {
			break;
		}
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		return NULL;
	s = slurp_fd(fd, 1 << 16);
	close(fd);
	return s;
}

/* What the loader itself makes of bare names: `INTERP --list TARGET` with
 * LD_PRELOAD set maps the objects it would load and prints where each came
 * from, and runs no code of theirs. */
static char *loader_list(const char *interp, const char *target, const char *pre)
{
	int pfd[2], st;
	pid_t pid;
	char *out;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return NULL;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(pfd[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		setenv("LD_PRELOAD", pre, 1);
		execl(interp, interp, "--list", target, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return NULL;
	}
	out = slurp_fd(pfd[0], 1 << 20);
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return out;
}

/* Fills in the file and the kind of each preload name. Names with a slash
 * are files as they stand; bare ones are resolved by the loader, for
 * @target (its RPATH counts) with the interpreter @interp. */
static void resolve_preloads(struct preload *p, int n, const char *interp, const char *target)
{
	char bare[MAX_PRELOADS * 64] = "", *out = NULL;
	size_t used = 0;

	for (int i = 0; i < n; i++) {
		if (strchr(p[i].name, '/')) {
			if (access(p[i].name, R_OK) == 0)
				snprintf(p[i].path, sizeof(p[i].path), "%s", p[i].name);
		} else if (used + strlen(p[i].name) + 2 < sizeof(bare)) {
			used += (size_t)snprintf(bare + used, sizeof(bare) - used, "%s%s",
						 used ? ":" : "", p[i].name);
		}
	}
	if (used && interp[0])
		out = loader_list(interp, target, bare);
	for (int i = 0; i < n; i++) {
		if (!strchr(p[i].name, '/') && out) {
			char key[PATH_MAX + 8];
			const char *at, *end;

			snprintf(key, sizeof(key), "\t%.*s => ", (int)sizeof(key) - 8, p[i].name);
			at = strstr(out, key);
			if (at) {
				at += strlen(key);
				end = strstr(at, " (0x");
				if (end && *at == '/' && (size_t)(end - at) < sizeof(p[i].path)) {
					memcpy(p[i].path, at, (size_t)(end - at));
					p[i].path[end - at] = '\0';
				}
			}
		}
		if (p[i].path[0])
			elf_read(p[i].path, &p[i].in);
	}
	free(out);
}

/* A name someone may have meant for this library: libgc.so, libgc.so.1,
 * libgc-commit.so, as given or as resolved. */
static bool libgc_named(const struct preload *p)
{
	const char *names[] = { p->name, p->path };

	for (int i = 0; i < 2; i++) {
		const char *b = strrchr(names[i], '/');

		b = b ? b + 1 : names[i];
		if (!strncmp(b, "libgc.so", 8) || !strncmp(b, "libgc-commit", 12))
			return true;
	}
	return false;
}

/* What a line of --check or a warning says about one preload. */
static void preload_line(FILE *f, const char *lead, const struct preload *p)
{
	if (!p->path[0])
		fprintf(f, "%s%s (%s): not found, the loader would ignore it\n", lead, p->name,
			p->from);
	else if (strcmp(p->name, p->path))
		fprintf(f, "%s%s => %s (%s): %s\n", lead, p->name, p->path, p->from,
			describe(p->path, &p->in));
	else
		fprintf(f, "%s%s (%s): %s\n", lead, p->path, p->from, describe(p->path, &p->in));
}

/* The observer's file, as the library would find it. */
static void check_observer(void)
{
	const char *path = getenv("LIBGC_BLK_STATS");
	struct gc_blk_stats h;
	struct timespec now;
	int fd;

	if (!path || !*path)
		path = GC_BLK_PATH;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("observer:   %s: %s; the library times the device itself (gcd(8))\n", path,
		       strerror(errno));
		return;
	}
	if (pread(fd, &h, offsetof(struct gc_blk_stats, bs_disks), 0) !=
		    (ssize_t)offsetof(struct gc_blk_stats, bs_disks) ||
	    h.bs_magic != GC_BLK_MAGIC || h.bs_version != GC_BLK_VERSION) {
		printf("observer:   %s: not gcd's file (magic or version); it would be ignored\n",
		       path);
	} else {
		clock_gettime(CLOCK_MONOTONIC, &now);
		printf("observer:   %s: gcd pid %u, %u disk%s, last published %.1f s ago\n", path,
		       h.bs_pid, h.bs_ndisks, h.bs_ndisks == 1 ? "" : "s",
		       ((double)now.tv_sec * 1e9 + (double)now.tv_nsec -
			(double)h.bs_heartbeat_ns) / 1e9);
	}
	close(fd);
}

/* gcrun --check: what would be loaded and from where, and nothing run. */
static int check_report(const char *lib, const struct elf_info *libin, const char *cmdname,
			const char *file, const struct elf_info *cmd, const struct preload *pl,
			int npre, const struct preload *have, int wrong, const char *pre)
{
	int problems = wrong;

	printf("libgc:      %s: %s\n", lib, describe(lib, libin));
	if (!cmdname)
		printf("command:    none given (names resolved as for gcrun itself)\n");
	else if (!file)
		printf("command:    %s: not found\n", cmdname), problems++;
	else if (cmd->kind == 1)
		printf("command:    %s: statically linked, libgc cannot interpose it\n", file), problems++;
	else if (cmd->kind == 2)
		printf("command:    %s: a Go program, libgc cannot see its calls\n", file), problems++;
	else if (cmd->kind < 0)
		printf("command:    %s: not an ELF program (a script?): its interpreter is what runs\n",
		       file);
	else
		printf("command:    %s: dynamically linked (%s)\n", file, cmd->interp);
	if (!npre)
		printf("preloaded:  nothing (LD_PRELOAD unset, no /etc/ld.so.preload)\n");
	for (int i = 0; i < npre; i++)
		preload_line(stdout, i ? "            " : "preloaded:  ", &pl[i]);
	if (have)
		printf("without gcrun: libgc from %s (%s)\n", have->path, have->from);
	else
		printf("without gcrun: libgc is not loaded%s\n",
		       wrong ? ": the libgc.so named above is another library" : "");
	printf("with gcrun: LD_PRELOAD=%s\n", pre);
	if (have && strcmp(have->path, lib))
		printf("            (gcrun adds no second libgc: %s is already preloaded)\n",
		       have->path);
	check_observer();
	if (wrong)
		printf("problem:    a libgc.so that is not libgc is preloaded; name libgc by its full "
		       "path, %s\n",
		       lib);
	printf("%s\n", problems ? "check: problems found" : "check: ok");
	return problems ? 1 : 0;
}

/* Starts gcd --daemon unless its stats file is fresh or we may not. */
static void observe(void)
{
	char dir[PATH_MAX], gcd[PATH_MAX + 16];
	const char *cands[3];
	int i, n = 0, st;
	pid_t pid;

	if (geteuid() != 0) {
		warn("--observe: gcd needs root (CAP_BPF, CAP_PERFMON); running without it%s%s", "",
		     "");
		return;
	}
	if (self_dir(dir, sizeof(dir))) {
		snprintf(gcd, sizeof(gcd), "%s/gcd", dir);
		cands[n++] = strdup(gcd);
		snprintf(gcd, sizeof(gcd), "%s/../sbin/gcd", dir);
		cands[n++] = strdup(gcd);
	}
	cands[n++] = GC_SBINDIR "/gcd";
	for (i = 0; i < n; i++)
		if (cands[i] && access(cands[i], X_OK) == 0)
			break;
	if (i == n) {
		warn("--observe: no gcd found (built with make when clang, bpftool and libbpf are there)%s%s",
		     "", "");
		return;
	}
	/* gcd refuses a second instance on its own: that answer is fine */
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execl(cands[i], "gcd", "--daemon", (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		warn("--observe: could not run %s%s", cands[i], "");
}

static void set(const char *name, const char *v)
{
	if (setenv(name, v, 1) < 0) {
		perror("gcrun: setenv");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const char *const policies[] = { "adaptive", "none", "fixed", "jbd2", "siblings", NULL };
	static const char *const shares[] = { "user", "process", NULL };
	static const char *const osyncs[] = { "convert", "keep", NULL };
	static const char *const sites[] = { "0", "1", "auto", NULL };
	static const struct option lo[] = {
		{ "policy", required_argument, NULL, 'P' },
		{ "share", required_argument, NULL, 'S' },
		{ "osync", required_argument, NULL, 'O' },
		{ "report", optional_argument, NULL, 'R' },
		{ "sites", required_argument, NULL, 's' },
		{ "scope", required_argument, NULL, 'C' },
		{ "observe", no_argument, NULL, 'o' },
		{ "disable", no_argument, NULL, 'D' },
		{ "lib", required_argument, NULL, 'L' },
		{ "check", no_argument, NULL, 'K' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "intent", required_argument, NULL, 'I' },
		{ "intent-log", required_argument, NULL, 'G' },
		{ "intent-init", required_argument, NULL, 'N' },
		{ "size", required_argument, NULL, 'Z' },
		{ "recover", required_argument, NULL, 'Y' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lib_given = NULL, *lib, *old, *file, *target, *interp = "";
	const char *intent_init = NULL, *intent_size = NULL, *recover = NULL;
	static struct preload pl[MAX_PRELOADS];
	struct preload *have = NULL;
	struct elf_info libin, cmd, self;
	char buf[PATH_MAX], me[PATH_MAX], *pre, *etc;
	bool want_observe = false, check = false;
	int c, i, npre, wrong = 0;
	ssize_t n;

	/* options end at the first word that is not one: gcrun's own never
	 * get mixed with the command's */
	while ((c = getopt_long(argc, argv, "+qhV", lo, NULL)) != -1) {
		switch (c) {
		case 'P':
			need("--policy", optarg, policies, "adaptive, none, fixed, jbd2 or siblings");
			set("LIBGC_POLICY", optarg);
			break;
		case 'S':
			need("--share", optarg, shares, "user or process");
			set("LIBGC_SHARE", optarg);
			break;
		case 'O':
			need("--osync", optarg, osyncs, "convert or keep");
			set("LIBGC_OSYNC", optarg);
			break;
		case 'R':
			set("LIBGC_REPORT", optarg ? optarg : "1");
			break;
		case 's':
			need("--sites", optarg, sites, "0, 1 or auto");
			set("LIBGC_SITES", optarg);
			break;
		case 'C':
			if (!scope_ok(optarg)) {
				fprintf(stderr,
					"gcrun: --scope wants lib:NAME or fn:NAME, comma-separated, not '%s'\n",
					optarg);
				exit(2);
			}
			set("LIBGC_SCOPE", optarg);
			break;
		case 'o':
			want_observe = true;
			break;
		case 'D':
			set("LIBGC_DISABLE", "1");
			break;
		case 'L':
			lib_given = optarg;
			break;
		case 'K':
			check = true;
			break;
		case 'I':
			set("LIBGC_INTENT", optarg);
			break;
		case 'G':
			set("LIBGC_INTENT_LOG", optarg);
			break;
		case 'N':
			intent_init = optarg;
			break;
		case 'Z':
			intent_size = optarg;
			break;
		case 'Y':
			recover = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("gcrun (libgc) %s\n", GC_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (intent_init)
		return gcrun_intent_init(intent_init, intent_size);
	if (recover)
		return gcrun_intent_recover(recover);
	if (optind >= argc && !check) {
		fprintf(stderr, "gcrun: no command given (gcrun --help)\n");
		return 2;
	}
	lib = find_lib(lib_given);
	if (!lib) {
		fprintf(stderr,
			"gcrun: cannot find libgc.so (next to gcrun, in %s, or --lib): a libgc.so "
			"elsewhere may be another library\n",
			GC_PKGLIBDIR);
		return 127;
	}
	if (!is_libgc(lib, &libin)) {
		fprintf(stderr, "gcrun: %s: %s\n", lib, describe(lib, &libin));
		return 127;
	}

	/* the command, and the loader that would map it */
	file = optind < argc ? which(argv[optind], buf, sizeof(buf)) : NULL;
	memset(&cmd, 0, sizeof(cmd));
	cmd.kind = -1;
	if (file)
		elf_read(file, &cmd);
	/* without a dynamic command, names resolve as for gcrun itself (by
	 * its path: /proc/self/exe would name the loader once it runs) */
	n = readlink("/proc/self/exe", me, sizeof(me) - 1);
	me[n > 0 ? n : 0] = '\0';
	target = file && cmd.kind == 0 ? file : me;
	if (file && cmd.kind == 0)
		interp = cmd.interp;
	else if (elf_read(me, &self) && self.kind == 0)
		interp = self.interp;

	/* what is preloaded already: is libgc among it, and is a libgc.so
	 * that is not libgc (Boehm GC's) */
	old = getenv("LD_PRELOAD");
	npre = split_preloads(old, "LD_PRELOAD", pl, 0);
	etc = slurp("/etc/ld.so.preload");
	npre = split_preloads(etc, "/etc/ld.so.preload", pl, npre);
	free(etc);
	resolve_preloads(pl, npre, interp, target);
	for (i = 0; i < npre; i++) {
		if (pl[i].path[0] && pl[i].in.dso && pl[i].in.libgc) {
			if (!have)
				have = &pl[i];
		} else if (libgc_named(&pl[i]) && pl[i].path[0]) {
			wrong++;
			if (!check && !quiet) {
				fprintf(stderr, "gcrun: warning: ");
				preload_line(stderr, "", &pl[i]);
				fprintf(stderr,
					"gcrun: warning: it is preloaded too, after libgc from %s; "
					"name libgc by its full path (gcrun --check)\n",
					have ? have->path : lib);
			}
		}
	}
	if (have) {
		pre = strdup(old ? old : "");
	} else if (old && *old) {
		pre = malloc(strlen(lib) + strlen(old) + 2);
		if (pre)
			sprintf(pre, "%s:%s", lib, old);
	} else {
		pre = strdup(lib);
	}
	if (!pre) {
		perror("gcrun");
		return 2;
	}
	if (check)
		return check_report(lib, &libin, argc > optind ? argv[optind] : NULL, file, &cmd, pl,
				    npre, have, wrong, pre);
	if (file) {
		if (cmd.kind == 1)
			warn("%s is statically linked: libgc cannot interpose its calls; it runs as without gcrun%s",
			     file, "");
		else if (cmd.kind == 2)
			warn("%s is a Go program: it makes system calls without libc, so libgc cannot see them%s",
			     file, "");
	}
	if (want_observe)
		observe();
	if (*pre)
		set("LD_PRELOAD", pre);
	execvp(argv[optind], argv + optind);
	c = errno;
	fprintf(stderr, "gcrun: %s: %s\n", argv[optind], strerror(c));
	return c == ENOENT ? 127 : 126;
}
