#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# gcd's own CPU cost under fsync_storm -t 16: user+system time of the gcd
# process over 10 s (from /proc/PID/stat), and the BPF programs' run time in
# the kernel (kernel.bpf_stats_enabled), as % of one core, on the slow disk
# and on the machine's disk. Needs root; not part of make test.
#   bash tests/bpf/cpucost.sh [SECONDS]
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SECS=${1:-10}
NAME=bpfcost-$$
SD=tests/slowdisk/slowdisk
TMP=$(mktemp -d /tmp/gcd-cost.XXXXXX)
D=$(mktemp -d /var/tmp/gcd-cost.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[ -n "${GP:-}" ] && kill "$GP" 2>/dev/null && wait "$GP" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	timeout 120 bash "$SD" down --name "$NAME" >/dev/null 2>&1 || true
	rm -rf "$TMP" "$D"
}
trap cleanup EXIT
M=$(timeout 120 bash "$SD" up --name "$NAME" --flush-us 4000 --size-mb 256 --journal-mb 64 | tail -n 1)
sysctl -qw kernel.bpf_stats_enabled=1
build/gcd --stats "$TMP/blk.stats" &
GP=$!
sleep 1
tck=$(getconf CLK_TCK)

# run_time_ns summed over gcd's programs
bpf_ns() {
	bpftool prog show -j | jq '[.[] | select(.name | startswith("gcd_")) | .run_time_ns // 0] | add // 0'
}
bpf_cnt() {
	bpftool prog show -j | jq '[.[] | select(.name | startswith("gcd_")) | .run_cnt // 0] | add // 0'
}
measure() {
	local what=$1 dir=$2 t0 t1 b0 b1 c0 c1 out
	build/examples/fsync_storm -t 16 -D "$dir" -d $((SECS + 2)) -q >"$TMP/storm" &
	local sp=$!
	sleep 1
	t0=$(awk '{print $14 + $15}' /proc/$GP/stat) b0=$(bpf_ns) c0=$(bpf_cnt)
	sleep "$SECS"
	t1=$(awk '{print $14 + $15}' /proc/$GP/stat) b1=$(bpf_ns) c1=$(bpf_cnt)
	wait $sp
	awk -v w="$what" -v dt=$((t1 - t0)) -v tck="$tck" -v s="$SECS" -v db=$((b1 - b0)) \
	    -v dc=$((c1 - c0)) -v storm="$(cat "$TMP/storm")" 'BEGIN {
		printf "%s: gcd process %.2f%% of one core (%d ticks in %d s); BPF programs %.2f%% of one core (%d runs, %.0f ns each, %.0f runs/s); storm: %s\n",
			w, 100 * dt / tck / s, dt, s, 100 * db / 1e9 / s, dc, dc ? db / dc : 0, dc / s, storm }'
}
measure "slow disk ($M)" "$M"
measure "machine disk ($D)" "$D"
