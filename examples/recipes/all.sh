#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make recipes`: every recipe in turn on the 1 ms and 4 ms slow disks, their
# tables one after the other (also into RECIPE_OUT when set).  Settings as in
# lib.sh; RECIPES="sqlite postgres ..." picks some; RECIPE_FS="ext4 xfs" runs
# them all on each filesystem in turn.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list=${RECIPES:-sqlite postgres mariadb redis maildir git bdb fio}
out=${RECIPE_OUT:-/dev/null}
rc=0
child=
trap '[ -z "$child" ] || kill -INT "$child" 2>/dev/null; wait 2>/dev/null; exit 130' INT
trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null; wait 2>/dev/null; exit 143' TERM
for fs in ${RECIPE_FS:-ext4}; do
	for r in $list; do
		[ -f "$here/$r.sh" ] || { echo "recipes: no recipe '$r'" >&2; rc=1; continue; }
		RECIPE_FS=$fs bash "$here/$r.sh" > >(tee -a "$out") &
		child=$!
		wait "$child" || { echo "recipes: $r on $fs failed (status $?)" >&2; rc=1; }
		child=
	done
done
exit "$rc"
