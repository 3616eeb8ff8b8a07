# SPDX-License-Identifier: Apache-2.0
"""The configuration: the shipped config/policy.yaml with drop-ins
(ShippedConfigTest), SIGHUP and `cppcgovctl reload` with PolicyChanged,
and a FIFO among the drop-ins refused without blocking the daemon, on
reload and at start-up (ReloadTest).
"""

import grp
import os
import re
import shutil
import signal
import subprocess
import time

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, RD_N2_NOMINAL, SETTLE_TIMEOUT, SOURCE_DIR,
                 START_TIMEOUT, wait_until)


class ShippedConfigTest(DaemonTest):

    def test_shipped_policy_with_drop_ins(self):
        """The shipped config/policy.yaml as it is, with drop-ins: the
        first asks for the simulator by name (with rd-n2's own 16 CPUs; the
        shipped `auto` finds no acpi_cppc under the fake root and would
        refuse), drop-ins apply in name order and dot files are skipped."""
        rig = self.make_rig(cpus=16)
        shutil.copy(os.path.join(SOURCE_DIR, 'config', 'policy.yaml'),
                    rig.config)
        drop_ins = [os.path.join(rig.config_dir, name)
                    for name in ('05-test.yaml', '10-site.yaml',
                                 '20-rack.yaml')]
        # Reload needs root or the group: the caller's primary group.
        group = grp.getgrgid(os.getgid()).gr_name
        rig.write_text(drop_ins[0], f'permissions:\n  group: {group}\n'
                       'backend:\n  type: simulator\n')
        rig.write_text(drop_ins[1], 'policy: powersave\n'
                       'sampling:\n  period_us: 2000\n')
        rig.write_text(drop_ins[2], 'policy: performance\n')
        rig.write_text(os.path.join(rig.config_dir, '.30-hidden.yaml'),
                       'policy: schedutil\n')
        rig.start_daemon()
        hidden = os.path.join(rig.config_dir, '.30-hidden.yaml')
        self.assertIn(f"'{hidden}': not read", rig.read_log())
        self.assertEqual(rig.prop('Backend'), 'simulator:rd-n2')
        self.assertEqual(rig.prop('CpuCount'), 16)
        self.assertEqual(rig.prop('Policy'), 'performance')
        self.assertEqual(rig.prop('SamplingPeriodUs'), 2000)
        reply = rig.dbus_send('Reload')
        files = re.findall(r'string "([^"]*)"', reply)
        self.assertEqual(files, [rig.config] + drop_ins)


class ReloadTest(DaemonTest):

    def test_reload(self):
        rig = self.make_rig()
        rig.start_daemon()
        watcher = rig.session()
        watcher.name()  # subscribed before anything is reloaded

        # A typo in a key: refused, with the place named.
        rig.write_config('clients:\n  max_calls_per_sekond: 100\n')
        with open(rig.config) as f:
            line = 1 + [n for n, text in enumerate(f)
                        if 'sekond' in text][0]
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertIn(f"'{rig.config}':{line}:3", message)
        self.assertIn('max_calls_per_sekond', message)
        self.assertEqual(rig.prop('Policy'), 'schedutil')
        self.assertDaemonServes(rig)
        # A YAML syntax error too.
        rig.write_config('policy: [performance\n')
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertRegex(message, re.escape(f"'{rig.config}'") + r':\d+:\d+')
        self.assertEqual(rig.prop('Policy'), 'schedutil')

        rig.write_config('policy: performance\n')
        reply = rig.dbus_send('Reload')
        self.assertIn(f'"{rig.config}"', reply)
        self.assertEqual(rig.prop('Policy'), 'performance')
        policy, files = watcher.wait_policy(10)
        self.assertEqual(policy, 'performance')
        self.assertIn(rig.config, files)
        # performance asks for nominal on every CPU.
        for cpu in range(rig.cpus):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_NOMINAL, SETTLE_TIMEOUT)[0], f'CPU {cpu}')

        # SIGHUP reloads as well, and keeps the policy on a bad file.
        rig.write_config('policy: powersave\n')
        rig.daemon.send_signal(signal.SIGHUP)
        self.assertEqual(watcher.wait_policy(10)[0], 'powersave')
        self.assertEqual(rig.prop('Policy'), 'powersave')
        rig.write_config('policy: fastest\n')
        rig.daemon.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(
            lambda: 'keeping the running one' in rig.read_log(), 10)[0])
        self.assertEqual(rig.prop('Policy'), 'powersave')
        self.assertDaemonServes(rig)

    def test_reload_command(self):
        """cppcgovctl reload lists the files read, and reports a bad file
        with the daemon's message."""
        rig = self.make_rig()
        rig.start_daemon()
        rig.write_config('policy: performance\n')
        r = subprocess.run([CPPCGOVCTL, 'reload',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(rig.config, r.stdout)
        self.assertEqual(rig.prop('Policy'), 'performance')
        rig.write_config('policy: [\n')
        r = subprocess.run([CPPCGOVCTL, 'reload',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('org.cppcgov.Error.InvalidConfig', r.stderr)
        self.assertIn(f"'{rig.config}'", r.stderr)
        self.assertEqual(rig.prop('Policy'), 'performance')

    def test_fifo_drop_in_is_refused_without_blocking(self):
        """A FIFO named like a drop-in, which nothing ever writes to: the
        reload refuses it by its kind at once, keeps the running policy,
        and the daemon goes on answering."""
        rig = self.make_rig(config='policy: powersave\n')
        rig.start_daemon()
        self.assertEqual(rig.prop('Policy'), 'powersave')
        rig.write_config('policy: performance\n')
        fifo = os.path.join(rig.config_dir, '60-x.yaml')
        os.mkfifo(fifo)
        refusal = f"'{fifo}': a FIFO, not a regular file"

        rig.daemon.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: refusal in rig.read_log(),
                                   SETTLE_TIMEOUT)[0],
                        'no refusal of the FIFO in the log')
        self.assertIn('keeping the running one', rig.read_log())
        started = time.monotonic()
        self.assertEqual(rig.prop('Policy'), 'powersave')
        self.assertLess(time.monotonic() - started, SETTLE_TIMEOUT)
        self.assertDaemonServes(rig)
        # The Reload method says the same, as an error.
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertIn(refusal, message)
        self.assertEqual(rig.prop('Policy'), 'powersave')
        # Once it is gone, the files load.
        os.remove(fifo)
        rig.dbus_send('Reload')
        self.assertEqual(rig.prop('Policy'), 'performance')

    def test_fifo_at_start_up_is_refused(self):
        """A FIFO as the main file or as a drop-in: cppcgovd exits at once
        with the refusal instead of waiting for a writer."""
        for what in ('drop-in', 'main file'):
            with self.subTest(what):
                rig = self.make_rig()
                if what == 'drop-in':
                    fifo = os.path.join(rig.config_dir, '60-x.yaml')
                else:
                    fifo = rig.config
                    os.remove(fifo)
                os.mkfifo(fifo)
                try:
                    r = subprocess.run(rig.daemon_command(),
                                       capture_output=True, text=True,
                                       timeout=START_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.fail(f'cppcgovd still runs after {START_TIMEOUT} s '
                              f'with a FIFO as {what}')
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(
                    f"cannot start: '{fifo}': a FIFO, not a regular file",
                    r.stderr)
                rig.close()
