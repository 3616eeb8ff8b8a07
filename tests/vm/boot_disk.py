# SPDX-License-Identifier: Apache-2.0
"""The boot disk of the VM suite's PCC layouts: a FAT volume that the
firmware boots from (QEMU's virt machine without -kernel), holding the
boot application efi/table_boot as \\EFI\\BOOT\\BOOTAA64.EFI, the extra
ACPI tables in \\tables, the kernel as \\vmlinuz, the initrd as
\\initrd.img and the command line in \\cmdline.txt. Made with dosfstools
and mtools (Debian packages of the same names), as a file of this
process's user; nothing is mounted.

  make_boot_disk(path, boot_app, tables, kernel, initrd, cmdline)
      tables: {file name: bytes}; the kernel's command line gets
      `initrd=\\initrd.img` appended
  missing_tools() -> what is missing to make one, or None
"""

import os
import shutil
import subprocess

TOOLS = {'mkfs.vfat': 'dosfstools', 'mcopy': 'mtools', 'mmd': 'mtools'}
SBIN = ('/usr/sbin', '/sbin')


def _find(tool):
    return shutil.which(tool) or shutil.which(
        tool, path=os.pathsep.join(SBIN))


def missing_tools():
    absent = [f'{tool} (Debian package {package})'
              for tool, package in TOOLS.items() if not _find(tool)]
    return ', '.join(absent) or None


def _run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f'{" ".join(command)} exited {done.returncode}: '
                           f'{done.stdout.strip()}')


def make_boot_disk(path, boot_app, tables, kernel, initrd, cmdline):
    """Writes the FAT volume at `path` (replacing a file there)."""
    staged = os.path.dirname(os.path.abspath(path))
    extra = {}
    for name, data in tables.items():
        extra[name] = os.path.join(staged, f'.{os.path.basename(path)}.{name}')
        with open(extra[name], 'wb') as f:
            f.write(data)
    command_line = os.path.join(staged, f'.{os.path.basename(path)}.cmdline')
    with open(command_line, 'w', encoding='ascii') as f:
        f.write(f'{cmdline} initrd=\\initrd.img\n')
    try:
        payload = sum(os.path.getsize(p) for p in
                      (boot_app, kernel, initrd, *extra.values()))
        # Room for the FAT itself and the clusters' slack.
        kib = (payload * 9 // 8 >> 10) + 16384
        if os.path.exists(path):
            os.remove(path)
        _run([_find('mkfs.vfat'), '-C', '-F', '32', '-n', 'CPPCGOV', path,
              str(kib)])
        image = ['-i', path]
        _run([_find('mmd'), *image, '::/EFI', '::/EFI/BOOT', '::/tables'])
        copies = [(boot_app, '::/EFI/BOOT/BOOTAA64.EFI'),
                  (kernel, '::/vmlinuz'), (initrd, '::/initrd.img'),
                  (command_line, '::/cmdline.txt')]
        copies += [(p, f'::/tables/{name}') for name, p in extra.items()]
        for source, target in copies:
            _run([_find('mcopy'), *image, source, target])
    finally:
        for p in (*extra.values(), command_line):
            if os.path.exists(p):
                os.remove(p)
