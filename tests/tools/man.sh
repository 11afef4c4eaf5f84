#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The manual: a page for every tool, every LIBGC_* variable the code reads
# documented in libgc(7), the pages render without warnings, and
# make install (DESTDIR) installs the library (in a directory of its own),
# the tools and the pages, and make uninstall removes them.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
B=${B:-build}
n=0
echo "1..6"

missing=
for t in gcrun:1 gcstat:1 gcd:8 libgc:7; do
	[ -s "man/${t%%:*}.${t##*:}" ] || missing+=" ${t%%:*}(${t##*:})"
done
[ -z "$missing" ] && ok "a man page for libgc and every tool" || not_ok "man pages" "missing:$missing"

vars=$(grep -rhoE 'LIBGC_[A-Z0-9_]+' --include=*.c --include=*.h core journal policy shim tools bpf | sort -u)
undoc=
for v in $vars; do
	grep -q "^\.B $v\$" man/libgc.7 || undoc+=" $v"
done
[ -z "$undoc" ] && ok "libgc(7) documents all $(wc -w <<<"$vars") LIBGC_* variables the code reads" ||
	not_ok "LIBGC_* variables in libgc(7)" "undocumented:$undoc"

# and nothing documented that the code does not read
extra=
for v in $(grep -oE '^\.B LIBGC_[A-Z0-9_]+$' man/libgc.7 | cut -d' ' -f2); do
	grep -qx "$v" <<<"$vars" || extra+=" $v"
done
[ -z "$extra" ] && ok "libgc(7) documents no variable the code does not read" ||
	not_ok "stale variables in libgc(7)" "$extra"

if command -v man >/dev/null; then
	warn=
	for f in man/*.[178]; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l --warnings "$f" 2>&1 >/dev/null)
		[ -n "$w" ] && warn+="$f: $w"$'\n'
	done
	[ -z "$warn" ] && ok "the pages render without warnings" || not_ok "man warnings" "$warn"
else
	ok "the pages render without warnings # SKIP man is not installed"
fi

dest=$(mktemp -d /var/tmp/libgc-install.XXXXXX)
out=$(make -s --no-print-directory install DESTDIR="$dest" PREFIX=/usr 2>&1)
ma=$(${CC:-cc} -print-multiarch 2>/dev/null)
pkglib=usr/lib${ma:+/$ma}/libgc-commit
want="$pkglib/libgc.so usr/bin/gcrun usr/bin/gcstat usr/share/man/man1/gcrun.1 usr/share/man/man1/gcstat.1 usr/share/man/man7/libgc.7"
[ -x "$B/gcd" ] && want+=" usr/sbin/gcd usr/lib/systemd/system/gcd.service usr/share/man/man8/gcd.8"
lack=
for f in $want; do [ -e "$dest/$f" ] || lack+=" $f"; done
# nothing in a directory the loader searches: a bare libgc.so never finds it
stray=$(cd "$dest" && find . -name 'libgc*.so*' ! -path "./$pkglib/*")
if [ -z "$lack" ] && [ -z "$stray" ] && [ -x "$dest/usr/bin/gcrun" ] &&
	out2=$("$dest/usr/bin/gcrun" -- sh -c 'echo "$LD_PRELOAD"') && [ "$out2" = "$dest/$pkglib/libgc.so" ]; then
	ok "make install DESTDIR PREFIX=/usr: $(wc -w <<<"$want") files, libgc.so only in $pkglib; the installed gcrun finds it"
else
	not_ok "make install" "$out" "missing:$lack" "outside $pkglib: $stray" "gcrun gave: ${out2:-}" \
		"$(cd "$dest" && find . -type f)"
fi
out=$(make -s --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr 2>&1)
left=$(cd "$dest" && find . ! -type d)
[ -z "$left" ] && ok "make uninstall DESTDIR PREFIX=/usr removes every file it installed" ||
	not_ok "make uninstall" "$out" "left: $left"
rm -rf "$dest"
