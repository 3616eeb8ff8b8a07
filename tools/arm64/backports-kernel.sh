#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes (once) and prints the path of a tree holding the arm64 kernel of
# Debian's trixie-backports (vmlinuz and its modules, as the packages
# linux-binary-VERSION-arm64 and linux-modules-VERSION-arm64 ship them
# under usr/lib/modules/VERSION/), for the VM suite's checks that need a
# newer cppc_cpufreq than Debian 12's 6.1: one with auto_select,
# auto_act_window, energy_performance_preference_val and perf_limited.
#
# The packages come through apt with a private state, cache and source
# list (nothing of this machine's apt configuration is read or changed),
# verified by the archive keys of Debian 12's debian-archive-keyring, and
# are extracted, not installed. The tree lives in the cache directory
# under the kernel's version and is reused until the archive offers
# another; it is only ever published whole.
#
# Usage: backports-kernel.sh   print the tree's path, fetching it if needed
# Environment: CPPCGOV_CACHE   cache directory
#                              (default ${XDG_CACHE_HOME:-~/.cache}/cppcgov)
#              CPPCGOV_MIRROR  Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

cache=${CPPCGOV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cppcgov}
mirror=${CPPCGOV_MIRROR:-http://deb.debian.org/debian}
suite=trixie-backports

mkdir -p "$cache"
work=$(mktemp -d "$cache/.arm64-backports.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" \
    "$work/apt/sources.list.d" "$work/apt/preferences.d" "$work/debs"
echo "deb [arch=arm64] $mirror $suite main" >"$work/apt/sources.list"
apt_options=(
    -o "Dir::State=$work/apt" -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::State::status=/dev/null" -o "Dir::Cache=$work/apt/cache"
    -o "Dir::Etc::SourceList=$work/apt/sources.list"
    -o "Dir::Etc::SourceParts=$work/apt/sources.list.d"
    -o "Dir::Etc::Preferences=/dev/null"
    -o "Dir::Etc::PreferencesParts=$work/apt/preferences.d"
    -o "APT::Architecture=arm64" -o "APT::Architectures=arm64"
    # The download lands in a directory of this script's user.
    -o "APT::Sandbox::User=$(id -un)"
)
if ! apt-get -q "${apt_options[@]}" update >"$work/update.log" 2>&1; then
    cat "$work/update.log" >&2
    echo "error: apt could not read $suite from $mirror" >&2
    exit 1
fi
# linux-image-arm64 depends on linux-image-VERSION-arm64, which ships
# nothing itself: linux-binary- and linux-modules-VERSION-arm64 hold the
# kernel and its modules.
image=$(apt-cache "${apt_options[@]}" depends linux-image-arm64 |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-arm64\)$/\1/p' | head -n 1)
if [ -z "$image" ]; then
    echo "error: $suite has no linux-image-arm64 for arm64" >&2
    exit 1
fi
version=${image#linux-image-}
version=${version%-arm64}
tree=$cache/arm64-backports-kernel-$version
if [ -f "$tree/.cppcgov-complete" ]; then
    echo "$tree"
    exit 0
fi
echo "fetching Linux $version for arm64 from $suite" >&2
if ! (cd "$work/debs" && apt-get -q "${apt_options[@]}" download \
    "linux-binary-$version-arm64" "linux-modules-$version-arm64" \
    >"$work/download.log" 2>&1); then
    cat "$work/download.log" >&2
    echo "error: apt could not download Linux $version for arm64" >&2
    exit 1
fi
root=$work/root
for deb in "$work"/debs/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
modules=$root/usr/lib/modules/$version-arm64
if [ ! -f "$modules/vmlinuz" ]; then
    echo "error: Linux $version's packages hold no $modules/vmlinuz" >&2
    exit 1
fi
touch "$root/.cppcgov-complete"
rm -rf "$tree"
mv "$root" "$tree"
echo "$tree"
