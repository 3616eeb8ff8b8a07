#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PID 1 of the system test's namespaces, before it becomes systemd.
#
# system_test.py starts this under `unshare --pid --fork --mount
# --mount-proc --propagation private --uts --ipc --net --cgroup`, already
# placed in a cgroup of its own. It builds the file system view systemd
# will see, then execs systemd. Every mount below is made in the new mount
# namespace and vanishes with it; nothing here touches the host's mounts.
#
#   writable:  WORK (the test's directory, outside /tmp); fresh tmpfs on
#              /tmp, /var/tmp, /run, /var/log, /dev and /dev/shm; and
#              overlays on the DIRS given (/usr, /etc, dpkg's database...),
#              each with its upper directory in WORK/upper/DIR: what dpkg
#              and the package's scripts change there lands in WORK, never
#              in the host's tree
#   read-only: everything else: /, /sys, /proc/sys, /proc/sysrq-trigger
#
# The fresh /tmp and /var/tmp are the second safety rule of the system
# tests: whatever runs in here (a tmpfiles rule, a unit's cleanup) can
# never reach the host's temporary files. The first rule is
# SYSTEMD_UNIT_PATH below: the test's own units only.
#
# Usage: ns_init.sh WORK UNITS_DIR TARGET DIR...
#   DIR: a directory relative to / (usr, etc, var/lib/dpkg) that gets a
#        writable overlay, the host's directory as its lower layer
set -euo pipefail

work=$1
units=$2
target=$3
shift 3

# The host's mounts are private copies now (--propagation private); make
# sure before anything is mounted.
mount --make-rprivate /

# The work directory stays writable once / is read-only.
mount --bind "$work" "$work"

# Writable views of the directories the package installs into; the
# host's directory below, the changes in WORK/upper.
for dir in "$@"; do
    mkdir -p "$work/upper/$dir" "$work/overlay-work/$dir"
    mount -t overlay -o "lowerdir=/$dir,upperdir=$work/upper/$dir,workdir=$work/overlay-work/$dir" \
        "cppcgov-${dir//\//-}" "/$dir"
done

mount -o remount,bind,ro /

for dir in /tmp /var/tmp; do
    mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$dir"
done
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
if [ -d /var/log ]; then
    mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /var/log
fi

# A /dev of our own: the basic nodes only (no disks, no /dev/mem), so that
# nothing in here creates or removes anything in the host's /dev.
mount -t tmpfs -o mode=0755,nosuid,noexec tmpfs /dev
mknod -m 0666 /dev/null c 1 3
mknod -m 0666 /dev/zero c 1 5
mknod -m 0666 /dev/full c 1 7
mknod -m 0666 /dev/random c 1 8
mknod -m 0666 /dev/urandom c 1 9
mknod -m 0666 /dev/tty c 5 0
mkdir -m 0755 /dev/pts
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mkdir -m 1777 /dev/shm
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
# The console is the test's FIFO (systemd's messages until the journal
# takes them).
ln -s "$work/console" /dev/console

# Kernel settings stay out of reach: systemd as PID 1 would otherwise
# raise fs.nr_open and friends on the host.
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
if [ -e /proc/sysrq-trigger ]; then
    mount --bind /proc/sysrq-trigger /proc/sysrq-trigger
    mount -o remount,bind,ro /proc/sysrq-trigger
fi

# cgroup2 mounted inside our cgroup namespace is rooted at the test's own
# cgroup: systemd's slices and scopes all land below it.
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
mount -o remount,bind,ro /sys

# `container=` makes systemd behave as in a container: no hostname,
# console, kernel command line or kmsg of the host. The generator paths
# name a directory that does not exist: no generators run (their units
# would not be loaded from outside SYSTEMD_UNIT_PATH anyway).
exec env -i \
    container=cppcgov-system-test \
    SYSTEMD_UNIT_PATH="$units" \
    SYSTEMD_GENERATOR_PATH="$work/no-generators" \
    SYSTEMD_ENVIRONMENT_GENERATOR_PATH="$work/no-generators" \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    /lib/systemd/systemd --system --unit="$target" \
    --log-target=journal --log-level=info --show-status=no
