#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench`: workloads run bare, under libgc, under libgc with policy=none
# and with fsync disabled, side by side on the machine's disk and a slow disk;
# medians, ratios against bare, goals, a Markdown table, a TSV and a plot.
#
# Settings (environment; see bench/README.md):
#   BENCH=quick|full|smoke   how much to run (quick by default)
#   BENCH_COUNTS, BENCH_SECS, BENCH_REPS, BENCH_MICRO_REPS   override the mode
#   BENCH_SLOW, BENCH_DISK   workloads per device ("" skips that device)
#   BENCH_DIR=/var/tmp       where the machine's-disk folder is made
#   BENCH_FLUSH_US=4000      flush latencies of the slow disk ("1000 4000": one
#                            slow disk per latency and filesystem)
#   BENCH_FS=ext4            the slow disk's filesystems: ext4, ext4-fc, xfs,
#                            btrfs ("ext4 xfs": one after the other)
#   BENCH_JOURNAL_MB=128     the slow disk's ext4 journal or xfs log (1 GiB image)
#   BENCH_CONDS              conditions to run (default: base libgc none nosync;
#                            base and libgc are always run)
#   BENCH_FSMARK_FILES       fs_mark files per process: a number, or auto
#                            (sized to last about BENCH_SECS); full: 1000
#   BENCH_OUT=bench/results  where the results go
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lib=$root/build/libgc.so
storm=$root/build/examples/fsync_storm
micro=$root/build/bench/microbench
slowdisk=$root/tests/slowdisk/slowdisk

all_wl="shared-t shared-p each-t each-p fsmark-p odsync-t odsync-p sysbench-t"
mode=${BENCH:-quick}
case $mode in
smoke)
	counts="2" secs=1 reps=1 mreps=1 mcalls=20000 fsm_files=auto
	slow_wl=$all_wl disk_wl=$all_wl
	;;
quick)
	counts="1 2 8 16" secs=1 reps=3 mreps=5 mcalls=100000 fsm_files=auto
	slow_wl="shared-t shared-p each-t fsmark-p odsync-t sysbench-t"
	disk_wl="shared-t each-t fsmark-p"
	;;
full)
	counts="1 2 4 8 16" secs=2 reps=5 mreps=9 mcalls=200000
	# fs_mark's own default: the command as people run it, about 10-20 s
	# a run on the slow disk
	fsm_files=1000
	slow_wl=$all_wl disk_wl=$all_wl
	;;
*)
	echo "bench: BENCH must be quick, full or smoke, not '$mode'" >&2
	exit 2
	;;
esac
counts=${BENCH_COUNTS:-$counts}
secs=${BENCH_SECS:-$secs}
reps=${BENCH_REPS:-$reps}
mreps=${BENCH_MICRO_REPS:-$mreps}
slow_wl=${BENCH_SLOW-$slow_wl}
disk_wl=${BENCH_DISK-$disk_wl}
base_dir=${BENCH_DIR:-/var/tmp}
flush_list=${BENCH_FLUSH_US:-4000}
fs_list=${BENCH_FS:-ext4}
journal_mb=${BENCH_JOURNAL_MB:-128}
fsm_files=${BENCH_FSMARK_FILES:-$fsm_files}
if [ "$fsm_files" = auto ]; then
	fsm_desc="FILES per process sized from a bare run to last about ${secs} s"
else
	fsm_desc="FILES = $fsm_files per process"
fi
out_dir=${BENCH_OUT:-$root/bench/results}
conds="base libgc none nosync"
if [ -n "${BENCH_CONDS+set}" ]; then
	conds="base libgc"
	for c in $BENCH_CONDS; do
		case $c in
		base | libgc) ;;
		none | nosync) conds+=" $c" ;;
		*) echo "bench: BENCH_CONDS takes base, libgc, none, nosync, not '$c'" >&2; exit 2 ;;
		esac
	done
fi

die() {
	echo "bench: $*" >&2
	exit 1
}

uint() {
	if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ]; then
		die "$1 must be a positive integer, got '$2'"
	fi
}
uint BENCH_SECS "$secs"
uint BENCH_REPS "$reps"
[ "$mreps" = 0 ] || uint BENCH_MICRO_REPS "$mreps"
for f in $flush_list; do uint BENCH_FLUSH_US "$f"; done
for f in $fs_list; do
	case $f in ext4 | ext4-fc | xfs | btrfs) ;; *) die "BENCH_FS: unknown filesystem '$f' (ext4, ext4-fc, xfs, btrfs)" ;; esac
done
uint BENCH_JOURNAL_MB "$journal_mb"
[ "$fsm_files" = auto ] || uint BENCH_FSMARK_FILES "$fsm_files"
for n in $counts; do uint BENCH_COUNTS "$n"; done
for w in $slow_wl $disk_wl; do
	[[ " $all_wl " == *" $w "* ]] || die "unknown workload '$w' (known: $all_wl)"
done
for f in "$lib" "$storm" "$micro"; do
	[ -e "$f" ] || die "$f is missing: run 'make' first"
done
for t in fs_mark sysbench eatmydata gnuplot; do
	command -v "$t" >/dev/null || die "$t is missing: run 'bash scripts/deps.sh bench'"
done
[ -d "$base_dir" ] || die "$base_dir is not a directory (set BENCH_DIR)"

# Only the settings of each condition reach the programs: libgc runs with
# its defaults, whatever the caller's environment says.
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

t_start=$(date +%s)
work=$(mktemp -d /tmp/libgc-bench.XXXXXX)
disk_dir=
shm_file=
slow_name=
slow_mnt=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	cd /
	[ -z "$disk_dir" ] || rm -rf "$disk_dir"
	[ -z "$shm_file" ] || rm -f "$shm_file"
	if [ -n "$slow_name" ]; then
		[ -z "$slow_mnt" ] || rm -rf "${slow_mnt:?}/bench" 2>/dev/null || true
		bash "$slowdisk" down --name "$slow_name" >&2 || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

host=$(uname -n)
host=${host%%.*}
mkdir -p "$out_dir"
stem=$out_dir/$(date +%F)-$host
[ "$mode" = quick ] || stem+=-$mode
if [ -e "$stem.md" ] || [ -e "$stem.tsv" ]; then
	i=2
	while [ -e "$stem.$i.md" ] || [ -e "$stem.$i.tsv" ]; do i=$((i + 1)); done
	stem+=.$i
fi
tsv=$stem.tsv
printf 'kind\tdevice\tworkload\tcount\tcondition\tmedian\tunit\tratio\tdelta\treal_per_req\truns\tgoal\tmet\n' >"$tsv"

log() {
	echo "$*" >&2
}

# csv " 1 2 3": "1,2,3" ("-" when empty), the runs column of the TSV.
csv() {
	awk -v s="$1" 'BEGIN { n = split(s, a, " "); for (i = 1; i <= n; i++) o = o (i > 1 ? "," : "") a[i]; print n ? o : "-" }'
}

# ---- small numeric helpers (awk does the floating point) ----

median() {
	tr ' ' '\n' | awk 'NF' | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# arith OP A B: A / B or A - B, or "-" when either is missing (or B is 0
# for a division).
arith() {
	if [ -z "$2" ] || [ -z "$3" ] || [ "$2" = - ] || [ "$3" = - ]; then
		echo -
		return
	fi
	awk -v op="$1" -v a="$2" -v b="$3" 'BEGIN {
		if (op == "/") print ((b == 0) ? "-" : a / b); else print a - b }'
}

fmt() { # fmt PRINTF-FORMAT VALUE
	if [ "$2" = - ] || [ -z "$2" ]; then echo -; else awk -v v="$2" "BEGIN { printf \"$1\", v }"; fi
}

# ---- running one program under one condition ----

# launch COND REPORT CMD...: runs CMD bare (base), under libgc with its
# defaults (libgc) or with policy=none (none), or under eatmydata (nosync),
# killed after 10 x SECS + 60 s or after the caller's $launch_lim.
launch() {
	local cond=$1 report=$2 lim=${launch_lim:-$((secs * 10 + 60))}
	shift 2
	case $cond in
	base) timeout -k 5 "$lim" "$@" ;;
	libgc) timeout -k 5 "$lim" env LD_PRELOAD="$lib" LIBGC_REPORT="$report" "$@" ;;
	none) timeout -k 5 "$lim" env LD_PRELOAD="$lib" LIBGC_REPORT="$report" \
		LIBGC_POLICY=none "$@" ;;
	nosync) timeout -k 5 "$lim" eatmydata "$@" ;;
	esac
}

# Sums libgc's exit-report lines: "<real syncs> <sync requests> <direct>".
report_sum() {
	awk -f "$root/bench/report_sum.awk" "$1"
}

unit_of() {
	case $1 in
	fsmark-*) echo files/s ;;
	sysbench-*) echo writes/s ;;
	*) echo ops/s ;;
	esac
}

# run_one DEVROOT WL N COND [FILES]: one run; leaves the throughput in R_VAL
# (empty on failure) and libgc's real syncs and requests in R_REAL, R_REQ.
run_one() {
	local top=$1 wl=$2 n=$3 cond=$4 files=${5:-} d rc=0 line f m attempt
	local launch_lim='' # launch's time limit for this run, when not by SECS
	local -a cmd
	R_VAL='' R_REAL='' R_REQ=''
	d=$top/run
	rm -rf "$d"
	mkdir -p "$d"
	case $wl in
	shared-* | each-* | odsync-*)
		f=${wl%-*} m=fsync
		[ "$f" = odsync ] && f=shared m=odsync
		cmd=("$storm" "-${wl#*-}" "$n" -f "$f" -s 4096 -m "$m" -d "$secs" -q -D "$d")
		;;
	fsmark-p)
		# relative: fs_mark takes directory names under 40 bytes only
		cmd=(fs_mark -S1 -s 4096 -t "$n" -n "$files" -d f -l "$work/fsmark.log")
		# a fixed file count is not bounded by SECS: a bare run at one
		# flush at a time is 1000 files in 10-20 s on the slow disk
		[ "$fsm_files" = auto ] || launch_lim=900
		;;
	sysbench-t)
		cmd=(sysbench fileio "${sb_opts[@]}" --file-test-mode=rndwr --file-fsync-freq=1
			--file-fsync-end=off --threads="$n" --time="$secs" --events=0 run)
		d=$top/sysbench
		;;
	esac
	for attempt in 1 2 3; do
		rc=0
		: >"$work/report"
		(cd "$d" && launch "$cond" "$work/report" "${cmd[@]}") >"$work/out" 2>"$work/err" ||
			rc=$?
		# fs_mark seeds each process's random file names with the
		# microseconds of its start: two processes woken together draw
		# the same names in one directory and the second unlink fails.
		# Such a run measured nothing valid; it is run again.
		if [ "$wl" = fsmark-p ] && [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ] &&
			grep -q 'Error in unlink of .*No such file' "$work/err"; then
			log "bench: fs_mark N=$n ($cond): two processes drew the same file names; again"
			fsmark_retries=$((fsmark_retries + 1))
			rm -rf "$d/f"
			continue
		fi
		break
	done
	case $wl in
	fsmark-p)
		R_VAL=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $4 ~ /^[0-9.]+$/ { v = $4 } END { print v }' \
			"$work/out")
		;;
	sysbench-t)
		R_VAL=$(awk '$1 == "writes/s:" { print $2 }' "$work/out")
		;;
	*)
		line=$(grep '^fsync_storm: workers=' "$work/out" | tail -n 1) || true
		[[ $line == *" errors=0"* ]] || line=
		R_VAL=$(sed -n 's/.* ops_per_s=\([^ ]*\).*/\1/p' <<<"$line")
		;;
	esac
	if [ "$rc" -ne 0 ] || [ -z "$R_VAL" ]; then
		log "bench: $wl N=$n ($cond) failed with status $rc: ${cmd[*]}"
		sed 's/^/    /' "$work/err" | tail -n 5 >&2
		R_VAL=
		failures=$((failures + 1))
	fi
	if [ "$cond" = libgc ] || [ "$cond" = none ]; then
		read -r R_REAL R_REQ _ < <(report_sum "$work/report")
	fi
	[ "$wl" = sysbench-t ] || rm -rf "$d"
	# Leave no dirty data to the next run (fsync disabled leaves plenty).
	sync -f "$top" 2>/dev/null || sync
}

# fs_mark has no time limit: size the run from a short bare run so that it
# lasts about $secs, the same file count for every condition of the cell.
fsmark_files() {
	local top=$1 n=$2 rate files
	if [ "$fsm_files" != auto ]; then
		echo "$fsm_files"
		return
	fi
	run_one "$top" fsmark-p "$n" base 16
	rate=${R_VAL:-100}
	files=$(awk -v r="$rate" -v s="$secs" -v n="$n" \
		'BEGIN { f = int(r * s / n); if (f < 16) f = 16; if (f > 200000) f = 200000; print f }')
	echo "$files"
}

# goal DEVICE WL N COND: the smallest acceptable ratio against base, or nothing.
goal() {
	local dev=$1 wl=$2 n=$3 cond=$4
	case $cond in
	none) echo 0.99 ;;
	libgc)
		if [[ $dev == slow-* ]]; then
			[ "$n" -ge 2 ] && [ "$n" -le 16 ] || return 0
			# per filesystem (slow-FS-FLUSH): ext4 as always; ext4 with
			# fast commits already groups its commits, so libgc must
			# never lose there; XFS and btrfs with a file each and
			# fs_mark as issue 27 set them
			case ${dev#slow-} in
			ext4-fc-*) echo 1.00 ;;
			xfs-* | btrfs-*)
				case $wl in
				shared-*) echo 1.90 ;;
				each-*) echo 1.70 ;;
				fsmark-*) echo 1.60 ;;
				esac
				;;
			*)
				case $wl in
				shared-*) echo 1.90 ;;
				each-* | fsmark-*) echo 1.80 ;;
				esac
				;;
			esac
		elif [[ $wl == shared-* ]] && [ "$n" -ge 8 ] && [ "$n" -le 16 ]; then
			echo 1.25
		else
			echo 0.97
		fi
		;;
	esac
	return 0
}

# cell DEV DEVROOT WL N: every condition, $reps times, alternating the order,
# then one TSV row per condition.
cell() {
	local dev=$1 top=$2 wl=$3 n=$4 r c files='' med basemed ratio g met rpr
	local -A vals=() real=() req=()
	local -a order
	[ "$wl" = fsmark-p ] && files=$(fsmark_files "$top" "$n")
	for ((r = 1; r <= reps; r++)); do
		if ((r % 2)); then order=(base libgc none nosync); else order=(nosync none libgc base); fi
		for c in "${order[@]}"; do
			[[ " $conds " == *" $c "* ]] || continue
			run_one "$top" "$wl" "$n" "$c" "$files"
			vals[$c]+=" ${R_VAL}"
			real[$c]=$((${real[$c]:-0} + ${R_REAL:-0}))
			req[$c]=$((${req[$c]:-0} + ${R_REQ:-0}))
		done
	done
	basemed=$(median <<<"${vals[base]}")
	basemed=${basemed:--}
	local progress="  $dev $wl N=$n:"
	for c in $conds; do
		med=$(median <<<"${vals[$c]}")
		med=${med:--}
		ratio=-
		[ "$c" = base ] || ratio=$(arith / "$med" "$basemed")
		[ "$ratio" = - ] || ratio=$(fmt %.3f "$ratio")
		rpr=-
		if [ "${req[$c]:-0}" -gt 0 ]; then
			rpr=$(fmt %.3f "$(arith / "${real[$c]}" "${req[$c]}")")
		fi
		g=$(goal "$dev" "$wl" "$n" "$c")
		met=
		if [ -n "$g" ] && [ "$ratio" != - ]; then
			met=$(awk -v r="$ratio" -v g="$g" 'BEGIN { print ((r >= g) ? "yes" : "no") }')
		fi
		printf 'throughput\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t%s\t%s\t%s\t%s\n' \
			"$dev" "$wl" "$n" "$c" "$med" "$(unit_of "$wl")" "$ratio" "$rpr" \
			"$(csv "${vals[$c]}")" "${g:+ratio>=$g}" "$met" >>"$tsv"
		progress+=" $c $(fmt %.0f "$med")"
		[ "$ratio" = - ] || progress+=" (${ratio}x)"
	done
	log "$progress"
}

# flush_latency DIR COUNT: median microseconds of a 4 KiB write + fsync.
flush_latency() {
	local line
	line=$("$storm" -t 1 -n "$2" -s 4096 -m fsync -q -D "$1" 2>/dev/null | tail -n 1) || true
	sed -n 's/.* p50_us=\([^ ]*\).*/\1/p' <<<"$line"
}

# device DEV DEVROOT WORKLOADS: every workload and count on one device.
device() {
	local dev=$1 top=$2 wl n
	if [[ " $3 " == *" sysbench-t "* ]]; then
		mkdir -p "$top/sysbench"
		(cd "$top/sysbench" && sysbench fileio "${sb_opts[@]}" prepare) >/dev/null ||
			die "sysbench prepare failed in $top/sysbench"
		sync -f "$top"
	fi
	for wl in $3; do
		for n in $counts; do
			# one worker: the same program as the shared log
			[[ $wl == each-* ]] && [ "$n" -eq 1 ] && continue
			cell "$dev" "$top" "$wl" "$n"
		done
	done
	rm -rf "$top/sysbench"
}

# Random 4 KiB writes over a few small files, each followed by fsync.
sb_opts=(--file-num=4 --file-total-size=64M --file-block-size=4096)
failures=0
fsmark_retries=0

# ---- the machine ----

kernel=$(uname -srm)
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}") || os=unknown
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "bench: $mode mode: counts {$counts}, ${secs} s per run, $reps repetitions, conditions: $conds"
log "bench: results will go to $stem.{md,tsv,png,svg}"
# A rough estimate: every run lasts about $secs s plus a little start-up.
runs=0
for w in $slow_wl $disk_wl; do
	for n in $counts; do
		[[ $w == each-* ]] && [ "$n" -eq 1 ] && continue
		runs=$((runs + reps * $(wc -w <<<"$conds")))
	done
done
log "bench: $runs runs of about ${secs} s: roughly $(((runs * (secs * 10 + 1) / 10 + 90) / 60)) min"
if [ "$fsm_files" != auto ] && [[ " $slow_wl " == *" fsmark-p "* ]]; then
	log "bench: plus fs_mark's $fsm_files files per process on the slow disk:" \
		"about $((fsm_files / 100 * 3 / 2)) s per run at one flush at a time"
fi

# ---- micro-costs on tmpfs ----

mkdir -p /dev/shm
shm_file=$(mktemp /dev/shm/libgc-bench.XXXXXX)
micro_row() { # WORKLOAD THREADS ARGS...
	local wl=$1 t=$2 r c med basemed delta ratio g met rc
	local -A vals=()
	local -a order
	shift 2
	for ((r = 1; r <= mreps; r++)); do
		if ((r % 2)); then order=(base libgc none nosync); else order=(nosync none libgc base); fi
		for c in "${order[@]}"; do
			rc=0
			launch "$c" "$work/report" "$micro" "$@" -t "$t" "$shm_file" \
				>"$work/out" 2>"$work/err" || rc=$?
			med=$(sed -n 's/.* ns_per_call=\([^ ]*\).*/\1/p' "$work/out")
			if [ "$rc" -ne 0 ] || [ -z "$med" ]; then
				log "bench: microbench $* ($c) failed with status $rc"
				sed 's/^/    /' "$work/err" | tail -n 5 >&2
				failures=$((failures + 1))
				continue
			fi
			vals[$c]+=" $med"
		done
	done
	basemed=$(median <<<"${vals[base]:-}")
	basemed=${basemed:--}
	local progress="  tmpfs $wl:"
	for c in $conds; do
		med=$(median <<<"${vals[$c]:-}")
		med=${med:--}
		delta=- ratio=-
		if [ "$c" != base ]; then
			delta=$(arith - "$med" "$basemed")
			ratio=$(arith / "$med" "$basemed")
			[ "$delta" = - ] || delta=$(fmt %.1f "$delta")
			[ "$ratio" = - ] || ratio=$(fmt %.3f "$ratio")
		fi
		g='' met=''
		if [[ $wl == write* ]] && { [ "$c" = libgc ] || [ "$c" = none ]; }; then
			g=25
			[ "$delta" = - ] ||
				met=$(awk -v d="$delta" 'BEGIN { print ((d <= 25) ? "yes" : "no") }')
		fi
		printf 'micro\ttmpfs\t%s\t%s\t%s\t%s\tns/call\t%s\t%s\t-\t%s\t%s\t%s\n' \
			"$wl" "$t" "$c" "$med" "$ratio" "$delta" "$(csv "${vals[$c]:-}")" \
			"${g:+delta<=$g}" "$met" >>"$tsv"
		progress+=" $c $(fmt %.0f "$med")"
		[ "$delta" = - ] || progress+=" ($(fmt %+.1f "$delta") ns)"
	done
	log "$progress"
}

if [ "$mreps" != 0 ]; then
	log "bench: micro-costs on tmpfs (ns per call, $mreps runs each)"
	tmpfs_lat=$(flush_latency /dev/shm 2000)
	micro_row write64 1 write -n "$mcalls" -s 64
	micro_row write1 1 write -n "$mcalls" -s 1
	micro_row fsync 1 fsync -n $((mcalls / 5)) -s 64
	micro_row fsync 4 fsync -n $((mcalls / 10)) -s 64
fi
rm -f "$shm_file"
shm_file=

# ---- the machine's disk ----

disk_info="skipped"
if [ -n "$disk_wl" ]; then
	disk_dir=$(mktemp -d "$base_dir/libgc-bench.XXXXXX")
	disk_fs=$(findmnt -n -o FSTYPE -T "$disk_dir" || stat -f -c %T "$disk_dir")
	disk_src=$(findmnt -n -o SOURCE -T "$disk_dir" || echo ?)
	disk_opts=$(findmnt -n -o OPTIONS -T "$disk_dir" || echo ?)
	disk_lat=$(flush_latency "$disk_dir" 200)
	disk_info="$base_dir: $disk_fs on $disk_src ($disk_opts)"
	log "bench: machine's disk, $disk_info, 4 KiB write+fsync p50 ${disk_lat:-?} µs"
	case $disk_fs in
	tmpfs | ramfs) log "bench: WARNING: $base_dir is $disk_fs, not a disk (set BENCH_DIR)" ;;
	esac
	device disk "$disk_dir" "$disk_wl"
	rm -rf "$disk_dir"
	disk_dir=
fi

# ---- the slow disk ----

slow_info="skipped"
slow_rows=()
for fs in $fs_list; do
	for flush_us in $flush_list; do
		[ -n "$slow_wl" ] || break 2
		slow_name=bench-$$
		rc=0
		# its last line on stdout is the mount point
		# A journal (xfs: log) as mkfs gives a 16-32 GiB filesystem: the
		# 16 MiB mke2fs gives a 512 MiB image fills within seconds of
		# fsync-heavy work, and its checkpoints then take a third of the
		# flushes, bare or not. btrfs has no journal to size.
		jopt=(--journal-mb "$journal_mb")
		[ "$fs" != btrfs ] || jopt=()
		slow_mnt=$(bash "$slowdisk" up --name "$slow_name" --fs "$fs" --flush-us "$flush_us" \
			--size-mb 1024 "${jopt[@]}") || rc=$?
		slow_mnt=$(tail -n 1 <<<"$slow_mnt")
		if [ "$rc" -eq 77 ]; then
			slow_info="skipped: the slow disk needs root and /dev/fuse"
			log "bench: $slow_info"
			slow_name='' slow_mnt=''
			break 2
		elif [ "$rc" -ne 0 ] || [ ! -d "$slow_mnt" ]; then
			die "slowdisk up --fs $fs failed (status $rc)"
		fi
		mkdir -p "$slow_mnt/bench"
		slow_lat=$(flush_latency "$slow_mnt/bench" 50)
		what="$fs${jopt[*]:+ (${journal_mb} MiB journal)} on a loop device over a FUSE file, flush ${flush_us} µs"
		log "bench: slow disk, $what, 4 KiB write+fsync p50 ${slow_lat:-?} µs"
		device "slow-$fs-$flush_us" "$slow_mnt/bench" "$slow_wl"
		slow_flushes=$(bash "$slowdisk" status --name "$slow_name" |
			sed -n 's/^flush_avg_us=//p')
		slow_rows+=("| slow disk slow-$fs-$flush_us | $what${slow_flushes:+; the daemon saw flushes of $slow_flushes µs on average} | ${slow_lat:+$slow_lat µs} |")
		rm -rf "${slow_mnt:?}/bench"
		bash "$slowdisk" down --name "$slow_name" >&2
		slow_name='' slow_mnt=''
	done
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed=$(($(date +%s) - t_start))

# ---- the report ----

# Canonical order and names of the workloads, for the table and the plot.
wl_label() {
	case $1 in
	shared-t) echo "shared log, threads" ;;
	shared-p) echo "shared log, processes" ;;
	each-t) echo "a file each, threads" ;;
	each-p) echo "a file each, processes" ;;
	fsmark-p) echo "fs_mark -S1 (processes)" ;;
	odsync-t) echo "O_DSYNC writers, threads" ;;
	odsync-p) echo "O_DSYNC writers, processes" ;;
	sysbench-t) echo "sysbench rndwr fsync-freq=1 (threads)" ;;
	esac
}
labels=$(for w in $all_wl; do printf '%s|%s;' "$w" "$(wl_label "$w")"; done)

# Markdown tables from the TSV, one per device, and the micro-costs.
render_tables() {
	awk -F"\t" -v labels="$labels" -v order="$all_wl" '
	# "-": every run failed; "": the condition was not run (BENCH_CONDS)
	function num(v, f) { return v == "" ? "-" : v == "-" ? "failed" : sprintf(f, v) }
	# median and range of the per-repetition ratios libgc/base: each
	# repetition ran both back to back, so slow drifts of the machine
	# cancel out of each ratio
	function paired(b, g,   nb, ng, ab, ag, i, j, n, r, t) {
		nb = split(b, ab, ","); ng = split(g, ag, ",")
		n = 0
		for (i = 1; i <= nb && i <= ng; i++)
			if (ab[i] + 0 > 0 && ag[i] != "-" && ag[i] != "")
				r[++n] = ag[i] / ab[i]
		if (n < 2) return "-"
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
		return sprintf("%.2f× (%.2f–%.2f)", n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2, r[1], r[n])
	}
	function rat(r, g, m,   s) {
		if (r == "-" || r == "") return "-"
		s = sprintf("%.2f×", r)
		if (m == "no") { sub(/^ratio>=/, "", g); s = s " ✗ (goal ≥ " g "×)" }
		return s
	}
	BEGIN {
		n = split(labels, l, ";")
		for (i = 1; i <= n; i++) { split(l[i], kv, "|"); name[kv[1]] = kv[2] }
		nw = split(order, worder, " ")
	}
	NR == 1 { next }
	$1 == "throughput" {
		if (!($2 in dseen)) { dseen[$2] = 1; devs[++ndev] = $2 }
		k = $2 SUBSEP $3 SUBSEP $4
		if (!(k in seen)) { seen[k] = 1; cnt[$2 SUBSEP $3] = cnt[$2 SUBSEP $3] " " $4 }
		med[k, $5] = $6; ratio[k, $5] = $8; rpr[k, $5] = $10; runs[k, $5] = $11
		goal[k, $5] = $12; met[k, $5] = $13; unit[$3] = $7
		# spread of the runs: (max - min) / median, largest over conditions
		m = split($11, a, ",")
		if (m > 1 && $6 > 0) {
			lo = hi = a[1] + 0
			for (i = 2; i <= m; i++) { if (a[i] + 0 < lo) lo = a[i] + 0; if (a[i] + 0 > hi) hi = a[i] + 0 }
			s = (hi - lo) / $6
			if (s > spr[k]) spr[k] = s
		}
	}
	$1 == "micro" {
		k = $3 SUBSEP $4
		if (!(k in mseen)) { mseen[k] = 1; morder[++nm] = k }
		med[k, $5] = $6; delta[k, $5] = $9; goal[k, $5] = $12; met[k, $5] = $13
	}
	END {
		for (d = 1; d <= ndev; d++) {
			dev = devs[d]; any = 0
			if (dev == "disk") title[dev] = "The machine\047s disk"
			else {
				np = split(dev, dp, "-"); fl = dp[np]
				fsn = substr(dev, 6, length(dev) - 6 - length(fl))
				title[dev] = "Slow disk: " fsn ", flush " fl " µs (FUSE + loop)"
			}
			for (w = 1; w <= nw; w++) if ((dev SUBSEP worder[w]) in cnt) any = 1
			if (!any) continue
			printf "\n### %s\n\n", title[dev]
			print "| workload | N | base | libgc | ×base | paired ×base (range) | real/req | policy=none | ×base | fsync off | ×base | spread |"
			print "|---|---:|---:|---:|---|---|---:|---:|---|---:|---:|---:|"
			for (w = 1; w <= nw; w++) {
				wl = worder[w]
				if (!((dev SUBSEP wl) in cnt)) continue
				nc = split(cnt[dev SUBSEP wl], cs, " ")
				for (c = 1; c <= nc; c++) {
					k = dev SUBSEP wl SUBSEP cs[c]
					printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
						c == 1 ? name[wl] " (" unit[wl] ")" : "", cs[c],
						num(med[k, "base"], "%.0f"),
						num(med[k, "libgc"], "%.0f"), rat(ratio[k, "libgc"], goal[k, "libgc"], met[k, "libgc"]),
						paired(runs[k, "base"], runs[k, "libgc"]),
						rpr[k, "libgc"] == "-" ? "-" : sprintf("%.2f", rpr[k, "libgc"]),
						num(med[k, "none"], "%.0f"), rat(ratio[k, "none"], goal[k, "none"], met[k, "none"]),
						num(med[k, "nosync"], "%.0f"), rat(ratio[k, "nosync"], "", ""),
						(k in spr) ? sprintf("%.0f%%", 100 * spr[k]) : "-"
				}
			}
		}
		if (nm) {
			print "\n### Micro-costs on tmpfs (ns per call, median)\n"
			print "| call | threads | base | libgc | added | policy=none | added | fsync off | added |"
			print "|---|---:|---:|---:|---|---:|---|---:|---|"
			for (i = 1; i <= nm; i++) {
				k = morder[i]; split(k, kk, SUBSEP)
				cl = kk[1] == "write64" ? "write() 64 B" : kk[1] == "write1" ? "write() 1 B" : "fsync() after a 64 B write"
				row = sprintf("| %s | %s | %s", cl, kk[2], num(med[k, "base"], "%.1f"))
				split("libgc none nosync", cc, " ")
				for (j = 1; j <= 3; j++) {
					dd = delta[k, cc[j]]
					ds = dd == "-" || dd == "" ? "-" : sprintf("%+.1f", dd)
					if (met[k, cc[j]] == "no") ds = ds " ✗ (goal ≤ 25)"
					row = row sprintf(" | %s | %s", num(med[k, cc[j]], "%.1f"), ds)
				}
				print row " |"
			}
		}
	}' "$tsv"
}

# One row per slow disk (filesystem and flush), one column per workload and
# count: bare -> libgc (ratio), for comparing filesystems at a glance.
fs_table() {
	awk -F'\t' -v labels="$labels" '
	BEGIN { n = split(labels, l, ";"); for (i = 1; i <= n; i++) { split(l[i], kv, "|"); name[kv[1]] = kv[2] } }
	$1 == "throughput" && $2 ~ /^slow-/ {
		if (!($2 in ds)) { ds[$2] = 1; dev[++nd] = $2 }
		c = $3 SUBSEP $4
		if (!(c in cs)) { cs[c] = 1; col[++nc] = c }
		v[$2, c, $5] = $6; r[$2, c, $5] = $8
	}
	END {
		if (!nd || nd < 2) exit
		print "\n### Filesystems side by side (libgc / bare, medians)\n"
		h = "| filesystem | flush µs |"; u = "|---|---:|"
		for (j = 1; j <= nc; j++) { split(col[j], cc, SUBSEP); h = h " " name[cc[1]] ", " cc[2] " |"; u = u "---:|" }
		print h; print u
		for (i = 1; i <= nd; i++) {
			np = split(dev[i], dp, "-"); fl = dp[np]
			row = "| " substr(dev[i], 6, length(dev[i]) - 6 - length(fl)) " | " fl " |"
			for (j = 1; j <= nc; j++) {
				b = v[dev[i], col[j], "base"]; g = v[dev[i], col[j], "libgc"]; x = r[dev[i], col[j], "libgc"]
				if (b == "" || g == "" || b == "-" || g == "-") row = row " - |"
				else row = row sprintf(" %.0f → %.0f (%.2f×) |", b, g, x)
			}
			print row
		}
	}' "$tsv"
}

goal_summary() {
	awk -F'\t' 'NR > 1 && $13 != "" {
		n++
		if ($13 == "no") {
			bad++
			g = $12
			sub(/^ratio>=/, "≥ ", g); sub(/^delta<=/, "≤ +", g)
			if ($1 == "micro")
				miss = miss sprintf("- micro %s, %s thread(s), %s: %+.1f ns per call (goal %s ns)\n",
					$3, $4, $5, $9, g)
			else
				miss = miss sprintf("- %s, %s, N=%s, %s: %.2f× (goal %s×)\n",
					$2 == "disk" ? "machine\047s disk" : $2, $3, $4, $5, $8, g)
		}
	}
	END {
		printf "%d cells checked against a goal, %d missed.\n", n, bad
		if (bad) printf "\n%s", miss
	}' "$tsv"
}

# ---- the plot: a top row of libgc/base ratios per device, then throughput
# against workers, a panel per device and workload, a line per condition ----

dev_title() {
	case $1 in
	slow-*) local f=${1#slow-}; echo "slow disk, ${f%-*}, ${f##*-} µs flush" ;;
	*) echo "machine's disk" ;;
	esac
}

# xaxis DATAFILE: tics at the counts of the first column, log 2 range.
xaxis() {
	echo "set xtics ($(awk '{ printf "%s\"%s\" %s", (NR > 1 ? ", " : ""), $1, $1 }' "$1"))"
	echo "set xrange [$(awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%g:%g", lo / 1.3, hi * 1.3 }' "$1")]"
}

plot() {
	local gp=$work/plot.gp dat wl dev rows cols col i cmd
	# one colour per workload, in the order of $all_wl
	local -a wl_colors=('#1f77b4' '#17becf' '#ff7f0e' '#d62728' '#2ca02c' '#9467bd'
		'#8c564b' '#e377c2')
	local -a devs=() wls=()
	mapfile -t devs < <(awk -F'\t' '$1 == "throughput" && !($2 in s) { s[$2] = 1; print $2 }' "$tsv")
	for wl in $all_wl; do
		awk -F'\t' -v w="$wl" '$1 == "throughput" && $3 == w { f = 1 } END { exit !f }' "$tsv" &&
			wls+=("$wl")
	done
	[ ${#devs[@]} -gt 0 ] || return 1
	cols=${#devs[@]} rows=$((${#wls[@]} + 1))
	{
		echo "set multiplot layout $rows,$cols"
		echo "set grid"
		echo "set key below horizontal maxrows 1 font ',8' samplen 2"
		echo "set termoption noenhanced"
		echo "set xlabel 'threads / processes' font ',8' offset 0,0.6"
		echo "set tics font ',8'"
		echo "set logscale x 2"
		echo "set style line 1 lc rgb '#000000' lw 2 pt 7 ps 0.6"
		echo "set style line 2 lc rgb '#0060c0' lw 2 pt 5 ps 0.6"
		echo "set style line 3 lc rgb '#20a040' lw 1.5 pt 9 ps 0.6 dt 2"
		echo "set style line 4 lc rgb '#909090' lw 1.5 pt 13 ps 0.6 dt 3"
		# top row: libgc / base, one line per workload
		for dev in "${devs[@]}"; do
			dat=$work/plot.$dev.ratio.dat
			awk -F'\t' -v d="$dev" -v order="$all_wl" '
			BEGIN { nw = split(order, wo, " ") }
			$1 == "throughput" && $2 == d && $5 == "libgc" {
				if (!($4 in seen)) { seen[$4] = 1; ns[++n] = $4 }
				r[$4, $3] = ($8 == "-" ? "NaN" : $8)
			}
			END {
				# sort the counts numerically (workloads may list them apart)
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
					if (ns[j] + 0 < ns[i] + 0) { t = ns[i]; ns[i] = ns[j]; ns[j] = t }
				for (i = 1; i <= n; i++) {
					line = ns[i]
					for (w = 1; w <= nw; w++)
						line = line " " ((ns[i], wo[w]) in r ? r[ns[i], wo[w]] : "NaN")
					print line
				}
			}' "$tsv" >"$dat"
			echo "set title \"$(dev_title "$dev"): libgc / base\" font ',9' noenhanced"
			echo "set key below horizontal maxrows 3 font ',7' samplen 1.5"
			echo "set ylabel '× base' font ',8'"
			echo "unset logscale y"
			echo "set yrange [0:*]"
			xaxis "$dat"
			cmd="plot 1 w l lc rgb '#000000' lw 1 dt 2 notitle"
			col=2
			for wl in $all_wl; do
				if [[ " ${wls[*]} " == *" $wl "* ]] &&
					awk -v c="$col" '$c != "NaN" { f = 1 } END { exit !f }' "$dat"; then
					cmd+=", '$dat' u 1:$col w lp lw 1.5 lc rgb '${wl_colors[col - 2]}'"
					cmd+=" pt $((col + 3)) ps 0.6 t '$(wl_label "$wl")'"
				fi
				col=$((col + 1))
			done
			echo "$cmd"
		done
		echo "set autoscale y"
		echo "set key below horizontal maxrows 1 font ',8' samplen 2"
		echo "set logscale y 10"
		for wl in "${wls[@]}"; do
			for dev in "${devs[@]}"; do
				dat=$work/plot.$dev.$wl.dat
				awk -F'\t' -v d="$dev" -v w="$wl" '
				$1 == "throughput" && $2 == d && $3 == w {
					if (!($4 in seen)) { seen[$4] = 1; ns[++n] = $4 }
					v[$4, $5] = ($6 == "-" ? "NaN" : $6)
				}
				END {
					for (i = 1; i <= n; i++)
						print ns[i], v[ns[i], "base"], v[ns[i], "libgc"], v[ns[i], "none"], v[ns[i], "nosync"]
				}' "$tsv" >"$dat"
				# a panel with nothing to draw (not run, or every run
				# failed) stays empty
				if ! awk '$2 $3 $4 $5 != "NaNNaNNaNNaN" { f = 1 } END { exit !f }' "$dat"; then
					echo "set multiplot next"
					continue
				fi
				echo "set title \"$(dev_title "$dev"): $(wl_label "$wl")\" font ',9' noenhanced"
				echo "set ylabel '$(unit_of "$wl")' font ',8'"
				xaxis "$dat"
				echo "plot '$dat' u 1:2 w lp ls 1 t 'base', '' u 1:3 w lp ls 2 t 'libgc'," \
					"'' u 1:4 w lp ls 3 t 'policy=none', '' u 1:5 w lp ls 4 t 'fsync off'"
			done
		done
		echo "unset multiplot"
	} >"$gp.body"
	local w=$((cols * 560)) h=$((rows * 360))
	for i in png svg; do
		{
			if [ $i = png ]; then
				echo "set terminal pngcairo size $w,$h font 'DejaVu Sans,9'"
			else
				echo "set terminal svg size $w,$h dynamic font 'DejaVu Sans,9'"
			fi
			echo "set output '$stem.$i'"
			cat "$gp.body"
		} >"$gp"
		if ! gnuplot "$gp" 2>"$work/gnuplot.err"; then
			cat "$work/gnuplot.err" >&2
			return 1
		fi
	done
}

plotted=yes
plot || plotted=no

{
	echo "# libgc benchmark — $(date '+%F %H:%M') on $host ($mode)"
	echo
	echo "## Machine"
	echo
	echo "- CPU: $cpu, $(nproc) cores; memory $mem"
	echo "- kernel: $kernel; $os"
	echo "- load average at start $load_start, at end $load_end (other work makes the numbers noisy)"
	echo "- library: build/libgc.so built $(date -r "$lib" '+%F %H:%M')"
	echo
	echo "## Devices (flush latency: median of one 4 KiB write + fsync, single thread)"
	echo
	echo "| device | what | write+fsync p50 |"
	echo "|---|---|---:|"
	echo "| tmpfs | /dev/shm (micro-costs) | ${tmpfs_lat:-?} µs |"
	if [ -n "$disk_wl" ]; then
		echo "| machine's disk | $disk_info | ${disk_lat:+$disk_lat µs} |"
	fi
	if [ ${#slow_rows[@]} -gt 0 ]; then
		printf '%s\n' "${slow_rows[@]}"
	elif [ -n "$slow_wl" ]; then
		echo "| slow disk | $slow_info | |"
	fi
	echo
	echo "## Settings"
	echo
	echo "- mode \`$mode\`: counts $counts; ${secs} s per run; $reps runs per cell, median; micro-costs $mreps runs"
	echo "- conditions: **base** (bare program), **libgc** (LD_PRELOAD, defaults)," \
		"**policy=none** (LD_PRELOAD, LIBGC_POLICY=none: interposition alone)," \
		"**fsync off** (eatmydata: not durable, the ceiling)"
	echo "- order alternates between repetitions (base, libgc, none, off; then off, none, libgc, base);" \
		"the filesystem is synced after every run, untimed"
	echo "- workloads: fsync_storm 4 KiB writes (shared: one file appended by all; each: a file" \
		"per worker; O_DSYNC: one file opened O_DSYNC); fs_mark -S1 -s 4096 -t N -n FILES, $fsm_desc;" \
		"sysbench fileio rndwr" \
		"${sb_opts[*]} --file-fsync-freq=1 (writes/s)"
	echo "- total time $((elapsed / 60)) min $((elapsed % 60)) s"
	echo
	echo "## Results"
	echo
	echo "Medians. ×base = condition / base. paired ×base = median (and range) of the ratios" \
		"libgc / base of each repetition, whose runs followed each other." \
		"real/req = real syncs that reached the kernel per" \
		"sync request under libgc (from LIBGC_REPORT). spread = largest (max − min) / median of" \
		"the runs of one condition in the row. ✗ marks a cell that misses its goal."
	render_tables
	fs_table
	echo
	echo "## Goals"
	echo
	echo "- slow disk, shared log (threads or processes): libgc ≥ 1.9× base at 2–16 (ext4, XFS, btrfs)"
	echo "- slow disk, a file each and fs_mark: libgc ≥ 1.8× base at 2–16 on ext4; on XFS and btrfs" \
		"a file each ≥ 1.7×, fs_mark ≥ 1.6×"
	echo "- slow disk with ext4 fast commits (ext4-fc): libgc ≥ 1.0× base in every cell at 2–16"
	echo "- machine's disk: libgc ≥ 0.97× base at every count; ≥ 1.25× at 8–16 on the shared log"
	echo "- policy=none ≥ 0.99× base everywhere; write() adds ≤ 25 ns per call (libgc and policy=none)"
	echo
	goal_summary
	if [ "$failures" -gt 0 ]; then
		echo
		echo "**$failures runs failed** (shown as failed or left out of the medians; the run printed why on stderr)."
	fi
	if [ "$fsmark_retries" -gt 0 ]; then
		echo
		echo "$fsmark_retries fs_mark runs were repeated: two of its processes drew the same" \
			"random file names (fs_mark seeds them with the start time in µs) and the run" \
			"failed at unlink."
	fi
	if [ "$plotted" = yes ]; then
		echo
		echo "## Plot"
		echo
		echo "![throughput against threads/processes]($(basename "$stem").png)"
		echo
		echo "Log scales; one panel per device and workload; one line per condition."
	fi
} >"$stem.md.tmp"
mv "$stem.md.tmp" "$stem.md"

echo
sed -n '/^## Results/,$p' "$stem.md"
echo
echo "bench: results in $stem.md"
echo "bench:            $stem.tsv"
[ "$plotted" = yes ] && echo "bench:            $stem.png, $stem.svg"
echo "bench: $mode run took $((elapsed / 60)) min $((elapsed % 60)) s"
[ "$failures" -eq 0 ] || exit 1
