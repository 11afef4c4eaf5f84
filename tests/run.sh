#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs test suites and sums their results into one closing line.
# A suite is a Criterion binary (its "Synthesis:" line is read) or a script
# printing TAP ("ok N - ...", "not ok N - ...", "# SKIP reason").  Each
# suite's time is printed after it, and the slowest at the end: make test
# must stay within 10 minutes on 2 cores.
set -u
pass=0 fail=0 skip=0 broken=() times=()
start=$SECONDS
for s in "$@"; do
	t0=$SECONDS
	name=${s#build/}
	printf '== %s\n' "$name"
	out=$(mktemp)
	if head -c 4 "$s" 2>/dev/null | grep -q 'ELF'; then
		"$s" --jobs 1 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		syn=$(grep -a 'Synthesis:' "$out" | tail -n 1)
		if [ -z "$syn" ] && grep -aqE '^1\.\.[0-9]+' "$out"; then
			# a plain program printing TAP
			p=$(grep -acE '^ok [0-9]+' "$out" | head -1)
			f=$(grep -acE '^not ok [0-9]+' "$out" | head -1)
			pass=$((pass + p)); fail=$((fail + f))
			[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { broken+=("$name (rc=$rc)"); fail=$((fail + 1)); }
		elif [ -z "$syn" ]; then
			broken+=("$name (no synthesis, rc=$rc)")
			fail=$((fail + 1))
		else
			t=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' <<<"$syn")
			p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn")
			f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn")
			c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn")
			sk=$(sed -n 's/.*Skipped: \([0-9]*\).*/\1/p' <<<"$syn")
			pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ${sk:-0}))
			[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { broken+=("$name (rc=$rc)"); fail=$((fail + 1)); }
			: "$t" "$c"
		fi
	else
		bash "$s" 2>&1 | tee "$out"
		rc=${PIPESTATUS[0]}
		p=$(grep -acE '^ok [0-9]+' "$out" | head -1)
		sk=$(grep -acE '^ok [0-9]+.*# *SKIP' "$out" | head -1)
		f=$(grep -acE '^not ok [0-9]+' "$out" | head -1)
		pass=$((pass + p - sk)); skip=$((skip + sk)); fail=$((fail + f))
		[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && { broken+=("$name (rc=$rc)"); fail=$((fail + 1)); }
	fi
	rm -f "$out"
	printf '# %s: %d s\n' "$name" $((SECONDS - t0))
	times+=("$((SECONDS - t0)) $name")
done
printf '%s\n' "${times[@]+"${times[@]}"}" | sort -rn | head -n 5 |
	awk 'BEGIN { printf "slowest suites:" } { printf " %s %d s;", $2, $1 } END { print "" }'
echo "total: $((SECONDS - start)) s"
for b in "${broken[@]+"${broken[@]}"}"; do echo "broken suite: $b"; done
echo
echo "make test: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
