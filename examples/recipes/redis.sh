#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Redis under libgc: appendonly with appendfsync always, redis-benchmark -t
# set with 16 clients over a unix socket (no TCP port).  Redis writes and
# fdatasyncs its AOF once per event-loop pass for every client served in it,
# a group commit of its own in one thread.  Afterwards: redis-check-aof on
# the AOF, and as many SET commands in it as the benchmark sent.
#   RECIPE_REDIS_N=20000 (requests per run)  RECIPE_REDIS_CLIENTS=16
R_NAME=redis
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
n=${RECIPE_REDIS_N:-20000}
clients=${RECIPE_REDIS_CLIENTS:-16}
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	r_die "redis-server and redis-benchmark are missing (deps.sh recipes)"
sock=$R_TMP/redis.sock
srv=

stop_server() {
	[ -n "$srv" ] || return 0
	redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || kill -TERM "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=
}
r_on_exit stop_server

# one MODE: a fresh server and AOF; sets OPS and CHECK.
one() {
	local how=$1 d=$R_MNT/redis out i t0 secs sets aof
	local -a pre
	rm -rf "$d" && mkdir -p "$d"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	"${pre[@]}" redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
		--dir "$d" --appendonly yes --appendfsync always --save '' \
		--daemonize no --logfile "$R_TMP/redis.log" >/dev/null 2>&1 &
	srv=$!
	for i in $(seq 100); do
		redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG && break
		sleep 0.05
	done
	t0=$(r_now)
	out=$(redis-benchmark -s "$sock" -t set -c "$clients" -n "$n" -r 100000 -q 2>&1 |
		tr '\r' '\n' | grep '^SET:' | tail -n 1) || true
	secs=$(r_since "$t0")
	stop_server
	OPS=$(sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' <<<"$out")
	OPS=$(printf '%.0f' "${OPS:-0}")
	aof=$(ls "$d"/appendonlydir/*.incr.aof 2>/dev/null | head -n 1)
	if [ -z "$aof" ]; then
		CHECK="no AOF"
	elif ! redis-check-aof "$aof" 2>&1 | grep -qi 'AOF.*is valid'; then
		CHECK="redis-check-aof: $(redis-check-aof "$aof" 2>&1 | tail -n 1)"
	else
		sets=$(grep -ac '^SET' "$aof" || true)
		if [ "$sets" -ne "$n" ]; then CHECK="AOF has $sets SETs of $n"; else CHECK=ok; fi
	fi
	: "$secs"
	rm -rf "$d"
}

r_header
r_rows "redis SET, $clients clients, always" one
echo "ops/s: redis-benchmark SET requests per second, -n $n."
