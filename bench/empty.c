// SPDX-License-Identifier: LGPL-2.1-or-later
/* An object with nothing in it: the baseline a preloaded library's
 * start-up cost is measured against (bench/startup.sh, the start-up tests). */
int libgc_empty_preload;
