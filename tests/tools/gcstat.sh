#!/usr/bin/env bash
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
echo "1..10"

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
LD_PRELOAD=$LIB "$REPORTER" "$tmp" 40 exit threads=2 hold <"$tmp/hold" >"$tmp/out" 2>&1 &
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
LD_PRELOAD=$LIB "$SITEPROG" "$tmp" 15 mix threads=2 hold <"$tmp/hold2" >"$tmp/out2" 2>&1 &
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
