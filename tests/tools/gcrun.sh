#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# gcrun: help and version, LD_PRELOAD prepended and kept, options mapped to
# LIBGC_*, the report of a workload run through it, warnings for static and
# Go programs, exit status and death by signal passed through; a libgc.so
# that is another library (a stand-in for Boehm GC's) refused, warned about,
# and flagged by --check.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
B=${B:-build}
GCRUN=$PWD/$B/gcrun
LIB=$PWD/$B/libgc.so
n=0
echo "1..16"
tmp=$(mktemp -d /var/tmp/gcrun-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

out=$($GCRUN --help) && grep -q -- '--policy' <<<"$out" && $GCRUN --version | grep -q '^gcrun (libgc) ' &&
	ok "--help and --version" || not_ok "--help and --version" "$out"

out=$(LD_PRELOAD=/nonexistent/other.so $GCRUN -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
[ "$out" = "$LIB:/nonexistent/other.so" ] && ok "LD_PRELOAD: libgc.so first, the old value kept" ||
	not_ok "LD_PRELOAD prepended" "got: $out"

out=$($GCRUN --policy fixed --share process --osync keep --report=kv --disable -- env | grep '^LIBGC_' | sort | tr '\n' ' ')
[ "$out" = "LIBGC_DISABLE=1 LIBGC_OSYNC=keep LIBGC_POLICY=fixed LIBGC_REPORT=kv LIBGC_SHARE=process " ] &&
	ok "options become LIBGC_* variables" || not_ok "options mapped" "got: $out"

out=$($GCRUN --sites=0 --scope lib:libsqlite3.so,fn:wal_flush -- env | grep '^LIBGC_' | sort | tr '\n' ' ')
out2=$($GCRUN --scope sql:x -- true 2>&1); rc=$?
[ "$out" = "LIBGC_SCOPE=lib:libsqlite3.so,fn:wal_flush LIBGC_SITES=0 " ] && [ $rc = 2 ] &&
	grep -q "scope wants" <<<"$out2" && ok "--sites and --scope become LIBGC_SITES and LIBGC_SCOPE; a bad scope is refused" ||
	not_ok "--sites, --scope" "got: $out" "rc=$rc $out2"

out=$($GCRUN --policy sometimes -- true 2>&1); rc=$?
[ $rc = 2 ] && grep -q "policy wants" <<<"$out" && ok "a bad option value is refused (exit 2)" ||
	not_ok "bad value" "rc=$rc $out"

err=$($GCRUN --report=kv -- "$B/tests/e2e/progs/reporter" "$tmp" 3 _exit 2>&1 >/dev/null)
grep -q "req_fsync=3 " <<<"$err" && ok "a workload under gcrun reports its 3 fsyncs" ||
	not_ok "report under gcrun" "$err"

$GCRUN -- sh -c 'exit 7'; rc=$?
[ $rc = 7 ] && ok "exit status passed through (7)" || not_ok "exit status" "rc=$rc"

sig=$(perl -e 'system(@ARGV); print $? & 127' "$GCRUN" -- sh -c 'kill -TERM $$')
[ "$sig" = 15 ] && ok "death by SIGTERM passed through as SIGTERM" || not_ok "signal" "got signal '$sig'"

if echo 'int main(void){return 0;}' >"$tmp/s.c" && cc -static -o "$tmp/static" "$tmp/s.c" 2>/dev/null; then
	err=$($GCRUN -- "$tmp/static" 2>&1); rc=$?
	[ $rc = 0 ] && grep -q "statically linked" <<<"$err" && ok "warns about a static program" ||
		not_ok "static warning" "rc=$rc $err"
else
	ok "warns about a static program # SKIP cannot link -static (no libc.a)"
fi

# A Go binary is recognised by its sections: give a copy of a dynamic
# program a .note.go.buildid (no Go toolchain needed).
if command -v objcopy >/dev/null && printf 'go' >"$tmp/id" &&
	objcopy --add-section .note.go.buildid="$tmp/id" "$(type -P true)" "$tmp/gotrue" 2>/dev/null; then
	err=$($GCRUN -- "$tmp/gotrue" 2>&1); rc=$?
	[ $rc = 0 ] && grep -q "Go program" <<<"$err" && ok "warns about a Go program" ||
		not_ok "Go warning" "rc=$rc $err"
else
	ok "warns about a Go program # SKIP no objcopy"
fi

err=$($GCRUN -- true 2>&1)
[ -z "$err" ] && ok "a dynamic program: no warning" || not_ok "no warning" "$err"

# A stand-in for Boehm GC's libgc.so: the names it exports, not libgc's marker.
boehm=
if printf 'void *GC_malloc(unsigned long n){return 0;}\nvoid GC_init(void){}\n' >"$tmp/b.c" &&
	mkdir -p "$tmp/boehm" && cc -shared -fPIC -Wl,-soname,libgc.so.1 -o "$tmp/boehm/libgc.so" "$tmp/b.c"; then
	boehm=$tmp/boehm
fi
if [ -n "$boehm" ]; then
	err=$($GCRUN --lib "$boehm/libgc.so" -- true 2>&1); rc=$?
	[ $rc = 127 ] && grep -q "NOT libgc: the Boehm-Demers-Weiser garbage collector (libgc.so.1)" <<<"$err" &&
		ok "--lib naming Boehm GC's libgc.so is refused (exit 127)" || not_ok "--lib Boehm" "rc=$rc $err"

	out=$(LD_LIBRARY_PATH=$boehm LD_PRELOAD=libgc.so $GCRUN -- sh -c 'echo "$LD_PRELOAD"' 2>"$tmp/err"); err=$(cat "$tmp/err")
	[ "$out" = "$LIB:libgc.so" ] && grep -q "libgc.so => $boehm/libgc.so (LD_PRELOAD): NOT libgc" <<<"$err" &&
		ok "LD_PRELOAD=libgc.so that the loader resolves to Boehm GC: warned, libgc put first" ||
		not_ok "Boehm in LD_PRELOAD" "out=$out" "$err"

	out=$(LD_LIBRARY_PATH=$boehm LD_PRELOAD=libgc.so $GCRUN --check -- true); rc=$?
	out2=$(LD_LIBRARY_PATH=$boehm LD_PRELOAD=libgc.so $GCRUN --check); rc2=$?
	[ $rc = 1 ] && grep -q "^libgc:      $LIB: libgc (libgc " <<<"$out" &&
		grep -q "^preloaded:  libgc.so => $boehm/libgc.so (LD_PRELOAD): NOT libgc" <<<"$out" &&
		grep -q "^without gcrun: libgc is not loaded" <<<"$out" &&
		[ $rc2 = 1 ] && grep -q "^preloaded:  libgc.so => $boehm/libgc.so (LD_PRELOAD): NOT libgc" <<<"$out2" &&
		ok "--check, with a command or without, names the Boehm libgc.so and where the loader found it (exit 1)" ||
		not_ok "--check with Boehm" "rc=$rc" "$out" "without a command: rc=$rc2" "$out2"
else
	for t in "--lib Boehm refused" "Boehm in LD_PRELOAD warned" "--check flags Boehm"; do
		ok "$t # SKIP cannot build a shared library"
	done
fi

out=$($GCRUN --check -- true); rc=$?
[ $rc = 0 ] && grep -q "^with gcrun: LD_PRELOAD=$LIB\$" <<<"$out" && grep -q "^check: ok" <<<"$out" &&
	ok "--check with nothing preloaded: ok (exit 0), and says what gcrun would set" ||
	not_ok "--check plain" "rc=$rc" "$out"

# A copy of libgc already preloaded: gcrun adds no second one
mkdir -p "$tmp/copy" && cp "$LIB" "$tmp/copy/libgc.so"
out=$(LD_PRELOAD=$tmp/copy/libgc.so $GCRUN -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
[ "$out" = "$tmp/copy/libgc.so" ] && ok "a libgc already in LD_PRELOAD (another copy): no second one added" ||
	not_ok "no second libgc" "got: $out"
