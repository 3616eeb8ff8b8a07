# SPDX-License-Identifier: Apache-2.0
"""Initial RAM disks for the arm64 virtual machine (standard library only).

Two pieces, concatenated into the file given to QEMU's -initrd:

- acpi_upgrade_cpio(tables): the kernel's ACPI table upgrade
  (CONFIG_ACPI_TABLE_UPGRADE): an uncompressed newc archive holding
  kernel/firmware/acpi/<name>.aml for each table. The kernel looks for it
  at the very start of the initrd, so it must come first and must not be
  compressed.
- busybox_initramfs(...): the root file system, a newc archive: busybox
  (static; /init links its applets), /init (the shell loop guest.py talks
  to, see INIT), the given arm64 programs with exactly the shared libraries
  they need (DT_NEEDED walked with readelf against the sysroot, plus the
  dynamic loader and glibc's libnss_files for the user database), extra
  files, an /etc/passwd with root and nobody, /etc/group with root, nogroup
  and cppcgov, and /etc/nsswitch.conf.

API:
  Cpio()                              a newc archive being written
    .directory(path, mode=0o755)      parents first; paths without a
    .file(path, data, mode=0o644)     leading '/'
    .symlink(path, target)
    .bytes()                          the archive with its trailer
  acpi_upgrade_cpio({name: aml bytes}) -> bytes
  needed_libraries(sysroot, elf_paths, readelf=READELF) -> {guest path:
      host path}: every shared object the programs load, transitively,
      and their ELF interpreter, as paths inside the sysroot
  busybox_initramfs(sysroot, programs={guest path: host path},
      files={guest path: bytes or host path}, init=INIT) -> bytes
  write_initrd(path, tables, sysroot, programs, files) writes both
      pieces, the upgrade archive first.

The guest side (INIT): it mounts proc, sysfs, devtmpfs and a tmpfs on
/run and /tmp, then runs SHELL_LOOP, which turns off the console's echo,
prints READY_LINE and reads commands from the console, one a line:
  C <id> <base64 chunk>   appends a chunk of a script to /tmp/.cmd-<id>
  R <id>                  runs that script with sh (stdin /dev/null,
                          stdout and stderr to one file), then prints
                          BEGIN_MARK <id>, the output, and
                          END_MARK <id> <exit status>
guest.py's Guest.sh() is its counterpart.
"""

import os
import re
import stat
import subprocess

READELF = 'aarch64-linux-gnu-readelf'

READY_LINE = 'cppcgov-guest: ready'
BEGIN_MARK = '@@cppcgov-begin'
END_MARK = '@@cppcgov-end'

# The command loop guest.py's Guest.sh() talks to, on standard input and
# output (the console under INIT). Any init may run it, for example a
# systemd service on the serial console.
SHELL_LOOP = f'''stty -echo -onlcr 2>/dev/null
echo '{READY_LINE}'
while read -r kind id chunk; do
    case "$kind" in
    C) printf '%s\\n' "$chunk" >>"/tmp/.cmd-$id" ;;
    R)
        base64 -d "/tmp/.cmd-$id" >"/tmp/.sh-$id" 2>/dev/null
        sh "/tmp/.sh-$id" </dev/null >"/tmp/.out-$id" 2>&1
        rc=$?
        echo "{BEGIN_MARK} $id"
        cat "/tmp/.out-$id"
        echo "{END_MARK} $id $rc"
        rm -f "/tmp/.cmd-$id" "/tmp/.sh-$id" "/tmp/.out-$id"
        ;;
    esac
done
'''

INIT = f'''#!/bin/busybox sh
# The virtual machine's init: busybox's applets, mounts, then a command
# loop on the console.
/bin/busybox --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
hostname cppcgov-vm
{SHELL_LOOP}echo 'cppcgov-guest: the console closed' >&2
poweroff -f
'''

PASSWD = 'root:x:0:0:root:/root:/bin/sh\n' \
         'nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n'
GROUP = 'root:x:0:\nnogroup:x:65534:\ncppcgov:x:900:\n'
NSSWITCH = 'passwd: files\ngroup: files\nshadow: files\n'


class Cpio:
    """A newc ("070701") archive being written, in memory."""

    def __init__(self):
        self._parts = []
        self._ino = 1
        self._dirs = set()

    def _entry(self, path, mode, data=b'', nlink=1):
        path = path.lstrip('/')
        name = path.encode() + b'\0'
        fields = [self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0,
                  len(name), 0]
        self._ino += 1
        header = b'070701' + b''.join(b'%08X' % f for f in fields)
        self._parts.append(header + name)
        self._pad()
        self._parts.append(data)
        self._pad()

    def _pad(self):
        size = sum(len(p) for p in self._parts)
        self._parts.append(b'\0' * (-size % 4))

    def _parents(self, path):
        parent = os.path.dirname(path.lstrip('/'))
        if parent and parent not in self._dirs:
            self.directory(parent)

    def directory(self, path, mode=0o755):
        path = path.strip('/')
        if path in self._dirs:
            return
        self._parents(path)
        self._dirs.add(path)
        self._entry(path, stat.S_IFDIR | mode, nlink=2)

    def file(self, path, data, mode=0o644):
        self._parents(path)
        self._entry(path, stat.S_IFREG | mode, data)

    def symlink(self, path, target):
        self._parents(path)
        self._entry(path, stat.S_IFLNK | 0o777, target.encode())

    def bytes(self):
        self._entry('TRAILER!!!', 0)
        return b''.join(self._parts)


def acpi_upgrade_cpio(tables):
    """The table-upgrade archive: kernel/firmware/acpi/<name>.aml for each
    name -> AML bytes in `tables`."""
    archive = Cpio()
    for name, aml in sorted(tables.items()):
        archive.file(f'kernel/firmware/acpi/{name}.aml', aml)
    return archive.bytes()


def _in_sysroot(sysroot, path):
    """`path` (absolute, inside the guest) as a host path in the sysroot,
    following symbolic links inside the sysroot."""
    host = os.path.join(sysroot, path.lstrip('/'))
    for _ in range(40):
        if not os.path.islink(host):
            return host
        target = os.readlink(host)
        if target.startswith('/'):
            host = os.path.join(sysroot, target.lstrip('/'))
        else:
            host = os.path.normpath(os.path.join(os.path.dirname(host),
                                                 target))
    raise RuntimeError(f'{path}: too many symbolic links in {sysroot}')


def _elf_info(path, readelf):
    """(interpreter or None, [DT_NEEDED names], [host directories of its
    $ORIGIN-relative DT_RUNPATH]) of the ELF file `path`: a program of the
    build tree finds the project's own libraries (libcppcgov-client)
    through such a runpath."""
    r = subprocess.run([readelf, '--program-headers', '--dynamic', '-W',
                        path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'{readelf} failed on {path}: {r.stderr.strip()}')
    interp = re.search(r'Requesting program interpreter: ([^\]]+)\]',
                       r.stdout)
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]',
                        r.stdout)
    origin = []
    for runpath in re.findall(r'\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path:'
                              r' \[([^\]]+)\]', r.stdout):
        origin += [d.replace('$ORIGIN', os.path.dirname(path))
                   for d in runpath.split(':') if d.startswith('$ORIGIN')]
    return (interp.group(1) if interp else None), needed, origin


LIBRARY_DIRS = ('/lib/aarch64-linux-gnu', '/usr/lib/aarch64-linux-gnu',
                '/lib', '/usr/lib')


def needed_libraries(sysroot, elf_paths, readelf=READELF):
    """Every shared object the ELF files `elf_paths` (host paths) load,
    transitively, and their interpreter: {guest path: host path}. A
    library beside a build-tree program ($ORIGIN in its runpath) goes to
    /usr/lib/aarch64-linux-gnu; a library found there nor in LIBRARY_DIRS
    is an error naming it and the file that needs it."""
    found = {}
    queue = list(elf_paths)
    seen = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        interp, needed, origin = _elf_info(path, readelf)
        if interp is not None and interp not in found:
            host = _in_sysroot(sysroot, interp)
            if not os.path.isfile(host):
                raise RuntimeError(f'{path}: interpreter {interp} is not in '
                                   f'{sysroot}')
            found[interp] = host
        for name in needed:
            beside = [os.path.join(d, name) for d in origin
                      if os.path.isfile(os.path.join(d, name))]
            if beside:
                # The build tree's library: where the guest's loader looks.
                guest = f'{LIBRARY_DIRS[1]}/{name}'
                if guest not in found:
                    found[guest] = os.path.realpath(beside[0])
                    queue.append(found[guest])
                continue
            for directory in LIBRARY_DIRS:
                guest = f'{directory}/{name}'
                host = _in_sysroot(sysroot, guest)
                if os.path.isfile(host):
                    break
            else:
                raise RuntimeError(f'{path} needs {name}, which is not in '
                                   f'{sysroot} ({", ".join(LIBRARY_DIRS)})')
            if guest not in found:
                found[guest] = host
                queue.append(host)
    return found


def busybox_initramfs(sysroot, programs=None, files=None, init=INIT):
    """The root file system archive (see the module docstring).
    `programs`: {guest path: host path} of ELF programs, whose shared
    libraries come from `sysroot`; `files`: {guest path: bytes, or a host
    path to copy} (mode 0755 when the host file is executable)."""
    programs = dict(programs or {})
    files = dict(files or {})
    archive = Cpio()
    for directory in ('bin', 'sbin', 'usr/bin', 'usr/sbin', 'etc', 'proc',
                      'sys', 'dev', 'run', 'tmp', 'root', 'var',
                      'lib/aarch64-linux-gnu'):
        archive.directory(directory)
    archive.symlink('lib64', 'lib')
    busybox = os.path.join(sysroot, 'bin/busybox')
    with open(busybox, 'rb') as f:
        archive.file('bin/busybox', f.read(), 0o755)
    archive.file('init', init.encode(), 0o755)
    archive.file('etc/passwd', PASSWD.encode())
    archive.file('etc/group', GROUP.encode())
    archive.file('etc/nsswitch.conf', NSSWITCH.encode())

    libraries = needed_libraries(sysroot, list(programs.values()))
    nss = '/lib/aarch64-linux-gnu/libnss_files.so.2'
    nss_host = _in_sysroot(sysroot, nss)
    if os.path.isfile(nss_host):
        libraries.setdefault(nss, nss_host)
        libraries.update(needed_libraries(sysroot, [nss_host]))
    entries = {}
    for guest, host in libraries.items():
        entries[guest] = (host, 0o755)
    for guest, host in programs.items():
        entries[guest] = (host, 0o755)
    for guest, content in files.items():
        if isinstance(content, (bytes, bytearray)):
            archive.file(guest, bytes(content), 0o644)
            continue
        mode = 0o755 if os.access(content, os.X_OK) else 0o644
        entries[guest] = (content, mode)
    for guest, (host, mode) in sorted(entries.items()):
        with open(host, 'rb') as f:
            archive.file(guest, f.read(), mode)
    return archive.bytes()


def write_initrd(path, tables, sysroot, programs=None, files=None,
                 init=INIT):
    """Writes the initrd to `path`: the ACPI table-upgrade archive of
    `tables` ({name: AML bytes}), then the root file system."""
    data = acpi_upgrade_cpio(tables) + busybox_initramfs(
        sysroot, programs, files, init)
    with open(path + '.new', 'wb') as f:
        f.write(data)
    os.replace(path + '.new', path)
    return path
