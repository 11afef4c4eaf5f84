#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/ab.sh checks its input and, on a tiny run, writes a table whose rows
# carry two paired ratios and the bare-against-bare control. Timing is never
# asserted: only that the figures are there and are positive numbers.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
. tests/tap.sh
n=0
echo "1..5"
tmp=$(mktemp -d /var/tmp/libgc-abtest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# refused CASE ENV... -- ARGS...: exit 2 and one line naming what was wrong
refused() {
	local what=$1 want=$2 e=() out rc
	shift 2
	while [ "$1" != -- ]; do e+=("$1"); shift; done
	shift
	out=$(env "${e[@]}" AB_OUT="$tmp" bash bench/ab.sh "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 2 ] && grep -q "$want" <<<"$out" && [ "$(wc -l <<<"$out")" -eq 1 ]; then
		ok "$what is refused in one line"
	else
		not_ok "$what is refused in one line" "rc=$rc" "$out"
	fi
}
refused "a count that is not a positive integer" AB_SEQ AB_SEQ=0 --
refused "a bad cell" "bad cell 'both:3'" AB_CELLS=both:3 --
refused "a control switch that is not 0 or 1" "AB_CONTROL must be 0 or 1" AB_CONTROL=yes --
refused "an argument that is no LIBGC_ setting" "LIBGC_NAME=value" -- -t 4

out=$(AB_CELLS=shared:1 AB_SECS=1 AB_SEQ=2 AB_PAIRS=1 AB_CONTROL=1 AB_OUT="$tmp" AB_DIR="$tmp" \
	bash bench/ab.sh LIBGC_POLICY=adaptive 2>&1)
rc=$?
f=$(find "$tmp" -maxdepth 1 -name '*-ab.md' | head -1)
row=$([ -n "$f" ] && grep '^| one shared file | 1 |' "$f")
if [ "$rc" -eq 0 ] && [ -n "$row" ] &&
	awk -F'|' '{ for (i = 4; i <= 7; i++) { split($i, a, " "); if (!(a[1] + 0 > 0)) exit 1 } }' <<<"$row"; then
	ok "a tiny run writes a row with bare ops/s, two positive ratios and the control"
else
	not_ok "a tiny run writes a row with bare ops/s, two positive ratios and the control" "rc=$rc" "$out" "${f:-no file}" "$row"
fi
