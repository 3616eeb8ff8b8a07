# SPDX-License-Identifier: Apache-2.0
"""What each CPU is (GetCpuInfo) and the announcement of new handles
(HandleStarted): the levels, frequencies, domains and policies the
daemon reports against the simulated layout's _CPC and the kernel
backend's fake acpi_cppc files, an override's policy on the CPUs it
names (and again after a reload), and HandleStarted carrying the new
handle's ListHandles entry, sent after the reply of the call that added
it (dbus-monitor's order of the messages on the bus).
"""

import re
import shutil
import subprocess
import time

from daemon_case import DaemonTest
from kernel_rig import (K_HIGHEST, K_LOWEST, K_LOWEST_MHZ, K_LOWEST_NONLINEAR,
                        K_NOMINAL, K_NOMINAL_MHZ, KernelRig)
from rig import SETTLE_TIMEOUT, wait_until

# lib/sim/layouts.cpp's rd-n2: highest 3300, nominal 2600, lowest
# nonlinear 1000, lowest 800; 1000 MHz at lowest, 3000 MHz at nominal;
# every CPU its own SW_ANY _PSD domain numbered as the CPU.
RD_N2_LEVELS = (800, 1000, 2600, 3300)
RD_N2_KHZ = (1000000, 3000000)


def cpu_info(rig):
    return [{'cpu': c[0], 'domain': c[1], 'psd': c[2], 'policy': c[3],
             'levels': tuple(c[4:8]), 'khz': tuple(c[8:10])}
            for c in rig.call('GetCpuInfo')[0]]


class CpuInfoTest(DaemonTest):

    def test_simulator_levels_frequencies_and_override_policies(self):
        rig = self.make_rig(config='overrides:\n'
                            '  - cpus: "1-2"\n'
                            '    policy: powersave\n')
        rig.start_daemon()
        info = cpu_info(rig)
        self.assertEqual([c['cpu'] for c in info], list(range(rig.cpus)))
        for c in info:
            self.assertEqual(c['domain'], c['cpu'], c)
            self.assertEqual(c['psd'], c['cpu'], c)
            self.assertEqual(c['levels'], RD_N2_LEVELS, c)
            self.assertEqual(c['khz'], RD_N2_KHZ, c)
            self.assertEqual(c['policy'],
                             'powersave' if c['cpu'] in (1, 2)
                             else 'schedutil', c)
        # The policy GetCpuInfo names is the one deciding: powersave CPUs
        # sit at lowest nonlinear performance for the reason "fixed".
        ok, _ = wait_until(lambda: all(
            s['requested'] == RD_N2_LEVELS[1] and s['reason'] == 'fixed'
            for s in rig.cpu_states() if s['cpu'] in (1, 2)),
            SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.cpu_states())

        # A reload moves the override: GetCpuInfo follows.
        rig.write_config('overrides:\n'
                         '  - cpus: "0"\n'
                         '    policy: performance\n')
        rig.call('Reload')
        self.assertEqual([c['policy'] for c in cpu_info(rig)],
                         ['performance'] + ['schedutil'] * (rig.cpus - 1))

    def test_kernel_backend_frequencies_come_from_acpi_cppc(self):
        rig = KernelRig(self)
        rig.start_daemon()
        info = cpu_info(rig)
        self.assertEqual(len(info), rig.cpus)
        for c in info:
            self.assertEqual(c['levels'], (K_LOWEST, K_LOWEST_NONLINEAR,
                                           K_NOMINAL, K_HIGHEST), c)
            self.assertEqual(c['khz'], (K_LOWEST_MHZ * 1000,
                                        K_NOMINAL_MHZ * 1000), c)
            self.assertEqual(c['policy'], 'schedutil', c)
            self.assertEqual(c['psd'], -1, c)
        # CPUs of one cpufreq policy decide together: one domain index.
        for n, cpus in rig.policies.items():
            self.assertEqual(len({info[cpu]['domain'] for cpu in cpus}), 1,
                             f'policy{n}: {info}')

    def test_handle_started_follows_the_reply(self):
        if shutil.which('dbus-monitor') is None:
            self.skipTest('dbus-monitor not found')
        rig = self.make_rig()
        rig.start_daemon()
        monitor = rig.spawn(['dbus-monitor', '--address', rig.address,
                             '--profile'],
                            stdout=subprocess.PIPE, text=True)
        # The monitor is listening once it reports its own NameAcquired.
        lines = []
        reader = _Lines(monitor.stdout, lines)
        listening, _ = wait_until(lambda: any('NameAcquired' in line
                                              for line in lines), 10)
        self.assertTrue(listening, lines)
        client = rig.session()
        owner = client.name()
        child = rig.busy_child()
        clamp = client.clamp(child.pid, 300, 700)
        latency = client.latency_cpus(50, [0, 1])
        listed = {h['handle']: h for h in rig.handles()}

        def started():
            return [line for line in lines if 'HandleStarted' in line]

        both, _ = wait_until(lambda: len(started()) >= 2, 10)
        self.assertTrue(both, lines)
        # --profile lines: type, time, serial, sender, destination, then
        # path, interface and member (a call, a signal) or the serial
        # replied to (a reply). Each call's reply comes before a signal.
        calls = [line.split() for line in lines
                 if re.search(r'\bSetClamp$|\bSetLatencyCpus$', line)
                 and line.startswith('mc')]
        self.assertEqual(len(calls), 2, lines)
        for call in calls:
            serial, sender = call[2], call[3]
            # mr, time, serial, sender, destination, reply serial.
            reply = next(i for i, line in enumerate(lines)
                         if line.startswith('mr')
                         and line.split()[4:6] == [sender, serial])
            signal = next(i for i, line in enumerate(lines)
                          if 'HandleStarted' in line and i > reply)
            self.assertLess(reply, signal, lines)

        # The fields, from a client that reads the signal's arguments.
        seen = client.started()
        self.assertEqual(sorted(seen), sorted([clamp, latency]))
        self.assertEqual(seen[clamp], (
            'clamp', owner, child.pid, 300, 700, 0))
        self.assertEqual(seen[latency], ('latency', owner, 0, 0, 0, 50))
        for handle, fields in seen.items():
            h = listed[handle]
            self.assertEqual(fields, (h['kind'], h['owner'], h['pid'],
                                      h['min'], h['max'], h['latency']))


class _Lines:
    """Collects a stream's lines into `lines` on a thread."""

    def __init__(self, stream, lines):
        import threading
        self.lines = lines
        threading.Thread(target=self._pump, args=(stream,),
                         daemon=True).start()

    def _pump(self, stream):
        for line in stream:
            self.lines.append(line.rstrip('\n'))
