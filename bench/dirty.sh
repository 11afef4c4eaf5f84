#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# make bench-dirty: one streaming writer against a reader of cold small files
# on the slow disk, bare and under libgc, with and without the observer
# (gcd). Prints a table and writes bench/results/DATE-HOST-dirty.{md,png}.
# Knobs: DIRTY_MB (600), DIRTY_SECS reader seconds (22), DIRTY_IMAGE=disk to
# keep the slow disk's image on this machine's disk instead of /dev/shm.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
SD=$ROOT/tests/slowdisk/slowdisk
LIB=$ROOT/build/libgc.so
READER=$ROOT/build/bench/coldread
WRITER=$ROOT/build/bench/streamw
GCD=$ROOT/build/gcd
MB=${DIRTY_MB:-600}
SECS=${DIRTY_SECS:-22}
NAME=bench-dirty-$$
NFILES=2000
[ "$(id -u)" -eq 0 ] || { echo "bench-dirty: needs root (slow disk, drop_caches)"; exit 77; }
for f in "$LIB" "$READER" "$WRITER"; do
	[ -x "$f" ] || [ -f "$f" ] || { echo "bench-dirty: $f missing (make)"; exit 1; }
done

WORK=$(mktemp -d)
GCD_PID=
cleanup() {
	[ -z "$GCD_PID" ] || kill "$GCD_PID" 2>/dev/null || true
	timeout 120 bash "$SD" down --name "$NAME" >/dev/null 2>&1 || true
	rm -rf "$WORK" "/dev/shm/$NAME"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The image on tmpfs by default: on this machine's disk, the daemon's writes
# to the image become the host's own dirty pages, whose writeback stalls the
# daemon's reads of the image, and the slow disk is no longer what its
# settings say. DIRTY_IMAGE=disk measures that way anyway.
UP=(up --name "$NAME" --size-mb 2048 --journal-mb 128 --write-mbps 40 --read-lat-us 500 --flush-us 4000)
if [ "${DIRTY_IMAGE:-shm}" != disk ]; then
	mkdir -p "/dev/shm/$NAME"
	UP+=(--image "/dev/shm/$NAME/image")
fi
MNT=$(bash "$SD" "${UP[@]}" | tail -n 1)
mkdir -p "$MNT/r"
"$READER" setup "$MNT/r" "$NFILES"
sync

# run TAG WRITER-MODE(none|bare|libgc) BLK-STATS-PATH
run() {
	local tag=$1 mode=$2 stats=$3 rp out=""
	rm -f "$MNT/big"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	"$READER" run "$MNT/r" "$NFILES" "$SECS" > "$WORK/$tag.lat" 2> "$WORK/$tag.sum" &
	rp=$!
	sleep 1
	case $mode in
	bare) out=$(env -u LD_PRELOAD "$WRITER" "$MNT/big" "$MB") ;;
	libgc) out=$(env LD_PRELOAD="$LIB" LIBGC_BLK_STATS="$stats" "$WRITER" "$MNT/big" "$MB") ;;
	esac
	wait "$rp"
	echo "$(cat "$WORK/$tag.sum") $out" > "$WORK/$tag.res"
	echo "  $tag: $(cat "$WORK/$tag.res")"
}

kv() { tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1; }

echo "bench-dirty: slow disk $MNT (40 MB/s, 0.5 ms reads, 4 ms flush), writer $MB MiB, reader ${SECS} s"
for obs in off on; do
	stats=$WORK/none.stats   # never created: no observer
	if [ $obs = on ]; then
		if [ ! -x "$GCD" ]; then
			echo "  gcd not built: skipping the runs with the observer"
			break
		fi
		stats=$WORK/blk.stats
		"$GCD" --stats "$stats" > "$WORK/gcd.log" 2>&1 &
		GCD_PID=$!
		for _ in $(seq 50); do [ -s "$stats" ] && break; sleep 0.1; done
		if [ ! -s "$stats" ]; then
			echo "  gcd did not start ($(tail -n 1 "$WORK/gcd.log")): skipping the runs with it"
			kill "$GCD_PID" 2>/dev/null || true; GCD_PID=
			break
		fi
	fi
	for mode in none bare libgc; do
		run "$mode-gcd$obs" "$mode" "$stats"
	done
	if [ -n "$GCD_PID" ]; then kill "$GCD_PID"; wait "$GCD_PID" 2>/dev/null || true; GCD_PID=; fi
done

mkdir -p bench/results
base=bench/results/$(date +%F)-$(hostname -s)-dirty
out=$base
i=2
while [ -e "$out.md" ]; do out=$base.$i; i=$((i + 1)); done
{
	echo "# bench-dirty $(date -Is) on $(hostname -s)"
	echo
	echo "Slow disk: \`slowdisk ${UP[*]}\`; reader: \`coldread run DIR $NFILES $SECS\` (stat+open+read"
	echo "of a random cold 8 KiB file every 20 ms, caches dropped first); writer: \`streamw FILE $MB\`"
	echo "(1 MiB write() calls, then one fsync). libgc with its defaults (LIBGC_DIRTY=auto,"
	echo "LIBGC_DIRTY_TARGET_MS=100). lag p99 counts each read from when it was due (a stall also"
	echo "delays the reads it kept from starting). Load average: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "| gcd | writer | reader p50 ms | p99 ms | max ms | lag p99 ms | writer MB/s | final fsync ms |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	for obs in off on; do
		for mode in none bare libgc; do
			f=$WORK/$mode-gcd$obs.res
			[ -f "$f" ] || continue
			r=$(cat "$f")
			echo "| $obs | $mode | $(kv p50_ms <<<"$r") | $(kv p99_ms <<<"$r") | $(kv max_ms <<<"$r") | $(kv lag_p99_ms <<<"$r") | $(kv mb_per_s <<<"$r") | $(kv fsync_ms <<<"$r") |"
		done
	done
	echo
	echo "Goals (reader p99 under libgc <= 3x no writer and >= 10x better than bare; writer >= 80% of bare; final fsync much shorter):"
	echo
	for obs in off on; do
		[ -f "$WORK/libgc-gcd$obs.res" ] || continue
		n=$(kv p99_ms < "$WORK/none-gcd$obs.res"); b=$(kv p99_ms < "$WORK/bare-gcd$obs.res"); g=$(kv p99_ms < "$WORK/libgc-gcd$obs.res")
		nl=$(kv lag_p99_ms < "$WORK/none-gcd$obs.res"); bl=$(kv lag_p99_ms < "$WORK/bare-gcd$obs.res"); gl=$(kv lag_p99_ms < "$WORK/libgc-gcd$obs.res")
		bw=$(kv mb_per_s < "$WORK/bare-gcd$obs.res"); gw=$(kv mb_per_s < "$WORK/libgc-gcd$obs.res")
		bf=$(kv fsync_ms < "$WORK/bare-gcd$obs.res"); gf=$(kv fsync_ms < "$WORK/libgc-gcd$obs.res")
		awk -v o=$obs -v n="$n" -v b="$b" -v g="$g" -v nl="$nl" -v bl="$bl" -v gl="$gl" -v bw="$bw" -v gw="$gw" -v bf="$bf" -v gf="$gf" 'BEGIN {
			printf "- gcd %s: p99 libgc/none %.2fx (%s), bare/libgc %.1fx (%s); lag p99 libgc/none %.2fx (%s), bare/libgc %.0fx (%s); writer %.0f%% of bare (%s); fsync %s ms vs %s ms bare (%s)\n",
				o, g / n, ((g <= 3 * n) ? "met" : "NOT met"), b / g, ((b >= 10 * g) ? "met" : "NOT met"),
				gl / nl, ((gl <= 3 * nl) ? "met" : "NOT met"), bl / gl, ((bl >= 10 * gl) ? "met" : "NOT met"),
				100 * gw / bw, ((gw >= 0.8 * bw) ? "met" : "NOT met"), gf, bf, ((gf * 10 <= bf) ? "met" : "NOT met") }'
	done
	echo
	echo "![reader latency]($(basename "$out").png)"
} > "$out.md"

if command -v gnuplot >/dev/null; then
	plots=()
	for obs in off on; do
		[ -f "$WORK/libgc-gcd$obs.lat" ] || continue
		plots+=("set title 'reader latency, gcd $obs'; plot '$WORK/none-gcd$obs.lat' u (\$1/1000):(\$2/1000) w p pt 7 ps 0.3 t 'no writer', '$WORK/bare-gcd$obs.lat' u (\$1/1000):(\$2/1000) w p pt 7 ps 0.3 t 'bare writer', '$WORK/libgc-gcd$obs.lat' u (\$1/1000):(\$2/1000) w p pt 7 ps 0.3 t 'writer under libgc'")
	done
	{
		echo "set terminal pngcairo size 1000,$((380 * ${#plots[@]})) noenhanced"
		echo "set output '$out.png'"
		echo "set multiplot layout ${#plots[@]},1"
		echo "set logscale y; set xlabel 'time since the reader started (s)'; set ylabel 'stat+open+read (ms)'; set key top right; set grid"
		for p in "${plots[@]}"; do echo "$p"; done
		echo "unset multiplot"
	} | gnuplot || echo "bench-dirty: gnuplot failed; no plot"
else
	echo "bench-dirty: gnuplot not installed (scripts/deps.sh bench): no plot"
fi
echo
cat "$out.md"
echo
echo "bench-dirty: wrote $out.md${plots:+ and $out.png}"
