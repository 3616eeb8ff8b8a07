# SPDX-License-Identifier: Apache-2.0
"""The CPPC platform (platform/cppc_platform) beside a booted guest:
started once the guest has booted (its vCPU threads exist and the firmware
no longer touches the register window) and before cppc_cpufreq loads (the
counters must be non-zero then: the platform's reset makes them so).

  layout_text(raw_caps, controls) -> the layout file (platform/layout.hpp)
      from what the guest kernel published in cpuN/acpi_cppc and the
      register addresses of this folder's SSDTs (vm_rig.py)
  with Platform(binary, guest, layout, work, name, **options) as platform:
      platform.command('cap 1 3000')        -> 'ok' (CheckFailure else)
      platform.stats()                      -> the platform's JSON, parsed
      with platform.others_at_full(cpu):    every CPU but `cpu` at the
                                            full share meanwhile
  Leaving the block (or stop()) sends SIGTERM: the platform puts every
  vCPU thread back in its cgroup and removes its own; its exit status must
  be 0.

Its own log (every change of a CPU's delivered performance) is
<work>/<name>-platform.log, its standard error <work>/<name>-platform.err.
"""

import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

from guest import RAM_BASE
from vm_rig import (CONTROL_OFFSETS, PCC_OFFSETS, PCC_SIZE, PCC_SUBSPACES,
                    PCC_WIDTHS, CheckFailure, desired_address, mark_address,
                    pcc_place)

# The platform's defaults for the VM suite: a quota period of 10 ms, a
# whole host CPU at highest performance, new targets after 1 ms.
PERIOD_US = 10000
SHARE_AT_HIGHEST = 1.0
# The emulator's own cost per second of guest time, in host CPUs, with
# the other virtual CPUs at the full share (Platform.others_at_full()):
# what made the speed check's ratio exact was -0.03 to 0.03 over six
# boots of this project's 2-core build machine (a floor fitted at a
# pinned low share moved by as much, the host's own speed moving by 2x
# from one second to the next, so it is not calibrated per boot).
SHARE_FLOOR = 0.01
# How long a fast run of the fixed loop takes, in microseconds, in
# slowdown()'s measurements.
LOOP_US = 100_000
LATENCY_US = 1000


def layout_text(raw_caps, controls, pcc=None):
    """The platform's layout of this folder's SSDTs: every CPU's scale as
    the kernel read its _CPC, and its registers. SystemMemory (pcc None):
    Desired and the counters at desired_address(cpu) +0, +8, +0x10, with
    `controls` the optional registers at CONTROL_OFFSETS. PCC (`pcc` one
    of PCC_LAYOUTS): the subspaces of PCC_SUBSPACES and each CPU's
    registers at PCC_OFFSETS in its block. Every CPU has its mark word
    (vm_rig.mark_address)."""
    names = {'min': 'minimum', 'max': 'maximum', 'limited': 'limited',
             'auto_sel': 'auto_select', 'window': 'window', 'epp': 'epp'}
    if pcc:
        lines = [f'# the VM suite: PCC registers, layout {pcc}']
        lines += [f'pcc {i} base={base:#x} size={PCC_SIZE:#x} '
                  f'doorbell=mem:{doorbell:#x}:32 doorbell_write=0x1'
                  for i, (base, doorbell) in sorted(PCC_SUBSPACES.items())]
    else:
        lines = ['# the VM suite: SystemMemory registers, one block per CPU']
    for cpu in sorted(raw_caps):
        caps = {k: int(v) for k, v in raw_caps[cpu].items()
                if v.strip().isdigit()}
        base = desired_address(cpu)  # SystemMemory: Desired, then the rest
        words = [f'cpu {cpu}', f'highest={caps["highest_perf"]}',
                 f'nominal={caps["nominal_perf"]}',
                 f'lowest_nonlinear={caps["lowest_nonlinear_perf"]}',
                 f'lowest={caps["lowest_perf"]}',
                 f'reference={caps.get("reference_perf", 0)}',
                 f'lowest_mhz={caps["lowest_freq"]}',
                 f'nominal_mhz={caps["nominal_freq"]}']
        if pcc:
            subspace, block = pcc_place(cpu, pcc)
            words += [f'{name}=pcc:{subspace}:{block + offset:#x}:'
                      f'{PCC_WIDTHS[name]}'
                      for name, offset in PCC_OFFSETS.items()]
        else:
            words += [f'desired=mem:{base:#x}:32',
                      f'reference_counter=mem:{base + 8:#x}:64',
                      f'delivered_counter=mem:{base + 0x10:#x}:64']
        if controls:
            words += [f'{names[n]}=mem:{base + off:#x}:32'
                      for n, off in CONTROL_OFFSETS.items()]
        words.append(f'mark=mem:{mark_address(cpu):#x}:64')
        lines.append(' '.join(words))
    return '\n'.join(lines) + '\n'


# How far the two fast runs around a slow one may differ for the triple to
# count (slowdown()).
DRIFT = 0.15


def slowdown(loop, rounds, fast, slow, wanted):
    """How many times as long `loop(rounds)` (microseconds) takes after
    slow() as after fast(): the median over `wanted` triples, each slow
    run between two fast ones and taken against their mean. The host's
    own speed under TCG changes by as much as 1.6x from one second to the
    next (another tenant, a core shared): the mean cancels a steady drift,
    and a triple whose fast runs differ by more than DRIFT saw the host
    change speed under it and is left out (twice `wanted` slow runs at
    most). Returns (ratio, kept triples, left-out triples)."""
    fast()
    fasts = [loop(rounds)]
    kept, drifted = [], []
    while len(kept) < wanted and len(kept) + len(drifted) < 2 * wanted:
        slow()
        took = loop(rounds)
        fast()
        fasts.append(loop(rounds))
        triple = (fasts[-2], took, fasts[-1])
        if max(fasts[-2:]) > (1 + DRIFT) * min(fasts[-2:]):
            drifted.append(triple)
        else:
            kept.append(triple)
    if len(kept) < wanted // 2 + 1:
        raise CheckFailure(f'the host\'s speed moved by more than {DRIFT:.0%}'
                           f' between the fast runs around {len(drifted)} '
                           f'of {len(drifted) + len(kept)} slow ones: '
                           f'{drifted}')
    ratio = statistics.median(2 * took / (before + after)
                              for before, took, after in kept)
    return ratio, kept, drifted


class Platform:
    def __init__(self, binary, guest, layout, work, name,
                 period_us=PERIOD_US, share_at_highest=SHARE_AT_HIGHEST,
                 share_floor=SHARE_FLOOR,
                 latency_us=LATENCY_US, cgroup='auto'):
        self.name = name
        self.share_at_highest = share_at_highest
        self._dir = tempfile.mkdtemp(prefix='cppc-platform-')
        self.control_path = os.path.join(self._dir, 'control')
        layout_path = os.path.join(work, f'{name}-platform.layout')
        with open(layout_path, 'w', encoding='utf-8') as f:
            f.write(layout)
        self.err_path = os.path.join(work, f'{name}-platform.err')
        self.cgroup_name = f'cppc-platform-{os.getpid()}'
        command = [binary, '--memory', guest.memory_path,
                   '--ram-base', f'{RAM_BASE:#x}', '--layout', layout_path,
                   '--control', self.control_path,
                   '--qemu-pid', str(guest.qemu_pid),
                   '--vcpu-tids', ','.join(str(t)
                                           for t in guest.vcpu_threads()),
                   '--cgroup', cgroup, '--cgroup-name', self.cgroup_name,
                   '--period-us', str(period_us),
                   '--share-at-highest', str(share_at_highest),
                   '--share-floor', str(share_floor),
                   '--latency-us', str(latency_us),
                   '--log', os.path.join(work, f'{name}-platform.log')]
        self._err = open(self.err_path, 'w', encoding='utf-8')
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                         stderr=self._err, text=True)
        line = self._process.stdout.readline()
        if line.strip() != 'ready':
            self._process.wait(10)
            self._err.close()
            with open(self.err_path, encoding='utf-8') as f:
                raise CheckFailure(f'cppc_platform did not start (exit '
                                   f'{self._process.returncode}): '
                                   f'{f.read()}')
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(self.control_path)
        self._sock.settimeout(10)
        self._file = self._sock.makefile('rw', encoding='utf-8')

    def command(self, line):
        self._file.write(line + '\n')
        self._file.flush()
        reply = self._file.readline().strip()
        if reply.startswith('error:') or not reply:
            raise CheckFailure(f'cppc_platform: {line!r}: {reply!r}')
        return reply

    def stats(self):
        return json.loads(self.command('stats'))

    @contextlib.contextmanager
    def others_at_full(self, cpu):
        """Every CPU but `cpu` at the full share until the end of the
        block, whatever it delivers. A virtual CPU held back by its quota
        holds up the others at times (under TCG they share the emulator's
        lock): with an idle CPU 1 at a low level, a loop on CPU 0 at
        lowest ran 11-12 % faster against highest than the levels say,
        within 3 % with CPU 1 at the full share."""
        full = round(self.share_at_highest * 1000)
        others = [c['cpu'] for c in self.stats()['cpus'] if c['cpu'] != cpu]
        try:
            for other in others:
                self.command(f'pin-share {other} {full}')
            yield
        finally:
            for other in others:
                self.command(f'pin-share {other} off')

    def wait_delivered(self, cpu, predicate, timeout=20, what=''):
        """Polls CPU `cpu`'s delivered performance until predicate(value)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.stats()['cpus'][cpu]['delivered']
            if predicate(value):
                return value
            if time.monotonic() > deadline:
                raise CheckFailure(f'CPU {cpu}: the platform delivered '
                                   f'{value} for {timeout} s, waiting for '
                                   f'{what}')
            time.sleep(0.05)

    def alive(self):
        return self._process is not None and self._process.poll() is None

    def stop(self):
        """SIGTERM; the exit status (0: every thread back, cgroups gone)."""
        if self._process is None:
            return 0
        try:
            self._file.close()
            self._sock.close()
        except OSError:
            pass
        self._process.terminate()
        try:
            rc = self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            rc = self._process.wait()
        self._process = None
        self._err.close()
        shutil.rmtree(self._dir, ignore_errors=True)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
