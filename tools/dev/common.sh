# SPDX-License-Identifier: Apache-2.0
# Shared by tools/dev/demo and tools/dev/test: install what the build needs
# from Debian 12's archive, then configure and build.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${CPPCGOV_BUILD_DIR:-$top/build}

packages=(
    g++ meson ninja-build pkg-config python3
    libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libboost-dev
    libyaml-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
    acpica-tools clang-format clang-tidy valgrind clang libclang-rt-14-dev
    # The scheduler observer's BPF program (daemon/bpf).
    libbpf-dev bpftool
    systemd dbus dbus-bin util-linux scdoc bash-completion man-db groff-base
    # The PCC-speed sysfs rig on FUSE (tests/pccfs).
    libfuse3-dev fuse3
    # The arm64 build and its virtual machine (tools/arm64, tests/vm).
    g++-aarch64-linux-gnu qemu-user-static qemu-system-arm qemu-efi-aarch64
    mmdebstrap cpio
)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    else
        sudo "$@"
    fi
}

install_packages() {
    local missing=()
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing: ${missing[*]}"
        as_root apt-get update -q
        as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

configure_and_build() {
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$top" "$@"
    elif [ $# -gt 0 ]; then
        meson configure "$build" "$@"
    fi
    ninja -C "$build" -j "$(nproc)"
}
