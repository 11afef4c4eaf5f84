#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mail delivery under libgc: 8 processes delivering into one maildir (tmp/,
# fsync, rename into new/, fsync new/), and the same with a real MDA,
# maildrop, one process per message from 8 parallel loops (maildrop fsyncs
# the message and links it into new/; it does not fsync the directory).
# Afterwards every delivered message must be in new/ with its content.
# Directory fsyncs are grouped like files (same rule).  maildrop is
# installed setgid mail, and the dynamic loader ignores LD_PRELOAD for
# set-id programs: the recipe runs a plain copy of it (as root, so no
# privilege is lost).
#   RECIPE_MAIL_PROCS=8
R_NAME=maildir
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
load=$R_ROOT/examples/recipes/mail_load.py
procs=${RECIPE_MAIL_PROCS:-8}
have_maildrop=1
maildrop=$R_TMP/maildrop
if command -v maildrop >/dev/null; then
	cp "$(command -v maildrop)" "$maildrop"
	chmod 0755 "$maildrop"
else
	have_maildrop=0
	r_note "maildrop is not installed (deps.sh recipes): its row is skipped"
fi

# loop MODE: the python delivery loop; sets OPS and CHECK.
loop() {
	local how=$1 md=$R_MNT/Maildir out n secs
	local -a pre
	rm -rf "$md"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	# Without syncs (eatmydata) 8 deliverers make 20,000 messages a second:
	# capped so that they do not use up the disk's inodes.
	out=$("${pre[@]}" "$R_PY" "$load" --maildir "$md" --procs "$procs" --secs "$R_SECS" \
		--max 4000 \
		2>"$R_TMP/err") || { sed 's/^/    /' "$R_TMP/err" >&2; OPS='' CHECK="run failed"; return 0; }
	n=$(sed -n 's/.*delivered=\([0-9]*\).*/\1/p' <<<"$out")
	secs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' <<<"$out")
	OPS=$(r_rate "$n" "$secs")
	CHECK=$("$R_PY" "$load" --maildir "$md" --check --expect "$n" 2>&1 | tail -n 1) || true
	rm -rf "$md"
	sync -f "$R_MNT"
}

# mda MODE: maildrop from $procs loops of $R_SECS; sets OPS and CHECK.
mda() {
	local how=$1 md=$R_MNT/Maildir d=$R_MNT/mda t0 secs n got i
	local -a pre
	rm -rf "$md" "$d"
	mkdir -p "$md"/{tmp,new,cur} "$d"
	printf 'to "%s/"\n' "$md" >"$d/filter"
	chmod 0600 "$d/filter"
	printf 'From: sender@example.org\nTo: rcpt@example.org\nSubject: recipe\n\n%s\n' \
		"$(seq 1 200 | tr '\n' ' ')" >"$d/msg"
	: >"$R_TMP/report.$how"
	mapfile -t pre < <(r_env "$how" "$R_TMP/report.$how")
	t0=$(r_now)
	for ((i = 0; i < procs; i++)); do
		(
			end=$((${EPOCHREALTIME/./} + R_SECS * 1000000)) k=0
			while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
				"${pre[@]}" "$maildrop" "$d/filter" <"$d/msg" || exit 1
				k=$((k + 1))
			done
			echo "$k" >"$d/count.$i"
		) &
	done
	wait
	secs=$(r_since "$t0")
	n=$(cat "$d"/count.* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	OPS=$(r_rate "$n" "$secs")
	got=$(find "$md/new" -type f | wc -l)
	CHECK=ok
	[ "$got" -eq "$n" ] || CHECK="$got messages in new/, $n delivered"
	[ "$(ls "$d"/count.* 2>/dev/null | wc -l)" -eq "$procs" ] || CHECK="a delivery loop failed"
	# the body as sent (maildrop adds headers of its own above it)
	for f in $(find "$md/new" -type f | head -n 20); do
		tail -n 1 "$f" | cmp -s - <(tail -n 1 "$d/msg") || CHECK="message $(basename "$f") damaged"
	done
	rm -rf "$md" "$d"
	sync -f "$R_MNT"
}

r_header
for us in $R_FLUSHES; do
	r_disk_up "$us"
	for wl in loop mda; do
		[ "$wl" = mda ] && [ "$have_maildrop" = 0 ] && continue
		r_measure "$wl"
		case $wl in
		loop) what="maildir, $procs procs, fsync file+dir" ;;
		mda) what="maildrop, $procs loops" ;;
		esac
		r_row "$us" "$what" "${R_OPS[bare]}" "${R_OPS[libgc]}" "${R_OPS[eatmydata]:-}" \
			"$R_TMP/report.libgc" "${R_FL[libgc]} (${R_FL[bare]})" "$R_CHECK" "$R_RATIO"
	done
	r_disk_down
done
echo "ops/s: messages delivered per second."
