#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Generates the linker version script from syms.def: exactly the libc names
# listed there are exported, and libgc's marker (shim/init.c); everything
# else stays local.
echo '{ global:'
sed -n 's/^SYM([^,]*, *\([A-Za-z0-9_]*\),.*/  \1;/p' "$1"
echo '  libgc_group_commit;'
echo 'local: *; };'
