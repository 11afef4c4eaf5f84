#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Berkeley DB (5.3, through perl's DB_File) under libgc: 8 processes, each
# putting records into a btree file of its own and calling $db->sync after
# every put, the way small daemons keep a durable key/value store.
# Afterwards db5.3_verify on every file and db5.3_dump's record count against
# the puts counted.
#   RECIPE_BDB_PROCS=8
R_NAME=bdb
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
procs=${RECIPE_BDB_PROCS:-8}
perl -MDB_File -e 1 2>/dev/null || r_die "perl's DB_File is missing (package perl)"
command -v db5.3_verify >/dev/null || r_die "db5.3_verify is missing (deps.sh recipes: db5.3-util)"

# Each process: put + sync until the deadline, then print its count.
load='use DB_File; use Fcntl; use Time::HiRes qw(time);
my ($file, $secs) = @ARGV;
tie my %h, "DB_File", $file, O_RDWR | O_CREAT, 0644, $DB_BTREE or die "tie $file: $!";
my $db = tied %h;
my ($n, $end) = (0, time + $secs);
while (time < $end) {
	$h{sprintf("key%08d", $n)} = "value " . ("x" x 200) . " $n";
	$db->sync == 0 or die "sync: $!";
	$n++;
}
undef $db; untie %h;
print "$n\n";'

# one MODE: sets OPS and CHECK.
one() {
	local how=$1 d=$R_MNT/bdb t0 secs n i c
	local -a pre
	rm -rf "$d" && mkdir -p "$d"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	t0=$(r_now)
	for ((i = 0; i < procs; i++)); do
		"${pre[@]}" perl -e "$load" "$d/db$i" "$R_SECS" >"$d/count.$i" 2>"$d/err.$i" &
	done
	wait
	secs=$(r_since "$t0")
	n=$(cat "$d"/count.* | awk '{ s += $1 } END { print s + 0 }')
	OPS=$(r_rate "$n" "$secs")
	CHECK=ok
	c=0
	for ((i = 0; i < procs; i++)); do
		[ -s "$d/count.$i" ] || CHECK="process $i: $(head -n 1 "$d/err.$i")"
		db5.3_verify -q "$d/db$i" 2>"$R_TMP/verify" || CHECK="db5.3_verify db$i: $(head -n 1 "$R_TMP/verify")"
		c=$((c + $(db5.3_dump -p "$d/db$i" | grep -c '^ key')))
	done
	[ "$c" -eq "$n" ] || CHECK="$c records, $n puts counted"
	rm -rf "$d"
	sync -f "$R_MNT"
}

r_header
r_rows "Berkeley DB put+sync, $procs procs" one
echo "ops/s: puts made durable per second over all processes (a btree file each)."
