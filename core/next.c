// SPDX-License-Identifier: LGPL-2.1-or-later
/* The next definitions of names: what dlsym(RTLD_NEXT) would return for
 * each, read from the objects' own GNU hash tables, the list of objects
 * read once. dlsym costs about 850 instructions a name (its error frame,
 * the search for the caller's object, the lookup), a third of all that
 * loading the library cost a short process when it resolved every name at
 * start-up. */
#include "core/next.h"

#include <dlfcn.h>
#include <elf.h>
#include <stdbool.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "core/sys.h"

/* The objects searched, in the loader's order: the ones after this object
 * up to libc. At start-up those are objects of the initial set, whose chain
 * order is their search order; anything loaded later (a dlopen from another
 * constructor) comes after libc in the chain and is never read. A name libc
 * does not define, or a library loaded with dlopen (libc then precedes it),
 * is left to dlsym. */
#define NEXT_MAX_OBJS 32

struct next_obj {
	uintptr_t no_base;
	const uint32_t *no_gnu;
	const ElfW(Sym) *no_sym;
	const char *no_str;
	const ElfW(Half) *no_ver;
};

struct next_walk {
	uintptr_t nw_self;	/* an address inside this object */
	uintptr_t nw_vdso;
	bool nw_after;		/* this object was passed */
	bool nw_libc;		/* libc was reached: the list is complete */
	bool nw_bad;		/* an object this code cannot read: use dlsym */
	int nw_n;
	struct next_obj nw_objs[NEXT_MAX_OBJS];
};

static int self_marker;

/* glibc relocates the pointers in a loaded object's dynamic section, the
 * vDSO's and a few others stay as linked */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static bool contains(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
			return true;
	}
	return false;
}

static int walk_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct next_walk *w = data;
	const ElfW(Dyn) *dyn = NULL;
	struct next_obj o = { .no_base = info->dlpi_addr };
	const char *soname = NULL;
	ElfW(Addr) soname_off = 0;
	bool has_soname = false;
	const char libc_so[] = "libc.so.6"; /* on the stack: see loader_settings */

	if (!w->nw_after) {
		w->nw_after = contains(info, w->nw_self);
		return 0;
	}
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	/* the vDSO is in the chain but not in any search list */
	if (!dyn || (w->nw_vdso && contains(info, w->nw_vdso)))
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_GNU_HASH:
			o.no_gnu = (const uint32_t *)dyn_ptr(o.no_base, dyn->d_un.d_ptr);
			break;
		case DT_SYMTAB:
			o.no_sym = (const ElfW(Sym) *)dyn_ptr(o.no_base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			o.no_str = (const char *)dyn_ptr(o.no_base, dyn->d_un.d_ptr);
			break;
		case DT_VERSYM:
			o.no_ver = (const ElfW(Half) *)dyn_ptr(o.no_base, dyn->d_un.d_ptr);
			break;
		case DT_SONAME:
			soname_off = dyn->d_un.d_val;
			has_soname = true;
			break;
		}
	}
	if (!o.no_gnu || !o.no_sym || !o.no_str || w->nw_n == NEXT_MAX_OBJS) {
		w->nw_bad = true;
		return 1;
	}
	w->nw_objs[w->nw_n++] = o;
	if (has_soname)
		soname = o.no_str + soname_off;
	if (soname && gc_str_after(soname, libc_so) && !soname[sizeof(libc_so) - 1]) {
		w->nw_libc = true;
		return 1;
	}
	return 0;
}

uint32_t gc_next_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

enum { FOUND, ABSENT, ASK_DLSYM };

/* @name in one object, as the loader's check_match takes it for dlsym (no
 * version asked: an unversioned definition, or the one default version).
 * Anything unusual (an IFUNC, data, a unique symbol, several versions) is
 * left to dlsym rather than imitated. */
static int lookup(const struct next_obj *o, const char *name, uint32_t h, void **out)
{
	const uint32_t nbuckets = o->no_gnu[0], symoffset = o->no_gnu[1];
	const uint32_t bloom_size = o->no_gnu[2], shift = o->no_gnu[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)&o->no_gnu[4];
	const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
	const uint32_t *chain = &buckets[nbuckets];
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word, mask;
	const ElfW(Sym) *versioned = NULL;
	int nversions = 0;
	uint32_t i;

	if (!nbuckets || !bloom_size)
		return ABSENT;
	word = bloom[(h / bits) & (bloom_size - 1)];
	mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
	if ((word & mask) != mask)
		return ABSENT;
	i = buckets[h % nbuckets];
	if (i < symoffset)
		return ABSENT;
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		const ElfW(Sym) *s = &o->no_sym[i];

		if ((ch | 1) == (h | 1) && !strcmp(name, o->no_str + s->st_name) &&
		    (s->st_shndx != SHN_UNDEF || s->st_value != 0)) {
			int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);

			if (s->st_shndx == SHN_UNDEF || s->st_value == 0 || type != STT_FUNC ||
			    (bind != STB_GLOBAL && bind != STB_WEAK))
				return ASK_DLSYM;
			if (!o->no_ver || (o->no_ver[i] & 0x7fff) < 2) {
				*out = (void *)(o->no_base + s->st_value);
				return FOUND;
			}
			if (!(o->no_ver[i] & 0x8000) && nversions++ == 0)
				versioned = s;
		}
		if (ch & 1)
			break;
	}
	if (nversions > 1)
		return ASK_DLSYM;
	if (versioned) {
		*out = (void *)(o->no_base + versioned->st_value);
		return FOUND;
	}
	return ABSENT;
}

/* Is either of the loader's settings that change what dlsym returns in
 * the environment? getenv's answer for both in one pass, and no lazy
 * binding of getenv at start-up. */
extern char **environ;

static bool loader_settings(void)
{
	/* arrays on the stack, made with immediates: a string constant read
	 * here was a fault on the library's read-only data in every process */
	const char ld[] = "LD_", audit[] = "AUDIT=", weak[] = "DYNAMIC_WEAK=";
	char **e;

	for (e = environ; e && *e; e++)
		if (gc_str_after(*e, ld) &&
		    (gc_str_after(*e + 3, audit) || gc_str_after(*e + 3, weak)))
			return true;
	return false;
}

/* The objects searched, read once (gc_next_prepare) for the lookups of a
 * whole run: 1 when they can be read, -1 when dlsym answers everything. */
GC_START static struct next_walk next_objs;
GC_START static int next_state;

bool gc_next_prepare(void)
{
	struct next_walk *w = &next_objs;
	bool ok = false;

	*w = (struct next_walk){ .nw_self = (uintptr_t)&self_marker };
	if (!loader_settings()) {
		w->nw_vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
		dl_iterate_phdr(walk_one, w);
		ok = w->nw_libc && !w->nw_bad;
	}
	__atomic_store_n(&next_state, ok ? 1 : -1, __ATOMIC_RELEASE);
	return ok;
}

void *gc_next_find(const char *name, uint32_t hash)
{
	void *out = NULL;
	int r = ABSENT;

	if (__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == 1)
		for (int j = 0; j < next_objs.nw_n && r == ABSENT; j++)
			r = lookup(&next_objs.nw_objs[j], name, hash, &out);
	return r == FOUND ? out : dlsym(RTLD_NEXT, name);
}
