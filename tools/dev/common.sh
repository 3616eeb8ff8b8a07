# SPDX-License-Identifier: Apache-2.0
# Shared by tools/dev/demo and tools/dev/test: install what each needs
# from Debian 12's archive, then configure and build.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# What building and running the daemon and the client needs, and the
# system bus tools the demo uses: all tools/dev/demo installs.
demo_packages=(
    g++ meson ninja-build pkg-config python3
    libsdbus-c++-dev libsdbus-c++-bin libsystemd-dev libboost-dev
    libyaml-cpp-dev
    # cppcgovctl record's PNG.
    zlib1g-dev
    systemd dbus dbus-bin
)

# Everything tools/dev/test uses besides.
test_packages=(
    "${demo_packages[@]}"
    libgtest-dev libgmock-dev libbenchmark-dev
    acpica-tools clang-format clang-tidy valgrind clang libclang-rt-14-dev
    # The scheduler observer's BPF program (daemon/bpf).
    libbpf-dev bpftool
    util-linux
    # The PCC-speed sysfs rig on FUSE (tests/pccfs).
    libfuse3-dev fuse3
    # The arm64 build and its virtual machine (tools/arm64, tests/vm).
    g++-aarch64-linux-gnu qemu-user-static qemu-system-arm qemu-efi-aarch64
    mmdebstrap cpio
    # The PCC layouts' boot disk, a FAT volume (tests/vm/boot_disk.py).
    dosfstools mtools
    # The Debian package (tools/dev/deb, debian/control's Build-Depends)
    # and the system test that installs it.
    build-essential debhelper dpkg-dev fakeroot lintian libdbus-1-dev
    # Man pages and completion, built by meson; man --warnings checks them.
    scdoc bash-completion man-db groff-base
    # cppcgovctl monitor's test drives it in a terminal (monitor_test.py).
    tmux
    # The README's Python example of an application (client_test.py).
    python3-dbus
    # The metrics: promtool checks them, node_exporter's textfile
    # collector reads them (tests/integration/metrics_test.py).
    prometheus prometheus-node-exporter
)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    else
        sudo "$@"
    fi
}

# Installs the packages named that are missing.
install_packages() {
    local missing=()
    for p in "$@"; do
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

# Sets up (once) and builds the build directory $build.
configure_and_build() {
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$top" "$@"
    elif [ $# -gt 0 ]; then
        meson configure "$build" "$@"
    fi
    ninja -C "$build" -j "$(nproc)"
}
