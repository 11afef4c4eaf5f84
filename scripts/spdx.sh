#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Checks, or adds, the SPDX-License-Identifier line of every source file git
# knows: GPL-2.0 for the programs loaded into the kernel (*.bpf.c, *.bpf.h:
# their license string is "GPL"), LGPL-2.1-or-later for the rest (LICENSE).
#   spdx.sh [--check]   list files without the right line; exit 1 if any
#   spdx.sh --add       add the line where it is missing (after a #! line),
#                       in the file's own comment syntax; never rewrites one
# Not source, left alone: docs (*.md), measured results, licence texts,
# generated bpf/vmlinux.h, debian/ files whose format has no comments.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:---check}
case $mode in --check | --add) ;; *)
	echo "usage: spdx.sh [--check|--add]" >&2
	exit 2
	;;
esac

want_id() {
	case $1 in
	*.bpf.c | *.bpf.h) echo GPL-2.0 ;;
	*) echo LGPL-2.1-or-later ;;
	esac
}

# The comment form for a file, or nothing when it is not source.
style() {
	local f=$1
	case $f in
	*.md | LICENSE | LICENSES/* | bench/results/* | bpf/vmlinux.h | .gitignore | .clang-format) return ;;
	debian/changelog | debian/copyright | debian/source/* | debian/*.install | debian/*.docs) return ;;
	debian/*README.Debian | debian/control) return ;;
	*.c) echo slashes ;;
	*.h | *.def) echo block ;;
	*.[178]) echo roff ;;
	Makefile | *.mk | *.sh | *.py | *.awk | *.service | debian/rules | debian/*.postrm | debian/*.postinst | \
		debian/*.prerm | debian/*.preinst) echo hash ;;
	*)
		# a script without an extension (.ci/run, crashtrial)
		if head -n 1 "$f" | grep -q "^#!"; then echo hash; fi
		;;
	esac
}

line_for() {
	case $1 in
	slashes) echo "// SPDX-License-Identifier: $2" ;;
	block) echo "/* SPDX-License-Identifier: $2 */" ;;
	roff) echo ".\\\" SPDX-License-Identifier: $2" ;;
	hash) echo "# SPDX-License-Identifier: $2" ;;
	esac
}

bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	st=$(style "$f")
	[ -n "$st" ] || continue
	id=$(want_id "$f")
	have=$(head -n 3 "$f" | sed -n 's/.*SPDX-License-Identifier: *\([^ *]*\).*/\1/p' | head -n 1)
	if [ "$have" = "$id" ]; then
		continue
	fi
	if [ -n "$have" ]; then
		echo "$f: SPDX-License-Identifier is $have, want $id" >&2
		bad=$((bad + 1))
		continue
	fi
	if [ "$mode" = --check ]; then
		echo "$f: no SPDX-License-Identifier line (want $id)"
		bad=$((bad + 1))
		continue
	fi
	l=$(line_for "$st" "$id")
	tmp=$(mktemp "$f.spdx.XXXXXX")
	if head -n 1 "$f" | grep -q '^#!'; then
		{ head -n 1 "$f"; echo "$l"; tail -n +2 "$f"; } >"$tmp"
	else
		{ echo "$l"; cat "$f"; } >"$tmp"
	fi
	chmod --reference="$f" "$tmp"
	mv "$tmp" "$f"
	echo "added: $f"
done < <(git ls-files -z)
if [ "$mode" = --check ]; then
	if [ $bad -gt 0 ]; then
		echo "spdx: $bad file(s) without the right SPDX line (scripts/spdx.sh --add)"
		exit 1
	fi
	echo "spdx: every source file has its SPDX line"
fi
[ $bad -eq 0 ]
