#!/usr/bin/env bash
# `make recipes`: every recipe in turn on the 1 ms and 4 ms slow disks, their
# tables one after the other (also into RECIPE_OUT when set).  Settings as in
# lib.sh; RECIPES="sqlite postgres ..." picks some.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list=${RECIPES:-sqlite postgres redis maildir git bdb}
out=${RECIPE_OUT:-/dev/null}
rc=0
child=
trap '[ -z "$child" ] || kill -INT "$child" 2>/dev/null; wait 2>/dev/null; exit 130' INT
trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; wait 2>/dev/null; exit 143' TERM
for r in $list; do
	[ -f "$here/$r.sh" ] || { echo "recipes: no recipe '$r'" >&2; rc=1; continue; }
	bash "$here/$r.sh" > >(tee -a "$out") &
	child=$!
	wait "$child" || { echo "recipes: $r failed (status $?)" >&2; rc=1; }
	child=
done
exit "$rc"
