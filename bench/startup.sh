#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench-start`: what loading libgc costs a process that never syncs,
# against an object with nothing in it (bench/empty.c) preloaded the same
# way. Each command runs START_RUNS times a side in every one of START_PAIRS
# pairs, the sides alternating run by run (bench/spawnloop.c); the table
# gives each pair's ratio and their median. Then memory: python3 making one
# fsync (bench/rss.py), bare and under libgc in alternation START_MEM runs
# each, the medians of VmRSS before exit and of the library's own resident
# mappings. Settings (environment):
#   START_RUNS=200 START_PAIRS=9 START_MEM=15 START_OUT=bench/results
#   START_DIR (where the synced file goes; default a new directory in /tmp)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$root/build/libgc.so
empty=$root/build/bench/empty.so
loop=$root/build/bench/spawnloop
runs=${START_RUNS:-200}
pairs=${START_PAIRS:-9}
mem_runs=${START_MEM:-15}
out_dir=${START_OUT:-$root/bench/results}

die() { echo "bench-start: $*" >&2; exit 2; }
for v in "$runs" "$pairs" "$mem_runs"; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] || die "START_RUNS, START_PAIRS and START_MEM must be positive integers"
done
[ -f "$lib" ] && [ -f "$empty" ] && [ -x "$loop" ] || die "build first (make all)"
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

day=$(date +%F)
host=$(hostname -s 2>/dev/null || echo host)
mkdir -p "$out_dir"
out=$out_dir/$day-$host-startup.md
k=2
while [ -e "$out" ]; do out=$out_dir/$day-$host-startup.$k.md; k=$((k + 1)); done

# row LABEL [spawnloop options] -- COMMAND...: one table row
row() {
	local label=$1 res med a b
	shift
	res=$("$loop" -n "$runs" -k "$pairs" "$@")
	med=$(sed -n 's/^median B\/A \([0-9.]*\).*/\1/p' <<<"$res")
	a=$(sed -n 's/.*per run: A \([0-9.]*\) us.*/\1/p' <<<"$res")
	b=$(sed -n 's/.*, B \([0-9.]*\) us.*/\1/p' <<<"$res")
	echo "| $label | $a | $b | **$med** | $(grep -o 'B/A [0-9.]*' <<<"$res" | head -n -1 | cut -d' ' -f2 | tr '\n' ' ')|" >> "$out"
	printf '  %-34s empty %7s us  libgc %7s us  median %s\n' "$label" "$a" "$b" "$med"
}

{
	echo "# bench-start: loading libgc against an empty preload, $(date -u '+%F %H:%M UTC')"
	echo
	echo "- $pairs pairs of $runs runs a side, the sides alternating run by run (bench/spawnloop)"
	echo "- ratio = libgc / empty preload; per run: the median over the pairs of a run's mean wall time"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	# where they are always on, a zeroed mapping of 2 MiB or more gets huge pages
	echo "- transparent huge pages: $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
	echo
	echo "| command | empty preload, us a run | libgc, us a run | median ratio | each pair |"
	echo "|---|---:|---:|---:|---|"
} > "$out"
echo "bench-start: results go to $out"
row "/bin/true" "$empty" "$lib" -- /bin/true
row "/bin/true, LIBGC_DISABLE=1" -b LIBGC_DISABLE=1 "$empty" "$lib" -- /bin/true
row "sh -c 'echo x >/dev/null'" "$empty" "$lib" -- /bin/sh -c 'echo x >/dev/null'
# a shell's subshells are forks without exec: the library's fork handlers
row "sh -c, 20 subshells" "$empty" "$lib" -- /bin/sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do (:); done'
# the interpreter itself, not a wrapper script that PATH may name
py=
command -v python3 >/dev/null && py=$(python3 -c 'import sys; print(sys.executable)')
if [ -n "$py" ]; then
	row "python3 -c pass" "$empty" "$lib" -- "$py" -c pass
fi

# memory: a process that syncs once, bare against libgc, run by run
if [ -n "$py" ]; then
	dir=${START_DIR:-$(mktemp -d /tmp/bench-start.XXXXXX)}
	bare=() gc=() own=()
	for ((i = 0; i < mem_runs; i++)); do
		b=$("$py" "$root/bench/rss.py" "$dir/f")
		g=$(LD_PRELOAD=$lib "$py" "$root/bench/rss.py" "$dir/f")
		bare+=("$(cut -d' ' -f2 <<<"$b")")
		gc+=("$(cut -d' ' -f2 <<<"$g")")
		own+=("$(cut -d' ' -f4- <<<"$g")")
	done
	[ -n "${START_DIR:-}" ] || rm -rf "$dir"
	med() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
	mb=$(med "${bare[@]}")
	mg=$(med "${gc[@]}")
	mo=$(printf '%s\n' "${own[@]}" | sort -n | awk '{v[NR] = $0} END {print v[int((NR + 1) / 2)]}')
	{
		echo
		echo "python3 making one fsync, $mem_runs runs a side in alternation (bench/rss.py): VmRSS before exit, median"
		echo
		echo "| bare, KiB | libgc, KiB | growth, KiB | the library's own mappings, KiB (median run) |"
		echo "|---:|---:|---:|---|"
		echo "| $mb | $mg | **$((mg - mb))** | $mo |"
	} >> "$out"
	printf '  %-34s bare %7s KiB  libgc %7s KiB  growth %s KiB (own: %s)\n' "python3, one fsync: VmRSS" \
		"$mb" "$mg" "$((mg - mb))" "$mo"
fi
echo "bench-start: $out"
