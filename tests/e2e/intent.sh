#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The intent log's traps (TAP): for each case intentprog acknowledges a
# small write through the log, then makes a change that must retire or
# checkpoint it (a larger write through a real fsync, truncate, rename,
# unlink, mmap, an O_TRUNC open, a punched hole), and is SIGKILLed before
# any checkpoint. Recovery then replays what the log holds into the live
# files: any record that should have been retired would put older bytes
# over newer ones, or write into the wrong file. Also: a log with records
# and no live process is refused after a "reboot" (its control segment
# gone), and taken over (checkpointed) when nothing was lost.
set -u
cd "$(dirname "$0")/../.."
B=${B:-build}
PROG=$B/tests/e2e/progs/intentprog
GCRUN=$B/gcrun
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $*"; }
for f in "$PROG" "$GCRUN" "$B/libgc.so"; do
	[ -x "$f" ] || [ -e "$f" ] || { echo "1..0 # SKIP $f missing"; exit 0; }
done
# /tmp must support file handles (name_to_handle_at): it holds the log and
# files here; a private directory per run.
dir=$(mktemp -d /var/tmp/libgc-intent.XXXXXX)
log=$dir/log
run() { # case [VAR=VALUE...] -> stderr in $dir/err (bash's "Killed" note kept out)
	local c=$1
	shift
	{ env LD_PRELOAD=$B/libgc.so LIBGC_INTENT=$dir/d LIBGC_INTENT_LOG=$log LIBGC_INTENT_MAX=1024 \
		"$@" "$PROG" "$c" "$dir/d" 2>"$dir/err"; } 2>/dev/null
}
shm() { printf '/dev/shm/libgc-intent2-%u-%x-%x' "$(id -u)" "$(stat -c %d "$log")" "$(stat -c %i "$log")"; }
# A case whose process is killed leaves its log's control segment, by
# design, for the next process of that log; the test removes it with the
# log (named by the log's inode: before the log goes).
drop_log() {
	[ -e "$log" ] && rm -f "$(shm)"
	rm -f "$log"
}
trap 'drop_log; rm -rf "$dir"' EXIT
fresh() {
	drop_log
	rm -rf "$dir/d"
	mkdir -p "$dir/d"
	"$GCRUN" --intent-init "$log" --size 1m >/dev/null || { nok "intent-init"; return 1; }
}
recover() { "$GCRUN" --recover "$log" 2>&1; }
content() { head -c "${2:-64}" "$dir/d/$1" 2>/dev/null; }

# 1. a logged small write, then a larger one at the same offset through a
# real fsync: the RETIRE must keep the older logged bytes out
fresh && run retire
out=$(recover)
got=$(content f 4)
if [ "$got" = BBBB ] && grep -q 'retired=1' <<<"$out"; then
	ok "retire: newer bytes of a real fsync stay ($out)"
else
	nok "retire: file starts '$got' after recovery ($out)"
fi
# 2. truncate of a file with records: checkpointed first, size stays
fresh && run truncate
out=$(recover)
size=$(stat -c %s "$dir/d/f")
if [ "$size" = 8 ]; then ok "truncate: size 8 after recovery ($out)"; else nok "truncate: size $size, want 8 ($out)"; fi
# 3. rename, and a new file at the old path: never written by recovery
fresh && run rename
out=$(recover)
if [ "$(content f)" = fresh ] && [ "$(content g 4)" = AAAA ]; then
	ok "rename: the new file at the path untouched, the renamed one has its bytes ($out)"
else
	nok "rename: f='$(content f)' g='$(content g 4)' ($out)"
fi
# 4. unlink: nothing recreated, recovery succeeds
fresh && run unlink
if out=$(recover) && [ ! -e "$dir/d/f" ]; then ok "unlink: nothing made again ($out)"; else nok "unlink: ($out)"; fi
# 5. a writable shared mapping: its msync'ed stores stay
fresh && run mmap
out=$(recover)
if [ "$(content f 4)" = MMMM ]; then ok "mmap: stores stay ($out)"; else nok "mmap: '$(content f 4)' ($out)"; fi
# 6. an O_TRUNC open and a shorter write
fresh && run otrunc
out=$(recover)
if [ "$(content f)" = xy ]; then ok "O_TRUNC: 'xy' after recovery ($out)"; else nok "O_TRUNC: '$(content f)' ($out)"; fi
# 7. a punched hole over logged bytes
fresh && run fallocate
out=$(recover)
if [ "$(od -An -c -N4 "$dir/d/f" | tr -d ' ')" = '\0\0\0\0' ]; then
	ok "fallocate(PUNCH_HOLE): the hole stays ($out)"
else
	nok "fallocate: '$(content f 4)' ($out)"
fi
# 7b. sync() acknowledges every file: the log's older records are retired
fresh && run sync
out=$(recover)
if [ "$(content f 4)" = SSSS ]; then ok "sync(): its bytes stay ($out)"; else nok "sync(): '$(content f 4)' ($out)"; fi
# 7c. a real O_DSYNC write (LIBGC_OSYNC=keep) is acknowledged by the kernel
fresh && run dsync LIBGC_OSYNC=keep
out=$(recover)
if [ "$(content f 4)" = DDDD ]; then ok "O_DSYNC kept: its bytes stay ($out)"; else nok "O_DSYNC kept: '$(content f 4)' ($out)"; fi
# 8. records left by a killed process, no power cut: the next process
# checkpoints them and goes on (the same mount, the page cache holds them)
fresh && run kill
run probe
if ! grep -q unreplayed "$dir/err" && [ "$(recover | grep -c 'records=0')" = 1 ]; then
	ok "a killed process's records are checkpointed by the next one"
else
	nok "takeover: $(cat "$dir/err") $(recover)"
fi
# 9. the same after a "reboot" (its control segment gone): the first
# process recovers the log itself at start-up, before main, in one line
fresh && run kill
rm -f "$(shm)"
run probe
lines=$(grep -c 'recovered (a crash, or a checkpoint that failed): 1 records replayed into 1 files' "$dir/err")
if [ "$lines" = 1 ] && [ "$(wc -l <"$dir/err")" = 1 ] && [ "$(content f 4)" = qAAA ]; then
	ok "a dirty log after a reboot is recovered by the first process at start-up, in one line"
else
	nok "recovery at start-up: $(cat "$dir/err") f='$(content f 4)'"
fi
out=$(recover)
grep -q 'records=0' <<<"$out" && ok "and left clean ($out)" || nok "not clean after: $out"
# 9b. a process that cannot replay it (not root, its file renamed: found
# by handle only) refuses it in one line, marks it, and runs on; a later
# recovery (root) leaves out the file changed since the refusal
fresh && run kill
rm -f "$(shm)"
mv "$dir/d/f" "$dir/d/g"
chown -R nobody "$dir/d" "$log"
chmod 755 "$dir"
{ setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_PRELOAD=$B/libgc.so \
	LIBGC_INTENT=$dir/d LIBGC_INTENT_LOG=$log "$PROG" probeg "$dir/d" 2>"$dir/err"; } 2>/dev/null
lines=$(grep -c 'cannot replay' "$dir/err")
out=$(recover)
if [ "$lines" = 1 ] && [ "$(wc -l <"$dir/err")" = 1 ] && [ "$(content g 1)" = q ] &&
	grep -q 'stale=1' <<<"$out" && [ "$(content g 1)" = q ]; then
	ok "a log a process cannot replay is refused in one line, and never replayed over a file changed since ($out)"
else
	nok "refusal: err=$(cat "$dir/err") g='$(content g 4)' recover: $out"
fi
rm -f "/dev/shm/libgc-intent2-$(id -u nobody)-"* "/dev/shm/libgc-intent-w2-$(id -u nobody)" 2>/dev/null
# 9c. a process killed while it held the log's lock and changed the
# segment (its head moved past records never written, its busy mark left):
# the next holder rebuilds the head from the log, so that what it writes
# follows on from the last record and a recovery reaches it
fresh
{ env LD_PRELOAD=$B/libgc.so LIBGC_INTENT=$dir/d LIBGC_INTENT_LOG=$log "$PROG" hold "$dir/d" \
	>"$dir/hold.out" 2>&1 & } 2>/dev/null
hold=$!
for i in $(seq 50); do grep -q held "$dir/hold.out" 2>/dev/null && break; sleep 0.1; done
"$PROG" corrupt "$(shm)"
run kill
kill -KILL "$hold" 2>/dev/null
{ wait "$hold"; } 2>/dev/null
out=$(recover)
if grep -q 'records=2 replayed=2' <<<"$out" && grep -q 'rebuilt from the log' "$dir/err"; then
	ok "a lock holder killed mid-change: the next one rebuilds the head, its record is reached ($out)"
else
	nok "rebuild: $(cat "$dir/err") $out"
fi
# 9d. the hazard programs with the log on: fork with commits in flight,
# cancellation while waiting, writes and syncs from a signal handler,
# peers SIGKILLed mid-commit: each ends, with no error, through the log
for h in "forker -t 4 -k 6" "cancel -r 12" "sigwrite -n 200 -i 300" "peerdeath -w 3 -k 8"; do
	fresh
	rm -f "$dir/rep"
	set -- $h
	prog=$B/tests/e2e/progs/$1
	shift
	o=$({ timeout 60 env LD_PRELOAD=$B/libgc.so LIBGC_INTENT=$dir/d LIBGC_INTENT_LOG=$log \
		LIBGC_REPORT="$dir/rep" "$prog" "$@" "$dir/d" 2>&1; } 2>/dev/null)
	rc=$?
	logged=$(sed -n 's/.*intent_logged=\([0-9]*\).*/\1/p' "$dir/rep" 2>/dev/null | awk '{s+=$1} END {print s+0}')
	if [ $rc = 0 ] && grep -q 'errors=0' <<<"$o" && [ "$logged" -gt 0 ]; then
		ok "${h%% *} with the log: done, no error, $logged requests through it"
	else
		nok "${h%% *} with the log: rc=$rc logged=$logged: $(tail -n 3 <<<"$o")"
	fi
done
# 11. another thread moves the descriptor (dup2) while a request through
# the log waits: every fsync returns 0, as bare. (A close instead reads EBADF
# now and then, bare too, whenever the close lands before the call reaches
# the kernel: not asserted.)
fresh && {
	o=$({ timeout 60 env LD_PRELOAD=$B/libgc.so LIBGC_INTENT=$dir/d LIBGC_INTENT_LOG=$log \
		LIBGC_REPORT="$dir/rep" "$B/tests/e2e/progs/fdswap" "$dir/d" 30 2>&1; } 2>/dev/null)
	logged=$(sed -n 's/.*intent_logged=\([0-9]*\).*/\1/p' "$dir/rep" 2>/dev/null | awk '{s+=$1} END {print s+0}')
	if grep -q 'rounds=30 failed=0' <<<"$o" && [ "$logged" -gt 0 ]; then
		ok "fdswap with the log: every fsync succeeds, as bare ($logged through it)"
	else
		nok "fdswap with the log: $o (logged=$logged)"
	fi
}
# 10. gcd recovers the logs listed for it at start-up (--recover-only)
if [ -x "$B/gcd" ]; then
	fresh && run kill
	rm -f "$(shm)"
	printf '# intent logs\n%s\n' "$log" >"$dir/list"
	: >"$dir/d/f.tmp"
	head -c 16 "$dir/d/f" >/dev/null
	if "$B/gcd" --recover-only --intent-logs "$dir/list" 2>"$dir/err" &&
		grep -q 'replayed=1' "$dir/err" && [ "$(content f 4)" = AAAA ] &&
		"$B/gcd" --recover-only --intent-logs "$dir/list" 2>"$dir/err2" && [ ! -s "$dir/err2" ]; then
		ok "gcd --recover-only replays a listed log, and a clean one is left alone"
	else
		nok "gcd recovery: $(cat "$dir/err" "$dir/err2" 2>/dev/null)"
	fi
else
	ok "gcd recovery # SKIP gcd not built (clang, bpftool, libbpf)"
fi
echo "1..$n"
[ "$bad" = 0 ]
