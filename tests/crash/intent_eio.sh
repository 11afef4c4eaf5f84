#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Injected EIO with the intent log (TAP): the same scripted calls bare and
# under libgc with LIBGC_INTENT on the slow disk give the same answers,
# call by call and descriptor by descriptor (eioload seq, as in eio.sh).
# A request served through the log starts its file's writeback beside the
# log's flush and waits for it on its own description, so a writeback
# error reaches the request bare would have told, and no other.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SD=$PWD/tests/slowdisk/slowdisk
LOAD=$PWD/build/tests/crash/eioload
LIB=${INTENT_LIB:-$PWD/build/libgc.so}
GCRUN=$PWD/build/gcrun
NAME=ieio-$$
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; shift; printf '#   %s\n' "$@"; }
for f in "$LOAD" "$LIB" "$GCRUN" "${SLOWDISKD:-build/tests/slowdisk/slowdiskd}"; do
	[ -e "$f" ] || { echo "1..1"; echo "ok 1 - intent EIO # SKIP $f missing"; exit 0; }
done
cleanup() { timeout 120 bash "$SD" down --name "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
out=$(bash "$SD" up --name "$NAME" --size-mb 128 --flush-us 1000 2>&1)
rc=$?
[ $rc = 77 ] && { echo "1..1"; echo "ok 1 - intent EIO # SKIP $(tail -n 1 <<<"$out")"; exit 0; }
M=$(tail -n 1 <<<"$out")
[ $rc = 0 ] && [ -d "$M" ] || { echo "1..1"; echo "not ok 1 - slowdisk up: $out"; exit 1; }
"$GCRUN" --intent-init "$M/intent.log" --size 4m >/dev/null
REP=$(mktemp)
trap 'cleanup; rm -f "$REP"' EXIT

inject() { echo "timeout 30 bash $SD fault --name $NAME $* >/dev/null"; }
bare() { env -u LD_PRELOAD timeout 60 "$@"; }
intent() {
	env LD_PRELOAD="$LIB" LIBGC_INTENT="$M" LIBGC_INTENT_LOG="$M/intent.log" \
		LIBGC_REPORT="$REP" timeout 60 "$@"
}

# prep FILE: made again, durable; the -x commands arm EIO on writes of its
# first block (x0), clear it (x1), and wait for a checkpoint or two (x2)
prep() {
	local off
	bare "$LOAD" prep "$1" 64 || return 1
	off=$(bare "$LOAD" extent "$1" | awk 'NR == 1 { print $1 }')
	xs=(-x "$(inject eio-write "${off:-0}" 4096)" -x "$(inject clear)" -x "sleep 1.5")
}

# seq_test TITLE EVIDENCE FILE OP...: the same answers; EVIDENCE (a regex)
# must match the bare ones, and the library must have served some
# requests through the log (else the question was not asked of it).
seq_test() {
	local title=$1 want=$2 file=$3 b g logged
	shift 3
	prep "$file" || { nok "$title" "prep failed"; return; }
	b=$(bare "$LOAD" seq "${xs[@]}" "$file" "$@" 2>&1)
	bash "$SD" fault --name "$NAME" clear >/dev/null 2>&1
	prep "$file" || { nok "$title" "prep failed"; return; }
	: >"$REP"
	g=$(intent "$LOAD" seq "${xs[@]}" "$file" "$@" 2>/dev/null)
	bash "$SD" fault --name "$NAME" clear >/dev/null 2>&1
	logged=$(sed -n 's/.*intent_logged=\([0-9]*\).*/\1/p' "$REP" | head -n 1)
	if ! grep -Eq -- "$want" <<<"$b"; then
		nok "$title" "the fault did not show bare (wanted /$want/)" "bare:   $b"
	elif [ "${logged:-0}" = 0 ]; then
		nok "$title" "nothing went through the log" "libgc: $g"
	elif [ "$b" != "$g" ]; then
		nok "$title" "bare and libgc differ:" "bare:   $b" "intent: $g"
	else
		ok "$title ($logged through the log)"
	fi
	# a frozen log left by a failed checkpoint is replayed by the next
	# process: clean it now, so that each test starts from a clean log
	"$GCRUN" --recover "$M/intent.log" >/dev/null 2>&1
}

# 1: a writeback error of a request served through the log, then cleared:
# the request gets EIO, the other description once, then all succeed
seq_test "writeback EIO of a request through the log: EIO there, and once for the other description, as bare" \
	'fA=EIO.*fB=EIO' "$M/wb" wA fA wA fA x0 wA fA x1 fA fB fA wA fA
# 2: the block stays bad: every sync that writes it fails, each
# description hears of it once
seq_test "writeback EIO that stays: the same answers as bare, call by call" \
	'fA=EIO.*fB=EIO' "$M/wb" wA fA wA fA x0 wA fA fB fA wA fA fB x1 wA dA dB
# 3: A alone sees the error; then A-D sync at once (each answers from its
# own description's state)
ops=(wA fA wA fA)
for i in 1 2 3; do ops+=(x0 wA fA x1 fA+fB+fC+fD); done
seq_test "writeback EIO seen by A, then A-D sync at once: A gets 0, B-D EIO once, as bare" \
	'fA=0\+fB=EIO\+fC=EIO\+fD=EIO' "$M/wb" "${ops[@]}"
# 4: the checkpoint's syncfs marks the filesystem's error seen (it must
# hear of it, to keep the records); a syncfs through a description opened
# after that (C) is told of it once, as the first syncfs after the error
# would have been bare; D, open since before, hears of it from the kernel
seq_test "writeback EIO, a checkpoint, then syncfs through a description opened since: told once, as bare" \
	'oC=0 sC=EIO sD=EIO' "$M/wb" wA fA wA fA x0 wA fA x1 x2 oC sC sD fB
echo "1..$n"
[ "$bad" = 0 ]
