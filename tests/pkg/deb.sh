#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian packages as a user meets them: built once (make deb's script,
# nocheck), lintian, dpkg -i beside Boehm GC's libgc-dev, a program under the
# installed gcrun whose report shows libgc served it, /etc/ld.so.preload
# naming the installed path for one command, gcd from its package, and
# dpkg --purge leaving nothing behind. Needs root and Debian's tools
# (scripts/deps.sh deb installs them); skips with a reason otherwise.
cd "$(dirname "$0")/../.." || exit 1
. tests/tap.sh
B=${B:-build}
ROOT=$PWD
n=0
PLAN=10
PKGS="libgc-commit libgc-commit-gcd"
echo "1..$PLAN"

skip_all() {
	for i in $(seq 1 $PLAN); do ok "packages # SKIP $1"; done
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (dpkg -i)"
command -v dpkg-query >/dev/null && command -v apt-get >/dev/null || skip_all "not a Debian system"
bash scripts/deps.sh deb >/dev/null 2>&1 || skip_all "cannot install debhelper, lintian and libgc-dev (scripts/deps.sh deb)"
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $st in
	*installed*) skip_all "$p is installed on this machine: the test would replace and purge it" ;;
	esac
done

# One run at a time on a machine: another's purge must not meet our install.
exec 9>/run/lock/libgc-pkg-test.lock
flock -w 300 9 || skip_all "another run of this test holds /run/lock/libgc-pkg-test.lock"

tmp=$(mktemp -d /var/tmp/libgc-pkg.XXXXXX)
fs=$tmp/fs
preload_before=$(cat /etc/ld.so.preload 2>/dev/null || echo "(none)")
wrote_preload=
cleanup() {
	# a stale /etc/ld.so.preload would reach every program on the machine
	if [ -n "$wrote_preload" ]; then rm -f /etc/ld.so.preload; fi
	if [ -n "${holder:-}" ]; then
		kill -9 "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	if [ -n "${gcd:-}" ]; then
		kill "$gcd" 2>/dev/null
		wait "$gcd" 2>/dev/null
	fi
	mountpoint -q "$fs" && { umount "$fs" || umount -l "$fs"; }
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed && dpkg --purge "$p" >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
pkglib=/usr/lib/$ma/libgc-commit/libgc.so
boehm=/usr/lib/$ma/libgc.so
reporter=$ROOT/$B/tests/e2e/progs/reporter
mkdir -p "$fs" && mount -t tmpfs -o size=16m libgc-pkg "$fs" || skip_all "cannot mount a tmpfs"

# 1. build once, as make deb does, and lintian
start=$(date +%s)
out=$(DEB_BUILD_OPTIONS="nocheck noddebs" bash scripts/deb.sh "$tmp/deb" 2>&1); rc=$?
debs=$(ls "$tmp"/deb/libgc-commit_*.deb "$tmp"/deb/libgc-commit-gcd_*.deb 2>/dev/null)
[ $rc = 0 ] && [ "$(wc -w <<<"$debs")" = 2 ] && grep -q '^deb: lintian: no errors' <<<"$out" &&
	ok "dpkg-buildpackage -us -uc -b: libgc-commit and libgc-commit-gcd, lintian: no errors ($(($(date +%s) - start)) s)" ||
	not_ok "build and lintian" "rc=$rc" "$out"
[ -n "$debs" ] || skip_all "no packages were built"

# 2. nothing a loader could hand out for Boehm GC's, no file of libgc-dev's
ours=$(for d in $debs; do dpkg-deb -c "$d"; done | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }')
theirs=$(dpkg -L libgc-dev libgc1 2>/dev/null | sort -u)
searched=$(ldconfig -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p')
clash=
for f in $ours; do
	grep -qxF "$f" <<<"$theirs" && clash+=" $f (libgc-dev's)"
	case $f in *.so | *.so.*) grep -qxF "$(dirname "$f")" <<<"$searched" && clash+=" $f (in the loader's path)" ;; esac
done
grep -qxF "$pkglib" <<<"$ours" && [ -z "$clash" ] &&
	ok "the library is $pkglib only: no file of libgc-dev's, nothing in the loader's path" ||
	not_ok "installed paths" "clash:$clash" "$ours"

# 3. install beside Boehm GC's libgc-dev
out=$(dpkg -i $debs 2>&1); rc=$?
st=$(dpkg-query -W -f='${Package}:${Status} ' libgc-dev $PKGS 2>&1)
[ $rc = 0 ] && [ "$(grep -o 'install ok installed' <<<"$st" | wc -l)" = 3 ] && [ -e "$pkglib" ] &&
	ok "dpkg -i beside libgc-dev: $(dpkg-query -W -f='${Version}' libgc-dev) of Boehm GC and ours both installed" ||
	not_ok "dpkg -i" "rc=$rc" "$out" "$st"

# 4. gcd's unit is enabled on install (debian/libgc-commit-gcd.README.Debian and docs/observer.md say why)
[ -L /etc/systemd/system/multi-user.target.wants/gcd.service ] && [ -e /lib/systemd/system/gcd.service ] &&
	ok "gcd.service installed and enabled (multi-user.target.wants)" ||
	not_ok "gcd.service enabled" "$(ls -l /etc/systemd/system/multi-user.target.wants/ 2>&1)"

# 5. a bare libgc.so is still Boehm's, and the installed gcrun says so
list=$(LD_PRELOAD=libgc.so /usr/bin/gcrun --check -- /bin/true); rc=$?
got=$(LD_PRELOAD=libgc.so "$(sed -n 's/.*dynamically linked (\(.*\))$/\1/p' <<<"$list")" --list /bin/true 2>&1 |
	sed -n 's|^\tlibgc.so => \(/[^ ]*\) .*|\1|p')
[ $rc = 1 ] && [ "$(readlink -f "$got")" = "$(readlink -f "$boehm")" ] &&
	grep -q "^libgc:      $pkglib: libgc (libgc " <<<"$list" &&
	grep -q "^preloaded:  libgc.so => .*(LD_PRELOAD): NOT libgc: the Boehm-Demers-Weiser garbage collector" <<<"$list" &&
	ok "LD_PRELOAD=libgc.so still loads Boehm GC ($got); the installed gcrun --check flags it (exit 1)" ||
	not_ok "bare libgc.so" "rc=$rc loader gave: $got" "$list"

# 6. a program under the installed gcrun, and its report
if [ -x "$reporter" ]; then
	pre=$(env -u LD_PRELOAD /usr/bin/gcrun -- sh -c 'echo "$LD_PRELOAD"')
	err=$(env -u LD_PRELOAD /usr/bin/gcrun --report=kv -- "$reporter" "$fs" 3 exit 2>&1 >/dev/null)
	[ "$pre" = "$pkglib" ] && grep -q "^libgc: pid=[0-9]* .*req_fsync=3 " <<<"$err" &&
		ok "under the installed gcrun (LD_PRELOAD=$pre) libgc served 3 fsyncs and reported them" ||
		not_ok "gcrun report" "LD_PRELOAD=$pre" "$err"
else
	ok "gcrun report # SKIP $reporter is not built (make test-bins)"
fi

# 7, 8. /etc/ld.so.preload naming the installed path, for one command. In a
# mount namespace of its own where it can be (an overlay on /etc: the real
# file is never written, and nothing of it outlives the command); else the
# real file, only if there is none, removed by the trap whatever happens.
if [ -x "$reporter" ]; then
	how=
	mkdir -p "$tmp/ns"
	err=$(unshare -m --propagation private sh -c '
		set -e
		mount -t tmpfs libgc-etc "$1"
		mkdir "$1/up" "$1/work"
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/up,workdir=$1/work" /etc
		echo "$2" > /etc/ld.so.preload
		env -u LD_PRELOAD LIBGC_REPORT=kv "$3" "$4" 2 exit' sh "$tmp/ns" "$pkglib" "$reporter" "$fs" \
		2>&1 >/dev/null) && how="a private mount namespace"
	if [ -z "$how" ] && [ ! -e /etc/ld.so.preload ]; then
		wrote_preload=1
		echo "$pkglib" >/etc/ld.so.preload
		err=$(env -u LD_PRELOAD LIBGC_REPORT=kv "$reporter" "$fs" 2 exit 2>&1 >/dev/null)
		rm -f /etc/ld.so.preload
		wrote_preload=
		how="/etc/ld.so.preload itself"
	fi
	if [ -z "$how" ]; then
		ok "/etc/ld.so.preload # SKIP no mount namespace, and /etc/ld.so.preload exists already"
		ok "/etc/ld.so.preload removed # SKIP as above"
	else
		grep -q "^libgc: pid=[0-9]* .*req_fsync=2 " <<<"$err" &&
			ok "/etc/ld.so.preload = $pkglib ($how): one command, no LD_PRELOAD, served by libgc" ||
			not_ok "/etc/ld.so.preload" "$how" "$err"
		after=$(env -u LD_PRELOAD LIBGC_REPORT=kv "$reporter" "$fs" 2 exit 2>&1 >/dev/null)
		now=$(cat /etc/ld.so.preload 2>/dev/null || echo "(none)")
		[ "$now" = "$preload_before" ] && ! grep -q '^libgc:' <<<"$after" &&
			ok "then gone: /etc/ld.so.preload as before ($now), the next command runs bare" ||
			not_ok "/etc/ld.so.preload removed" "now: $now" "$after"
	fi
else
	ok "/etc/ld.so.preload # SKIP $reporter is not built"
	ok "/etc/ld.so.preload removed # SKIP $reporter is not built"
fi

# 9. gcd from its package publishes /run/libgc/blk.stats, as the unit runs it
if [ -e /run/libgc/blk.stats ] && ! flock -n /run/libgc/blk.stats true; then
	ok "gcd publishes # SKIP another gcd publishes /run/libgc/blk.stats"
	other_gcd=1
else
	/usr/sbin/gcd --duration 3 2>"$tmp/gcd.err" &
	gcd=$!
	for i in $(seq 1 30); do
		chk=$(/usr/bin/gcrun --check 2>&1) && grep -q "^observer: .*gcd pid $gcd" <<<"$chk" && break
		sleep 0.1
	done
	if grep -q "^observer: .*gcd pid $gcd" <<<"$chk"; then
		ok "/usr/sbin/gcd publishes /run/libgc/blk.stats; gcrun --check sees it"
	elif grep -qiE 'btf|permission|bpf' "$tmp/gcd.err"; then
		ok "gcd publishes # SKIP gcd cannot attach here: $(head -n 1 "$tmp/gcd.err")"
		mkdir -p /run/libgc && : >/run/libgc/blk.stats # what the unit's RuntimeDirectory leaves
	else
		not_ok "gcd publishes" "$chk" "$(cat "$tmp/gcd.err")"
	fi
	wait "$gcd" 2>/dev/null
	gcd=
fi

# 10. purge: segments a killed process left, /run/libgc, the unit, the files
if [ -x "$reporter" ]; then
	mkfifo "$tmp/hold"
	shm_before=$(ls /dev/shm | grep '^libgc' | sort)
	LIBGC_STATS=1 /usr/bin/gcrun -- "$reporter" "$fs" 8 exit threads=4 hold <"$tmp/hold" >/dev/null 2>&1 &
	holder=$!
	exec 8>"$tmp/hold"
	for i in $(seq 1 50); do
		[ -e /dev/shm/libgc.stats-0-"$(stat -Lc %i /proc/self/ns/pid)"-$holder ] && break
		sleep 0.1
	done
	kill -9 "$holder"
	wait "$holder" 2>/dev/null
	exec 8>&-
	# ours alone: the stats segment of that pid, the domain segment of our tmpfs
	dev=$(printf '%x' "$(stat -c %d "$fs")")
	left_by_kill=$(comm -13 <(echo "$shm_before") <(ls /dev/shm | grep '^libgc' | sort) |
		grep -E "^libgc\.stats-0-[0-9]+-$holder\$|^libgc-0-$dev-p" | sed 's|^|/dev/shm/|')
	holder=
fi
out=$(dpkg --purge $PKGS 2>&1); rc=$?
left=
for f in $ours $left_by_kill /etc/systemd/system/multi-user.target.wants/gcd.service \
	/var/lib/systemd/deb-systemd-helper-enabled/gcd.service.dsh-also /usr/lib/$ma/libgc-commit; do
	[ -e "$f" ] || [ -L "$f" ] && left+=" $f"
done
[ -z "${other_gcd:-}" ] && [ -e /run/libgc ] && left+=" /run/libgc"
st=$(dpkg-query -W -f='${Status}' $PKGS 2>/dev/null | grep -c installed)
[ $rc = 0 ] && [ -z "$left" ] && [ "$st" = 0 ] && [ -n "$left_by_kill" ] && [ -e "$boehm" ] &&
	ok "dpkg --purge: nothing left (files, the unit's links, /run/libgc, the $(wc -w <<<"$left_by_kill") segments a killed process left); Boehm's libgc.so stays" ||
	not_ok "purge" "rc=$rc" "$out" "left:$left" "killed process left: ${left_by_kill:-nothing seen}"
exit 0
