#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The recipes' shared code (examples/recipes/lib.sh) reports a run that
# fails: a row whose runs failed says so in its check column, and the
# recipe then exits 1, rather than print 0 a second beside "ok", or end
# before any row (the median of no number under pipefail). Its header
# names what was measured against bare: another library (RECIPE_LIB) or
# settings the runs add (RECIPE_GC_ENV) are not libgc's defaults. A
# stand-in run function, no disk and no program: lib.sh is sourced as a
# recipe does.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
n=0
echo "1..4"
if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ] || [ ! -x build/tests/slowdisk/slowdiskd ]; then
	for t in "a failed run's row" "a good run's row" "the median of no number" \
		"the header names the library and settings"; do
		ok "$t # SKIP lib.sh wants root, /dev/fuse and build/tests/slowdisk/slowdiskd"
	done
	exit 0
fi

# recipe SCRIPT [VAR=VALUE...]: lib.sh sourced as a recipe, with those
# settings, then SCRIPT; its output and exit status in OUT and ST
recipe() {
	local script=$1
	shift
	OUT=$(env -u LD_PRELOAD RECIPE_ROUNDS=2 RECIPE_EMD=0 R_NAME=librecipe "$@" bash -c '
		. examples/recipes/lib.sh
		r_flushes() { echo 0; }
		fails() { OPS=0 CHECK="the run failed ($1)"; }
		works() { OPS=100; }
		'"$script" 2>&1)
	ST=$?
}

recipe 'r_header
	r_measure_twice fails /dev/null --second
	r_rows_twice 1000 "first setting" "second setting" /dev/null ok'
rows=$(grep -c '^| 1ms .*the run failed (libgc) |$' <<<"$OUT")
[ "$ST" -eq 1 ] && [ "$rows" -eq 2 ] && ! grep -q '| ok |$' <<<"$OUT" &&
	ok "a server's two settings whose runs fail: both rows say so, and the recipe exits 1" ||
	not_ok "a failed run's row" "status $ST, $rows rows naming the failure" "$OUT"

recipe 'r_measure_twice works /dev/null --second
	r_rows_twice 1000 "first setting" "second setting" /dev/null ok'
rows=$(grep -c '^| 1ms .* 1.00x (1.00-1.00) .*| ok |$' <<<"$OUT")
[ "$ST" -eq 0 ] && [ "$rows" -eq 2 ] &&
	ok "runs that work: two rows with their ratio and the data's check, exit 0" ||
	not_ok "a good run's row" "status $ST, $rows rows" "$OUT"

recipe 'm=$(r_median -r %.2fx - "" x); echo "median=[$m]"'
[ "$ST" -eq 0 ] && grep -q '^median=\[\]$' <<<"$OUT" &&
	ok "the median of no number is nothing, and the recipe goes on" ||
	not_ok "the median of no number" "status $ST" "$OUT"

other=$(mktemp -d)
cp build/libgc.so "$other/other.so"
recipe r_header
plain=$(grep -c 'bare vs libgc (' <<<"$OUT")
recipe r_header RECIPE_LIB="$other/other.so" RECIPE_GC_ENV="LIBGC_POLICY=none LIBGC_DIRTY=off"
[ "$plain" -eq 1 ] && grep -q "bare vs $other/other.so with LIBGC_POLICY=none LIBGC_DIRTY=off on" <<<"$OUT" &&
	ok "the header names another library and the settings the runs add" ||
	not_ok "the header names the library and settings" "libgc's defaults named $plain times" "$OUT"
rm -rf "$other"
