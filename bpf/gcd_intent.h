/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gcd's recovery of intent logs at start-up (bpf/gcd_intent.c). */
#ifndef GC_GCD_INTENT_H
#define GC_GCD_INTENT_H
#define GCD_INTENT_LIST "/etc/libgc/intent-logs"
/* Replays every listed log that holds records: 0, or -EIO if any failed. */
int gcd_recover_intent(const char *list);
#endif
