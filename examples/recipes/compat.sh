#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make compat`: other projects' own test suites, bare and under libgc, on
# this machine's disk; a test that passes bare and fails under the library
# is a new failure and fails the run.
#   - Python's regression tests (package libpython3.11-testsuite):
#     COMPAT_PY_TESTS="test_os test_posix test_shutil test_tempfile test_file
#     test_fileio test_io test_mailbox test_dbm test_dbm_gnu test_dbm_dumb
#     test_subprocess" (test_subprocess checks which descriptors a child has)
#     (Debian ships no test_sqlite3; SQLite has its own suite below)
#   - SQLite's TCL test suite from Debian's source package (apt-get source
#     sqlite3; testfixture built here against tcl8.6-dev):
#     COMPAT_SQLITE_TESTS="sync sync2 wal wal2 ..." (test/NAME.test files)
#   COMPAT_SUITES="python sqlite"   COMPAT_DIR=/var/tmp/libgc-compat
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lib=${COMPAT_LIB:-$root/build/libgc.so}
B=${B:-build}
suites=${COMPAT_SUITES:-python sqlite}
work=${COMPAT_DIR:-/var/tmp/libgc-compat}
py=/usr/bin/python3
py_tests=${COMPAT_PY_TESTS:-test_os test_posix test_shutil test_tempfile test_file test_fileio test_io test_mailbox test_dbm test_dbm_gnu test_dbm_dumb test_subprocess}
sq_tests=${COMPAT_SQLITE_TESTS:-sync sync2 wal wal2 wal3 wal4 wal5 wal6 wal7 walmode walcrash walcrash2 walpersist walbak journal1 journal2 journal3 pager1 pager2 pager3 pagerfault trans trans2 delete delete2 delete3 savepoint savepoint2 crash crash2 crash3}

die() {
	echo "compat: $*" >&2
	exit 1
}

[ -e "$lib" ] || die "$lib is missing: run make"
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
unset LD_PRELOAD
while read -r v; do unset "$v"; done < <(compgen -e | grep '^LIBGC_' || true)
mkdir -p "$work"
work=$(cd "$work" && pwd)
case $(stat -f -c %T "$work") in
tmpfs | ramfs) echo "compat: WARNING: $work is on tmpfs: set COMPAT_DIR to a folder on a disk" >&2 ;;
esac
child=
trap '[ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null; exit 130' INT TERM

status=0
summary=()

# run MODE CMD...: CMD bare or under libgc (its report into $work/MODE.report).
run() {
	local how=$1
	shift
	: >"$work/$how.report"
	if [ "$how" = libgc ]; then
		env LD_PRELOAD="$lib" LIBGC_REPORT="$work/$how.report" "$@"
	else
		"$@"
	fi
}

# compare NAME BARE_FAILS LIBGC_FAILS: names (one a line) failing under
# libgc only.
new_failures() {
	comm -13 <(sort -u "$1") <(sort -u "$2")
}

report_reqs() {
	awk '$1 == "libgc:" { for (i = 2; i <= NF; i++) { split($i, kv, "=");
		if (kv[1] ~ /^req_/) q += kv[2]; if (kv[1] ~ /^real_f/) r += kv[2] } }
		END { printf "%d requests, %d real syncs", q, r }' "$1"
}

# ---- Python's regression tests ----

python_suite() {
	local how out t0 p f s
	[ -d /usr/lib/python3.11/test ] || die "python3's test package is missing (deps.sh compat: libpython3.11-testsuite)"
	for how in bare libgc; do
		rm -rf "$work/py" && mkdir -p "$work/py/tmp"
		out=$work/py.$how.log
		t0=$SECONDS
		# -v: one line per test case, so cases (not modules) are counted
		(cd "$work/py" && run "$how" env TMPDIR="$work/py/tmp" timeout 900 "$py" -m test -v \
			$py_tests) >"$out" 2>&1 || true
		cp "$work/$how.report" "$work/py.$how.report"
		p=$(grep -cE '^test\S* \(\S+\) \.\.\. ok$' "$out" || true)
		s=$(grep -cE '^test\S* \(\S+\) \.\.\. skipped' "$out" || true)
		# failed cases, and whole modules that crashed or could not load
		{
			grep -E '^(FAIL|ERROR): ' "$out" | sed 's/^[A-Z]*: //' || true
			sed -n 's/^test \(test_[A-Za-z0-9_]*\) crashed.*/module \1/p' "$out"
		} | sort -u >"$work/py.$how.fails"
		f=$(wc -l <"$work/py.$how.fails")
		eval "py_${how}_line='passed=$p failed=$f skipped=$s ($((SECONDS - t0)) s)'"
	done
	new_failures "$work/py.bare.fails" "$work/py.libgc.fails" >"$work/py.new"
	summary+=("python3 -m test $py_tests")
	summary+=("  bare:  $py_bare_line")
	summary+=("  libgc: $py_libgc_line; $(report_reqs "$work/py.libgc.report")")
	if [ -s "$work/py.new" ]; then
		status=1
		summary+=("  NEW FAILURES under libgc: $(tr '\n' ' ' <"$work/py.new")")
	else
		summary+=("  no new failures under libgc")
	fi
}

# ---- SQLite's TCL test suite ----

# Builds $B/compat/sqlite/testfixture from Debian's source package once.
# SQLite's makefile builds it with -DSQLITE_NO_SYNC=1 (tests run faster
# without syncs); that is taken out, so the suite's syncs are real calls that
# go through the library.
sqlite_build() {
	local d=$root/$B/compat/sqlite src
	fixture=$d/bld/testfixture
	if [ -x "$fixture" ] && ! grep -q 'SQLITE_NO_SYNC' "$d/bld/Makefile"; then
		return 0
	fi
	if [ -f "$d/bld/Makefile" ] && [ -d "$d/src/test" ]; then
		sed -i 's/-DSQLITE_NO_SYNC=1 //' "$d/bld/Makefile"
		rm -f "$fixture"
		(cd "$d/bld" && make -j"$(nproc)" testfixture >"$d/make.log" 2>&1) ||
			die "building SQLite's testfixture failed: see $d/make.log"
		return 0
	fi
	mkdir -p "$d"
	if ! ls "$d"/sqlite3_*.orig.tar.xz >/dev/null 2>&1; then
		(cd "$d" && apt-get source -qq --download-only sqlite3 >/dev/null 2>"$d/source.err") ||
			die "apt-get source sqlite3 failed (deb-src entries: deps.sh compat adds them): $(tail -n 1 "$d/source.err")"
	fi
	src=$(ls "$d"/sqlite3_*.orig.tar.xz | grep -v -- '-www' | head -n 1)
	rm -rf "$d/src" && mkdir -p "$d/src"
	tar -xf "$src" -C "$d/src" --strip-components=1
	mkdir -p "$d/bld"
	(cd "$d/bld" && ../src/configure --with-tcl=/usr/lib/tcl8.6 >"$d/configure.log" 2>&1 &&
		sed -i 's/-DSQLITE_NO_SYNC=1 //' Makefile &&
		make -j"$(nproc)" testfixture >"$d/make.log" 2>&1) ||
		die "building SQLite's testfixture failed: see $d/configure.log and $d/make.log"
	ln -sfn "$d/src/test" "$d/test"
}

sqlite_suite() {
	local how t out e n fails tot_e tot_n t0 dir
	sqlite_build
	dir=$root/$B/compat/sqlite
	for how in bare libgc; do
		tot_e=0 tot_n=0
		: >"$work/sq.$how.fails"
		: >"$work/sq.$how.report.all"
		t0=$SECONDS
		for t in $sq_tests; do
			[ -f "$dir/src/test/$t.test" ] || { echo "compat: no test/$t.test, skipped" >&2; continue; }
			rm -rf "$work/sq" && mkdir -p "$work/sq"
			out=$work/sq.$how.$t.log
			# the tests find their helpers relative to the source tree
			(cd "$work/sq" && run "$how" timeout 600 "$fixture" "$dir/src/test/$t.test") \
				>"$out" 2>&1 || true
			cat "$work/$how.report" >>"$work/sq.$how.report.all"
			e=$(sed -n 's/^\([0-9]*\) errors out of \([0-9]*\) tests.*/\1/p' "$out" | tail -n 1)
			n=$(sed -n 's/^\([0-9]*\) errors out of \([0-9]*\) tests.*/\2/p' "$out" | tail -n 1)
			if [ -z "$n" ]; then
				# no summary: the file died; count it as one failure
				echo "$t:(no summary)" >>"$work/sq.$how.fails"
				e=1 n=1
			fi
			fails=$(sed -n 's/^!*Failures on these tests: //p' "$out" | tail -n 1)
			for f in $fails; do echo "$t:$f"; done >>"$work/sq.$how.fails"
			tot_e=$((tot_e + e)) tot_n=$((tot_n + n))
		done
		eval "sq_${how}_line='passed=$((tot_n - tot_e)) failed=$tot_e of $tot_n ($((SECONDS - t0)) s)'"
	done
	new_failures "$work/sq.bare.fails" "$work/sq.libgc.fails" >"$work/sq.new"
	summary+=("SQLite $(cat "$dir/src/VERSION" 2>/dev/null) testfixture (with syncs): $(wc -w <<<"$sq_tests") test files")
	summary+=("  bare:  $sq_bare_line")
	summary+=("  libgc: $sq_libgc_line; $(report_reqs "$work/sq.libgc.report.all")")
	if [ -s "$work/sq.bare.fails" ]; then
		summary+=("  failing bare too (as root, by design of those tests): $(tr '\n' ' ' <"$work/sq.bare.fails")")
	fi
	if [ -s "$work/sq.new" ]; then
		status=1
		summary+=("  NEW FAILURES under libgc: $(tr '\n' ' ' <"$work/sq.new")")
	else
		summary+=("  no new failures under libgc")
	fi
}

for s in $suites; do
	case $s in
	python) python_suite ;;
	sqlite) sqlite_suite ;;
	*) die "unknown suite '$s' (python, sqlite)" ;;
	esac
done
echo
echo "compat ($(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), logs in $work):"
printf '%s\n' "${summary[@]}"
exit "$status"
