# SPDX-License-Identifier: LGPL-2.1-or-later
# TAP helpers shared by the shell suites (sourced from the project root).
# They count in $n; set n=0 and print the plan first.

# ok DESCRIPTION
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

# not_ok DESCRIPTION [DIAGNOSTIC...]: every line of every diagnostic becomes
# a "# " comment, so multi-line output cannot break the TAP stream.
not_ok() {
	n=$((n + 1))
	echo "not ok $n - $1"
	shift
	for l in "$@"; do
		while IFS= read -r x; do echo "# $x"; done <<<"$l"
	done
}

# sd ARGS...: the slow-disk CLI ($SD), bounded so a hung stack fails the test
sd() {
	timeout 120 bash "$SD" "$@"
}

# kv KEY: the value of KEY in the key=value words of stdin (the last match)
kv() {
	tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1
}

# tap_relay [PREFIX]: the TAP lines of a sub-suite on stdin passed on under
# our count, PREFIX before each description; its plan is dropped, its
# comments and any other line passed on as they are. Read it from a file or
# a process substitution (the count lives in this shell).
tap_relay() {
	local line st rest
	while IFS= read -r line; do
		case $line in
		"ok "* | "not ok "*)
			st=${line%% [0-9]*} rest=${line#* [0-9]* - }
			[ "$st" = ok ] && ok "${1:-}$rest" || not_ok "${1:-}$rest"
			;;
		[0-9]*..[0-9]*) ;;
		*) echo "$line" ;;
		esac
	done
}
