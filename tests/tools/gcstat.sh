#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# gcstat against a workload with a known number of requests: --json, -p,
# pruning of dead processes' segments, the plain table on a pipe, the live
# screen as a person sees it in a terminal (tmux; skipped without it), and
# -p PID --sites naming the function and library that made the requests.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
B=${B:-build}
GCSTAT=$B/gcstat
LIB=$PWD/$B/libgc.so
REPORTER=$B/tests/e2e/progs/reporter
SITEPROG=$B/tests/e2e/progs/siteprog
n=0
echo "1..15"

tmp=$(mktemp -d /var/tmp/gcstat-test.XXXXXX)
export LIBGC_STATS_DIR=$tmp/shm
mkdir -p "$LIBGC_STATS_DIR"
holder_pid=
site_pid=
cleanup() {
	[ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null
	[ -n "$site_pid" ] && kill "$site_pid" 2>/dev/null
	exec 4>&- 2>/dev/null
	[ -n "${TMUX_SOCK:-}" ] && tmux -L "$TMUX_SOCK" kill-server 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

out=$($GCSTAT --help 2>&1) && grep -q -- '--json' <<<"$out" &&
	ok "gcstat --help" || not_ok "gcstat --help" "$out"

# A workload that syncs 40 times over two threads and then holds until
# its stdin closes.
mkfifo "$tmp/hold"
LD_PRELOAD=$LIB "$REPORTER" "$tmp" 40 exit threads=2 hold after=150 <"$tmp/hold" >"$tmp/out" 2>&1 &
holder_pid=$!
exec 4>"$tmp/hold"
for _ in $(seq 100); do grep -q done "$tmp/out" && break; sleep 0.05; done
seg=$(ls "$LIBGC_STATS_DIR")
mode=$(stat -c %a "$LIBGC_STATS_DIR/$seg" 2>/dev/null)
[ "$mode" = 600 ] && [[ $seg == libgc.stats-$(id -u)-*-$holder_pid ]] &&
	ok "the workload's segment: $seg, mode $mode" ||
	not_ok "the workload's segment" "ls: $(ls -l "$LIBGC_STATS_DIR")"

json=$($GCSTAT --json -i 0 -p "$holder_pid")
req=$(grep -o '"requests":[0-9]*' <<<"$json" | head -1 | cut -d: -f2)
real=$(grep -o '"real_syncs":[0-9]*' <<<"$json" | head -1 | cut -d: -f2)
if [ "$req" = 40 ] && [ -n "$real" ] && [ "$real" -ge 1 ] && [ "$real" -le 40 ] &&
	grep -q '"comm":"reporter"' <<<"$json" && grep -q '"bytes_buffered":4[0-9],' <<<"$json" &&
	grep -q '"throttled_pct":' <<<"$json"; then
	ok "--json -p: 40 requests, $real real syncs, the 40 bytes written and a few of stdout"
else
	not_ok "--json -p: 40 requests" "$json"
fi
if command -v python3 >/dev/null; then
	python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$json" &&
		ok "--json is valid JSON" || not_ok "--json is valid JSON" "$json"
else
	ok "--json is valid JSON # SKIP no python3 to parse it"
fi

# A dead process's segment is removed; a live one stays.
true & dead=$!; wait $dead
fake=libgc.stats-$(id -u)-$(stat -L -c %i /proc/self/ns/pid)-$dead
: >"$LIBGC_STATS_DIR/$fake"
json=$($GCSTAT --json -i 0)
if [ ! -e "$LIBGC_STATS_DIR/$fake" ] && [ -e "$LIBGC_STATS_DIR/$seg" ] &&
	grep -q '"pruned":1' <<<"$json"; then
	ok "the segment of dead pid $dead pruned, the live one kept"
else
	not_ok "pruning" "$(ls "$LIBGC_STATS_DIR")" "$json"
fi

table=$($GCSTAT -i 0.2 -n 2 | cat)
[ "$(grep -c 'REQ/s' <<<"$table")" = 2 ] && grep -q "reporter" <<<"$table" &&
	grep -q 'MB/s  THR%' <<<"$table" &&
	ok "on a pipe: a scrolling table, one per sample" || not_ok "plain table" "$table"

if ! command -v tmux >/dev/null; then
	ok "live screen in a terminal # SKIP tmux is not installed"
else
	TMUX_SOCK=gcstat-test-$$
	tmux -L "$TMUX_SOCK" new-session -d -s gcstat -x 140 -y 30 \
		"env LIBGC_STATS_DIR=$LIBGC_STATS_DIR $GCSTAT -i 0.3"
	screen=
	for _ in $(seq 40); do
		sleep 0.1
		screen=$(tmux -L "$TMUX_SOCK" capture-pane -p -t gcstat 2>/dev/null)
		grep -q reporter <<<"$screen" && break
	done
	tmux -L "$TMUX_SOCK" send-keys -t gcstat C-c
	sleep 0.5
	if grep -q '1 process under libgc' <<<"$screen" && grep -q 'REQ/s' <<<"$screen" &&
		grep -qE "^ *$holder_pid reporter" <<<"$screen" &&
		! tmux -L "$TMUX_SOCK" has-session -t gcstat 2>/dev/null; then
		ok "live screen in a terminal (tmux): the process shown, ctrl-c ends it"
	else
		not_ok "live screen in a terminal (tmux)" "$screen"
	fi
fi

exec 4>&-
wait "$holder_pid"; rc=$?
holder_pid=
[ $rc = 0 ] && [ -z "$(ls "$LIBGC_STATS_DIR")" ] &&
	ok "the workload ends and its segment goes with it" ||
	not_ok "segment removed at exit" "rc=$rc" "$(ls -l "$LIBGC_STATS_DIR")"

# Call sites: 2 threads make 15 fsyncs each through libsite.so's
# site_flush_log, 2 others 15 each from the program's local_flush.
mkfifo "$tmp/hold2"
LIBGC_SITES=1 LD_PRELOAD=$LIB "$SITEPROG" "$tmp" 15 mix threads=2 hold <"$tmp/hold2" >"$tmp/out2" 2>&1 &
site_pid=$!
exec 5>"$tmp/hold2"
for _ in $(seq 100); do grep -q done "$tmp/out2" && break; sleep 0.05; done
sites=$($GCSTAT -p "$site_pid" --sites 2>&1)
if grep -qE '^ +30 .* site_flush_log \(libsite\.so\+0x[0-9a-f]+\)' <<<"$sites" &&
	grep -qE '^ +30 .* local_flush \(siteprog\+0x[0-9a-f]+\)' <<<"$sites"; then
	ok "-p PID --sites: site_flush_log in libsite.so and local_flush, 30 requests each"
else
	not_ok "-p PID --sites" "$sites"
fi
json=$($GCSTAT -p "$site_pid" --sites --json 2>&1)
if grep -q '"fn":"site_flush_log","lib":"libsite.so"' <<<"$json" &&
	grep -q '"requests":30,' <<<"$json" &&
	{ ! command -v python3 >/dev/null || python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$json"; }; then
	ok "-p PID --sites --json: the sites as valid JSON"
else
	not_ok "-p PID --sites --json" "$json"
fi
exec 5>&-
wait "$site_pid"
site_pid=

# A process that records no call sites (the default) is asked to by
# --sites, and shows them from its next requests on: libunwind is loaded
# then, not before.
LD_PRELOAD=$LIB "$SITEPROG" "$tmp" 150 lib threads=1 pace=10 >"$tmp/out3" 2>&1 &
site_pid=$!
for _ in $(seq 100); do ls "$LIBGC_STATS_DIR" | grep -q -- "-$site_pid\$" && break; sleep 0.02; done
before=$(grep -c libunwind "/proc/$site_pid/maps" 2>/dev/null)
sites=$($GCSTAT -p "$site_pid" --sites -i 0.5 2>&1)
after=$(grep -c libunwind "/proc/$site_pid/maps" 2>/dev/null)
nreq=$(grep -E ' site_flush_log \(libsite\.so\+0x' <<<"$sites" | awk '{print $1}')
if [ "$before" = 0 ] && [ "${after:-0}" -ge 1 ] && [ "${nreq:-0}" -ge 10 ]; then
	ok "--sites asks a process that records none: $nreq requests of site_flush_log shown; libunwind loaded then"
else
	not_ok "--sites asks a process that records none" "before=$before after=$after" "$sites"
fi
kill "$site_pid" 2>/dev/null; wait "$site_pid" 2>/dev/null
site_pid=

# The directory is everyone's: a FIFO under a segment's name must not stop
# gcstat in open, a symlink is not followed, and a file not owned by the
# uid its name carries is not shown (here another user's, named as ours).
sleep 30 & live=$!
ns=$(stat -L -c %i /proc/self/ns/pid)
mkfifo "$LIBGC_STATS_DIR/libgc.stats-$(id -u)-$ns-$live"
json=$(timeout 10 $GCSTAT --json -i 0); rc=$?
if [ $rc = 0 ] && ! grep -q "\"pid\":$live," <<<"$json"; then
	ok "a FIFO named as a segment: gcstat does not block, and does not show it"
else
	not_ok "a FIFO named as a segment" "rc=$rc" "$json"
fi
rm -f "$LIBGC_STATS_DIR/libgc.stats-$(id -u)-$ns-$live"
ln -s /etc/passwd "$LIBGC_STATS_DIR/libgc.stats-$(id -u)-$ns-$live"
json=$(timeout 10 $GCSTAT --json -i 0); rc=$?
[ $rc = 0 ] && ! grep -q "\"pid\":$live," <<<"$json" &&
	ok "a symlink named as a segment is not followed" || not_ok "a symlink named as a segment" "rc=$rc" "$json"
rm -f "$LIBGC_STATS_DIR/libgc.stats-$(id -u)-$ns-$live"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	# a real segment, copied under the name of a live process of ours,
	# but owned by nobody
	LIBGC_SITES=0 LD_PRELOAD=$LIB "$REPORTER" "$tmp" 3 exit hold after=150 <"$tmp/hold" >"$tmp/out4" 2>&1 &
	src_pid=$!
	exec 4>"$tmp/hold"
	for _ in $(seq 100); do grep -q done "$tmp/out4" && break; sleep 0.05; done
	src=$(ls "$LIBGC_STATS_DIR" | grep -- "-$src_pid\$")
	forged=libgc.stats-0-$ns-$live
	cp "$LIBGC_STATS_DIR/$src" "$LIBGC_STATS_DIR/$forged"
	# the copy names the process it was made by; make it name $live
	python3 - "$LIBGC_STATS_DIR/$forged" "$live" <<'PY' 2>/dev/null
import struct, sys
p, pid = sys.argv[1], int(sys.argv[2])
start = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19])
with open(p, "r+b") as f:
    # ps_pid at 24, ps_starttime at 40 (core/procstats.h)
    f.seek(24); f.write(struct.pack("<i", pid))
    f.seek(40); f.write(struct.pack("<Q", start))
PY
	json=$(timeout 10 $GCSTAT --json -i 0)
	shown_root=$(grep -c "\"pid\":$live," <<<"$json")
	chown nobody "$LIBGC_STATS_DIR/$forged"
	json=$(timeout 10 $GCSTAT --json -i 0)
	if [ "$shown_root" = 1 ] && ! grep -q "\"pid\":$live," <<<"$json"; then
		ok "a segment owned by another uid than its name's is not shown (the same file owned by root is)"
	else
		not_ok "a segment owned by another uid than its name's" "shown while root's: $shown_root" "$json"
	fi
	rm -f "$LIBGC_STATS_DIR/$forged"
	exec 4>&-
	wait "$src_pid"
else
	ok "a segment owned by another uid # SKIP needs root and a user nobody"
fi
kill "$live" 2>/dev/null; wait "$live" 2>/dev/null

# A process that ends during --json's interval is shown, from its last
# counts, marked as exited.
LD_PRELOAD=$LIB "$REPORTER" "$tmp" 12 exit threads=1 hold after=150 <"$tmp/hold" >"$tmp/out5" 2>&1 &
end_pid=$!
exec 4>"$tmp/hold"
for _ in $(seq 100); do grep -q done "$tmp/out5" && break; sleep 0.05; done
$GCSTAT --json -i 1 -p "$end_pid" >"$tmp/json5" 4>&- &
gs=$!
sleep 0.3
exec 4>&-
wait "$end_pid"
wait "$gs"
json=$(cat "$tmp/json5")
if grep -q "\"pid\":$end_pid,\"uid\":[0-9]*,\"exited\":true" <<<"$json" &&
	grep -q '"requests":12,' <<<"$json"; then
	ok "a process that exited during the interval: shown, exited, with its 12 requests"
else
	not_ok "a process that exited during the interval" "$json"
fi
