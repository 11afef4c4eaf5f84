/* gcrun: runs a command under libgc. Puts libgc.so (next to gcrun, else
 * the installed one) first in LD_PRELOAD, keeping what was there; maps its
 * options to LIBGC_*; warns when the target cannot be interposed (static,
 * Go); then execs the command, so its exit status and a death by signal
 * reach the caller unchanged. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GC_VERSION
#define GC_VERSION "0.1"
#endif
#ifndef GC_LIBDIR
#define GC_LIBDIR "/usr/local/lib"
#endif
#ifndef GC_SBINDIR
#define GC_SBINDIR "/usr/local/sbin"
#endif

static bool quiet;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gcrun [options] [--] command [argument...]\n"
		"Runs command with libgc preloaded: its fsync, fdatasync and O_SYNC writes are\n"
		"grouped into shared commits, never made less durable.\n"
		"  --policy P        adaptive (default), none, fixed, jbd2, siblings  (LIBGC_POLICY)\n"
		"  --share S         user (default: processes of this user share commits) or\n"
		"                    process                                        (LIBGC_SHARE)\n"
		"  --osync M         convert (default) or keep O_SYNC/O_DSYNC        (LIBGC_OSYNC)\n"
		"  --report[=WHAT]   exit report: 1 (summary on stderr, the default), kv, json,\n"
		"                    all, an absolute path, or several joined by commas (LIBGC_REPORT)\n"
		"  --sites=0|1       name the call sites of sync requests (default 1)  (LIBGC_SITES)\n"
		"  --scope LIST      group only requests whose call chain passes through\n"
		"                    lib:NAME or fn:NAME, comma-separated            (LIBGC_SCOPE)\n"
		"  --observe         start gcd, the block-device observer, if it is not running\n"
		"                    and this user may (root)\n"
		"  --disable         preload libgc but pass every call through      (LIBGC_DISABLE=1)\n"
		"  --lib PATH        the libgc.so to preload\n"
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

static const char *find_lib(const char *given)
{
	static char path[PATH_MAX + 32];
	char dir[PATH_MAX];

	if (given)
		return realpath(given, path) ? path : given;
	if (self_dir(dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/libgc.so", dir);
		if (access(path, R_OK) == 0)
			return path;
		snprintf(path, sizeof(path), "%s/../lib/libgc.so", dir);
		if (access(path, R_OK) == 0)
			return realpath(path, dir) ? strcpy(path, dir) : path;
	}
	snprintf(path, sizeof(path), "%s/libgc.so", GC_LIBDIR);
	if (access(path, R_OK) == 0)
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

/* What the ELF file says: 0 dynamic, 1 static (no PT_INTERP), 2 Go
 * (.go.buildinfo or .note.go.buildid), -1 not an ELF we read (a script,
 * another class). */
static int elf_kind(const char *file)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Shdr sh, strsh;
	int fd = open(file, O_RDONLY | O_CLOEXEC), kind = 1, i;
	char name[32];

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph)) {
		close(fd);
		return -1;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
		    sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			kind = 0;
	}
	if (eh.e_shentsize == sizeof(sh) && eh.e_shstrndx < eh.e_shnum &&
	    pread(fd, &strsh, sizeof(strsh),
		  (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof(sh))) == sizeof(strsh)) {
		for (i = 0; i < eh.e_shnum && i < 4096; i++) {
			if (pread(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + (uint64_t)i * sizeof(sh))) !=
			    sizeof(sh))
				break;
			memset(name, 0, sizeof(name));
			if (sh.sh_name >= strsh.sh_size ||
			    pread(fd, name, sizeof(name) - 1, (off_t)(strsh.sh_offset + sh.sh_name)) <= 0)
				continue;
			if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"))
				kind = 2;
		}
	}
	close(fd);
	return kind;
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
	static const char *const bools[] = { "0", "1", NULL };
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
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lib_given = NULL, *lib, *old, *file;
	char buf[PATH_MAX], *pre;
	bool want_observe = false;
	int c, kind;

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
			need("--sites", optarg, bools, "0 or 1");
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
	if (optind >= argc) {
		fprintf(stderr, "gcrun: no command given (gcrun --help)\n");
		return 2;
	}
	lib = find_lib(lib_given);
	if (!lib || access(lib, R_OK)) {
		fprintf(stderr, "gcrun: cannot find libgc.so (next to gcrun, in %s, or --lib)\n",
			GC_LIBDIR);
		return 127;
	}
	old = getenv("LD_PRELOAD");
	if (old && *old && strstr(old, lib)) {
		pre = strdup(old);
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
	file = which(argv[optind], buf, sizeof(buf));
	if (file) {
		kind = elf_kind(file);
		if (kind == 1)
			warn("%s is statically linked: libgc cannot interpose its calls; it runs as without gcrun%s",
			     file, "");
		else if (kind == 2)
			warn("%s is a Go program: it makes system calls without libc, so libgc cannot see them%s",
			     file, "");
	}
	if (want_observe)
		observe();
	set("LD_PRELOAD", pre);
	execvp(argv[optind], argv + optind);
	c = errno;
	fprintf(stderr, "gcrun: %s: %s\n", argv[optind], strerror(c));
	return c == ENOENT ? 127 : 126;
}
