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
# built library preloaded, and lists the functions they ran, those that
# the most processes ran first, up to a size (below). The list is committed: the build needs no
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

# each run's processes (the program and any it starts) in a folder of its own
runs=0
run() {
	runs=$((runs + 1))
	mkdir -p "$tmp/run$runs"
	valgrind -q --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$tmp/run$runs/cg.%p" \
		env LD_PRELOAD="$lib" "$@" >/dev/null 2>&1 || true
}
# start-up and exit only; a shell that forks, runs a program and writes
# without a sync
run /bin/true
run /bin/sh -c "(:); echo x >'$tmp/plain'; /bin/true"
# the tests' picture of a process (files, a pipe, dup2, a fork, a spawn),
# then a few syncs and 1 MB of writes
run build/tests/e2e/progs/nosync "$tmp" sync syncs=3 stream
# one durable write from an interpreter (itself, not a wrapper script that
# PATH may name)
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
if [ -n "$py" ]; then
	run "$py" -c "import os
fd = os.open('$tmp/py', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b'x' * 100); os.fsync(fd); os.close(fd)"
fi
# a process that joins the shared segment another made (a delivery agent
# beside a running server): the join's checks
run sh -c "build/bench/shapes -t 1 -k wal -d 8 -D '$tmp' -q & sleep 4
	dd if=/dev/zero of='$tmp/joined' bs=4k count=1 conv=fsync status=none; wait"
# a large write: the dirty limiter's waits
run dd if=/dev/zero of="$tmp/big" bs=64k count=512 conv=fsync status=none
# the three transaction shapes, one worker, fsync and fdatasync
for k in wal spool delete; do
	run build/bench/shapes -t 1 -k "$k" -m mixed -d 1 -D "$tmp" -q
done
# git making a commit, every file synced (it maps its objects)
if command -v git >/dev/null; then
	run sh -c "cd '$tmp' && git init -q g && cd g && echo x >f &&
		git -c core.fsync=all -c user.name=t -c user.email=t@t add f &&
		git -c core.fsync=all -c user.name=t -c user.email=t@t commit -qm x"
fi
# SQLite's own steps, where the program is there
if command -v sqlite3 >/dev/null; then
	run sqlite3 "$tmp/db" "pragma synchronous=full; create table t(x); insert into t values(1);"
fi

# Each function's size in this build (nm -S, hexadecimal), by name.
nm -S "$lib" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ { print $4, $2 }' >"$tmp/sizes"

# callgrind_annotate prints "cost file:function [object]" for each function
# that ran. Keep this library's, ranked by the number of runs above whose
# processes ran each, then the smaller first (more of them fit), and keep at most
# LIST_KIB of code, as sized in this (plain -O2) build. The start-up, fork
# and exit code (GC_ONCE, about 8 KiB) goes before the list (the linker
# places it: it is neither listed nor counted here), and libgcc's
# crtstuff (frame_dummy, which every process runs at start-up) right after
# it; a hardened build (Debian's stack protector) is about 6% larger, and
# all of it must stay inside the first 64 KiB. What falls beyond (the
# dirty limiter's waits, exec, the rarer wrappers) costs the processes
# that run it one more window.
LIST_KIB=52
# First of all, starting programs (shells, make and build tools do little
# else; callgrind cannot see an exec: the new image's profile takes the
# file of the one that called it), mapping memory (interpreters,
# databases; glibc's malloc maps through its own, uninterposed call) and
# fcntl (close-on-exec, locks) and ioctl (terminals, FIOCLEX), which most
# programs call themselves.
START="execve execvp execv posix_spawn posix_spawnp exec_prepare exec_undo still_materialized gc_init mmap64 fcntl64 fcntl_common ioctl"
for f in "$tmp"/run*/cg.*; do
	callgrind_annotate --threshold=100 "$f" 2>/dev/null | sed "s|^|${f%/*} |"
done | awk -v lib="[$lib]" -v start="$START" '
	function hex(v,   i, n) {
		for (i = 1; i <= length(v); i++)
			n = n * 16 + index("0123456789abcdef", substr(v, i, 1)) - 1
		return n
	}
	FILENAME != "-" { sz[$1] = hex($2); next }
	index($0, lib) {
		fn = $0; sub(/ \[[^]]*\] *$/, "", fn); sub(/.*:/, "", fn)
		if (fn !~ /^[A-Za-z_][A-Za-z0-9_.]*$/)
			next	# code without a symbol (callgrind names it by address)
		if (!((fn, $1) in ran)) { ran[fn, $1] = 1; procs[fn]++ }
	}
	END {
		n = split(start, s)
		for (i = 1; i <= n; i++)
			procs[s[i]] = 1000
		for (fn in procs) print procs[fn], sz[fn] + 0, fn
	}' "$tmp/sizes" - |
	sort -k1,1nr -k2,2n -k3 >"$tmp/ranked"
# The code GCC puts with the start-up code (.text.unlikely: GC_ONCE, and
# what only it calls), and what the list in force moved out of it (built
# as .text.X now: its "late" lines).
{
	for o in build/core/*.o build/shim/*.o build/journal/*.o build/policy/*.o; do
		readelf -SW "$o" | sed -n 's/.* \.text\.unlikely\.\([A-Za-z0-9_.]*\) .*/\1/p'
	done
	awk '$1 == "late" { print $2 }' core/first.list
} | sort -u >"$tmp/cold"
awk -v max=$((LIST_KIB * 1024)) 'NR == FNR { cold[$1] = 1; next } ($3 in cold) { next }
	(tot += $2) > max { exit } { print $3 }' "$tmp/cold" "$tmp/ranked" >"$tmp/fns"
# Of that code, what none of the runs ran (the exit report, called from the
# exit handler): moved to the back (a "late" line).
awk 'NR == FNR { ran[$3] = 1; next } !($1 in ran) { print "late", $1 }' \
	"$tmp/ranked" "$tmp/cold" >"$tmp/late"
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
# keeps each window it ran resident. A "late" line moves start-up code
# that none of these processes ran (the exit report) to the back.
HEAD
	cat "$tmp/fns" "$tmp/late"
} >core/first.list
echo "textorder: core/first.list names $n functions"
