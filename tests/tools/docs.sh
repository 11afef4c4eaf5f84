#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The written docs stay true to the tree: every LIBGC_* the code reads has a
# row in docs/configuration.md and in the README's table, every relative link and anchor resolves, the
# results index lists every results file, and the README stays a front door.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
n=0
echo "1..5"

vars=$(grep -rhoE 'LIBGC_[A-Z0-9_]+' --include=*.c --include=*.h core journal policy shim tools bpf | sort -u)
undoc=
for v in $vars; do
	for d in docs/configuration.md README.md; do
		grep -q "^| \`$v\` |" "$d" || undoc+=" $v ($d)"
	done
done
[ -z "$undoc" ] && ok "docs/configuration.md and the README have a row for all $(wc -w <<<"$vars") LIBGC_* variables the code reads" ||
	not_ok "LIBGC_* variables in docs/configuration.md and the README" "no row:$undoc"

# GitHub's anchor of a heading: lower case, punctuation dropped, spaces to -
anchors() {
	grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr 'A-Z' 'a-z' |
		sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}
bad=
docs="README.md HACKING.md DESIGN.md docs/*.md bench/README.md bench/results/README.md"
for f in $docs; do
	[ -f "$f" ] || continue
	dir=$(dirname "$f")
	while IFS= read -r link; do
		target=${link%%#*}
		anchor=
		[[ $link == *"#"* ]] && anchor=${link#*#}
		case $target in http://* | https://* | mailto:*) continue ;; esac
		if [ -z "$target" ]; then
			file=$f
		else
			file=$dir/$target
		fi
		if [ ! -e "$file" ]; then
			bad+="$f: $link (no $file)"$'\n'
		elif [ -n "$anchor" ] && [ -f "$file" ] && ! anchors "$file" | grep -qxF "$anchor"; then
			bad+="$f: $link (no heading #$anchor in $file)"$'\n'
		fi
	done < <(grep -oE '\]\([^)]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
done
[ -z "$bad" ] && ok "every relative link and anchor in the README, HACKING.md and the docs resolves" ||
	not_ok "links" "$bad"

missing=
for f in bench/results/*.md; do
	b=$(basename "$f")
	[ "$b" = README.md ] && continue
	grep -qF "]($b)" bench/results/README.md || missing+=" $b"
done
[ -z "$missing" ] && ok "bench/results/README.md indexes every results file" ||
	not_ok "results index" "not listed (add a line under its kind):$missing"

front=$(sed -n '1,/^## Details/p' README.md | wc -l)
[ "$front" -le 170 ] && ok "README is a front door: $front lines up to its Details section (at most 170)" ||
	not_ok "README front door" "$front lines before '## Details': move the detail into docs/ or bench/results/"

# The license of every source file, in the file (scripts/spdx.sh says which).
if spdx=$(bash scripts/spdx.sh --check 2>&1); then
	ok "every source file has its SPDX-License-Identifier line"
else
	not_ok "SPDX lines" "$(head -n 5 <<<"$spdx")"
fi
