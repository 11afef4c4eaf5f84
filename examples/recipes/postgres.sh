#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# PostgreSQL 15 under libgc: pgbench -N (-c 8 -j 2) against a server whose
# data directory is on the slow disk, the server started by pg_ctl with the
# preload in its environment (every backend inherits it), as the postgres
# user; reached over a unix socket only.  Beside it, the server's own group
# commit (commit_delay/commit_siblings).  pgbench runs with -n (no vacuum,
# which would truncate the history).  Afterwards: sum(abalance) of the
# accounts equals sum(delta) of the history, and the history holds every
# transaction pgbench reported.
#   RECIPE_PG_SECS=5 (pgbench -T)  RECIPE_PG_SCALE=4  RECIPE_PG_CLIENTS=8
#   RECIPE_PG_DELAY="1000 5"       commit_delay (us) and commit_siblings
R_NAME=postgres
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PGBIN=${RECIPE_PGBIN:-/usr/lib/postgresql/15/bin}
T=${RECIPE_PG_SECS:-5}
R_RUN_SECS=$T # the header's run length
scale=${RECIPE_PG_SCALE:-4}
clients=${RECIPE_PG_CLIENTS:-8}
read -r delay siblings <<<"${RECIPE_PG_DELAY:-1000 5}"
[ -x "$PGBIN/pg_ctl" ] && [ -x "$PGBIN/pgbench" ] || r_die "PostgreSQL 15 is missing in $PGBIN (deps.sh recipes)"
id postgres >/dev/null 2>&1 || r_die "no postgres user (package postgresql-15)"

# A port of our own on the socket only (no TCP): no clash with a system
# cluster or a second run.
port=$((55000 + $$ % 5000))
pgtmp=$R_TMP/pg
mkdir -p "$pgtmp"
chown postgres: "$pgtmp"
as_pg() { runuser -u postgres -- "$@"; }
psql_q() { as_pg "$PGBIN/psql" -h "$pgtmp" -p "$port" -d postgres -Atqc "$1"; }

# start MODE [postgres -c options...]: the server under MODE.
start() {
	local how=$1 rep=$pgtmp/report.$1
	shift
	local -a pre
	: >"$rep"
	chown postgres: "$rep"
	mapfile -t pre < <(r_env "$how" "$rep")
	as_pg "${pre[@]}" "$PGBIN/pg_ctl" -D "$data" -l "$pgtmp/log" -w -t 120 \
		-o "$*" start >/dev/null || {
		tail -n 5 "$pgtmp/log" >&2
		r_die "the server did not start ($how)"
	}
}

stop() {
	as_pg "$PGBIN/pg_ctl" -D "$data" -w -t 120 stop -m fast >/dev/null
}

# bench MODE [options]: one pgbench run; sets OPS, TXNS.
bench() {
	local out
	start "$@"
	out=$(as_pg "$PGBIN/pgbench" -h "$pgtmp" -p "$port" -c "$clients" -j 2 -T "$T" -N -n \
		postgres 2>"$R_TMP/err") || { sed 's/^/    /' "$R_TMP/err" >&2; }
	stop
	OPS=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out" | head -n 1)
	OPS=$(printf '%.0f' "${OPS:-0}")
	TXNS=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	txns_total=$((txns_total + ${TXNS:-0}))
}

# The invariant pgbench -N keeps, and every reported transaction there.
check() {
	local a h n
	start bare
	a=$(psql_q "SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts")
	h=$(psql_q "SELECT coalesce(sum(delta), 0) FROM pgbench_history")
	n=$(psql_q "SELECT count(*) FROM pgbench_history")
	stop
	if [ "$a" != "$h" ]; then
		echo "sum(abalance)=$a sum(delta)=$h"
	elif [ "$n" != "$txns_total" ]; then
		echo "history=$n, pgbench reported $txns_total"
	else
		echo ok
	fi
}

r_header
for us in $R_FLUSHES; do
	r_disk_up "$us"
	data=$R_MNT/pgdata
	mkdir -p "$data"
	chown postgres: "$data"
	chmod 0700 "$data"
	as_pg "$PGBIN/initdb" -D "$data" -A trust -U postgres --no-sync -E UTF8 >/dev/null
	cat >>"$data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$pgtmp'
port = $port
fsync = on
synchronous_commit = on
shared_buffers = 128MB
max_wal_size = 2GB
checkpoint_timeout = 30min
CONF
	r_on_exit "runuser -u postgres -- $PGBIN/pg_ctl -D $data stop -m immediate"
	start bare
	as_pg "$PGBIN/pgbench" -h "$pgtmp" -p "$port" -i -q -s "$scale" postgres >/dev/null 2>&1 ||
		r_die "pgbench -i failed"
	stop
	txns_total=0
	r_measure_twice bench "$pgtmp/report.libgc" -c commit_delay="$delay" -c commit_siblings="$siblings"
	r_rows_twice "$us" "pgbench -N -c $clients -j 2, s=$scale" \
		"  with commit_delay=$delay sib=$siblings" "$pgtmp/report.libgc" "$(check)"
	r_disk_down
done
echo "ops/s: pgbench tps (without initial connection time), -T $T."
