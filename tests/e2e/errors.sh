#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The differential error suite (TAP): programs whose writes fail to write back
# (the slow disk's eio-write fault under their blocks) print what each of
# their syncs answered, bare and under libgc with the dirty limiter at every
# setting; every line must be the same. Then the limiter's own hazards: its
# slot lock after a fork and after a cancelled writer, real O_DSYNC
# descriptors (LIBGC_OSYNC=keep) left alone, and a seccomp filter that
# kills at cachestat(2), which only the limiter would call. ERRORS_LIB=PATH runs it against
# another build of the library (the old code, to see what it catches).
# It runs as two parts side by side, each on a slow disk of its own (their
# time is the disk's writes), and prints their lines in order.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

SD=$PWD/tests/slowdisk/slowdisk
PROG=$PWD/build/tests/e2e/progs/errseq
NOCS=$PWD/build/tests/e2e/progs/nocachestat
LIB=${ERRORS_LIB:-$PWD/build/libgc.so}
KB=4096		# each scenario's file: 4 MiB, written in 256 KiB calls
MANY=65		# files of the many-files scenario (one more than a table of 64)
MANY_KB=192

# Scenarios, and the limiter settings each runs under (besides bare).
SCENARIOS=(two fork exec later dup signal dsync reuse handoff many)
# paced: cachestat(2) made to fail (ENOSYS, as before Linux 6.5), so the
# limiter paces its waits at the device's bandwidth. grouped: every sync
# joins a transaction (its own staging wait first) and is its file's owner,
# whose real call's result the others would share. intent, intent4k: the
# intent log on for the disk (its syncs that are not logged make real
# calls; a signal handler's takes its nested path).
MODES=(auto auto10 64k 4k off paced grouped intent intent4k)
# the limiter settings the traced writer runs under
TRACED=(auto 64k 4k paced)
mode_env() {
	case $1 in
	auto) echo LIBGC_DIRTY=auto ;;
	auto10) echo LIBGC_DIRTY=auto LIBGC_DIRTY_TARGET_MS=10 ;;
	keep) echo LIBGC_DIRTY=64k LIBGC_OSYNC=keep ;;
	paced) echo LIBGC_DIRTY=64k ;;
	grouped) echo LIBGC_POLICY=fixed LIBGC_WAIT_US=1000 LIBGC_STAGE=always ;;
	intent) echo "LIBGC_INTENT=$M LIBGC_INTENT_LOG=$M/.libgc-intent" ;;
	intent4k) echo "LIBGC_INTENT=$M LIBGC_INTENT_LOG=$M/.libgc-intent LIBGC_DIRTY=4k" ;;
	*) echo "LIBGC_DIRTY=$1" ;;
	esac
}
label() {
	case $1 in
	paced) echo "$(mode_env "$1"), no cachestat" ;;
	intent) echo "LIBGC_INTENT=the disk" ;;
	intent4k) echo "LIBGC_INTENT=the disk LIBGC_DIRTY=4k" ;;
	*) mode_env "$1" ;;
	esac
}
T=$((${#SCENARIOS[@]} * (${#MODES[@]} + 1) + ${#TRACED[@]} + 5))

n=0
skip_all() {
	for i in $(seq $((n + 1)) "$T"); do echo "ok $i - writeback errors # SKIP $1"; done
	exit 0
}
echo "1..$T"
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -c /dev/fuse ] || skip_all "needs /dev/fuse"
GCRUN=$PWD/build/gcrun
for f in "$PROG" "$NOCS" "$LIB" "$GCRUN" "${SLOWDISKD:-build/tests/slowdisk/slowdiskd}"; do
	if [ ! -e "$f" ]; then
		for i in $(seq "$T"); do
			echo "not ok $i - writeback errors # $f not built (run make)"
		done
		exit 1
	fi
done

TOP=$(mktemp -d)
trap 'rm -rf "$TOP"' EXIT
trap 'exit 130' INT TERM

. tests/tap.sh

# part_up K: part K's disk, its mount point in $M. Writes can be slow (50
# MB/s) so that the limiter really waits; a 1 ms flush. Prints "SKIPALL
# reason" or "FAILALL reason" and fails where it cannot come up.
part_up() {
	local out rc=0
	NAME=errors-$$-$1
	WORK=$TOP/$1
	mkdir -p "$WORK"
	trap 'timeout 120 bash "$SD" down --name "$NAME" >/dev/null 2>&1' EXIT
	out=$(sd up --name "$NAME" --size-mb 512 --flush-us 1000 --write-mbps 50 2>&1) || rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 77 ] && echo "SKIPALL $(tail -n 1 <<<"$out")" ||
			echo "FAILALL slowdisk up: $(tail -n 1 <<<"$out")"
		return 1
	fi
	M=$(tail -n 1 <<<"$out")
	# the intent log of the intent modes, on the disk itself
	"$GCRUN" --intent-init "$M/.libgc-intent" --size 64m >/dev/null
}

# run MODE CMD...: bare, or under libgc with MODE's settings.
run() {
	local mode=$1
	shift
	if [ "$mode" = bare ]; then
		env -u LD_PRELOAD timeout 120 "$@"
	elif [ "$mode" = paced ]; then
		# shellcheck disable=SC2046
		env LD_PRELOAD="$LIB" $(mode_env "$mode") timeout 120 "$NOCS" "$@"
	else
		# shellcheck disable=SC2046
		env LD_PRELOAD="$LIB" $(mode_env "$mode") timeout 120 "$@"
	fi
}

# arm LINES: eio-write over every "ext OFF LEN" line (at most 8 ranges).
arm() {
	local off len k=0
	while read -r _ off len; do
		k=$((k + 1))
		[ $k -le 8 ] || { echo "more than 8 ranges" >&2; return 1; }
		sd fault --name "$NAME" eio-write "$off" "$len" >/dev/null
	done <<<"$(grep '^ext ' <<<"$1")"
	[ $k -gt 0 ]
}

# scenario SCN MODE: a fresh file (or files) under the fault, the program's
# line on stdout; the fault is cleared afterwards.
scenario() {
	local scn=$1 mode=$2 f=$M/$1 ext o rc=0
	sd fault --name "$NAME" clear >/dev/null
	if [ "$scn" = many ]; then
		rm -rf "$f" && mkdir -p "$f"
		ext=$("$PROG" prepmany "$f" $MANY $MANY_KB) || return 1
	else
		rm -f "$f" "$f".*
		ext=$("$PROG" prep "$f" $KB) || return 1
	fi
	arm "$ext" || return 1
	case $scn in
	later) o=$(run "$mode" "$PROG" write "$f" $KB && run "$mode" "$PROG" fsync "$f") || rc=$? ;;
	many) o=$(run "$mode" "$PROG" many "$f" $MANY $MANY_KB) || rc=$? ;;
	*) o=$(run "$mode" "$PROG" "$scn" "$f" $KB) || rc=$? ;;
	esac
	sd fault --name "$NAME" clear >/dev/null
	echo "$o" | tr '\n' ' ' | sed 's/ $//'
	return $rc
}

# What the kernel answers bare (errseq, Linux 4.13 on): each description
# that was open before the error, or opened while nobody had seen it, hears
# of it once. A bare run that answers otherwise means the fault did not
# fire, and the comparison would prove nothing.
bare_want() {
	case $1 in
	two) echo "a=EIO b=EIO a=0" ;;
	fork) echo "parent=EIO again=0" ;;
	exec) echo "exec=EIO again=0" ;;
	later) echo "wrote later=EIO again=0" ;;
	dup) echo "dup=EIO orig=0" ;;
	signal) echo "handler=EIO after=0 ok=0" ;;
	dsync) echo "writes=EIOx$((KB / 256)) plain=EIO dsync=0" ;;
	reuse) echo "new=0" ;;
	handoff) echo "told=EIO again=0 b=EIO fdopen=EIO sent=EIO orig=0 spawn=EIO parent=0 exec=EIO" ;;
	many) echo "healthy=0 failed: EIO=$MANY 0=0 other=0" ;;
	esac
}

# scenarios SCN...: each bare, then under every setting.
scenarios() {
	for scn in "$@"; do
		want=$(scenario "$scn" bare 2>"$WORK/err") || want="failed: $(tail -n 3 "$WORK/err")"
		if [ "$want" = "$(bare_want "$scn")" ]; then
			ok "$scn bare: $want"
		else
			not_ok "$scn bare: \"$want\", expected \"$(bare_want "$scn")\"" \
				"the fault did not show, or this kernel reports errors otherwise"
		fi
		modes=("${MODES[@]}")
		[ "$scn" != dsync ] || modes+=(keep)
		for mode in "${modes[@]}"; do
			[ "$scn" != dsync ] || [ "$mode" != auto10 ] || continue # keep's turn
			got=$(scenario "$scn" "$mode" 2>"$WORK/err") ||
				got="failed: $(tail -n 3 "$WORK/err")"
			if [ "$got" = "$want" ]; then
				ok "$scn under libgc ($(label "$mode")): as bare"
			else
				not_ok "$scn under libgc ($(label "$mode")): \"$got\", bare \"$want\""
			fi
		done
	done
}

# the limiter's own hazards, after the scenarios of part 2
hazards() {

	# A program that writes and never syncs, traced from outside: whatever the
	# limiter does is its own, and it may only start writeback
	# (sync_file_range with WRITE alone). A wait flag, an fsync or an fdatasync
	# would take the file's writeback errors from the program (DESIGN rule 8).
	for mode in "${TRACED[@]}"; do
		if ! command -v strace >/dev/null; then
			ok "traced writer ($(label "$mode")) # SKIP needs strace"
			continue
		fi
		f=$M/traced
		rm -f "$f"
		"$PROG" prep "$f" $KB >/dev/null
		senv=(-E "LD_PRELOAD=$LIB")
		for e in $(mode_env "$mode"); do senv+=(-E "$e"); done
		cmd=("$PROG" write "$f" $KB)
		[ "$mode" != paced ] || cmd=("$NOCS" "${cmd[@]}")
		rm -f "$WORK/st"
		if ! o=$(timeout 120 strace -f -qq -o "$WORK/st" -e trace=sync_file_range,fsync,fdatasync \
			"${senv[@]}" "${cmd[@]}" 2>&1); then
			not_ok "traced writer ($(label "$mode")): did not run" "$o"
			continue
		fi
		started=$(grep -c 'sync_file_range(.*, SYNC_FILE_RANGE_WRITE)' "$WORK/st" || true)
		bad=$(grep -E 'SYNC_FILE_RANGE_WAIT|fsync\(|fdatasync\(' "$WORK/st" || true)
		if [ -n "$bad" ]; then
			not_ok "traced writer ($(label "$mode")): $(wc -l <<<"$bad") calls that wait or sync" \
				"$(head -n 3 <<<"$bad")"
		elif [ "$mode" != auto ] && [ "$started" -eq 0 ]; then
			not_ok "traced writer ($(label "$mode")): the limiter started no writeback" \
				"$(head -n 3 "$WORK/st")"
		else
			ok "traced writer ($(label "$mode")): $started writeback starts, no wait, no sync"
		fi
		rm -f "$f"
	done

	# The limiter still limits a fork child's writes through a descriptor that
	# another thread streamed through at the fork (its slot lock held then),
	# and a descriptor whose streaming writer was cancelled in its waits.
	for what in forklock cancellock; do
		f=$M/$what
		rm -f "$f"
		o=$(run 64k "$PROG" "$what" "$f" 2>&1) || o="failed: $o"
		if grep -q 'stuck=0$' <<<"$o"; then
			ok "$what under libgc (LIBGC_DIRTY=64k): $o"
		elif [ "$o" = "no cachestat" ]; then
			ok "$what # SKIP needs cachestat(2) to look from outside"
		else
			not_ok "$what under libgc (LIBGC_DIRTY=64k): the limiter's slot stayed locked" "$o"
		fi
		rm -f "$f"
	done

	# A real O_DSYNC descriptor (LIBGC_OSYNC=keep) is not limited: its writes
	# are written back by the kernel already.
	f=$M/keep
	rm -f "$f"
	"$PROG" prep "$f" 1024 >/dev/null
	o=$(run keep env LIBGC_REPORT=kv,all "$PROG" dsync "$f" 1024 2>&1) || true
	started=$(grep 'libgc: pid=' <<<"$o" | kv dirty_started)
	if [ "${started:-x}" = 0 ]; then
		ok "LIBGC_OSYNC=keep: the O_DSYNC descriptor's writes not limited"
	else
		not_ok "LIBGC_OSYNC=keep: the limiter started writeback ${started:-?} times on O_DSYNC" "$o"
	fi

	# A seccomp filter that kills the process at cachestat(2), which the
	# program never calls (an allow-list that does not know it: systemd before
	# 255 without SystemCallErrorNumber=): in force from exec, and put on by
	# the program between two streams of writes. The limiter must not make the
	# call, and the program runs as bare.
	for how in exec sandbox; do
		f=$M/seccomp
		rm -f "$f"
		"$PROG" prep "$f" $KB >/dev/null
		if [ "$how" = exec ]; then
			cmd=("$NOCS" --kill "$PROG" write "$f" $KB)
		else
			cmd=("$PROG" sandbox "$f" $KB)
		fi
		want=$(run bare "${cmd[@]}" 2>&1) || want="failed ($?): $want"
		got=$(run 64k "${cmd[@]}" 2>&1) || got="failed ($?): $got"
		if [ "$want" != wrote ]; then
			not_ok "seccomp filter ($how): bare \"$want\"" "the filter or the program failed"
		elif [ "$got" = "$want" ]; then
			ok "seccomp filter that kills at cachestat ($how) under libgc (LIBGC_DIRTY=64k): as bare"
		else
			not_ok "seccomp filter that kills at cachestat ($how) under libgc (LIBGC_DIRTY=64k): \"$got\", bare \"$want\""
		fi
		rm -f "$f"
	done
}

half=$(( (${#SCENARIOS[@]} + 1) / 2 ))
(part_up 1 && scenarios "${SCENARIOS[@]:0:$half}") >"$TOP/1.tap" 2>&1 &
(part_up 2 && { scenarios "${SCENARIOS[@]:$half}"; hazards; }) >"$TOP/2.tap" 2>&1 &
wait
r=$(sed -n 's/^SKIPALL //p' "$TOP/1.tap" "$TOP/2.tap" | head -n 1)
[ -z "$r" ] || skip_all "$r"
for k in 1 2; do
	r=$(sed -n 's/^FAILALL //p' "$TOP/$k.tap")
	[ -z "$r" ] || echo "# part $k: $r"
	tap_relay <"$TOP/$k.tap"
done
# a part that died or could not come up left lines out
while [ "$n" -lt "$T" ]; do
	not_ok "writeback errors: a line of a part that did not finish (see above)"
done
