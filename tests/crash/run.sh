#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The power-cut suite of `make test`: a short series of trials under libgc
# (one TAP line each) and the same trials under eatmydata as the control
# (one summary line per half). Skips when the slow disk cannot run (not
# root, no FUSE). The series runs as two halves side by side, each on a
# disk of its own (a trial's time is the slow disk's, not the CPU's);
# trial k of the whole still uses seed S+k.
set -eu
cd "$(dirname "$0")/../.."
. tests/tap.sh
trials=${CRASH_TRIALS:-15}
seed=${CRASH_SEED:-$(( (RANDOM << 15 | RANDOM) % 1000000 ))}
a=$(( (trials + 1) / 2 ))
if [ "$trials" -lt 2 ]; then
	exec bash tests/crash/crashtrial --trials "$trials" --seed "$seed" --tap
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
bash tests/crash/crashtrial --trials "$a" --seed "$seed" --tap >"$tmp/1" 2>&1 &
bash tests/crash/crashtrial --trials $((trials - a)) --seed $((seed + a)) --tap >"$tmp/2" 2>&1 &
wait
# a disk that cannot run here skips both halves alike
if grep -q '^ok 1 - crash trials # SKIP' "$tmp/1"; then
	cat "$tmp/1"
	exit 0
fi
n=0
tap_relay <"$tmp/1"
tap_relay <"$tmp/2"
echo "1..$n"
