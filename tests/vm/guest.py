# SPDX-License-Identifier: Apache-2.0
"""An arm64 virtual machine under qemu-system-aarch64 (TCG), driven through
its serial console and QEMU's QMP monitor (standard library only).

  with Guest(kernel, initrd, cpus=2, cmdline_extra='', log_path=None,
             memory_mb=2048, boot_timeout=240, firmware=None,
             qemu_args=(), ready_line=READY_LINE,
             memory_path=None, boot_disk=None) as guest:
      guest.sh('cat /sys/devices/system/cpu/online')   -> '0-1\\n'
      guest.sh('false', check=False)                   -> '' (no raise)
      guest.last_rc                                    -> 1
      guest.read_phys(0x90000000, 4)                   -> int
      guest.boot_seconds                               -> float
      guest.qemu_pid                                   -> int
      guest.vcpu_threads()                             -> [tid of CPU 0, ...]

Guest(...) starts QEMU at once: `-machine virt,gic-version=3 -accel tcg
-cpu cortex-a57 -m <memory_mb> -bios QEMU_EFI.fd -nographic`, the kernel
and initrd given (-kernel, -initrd), no network card, the kernel command line
`console=ttyAMA0 mem=1024M loglevel=1 panic=-1 rdinit=/init` plus
cmdline_extra, -no-reboot (a panic ends QEMU), the serial console on
QEMU's standard input and output, QMP on a unix socket in a private
temporary directory, then qemu_args (more QEMU options, e.g. a disk).
With memory_path, the guest's RAM is that file (`-object
memory-backend-file,...,share=on` as the machine's memory backend), so
that another process may map it; its offset 0 is guest-physical
RAM_BASE. The caller removes the file. Everything the console prints is
appended to log_path (when given) as it arrives, QEMU's own messages too.
With boot_disk (boot_disk.py), the firmware boots that FAT volume (a
read-only virtio disk) instead: its boot application loads the kernel,
the initrd and the command line from it (kernel, initrd and cmdline_extra
are then not used).

The guest must run initrd.SHELL_LOOP on its console (initrd.INIT does,
and initrd.busybox_initramfs makes it /init): the constructor waits, up
to boot_timeout seconds, for ready_line (the loop's READY_LINE unless
told otherwise); a QEMU that exits first, or a timeout, raises GuestError
with the tail of the console.

sh(command, timeout=60, check=True): runs `command` (any sh script,
several lines too) in a fresh `sh` in the guest, stdin /dev/null, and
returns its standard output and error, interleaved, as text. It raises
GuestCommandError (with .command, .rc, .output) when the exit status is
not 0 and check is true, and GuestError on a timeout or when QEMU dies.
The status is in last_rc either way. A command that starts a background
process must redirect that process's output to a file of its own.

read_phys(address, size): `size` (1, 2, 4 or 8) bytes of guest-physical
memory at `address`, little-endian, read by QEMU itself (QMP
human-monitor-command `xp`), never by the guest.

close() (and leaving the with block): asks QMP to quit, waits up to 10 s,
then kills QEMU; it always ends QEMU and never raises. QEMU also gets
SIGKILL if the process that started it dies first (PR_SET_PDEATHSIG).

find_firmware(), find_qemu(): the firmware and emulator, or None.
skip_or_fail(message): exits 77 (skip), or 1 when the environment has
CI=true, after printing `message`: for when the kernel, firmware or QEMU
is missing.
"""

import base64
import ctypes
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from initrd import BEGIN_MARK, END_MARK, READY_LINE

FIRMWARE_PATHS = ('/usr/share/qemu-efi-aarch64/QEMU_EFI.fd',
                  '/usr/share/AAVMF/AAVMF_CODE.fd')
QEMU = 'qemu-system-aarch64'
RAM_BASE = 0x40000000  # the virt machine's RAM
BASE_CMDLINE = 'console=ttyAMA0 mem=1024M loglevel=1 panic=-1 rdinit=/init'
# What the firmware prints when no boot option started a kernel.
FIRMWARE_SHELL = 'UEFI Interactive Shell'
CHUNK = 768  # base64 characters per console line (well below 4095)


class GuestError(Exception):
    """The machine failed: it did not boot, died, or a command timed
    out."""


class GuestCommandError(GuestError):
    """A command ended with a non-zero status."""

    def __init__(self, command, rc, output):
        self.command = command
        self.rc = rc
        self.output = output
        super().__init__(f'guest command exited {rc}: {command!r}\n'
                         f'--- output ---\n{output}')


def _die_with_parent():
    """In the child before exec: SIGKILL when the process that started
    QEMU dies, however it dies (PR_SET_PDEATHSIG)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def find_firmware():
    for path in FIRMWARE_PATHS:
        if os.path.isfile(path):
            return path
    return None


def find_qemu():
    return shutil.which(QEMU)


def skip_or_fail(message):
    """Exits 77 (meson's skip), or 1 when CI=true."""
    if os.environ.get('CI') == 'true':
        print(f'error: {message} (CI=true: failing instead of skipping)',
              file=sys.stderr)
        sys.exit(1)
    print(f'skipped: {message}', file=sys.stderr)
    sys.exit(77)


class _Qmp:
    """A QMP connection: commands in, their replies out, events skipped."""

    def __init__(self, path, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise GuestError(f'no QMP socket at {path}') from None
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.file = self.sock.makefile('rwb')
        self._read()  # the greeting
        self.execute('qmp_capabilities')

    def _read(self):
        line = self.file.readline()
        if not line:
            raise GuestError('QMP connection closed')
        return json.loads(line)

    def execute(self, command, **arguments):
        message = {'execute': command}
        if arguments:
            message['arguments'] = arguments
        self.file.write(json.dumps(message).encode() + b'\n')
        self.file.flush()
        while True:
            reply = self._read()
            if 'return' in reply:
                return reply['return']
            if 'error' in reply:
                raise GuestError(f'QMP {command}: {reply["error"]}')

    def close(self):
        try:
            self.file.close()
            self.sock.close()
        except OSError:
            pass


class Guest:
    def __init__(self, kernel, initrd, cpus, cmdline_extra='', log_path=None,
                 memory_mb=2048, boot_timeout=240, firmware=None,
                 qemu_args=(), ready_line=READY_LINE, memory_path=None,
                 boot_disk=None):
        self.log_path = log_path
        self.memory_path = memory_path
        self.last_rc = None
        self.boot_seconds = None
        self._ids = itertools.count(1)
        self._buffer = ''
        self._cond = threading.Condition()
        self._qmp = None
        self._closed = False
        self._dir = tempfile.mkdtemp(prefix='cppcgov-vm-')
        self._log = open(log_path, 'a', encoding='utf-8',
                         errors='replace') if log_path else None
        firmware = firmware or find_firmware()
        qmp_path = os.path.join(self._dir, 'qmp')
        machine = 'virt,gic-version=3'
        memory = []
        if memory_path:
            machine += ',memory-backend=ram'
            memory = ['-object', f'memory-backend-file,id=ram,size='
                      f'{memory_mb}M,mem-path={memory_path},share=on']
        command = [
            find_qemu() or QEMU, '-machine', machine, *memory,
            '-accel', 'tcg', '-cpu', 'cortex-a57', '-smp', str(cpus),
            '-m', str(memory_mb), '-bios', firmware, '-nographic',
            '-serial', 'stdio', '-monitor', 'none', '-nic', 'none',
            '-no-reboot',
            '-qmp', f'unix:{qmp_path},server=on,wait=off',
            *(['-drive', f'if=virtio,format=raw,readonly=on,file={boot_disk}']
              if boot_disk else
              ['-kernel', kernel, '-initrd', initrd,
               '-append', f'{BASE_CMDLINE} {cmdline_extra}'.strip()]),
            *qemu_args]
        self._note(f'$ {" ".join(command)}\n')
        started = self._started = time.monotonic()
        self._qemu = subprocess.Popen(command, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT,
                                      preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        try:
            try:
                self._qmp = _Qmp(qmp_path, 30)
            except (GuestError, OSError) as e:
                time.sleep(0.2)
                raise GuestError(f'QMP: {e}; console:\n{self._tail()}') \
                    from None
            self._wait_for(lambda: ready_line in self._buffer or
                           FIRMWARE_SHELL in self._buffer, boot_timeout,
                           f'the guest to print {ready_line!r}')
            if ready_line not in self._buffer:
                raise GuestError('nothing booted: the firmware fell back to '
                                 f'its shell; console:\n{self._tail()}')
        except BaseException:
            self.close()
            raise
        self.boot_seconds = time.monotonic() - started
        with self._cond:
            self._buffer = self._buffer.split(ready_line, 1)[1]

    # --- the console -------------------------------------------------------

    def _note(self, text):
        if self._log:
            self._log.write(text)
            self._log.flush()

    def _pump(self):
        while True:
            data = self._qemu.stdout.read1(65536)
            if not data:
                break
            text = data.decode('utf-8', 'replace').replace('\r', '')
            self._note(text)
            with self._cond:
                self._buffer += text
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _tail(self, lines=40):
        return '\n'.join(self._buffer.splitlines()[-lines:])

    def _wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                if self._qemu.poll() is not None and \
                        not self._reader.is_alive():
                    raise GuestError(
                        f'QEMU exited ({self._qemu.returncode}) while '
                        f'waiting for {what}; console:\n{self._tail()}')
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GuestError(f'timed out after {timeout} s waiting '
                                     f'for {what}; console:\n{self._tail()}')
                self._cond.wait(min(left, 0.5))

    def _send(self, line):
        try:
            self._qemu.stdin.write(line.encode() + b'\n')
            self._qemu.stdin.flush()
        except OSError as e:
            raise GuestError(f'cannot write to the console: {e}') from None

    def sh(self, command, timeout=60, check=True):
        ident = f'{os.getpid()}x{next(self._ids)}'
        self._note(f'\n# sh[{ident}] at {time.monotonic() - self._started:.2f}'
                   f' s: {command}\n')
        encoded = base64.b64encode(command.encode()).decode()
        for start in range(0, len(encoded), CHUNK):
            self._send(f'C {ident} {encoded[start:start + CHUNK]}')
        begin = f'{BEGIN_MARK} {ident}\n'
        end = f'{END_MARK} {ident} '
        with self._cond:
            self._buffer = ''
        self._send(f'R {ident}')

        def done():
            at = self._buffer.find(end)
            return at >= 0 and self._buffer.find('\n', at) >= 0

        self._wait_for(done, timeout, f'the command {command!r}')
        with self._cond:
            text = self._buffer
            at = text.find(end)
            line_end = text.find('\n', at)
            rc = int(text[at + len(end):line_end])
            first = text.find(begin)
            output = text[first + len(begin):at] if 0 <= first < at else ''
            self._buffer = text[line_end + 1:]
        self.last_rc = rc
        if rc != 0 and check:
            raise GuestCommandError(command, rc, output)
        return output

    # --- the monitor -------------------------------------------------------

    @property
    def qemu_pid(self):
        return self._qemu.pid

    def vcpu_threads(self):
        """QEMU's thread of each virtual CPU, in CPU order (QMP
        query-cpus-fast)."""
        cpus = self._qmp.execute('query-cpus-fast')
        return [c['thread-id'] for c in sorted(cpus,
                                                key=lambda c: c['cpu-index'])]

    def read_phys(self, address, size=4):
        unit = {1: 'b', 2: 'h', 4: 'w', 8: 'g'}.get(size)
        if unit is None:
            raise ValueError(f'read_phys: size {size} is not 1, 2, 4 or 8')
        reply = self._qmp.execute('human-monitor-command',
                                  **{'command-line':
                                     f'xp /1{unit}x {address:#x}'})
        # "0000000090000000: 0x00000abc"
        try:
            return int(reply.strip().rsplit(':', 1)[1].strip(), 16)
        except (IndexError, ValueError):
            raise GuestError(f'xp at {address:#x}: unexpected reply '
                             f'{reply!r}') from None

    # --- the end -----------------------------------------------------------

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            if self._qmp is not None and self._qemu.poll() is None:
                self._qmp.execute('quit')
        except (GuestError, OSError, ValueError):
            pass
        try:
            self._qemu.wait(10)
        except subprocess.TimeoutExpired:
            self._qemu.kill()
            self._qemu.wait()
        if self._qmp is not None:
            self._qmp.close()
        self._reader.join(5)
        for stream in (self._qemu.stdin, self._qemu.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self._log:
            self._log.close()
            self._log = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
