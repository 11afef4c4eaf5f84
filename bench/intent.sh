#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The intent log on the slow disk: bare against LIBGC_INTENT in alternating
# pairs, 8 threads; a shared file, a file each (fsync_storm, 4 KiB writes
# + fdatasync/fsync), SQLite WAL threads (a database each). Prints one
# markdown row per cell: medians of the pairs, and for the intent runs the
# groups (real fdatasyncs of the log), the disk flushes per group from the
# slow disk's counters, and the checkpoints. Root (the slow disk).
#
#   bench/intent.sh [--fs ext4|xfs] [--slog FLUSH_US] [--pairs N] [--secs S]
#                   [--cells "shared each sqlite"] [--flush-us N]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
SD=tests/slowdisk/slowdisk
fs=ext4 slog='' pairs=3 secs=3 cells="shared each sqlite" flush_us=4000
while [ $# -gt 0 ]; do
	case $1 in
	--fs) fs=$2; shift 2 ;;
	--slog) slog=$2; shift 2 ;;
	--pairs) pairs=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	--cells) cells=$2; shift 2 ;;
	--flush-us) flush_us=$2; shift 2 ;;
	*) echo "usage: bench/intent.sh [--fs ext4|xfs] [--slog FLUSH_US] [--pairs N] [--secs S] [--cells LIST]" >&2; exit 2 ;;
	esac
done
D=intent-data-$$ L=intent-log-$$
cleanup() { "$SD" down --name "$D" >/dev/null 2>&1 || true; [ -z "$slog" ] || "$SD" down --name "$L" >/dev/null 2>&1 || true; }
trap cleanup EXIT
M=$("$SD" up --name "$D" --fs "$fs" --flush-us "$flush_us" | tail -n 1)
if [ -n "$slog" ]; then
	LM=$("$SD" up --name "$L" --flush-us "$slog" | tail -n 1)
	LOG=$LM/intent.log LDISK=$L
else
	LOG=$M/intent.log LDISK=$D
fi
"$B/gcrun" --intent-init "$LOG" --size 256m >/dev/null
mkdir -p "$M/d"
flushes() { "$SD" status --name "$1" | sed -n 's/^flushes=//p'; }
med() { sort -n | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
rpt() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$2" | awk '{s+=$1} END {print s+0}'; }

# one run: $1 = bare|intent, $2 = cell; prints ops/s; leaves the report in $tmp/rep
tmp=$(mktemp -d)
one() {
	local how=$1 cell=$2 out
	local -a env=() cmd
	rm -rf "$M/d" && mkdir -p "$M/d" && sync
	: >"$tmp/rep"
	if [ "$how" = intent ]; then
		env=(LD_PRELOAD="$B/libgc.so" LIBGC_INTENT="$M/d" LIBGC_INTENT_LOG="$LOG"
			LIBGC_REPORT="$tmp/rep")
	fi
	case $cell in
	shared) cmd=("$B/examples/fsync_storm" -t 8 -D "$M/d" -f shared -m fdatasync -d "$secs" -q) ;;
	each) cmd=("$B/examples/fsync_storm" -t 8 -D "$M/d" -f each -m fsync -d "$secs" -q) ;;
	sqlite) cmd=(python3 examples/recipes/sqlite_load.py --dir "$M/d" --mode threads
		--journal wal --workers 8 --secs "$secs") ;;
	esac
	out=$(env "${env[@]}" "${cmd[@]}" 2>&1)
	if [ "$cell" = sqlite ]; then
		awk -v s="$secs" '{for (i=1;i<=NF;i++) if ($i ~ /^commits=/) {split($i,a,"="); printf "%.1f\n", a[2]/s}}' <<<"$out"
	else
		sed -n 's/.*ops_per_s=\([0-9.]*\).*/\1/p' <<<"$out" | tail -n 1
	fi
}

echo "fs=$fs flush=${flush_us}us log=${slog:+second slow disk, ${slog}us flush}${slog:-same filesystem} pairs=$pairs secs=$secs load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| cell | bare ops/s | intent ops/s | intent / bare (median of pairs) | groups/s | requests per group | flushes per group (log disk) | data-disk flushes/s | checkpoints/s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for cell in $cells; do
	: >"$tmp/b" ; : >"$tmp/i" ; : >"$tmp/r" ; : >"$tmp/g" ; : >"$tmp/fpg" ; : >"$tmp/dfl" ; : >"$tmp/ck" ; : >"$tmp/rq"
	for ((p = 0; p < pairs; p++)); do
		b=$(one bare "$cell")
		f0=$(flushes "$LDISK"); d0=$(flushes "$D")
		i=$(one intent "$cell")
		f1=$(flushes "$LDISK"); d1=$(flushes "$D")
		echo "$b" >>"$tmp/b"; echo "$i" >>"$tmp/i"
		awk -v a="$i" -v b="$b" 'BEGIN {printf "%.3f\n", a/b}' >>"$tmp/r"
		g=$(( $(rpt real_fdatasync "$tmp/rep") + $(rpt real_fsync "$tmp/rep") - $(rpt intent_real "$tmp/rep") ))
		[ "$g" -gt 0 ] || g=1
		echo "$g $secs" | awk '{printf "%.1f\n", $1/$2}' >>"$tmp/g"
		echo "$(rpt intent_logged "$tmp/rep") $g" | awk '{printf "%.2f\n", $1/$2}' >>"$tmp/rq"
		echo "$((f1 - f0)) $g" | awk '{printf "%.2f\n", $1/$2}' >>"$tmp/fpg"
		echo "$((d1 - d0)) $secs" | awk '{printf "%.1f\n", $1/$2}' >>"$tmp/dfl"
		echo "$(rpt intent_ckpts "$tmp/rep") $secs" | awk '{printf "%.1f\n", $1/$2}' >>"$tmp/ck"
		echo "# pair $p $cell: bare $b intent $i groups $g log-disk flushes $((f1 - f0)) data-disk flushes $((d1 - d0)) $(tr '\n' ' ' <"$tmp/rep" | grep -o 'intent_[a-z]*=[0-9]*' | tr '\n' ' ')" >&2
	done
	printf '| %s | %s | %s | **%s×** (%s) | %s | %s | %s | %s | %s |\n' "$cell" "$(med <"$tmp/b")" "$(med <"$tmp/i")" \
		"$(med <"$tmp/r")" "$(sort -n "$tmp/r" | tr '\n' ' ' | sed 's/ $//')" "$(med <"$tmp/g")" \
		"$(med <"$tmp/rq")" "$(med <"$tmp/fpg")" "$(med <"$tmp/dfl")" "$(med <"$tmp/ck")"
done
rm -rf "$tmp"
