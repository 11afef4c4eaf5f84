#!/usr/bin/env bash
# gcrun: help and version, LD_PRELOAD prepended and kept, options mapped to
# LIBGC_*, the report of a workload run through it, warnings for static and
# Go programs, exit status and death by signal passed through.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
B=${B:-build}
GCRUN=$PWD/$B/gcrun
LIB=$PWD/$B/libgc.so
n=0
echo "1..11"
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
