#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# SQLite under libgc: 8 threads each committing to a database of its own,
# and 8 processes committing to one shared database, in WAL mode with
# synchronous=FULL and in DELETE (rollback journal) mode.  One INSERT per
# transaction (python3's sqlite3 module), integrity_check and the row count
# against the commits reported afterwards.
#   RECIPE_SQLITE_WORKERS=8
R_NAME=sqlite
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
load=$R_ROOT/examples/recipes/sqlite_load.py
workers=${RECIPE_SQLITE_WORKERS:-8}
"$R_PY" -c 'import sqlite3' 2>/dev/null || r_die "python3's sqlite3 module is missing (deps.sh recipes)"

# one MODE WORKLOAD JOURNAL: a run in a fresh folder; sets OPS and CHECK.
one() {
	local how=$1 mode=$2 journal=$3 d=$R_MNT/run out commits secs
	local -a pre
	rm -rf "$d" && mkdir -p "$d"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	out=$("${pre[@]}" "$R_PY" "$load" --dir "$d" --mode "$mode" --journal "$journal" \
		--workers "$workers" --secs "$R_SECS" 2>"$R_TMP/err") || {
		sed 's/^/    /' "$R_TMP/err" >&2
		OPS='' CHECK="run failed"
		return 0
	}
	commits=$(sed -n 's/.*commits=\([0-9]*\).*/\1/p' <<<"$out")
	secs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' <<<"$out")
	OPS=$(r_rate "$commits" "$secs")
	CHECK=$("$R_PY" "$load" --dir "$d" --mode "$mode" --journal "$journal" \
		--workers "$workers" --check --expect "$commits" 2>&1 | tail -n 1) || true
	rm -rf "$d"
	sync -f "$R_MNT"
}

r_header
for us in $R_FLUSHES; do
	r_disk_up "$us"
	for wl in "threads wal" "procs wal" "threads delete" "procs delete"; do
		read -r mode journal <<<"$wl"
		r_measure one "$mode" "$journal"
		case $mode in threads) what="$workers threads, a db each" ;; *) what="$workers procs, one db" ;; esac
		r_row "$us" "$what, ${journal^^}" "${R_OPS[bare]}" "${R_OPS[libgc]}" "${R_OPS[eatmydata]:-}" \
			"$R_TMP/report.libgc" "${R_FL[libgc]} (${R_FL[bare]})" "$R_CHECK" "$R_RATIO"
	done
	r_disk_down
done
