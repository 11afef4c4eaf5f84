/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gcrun's intent-log actions (tools/gcrun_intent.c): exit statuses. */
#ifndef GC_GCRUN_INTENT_H
#define GC_GCRUN_INTENT_H
int gcrun_intent_init(const char *path, const char *size);
int gcrun_intent_recover(const char *path);
#endif
