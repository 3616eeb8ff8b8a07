#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes (once) and prints the path of an arm64 Debian 12 tree that serves
# both as the cross compiler's sysroot and as the source of everything the
# arm64 virtual machine boots: Debian's arm64 kernel and its modules,
# busybox, systemd and dbus, and the shared libraries of the project's
# programs.
#
# The tree is extracted, not installed (mmdebstrap --variant=extract):
# no maintainer script runs, so nothing needs to execute arm64 code on
# this machine. It lives in the cache directory, outside the source tree,
# under a name derived from the package list and this script, and is
# reused until either changes. A tree is only ever published whole: it is
# built beside its final name and renamed into place.
#
# Usage: sysroot.sh            print the tree's path, building it if needed
# Environment: CPPCGOV_CACHE   cache directory
#                              (default ${XDG_CACHE_HOME:-~/.cache}/cppcgov)
#              CPPCGOV_MIRROR  Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

cache=${CPPCGOV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcgov}
mirror=${CPPCGOV_MIRROR:-http://deb.debian.org/debian}

packages=(
    # What the build links against.
    libc6-dev libstdc++-12-dev libsdbus-c++-dev libsystemd-dev libboost-dev
    libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libbpf-dev
    # What the virtual machine runs.
    linux-image-arm64 busybox-static systemd systemd-sysv dbus util-linux
    kmod
)

key=$(printf '%s\n' "${packages[@]}" "$mirror" | cat - "${BASH_SOURCE[0]}" |
    sha256sum | cut -c1-16)
tree=$cache/arm64-sysroot-$key
if [ -f "$tree/.cppcgov-complete" ]; then
    echo "$tree"
    exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.arm64-sysroot.XXXXXX")
trap 'rm -rf "$work"' EXIT
list=$(
    IFS=,
    echo "${packages[*]}"
)
echo "making the arm64 tree in $tree (mmdebstrap from $mirror)" >&2
if ! mmdebstrap --quiet --variant=extract --architectures=arm64 \
    --include="$list" bookworm "$work/root" "$mirror" >&2; then
    echo "error: mmdebstrap could not make the arm64 tree from $mirror" >&2
    exit 1
fi

# The cross linker resolves symbolic links on this machine: a link such as
# libm.so -> /lib/aarch64-linux-gnu/libm.so.6 must point inside the tree.
root=$work/root
while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    rel=$(realpath --relative-to="$(dirname "$link")" -m "$root$target")
    ln -sfn "$rel" "$link"
done < <(find "$root" -type l -lname '/*' -print0)

kernels=("$root"/boot/vmlinuz-*)
if [ ! -f "${kernels[0]}" ]; then
    echo "error: the arm64 tree has no kernel in /boot" >&2
    exit 1
fi
touch "$root/.cppcgov-complete"
rm -rf "$tree"
mv "$root" "$tree"
echo "$tree"
