# SPDX-License-Identifier: LGPL-2.1-or-later
# Sums libgc's exit-report lines ("libgc: pid=N key=value ...", the kv
# form) over every process: prints "<real syncs> <sync requests> <direct>".
# Used by bench/bench.sh, scripts/demo.sh and examples/recipes/lib.sh.
$1 == "libgc:" {
	for (i = 2; i <= NF; i++) {
		k = $i; sub(/=.*/, "", k)
		v = $i; sub(/^[^=]*=/, "", v)
		s[k] += v
	}
}
END {
	printf "%d %d %d\n", s["real_fsync"] + s["real_fdatasync"],
		s["req_fsync"] + s["req_fdatasync"] + s["req_osync"], s["direct"]
}
