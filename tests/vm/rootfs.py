# SPDX-License-Identifier: Apache-2.0
"""The root file system of the arm64 guest that boots Debian's systemd, as
an initramfs: the kernel unpacks it into a tmpfs and runs
/lib/systemd/systemd from it (rdinit=), so the guest needs no disk, no
block or 9p driver and no maintainer script ever runs arm64 code here.

The image is a concatenation of uncompressed newc cpio archives, which
the kernel unpacks one after the other into the same tree:

  base      the extracted arm64 tree (tools/arm64/sysroot.sh) without what
            the guest never uses (headers, static libraries, documentation,
            locales, all kernel modules but the cpufreq ones), plus what
            the skipped maintainer scripts would have made: modules.dep
            (the tree's own depmod, run under qemu-aarch64-static) and
            busybox's applets where Debian's own programs are not in the
            tree (/bin/sh, /bin/kill, devmem, ...). Cached in the cache
            directory under a name derived from the tree's path and this
            file, and reused until either changes.
  system    the configuration Debian's installation would have done, as
            plain files: users and groups (the host's systemd-sysusers
            over the tree's and the project's sysusers.d files),
            machine-id, hostname, and the boot: default.target is
            cppcgov-vm.target (basic.target, the system bus, the journal
            and, on the serial console, the command loop of guest.py's
            Guest.sh()), masks for the units and generators that only cost
            boot time in a guest without disks, udev or network.
  project   `meson install --destdir` of the arm64 build, and the files
            the test adds (policy drop-ins).

Later archives replace the files of earlier ones; a path must not be a
symbolic link in two of them (the kernel does not replace those).
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import time

from initrd import INIT, READY_LINE

# What the guest never uses, relative to the tree's root.
EXCLUDED_DIRS = (
    "boot",
    "usr/include",
    "usr/src",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/perl",
    "usr/share/perl5",
    "usr/share/lintian",
    "usr/share/bash-completion",
    "usr/share/zsh",
    "usr/share/gdb",
    "usr/share/bug",
    "usr/lib/gcc",
    "usr/lib/klibc",
    "usr/lib/aarch64-linux-gnu/perl",
    "usr/lib/aarch64-linux-gnu/perl-base",
    "usr/lib/aarch64-linux-gnu/gconv",
    "var/cache",
    "var/lib/apt",
    "lib/modules",
)
EXCLUDED_PREFIXES = ("usr/lib/linux-image-",)
EXCLUDED_SUFFIXES = (".a",)
EXCLUDED_LIBRARIES = ("libasan.", "libtsan.", "liblsan.", "libubsan.",
                      "libhwasan.", "libperl.")

# The kernel modules the guest loads (relative to lib/modules/<version>).
MODULES = (
    "kernel/drivers/cpufreq/cppc_cpufreq.ko",
    "kernel/drivers/cpufreq/cpufreq_userspace.ko",
)
MODULE_INDEX = ("modules.order", "modules.builtin", "modules.builtin.modinfo")

TARGET = "cppcgov-vm.target"
CONSOLE_UNIT = "cppcgov-vm-console.service"
# The serial console of QEMU's virt machine.
CONSOLE_TTY = "/dev/ttyAMA0"

# Units of a Debian boot that a guest without disks, udev, network or
# persistent state does not need; masked, they cost no boot time.
MASKED_UNITS = (
    "systemd-udevd.service",
    "systemd-udevd-control.socket",
    "systemd-udevd-kernel.socket",
    "systemd-udev-trigger.service",
    "systemd-udev-settle.service",
    "systemd-hwdb-update.service",
    "systemd-firstboot.service",
    "systemd-repart.service",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "systemd-pcrphase.service",
    "systemd-pcrphase-sysinit.service",
    "systemd-random-seed.service",
    "systemd-machine-id-commit.service",
    "systemd-journal-flush.service",
    "systemd-update-utmp.service",
    "systemd-ask-password-console.path",
    "systemd-ask-password-wall.path",
    "systemd-remount-fs.service",
    "systemd-sysctl.service",
    "systemd-modules-load.service",
    "systemd-sysusers.service",
    "systemd-tmpfiles-setup-dev.service",
    "kmod-static-nodes.service",
    "systemd-fsck-root.service",
    "systemd-networkd.service",
    "systemd-resolved.service",
    "systemd-timesyncd.service",
    "systemd-logind.service",
    "getty.target",
    "serial-getty@ttyAMA0.service",
    "dev-hugepages.mount",
    "dev-mqueue.mount",
    "sys-kernel-debug.mount",
    "sys-kernel-tracing.mount",
    "sys-kernel-config.mount",
    "sys-fs-fuse-connections.mount",
    "cryptsetup.target",
    "veritysetup.target",
    "integritysetup.target",
    "remote-fs.target",
    "swap.target",
)

TARGET_UNIT = f"""\
[Unit]
Description=cppcgov VM test: the system bus, the journal and a root shell
Requires=basic.target
Wants=dbus.socket systemd-journald.service {CONSOLE_UNIT}
After=basic.target dbus.socket systemd-journald.service
AllowIsolate=yes
"""

# The command loop guest.py's Guest.sh() talks to: initrd.INIT's own,
# without the mounts and the poweroff of a busybox init (systemd made the
# mounts). It says it is ready once the boot's jobs are all done.
CONSOLE_LOOP_PATH = "/usr/lib/cppcgov-vm/console-loop"


def console_loop():
    start = INIT.index("stty -echo")
    end = INIT.index("\ndone\n", start) + len("\ndone\n")
    loop = INIT[start:end]
    if READY_LINE not in loop:
        raise Error("initrd.INIT's command loop is not where it was")
    return ("#!/bin/sh\n"
            "# The console's command loop (see tests/vm/initrd.py).\n"
            "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
            ":/sbin:/bin\n"
            "systemctl is-system-running --wait >/dev/null\n" + loop)


# The console loop as a service on the serial console, started again if
# it ends.
CONSOLE_UNIT_TEXT = f"""\
[Unit]
Description=cppcgov VM test: the command loop on {CONSOLE_TTY}
After=systemd-journald.socket

[Service]
ExecStart=/bin/sh {CONSOLE_LOOP_PATH}
StandardInput=tty-force
StandardOutput=tty
StandardError=tty
TTYPath={CONSOLE_TTY}
TTYReset=yes
Environment=HOME=/root TERM=dumb
WorkingDirectory=/root
Restart=always
RestartSec=0
"""

MACHINE_ID = "c99c0c0f5e2a4b1e9d3f0a7b6c5d4e3f\n"
HOSTNAME = "cppcgov-vm\n"


class Error(Exception):
    pass


def run(argv, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True,
                            check=False, **kwargs)
    if result.returncode != 0:
        raise Error(f"{' '.join(argv)} failed (exit status"
                    f" {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, mode)


def kernel_version(sysroot):
    """The version of the tree's only kernel (its lib/modules name)."""
    versions = os.listdir(os.path.join(sysroot, "lib", "modules"))
    if len(versions) != 1:
        raise Error(f"expected one kernel in '{sysroot}/lib/modules', found"
                    f" {versions}")
    return versions[0]


def kernel_image(sysroot):
    path = os.path.join(sysroot, "boot", f"vmlinuz-{kernel_version(sysroot)}")
    if not os.path.isfile(path):
        raise Error(f"'{path}' not found")
    return path


def excluded(rel, name):
    if rel in EXCLUDED_DIRS or rel.startswith(EXCLUDED_PREFIXES):
        return True
    return name.endswith(EXCLUDED_SUFFIXES) or name.startswith(
        EXCLUDED_LIBRARIES)


def tree_list(root, skip=excluded):
    """The paths under `root` (relative, directories before what they hold)
    that `skip(rel, name)` does not exclude."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        reldir = os.path.relpath(dirpath, root)
        reldir = "" if reldir == "." else reldir + "/"
        kept = []
        for name in sorted(dirnames):
            rel = reldir + name
            if skip(rel, name):
                continue
            # os.walk does not descend into symbolic links: list them here.
            paths.append(rel)
            if not os.path.islink(os.path.join(dirpath, name)):
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = reldir + name
            if not skip(rel, name):
                paths.append(rel)
    return paths


def write_cpio(root, paths, out):
    """Appends a newc archive of `paths` (relative to `root`), owned by
    root, to the open binary file `out`."""
    listing = "".join(p + "\n" for p in paths)
    result = subprocess.run(
        ["cpio", "--create", "--format=newc", "--owner=0:0", "--quiet"],
        input=listing.encode(), stdout=out, stderr=subprocess.PIPE,
        cwd=root, check=False)
    if result.returncode != 0:
        raise Error(f"cpio failed in '{root}':"
                    f" {result.stderr.decode(errors='replace').strip()}")


def write_tree_cpio(root, out):
    write_cpio(root, tree_list(root, skip=lambda rel, name: False), out)


def base_key(sysroot):
    digest = hashlib.sha256()
    digest.update(os.path.realpath(sysroot).encode())
    with open(__file__, "rb") as f:
        digest.update(f.read())
    return digest.hexdigest()[:16]


def make_base_extras(sysroot, stage):
    """The modules and their index, and busybox's missing applets, in
    `stage`."""
    version = kernel_version(sysroot)
    modules = os.path.join("lib", "modules", version)
    for rel in MODULES + MODULE_INDEX:
        source = os.path.join(sysroot, modules, rel)
        os.makedirs(os.path.dirname(os.path.join(stage, modules, rel)),
                    exist_ok=True)
        shutil.copy2(source, os.path.join(stage, modules, rel))
    qemu = shutil.which("qemu-aarch64-static")
    if qemu is None:
        raise Error("qemu-aarch64-static not found")
    run([qemu, "-L", sysroot, os.path.join(sysroot, "sbin", "depmod"),
         "-b", stage, version])

    applets = run([qemu, "-L", sysroot, os.path.join(sysroot, "bin",
                                                      "busybox"),
                   "--list-full"]).split()
    for applet in applets:
        # Debian's own program where the tree has it (in /bin or /usr/bin,
        # /sbin or /usr/sbin: the tree does not merge /usr).
        name = os.path.basename(applet)
        if any(os.path.lexists(os.path.join(sysroot, d, name))
               for d in ("bin", "sbin", "usr/bin", "usr/sbin")):
            continue
        link = os.path.join(stage, applet)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        target = os.path.relpath(os.path.join(stage, "bin", "busybox"),
                                 os.path.dirname(link))
        os.symlink(target, link)


def base_image(sysroot, cache):
    """The path of the cached base archive, built if needed."""
    path = os.path.join(cache, f"vm-rootfs-base-{base_key(sysroot)}.cpio")
    if os.path.isfile(path):
        return path
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache,
                                     prefix=".vm-rootfs-") as work:
        stage = os.path.join(work, "stage")
        os.mkdir(stage)
        make_base_extras(sysroot, stage)
        partial = os.path.join(work, "base.cpio")
        with open(partial, "wb") as out:
            write_cpio(sysroot, tree_list(sysroot), out)
            write_tree_cpio(stage, out)
        # Published whole, never half written.
        os.replace(partial, path)
    # Images of other trees or versions of this file, unused for a day.
    for name in os.listdir(cache):
        old = os.path.join(cache, name)
        if (name.startswith("vm-rootfs-base-") and old != path
                and os.path.getmtime(old) < time.time() - 86400):
            os.remove(old)
    return path


def make_system_layer(sysroot, project, stage):
    """The configuration layer in `stage`; `project` is the project
    layer's tree (for its sysusers.d files)."""
    # Users and groups: the host's systemd-sysusers (the same version as
    # the tree's) over every sysusers.d file the guest will have.
    sysusers = os.path.join(stage, "usr", "lib", "sysusers.d")
    os.makedirs(sysusers)
    for source in (os.path.join(sysroot, "usr", "lib", "sysusers.d"),
                   os.path.join(project, "usr", "lib", "sysusers.d"),
                   os.path.join(project, "usr", "local", "lib", "sysusers.d")):
        if os.path.isdir(source):
            for name in os.listdir(source):
                shutil.copy(os.path.join(source, name), sysusers)
    os.makedirs(os.path.join(stage, "etc"))
    systemd_sysusers = shutil.which("systemd-sysusers")
    if systemd_sysusers is None:
        raise Error("systemd-sysusers not found")
    run([systemd_sysusers, f"--root={stage}"])
    shutil.rmtree(os.path.join(stage, "usr"))

    write(os.path.join(stage, "etc", "machine-id"), MACHINE_ID, 0o444)
    write(os.path.join(stage, "etc", "hostname"), HOSTNAME)
    write(os.path.join(stage, "etc", "fstab"), "")
    os.makedirs(os.path.join(stage, "root"), mode=0o700)

    units = os.path.join(stage, "etc", "systemd", "system")
    write(os.path.join(units, TARGET), TARGET_UNIT)
    write(os.path.join(units, CONSOLE_UNIT), CONSOLE_UNIT_TEXT)
    os.symlink(TARGET, os.path.join(units, "default.target"))
    for unit in MASKED_UNITS:
        os.symlink("/dev/null", os.path.join(units, unit))
    # No generator: the guest has no fstab, disks, getty or SysV scripts.
    generators = os.path.join(stage, "etc", "systemd", "system-generators")
    os.makedirs(generators)
    for name in os.listdir(os.path.join(sysroot, "lib", "systemd",
                                        "system-generators")):
        os.symlink("/dev/null", os.path.join(generators, name))
    write(stage + CONSOLE_LOOP_PATH, console_loop(), 0o755)


def build(sysroot, project, cache, out_path, prefix=b""):
    """Writes the guest's initrd to `out_path`: `prefix` (the ACPI
    table-upgrade archive, which must come first), then the root file
    system: the cached base, the system layer and `project` (a directory
    tree laid over /)."""
    base = base_image(sysroot, cache)
    with tempfile.TemporaryDirectory(
            dir=os.path.dirname(out_path), prefix=".rootfs-") as work:
        stage = os.path.join(work, "system")
        os.mkdir(stage)
        make_system_layer(sysroot, project, stage)
        with open(out_path, "wb") as out:
            out.write(prefix)
            with open(base, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
            write_tree_cpio(stage, out)
            write_tree_cpio(project, out)
    return out_path
