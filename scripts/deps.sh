#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs the Debian packages the project tests and benchmarks with.  Called
# by the make targets that need them (test, demo, bench, ...), never by plain
# `make`.  Idempotent and quiet when everything is present.
#   deps.sh         what `make test` needs (Criterion, FUSE, the mkfs tools of
#                   ext4, XFS and btrfs, ...)
#   deps.sh demo    and fs_mark
#   deps.sh bench   and fs_mark, fio, sysbench, gnuplot
#   deps.sh recipes the real programs of examples/recipes (SQLite, PostgreSQL,
#                   MariaDB and sysbench, Redis, git, a mail delivery agent,
#                   Berkeley DB tools, fio)
#   deps.sh layout  what scripts/textorder.sh profiles with: valgrind, and
#                   the programs it runs
#   deps.sh deb     what make deb and tests/pkg/deb.sh need: debhelper and
#                   lintian, and Boehm GC's libgc-dev, to install beside it
#   deps.sh compat  the test suites `make compat` runs: Python's, and SQLite's
#                   from Debian's source package (adds deb-src entries for
#                   Debian's archive when apt has none)
set -euo pipefail

need=(build-essential pkg-config clang libcriterion-dev libfuse3-dev fuse3
      libunwind-dev libbpf-dev bpftool e2fsprogs xfsprogs btrfs-progs eatmydata
      strace tmux git rsync sqlite3 jq)
case ${1:-} in
'') ;;
demo) need+=(fsmark) ;;
bench) need+=(fsmark fio sysbench gnuplot-nox) ;;
recipes) need+=(python3 sqlite3 postgresql-15 postgresql-contrib redis-server redis-tools git
		maildrop db5.3-util fio mariadb-server sysbench) ;;
compat) need+=(python3 libpython3.11-testsuite tcl8.6-dev) ;;
layout) need+=(valgrind python3 sqlite3) ;;
deb) need+=(debhelper dpkg-dev lintian libgc-dev) ;;
*)
	echo "deps: unknown set '$1' (use: demo, bench, recipes, compat, layout, deb, or nothing)" >&2
	exit 2
	;;
esac

if ! command -v dpkg-query >/dev/null; then
	echo "deps: not a Debian system; install the equivalents of: ${need[*]}" >&2
	exit 0
fi

# `apt-get source sqlite3` needs deb-src entries; Debian images often carry
# only binary ones.  The same archive, sources side.
need_src() {
	[ "${1:-}" = compat ] || return 0
	apt-get source --print-uris -qq sqlite3 >/dev/null 2>&1 && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: apt has no deb-src entries (needed by make compat); add them as root" >&2
		return 1
	fi
	echo "deps: adding deb-src entries for Debian's archive" >&2
	. /etc/os-release
	cat >/etc/apt/sources.list.d/libgc-deb-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME:-bookworm} ${VERSION_CODENAME:-bookworm}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	apt-get update -qq >/dev/null
}

missing=()
for p in "${need[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	need_src "${1:-}"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run as root, or install them)" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/libgc-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]; then
	apt-get update -qq >/dev/null
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
need_src "${1:-}"
