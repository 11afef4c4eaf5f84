/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A name built as snprintf would build it (cut to fit, always ended, the
 * full length returned), without snprintf: its code is four pages of libc
 * that a process syncing once would touch for nothing else (a page fault
 * each), and it takes 2 KB of stack, which a signal handler's alternate
 * stack may not have. Strings and unsigned numbers only. */
#ifndef GC_CORE_NAME_H
#define GC_CORE_NAME_H

#include <stddef.h>

struct gc_name {
	char *nb_buf;
	size_t nb_len;	/* the buffer's size */
	size_t nb_at;	/* the length so far, cut or not */
};

static inline struct gc_name gc_name_in(char *buf, size_t len)
{
	return (struct gc_name){ buf, len, 0 };
}

static inline void gc_name_char(struct gc_name *b, char c)
{
	if (b->nb_at + 1 < b->nb_len)
		b->nb_buf[b->nb_at] = c;
	b->nb_at++;
}

static inline void gc_name_str(struct gc_name *b, const char *s)
{
	for (; *s; s++)
		gc_name_char(b, *s);
}

static inline void gc_name_num(struct gc_name *b, unsigned long long v, unsigned int base)
{
	char d[24];
	int n = 0;

	do {
		d[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		gc_name_char(b, d[--n]);
}

/* Ends the string; returns the length it would have had uncut. */
static inline int gc_name_end(struct gc_name *b)
{
	if (b->nb_len)
		b->nb_buf[b->nb_at < b->nb_len ? b->nb_at : b->nb_len - 1] = '\0';
	return (int)b->nb_at;
}

#endif
