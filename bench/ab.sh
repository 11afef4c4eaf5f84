#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench-ab`: bare fsync_storm against fsync_storm under libgc, for
# differences of a few percent on a disk whose speed wanders by more than
# that from one second to the next. Two designs, both paired:
#
#   sequential   a pair is one run of each, one after the other, the order
#                alternating from pair to pair (bare libgc, libgc bare, ...:
#                each two pairs an ABBA block); the pair's ratio is
#                libgc / bare. Each run has the disk to itself.
#   concurrent   bare and libgc at the same time, each in its own folder:
#                both see the same moments of the disk. They also share it,
#                so a mode of libgc that loses (its grouped probes) loses
#                up to twice as much here as alone: a pessimistic reading.
#   control      (AB_CONTROL=1) concurrent pairs of bare against bare: the
#                instrument's own spread, measured in the same batch.
#
# Each cell prints the median ratio and a 90% bootstrap interval of that
# median, for both designs. Settings (environment):
#   AB_CELLS="shared:1 shared:2 shared:8 shared:16 each:2 each:8 each:16"
#   AB_SECS=10 AB_SEQ=12 AB_PAIRS=12 AB_CONTROL=0   AB_DIR=/var/tmp
#   AB_OUT=bench/results
# Extra LIBGC_* settings for the libgc runs may be given as arguments.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$root/build/libgc.so
storm=$root/build/examples/fsync_storm
cells=${AB_CELLS:-shared:1 shared:2 shared:8 shared:16 each:2 each:8 each:16}
secs=${AB_SECS:-10}
seq=${AB_SEQ:-12}
pairs=${AB_PAIRS:-12}
control=${AB_CONTROL:-0}
base_dir=${AB_DIR:-/var/tmp}
out_dir=${AB_OUT:-$root/bench/results}

die() { echo "bench-ab: $*" >&2; exit 2; }
for v in "$secs" "$seq" "$pairs"; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "AB_SECS, AB_SEQ and AB_PAIRS must be positive integers"
done
[[ $control =~ ^[01]$ ]] || die "AB_CONTROL must be 0 or 1, not '$control'"
for c in $cells; do
	[[ $c =~ ^(shared|each):[0-9]+$ ]] || die "bad cell '$c' (want shared:N or each:N)"
done
for a in "$@"; do
	[[ $a =~ ^LIBGC_[A-Z_]+=.*$ ]] || die "extra arguments are LIBGC_NAME=value, not '$a'"
done
[ -x "$storm" ] && [ -f "$lib" ] || die "build first (make all)"
[ -d "$base_dir" ] || die "$base_dir is not a directory (set AB_DIR)"

work=$(mktemp -d "$base_dir/libgc-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"

# As in bench.sh: no preload and no LIBGC_* of the caller's environment;
# libgc runs with its defaults plus the arguments.
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

# storm WHO DIR WORKLOAD N [LIBGC_...]: ops/s of one run (WHO: bare or libgc)
storm() {
	local who=$1 dir=$2 mode=$3 n=$4 line
	local -a pre=()
	shift 4
	[ "$who" = bare ] || pre=(env LD_PRELOAD="$lib" "$@")
	line=$("${pre[@]}" "$storm" -t "$n" -f "$mode" -s 4096 -m fsync -d "$secs" -q -D "$dir")
	line=${line##*ops_per_s=}
	echo "${line%% *}"
}

# pair WHO WHO FILE [LIBGC_...]: one run of each, of the current cell
# ($mode, $n), at the same time in the two folders; appends their ops/s to
# FILE, first then second
pair() {
	local x=$1 y=$2 to=$3
	shift 3
	storm "$x" "$work/a" "$mode" "$n" "$@" > "$work/ra" &
	storm "$y" "$work/b" "$mode" "$n" "$@" > "$work/rb" &
	wait
	echo "$(cat "$work/ra") $(cat "$work/rb")" >> "$to"
}

# summary: "median (lo–hi)" of the ratios on stdin, one per line; the
# interval is the 5th and 95th percentile of 2000 bootstrap medians.
summary() {
	awk 'function med(a, n,   t, i, j) {
		for (i = 1; i <= n; i++) t[i] = a[i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && t[j-1] > t[j]; j--) { x = t[j]; t[j] = t[j-1]; t[j-1] = x }
		return n % 2 ? t[(n+1)/2] : (t[n/2] + t[n/2+1]) / 2
	}
	{ r[++n] = $1 }
	END {
		srand(1)
		for (b = 1; b <= 2000; b++) {
			for (i = 1; i <= n; i++) s[i] = r[int(rand() * n) + 1]
			m[b] = med(s, n)
		}
		for (i = 2; i <= 2000; i++) for (j = i; j > 1 && m[j-1] > m[j]; j--) { x = m[j]; m[j] = m[j-1]; m[j-1] = x }
		printf "%.3f (%.3f–%.3f)", med(r, n), m[100], m[1900]
	}'
}

day=$(date +%F)
host=$(hostname -s 2>/dev/null || echo host)
mkdir -p "$out_dir"
out=$out_dir/$day-$host-ab.md
k=2
while [ -e "$out" ]; do out=$out_dir/$day-$host-ab.$k.md; k=$((k + 1)); done

{
	echo "# bench-ab: bare vs libgc, paired, $(date -u '+%F %H:%M UTC')"
	echo
	echo "- disk: $(findmnt -n -o FSTYPE,SOURCE -T "$work" | tr -s ' ') (folder under $base_dir)"
	echo "- fsync_storm -t N -f shared|each -s 4096 -m fsync -d $secs; libgc: defaults${*:+ and $*}"
	echo "- sequential: $seq pairs, one run after the other, the order alternating (ABBA); concurrent: $pairs pairs run at once"
	[ "$control" = 0 ] || echo "- control: $pairs concurrent pairs of bare against bare (ratio = second / first)"
	echo "- ratio = libgc / bare; median (90% bootstrap interval of the median)"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "| workload | N | bare ops/s (sequential mean) | sequential ratio | concurrent ratio | control (bare/bare) |"
	echo "|---|---:|---:|---|---|---|"
} > "$out"

echo "bench-ab: results go to $out"
for c in $cells; do
	mode=${c%%:*} n=${c##*:}
	: > "$work/seq" && : > "$work/conc" && : > "$work/ctl"
	for ((i = 1; i <= seq; i++)); do
		if ((i % 2)); then order="bare libgc"; else order="libgc bare"; fi
		for w in $order; do
			v=$(storm "$w" "$work/a" "$mode" "$n" "$@")
			if [ "$w" = bare ]; then sb=$v; else sl=$v; fi
		done
		echo "$sb $sl" >> "$work/seq"
	done
	for ((i = 1; i <= pairs; i++)); do
		pair bare libgc "$work/conc" "$@"
		((control)) || continue
		pair bare bare "$work/ctl"
	done
	bare=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$work/seq")
	sequ=$(awk '{ print $2 / $1 }' "$work/seq" | summary)
	conc=$(awk '{ print $2 / $1 }' "$work/conc" | summary)
	ctl=—
	((control)) && ctl=$(awk '{ print $2 / $1 }' "$work/ctl" | summary)
	label=$([ "$mode" = shared ] && echo "one shared file" || echo "a file per thread")
	echo "| $label | $n | $bare | $sequ | $conc | $ctl |" >> "$out"
	printf '  %-18s N=%-3s bare %7s ops/s  sequential %s  concurrent %s%s\n' "$label" "$n" "$bare" "$sequ" "$conc" \
		"$( ((control)) && echo "  control $ctl")"
done
echo "bench-ab: $out"
