# SPDX-License-Identifier: Apache-2.0
"""The headroom query (GetCpuHeadroom, GetTaskHeadroom, cppcgovctl
headroom) on the simulated rd-n2: a CPU kept busy through <root>/proc/stat
loses its headroom while the idle ones keep theirs, for a CPU set and for
tasks pinned (taskset) to a busy and to an idle CPU; a window longer than
the daemon has run says how long it covers; a connection asking again
within HeadroomMinIntervalMs, and a user asking from many fresh
connections, are refused with LimitExceeded saying when to retry; a bad
window, calculation, CPU or task are refused with named errors; and user
nobody (setpriv) may ask, about root's task too.

The load is the fake proc/stat's (rig.ProcStat): the simulator reads the
busy time of host CPU n for its CPU n, so real spinning tasks would share
the build machine's CPUs with everything else on it. The pinned tasks only
give the affinity GetTaskHeadroom reads.
"""

import json
import os
import re
import subprocess
import sys
import time

from daemon_case import DaemonTest
from rig import NOBODY, CallError, as_user

INVALID = 'org.cppcgov.Error.InvalidArgument'
LIMIT = 'org.cppcgov.Error.LimitExceeded'
NO_TASK = 'org.cppcgov.Error.NoSuchTask'

# How long the busy CPU is given to load up (the utilization's average has
# a 32 ms half-life) before the window asked about starts.
LOAD_UP_S = 0.5
# Between two queries of one user from fresh connections (the user's rate
# is 10 a second).
USER_GAP_S = 0.15


def cpu_headroom(rig, cpus, window_ms, calculation):
    """GetCpuHeadroom on a fresh connection (busctl): (set, {cpu: value},
    covered_ms)."""
    reply = rig.call('GetCpuHeadroom', 'auus', len(cpus), *cpus, window_ms,
                     calculation)
    time.sleep(USER_GAP_S)
    return reply[0], {c: h for c, h in reply[1]}, reply[2]


def task_headroom(rig, pid, window_ms, calculation):
    reply = rig.call('GetTaskHeadroom', 'uus', pid, window_ms, calculation)
    time.sleep(USER_GAP_S)
    return reply[0], {c: h for c, h in reply[1]}, reply[2]


class HeadroomTest(DaemonTest):

    def busy_rig(self):
        """A 4-CPU daemon whose CPU 1 is busy, once it has loaded up and the
        window has filled."""
        rig = self.make_rig(cpus=4, proc_stat_cpus=4)
        rig.start_daemon()
        rig.proc_stat.set_busy({1})
        time.sleep(LOAD_UP_S + 0.5)
        return rig

    def test_busy_cpu_loses_headroom_idle_ones_keep_it(self):
        rig = self.busy_rig()
        avg, per_cpu, covered = cpu_headroom(rig, [0, 1, 2, 3], 500,
                                             'average')
        print(f'\n  average over 500 ms: set {avg:.1f} %, per CPU ' +
              ', '.join(f'{c}: {h:.1f} %' for c, h in per_cpu.items()),
              file=sys.stderr)
        self.assertEqual(sorted(per_cpu), [0, 1, 2, 3])
        self.assertEqual(covered, 500)
        # rd-n2 busy at nominal performance: 2600 of 3300 used, about 21 %
        # spare; idle: all of it.
        self.assertLess(per_cpu[1], 35, per_cpu)
        for cpu in (0, 2, 3):
            self.assertGreater(per_cpu[cpu], 95, per_cpu)
        # The set: three idle CPUs and a busy one of equal capacity.
        self.assertAlmostEqual(avg, (per_cpu[0] + per_cpu[1] + per_cpu[2] +
                                     per_cpu[3]) / 4, delta=0.5)
        low, low_cpu, _ = cpu_headroom(rig, [1], 500, 'min')
        self.assertLessEqual(low, per_cpu[1] + 0.01)
        self.assertAlmostEqual(low, low_cpu[1], delta=1e-9)
        # Idle again: the headroom comes back.
        rig.proc_stat.set_busy(set())
        time.sleep(LOAD_UP_S + 0.3)
        back, _, _ = cpu_headroom(rig, [1], 200, 'min')
        self.assertGreater(back, 95)

    def test_task_headroom_follows_its_affinity(self):
        rig = self.busy_rig()
        on_busy = rig.spawn(['taskset', '--cpu-list', '1', 'sleep', '60'])
        on_idle = rig.spawn(['taskset', '--cpu-list', '0', 'sleep', '60'])
        time.sleep(0.1)
        busy, busy_cpus, _ = task_headroom(rig, on_busy.pid, 500, 'average')
        idle, idle_cpus, _ = task_headroom(rig, on_idle.pid, 500, 'average')
        self.assertEqual(list(busy_cpus), [1])
        self.assertEqual(list(idle_cpus), [0])
        self.assertLess(busy, 35)
        self.assertGreater(idle, 95)
        self.assertCallError(NO_TASK, rig.dbus_send, 'GetTaskHeadroom',
                             'uint32:4194303', 'uint32:500', 'string:min')

    def test_window_longer_than_recorded_says_what_it_covers(self):
        rig = self.make_rig(cpus=4)
        rig.start_daemon()
        time.sleep(0.3)
        _, _, covered = cpu_headroom(rig, [0], 10000, 'average')
        self.assertGreater(covered, 0)
        self.assertLess(covered, 10000)

    def test_min_interval_per_connection_and_rate_per_user(self):
        rig = self.make_rig(cpus=4)
        rig.start_daemon()
        self.assertEqual(rig.prop('HeadroomMinIntervalMs'), 1000)
        time.sleep(0.2)
        session = rig.session()
        session.ask('headroom 100 min 0 1')
        message = self.assertCallError(LIMIT, session.ask,
                                       'headroom 100 min 0 1')
        m = re.search(r'retry in (\d+) ms', message)
        self.assertIsNotNone(m, message)
        self.assertLessEqual(int(m.group(1)), 1000)
        time.sleep(int(m.group(1)) / 1000 + 0.05)
        session.ask('headroom 100 min 0 1')
        # Fresh connections of one user: at most the user's 10 a second.
        time.sleep(1.1)
        session.ask('connect 25')
        tally = session.ask('each-headroom 100 average 0')
        self.assertMostRefused(tally, 11, 'headroom from 25 connections')

    def test_bad_arguments_are_named(self):
        rig = self.make_rig(cpus=4)
        rig.start_daemon()
        time.sleep(0.2)
        for window in ('49', '10001', '0'):
            message = self.assertCallError(
                INVALID, rig.dbus_send, 'GetCpuHeadroom', 'array:uint32:0',
                f'uint32:{window}', 'string:min')
            self.assertIn('50..10000', message)
        message = self.assertCallError(
            INVALID, rig.dbus_send, 'GetCpuHeadroom', 'array:uint32:0',
            'uint32:100', 'string:max')
        self.assertIn("'max'", message)
        message = self.assertCallError(
            INVALID, rig.dbus_send, 'GetCpuHeadroom', 'array:uint32:0,9',
            'uint32:100', 'string:min')
        self.assertIn('cpu 9', message)
        self.assertCallError(INVALID, rig.dbus_send, 'GetCpuHeadroom',
                             'array:uint32:', 'uint32:100', 'string:min')
        self.assertCallError(INVALID, rig.dbus_send, 'GetTaskHeadroom',
                             'uint32:0', 'uint32:20', 'string:average')
        # None of those took the connection's or the user's turn.
        cpu_headroom(rig, [0], 100, 'min')
        self.assertDaemonServes(rig)

    def test_unprivileged_caller_may_ask(self):
        if os.geteuid() != 0:
            self.skipTest('needs root (runs a client as user nobody)')
        rig = self.busy_rig()
        root_task = rig.spawn(['taskset', '--cpu-list', '1', 'sleep', '60'])
        ctl, env = rig.copy_ctl()
        r = subprocess.run(as_user(NOBODY) + [
            ctl, '--bus-address', rig.address, 'headroom', '--json',
            '--window', '500', '--min', '0-3'],
            capture_output=True, text=True, env=env, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)
        self.assertEqual(answer['calculation'], 'min')
        self.assertEqual(answer['window_ms'], 500)
        by_cpu = {c['cpu']: c['headroom'] for c in answer['cpus']}
        self.assertEqual(sorted(by_cpu), [0, 1, 2, 3])
        self.assertLess(by_cpu[1], 35)
        self.assertGreater(by_cpu[0], 95)
        time.sleep(USER_GAP_S)
        r = subprocess.run(as_user(NOBODY) + [
            ctl, '--bus-address', rig.address, 'headroom', '--pid',
            str(root_task.pid)],
            capture_output=True, text=True, env=env, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r'^headroom \d+\.\d% \(average over 1000 '
                         r'ms.*\) of CPUs 1, where task \d+ may run\n')
        self.assertRegex(r.stdout, r'\n1 +\d+\.\d%\n')
