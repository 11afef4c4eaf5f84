#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Self-test of the slow test disk (TAP): the injected flush latency reaches
# fsync, flushed data survives a power cut, unflushed data does not (unless
# the cut is told to keep it), and an injected flush EIO reaches fsync.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

SD=tests/slowdisk/slowdisk
PROBE=build/tests/slowdisk/sdprobe
ID=$$
NAMES=("st-lat-$ID" "st-cut-$ID" "st-eio-$ID" "st-keep-$ID" "st-fail-$ID" "st-dead-$ID" "st-next-$ID"
	"st-shm-$ID" "st-bare-$ID")
T=10

echo "1..$T"

n=0
skip_all() {
	for i in $(seq $((n + 1)) "$T"); do echo "ok $i - slowdisk # SKIP $1"; done
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip_all "needs root"
[ -c /dev/fuse ] || skip_all "needs /dev/fuse"
if [ ! -x "$PROBE" ] || [ ! -x "${SLOWDISKD:-build/tests/slowdisk/slowdiskd}" ]; then
	for i in $(seq "$T"); do echo "not ok $i - slowdisk # programs not built (run make)"; done
	exit 1
fi

cleanup() {
	for n in "${NAMES[@]}"; do
		timeout 120 bash "$SD" down --name "$n" >/dev/null 2>&1 || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. tests/tap.sh

# Value of KEY in key=value lines on stdin.
kv() {
	sed -n "s/^$1=//p" | tail -n 1
}

# Brings a disk up and sets M to its mount point, or to nothing on failure.
# "Cannot run here" (77) skips the tests not yet run.
up() {
	local out rc=0
	M=""
	out=$(sd up "$@" 2>&1) || rc=$?
	[ $rc -ne 77 ] || skip_all "$(tail -n 1 <<<"$out")"
	if [ $rc -ne 0 ]; then
		while IFS= read -r l; do echo "# up $*: $l"; done <<<"$out"
		return 0
	fi
	M=$(tail -n 1 <<<"$out")
}

# ---- 1: the flush latency reaches fsync (and the journal is as asked) ----
name=${NAMES[0]}
up --name "$name" --flush-us 4000 --volatile --size-mb 128 --journal-mb 32
if [ -z "$M" ]; then
	not_ok "the ext4 journal is the --journal-mb asked for (32 MiB)" "up failed"
	not_ok "fsync of a small write takes at least the 4 ms flush (median of 20)" "up failed"
else
	loop=$(sd status --name "$name" | kv loop)
	jsz=$(dumpe2fs -h "$loop" 2>/dev/null | sed -n 's/^Total journal size: *//p')
	if [ "$jsz" = 32M ]; then
		ok "the ext4 journal is the --journal-mb asked for (32 MiB)"
	else
		not_ok "the ext4 journal is the --journal-mb asked for (32 MiB)" \
			"dumpe2fs of $loop says: '${jsz}'"
	fi
	f0=$(sd status --name "$name" | kv flushes)
	out=$("$PROBE" fsync-lat "$M/lat" 20 || true)
	f1=$(sd status --name "$name" | kv flushes)
	med=$(kv median_us <<<"$out")
	if [ "$(kv result <<<"$out")" = ok ] && [ "${med:-0}" -ge 4000 ] &&
		[ $((f1 - f0)) -ge 20 ]; then
		ok "fsync of a small write takes at least the 4 ms flush (median ${med} us, $((f1 - f0)) flushes)"
	else
		not_ok "fsync of a small write takes at least the 4 ms flush (median of 20)" \
			"probe: $(tr '\n' ' ' <<<"$out")" "flushes seen by the disk: $((f1 - f0))"
	fi

	sd down --name "$name" >/dev/null || true
fi

# ---- 2 and 3: a power cut keeps what was flushed, drops what was not ----
# Written, never synced: token B with O_DIRECT (so it sits in the disk's
# volatile cache, checked by reading it back through the cache) and token C
# buffered (so it sits in the page cache).  Neither may be in the image after
# the cut.  The check holds only if no flush ran between those writes and the
# cut (ext4 commits every 5 s, and anyone may call sync(2)): the flush count
# at the cut tells, and such an attempt is run again.
name=${NAMES[1]}
A="SLOWDISK-SYNCED-$ID-$RANDOM-"
B="SLOWDISK-UNSYNCED-DIRECT-$ID-$RANDOM-"
C="SLOWDISK-UNSYNCED-BUFFERED-$ID-$RANDOM-"
why="" clean=0 cached=0 discarded=0
for attempt in 1 2 3; do
	sd down --name "$name" >/dev/null 2>&1 || true
	up --name "$name" --flush-us 4000 --volatile --size-mb 128
	[ -n "$M" ] || { why="up failed"; break; }
	r1=$("$PROBE" write-sync "$M/synced" "$A$A$A" || true)
	r2=$("$PROBE" write-sync "$M/unsynced" "$(printf '%*s' 65536 '' | tr ' ' x)" || true)
	if [ "$(kv result <<<"$r1")" != ok ] || [ "$(kv result <<<"$r2")" != ok ]; then
		why="setup writes failed: $r1 $r2"
		break
	fi
	f0=$(sd status --name "$name" | kv flushes)
	rb=$("$PROBE" write-direct "$M/unsynced" 0 "$B" 16384 || true)
	printf '%s%s%s' "$C" "$C" "$C" >"$M/buffered"
	rr=$("$PROBE" read-direct "$M/unsynced" 0 16384 "$B" || true)
	dirty=$(sd status --name "$name" | kv dirty_bytes)
	cut=$(sd cut --name "$name" || true)
	f1=$(kv flushes <<<"$cut")
	[ -n "$f1" ] && [ -n "$f0" ] || { why="cut or status failed"; break; }
	discarded=$(kv cut_discarded_bytes <<<"$cut")
	cached=0
	[ "$(kv result <<<"$rb")" = ok ] && [ "$(kv result <<<"$rr")" = found ] &&
		[ "$dirty" -ge 16384 ] && cached=1
	if [ "$f0" = "$f1" ]; then
		clean=1
		break
	fi
	echo "# attempt $attempt: $((f1 - f0)) flush(es) ran before the cut; again"
done

if [ -z "$why" ] && [ $clean = 1 ]; then
	I=$(sd inspect --name "$name" 2>/dev/null | tail -n 1) || I=
	img=$(sd status --name "$name" | kv image_path)
	got=$(cat "$I/synced" 2>/dev/null || true)
	na=$("$PROBE" count "$img" "$A")
	nb=$("$PROBE" count "$img" "$B")
	nc=$("$PROBE" count "$img" "$C")
	if [ "$got" = "$A$A$A" ] && [ "$na" -ge 3 ]; then
		ok "fsynced data is there after a power cut (file content, $na copies in the image)"
	else
		not_ok "fsynced data is there after a power cut" \
			"inspect mount: '$I', content: '$got'" "token copies in the image: $na"
	fi
	if [ $cached = 1 ] && [ "$discarded" -ge 16384 ] && [ "$nb" = 0 ] && [ "$nc" = 0 ]; then
		ok "unsynced data is gone after a power cut (16 KiB O_DIRECT in the cache, buffered)"
	else
		not_ok "unsynced data is gone after a power cut" \
			"reached the cache: $cached (write: $rb, read back: $rr, dirty_bytes=$dirty)" \
			"cut_discarded_bytes=$discarded" \
			"copies in the image: direct $nb, buffered $nc"
	fi
else
	[ -n "$why" ] || why="a flush ran before the cut in every attempt"
	not_ok "fsynced data is there after a power cut" "$why"
	not_ok "unsynced data is gone after a power cut" "$why"
fi
sd down --name "$name" >/dev/null || true

# ---- 4: an injected flush EIO reaches fsync ----
name=${NAMES[2]}
up --name "$name" --flush-us 1000 --volatile --size-mb 128
if [ -z "$M" ]; then
	not_ok "eio-flush 1: the next write+fsync fails with EIO" "up failed"
else
	pre=$("$PROBE" write-sync "$M/before" "written before the fault" || true)
	sd fault --name "$name" eio-flush 1 >/dev/null || true
	out=$("$PROBE" write-sync "$M/eio" "this fsync must fail" || true)
	st=$(sd status --name "$name" || true)
	if [ "$(kv result <<<"$pre")" = ok ] && [ "$(kv result <<<"$out")" = fsync:EIO ] &&
		[ "$(kv flush_errors <<<"$st")" -ge 1 ] && [ "$(kv fault_eio_flush <<<"$st")" = 0 ]; then
		ok "eio-flush 1: the next write+fsync fails with EIO"
	else
		not_ok "eio-flush 1: the next write+fsync fails with EIO" \
			"before the fault: $pre" "after: $out" \
			"flush_errors=$(kv flush_errors <<<"$st") fault_eio_flush=$(kv fault_eio_flush <<<"$st")"
	fi
	sd down --name "$name" >/dev/null || true
fi

# ---- 5: a cut told to keep 100% of the cache writes it all ----
# The converse of 3, so the scan above is known to find a token that did
# reach the image.
name=${NAMES[3]}
K="SLOWDISK-KEPT-$ID-$RANDOM-"
up --name "$name" --flush-us 1000 --volatile --size-mb 128
if [ -z "$M" ]; then
	not_ok "cut --survive 100 persists unflushed blocks" "up failed"
else
	r1=$("$PROBE" write-sync "$M/kept" "$(printf '%*s' 65536 '' | tr ' ' x)" || true)
	r2=$("$PROBE" write-direct "$M/kept" 0 "$K" 16384 || true)
	cut=$(sd cut --name "$name" --survive 100 --seed 7 || true)
	img=$(sd status --name "$name" | kv image_path)
	nk=$("$PROBE" count "$img" "$K")
	if [ "$(kv result <<<"$r1")" = ok ] && [ "$(kv result <<<"$r2")" = ok ] &&
		[ "$(kv cut_survived_bytes <<<"$cut")" -ge 16384 ] &&
		[ "$(kv cut_discarded_bytes <<<"$cut")" = 0 ] && [ "$nk" -ge 1 ]; then
		ok "cut --survive 100 persists unflushed blocks ($nk token copies in the image)"
	else
		not_ok "cut --survive 100 persists unflushed blocks" "$r1 $r2" \
			"$(grep cut_ <<<"$cut" | tr '\n' ' ')" "copies in the image: $nk"
	fi
	sd down --name "$name" >/dev/null || true
fi

# ---- 6: an up that fails prints nothing on stdout and says why on stderr ----
# Callers take the last line of stdout as the mount point; a failed up must
# leave them an empty string, never a path.  The daemon here exits at once.
name=${NAMES[4]}
rc=0
out=$(SLOWDISKD=/bin/false timeout 120 bash "$SD" up --name "$name" --size-mb 128 \
	2>"/tmp/st-fail-$ID.err") || rc=$?
err=$(cat "/tmp/st-fail-$ID.err")
rm -f "/tmp/st-fail-$ID.err"
if [ "$rc" -ne 0 ] && [ -z "$out" ] && grep -q 'up failed' <<<"$err" &&
	[ ! -e "${SLOWDISK_STATE:-/run/libgc-slowdisk}/$name" ]; then
	ok "a failed up prints nothing on stdout, says so on stderr and leaves no state"
else
	not_ok "a failed up prints nothing on stdout, says so on stderr and leaves no state" \
		"status $rc, stdout: '$out'" "stderr: $err"
fi
sd down --name "$name" >/dev/null 2>&1 || true

# ---- 8: a disk whose daemon was killed stops no other disk coming up ----
# Its FUSE mount answers ENOTCONN and its loop device stays mounted, as a
# test killed by a timeout leaves them; mkfs.btrfs asks every mounted loop
# device for its backing file.
dead=${NAMES[5]}
next=${NAMES[6]}
up --name "$dead" --flush-us 0 --size-mb 64
if [ -z "$M" ]; then
	not_ok "a killed disk beside: ext4, xfs and btrfs disks still come up" "up failed"
else
	kill -9 "$(cat "${SLOWDISK_STATE:-/run/libgc-slowdisk}/$dead/daemon.pid")" 2>/dev/null || true
	sleep 0.2
	failed=""
	for fs in ext4 xfs btrfs; do
		up --name "$next" --fs "$fs" --flush-us 0
		[ -n "$M" ] || failed+=" $fs"
		sd down --name "$next" >/dev/null 2>&1 || failed+=" $fs(down)"
	done
	sd down --name "$dead" >/dev/null 2>&1 || failed+=" down-of-the-dead-disk"
	if [ -z "$failed" ] && ! grep -q "/$dead/" /proc/self/mounts; then
		ok "a killed disk beside: ext4, xfs and btrfs disks still come up, and the dead one goes down"
	else
		not_ok "a killed disk beside: ext4, xfs and btrfs disks still come up" \
			"failed:${failed:- none}; still mounted: $(grep -c "/$dead/" /proc/self/mounts)"
	fi
fi

# ---- 9: down takes the shared memory libgc named for the disk's device ----
# Processes killed on the disk leave their domain and intent log segments;
# after down nothing can reach them. Another device's stay.
name=${NAMES[7]}
up --name "$name" --flush-us 1000 --volatile --size-mb 128
if [ -z "$M" ]; then
	not_ok "down removes the libgc segments named for its device, and only those" "up failed"
else
	hex=$(printf %x "$(stat -c %d "$M")")
	mine=(/dev/shm/libgc-0-"$hex"-p4026531836-v16-4a50 /dev/shm/libgc-intent2-0-"$hex"-c)
	other=/dev/shm/libgc-intent2-0-"$hex"0-c
	touch "${mine[@]}" "$other"
	sd down --name "$name" >/dev/null || true
	left=$(ls "${mine[@]}" 2>/dev/null || true)
	if [ -z "$left" ] && [ -e "$other" ]; then
		ok "down removes the libgc segments named for its device, and only those"
	else
		not_ok "down removes the libgc segments named for its device, and only those" \
			"left: ${left:-none}; the other device's: $([ -e "$other" ] && echo kept || echo removed)"
	fi
	rm -f "$other"
fi

# ---- 10: down from a disk whose filesystem was shut down ----
# A shut-down xfs answers stat of its root with EIO (the EIO tests do
# this): down still takes it all, and the name comes up again.
name=${NAMES[8]}
title="down from a disk whose xfs was shut down: the name comes up again"
if ! command -v xfs_io >/dev/null || ! command -v mkfs.xfs >/dev/null; then
	ok "$title # SKIP xfsprogs missing"
else
	SLOWDISK_FS=xfs up --name "$name" --flush-us 1000 --volatile --size-mb 128
	if [ -z "$M" ]; then
		not_ok "$title" "up failed"
	else
		xfs_io -x -c shutdown "$M" || true
		out=$(sd down --name "$name" 2>&1) && rc=0 || rc=$?
		SLOWDISK_FS=xfs up --name "$name" --flush-us 1000 --volatile --size-mb 128
		if [ "$rc" = 0 ] && [ -n "$M" ]; then
			ok "$title"
		else
			not_ok "$title" "down: status $rc: $out" "up again: ${M:-failed}"
		fi
		sd down --name "$name" >/dev/null 2>&1 || true
	fi
fi
