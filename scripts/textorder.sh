#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Writes core/first.list: the library's functions that short processes run,
# which the build places together at the front of its text.
#
# The kernel maps a library's code a 64 KiB window at a time (fault-around):
# a process pays a fault, and keeps the whole window resident, for each
# window it runs a byte of. Linked file by file, the few dozen KiB a
# process that syncs once runs were spread over all of the library's
# windows. This script runs a few such processes under callgrind with the
# built library preloaded, and lists each function they ran, by the number
# of processes that ran it, most first. The list is committed: the build needs no
# profiler, and a stale list only costs memory, never correctness.
#
#   bash scripts/textorder.sh      (needs valgrind: deps.sh layout)
#
# Run it again after changing what the first request runs; `make` then
# relinks, and `make bench-start` shows the library's resident text.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/deps.sh layout
make -s build/libgc.so build/bench/shapes build/tests/e2e/progs/nosync
lib=$root/build/libgc.so
tmp=$(mktemp -d "$root/build/textorder.XXXXXX")
trap '[ -n "${TEXTORDER_KEEP:-}" ] || rm -rf "$tmp"' EXIT

run() {
	valgrind -q --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$tmp/cg.%p" \
		env LD_PRELOAD="$lib" "$@" >/dev/null 2>&1 || true
}
# start-up and exit only; a shell that forks and writes without a sync
run /bin/true
run /bin/sh -c "(:); echo x >'$tmp/plain'"
# the tests' picture of a process (files, a pipe, dup2, a fork, a spawn),
# then a few syncs and 1 MB of writes
run build/tests/e2e/progs/nosync "$tmp" sync syncs=3 stream
# one durable write from an interpreter
if command -v python3 >/dev/null; then
	run python3 -c "import os
fd = os.open('$tmp/py', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b'x' * 100); os.fsync(fd); os.close(fd)"
fi
# a large write: the dirty limiter's waits
run dd if=/dev/zero of="$tmp/big" bs=64k count=512 conv=fsync status=none
# the three transaction shapes, one worker, fsync and fdatasync
for k in wal spool delete; do
	run build/bench/shapes -t 1 -k "$k" -m mixed -d 1 -D "$tmp" -q
done
# SQLite's own steps, where the program is there
if command -v sqlite3 >/dev/null; then
	run sqlite3 "$tmp/db" "pragma synchronous=full; create table t(x); insert into t values(1);"
fi

# callgrind_annotate prints "cost file:function [object]" for each function
# that ran. Keep this library's: first what the most processes ran, then,
# among those, what ran the most instructions.
for f in "$tmp"/cg.*; do
	callgrind_annotate --threshold=100 "$f" 2>/dev/null | sed "s|^|$f |"
done | awk -v lib="[$lib]" '
	index($0, lib) {
		cost = $2; gsub(",", "", cost)
		fn = $0; sub(/ \[[^]]*\] *$/, "", fn); sub(/.*:/, "", fn)
		if (fn !~ /^[A-Za-z_][A-Za-z0-9_.]*$/)
			next	# code without a symbol (callgrind names it by address)
		if (!((fn, $1) in ran)) { ran[fn, $1] = 1; procs[fn]++ }
		sum[fn] += cost
	}
	END { for (fn in sum) print procs[fn], sum[fn], fn }' |
	sort -k1,1nr -k2,2nr -k3 | awk '{print $3}' >"$tmp/fns"
# what these processes run outside valgrind only: it does not know
# cachestat(2), so the limiter's waits there are paced, never polled for
# writeback in progress (gc_dirty_poll_ns) nor ended with it seen done
# (gc_dirty_waited)
for fn in gc_dirty_poll_ns gc_dirty_waited; do
	grep -qx "$fn" "$tmp/fns" || echo "$fn" >>"$tmp/fns"
done
n=$(wc -l <"$tmp/fns")
[ "$n" -gt 20 ] || { echo "textorder: only $n functions seen; is valgrind working?" >&2; exit 1; }

{
	cat <<'HEAD'
# SPDX-License-Identifier: LGPL-2.1-or-later
# Made by scripts/textorder.sh (do not edit): the functions that short
# processes run (start-up, a first sync, exit), those that the most of them
# ran first. The build renames each one's section into .text.sorted.*
# (the Makefile's objcopy step), which the linker puts at the front of the
# text, in this order, after the start-up, fork and exit code (GC_ONCE,
# .text.unlikely): the kernel maps code 64 KiB at a time, and a process
# keeps each window it ran resident.
HEAD
	cat "$tmp/fns"
} >core/first.list
echo "textorder: core/first.list names $n functions"
