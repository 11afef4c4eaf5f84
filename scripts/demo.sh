#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make demo`: the same workloads bare and under libgc, side by side, on two
# slow disks (a 1 ms flush like a cloud volume, a 4 ms flush like a SATA
# disk) and on the machine's own disk, in about a minute.  Throughput,
# latency, the real syncs that reached the kernel and the flushes that
# reached the disk.
#
# Settings (environment):
#   DEMO_SECS=3              seconds per run (two runs per row, a pair)
#   DEMO_THREADS=8           threads (fs_mark: processes) per workload
#   DEMO_FLUSH_US="1000 4000"  flush latencies of the slow disks ("" skips them)
#   DEMO_FS="ext4 xfs"       the slow disks' filesystems (ext4, ext4-fc, xfs,
#                            btrfs): a slow disk per filesystem and latency
#   DEMO_DIR=/var/tmp        where the machine's-disk folder is made
#   DEMO_PAIRS=3             bare/libgc pairs on the machine's disk (odd): its
#                            runs vary by 10-15% from one to the next, so its
#                            row is the pair with the median ratio
#   DEMO_LIB=build/libgc.so  the library to preload
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${DEMO_SECS:-3}
nthr=${DEMO_THREADS:-8}
pairs=${DEMO_PAIRS:-3}
flushes=${DEMO_FLUSH_US-1000 4000}
fslist=${DEMO_FS:-ext4 xfs}
base=${DEMO_DIR:-/var/tmp}
lib=${DEMO_LIB:-$root/build/libgc.so}
storm=$root/build/examples/fsync_storm
synclat=$root/build/examples/synclat.so
slowdisk=$root/tests/slowdisk/slowdisk
gcstat=$root/build/gcstat
gcd=$root/build/gcd

die() {
	echo "demo: $*" >&2
	exit 1
}

for v in secs nthr pairs; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "DEMO_${v^^} must be a positive integer, not '${!v}'"
done
for f in "$storm" "$synclat" "$lib"; do
	[ -e "$f" ] || die "$f is missing: run 'make demo', which builds it"
done
[ $((pairs % 2)) = 1 ] || die "DEMO_PAIRS must be odd (its row is the median pair), not '$pairs'"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
[ -d "$base" ] || die "$base is not a directory (set DEMO_DIR)"
have_fsmark=1
command -v fs_mark >/dev/null || have_fsmark=0

# The runs see libgc's defaults only, whatever the caller's environment says.
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

tmp=$(mktemp -d /tmp/libgc-demo.XXXXXX)
disk_dir=
disks_up=()
workload=
gcd_pid=
snap_dir=     # the run in this folder gets a gcstat screen taken
snap_label=
cleanup() {
	local rc=$? n
	trap - EXIT INT TERM
	cd /
	[ -z "$gcd_pid" ] || { kill "$gcd_pid" 2>/dev/null; wait "$gcd_pid" 2>/dev/null || true; }
	if [ -n "$workload" ]; then
		# timeout passes TERM on to the workload; fs_mark's processes
		# are in its group
		kill -TERM -- "-$workload" "$workload" 2>/dev/null || true
		wait "$workload" 2>/dev/null || true
	fi
	[ -z "$disk_dir" ] || rm -rf "$disk_dir"
	for n in "${disks_up[@]+"${disks_up[@]}"}"; do
		bash "$slowdisk" down --name "$n" >/dev/null 2>&1 ||
			echo "demo: could not tear down slow disk '$n': run $slowdisk down --name $n" >&2
	done
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- one run ----

# Sums libgc's exit-report lines: "<real syncs> <sync requests> <direct>".
report_sum() {
	awk -f "$root/bench/report_sum.awk" "$1"
}

# The flushes the slow disk NAME has seen so far, or nothing.
disk_flushes() {
	[ -n "$1" ] || return 0
	bash "$slowdisk" status --name "$1" 2>/dev/null | sed -n 's/^flushes=//p'
}

# run DIR DISKNAME bare|libgc WORKLOAD [FILES]: one run in a fresh folder
# under DIR.  Leaves ops/s, p50/p99 in µs, real syncs, requests, requests
# served direct and disk flushes in R_OPS R_P50 R_P99 R_REAL R_REQ R_DIRECT
# R_FLUSH (R_OPS empty on failure).
run() {
	local dir=$1 disk=$2 how=$3 wl=$4 files=${5:-} d=$1/run rc=0 line f0 f1 attempt
	local -a cmd pre
	local snapper
	R_OPS='' R_P50='' R_P99='' R_REAL='' R_REQ='' R_DIRECT='' R_FLUSH=-
	case $wl in
	shared | each)
		cmd=("$storm" -q -t "$nthr" -f "$wl" -s 4096 -m fsync -d "$secs" -D .)
		pre=()
		;;
	fsmark)
		# a relative folder: fs_mark takes names under 40 bytes only
		cmd=(fs_mark -S1 -s 4096 -t "$nthr" -n "$files" -d f -l "$tmp/fsmark.log")
		pre=("$synclat")
		;;
	esac
	[ "$how" = libgc ] && pre+=("$lib")
	for attempt in 1 2 3; do
		rm -rf "$d" "$tmp"/synclat.*
		mkdir -p "$d"
		: >"$tmp/report"
		f0=$(disk_flushes "$disk")
		rc=0
		# In the background, and waited for: a signal interrupts `wait` at
		# once, and timeout gives the workload a process group of its own
		# that the exit trap can stop.
		(cd "$d" && exec env LD_PRELOAD="${pre[*]}" LIBGC_REPORT="$tmp/report" \
			SYNCLAT_DIR="$tmp" timeout -k 5 $((secs * 10 + 60)) "${cmd[@]}") \
			>"$tmp/out" 2>"$tmp/err" &
		workload=$!
		snapper=
		if [ "$how" = libgc ] && [ "$dir/$wl" = "$snap_dir" ] && [ -x "$gcstat" ]; then
			(sleep 1 && "$gcstat" -i 1 -n 1 >"$tmp/gcstat.txt" 2>&1) &
			snapper=$!
		fi
		wait "$workload" || rc=$?
		workload=
		[ -z "$snapper" ] || wait "$snapper" || true
		f1=$(disk_flushes "$disk")
		# fs_mark seeds its random file names with the microseconds of
		# each process's start: two processes woken together draw the
		# same names and the second unlink fails.  Nothing valid was
		# measured; run it again.
		if [ "$wl" = fsmark ] && [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] &&
			grep -q 'Error in unlink of .*No such file' "$tmp/err"; then
			continue
		fi
		break
	done
	if [ "$wl" = fsmark ]; then
		R_OPS=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $4 ~ /^[0-9.]+$/ { v = $4 } END { print v }' \
			"$tmp/out")
		read -r R_P50 R_P99 R_REAL < <(cat "$tmp"/synclat.* 2>/dev/null | sort -n |
			awk '{ a[NR] = $1 } END {
				if (!NR) { print "- - 0"; exit }
				i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999)
				print a[i50], a[i99], NR }')
	else
		line=$(grep '^fsync_storm: workers=' "$tmp/out" | tail -n 1 || true)
		[[ $line == *" errors=0"* ]] || line=
		R_OPS=$(sed -n 's/.* ops_per_s=\([^ ]*\).*/\1/p' <<<"$line")
		R_P50=$(sed -n 's/.* p50_us=\([^ ]*\).*/\1/p' <<<"$line")
		R_P99=$(sed -n 's/.* p99_us=\([^ ]*\).*/\1/p' <<<"$line")
		R_REAL=$(sed -n 's/.* ops=\([^ ]*\).*/\1/p' <<<"$line")
	fi
	if [ "$rc" -ne 0 ] || [ -z "$R_OPS" ]; then
		echo "demo: ${cmd[*]} ($how) failed with status $rc:" >&2
		sed 's/^/    /' "$tmp/err" | tail -n 5 >&2
		R_OPS=
	fi
	# Bare, every request is one real sync; under libgc the report counts.
	R_REQ=$R_REAL R_DIRECT=$R_REAL
	if [ "$how" = libgc ]; then
		read -r R_REAL R_REQ R_DIRECT < <(report_sum "$tmp/report")
	fi
	[ -z "$f0" ] || [ -z "$f1" ] || R_FLUSH=$((f1 - f0))
	rm -rf "$d"
	# Leave no dirty data to the next run.
	sync -f "$dir" 2>/dev/null || sync
}

# ---- the table ----

fmt_ms() { # µs -> ms, or "-"
	awk -v v="${1:--}" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.2f", v / 1000 }'
}

hdr='%-14s %-17s | %6s %6s %6s | %6s %6s %8s | %6s %6s | %6s %6s | %6s %6s\n'
header() {
	printf '%-32s | %-20s | %-22s | %-13s | %-13s | %s\n' '' '       ops/s' \
		'      real syncs' 'disk flushes' '    p50 ms' '    p99 ms'
	# shellcheck disable=SC2059
	printf "$hdr" disk workload bare libgc ratio bare libgc req/sync bare libgc bare libgc bare libgc
}

status=0

# row DIR DISKNAME LABEL WORKLOAD [PAIRS]: runs the workload bare and under
# libgc and prints their row.  With PAIRS (odd), that many pairs, the first
# run of each pair bare and libgc by turns, and the row of the pair whose
# ratio is the median; ROW_RATIOS lists every pair's ratio.
row() {
	local dir=$1 disk=$2 label=$3 wl=$4 np=${5:-1} files='' what k line
	local b_ops b_p50 b_p99 b_real b_flush g_ops g_p50 g_p99 g_real g_flush ratio rps
	local -a lines=()
	case $wl in
	shared) what="shared log, $nthr thr" ;;
	each) what="file each, $nthr thr" ;;
	fsmark) what="fs_mark, $nthr proc" ;;
	esac
	if [ "$wl" = fsmark ]; then
		# fs_mark has no time limit: a short bare run sizes it to
		# about $secs, the same file count for both runs.
		run "$dir" "" bare fsmark 16
		files=$(awk -v r="${R_OPS:-100}" -v s="$secs" -v n="$nthr" \
			'BEGIN { f = int(r * s / n); if (f < 16) f = 16; print f }')
	fi
	# the libgc run of a pair, first or second by turns
	run_libgc() {
		run "$dir" "$disk" libgc "$wl" "$files"
		g_ops=$R_OPS g_p50=$R_P50 g_p99=$R_P99 g_real=$R_REAL g_flush=$R_FLUSH
		G_DIRECT=$R_DIRECT G_REQ=$R_REQ
	}
	for ((k = 0; k < np; k++)); do
		if [ $((k % 2)) = 1 ]; then
			run_libgc
		fi
		run "$dir" "$disk" bare "$wl" "$files"
		b_ops=$R_OPS b_p50=$R_P50 b_p99=$R_P99 b_real=$R_REAL b_flush=$R_FLUSH
		if [ $((k % 2)) = 0 ]; then
			run_libgc
		fi
		if [ -z "$b_ops" ] || [ -z "$g_ops" ]; then
			status=1
			ratio=failed
		else
			ratio=$(awk -v g="$g_ops" -v b="$b_ops" 'BEGIN { printf "%.2fx", (b > 0 ? g / b : 0) }')
		fi
		rps=$(awk -v q="$G_REQ" -v r="$g_real" 'BEGIN { if (r > 0) printf "%.1f", q / r; else print "-" }')
		# shellcheck disable=SC2059
		line=$(printf "$hdr" "$label" "$what" "$(printf %.0f "${b_ops:-0}")" \
			"$(printf %.0f "${g_ops:-0}")" "$ratio" "$b_real" "$g_real" "$rps" "$b_flush" \
			"$g_flush" "$(fmt_ms "$b_p50")" "$(fmt_ms "$g_p50")" "$(fmt_ms "$b_p99")" \
			"$(fmt_ms "$g_p99")")
		lines+=("$ratio ${G_DIRECT:-0} ${G_REQ:-0} $line")
	done
	# the median pair by ratio (a failed pair sorts first)
	line=$(printf '%s\n' "${lines[@]}" | sort -n -k1,1 | sed -n "$((np / 2 + 1))p")
	ROW_RATIOS=$(printf '%s\n' "${lines[@]}" | awk '{ print $1 }' | paste -sd' ')
	read -r _ G_DIRECT G_REQ _ <<<"$line"
	printf '%s\n' "$(cut -d' ' -f4- <<<"$line")"
}

# p50 in µs of one thread's 4 KiB write+fsync in DIR: what one flush costs.
flush_p50() {
	local line
	line=$(cd "$1" && "$storm" -q -t 1 -f shared -s 4096 -m fsync -n 40 -D . 2>/dev/null |
		grep '^fsync_storm: workers=' || true)
	sed -n 's/.* p50_us=\([^ ]*\).*/\1/p' <<<"$line"
}

wls="shared each"
[ "$have_fsmark" = 1 ] && wls+=" fsmark"

echo "libgc demo: $nthr threads or processes each making 4 KiB writes durable, bare and"
echo "under libgc, ${secs} s a run.  Every write is durable before it returns in both."
[ "$have_fsmark" = 1 ] ||
	echo "fs_mark is not installed: its rows are skipped ('make demo' installs it, package fsmark)."
echo
header

# ---- the slow disks ----

# The observer, for gcstat's disk rows (and the policy's rule 0), when it
# can run and none publishes yet; a running one is used as it is.
if [ "$(id -u)" -eq 0 ] && [ -x "$gcd" ] && [ -n "$flushes" ]; then
	"$gcd" 2>"$tmp/gcd.err" &
	gcd_pid=$!
	sleep 0.3
	kill -0 "$gcd_pid" 2>/dev/null || gcd_pid=
fi

skip_slow=
if [ -z "$flushes" ]; then
	skip_slow="DEMO_FLUSH_US is empty"
elif [ "$(id -u)" -ne 0 ] || [ ! -c /dev/fuse ]; then
	skip_slow="they need root and /dev/fuse"
elif [ ! -x "$root/build/tests/slowdisk/slowdiskd" ]; then
	skip_slow="build/tests/slowdisk/slowdiskd is not built ('make demo' builds it)"
fi
for us in $flushes; do
	[ -z "$skip_slow" ] || break
	[[ $us =~ ^[0-9]+$ ]] || die "DEMO_FLUSH_US takes microseconds, not '$us'"
	for fs in $fslist; do
		case $fs in ext4 | ext4-fc | xfs | btrfs) ;; *) die "DEMO_FS: unknown filesystem '$fs'" ;; esac
		name=demo-$$-$us-$fs
		disks_up+=("$name")
		rc=0
		# 1 GiB with a 128 MiB journal (xfs: log), as the benchmark makes
		# it: the 16 MiB journal mke2fs gives a small image fills within
		# seconds of fsync-heavy work, and its checkpoints then cost
		# flushes of their own.
		jopt=(--journal-mb 128)
		[ "$fs" != btrfs ] || jopt=()
		mnt=$(bash "$slowdisk" up --name "$name" --fs "$fs" --flush-us "$us" --size-mb 1024 \
			"${jopt[@]}" 2>"$tmp/up.err") || rc=$?
		mnt=$(tail -n 1 <<<"$mnt")
		if [ "$rc" -eq 77 ]; then
			skip_slow=$(tail -n 1 "$tmp/up.err")
			break 2
		elif [ "$rc" -ne 0 ] || [ ! -d "$mnt" ]; then
			sed 's/^/    /' "$tmp/up.err" >&2
			die "slowdisk up --fs $fs failed (status $rc)"
		fi
		mkdir -p "$mnt/demo"
		case $us in
		1000) label="1ms flush" ;;
		4000) label="4ms flush" ;;
		*) label="${us}us flush" ;;
		esac
		label+=" $fs"
		[ -n "$snap_label" ] || { snap_dir=$mnt/demo/shared snap_label=$label; }
		for wl in $wls; do
			row "$mnt/demo" "$name" "$label" "$wl"
		done
		snap_dir=
		cd /
		bash "$slowdisk" down --name "$name" >/dev/null 2>&1 || true
	done
done
if [ -s "$tmp/gcstat.txt" ]; then
	echo
	echo "gcstat, one second into libgc's run of the shared log on the $snap_label disk:"
	sed 's/^/  /' "$tmp/gcstat.txt"
	echo
fi
if [ -n "$skip_slow" ]; then
	hint="; run 'sudo make demo' on a machine with /dev/fuse to see them"
	[ -n "$flushes" ] || hint=
	echo "skipped: the slow disks ($flushes us flush), where libgc helps: $skip_slow$hint"
fi

# ---- the machine's own disk ----

disk_dir=$(mktemp -d "$base/libgc-demo.XXXXXX")
# the mount's own name (stat -f names ext4 by its magic, "ext2/ext3")
fstype=$(findmnt -n -o FSTYPE -T "$disk_dir" 2>/dev/null || stat -f -c %T "$disk_dir")
m_p50=$(flush_p50 "$disk_dir")
row "$disk_dir" "" "this disk" shared "$pairs"
m_direct=$(awk -v d="$G_DIRECT" -v q="$G_REQ" 'BEGIN { if (q > 0) printf "%.0f", 100 * d / q; else print 0 }')
echo
echo "this disk: $fstype in $base, one 4 KiB write+fsync takes $(fmt_ms "${m_p50:-}") ms (p50)."
[ "$pairs" = 1 ] ||
	echo "Its row is the median of $pairs pairs, bare and libgc first by turns: ratios $ROW_RATIOS."
if [ "${m_direct:-0}" -ge 50 ]; then
	echo "libgc steps aside here: the disk's flush takes well under 1 ms, so there is little to"
	echo "gather, and libgc made direct calls (${m_direct}% of requests made their own real call)."
else
	echo "libgc grouped here: the disk's flush measured 1 ms or more, or its own timing found"
	echo "grouping faster (${m_direct}% of requests made their own real call)."
fi
case $fstype in
tmpfs | ramfs)
	echo "WARNING: $base is on $fstype, not a disk: set DEMO_DIR to a folder on a real disk."
	;;
esac

echo
echo "ops/s: durable writes (fs_mark: files) per second.  real syncs: fsync calls that reached"
echo "the kernel (bare: one per request).  req/sync: requests per real sync under libgc.  disk"
echo "flushes: cache flushes the slow disk served.  p50/p99: one write+fsync (fs_mark: its fsync)."
echo "With a file each, every file still needs its own real fsync; what libgc saves is disk"
echo "flushes, because those fsyncs share one journal commit."
exit "$status"
