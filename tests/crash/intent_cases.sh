#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The intent log's attacks, each a power cut (TAP): intentcut runs a case on
# the volatile slow disk (bare, then under libgc with LIBGC_INTENT), copies
# what its syncs acknowledged aside and stops itself before any checkpoint;
# the power is cut, the image mounted again at the same place, the log
# recovered (gcrun --recover) and every file compared with its copy. Bare
# must pass (the case is fair); libgc must pass too.
#
#   tests/crash/intent_cases.sh [CASE...]
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
SD=tests/slowdisk/slowdisk
PROG=${INTENTCUT:-$B/tests/e2e/progs/intentcut}
GCRUN=$B/gcrun
NAME=icase-$$
# CASE or CASE:VAR=VALUE (the library's environment for it)
all_cases=(fork spawn other walk sig-fsync sig-fdatasync sig-sync sig-odsync:LIBGC_OSYNC=keep
	vfork _Fork stale eio restart)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("${all_cases[@]}")
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $*"; }
for f in "$PROG" "$GCRUN" "$B/libgc.so" "$B/tests/slowdisk/slowdiskd"; do
	[ -e "$f" ] || { echo "1..1"; echo "ok 1 - intent cases # SKIP $f missing"; exit 0; }
done
tmp=$(mktemp -d)
pid=''
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	umount "$tmp/mnt" 2>/dev/null
	"$SD" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# For "stale": a process acknowledges through a 1 MiB log on this disk and
# is killed, leaving its control segment; the disk is made again (the same
# loop device, the log the same inode number: a new filesystem), and the
# dead member's pid in the segment is made a live one, as when pids wrap
# (pid_max 32768) on a busy machine. The new log must not take that
# segment for its own. Sets $smnt, or $why.
stale_segment() {
	local m=$1 dev ino seg dead out k
	"$GCRUN" --intent-init "$m/intent.log" --size 1m >/dev/null || { why="intent-init (stale)"; return 1; }
	mkdir -p "$m/d" && sync
	env LD_PRELOAD="$B/libgc.so" LIBGC_INTENT="$m/d" LIBGC_INTENT_LOG="$m/intent.log" \
		"$PROG" die "$m/d" "$tmp/exp" 2>/dev/null &
	dead=$!
	wait "$dead" 2>/dev/null
	dev=$(stat -c %d "$m/intent.log") ino=$(stat -c %i "$m/intent.log")
	for k in 1 2 3; do
		"$SD" down --name "$NAME" >/dev/null 2>&1
		out=$("$SD" up --name "$NAME" --volatile --flush-us 1000 --size-mb 256 2>&1) || { why="up: $out"; return 1; }
		smnt=$(tail -n 1 <<<"$out")
		"$GCRUN" --intent-init "$smnt/intent.log" --size 4m >/dev/null || { why="intent-init"; return 1; }
		[ "$(stat -c %d "$smnt/intent.log")" = "$dev" ] && [ "$(stat -c %i "$smnt/intent.log")" = "$ino" ] && break
		[ $k = 3 ] && { why="skip:the new disk never got the old one's device and inode"; return 1; }
	done
	rm -f "$smnt/intent.log"
	for seg in /dev/shm/libgc-intent-"$(id -u)"-"$(printf %x "$dev")"-"$(printf %x "$ino")" \
		/dev/shm/libgc-intent2-"$(id -u)"-"$(printf %x "$dev")"-"$(printf %x "$ino")"; do
		[ -e "$seg" ] || continue
		python3 - "$seg" "$dead" "$$" <<'PY'
import struct, sys
p, dead, live = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(p, 'rb').read())
d = struct.pack('<i', dead)
i = b.find(d, 100)
while i >= 0 and i % 4:
    i = b.find(d, i + 1)
if i >= 0:
    b[i:i + 4] = struct.pack('<i', live)
    open(p, 'r+b').write(bytes(b))
PY
	done
	return 0
}

# one_case CASE bare|libgc [VAR=VALUE...]: sets $why (empty: every
# acknowledged byte is there after the cut and the recovery)
one_case() {
	local c=$1 how=$2 out mnt imnt i rc ms
	shift 2
	why=''
	"$SD" down --name "$NAME" >/dev/null 2>&1
	out=$("$SD" up --name "$NAME" --volatile --flush-us 1000 --size-mb 256 2>&1)
	rc=$?
	if [ $rc = 77 ]; then why=skip:$(tail -n 1 <<<"$out"); return; fi
	mnt=$(tail -n 1 <<<"$out")
	[ $rc = 0 ] && [ -d "$mnt" ] || { why="slowdisk up: $out"; return; }
	if [ "$c" = stale ] && [ "$how" = libgc ]; then
		stale_segment "$mnt" || return
		mnt=$smnt
	fi
	"$GCRUN" --intent-init "$mnt/intent.log" --size 4m >/dev/null || { why="intent-init"; return; }
	mkdir -p "$mnt/d" && sync
	rm -rf "$tmp/exp" && mkdir -p "$tmp/exp"
	local -a pre=()
	# no checkpoint before the cut (it would make every byte durable and
	# the case prove nothing), but where the case is about checkpoints
	local ck=10000
	[ "$c" = eio ] && ck=1000
	[ "$how" = libgc ] && pre=(LD_PRELOAD="$B/libgc.so" LIBGC_INTENT="$mnt/d"
		LIBGC_INTENT_LOG="$mnt/intent.log" LIBGC_INTENT_CKPT_MS=$ck "$@")
	: >"$tmp/out"
	INTENTCUT_FAULT="SLOWDISK_STATE=${SLOWDISK_STATE:-/run/libgc-slowdisk} bash $PWD/$SD fault --name $NAME eio-write OFF 4096 >/dev/null" \
		env "${pre[@]}" "$PROG" "$c" "$mnt/d" "$tmp/exp" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		grep -q '^ready' "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q '^ready' "$tmp/out"; then
		why="the case did not get ready: $(tr '\n' ' ' <"$tmp/err")"
		kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=''
		return
	fi
	"$SD" fault --name "$NAME" clear >/dev/null 2>&1
	"$SD" cut --name "$NAME" --seed 1 >/dev/null 2>&1 || { why="cut failed"; return; }
	ms=$(sed -n 's/^ready \([0-9]*\) ms/\1/p' "$tmp/out")
	[ "${ms:-0}" -lt 9000 ] || [ "$c" = eio ] ||
		echo "# $c ($how): ${ms} ms before the cut: a checkpoint may have run"
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=''
	imnt=$("$SD" inspect --name "$NAME" 2>/dev/null | tail -n 1)
	[ -d "$imnt" ] || { why="inspect failed"; return; }
	if [ "$how" = libgc ] && [ "$c" = restart ]; then
		# no gcd, nobody ran gcrun --recover: the program is started
		# again at once; it must read what was acknowledged, and a
		# recovery run later must not put older bytes over its newer
		rm -rf "$tmp/read" "$tmp/exp2" && mkdir -p "$tmp/read" "$tmp/exp2"
		mount --bind "$imnt" "$mnt" || { why="bind mount"; return; }
		env LD_PRELOAD="$B/libgc.so" LIBGC_INTENT="$mnt/d" LIBGC_INTENT_LOG="$mnt/intent.log" \
			"$PROG" again "$mnt/d" "$tmp/read" "$tmp/exp2" 2>"$tmp/err2" ||
			why="started again: $(cat "$tmp/err2")"
		out=$("$GCRUN" --recover "$mnt/intent.log" 2>&1) || why+="recovery failed: $out"
		umount "$mnt"
		[ -z "$why" ] || return
		cmp -s <(head -c 64 "$tmp/exp/f") "$tmp/read/f" ||
			why+="read at start: '$(head -c 32 "$tmp/read/f" | tr -c '[:print:]' .)', acknowledged: '$(head -c 32 "$tmp/exp/f" | tr -c '[:print:]' .)'; "
		cp "$tmp/exp2/f" "$tmp/exp/f"
		out+=" $(tr '\n' ' ' <"$tmp/err2")"
	elif [ "$how" = libgc ]; then
		mount --bind "$imnt" "$mnt" || { why="bind mount"; return; }
		out=$("$GCRUN" --recover "$mnt/intent.log" 2>&1) || why="recovery failed: $out"
		umount "$mnt"
		[ -z "$why" ] || return
	fi
	for f in "$tmp/exp"/*; do
		[ "${f%.alt}" = "$f" ] || continue
		# NAME.alt: what a failed sync may have left instead
		[ -e "$f.alt" ] && cmp -s "$f.alt" "$imnt/d/${f##*/}" && continue
		cmp -s "$f" "$imnt/d/${f##*/}" ||
			why+="${f##*/}: $(cmp "$f" "$imnt/d/${f##*/}" 2>&1 | head -n 1 | sed 's/.*differ: //') (want '$(head -c 8 "$f" | tr -c '[:print:]' .)', found '$(head -c 8 "$imnt/d/${f##*/}" 2>/dev/null | tr -c '[:print:]' .)'); "
	done
	[ -z "$why" ] || why+="(${out:-}) $(grep -v '^ready' "$tmp/out" | tr '\n' ' ')"
}

for cv in "${cases[@]}"; do
	c=${cv%%:*}
	cenv=()
	[ "$c" = "$cv" ] || cenv=("${cv#*:}")
	for how in bare libgc; do
		one_case "$c" "$how" "${cenv[@]}"
		case $why in
		skip:*) ok "$c ($how) # SKIP ${why#skip:}"
			[ "$n" = 1 ] && { echo "1..1"; exit 0; } ;;
		'') ok "$c ($how): every acknowledged byte after the cut" ;;
		*) nok "$c ($how): $why" ;;
		esac
	done
done
echo "1..$n"
[ "$bad" = 0 ]
