#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds the Debian packages (debian/, debhelper) from a copy of this tree,
# so that what dpkg-buildpackage writes beside the source and its clean step
# stay out of the work tree; lists the packages' files; runs lintian.
#   deb.sh [OUTDIR]   (default build/deb) the .deb, .changes and build.log
#   DEB_BUILD_OPTIONS is passed on (nocheck, parallel=N); LINTIAN=0 skips it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ver=$(dpkg-parsechangelog -l "$root/debian/changelog" -S Version)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/libgc-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/libgc-commit-$ver
mkdir "$src"
# the files git knows, and the new ones it does not ignore: never build/
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$root" && git ls-files -z --cached --others --exclude-standard |
		tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -C "$src" -xf -
else
	tar -C "$root" --exclude=./build --exclude='./build-*' -cf - . | tar -C "$src" -xf -
fi

rm -f "$out"/libgc-commit*.deb "$out"/libgc-commit_*.changes "$out"/libgc-commit_*.buildinfo
start=$(date +%s)
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
fi
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
echo "deb: dpkg-buildpackage -us -uc -b: $(($(date +%s) - start)) s, log in $out/build.log"
for d in "$out"/*.deb; do
	echo "$(basename "$d"):"
	dpkg-deb -c "$d" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print "  " $6 ($7 ? " " $7 " " $8 : "") }'
done
if [ "${LINTIAN:-1}" != 0 ]; then
	echo "deb: lintian"
	lintian --fail-on error "$out"/libgc-commit_*.changes
	echo "deb: lintian: no errors"
fi
