#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fio under libgc: 8 jobs (processes, fio's default), each on a 4 MiB file of
# its own, 4 KiB blocks, ioengine=sync, time-based.  Random writes with an
# fsync after each; then random reads and writes mixed, where fio syncs
# after every I/O, reads included (with 90% reads nine syncs in ten are of
# a file with nothing to write: a case libgc loses, docs/limitations.md).
# Afterwards: fio reports no error, and a verify job (crc32c of every block
# written, read back) under the same preload passes.
#   RECIPE_FIO_JOBS=8
R_NAME=fio
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
jobs=${RECIPE_FIO_JOBS:-8}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || r_die "RECIPE_FIO_JOBS must be a positive integer, not '$jobs'"
command -v fio >/dev/null || r_die "fio is missing (deps.sh recipes)"
opts=()

# one MODE: fio with the row's $opts; sets OPS (reads and writes a second)
# and CHECK.
one() {
	local how=$1 d=$R_MNT/fio out err
	local -a pre
	rm -rf "$d" && mkdir -p "$d"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	# terse v3: field 5 the error, 8 read IOPS, 49 write IOPS
	out=$("${pre[@]}" fio --name=w --directory="$d" --bs=4k --size=4m --ioengine=sync \
		--numjobs="$jobs" --time_based --runtime="$R_SECS" --group_reporting \
		--output-format=terse "${opts[@]}" 2>"$R_TMP/err") || {
		sed 's/^/    /' "$R_TMP/err" >&2
		OPS='' CHECK="fio failed"
		return 0
	}
	err=$(awk -F';' 'NR == 1 { print $5 }' <<<"$out")
	OPS=$(awk -F';' 'NR == 1 { printf "%.0f", $8 + $49 }' <<<"$out")
	CHECK=ok
	[ "$err" = 0 ] || CHECK="fio error $err"
	rm -rf "$d" && mkdir -p "$d"
	"${pre[@]}" fio --name=v --directory="$d" --bs=4k --size=1m --ioengine=sync --numjobs=2 \
		--rw=randwrite --fsync=1 --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
		--output-format=terse >/dev/null 2>"$R_TMP/err" || CHECK="verify failed"
	rm -rf "$d"
}

r_header
opts=(--rw=randwrite --fsync=1)
r_rows "fio randwrite, $jobs jobs" one
opts=(--rw=randrw --rwmixread=70 --fsync=1)
r_rows "fio randrw 70% reads, $jobs jobs" one
opts=(--rw=randrw --rwmixread=90 --fsync=1)
r_rows "fio randrw 90% reads, $jobs jobs" one
echo "ops/s: fio's reads and writes a second (IOPS), each followed by an fsync (--fsync=1)."
