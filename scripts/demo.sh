#!/usr/bin/env bash
# `make demo`: examples/fsync_storm on the real disk, bare and under libgc,
# side by side: throughput, latency and the real syncs that reached the disk.
#
# Settings (environment):
#   DEMO_SECS=3              seconds per run (two runs per row)
#   DEMO_THREADS="1 4 16"    thread counts
#   DEMO_PROCS=""            process counts too (e.g. "4 16": forked workers)
#   DEMO_FILES="shared each" one shared file, and/or a file per thread
#                            ("each" rows are skipped for 1 worker: same as shared)
#   DEMO_SYNC=fsync          fsync|fdatasync|odsync|osync, see fsync_storm -h
#   DEMO_SIZE=4096           bytes per write
#   DEMO_DIR=/var/tmp        where the temporary folder is made: a real disk
#   DEMO_LIB=build/libgc.so  the library to preload
set -eu

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${DEMO_SECS:-3}
threads=${DEMO_THREADS-1 4 16}
procs=${DEMO_PROCS-}
files=${DEMO_FILES:-shared each}
sync=${DEMO_SYNC:-fsync}
size=${DEMO_SIZE:-4096}
base=${DEMO_DIR:-/var/tmp}
lib=${DEMO_LIB:-$root/build/libgc.so}
storm=$root/build/examples/fsync_storm

die() {
	echo "demo: $*" >&2
	exit 1
}

[ -x "$storm" ] || die "$storm is missing: run 'make' first"
[ -f "$lib" ] || die "$lib is missing: run 'make' first"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
[ -d "$base" ] || die "$base is not a directory (set DEMO_DIR)"

tmp=$(mktemp -d "$base/libgc-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The value of key in a "k=v k=v" line, or nothing.
kv() {
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

# Sums the exit-report lines in a file: "<real syncs> <sync requests> <lines>".
report_sum() {
	awk '$1 == "libgc:" {
		n++
		for (i = 2; i <= NF; i++) {
			k = $i; sub(/=.*/, "", k)
			v = $i; sub(/^[^=]*=/, "", v)
			s[k] += v
		}
	}
	END {
		printf "%d %d %d\n", s["real_fsync"] + s["real_fdatasync"],
			s["req_fsync"] + s["req_fdatasync"] + s["req_osync"], n
	}' "$1"
}

# run OUTVAR bare|libgc ARGS...: runs fsync_storm, leaves its summary line in
# OUTVAR (empty on failure, with the program's stderr shown).
run() {
	local var=$1 how=$2 out line rc=0
	shift 2
	if [ "$how" = bare ]; then
		out=$(env -u LD_PRELOAD -u LIBGC_REPORT "$storm" -q -D "$tmp" "$@" \
			2>"$tmp/stderr") || rc=$?
	else
		: >"$tmp/report"
		out=$(LD_PRELOAD=$lib LIBGC_REPORT=$tmp/report "$storm" -q -D "$tmp" "$@" \
			2>"$tmp/stderr") || rc=$?
	fi
	line=$(grep '^fsync_storm: workers=' <<<"$out" | tail -n 1) || true
	if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
		echo "demo: fsync_storm $* ($how) failed with status $rc:" >&2
		sed 's/^/    /' "$tmp/stderr" >&2
		line=
	fi
	printf -v "$var" '%s' "$line"
}

fstype=$(stat -f -c %T "$tmp")
device=$(df -P "$tmp" | awk 'NR == 2 { print $1 }')
echo "libgc demo: fsync_storm, $size-byte writes made durable with $sync, ${secs} s per run"
echo "in $tmp ($fstype on $device)"
case $fstype in
tmpfs | ramfs)
	echo "WARNING: $base is on $fstype, not a disk: syncs cost nothing here and the" \
		"numbers mean little. Set DEMO_DIR to a folder on a real disk."
	;;
esac
echo

row='%-8s %-6s | %9s %8s %8s %8s | %9s %8s %8s %8s | %7s\n'
printf '%-15s | %-35s | %-35s |\n' '' '            bare' '          under libgc'
# shellcheck disable=SC2059
printf "$row" workers file ops/s p50_us p99_us syncs ops/s p50_us p99_us syncs ratio

workers=()
for t in $threads; do workers+=("t $t"); done
for p in $procs; do workers+=("p $p"); done

status=0
notes=()
for f in $files; do
	for w in "${workers[@]+"${workers[@]}"}"; do
		read -r kind n <<<"$w"
		[ "$f" = each ] && [ "$n" -eq 1 ] && continue
		label="$n $([ "$kind" = t ] && echo thr || echo proc)"
		args=(-"$kind" "$n" -f "$f" -s "$size" -m "$sync" -d "$secs")
		run b bare "${args[@]}"
		run g libgc "${args[@]}"

		b_ops=- b_p50=- b_p99=- b_sync=- g_ops=- g_p50=- g_p99=- g_sync=- ratio=-
		if [ -n "$b" ]; then
			b_ops=$(kv ops_per_s "$b") b_p50=$(kv p50_us "$b") b_p99=$(kv p99_us "$b")
			# Bare, every operation is one real sync (or one O_*SYNC write).
			b_sync=$(kv ops "$b")
		else
			status=1 b_ops=failed
		fi
		if [ -n "$g" ]; then
			g_ops=$(kv ops_per_s "$g") g_p50=$(kv p50_us "$g") g_p99=$(kv p99_us "$g")
			read -r real req nlines < <(report_sum "$tmp/report")
			if [ "$nlines" -eq 0 ]; then
				g_sync='?'
				notes+=("$label/$f: libgc wrote no exit report (LIBGC_REPORT)")
			else
				g_sync=$real
				if [ "$req" -ne "$(kv ops "$g")" ]; then
					notes+=("$label/$f: libgc counted $req sync requests, fsync_storm made $(kv ops "$g")")
				fi
			fi
		else
			status=1 g_ops=failed
		fi
		if [ -n "$b" ] && [ -n "$g" ]; then
			ratio=$(awk -v g="$g_ops" -v b="$b_ops" \
				'BEGIN { if (b > 0) printf "%.2fx", g / b; else print "-" }')
		fi
		# shellcheck disable=SC2059
		printf "$row" "$label" "$f" "$b_ops" "$b_p50" "$b_p99" "$b_sync" \
			"$g_ops" "$g_p50" "$g_p99" "$g_sync" "$ratio"
	done
done

echo
for n in "${notes[@]+"${notes[@]}"}"; do
	echo "note: $n"
done
echo "ops/s = durable writes per second; p50/p99_us = latency of one write+$sync in" \
	"microseconds; syncs = real syncs that reached the disk (bare: one per write);" \
	"ratio = libgc ops/s / bare ops/s. Each write was durable before it returned in both."
exit "$status"
