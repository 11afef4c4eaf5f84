// SPDX-License-Identifier: LGPL-2.1-or-later
/* Capture of call sites with libunwind, on the sync path only, and only
 * when call sites are asked for: the chain of return addresses outside
 * this library (unw_backtrace's cached fast trace), each distinct chain
 * once in the site table, named at its second request or for the exit
 * report (a process that syncs once maps no file for it), each return
 * address named once (dladdr's object and dynamic symbol, else the file's
 * symbol table, mapped) in a fixed private cache, and LIBGC_SCOPE's
 * verdict from those names. libunwind is loaded with dlopen (RTLD_LOCAL)
 * by the first request that needs a chain: a process that never asks maps
 * neither it nor liblzma.
 * No malloc and no lock of ours: tables are claimed with compare-and-swap;
 * libunwind caches per thread (no lock, no blocked signals) and its trace
 * allocates nothing (its procedure naming does, so it is not used). Runs
 * under the depth guard, never from the library's own signal handlers. */
#define UNW_LOCAL_ONLY
#include "core/sites.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Without libunwind's headers the library builds with chains of one frame
 * (the caller of the interposed function). The ThreadSanitizer build
 * (make tsan) leaves libunwind out too: its per-thread cache's destructor
 * takes a mutex after TSan has torn down the exiting thread, which crashes
 * every thread exit there. */
#if defined(__has_include) && !defined(__SANITIZE_THREAD__)
#if __has_include(<libunwind.h>)
#include <libunwind.h>
#define GC_HAVE_UNWIND 1
#endif
#endif
#ifndef GC_UNWIND_SO
#define GC_UNWIND_SO "libunwind.so.8"
#endif

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/procstats.h"
#include "core/sys.h"

GC_START int gc_sites_on;		/* call sites are recorded */
GC_START static int scope_n;		/* LIBGC_SCOPE items */
GC_START static bool scope_bad;		/* LIBGC_SCOPE did not parse: nothing grouped */
GC_START static const struct gc_scope_item *scope;
static uintptr_t self_lo, self_hi; /* this library's code: frames skipped */
__thread int gc_unwinding __attribute__((tls_model("initial-exec")));

/* Return addresses named: private (the names are this image's). */
#define IPC_SIZE 512
#define IPC_PROBES 16
struct ipc_ent {
	uint64_t ic_ip;		/* 0: free */
	uint32_t ic_ready;
	uint16_t ic_scope;	/* 1: the frame is in LIBGC_SCOPE */
	uint16_t ic_entry;	/* 1: a function of a sync entry's name */
	uint16_t ic_full;	/* the object's symbol table was searched too */
	uint64_t ic_off;	/* ip - the base of its object */
	char ic_fn[56];
	char ic_lib[56];
};
static struct ipc_ent ipc[IPC_SIZE] GC_LARGE;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo &&
		    me < lo + ph->p_memsz) {
			self_lo = lo;
			self_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

/* LIBGC_SITES=auto: on where something shows them, the exit report's
 * summary or JSON (the key=value line has none), or a scope needs them. */
static bool sites_asked(const struct gc_config *c)
{
	if (c->c_sites != GC_SITES_AUTO)
		return c->c_sites == GC_SITES_ON;
	return c->c_report[0] && c->c_report_fmt != GC_REPORT_KV;
}

void gc_sites_configure(const void *cfgp)
{
	const struct gc_config *c = cfgp;

	scope = c->c_scope;
	scope_n = c->c_scope_n;
	scope_bad = c->c_scope_bad;
	if (c->c_disable)
		return;
	if (sites_asked(c) || scope_n)
		__atomic_store_n(&gc_sites_timing, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_on, sites_asked(c), __ATOMIC_RELEASE);
}

void gc_sites_start(void)
{
	if (__atomic_load_n(&gc_sites_on, __ATOMIC_ACQUIRE))
		return;
	/* the table gcstat reads first: rows counted before it stay private */
	gc_ps_add_sites();
	__atomic_store_n(&gc_sites_timing, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&gc_sites_on, 1, __ATOMIC_RELEASE);
}

/* ---- libunwind, loaded on demand ----------------------------------------- */

#ifdef GC_HAVE_UNWIND
#define GC_STR2(x) #x
#define GC_STR(x) GC_STR2(x)
enum { UNW_NONE, UNW_LOADING, UNW_READY, UNW_ABSENT };
static int unw_state;
static int (*unw_trace)(void **, int);
/* a load put off (signals blocked) is tried again at most this often */
#define UNW_RETRY_NS (100 * GC_NSEC_PER_MSEC)
static __thread uint64_t unw_tried_ns __attribute__((tls_model("initial-exec")));
/* this thread has traced once: libunwind's thread-local memory (dynamic
 * TLS of a library loaded late, allocated at its first use in each
 * thread) is there */
static __thread int unw_thread_ready __attribute__((tls_model("initial-exec")));

/* dlopen is no call for a signal handler: the code it interrupted may
 * hold the loader's or malloc's lock. Nor is a thread's first trace, which
 * allocates libunwind's thread-local memory. A handler runs with its
 * signal blocked (unless SA_NODEFER), so each waits for a request made
 * with no signal blocked; a thread that blocks some for good gets
 * one-frame chains. */
static bool no_signal_blocked(void)
{
	sigset_t cur;
	int i;

	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, _NSIG / 8) != 0)
		return false;
	for (i = 1; i < _NSIG; i++)
		if (sigismember(&cur, i) == 1)
			return false;
	return true;
}

static void unw_load(void)
{
	int (*policy)(unw_addr_space_t, unw_caching_policy_t);
	unw_addr_space_t *as;
	void *h;

	h = dlopen(GC_UNWIND_SO, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		gc_log(GC_LOG_WARN, "call sites: cannot load %s (%s): chains of one frame",
		       GC_UNWIND_SO, dlerror());
		__atomic_store_n(&unw_state, UNW_ABSENT, __ATOMIC_RELEASE);
		return;
	}
	policy = (int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(
		h, GC_STR(unw_set_caching_policy));
	as = (unw_addr_space_t *)dlsym(h, GC_STR(unw_local_addr_space));
	unw_trace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	if (!policy || !as || !unw_trace) {
		__atomic_store_n(&unw_state, UNW_ABSENT, __ATOMIC_RELEASE);
		return;
	}
	/* per-thread caches take no lock and block no signals; its first
	 * call sets libunwind up, pipe included (refused: see gc_unwinding) */
	gc_unwinding = 1;
	policy(*as, UNW_CACHE_PER_THREAD);
	gc_unwinding = 0;
	__atomic_store_n(&unw_state, UNW_READY, __ATOMIC_RELEASE);
}

/* libunwind's trace on this thread; false until it is loaded and safe
 * to use here. */
static bool unwinder(void)
{
	int st;
	uint64_t now;

	if (__builtin_expect(unw_thread_ready, 1))
		return true;
	if (__atomic_load_n(&unw_state, __ATOMIC_ACQUIRE) == UNW_ABSENT)
		return false;
	now = gc_now_ns();
	if (unw_tried_ns && now - unw_tried_ns < UNW_RETRY_NS)
		return false;
	if (!no_signal_blocked()) {
		unw_tried_ns = now; /* put off */
		return false;
	}
	st = UNW_NONE;
	if (__atomic_compare_exchange_n(&unw_state, &st, UNW_LOADING, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE))
		unw_load();
	/* another thread is loading it (a millisecond or two): the chains of
	 * one site are all alike when this one waits for it */
	while (__atomic_load_n(&unw_state, __ATOMIC_ACQUIRE) == UNW_LOADING &&
	       gc_now_ns() - now < UNW_RETRY_NS)
		sched_yield();
	if (__atomic_load_n(&unw_state, __ATOMIC_ACQUIRE) != UNW_READY)
		return false;
	unw_thread_ready = 1;
	return true;
}
#endif

static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static bool lib_matches(const char *base, const char *want)
{
	size_t n = strlen(want);

	/* libsqlite3.so names libsqlite3.so.0.8.6 too */
	return !strncmp(base, want, n) && (base[n] == '\0' || base[n] == '.');
}

static uint32_t in_scope(const struct ipc_ent *e)
{
	int i;

	for (i = 0; i < scope_n; i++)
		if (scope[i].si_kind == GC_SCOPE_FN ? !strcmp(e->ic_fn, scope[i].si_name)
						    : lib_matches(e->ic_lib, scope[i].si_name))
			return 1;
	return 0;
}

/* Another preload library stacked before this one wraps the same entry
 * points: its wrapper is not the program's call site. */
static uint16_t is_entry(const char *fn)
{
	static const char *const names[] = {
		"fsync", "fdatasync", "write", "pwrite", "pwrite64", "writev", "pwritev",
		"pwritev64", "pwritev2", "pwritev64v2", "sendfile", "sendfile64", "splice",
		"copy_file_range",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
}

/* The function of the symbol table (.symtab: static functions too) of the
 * ELF file @path that holds the link-time address @vaddr, into @out. The
 * file is mapped, never read into allocated memory: libunwind's own naming
 * allocates, and a synchronous write may come from a signal handler. Every
 * offset is checked against the file's size. */
static bool elf_name(const char *path, uint64_t vaddr, char *out, size_t len)
{
	const ElfW(Ehdr) *eh;
	const ElfW(Shdr) *sh;
	struct stat st;
	bool found = false;
	size_t size;
	void *m;
	int fd, i;

	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*eh)) {
		syscall(SYS_close, fd);
		return false;
	}
	size = (size_t)st.st_size;
	m = gc_sys_mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	syscall(SYS_close, fd);
	if (m == MAP_FAILED)
		return false;
	eh = m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    eh->e_shentsize != sizeof(*sh) || eh->e_shoff > size ||
	    (size - eh->e_shoff) / sizeof(*sh) < eh->e_shnum)
		goto out;
	sh = (const ElfW(Shdr) *)((const char *)m + eh->e_shoff);
	for (i = 0; i < eh->e_shnum && !found; i++) {
		const ElfW(Shdr) *str;
		const ElfW(Sym) *sym;
		size_t k, n;

		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_entsize != sizeof(*sym) || sh[i].sh_offset > size ||
		    size - sh[i].sh_offset < sh[i].sh_size)
			continue;
		str = &sh[sh[i].sh_link];
		if (str->sh_offset > size || size - str->sh_offset < str->sh_size)
			continue;
		sym = (const ElfW(Sym) *)((const char *)m + sh[i].sh_offset);
		n = sh[i].sh_size / sizeof(*sym);
		for (k = 0; k < n; k++) {
			unsigned int type = ELF64_ST_TYPE(sym[k].st_info);
			const char *name;

			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym[k].st_shndx ||
			    vaddr < sym[k].st_value || vaddr - sym[k].st_value >= sym[k].st_size ||
			    sym[k].st_name >= str->sh_size)
				continue;
			name = (const char *)m + str->sh_offset + sym[k].st_name;
			if (!memchr(name, '\0', str->sh_size - sym[k].st_name))
				continue;
			copy_name(out, len, name);
			found = out[0] != '\0';
			break;
		}
	}
out:
	munmap(m, size);
	return found;
}

/* Names the return address @ip: its function (the dynamic symbol dladdr
 * finds, else, when @full, the file's own symbol table) and object. */
static void name_ip(uint64_t ip, struct ipc_ent *e, bool full)
{
	const char *fn = "?", *lib = "?", *slash;
	struct link_map *lm = NULL;
	char buf[sizeof(e->ic_fn)];
	Dl_info di;

	e->ic_off = ip;
	/* the call instruction, not what follows it (a noreturn call may end
	 * its function) */
	memset(&di, 0, sizeof(di));
	if (dladdr1((void *)(uintptr_t)(ip - 1), &di, (void **)&lm, RTLD_DL_LINKMAP)) {
		if (di.dli_fname && di.dli_fname[0]) {
			slash = strrchr(di.dli_fname, '/');
			lib = slash ? slash + 1 : di.dli_fname;
		}
		e->ic_off = ip - (uint64_t)(uintptr_t)di.dli_fbase;
		if (di.dli_sname)
			fn = di.dli_sname;
		else if (full && lm && elf_name(lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe",
					ip - 1 - (uint64_t)lm->l_addr, buf, sizeof(buf)))
			fn = buf;
	}
	copy_name(e->ic_fn, sizeof(e->ic_fn), fn);
	copy_name(e->ic_lib, sizeof(e->ic_lib), lib);
	e->ic_full = full;
	e->ic_scope = (uint16_t)in_scope(e);
	e->ic_entry = is_entry(e->ic_fn);
}

static unsigned int mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (unsigned int)x;
}

/* The named entry of @ip: from the cache, or named now (into the cache
 * when there is room, else into @tmp). @full: a name from the object's
 * symbol table is wanted too (scope and output; the sync path's other
 * checks need only dladdr's), named into @tmp when the cached one lacks it. */
static const struct ipc_ent *ip_get(uint64_t ip, struct ipc_ent *tmp, bool full)
{
	unsigned int h = mix(ip), i;

	for (i = 0; i < IPC_PROBES; i++) {
		struct ipc_ent *e = &ipc[(h + i) % IPC_SIZE];
		uint64_t k = __atomic_load_n(&e->ic_ip, __ATOMIC_ACQUIRE), zero = 0;

		if (k == ip) {
			if (__atomic_load_n(&e->ic_ready, __ATOMIC_ACQUIRE) && (e->ic_full || !full))
				return e;
			break; /* being named, or not fully: do it here */
		}
		if (k)
			continue;
		if (__atomic_compare_exchange_n(&e->ic_ip, &zero, ip, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			name_ip(ip, e, full);
			__atomic_store_n(&e->ic_ready, 1, __ATOMIC_RELEASE);
			return e;
		}
		if (zero == ip)
			break;
	}
	name_ip(ip, tmp, full);
	return tmp;
}

/* The return addresses outside this library, innermost first: up to @max
 * (at most GC_SITE_FRAMES), after at most 8 frames of our own; before
 * libunwind is loaded, @ra alone. The walk stops there: a deep stack costs
 * no more than a shallow one. */
static int capture(uint64_t *pcs, int max, uintptr_t ra)
{
#ifdef GC_HAVE_UNWIND
	void *buf[GC_SITE_FRAMES + 8];
	int n, i = 0, k = 0, e;

	if (unwinder()) {
		e = errno;
		gc_unwinding = 1;
		n = unw_trace(buf, max + 8);
		gc_unwinding = 0;
		errno = e;
		while (i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi)
			i++;
		for (; i < n && k < max; i++)
			pcs[k++] = (uint64_t)(uintptr_t)buf[i];
		if (k)
			return k;
	}
#endif
	if (!ra || !max)
		return 0;
	pcs[0] = (uint64_t)ra;
	return 1;
}

static uint64_t chain_key(const uint64_t *pcs, int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int i;

	for (i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0x100000001b3ULL;
	}
	h ^= (uint64_t)n;
	return h ? h : 1;
}

/* Names row @d from its addresses (a peer may have scribbled its depth). */
static void name_site(struct gc_site_desc *d)
{
	struct ipc_ent tmp;
	const struct ipc_ent *e;
	size_t used = 0, len;
	char name[sizeof(tmp.ic_fn) + 24];
	int i, n = d->sd_depth < GC_SITE_DEPTH ? (int)d->sd_depth : GC_SITE_DEPTH;

	copy_name(d->sd_fn, sizeof(d->sd_fn), "?");
	copy_name(d->sd_lib, sizeof(d->sd_lib), "?");
	d->sd_chain[0] = '\0';
	for (i = 0; i < n; i++) {
		e = ip_get(d->sd_pc[i], &tmp, true);
		if (!i) {
			copy_name(d->sd_fn, sizeof(d->sd_fn), e->ic_fn);
			copy_name(d->sd_lib, sizeof(d->sd_lib), e->ic_lib);
			d->sd_off = e->ic_off;
		}
		/* a function without a name: its object and offset */
		if (strcmp(e->ic_fn, "?"))
			copy_name(name, sizeof(name), e->ic_fn);
		else
			snprintf(name, sizeof(name), "%s+0x%llx", e->ic_lib,
				 (unsigned long long)e->ic_off);
		len = strlen(name);
		if (used + len + 4 >= sizeof(d->sd_chain))
			break;
		if (i) {
			memcpy(d->sd_chain + used, " < ", 3);
			used += 3;
		}
		memcpy(d->sd_chain + used, name, len);
		used += len;
		d->sd_chain[used] = '\0';
	}
}

/* Names row @d if it is unnamed, unless another thread does already. */
static void name_pending(struct gc_site_desc *d)
{
	uint32_t w = GC_SD_UNNAMED;

	if (__atomic_load_n(&d->sd_ready, __ATOMIC_ACQUIRE) != GC_SD_UNNAMED ||
	    !__atomic_compare_exchange_n(&d->sd_ready, &w, GC_SD_NAMING, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	name_site(d);
	__atomic_store_n(&d->sd_ready, GC_SD_NAMED, __ATOMIC_RELEASE);
}

void gc_sites_name_pending(void)
{
	struct gc_site_area *a = __atomic_load_n(&gc_sites_base, __ATOMIC_ACQUIRE);
	int i;

	for (i = 0; a && i < GC_SITES; i++)
		if (__atomic_load_n(&a->sa_desc[i].sd_key, __ATOMIC_ACQUIRE))
			name_pending(&a->sa_desc[i]);
}

/* The row of the chain @pcs in @a, claimed on first sight and named on the
 * second (or for the exit report); the other row when the table is full.
 * Another process of this user may scribble on the table: a row found is
 * always in range, and a wrong one only misattributes counts. */
static int site_row(struct gc_site_area *a, const uint64_t *pcs, int n)
{
	uint64_t key = chain_key(pcs, n);
	unsigned int h = (unsigned int)(key % GC_SITES), i;

	gc_made_note(GC_MADE_SITES);
	for (i = 0; i < GC_SITES; i++) {
		unsigned int ix = (h + i) % GC_SITES;
		struct gc_site_desc *d = &a->sa_desc[ix];
		uint64_t k = __atomic_load_n(&d->sd_key, __ATOMIC_ACQUIRE), zero = 0;

		if (k == key) {
			/* its second request: the names are due now */
			name_pending(d);
			return (int)ix;
		}
		if (k)
			continue;
		if (__atomic_compare_exchange_n(&d->sd_key, &zero, key, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			d->sd_depth = (uint32_t)n;
			for (int j = 0; j < n; j++)
				d->sd_pc[j] = pcs[j];
			__atomic_store_n(&d->sd_ready, GC_SD_UNNAMED, __ATOMIC_RELEASE);
			return (int)ix;
		}
		if (zero == key)
			return (int)ix;
	}
	return GC_SITE_OTHER;
}

int gc_site_begin(bool *grouped, uintptr_t ra)
{
	uint64_t pcs[GC_SITE_FRAMES];
	struct ipc_ent tmp;
	int n, i, skip;

	memset(&gc_req_note, 0, sizeof(gc_req_note));
	*grouped = !scope_bad;
	if (__builtin_expect(!__atomic_load_n(&gc_sites_on, __ATOMIC_RELAXED), 1)) {
		/* gcstat -p PID --sites asked, through the stats segment */
		if (__builtin_expect(gc_ps_sites_wanted(), 0))
			gc_sites_start();
		else if (!scope_n)
			return -1;
	}
	if (!self_hi)
		dl_iterate_phdr(find_self, (void *)(uintptr_t)&gc_site_begin);
	n = capture(pcs, scope_n ? GC_SITE_FRAMES : GC_SITE_DEPTH + 4, ra);
	if (scope_n) {
		*grouped = false;
		for (i = 0; i < n && !*grouped; i++)
			*grouped = ip_get(pcs[i], &tmp, true)->ic_scope != 0;
	}
	if (!__atomic_load_n(&gc_sites_on, __ATOMIC_RELAXED))
		return -1;
	/* wrappers of other preload libraries before this one */
	for (skip = 0; skip < n && skip < 4 && ip_get(pcs[skip], &tmp, scope_n != 0)->ic_entry; skip++)
		;
	n -= skip;
	return site_row(__atomic_load_n(&gc_sites_base, __ATOMIC_ACQUIRE), pcs + skip,
			n < GC_SITE_DEPTH ? n : GC_SITE_DEPTH);
}

void gc_site_end(int row, uint64_t ns, bool scoped_out)
{
	struct gc_site_ctr *c;
	uint64_t commit = gc_req_note.rn_commit_ns;
	unsigned int slot;

	if (row < 0 || row >= GC_SITE_ROWS)
		return;
	slot = gc_stat_slot_index();
	c = &__atomic_load_n(&gc_sites_base, __ATOMIC_RELAXED)->sa_ctr[slot % GC_SITE_SHARDS][row];
	if (commit > ns) /* a peer's clock or a scribbled close time */
		commit = ns;
	__atomic_fetch_add(&c->sc_requests, 1, __ATOMIC_RELAXED);
	if (gc_req_note.rn_served)
		__atomic_fetch_add(&c->sc_committed, 1, __ATOMIC_RELAXED);
	else if (gc_req_note.rn_direct)
		__atomic_fetch_add(&c->sc_direct, 1, __ATOMIC_RELAXED);
	if (scoped_out)
		__atomic_fetch_add(&c->sc_scoped_out, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->sc_wait_ns, ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->sc_commit_ns, commit, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->sc_hist[gc_site_hist_bucket(ns)], 1, __ATOMIC_RELAXED);
}
