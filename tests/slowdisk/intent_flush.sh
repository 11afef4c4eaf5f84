#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The intent log's fdatasync is one cache flush (TAP), from the slow disk's
# flush counter: one thread, 300 logged fdatasyncs on a log made by
# gcrun --intent-init (zero-filled, fully written) cost about 300 flushes;
# the same on a log whose blocks are fallocated (unwritten extents: each
# first write converts them, a journal commit) cost about 600, as bare
# appends do. The second shows the count can tell them apart. Root.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
SD=tests/slowdisk/slowdisk
NAME=iflush-$$
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $*"; }
out=$("$SD" up --name "$NAME" --flush-us 1000 2>&1)
rc=$?
if [ $rc = 77 ] || [ $rc != 0 ]; then
	echo "1..0 # SKIP slow disk: $(tail -n 1 <<<"$out")"
	exit 0
fi
trap '"$SD" down --name "$NAME" >/dev/null 2>&1' EXIT
M=$(tail -n 1 <<<"$out")
mkdir -p "$M/d"
fl() { "$SD" status --name "$NAME" | sed -n 's/^flushes=//p'; }
run() { # log -> "flushes logged"
	local f0 f1 rep
	rm -rf "$M/d" && mkdir "$M/d" && sync
	f0=$(fl)
	rep=$(LIBGC_REPORT=kv LIBGC_INTENT=$M/d LIBGC_INTENT_LOG=$1 LD_PRELOAD=$B/libgc.so \
		"$B/examples/fsync_storm" -t 1 -D "$M/d" -f shared -m fdatasync -n 300 -q 2>&1)
	f1=$(fl)
	echo "$((f1 - f0)) $(sed -n 's/.*intent_logged=\([0-9]*\).*/\1/p' <<<"$rep")"
}
"$B/gcrun" --intent-init "$M/log" --size 16m >/dev/null
read -r f l <<<"$(run "$M/log")"
if [ "${l:-0}" -ge 290 ] && [ "$f" -le $((l + l / 10 + 12)) ]; then
	ok "zero-filled log: $f flushes for $l logged fdatasyncs"
else
	nok "zero-filled log: $f flushes for ${l:-0} logged fdatasyncs"
fi
fallocate -l 16m "$M/log2" && dd if="$M/log" of="$M/log2" bs=4096 count=1 conv=notrunc 2>/dev/null && sync
read -r f l <<<"$(run "$M/log2")"
if [ "${l:-0}" -ge 290 ] && [ "$f" -ge $((l * 17 / 10)) ]; then
	ok "fallocated log: $f flushes for $l (the counter sees the extent conversion)"
else
	nok "fallocated log: $f flushes for ${l:-0} logged fdatasyncs"
fi
echo "1..$n"
[ "$bad" = 0 ]
