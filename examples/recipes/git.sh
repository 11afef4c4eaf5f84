#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# git under libgc with core.fsync=all (core.fsyncMethod=fsync): loops of
# "change a file, git add, git commit", 4 repositories side by side as on a
# build machine.  Afterwards git fsck --strict in each and as many commits
# as the loops counted.
#   RECIPE_GIT_JOBS=4
R_NAME=git
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
jobs=${RECIPE_GIT_JOBS:-4}
command -v git >/dev/null || r_die "git is missing (deps.sh recipes)"
export HOME=$R_TMP GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=recipe GIT_COMMITTER_NAME=recipe \
	GIT_AUTHOR_EMAIL=recipe@example.org GIT_COMMITTER_EMAIL=recipe@example.org

# one MODE: sets OPS and CHECK.
one() {
	local how=$1 d=$R_MNT/git t0 secs n i c
	local -a pre
	rm -rf "$d" && mkdir -p "$d"
	for ((i = 0; i < jobs; i++)); do
		git init -q "$d/r$i"
		git -C "$d/r$i" config core.fsync all
		git -C "$d/r$i" config core.fsyncMethod fsync
		seq 1 2000 >"$d/r$i/file"
		git -C "$d/r$i" add file && git -C "$d/r$i" commit -q -m init
	done
	sync -f "$R_MNT"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	t0=$(r_now)
	for ((i = 0; i < jobs; i++)); do
		(
			cd "$d/r$i"
			end=$((${EPOCHREALTIME/./} + R_SECS * 1000000)) k=0
			while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
				echo "change $k" >>file
				"${pre[@]}" git add file || exit 1
				"${pre[@]}" git commit -q -m "change $k" || exit 1
				k=$((k + 1))
			done
			echo "$k" >"$d/count.$i"
		) &
	done
	wait
	secs=$(r_since "$t0")
	n=$(cat "$d"/count.* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	OPS=$(r_rate "$n" "$secs")
	CHECK=ok
	[ "$(ls "$d"/count.* 2>/dev/null | wc -l)" -eq "$jobs" ] || CHECK="a commit loop failed"
	c=0
	for ((i = 0; i < jobs; i++)); do
		git -C "$d/r$i" fsck --strict --no-progress >/dev/null 2>"$R_TMP/fsck" ||
			CHECK="git fsck r$i: $(head -n 1 "$R_TMP/fsck")"
		c=$((c + $(git -C "$d/r$i" rev-list --count HEAD) - 1))
	done
	[ "$c" -eq "$n" ] || CHECK="$c commits, $n counted"
	rm -rf "$d"
	sync -f "$R_MNT"
}

r_header
r_rows "git add+commit, $jobs repos, fsync=all" one
echo "ops/s: commits (add + commit) per second over all repositories."
