#!/usr/bin/env bash
# Installs the Debian packages the project builds, tests and benchmarks with.
# Idempotent and quiet when everything is present; `deps.sh bench` adds the
# benchmark tools.
set -eu

need=(build-essential pkg-config clang libcriterion-dev libfuse3-dev fuse3
      libunwind-dev libbpf-dev bpftool e2fsprogs eatmydata strace)
if [ "${1:-}" = bench ]; then
	need+=(fsmark fio sysbench gnuplot-nox)
fi

missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

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
