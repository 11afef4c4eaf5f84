#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# MariaDB 10.11 (InnoDB) under libgc: sysbench oltp_write_only (8 threads,
# 4 tables) against a server whose data directory is on the slow disk,
# started with the preload in its environment (it drops to the mysql user
# itself), reached over a unix socket only, with no option file read
# (--no-defaults). Every commit is durable: innodb_flush_log_at_trx_commit=1.
# Again with the binary log on and sync_binlog=1 (two-phase commit: the
# binary log and the redo log are synced for each group). InnoDB groups its
# own commits (one thread writes and syncs the redo log for all that wait),
# as PostgreSQL does. Afterwards: CHECK TABLE passes for every table, each
# holds the rows it was prepared with (oltp_write_only deletes a row and
# inserts it back in each transaction), and the server logged no error.
# Runs of 5 s, as pgbench's in postgres.sh: a server is started for each,
# and the library's policy starts grouped for its first commits (the binary
# log's rows read 0.95x bare at 4 ms in 2 s runs, 1.01x in 20 s runs).
#   RECIPE_MARIADB_SECS=5 (sysbench --time)  RECIPE_MARIADB_THREADS=8
#   RECIPE_MARIADB_ROWS=10000 (a table)
R_NAME=mariadb
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
T=${RECIPE_MARIADB_SECS:-5}
R_RUN_SECS=$T # the header's run length
threads=${RECIPE_MARIADB_THREADS:-8}
rows=${RECIPE_MARIADB_ROWS:-10000}
tables=4
for v in "$T" "$threads" "$rows"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] ||
		r_die "RECIPE_MARIADB_SECS, RECIPE_MARIADB_THREADS and RECIPE_MARIADB_ROWS must be positive integers"
done
for t in mariadbd mariadb-install-db mariadb-admin mariadb sysbench; do
	command -v "$t" >/dev/null || r_die "$t is missing (deps.sh recipes: mariadb-server, sysbench)"
done
id mysql >/dev/null 2>&1 || r_die "no mysql user (package mariadb-server)"

run_dir=$R_TMP/mariadb
mkdir -p "$run_dir"
chown mysql: "$run_dir"
sock=$run_dir/sock
sql() { mariadb --no-defaults --socket="$sock" -uroot -N -B -e "$1"; }
sb() {
	sysbench oltp_write_only --mysql-socket="$sock" --mysql-user=root --mysql-db=sbtest \
		--tables=$tables --table-size="$rows" --threads="$threads" "$@"
}

# start MODE [mariadbd options...]: the server under MODE, its exit report
# (counted runs) in $run_dir/report.MODE.
start() {
	local how=$1 rep=$run_dir/report.$1 i
	shift
	local -a pre
	: >"$rep"
	chown mysql: "$rep"
	mapfile -t pre < <(r_env "$how" "$rep")
	"${pre[@]}" mariadbd --no-defaults --user=mysql --datadir="$data" --socket="$sock" \
		--skip-networking --pid-file="$run_dir/pid" --log-error="$run_dir/server.err" \
		--innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=256M \
		--innodb-buffer-pool-dump-at-shutdown=0 --innodb-buffer-pool-load-at-startup=0 \
		"$@" </dev/null >/dev/null 2>&1 &
	for ((i = 0; i < 600; i++)); do
		mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1 && return 0
		kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	tail -n 5 "$run_dir/server.err" >&2
	r_die "the server did not start ($how)"
}

stop() {
	mariadb-admin --no-defaults --socket="$sock" -uroot shutdown >/dev/null 2>&1 || true
	wait
}

# bench MODE [options]: one sysbench run; sets OPS (and CHECK where it failed).
bench() {
	local out
	start "$@"
	out=$(sb --time="$T" run 2>"$R_TMP/err") || {
		sed 's/^/    /' "$R_TMP/err" >&2
		CHECK="sysbench failed ($1)"
	}
	stop
	OPS=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' <<<"$out" | head -n 1)
	OPS=$(printf '%.0f' "${OPS:-0}")
}

# Every table whole, with the rows it was prepared with; no error logged.
check() {
	local t n c
	start bare
	for ((t = 1; t <= tables; t++)); do
		c=$(sql "CHECK TABLE sbtest.sbtest$t" | awk -F'\t' '$3 == "status" { print $4 }')
		n=$(sql "SELECT COUNT(*) FROM sbtest.sbtest$t")
		[ "$c" = OK ] || { stop; echo "sbtest$t: CHECK TABLE says '$c'"; return; }
		[ "$n" = "$rows" ] || { stop; echo "sbtest$t: $n rows, $rows prepared"; return; }
	done
	stop
	if grep -q '\[ERROR\]' "$run_dir/server.err"; then
		echo "the server logged: $(grep -m 1 '\[ERROR\]' "$run_dir/server.err" | cut -c 1-80)"
	else
		echo ok
	fi
}

r_header
for us in $R_FLUSHES; do
	r_disk_up "$us"
	data=$R_MNT/mariadb
	mkdir -p "$data"
	chown mysql: "$data"
	mariadb-install-db --no-defaults --user=mysql --datadir="$data" \
		--auth-root-authentication-method=normal >"$R_TMP/install.log" 2>&1 ||
		{ tail -n 5 "$R_TMP/install.log" >&2; r_die "mariadb-install-db failed"; }
	r_on_exit "mariadb-admin --no-defaults --socket=$sock -uroot shutdown"
	start bare
	sql "CREATE DATABASE sbtest"
	sb prepare >/dev/null 2>"$R_TMP/err" || { sed 's/^/    /' "$R_TMP/err" >&2; r_die "sysbench prepare failed"; }
	stop
	# the servers' log of this disk's runs, for the check (appended to)
	rm -f "$run_dir/server.err"
	r_measure_twice bench "$run_dir/report.libgc" --log-bin="$data/binlog" --server-id=1 --sync-binlog=1
	r_rows_twice "$us" "oltp_write_only, $threads threads" "  binary log, sync_binlog=1" \
		"$run_dir/report.libgc" "$(check)"
	r_disk_down
done
echo "ops/s: sysbench transactions a second (oltp_write_only: 4 writes each), --time=$T."
