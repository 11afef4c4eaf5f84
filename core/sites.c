/* Capture of call sites with libunwind, on the sync path only: the chain of
 * return addresses outside this library (unw_backtrace's cached fast trace),
 * each distinct chain once in the site table, named at its second request
 * or for the exit report (a process that syncs once maps no file for it),
 * each return address named once (dladdr's object and dynamic symbol, else
 * the file's symbol table, mapped) in a fixed private cache, and
 * LIBGC_SCOPE's verdict from those names.
 * No malloc and no lock of ours: tables are claimed with compare-and-swap;
 * libunwind caches per thread (no lock, no blocked signals) and its trace
 * allocates nothing (its procedure naming does, so it is not used). Runs
 * under the depth guard, never from the library's own signal handlers. */
#define UNW_LOCAL_ONLY
#include "core/sites.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Without libunwind's headers the library builds with call sites off. The
 * ThreadSanitizer build (make tsan) leaves libunwind out too: its per-thread
 * cache's destructor takes a mutex after TSan has torn down the exiting
 * thread, which crashes every thread exit there. */
#if defined(__has_include) && !defined(__SANITIZE_THREAD__)
#if __has_include(<libunwind.h>)
#include <libunwind.h>
#define GC_HAVE_UNWIND 1
#endif
#endif

#include "core/config.h"
#include "core/log.h"

static int sites_on;		/* LIBGC_SITES */
static int scope_n;		/* LIBGC_SCOPE items */
static bool scope_bad;		/* LIBGC_SCOPE did not parse: nothing grouped */
static const struct gc_scope_item *scope;
static uintptr_t self_lo, self_hi; /* this library's code: frames skipped */

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
static struct ipc_ent ipc[IPC_SIZE];

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

void gc_sites_configure(bool on, const void *cfgp)
{
	const struct gc_config *c = cfgp;

	scope = c->c_scope;
	scope_n = c->c_scope_n;
	scope_bad = c->c_scope_bad;
#ifdef GC_HAVE_UNWIND
	sites_on = on;
	if (!sites_on && !scope_n)
		return;
	/* per-thread caches take no lock and block no signals */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&gc_sites_configure);
	__atomic_store_n(&gc_sites_timing, 1, __ATOMIC_RELEASE);
#else
	/* without libunwind no chain is known: a scope groups nothing */
	sites_on = 0;
	if (scope_n) {
		scope_bad = true;
		gc_log(GC_LOG_WARN, "LIBGC_SCOPE needs call sites, and this build has no libunwind: grouping nothing (every request a direct call)");
	}
	scope_n = 0;
#endif
}

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
	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
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
 * (at most GC_SITE_FRAMES), after at most 8 frames of our own. The walk
 * stops there: a deep stack costs no more than a shallow one. */
static int capture(uint64_t *pcs, int max)
{
#ifdef GC_HAVE_UNWIND
	void *buf[GC_SITE_FRAMES + 8];
	int n = unw_backtrace(buf, max + 8), i = 0, k = 0;

	while (i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi)
		i++;
	for (; i < n && k < max; i++)
		pcs[k++] = (uint64_t)(uintptr_t)buf[i];
	return k;
#else
	return 0;
#endif
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

int gc_site_begin(bool *grouped)
{
	uint64_t pcs[GC_SITE_FRAMES];
	struct ipc_ent tmp;
	int n, i, skip;

	memset(&gc_req_note, 0, sizeof(gc_req_note));
	*grouped = !scope_bad;
	if (!sites_on && !scope_n)
		return -1;
	/* the thread's first count makes the stats segment: the table used
	 * from here on is the segment's */
	(void)gc_stats_shard_mine();
	n = capture(pcs, scope_n ? GC_SITE_FRAMES : GC_SITE_DEPTH + 4);
	if (scope_n) {
		*grouped = false;
		for (i = 0; i < n && !*grouped; i++)
			*grouped = ip_get(pcs[i], &tmp, true)->ic_scope != 0;
	}
	if (!sites_on)
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
	slot = gc_stat_slot ? gc_stat_slot : gc_stat_slot_assign();
	c = &__atomic_load_n(&gc_sites_base, __ATOMIC_RELAXED)
		     ->sa_ctr[(slot - 1) % GC_STAT_SHARDS][row];
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
