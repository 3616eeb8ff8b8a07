# SPDX-License-Identifier: Apache-2.0
"""Clamp handles and their lifetimes: a clamp raises a busy CPU and its
release lowers it, a killed client's and an exited task's clamps end
within HANDLE_GONE_LIMIT, and a clamp never passes to a new process that
got a clamped one's PID (PidReuseTest, root only: the daemon in a PID
namespace of its own).
"""

import os
import re
import signal
import subprocess
import sys
import time
import unittest

from daemon_case import DaemonTest
from rig import (CLAMP_RAISE_LIMIT, CPPCGOVCTL, RD_N2_FLOOR, RD_N2_NOMINAL,
                 SETTLE_TIMEOUT, LineReader, host_cpu)


class ClampTest(DaemonTest):

    def test_clamp_raises_and_release_lowers(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        owner = client.name()

        handle = client.clamp(child.pid, 1024, 1024)
        raised, states = self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                             CLAMP_RAISE_LIMIT)
        self.assertIsNotNone(raised, f'CPU {cpu} did not reach nominal '
                             f'within {CLAMP_RAISE_LIMIT} s: {states[cpu]}')
        print(f'\n  clamp -> CPU {cpu} at nominal in GetCpuStates: '
              f'{raised * 1000:.0f} ms', file=sys.stderr)
        s = states[cpu]
        self.assertEqual(s['clamp_min'], 1024, s)
        # 1024 x headroom is above nominal: the ceiling caps the clamp.
        self.assertIn(s['reason'], ('clamp-min', 'ceiling'), s)
        self.assertIn({'handle': handle, 'owner': owner, 'pid': child.pid,
                       'min': 1024, 'max': 1024}, s['handles'])
        # The other CPUs stay idle at the floor.
        for other in states:
            if other['cpu'] != cpu:
                self.assertEqual(other['requested'], RD_N2_FLOOR, other)
                self.assertEqual(other['handles'], [], other)
        self.assertEqual(rig.handles(), [{
            'handle': handle, 'kind': 'clamp', 'owner': owner,
            'pid': child.pid, 'min': 1024, 'max': 1024, 'latency': 0}])
        self.assertEqual(rig.prop('ClampCount'), 1)

        client.release(handle)
        self.assertEqual(client.wait_ended(handle, 5)[1:3],
                         (owner, 'released'))
        lowered, states = self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                              SETTLE_TIMEOUT)
        self.assertIsNotNone(lowered, f'CPU {cpu} stayed raised after the '
                             f'release: {states[cpu]}')
        self.assertEqual(states[cpu]['handles'], [])
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)
        # The clamp's first write was timed.
        self.assertGreater(rig.stats()['hint_to_write_p50_ns'], 0)

    def test_killed_client_loses_its_clamp(self):
        rig = self.make_rig()
        rig.start_daemon()
        child = rig.busy_child()
        holder = rig.spawn([CPPCGOVCTL, 'hint', '--min', '1024', '--max',
                            '1024', '--pid', str(child.pid),
                            f'--bus-address={rig.address}'],
                           stdout=subprocess.PIPE, text=True)
        line = LineReader(holder.stdout).readline(20)
        m = re.fullmatch(r'handle (\d+)', line or '')
        self.assertIsNotNone(m, f'cppcgovctl hint printed {line!r}')
        handle = int(m.group(1))
        listed = [h for h in rig.handles() if h['handle'] == handle]
        self.assertEqual(len(listed), 1)
        owner = listed[0]['owner']
        self.assertEqual((listed[0]['kind'], listed[0]['pid']),
                         ('clamp', child.pid))

        watcher = rig.session()
        watcher.ask(f'kill {holder.pid} {int(signal.SIGKILL)}')
        ended = watcher.wait_ended(handle, 10)
        self.assertEqual(ended[1:3], (owner, 'client-left'))
        self.assertEndedSoon('SIGKILLed client', ended)
        self.assertNotIn(handle, rig.handle_ids())
        self.assertEqual(rig.prop('ClampCount'), 0)

    def test_exited_task_loses_its_clamp(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        owner = client.name()
        handle = client.clamp(child.pid, 1024, 1024)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                                 SETTLE_TIMEOUT)[0])

        client.ask(f'kill {child.pid} {int(signal.SIGKILL)}')
        ended = client.wait_ended(handle, 10)
        child.wait()
        self.assertEqual(ended[1:3], (owner, 'task-exited'))
        self.assertEndedSoon('SIGKILLed task', ended)
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                                 SETTLE_TIMEOUT)[0])

        # A new busy process on the same CPU is not clamped: nothing is
        # listed, and its CPU stays at the floor for a while.
        newcomer = rig.busy_child()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            s = rig.cpu_states()[cpu]
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['handles'], [], s)
        self.assertEqual(rig.handles(), [])
        self.assertIsNone(newcomer.poll())
        # Clamping a task that has exited is refused.
        self.assertCallError('org.cppcgov.Error.NoSuchTask', client.clamp,
                             child.pid, 1024, 1024)


@unittest.skipUnless(os.geteuid() == 0, 'needs root for a PID namespace')
class PidReuseTest(DaemonTest):
    """The daemon runs as PID 1 of a PID namespace of its own, where the
    test can choose the next PID (kernel.ns_last_pid is per namespace), so
    that a new process really gets the number of a clamped one that
    exited."""

    def in_namespace(self, rig, script, *args):
        """Runs `sh -c script` inside the daemon's PID and mount
        namespaces; returns the Popen (stdout is a pipe)."""
        with open(f'/proc/{rig.daemon.pid}/task/{rig.daemon.pid}/'
                  'children') as f:
            daemon = int(f.read().split()[0])
        return rig.spawn(['nsenter', f'--target={daemon}', '--pid',
                          '--mount', '--', 'sh', '-c', script, 'sh',
                          *map(str, args)],
                         stdout=subprocess.PIPE, text=True)

    def busy_in_namespace(self, rig, next_pid=None):
        """A busy process pinned to host_cpu() in the namespace (with
        PID next_pid when given); returns its PID there."""
        script = ('[ -z "$2" ] || echo $(($2 - 1)) > '
                  '/proc/sys/kernel/ns_last_pid || exit 1\n'
                  'taskset --cpu-list "$1" sh -c "while :; do :; done" &\n'
                  'echo $!\n'
                  'wait\n')
        proc = self.in_namespace(rig, script, host_cpu(),
                                 next_pid if next_pid else '')
        line = LineReader(proc.stdout).readline(20)
        self.assertTrue(line and line.isdigit(), f'printed {line!r}')
        return int(line)

    def test_reused_pid_is_not_clamped(self):
        rig = self.make_rig()
        rig.start_daemon(['unshare', '--pid', '--mount-proc',
                          '--kill-child'])
        cpu = host_cpu()
        pid = self.busy_in_namespace(rig)
        client = rig.session()
        handle = client.clamp(pid, 1024, 1024)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                                 SETTLE_TIMEOUT)[0])
        killer = self.in_namespace(rig, 'kill -KILL "$1"', pid)
        self.assertEqual(killer.wait(20), 0)
        self.assertEqual(client.wait_ended(handle, 10)[2], 'task-exited')
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                                 SETTLE_TIMEOUT)[0])

        newcomer = self.busy_in_namespace(rig, next_pid=pid)
        self.assertEqual(newcomer, pid, 'the namespace did not reuse the PID')
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            s = rig.cpu_states()[cpu]
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['handles'], [], s)
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)
