# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared by the recipes (sourced): slow disks that always come down (also on
# Ctrl-C), runs bare / under libgc / under eatmydata, the sum of libgc's exit
# reports, and the table every recipe prints.
#
# Settings (environment):
#   RECIPE_FLUSH_US="1000 4000"  flush latencies of the slow disks
#   RECIPE_FS=ext4               the slow disks' filesystem (ext4, ext4-fc, xfs,
#                                btrfs; all.sh takes a list)
#   RECIPE_SECS=2                seconds per timed run
#   RECIPE_ROUNDS=1              pairs of a bare and a libgc run a row, in
#                                alternating order; above 1 the row shows
#                                medians and the range of the pairs' ratios
#   RECIPE_EMD=1                 also run under eatmydata (the fsync-off ceiling)
#   RECIPE_LIB=build/libgc.so    the library to preload
#   RECIPE_REPORTS=DIR           keep each row's libgc exit reports there
#   RECIPE_GC_ENV="LIBGC_POLICY=none"  settings the libgc runs add (LIBGC_*=...)
set -euo pipefail

R_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
R_SLOWDISK=$R_ROOT/tests/slowdisk/slowdisk
R_FLUSHES=${RECIPE_FLUSH_US-1000 4000}
R_FS=${RECIPE_FS:-ext4}
R_SECS=${RECIPE_SECS:-2}
R_EMD=${RECIPE_EMD:-1}
R_LIB=${RECIPE_LIB:-$R_ROOT/build/libgc.so}
R_NAME=${R_NAME:-recipe}
R_PY=/usr/bin/python3

r_die() {
	echo "$R_NAME: $*" >&2
	exit 1
}

r_note() {
	echo "$R_NAME: $*" >&2
}

R_ROUNDS=${RECIPE_ROUNDS:-1}
[[ $R_SECS =~ ^[1-9][0-9]*$ ]] || r_die "RECIPE_SECS must be a positive integer, not '$R_SECS'"
[[ $R_ROUNDS =~ ^[1-9][0-9]*$ ]] || r_die "RECIPE_ROUNDS must be a positive integer, not '$R_ROUNDS'"
[ -e "$R_LIB" ] || r_die "$R_LIB is missing: run make (make recipes builds it)"
R_LIB=$(cd "$(dirname "$R_LIB")" && pwd)/$(basename "$R_LIB")
[ "$(id -u)" -eq 0 ] || r_die "needs root (the slow disk: loop devices, mounts)"
[ -c /dev/fuse ] || r_die "needs /dev/fuse (the slow disk)"
[ -x "$R_ROOT/build/tests/slowdisk/slowdiskd" ] ||
	r_die "build/tests/slowdisk/slowdiskd is missing (make recipes builds it)"
command -v eatmydata >/dev/null || R_EMD=0
read -r -a R_GC_ENV <<<"${RECIPE_GC_ENV:-}"
for v in "${R_GC_ENV[@]}"; do
	[[ $v =~ ^LIBGC_[A-Z_]+=[^[:space:]]*$ ]] ||
		r_die "RECIPE_GC_ENV holds LIBGC_NAME=VALUE words only, not '$v'"
done

# The runs see libgc's defaults only (and RECIPE_GC_ENV), whatever the
# caller's environment says.
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

R_TMP=$(mktemp -d "/tmp/libgc-$R_NAME.XXXXXX")
chmod 0755 "$R_TMP"
R_DISKS=()
R_CLEANUPS=()
R_STATUS=0

# r_on_exit CMD...: run at exit (before the disks come down), last first.
r_on_exit() {
	R_CLEANUPS+=("$*")
}

r_cleanup() {
	local rc=$? i n
	trap - EXIT INT TERM
	set +e
	cd /
	for ((i = ${#R_CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${R_CLEANUPS[i]}" >/dev/null 2>&1
	done
	for n in "${R_DISKS[@]+"${R_DISKS[@]}"}"; do
		bash "$R_SLOWDISK" down --name "$n" >/dev/null 2>&1 ||
			echo "$R_NAME: could not tear down slow disk '$n': run $R_SLOWDISK down --name $n" >&2
	done
	rm -rf "$R_TMP"
	[ "$rc" -ne 0 ] || rc=$R_STATUS
	exit "$rc"
}
trap r_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# r_disk_up FLUSH_US: a fresh 1 GiB slow disk of $R_FS (128 MiB journal or
# log, as the benchmark uses) with its own name; sets R_MNT and R_DISK.
r_disk_up() {
	local us=$1 out rc=0 j=(--journal-mb 128)
	R_DISK=$R_NAME-$$-$us
	R_DISKS+=("$R_DISK")
	[ "$R_FS" != btrfs ] || j=()
	out=$(bash "$R_SLOWDISK" up --name "$R_DISK" --fs "$R_FS" --flush-us "$us" --size-mb 1024 \
		"${j[@]}" 2>"$R_TMP/up.err") || rc=$?
	R_MNT=$(tail -n 1 <<<"$out")
	if [ "$rc" -ne 0 ] || [ ! -d "$R_MNT" ]; then
		sed 's/^/    /' "$R_TMP/up.err" >&2
		r_die "slowdisk up failed (status $rc)"
	fi
	chmod 0755 "$R_MNT"
}

r_disk_down() {
	cd /
	bash "$R_SLOWDISK" down --name "$R_DISK" >/dev/null 2>&1 || true
}

# The flushes the current disk has served so far.
r_flushes() {
	bash "$R_SLOWDISK" status --name "$R_DISK" 2>/dev/null | sed -n 's/^flushes=//p'
}

# r_env MODE REPORT: the command prefix of a run: bare, libgc or eatmydata.
# Printed one word a line, for mapfile. The libgc run r_measure counts with
# (R_COUNTING=1) writes each process's exit report to the file REPORT; the
# timed ones write none, as a user's run: a report costs a short process
# tens of microseconds at exit (its file opened and appended to), a few
# percent of a maildrop delivery.
R_COUNTING=0
r_env() {
	local -a rep=()
	[ "$R_COUNTING" != 1 ] || rep=("LIBGC_REPORT=$2")
	case $1 in
	bare) printf '%s\n' env ;;
	libgc) printf '%s\n' env "LD_PRELOAD=$R_LIB" "${rep[@]}" "${R_GC_ENV[@]}" ;;
	eatmydata) printf '%s\n' eatmydata ;;
	esac
}

# r_report_sum FILE: "<real syncs> <sync requests> <direct>" summed over every
# process's exit-report line (a file: daemons and tools that close stderr
# still write it).
r_report_sum() {
	[ -s "$1" ] || { echo "0 0 0"; return 0; }
	awk -f "$R_ROOT/bench/report_sum.awk" "$1"
}

r_label() {
	local l
	case $1 in
	1000) l=1ms ;;
	4000) l=4ms ;;
	*) l=${1}us ;;
	esac
	# another filesystem than ext4 is named in the flush column
	[ "$R_FS" = ext4 ] && echo "$l" || echo "$l $R_FS"
}

# The table's header. A recipe whose runs are not $R_SECS long (a server's:
# PostgreSQL's, MariaDB's) sets R_RUN_SECS to their length.
R_FMT='| %-11s | %-34s | %8s | %8s | %6s | %9s | %8s | %8s | %13s | %s\n'
r_header() {
	local what="libgc ($(git -C "$R_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'))"
	# another library, or settings of the runs' own: the table is theirs
	[ "$R_LIB" = "$R_ROOT/build/libgc.so" ] || what=$R_LIB
	[ ${#R_GC_ENV[@]} -eq 0 ] || what+=" with ${R_GC_ENV[*]}"
	echo
	echo "$R_NAME: bare vs $what" \
		"on the slow disk, ${R_RUN_SECS:-$R_SECS} s runs$([ "$R_ROUNDS" = 1 ] ||
			echo ", medians of $R_ROUNDS alternating pairs (ratio: median, lowest-highest pair)")"
	# shellcheck disable=SC2059
	printf "$R_FMT" flush workload "bare/s" "libgc/s" ratio "eatmydata" "syncs" "req/sync" "flushes" "check |"
	# shellcheck disable=SC2059
	printf "$R_FMT" ----------- ---------------------------------- -------- -------- ------ --------- -------- -------- ------------- "--- |"
}

# r_row FLUSH LABEL BARE LIBGC EMD REPORTFILE FLUSHES CHECK [RATIO]: one
# table line. syncs and req/sync are libgc's real syncs and requests per real
# sync; flushes is what the disk served during the libgc run (bare run in
# brackets). RATIO, when given, replaces LIBGC / BARE (r_measure's pairs).
r_row() {
	local ratio=${9:-} real req rps
	read -r real req _ < <(r_report_sum "$6")
	[ -s "$6" ] || real=-
	if [ -n "${RECIPE_REPORTS:-}" ]; then
		mkdir -p "$RECIPE_REPORTS"
		cp "$6" "$RECIPE_REPORTS/$R_NAME-$(r_label "$1")-$(tr -c 'A-Za-z0-9\n' _ <<<"$2" | tr -s _).report"
	fi
	[ -n "$ratio" ] || ratio=$(r_ratio "$4" "$3")
	rps=$(awk -v q="$req" -v r="$real" 'BEGIN { if (r > 0) printf "%.1f", q / r; else print "-" }')
	case $8 in ok*) ;; *) R_STATUS=1 ;; esac
	# shellcheck disable=SC2059
	printf "$R_FMT" "$(r_label "$1")" "$2" "${3:--}" "${4:--}" "$ratio" "${5:--}" "$real" "$rps" "$7" "$8 |"
}

# r_ratio LIBGC BARE [FORMAT]: LIBGC / BARE in FORMAT ("%.2fx": "1.23x"), or
# "-" where either is missing.
r_ratio() {
	awk -v g="$1" -v b="$2" -v f="${3:-%.2fx}" 'BEGIN { if (b > 0 && g != "") printf f, g / b; else print "-" }'
}

# r_median [-r] FORMAT NUMBER...: the median of the numbers in FORMAT; with
# -r, " (lowest-highest)" after it when there are several. Nothing for no
# number.
r_median() {
	local range=0 fmt
	[ "$1" != -r ] || { range=1; shift; }
	fmt=$1
	shift
	printf '%s\n' "$@" | { grep -E '^[0-9.]+$' || true; } | sort -g |
		awk -v f="$fmt" -v range="$range" '{ v[NR] = $1 } END {
			if (!NR) exit
			printf f, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			if (range && NR > 1) printf " (%.2f-%.2f)", v[1], v[NR] }'
}

# r_rate COUNT SECONDS(float): per second, no decimals.
r_rate() {
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "" }'
}

r_now() {
	date +%s.%N
}

r_since() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
}

# r_measure RUN [ARG...]: "RUN MODE ARG..." (it sets OPS, and CHECK where
# it checks) in $R_ROUNDS pairs of bare and libgc, the order alternating
# from pair to pair (bare libgc, libgc bare, ...: the disk's drift falls on
# both sides), then once under eatmydata, then once more under libgc with
# exit reports (untimed: the syncs and req/sync columns). Sets R_OPS and
# R_FL (per mode: the median ops/s and flushes the disk served), R_CHECK
# (ok, or the last failure) and R_RATIO (the median of the pairs' libgc /
# bare; with more than one pair, their range beside it).
r_measure() {
	local run=$1 how i f0
	local -a order ratios=()
	local -A ops=() fl=() last=()
	shift
	declare -gA R_OPS=() R_FL=()
	R_CHECK=ok
	for ((i = 0; i < R_ROUNDS; i++)); do
		order=(bare libgc)
		((i % 2 == 0)) || order=(libgc bare)
		[ "$R_EMD" != 1 ] || ((i < R_ROUNDS - 1)) || order+=(eatmydata)
		for how in "${order[@]}"; do
			f0=$(r_flushes)
			OPS='' CHECK=ok
			"$run" "$how" "$@"
			fl[$how]+=" $(($(r_flushes) - f0))"
			ops[$how]+=" $OPS" last[$how]=$OPS
			[ "$CHECK" = ok ] || R_CHECK="$how: $CHECK"
		done
		ratios+=("$(r_ratio "${last[libgc]}" "${last[bare]}" %.6f)")
	done
	OPS='' CHECK=ok R_COUNTING=1
	"$run" libgc "$@"
	R_COUNTING=0
	[ "$CHECK" = ok ] || R_CHECK="libgc (counted): $CHECK"
	for how in "${!ops[@]}"; do
		# shellcheck disable=SC2086
		R_OPS[$how]=$(r_median %.0f ${ops[$how]}) R_FL[$how]=$(r_median %.0f ${fl[$how]})
	done
	R_RATIO=$(r_median -r %.2fx "${ratios[@]}")
	R_RATIO=${R_RATIO:--}
}

# r_measure_twice RUN REPORT [ARG...]: a server's two settings: r_measure
# RUN as it is, then again with ARG... (no eatmydata run). The first's
# medians, ratio, runs' check and counted run's exit reports (the file
# REPORT) are kept in R_OPS1, R_FL1, R_RATIO1, R_CHECK1 and
# $R_TMP/report.first.
r_measure_twice() {
	local run=$1 rep=$2 how
	shift 2
	r_measure "$run"
	declare -gA R_OPS1=() R_FL1=()
	for how in "${!R_OPS[@]}"; do
		R_OPS1[$how]=${R_OPS[$how]} R_FL1[$how]=${R_FL[$how]}
	done
	R_RATIO1=$R_RATIO R_CHECK1=$R_CHECK
	cp "$rep" "$R_TMP/report.first"
	R_EMD=0 r_measure "$run" "$@"
}

# r_rows_twice FLUSH LABEL1 LABEL2 REPORT CHECK: the two rows of
# r_measure_twice, REPORT being the second's exit reports, CHECK the data's
# check afterwards (a row whose runs failed says so instead).
r_rows_twice() {
	local c1=$5 c2=$5
	[ "$R_CHECK1" = ok ] || c1=$R_CHECK1
	[ "$R_CHECK" = ok ] || c2=$R_CHECK
	r_row "$1" "$2" "${R_OPS1[bare]}" "${R_OPS1[libgc]}" "${R_OPS1[eatmydata]:-}" \
		"$R_TMP/report.first" "${R_FL1[libgc]} (${R_FL1[bare]})" "$c1" "$R_RATIO1"
	r_row "$1" "$3" "${R_OPS[bare]}" "${R_OPS[libgc]}" "" \
		"$4" "${R_FL[libgc]} (${R_FL[bare]})" "$c2" "$R_RATIO"
}

# One table row per flush latency: brings the disk up, measures "$2 MODE"
# (r_measure), and prints the row labelled $1.
r_rows() {
	local label=$1 run=$2 us
	for us in $R_FLUSHES; do
		r_disk_up "$us"
		r_measure "$run"
		r_row "$us" "$label" "${R_OPS[bare]}" "${R_OPS[libgc]}" "${R_OPS[eatmydata]:-}" \
			"$R_TMP/report.libgc" "${R_FL[libgc]} (${R_FL[bare]})" "$R_CHECK" "$R_RATIO"
		r_disk_down
	done
}
