# SPDX-License-Identifier: Apache-2.0
"""The daemon's interface as a client sees it: its properties and
statistics, `cppcgovctl status`, the named D-Bus errors every bad
argument gets, and the load the simulated machine takes from
<root>/proc/stat.
"""

import json
import subprocess

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, IFACE, NAME, PATH, RD_N2_FLOOR, RD_N2_NOMINAL,
                 SETTLE_TIMEOUT, CallError, wait_until)


class PropertiesTest(DaemonTest):

    def test_properties(self):
        rig = self.make_rig()
        rig.start_daemon()
        self.assertEqual(rig.prop('Backend'), 'simulator:rd-n2')
        self.assertEqual(rig.prop('CpuCount'), rig.cpus)
        self.assertEqual(rig.prop('Policy'), 'schedutil')
        self.assertEqual(rig.prop('SamplingPeriodUs'), 1000)
        self.assertEqual(rig.prop('ClampCount'), 0)
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertNotEqual(rig.prop('Version'), '')
        # Idle (no proc/stat): every CPU at the floor (once the first ticks
        # have run), no latency limit.
        def all_at_floor():
            states = rig.cpu_states()
            return states if all(s['requested'] == RD_N2_FLOOR
                                 for s in states) else None

        states, _ = wait_until(all_at_floor, SETTLE_TIMEOUT)
        self.assertIsNotNone(states, rig.cpu_states())
        self.assertEqual([s['cpu'] for s in states], list(range(rig.cpus)))
        for s in states:
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['latency'], -1, s)
            self.assertEqual(s['handles'], [], s)
        stats = rig.stats()
        for key in ('ticks', 'ticks_early', 'ticks_skipped',
                    'tick_late_p50_ns', 'tick_late_p99_ns',
                    'tick_late_max_ns', 'writes', 'write_errors',
                    'hint_to_write_p50_ns', 'hint_to_write_p99_ns',
                    'writes_landed', 'access_errors', 'accesses_late',
                    'cpus_degraded', 'accesses_at_once_max'):
            self.assertIn(key, stats)
        self.assertGreater(stats['ticks'], 0)
        self.assertEqual(stats['ticks_early'], 0)
        self.assertEqual(stats['write_errors'], 0)
        self.assertEqual(stats['cpus_degraded'], 0)
        self.assertEqual(rig.handles(), [])

    def test_status_command(self):
        """cppcgovctl status --json shows what the properties say."""
        rig = self.make_rig()
        rig.start_daemon()
        r = subprocess.run([CPPCGOVCTL, 'status', '--json',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        status = json.loads(r.stdout)
        self.assertEqual(status.get('format'), 'cppcgov-status')
        text = json.dumps(status)
        self.assertIn('simulator:rd-n2', text)
        self.assertIn('schedutil', text)


class BadArgumentsTest(DaemonTest):

    def test_named_errors(self):
        rig = self.make_rig()
        rig.start_daemon()
        child = rig.busy_child()
        dead = subprocess.Popen(['true'])
        dead.wait()

        def set_clamp(pid, util_min, util_max, thread='false'):
            return rig.dbus_send('SetClamp', f'uint32:{pid}',
                                 f'boolean:{thread}', f'uint16:{util_min}',
                                 f'uint16:{util_max}')

        invalid = 'org.cppcgov.Error.InvalidArgument'
        self.assertCallError(invalid, set_clamp, child.pid, 2000, 2000)
        self.assertCallError(invalid, set_clamp, child.pid, 0, 1025)
        self.assertCallError(invalid, set_clamp, child.pid, 600, 500)
        self.assertCallError('org.cppcgov.Error.NoSuchTask', set_clamp,
                             999999999, 0, 1024)
        self.assertCallError('org.cppcgov.Error.NoSuchTask', set_clamp,
                             dead.pid, 0, 1024)
        self.assertCallError('org.cppcgov.Error.NoSuchHandle',
                             rig.dbus_send, 'Release', 'uint64:987654321')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             'array:uint32:', 'uint32:0')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             f'array:uint32:{rig.cpus}', 'uint32:0')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             'array:uint32:0', 'uint32:4000000000')
        self.assertCallError('org.cppcgov.Error.NoSuchTask', rig.dbus_send,
                             'SetLatency', f'uint32:{dead.pid}', 'uint32:0')
        # Someone else's handle is no handle of the caller's.
        other = rig.session()
        handle = other.clamp(child.pid, 0, 512)
        self.assertCallError('org.cppcgov.Error.NoSuchHandle', rig.dbus_send,
                             'Release', f'uint64:{handle}')
        self.assertIn(handle, rig.handle_ids())

        # Wrong signatures: an error, and the daemon goes on.
        r = rig.busctl('call', NAME, PATH, IFACE, 'SetClamp', 's', 'hello')
        self.assertNotEqual(r.returncode, 0)
        self.assertNotEqual(r.stderr.strip(), '')
        with self.assertRaises(CallError) as caught:
            rig.dbus_send('SetClamp', 'string:hello')
        self.assertTrue(caught.exception.name.startswith(
            'org.freedesktop.DBus.Error.'), caught.exception.name)
        with self.assertRaises(CallError):
            rig.dbus_send('SetLatencyCpus', 'uint32:0', 'array:uint32:0')
        with self.assertRaises(CallError):
            rig.dbus_send('NoSuchMethod')
        self.assertDaemonServes(rig)
        self.assertEqual(rig.handle_ids(), {handle})
        # Nothing was left behind by the refused calls.
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertEqual(rig.latency_files(), rig.originals)


class LoadTest(DaemonTest):

    def test_load_follows_proc_stat(self):
        """Simulated CPU n is as busy as host CPU n mod (host CPUs) in
        <root>/proc/stat: with 2 host CPUs and host CPU 1 busy, simulated
        CPUs 1 and 3 climb to nominal and 0 and 2 stay at the floor."""
        rig = self.make_rig(cpus=4, proc_stat_cpus=2)
        rig.start_daemon()
        rig.proc_stat.set_busy({1})
        for cpu in (1, 3):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_NOMINAL, SETTLE_TIMEOUT)[0], f'CPU {cpu}')
        states = rig.cpu_states()
        for cpu in (0, 2):
            self.assertEqual(states[cpu]['requested'], RD_N2_FLOOR,
                             states[cpu])
        self.assertGreater(states[1]['util'], 512, states[1])
        rig.proc_stat.set_busy(set())
        for cpu in (1, 3):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_FLOOR, SETTLE_TIMEOUT)[0], f'CPU {cpu}')
