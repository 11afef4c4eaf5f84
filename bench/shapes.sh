#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench-shapes`: build/bench/shapes run bare and under libgc on the
# slow disk, per shape of work: bare and the default in alternating pairs,
# LIBGC_POLICY=none, and a sweep of LIBGC_POLICY=fixed LIBGC_WAIT_US. The best
# of none and the sweep is the oracle. Writes a Markdown table, a TSV of
# every run and a plot (see bench/README.md, "bench-shapes").
#
# Settings (environment):
#   SHAPES=full|quick        full (about an hour) by default
#   SHAPES_LIST              shape ids to run (default: all of the mode)
#   SHAPES_WORKERS="2 8 16"  SHAPES_FLUSH_US="1000 4000"
#   SHAPES_PAIRS, SHAPES_SECS, SHAPES_SWEEP   override the mode
#   SHAPES_LIB=build/libgc.so  the library under test
#   SHAPES_CONTROL=0         1: each pair also runs bare a second time (the
#                            control), in rotated order: the table adds the
#                            bare-against-bare ratio, the instrument's own
#                            spread in the same cell (half as long again)
#   SHAPES_OUT=bench/results
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shapes=$root/build/bench/shapes
slowdisk=$root/tests/slowdisk/slowdisk

# id, then the arguments of shapes (threads unless -p)
all_shapes=(
	"wal           -k wal"
	"wal-t0.5      -k wal -T 500"
	"wal-t2        -k wal -T 2000"
	"wal-t5        -k wal -T 5000"
	"delete        -k delete"
	"delete-t0.5   -k delete -T 500"
	"delete-t2     -k delete -T 2000"
	"delete-t5     -k delete -T 5000"
	"delete-change -k delete -T 5000 -c 0.5"
	"spool         -k spool"
	"spool-t2      -k spool -T 2000"
	"log-shared    -k wal -S"
	"wal-mixed     -k wal -m mixed"
	"wal-burst     -k wal -b 50:50"
	"delete-burst  -k delete -T 500 -b 50:50"
	"wal-slow1     -k wal -l 20000"
	"wal-procs     -p -k wal"
	"delete-procs  -p -k delete -T 2000"
)
quick_ids="wal wal-t2 delete delete-t2 spool wal-burst wal-slow1 wal-mixed delete-procs"

mode=${SHAPES:-full}
case $mode in
full) pairs=6 secs=1.5 sweep="0 500 1000 2000 4000" ids= ;;
quick) pairs=2 secs=1 sweep="0 1000 4000" ids=$quick_ids ;;
*)
	echo "bench-shapes: SHAPES must be full or quick, not '$mode'" >&2
	exit 2
	;;
esac
pairs=${SHAPES_PAIRS:-$pairs}
secs=${SHAPES_SECS:-$secs}
sweep=${SHAPES_SWEEP-$sweep}
ids=${SHAPES_LIST:-$ids}
workers=${SHAPES_WORKERS:-2 8 16}
flushes=${SHAPES_FLUSH_US:-1000 4000}
lib=${SHAPES_LIB:-$root/build/libgc.so}
out_dir=${SHAPES_OUT:-$root/bench/results}
control=${SHAPES_CONTROL:-0}

die() {
	echo "bench-shapes: $*" >&2
	exit 1
}
log() { echo "$*" >&2; }

declare -A args=()
order=()
for s in "${all_shapes[@]}"; do
	read -r id rest <<<"$s"
	args[$id]=$rest
	order+=("$id")
done
if [ -n "$ids" ]; then
	for id in $ids; do [ -n "${args[$id]:-}" ] || die "unknown shape '$id' (known: ${order[*]})"; done
	order=($ids)
fi
[[ $pairs =~ ^[1-9][0-9]*$ ]] || die "SHAPES_PAIRS must be a positive integer"
[[ $control =~ ^[01]$ ]] || die "SHAPES_CONTROL must be 0 or 1, not '$control'"
[[ $secs =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SHAPES_SECS must be a number of seconds"
for w in $workers $flushes $sweep; do [[ $w =~ ^[0-9]+$ ]] || die "not a number: '$w'"; done
for f in "$lib" "$shapes"; do [ -e "$f" ] || die "$f is missing: run 'make' first"; done
[ "$(id -u)" -eq 0 ] || die "the slow disk needs root"

unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)

work=$(mktemp -d /tmp/libgc-shapes.XXXXXX)
disk=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	cd /
	[ -z "$disk" ] || bash "$slowdisk" down --name "$disk" >&2 || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

host=$(uname -n)
host=${host%%.*}
mkdir -p "$out_dir"
stem=$out_dir/$(date +%F)-$host-shapes
[ "$mode" = full ] || stem+=-$mode
if [ -e "$stem.md" ]; then
	i=2
	while [ -e "$stem.$i.md" ]; do i=$((i + 1)); done
	stem+=.$i
fi
tsv=$stem.tsv
printf 'flush_us\tshape\tworkers\tcondition\tpair\ttxn_per_s\treqs\tdirect\n' >"$tsv"

ncells=$((${#order[@]} * $(wc -w <<<"$workers") * $(wc -w <<<"$flushes")))
nruns=$(((2 + control) * pairs + 1 + $(wc -w <<<"$sweep")))
log "bench-shapes: $mode: $ncells cells, $nruns runs of ${secs} s each;" \
	"about $(awk -v c="$ncells" -v r="$nruns" -v s="$secs" 'BEGIN { printf "%d", c * r * (s + 0.35) / 60 + 1 }') min"
log "bench-shapes: results will go to $stem.{md,tsv,png}"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s)

# run COND WAIT SEED SHAPE N: one run in a fresh folder; sets VAL, REQ, DIRECT.
run() {
	local cond=$1 wait=$2 seed=$3 id=$4 n=$5 d=$mnt/run line n_flag=-t
	local -a pre=() a
	read -ra a <<<"${args[$id]}"
	if [ "${a[0]}" = -p ]; then
		n_flag=-p
		a=("${a[@]:1}")
	fi
	case $cond in
	bare | control) ;;
	default) pre=(env LD_PRELOAD="$lib" LIBGC_REPORT="$work/report") ;;
	none) pre=(env LD_PRELOAD="$lib" LIBGC_POLICY=none) ;;
	fixed) pre=(env LD_PRELOAD="$lib" LIBGC_POLICY=fixed LIBGC_WAIT_US="$wait") ;;
	esac
	rm -rf "$d" && mkdir -p "$d"
	: >"$work/report"
	VAL='' REQ='' DIRECT=''
	line=$(timeout -k 5 $((${secs%.*} * 10 + 60)) "${pre[@]}" "$shapes" "$n_flag" "$n" \
		"${a[@]}" -d "$secs" -r "$seed" -D "$d" -q 2>"$work/err" | tail -n 1) || true
	if [[ $line == *" errors=0"* ]]; then
		VAL=$(sed -n 's/.* txn_per_s=\([^ ]*\).*/\1/p' <<<"$line")
		# a change of shape: the rate after it, where the policy must notice
		[[ $line != *" after_per_s="* ]] || VAL=$(sed -n 's/.* after_per_s=\([^ ]*\).*/\1/p' <<<"$line")
	else
		log "bench-shapes: $id N=$n $cond $wait failed: $(tail -n 2 "$work/err" | tr '\n' ' ')"
	fi
	if [ "$cond" = default ]; then
		read -r _ REQ DIRECT < <(awk -f "$root/bench/report_sum.awk" "$work/report")
	fi
	rm -rf "$d"
	sync -f "$mnt"
}

cell() {
	local us=$1 id=$2 n=$3 p w
	for ((p = 1; p <= pairs; p++)); do
		# bare and the default by turns; with the control, the three
		# in rotation (bare default control, default control bare, ...)
		local -a turn=(bare default)
		((p % 2)) || turn=(default bare)
		[ "$control" = 0 ] || case $((p % 3)) in
			1) turn=(bare default control) ;;
			2) turn=(default control bare) ;;
			0) turn=(control bare default) ;;
			esac
		for c in "${turn[@]}"; do
			run "$c" - "$p" "$id" "$n"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$us" "$id" "$n" "$c" "$p" \
				"${VAL:--}" "${REQ:--}" "${DIRECT:--}" >>"$tsv"
		done
	done
	run none - 1 "$id" "$n"
	printf '%s\t%s\t%s\tnone\t-\t%s\t-\t-\n' "$us" "$id" "$n" "${VAL:--}" >>"$tsv"
	for w in $sweep; do
		run fixed "$w" 1 "$id" "$n"
		printf '%s\t%s\t%s\tfixed:%s\t-\t%s\t-\t-\n' "$us" "$id" "$n" "$w" "${VAL:--}" >>"$tsv"
	done
	awk -F'\t' -v us="$us" -v id="$id" -v n="$n" -f "$root/bench/shapes_cell.awk" "$tsv" >&2
}

for us in $flushes; do
	disk=shapes-$$
	mnt=$(bash "$slowdisk" up --name "$disk" --flush-us "$us" --size-mb 1024 --journal-mb 128 |
		tail -n 1) || die "slow disk with a $us us flush did not come up"
	log "bench-shapes: slow disk, flush $us us, at $mnt"
	for id in "${order[@]}"; do
		for n in $workers; do
			cell "$us" "$id" "$n"
		done
	done
	bash "$slowdisk" down --name "$disk" >&2
	disk=
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
elapsed=$(($(date +%s) - t_start))

# The table: one row per cell.
summary=$work/summary.tsv
awk -F'\t' -f "$root/bench/shapes_cell.awk" -v all=1 "$tsv" >"$summary"

plot() {
	local gp=$work/plot.gp us dat
	command -v gnuplot >/dev/null || return 1
	{
		echo "set terminal pngcairo size 1600,$((420 * $(wc -w <<<"$flushes"))) font 'DejaVu Sans,9'"
		echo "set output '$stem.png'"
		echo "set multiplot layout $(wc -w <<<"$flushes"),1"
		echo "set grid ytics"
		echo "set termoption noenhanced"
		echo "set key top left horizontal font ',8'"
		echo "set ylabel '× bare' font ',8'"
		echo "set xtics rotate by 60 right font ',7'"
		echo "set yrange [0.5:*]"
		echo "set style fill solid 0.6 noborder"
		for us in $flushes; do
			dat=$work/plot.$us.dat
			awk -F'\t' -v us="$us" '$1 == us { print NR, $2 "/" $3, $7, $9, $8, $6 }' \
				"$summary" >"$dat"
			echo "set title 'flush $us us: the default (box: median of pairs, bar: lowest pair), policy=none, the oracle' font ',9'"
			echo "plot '$dat' u 1:3:xtic(2) w boxes lc rgb '#4a90d9' t 'default / bare'," \
				"'' u 1:4 w p pt 9 ps 0.8 lc rgb '#d62728' t 'lowest pair'," \
				"'' u 1:6 w p pt 7 ps 0.6 lc rgb '#2ca02c' t 'none / bare'," \
				"'' u 1:5 w p pt 2 ps 0.9 lc rgb '#000000' t 'oracle / bare'," \
				"0.97 w l lc rgb '#d62728' dt 2 t '0.97', 1 w l lc rgb '#000000' dt 3 notitle"
		done
		echo "unset multiplot"
	} >"$gp"
	gnuplot "$gp" 2>"$work/gnuplot.err" || { cat "$work/gnuplot.err" >&2; return 1; }
}
plotted=yes
plot || plotted=no

{
	echo "# bench-shapes — $(date '+%F %H:%M') on $host ($mode)"
	echo
	echo "- machine: $(nproc) cores, $(uname -sr); load average at start $load_start, at end $load_end"
	echo "- library: ${lib#"$root"/}, built $(date -r "$lib" '+%F %H:%M')$(git -C "$root" rev-parse --short HEAD 2>/dev/null | sed 's/^/ (tree at /; s/$/)/')"
	echo "- slow disk: ext4 (128 MiB journal, 1 GiB image) on the FUSE + loop disk; flush latency per table"
	echo "- $pairs alternating pairs of bare and the default per cell (the same think-time draws in a pair)," \
		"${secs} s runs; policy=none and LIBGC_POLICY=fixed LIBGC_WAIT_US in {$sweep} once each"
	[ "$control" = 0 ] || echo "- control: each pair also ran bare a second time, the three in rotation;" \
		"control ×bare is the median of the pairs' second bare over their first, its lowest pair beside it"
	echo "- oracle = the best of none and the sweep; default/oracle compares the default's median to it"
	echo "- total time $((elapsed / 60)) min $((elapsed % 60)) s"
	echo
	for us in $flushes; do
		echo "## Flush $us µs (txn/s)"
		echo
		ctl_h='' ctl_s=''
		[ "$control" = 0 ] || ctl_h=" control ×bare (lowest) |" ctl_s="---:|"
		echo "| shape | N | bare | default | ×bare | lowest pair |$ctl_h none | best fixed | oracle | ×oracle | direct % |"
		echo "|---|---:|---:|---:|---:|---:|$ctl_s---:|---:|---:|---:|---:|"
		awk -F'\t' -v us="$us" -v control="$control" '$1 == us {
			flag = ($7 < 0.97 || $9 < 0.93 || $11 < 0.9) ? " **!**" : ""
			ctl = control ? sprintf(" %.3f (%.3f) |", $16, $17) : ""
			printf "| %s | %s | %.0f | %.0f | %.3f | %.3f |%s %.0f | %.0f (%s) | %.0f | %.3f | %s |%s\n",
				$2, $3, $4, $5, $7, $9, ctl, $10, $12, $13, $14, $11, $15, flag
		}' "$summary"
		echo
	done
	awk -F'\t' -v control="$control" '{ n++; if ($7 >= 0.97) a++; if ($9 >= 0.93) b++; if ($11 >= 0.9) c++
			if ($16 >= 0.97) d++; if ($17 >= 0.93) e++ }
		END { printf "Cells: %d; default >= 0.97x bare: %d; lowest pair >= 0.93x: %d; >= 0.9x oracle: %d\n", n, a, b, c
			if (control) printf "\nThe control, bare against bare: >= 0.97x in %d of %d cells; lowest pair >= 0.93x in %d\n", d, n, e }' "$summary"
	echo
	[ "$plotted" = yes ] && echo "![bench-shapes]($(basename "$stem").png)"
} >"$stem.md"
cat "$stem.md"
log "bench-shapes: wrote $stem.md, $stem.tsv${plotted/yes/, $stem.png}"
