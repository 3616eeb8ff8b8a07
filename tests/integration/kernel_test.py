# SPDX-License-Identifier: Apache-2.0
"""The daemon on the kernel backend, over KernelRig's fake cpufreq and
acpi_cppc tree: it governs, and puts the whole tree back as it found it
on SIGTERM, after a crash, and when it refuses to start; with one policy
file refusing the write back (Unwritable), a stop and --restore-only exit
1, keep exactly what is left, and a start refuses over it until the file
is fixed.
"""

import os
import re
import signal
import subprocess

from daemon_case import DaemonTest
from kernel_rig import (K_FLOOR_KHZ, K_KNOBS, K_LOWEST_NONLINEAR, K_NOMINAL,
                        K_NOMINAL_KHZ, KernelRig, Unwritable, kernel_view)
from rig import (CPPCGOVCTL, SETTLE_TIMEOUT, START_TIMEOUT, host_cpu,
                 state_files, wait_until)


class KernelBackendTest(DaemonTest):
    """The daemon on the kernel backend (KernelRig): it switches every
    cpufreq policy to userspace and writes scaling_setspeed, and puts the
    whole tree back as it found it on SIGTERM, after a crash with
    --restore-only or at the next start, and when it refuses to start."""

    def make_kernel_rig(self, knobs=False):
        self.rig = KernelRig(self, knobs=knobs)
        return self.rig

    def assertTreeAsBefore(self, rig, before):
        """The sys tree, as sysfs would show it, is as in `before`."""
        after = kernel_view(rig.snapshot())
        before = kernel_view(before)
        changed = sorted(p for p in set(before) | set(after)
                         if before.get(p) != after.get(p))
        self.assertEqual(changed, [], 'changed under sys: ' + ', '.join(
            f'{p}: {before.get(p)!r} -> {after.get(p)!r}'
            for p in changed[:10]))

    def assertGoverning(self, rig):
        """Every policy is under userspace at the floor's kHz (all CPUs are
        idle), and the daemon has recorded what it changed."""
        for n in rig.policies:
            self.assertEqual(rig.policy_file(n, 'scaling_governor'),
                             b'userspace\n', f'policy{n}')
        idle = {n: rig.expected_khz(n, K_FLOOR_KHZ) for n in rig.policies}
        self.assertEqual(rig.wait_setspeeds(idle),
                         {n: f'{khz}\n'.encode() for n, khz in idle.items()})
        self.assertIn('kernel.state', state_files(rig.state))

    def test_governs_and_sigterm_restores_the_tree(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertEqual(rig.prop('Backend'), 'kernel')
        self.assertEqual(rig.prop('CpuCount'), rig.cpus)
        self.assertGoverning(rig)
        states = rig.cpu_states()
        self.assertEqual([s['requested'] for s in states],
                         [K_LOWEST_NONLINEAR] * rig.cpus, states)

        # A clamp on a busy task raises its CPU's policy to nominal, and
        # only that one (policy0's CPUs share it: an idle CPU 0 does not
        # hold a clamped CPU 1 down).
        cpu = host_cpu()
        raised_policy = rig.policy_of(cpu)
        child = rig.busy_child()
        client = rig.session()
        handle = client.clamp(child.pid, 1024, 1024)
        wanted = {n: rig.expected_khz(n, K_NOMINAL_KHZ if n == raised_policy
                                      else K_FLOOR_KHZ)
                  for n in rig.policies}
        self.assertNotEqual(wanted[raised_policy],
                            rig.expected_khz(raised_policy, K_FLOOR_KHZ))
        self.assertEqual(rig.wait_setspeeds(wanted),
                         {n: f'{khz}\n'.encode() for n, khz in wanted.items()},
                         f'clamp on host CPU {cpu}')
        states = rig.cpu_states()
        for c in rig.policies[raised_policy]:
            self.assertEqual(states[c]['requested'], K_NOMINAL, states[c])
        self.assertIn(handle, [h['handle'] for h in states[cpu]['handles']])
        # A resume-latency request too: the restore covers those files.
        client.latency_cpus(0, [0])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        self.assertNotEqual(kernel_view(rig.snapshot()), kernel_view(before))

        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def wait_not_autonomous(self, rig):
        """Waits until the daemon (whose policies choose Desired
        themselves) has turned autonomous selection off on every policy."""
        def off():
            return all(rig.policy_file(n, 'auto_select') == b'0\n'
                       for n in rig.policies)
        wait_until(off, SETTLE_TIMEOUT)
        self.assertTrue(off(), {n: rig.policy_file(n, 'auto_select')
                                for n in rig.policies})

    def test_knobs_are_written_and_put_back(self):
        rig = self.make_kernel_rig(knobs=True)
        before = rig.snapshot()
        rig.start_daemon()
        self.assertGoverning(rig)
        self.wait_not_autonomous(rig)
        log = rig.read_log()
        self.assertIn('CPPC controls offered: auto_select, auto_act_window, '
                      'energy_performance_preference_val', log)
        self.assertIn('min and max not offered', log)
        with open(os.path.join(rig.state, 'kernel.state')) as f:
            state = f.read()
        for name, value in K_KNOBS:
            self.assertIn(f' {name}={value.strip()}', state)
        # The window and the preference are asked for by no policy: left.
        for n in rig.policies:
            self.assertEqual(rig.policy_file(n, 'auto_act_window'),
                             b'1000\n')
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertTreeAsBefore(rig, before)

        # After a crash, --restore-only puts autonomous selection back.
        rig.start_daemon()
        self.wait_not_autonomous(rig)
        rig.stop_daemon(signal.SIGKILL)
        self.assertIn('kernel.state', state_files(rig.state))
        r = subprocess.run(rig.daemon_command('--restore-only'),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def test_crash_is_undone(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertGoverning(rig)
        client = rig.session()
        client.latency_cpus(0, [1])
        rig.stop_daemon(signal.SIGKILL)
        client.kill()
        # The crash left the tree changed, and the record of it.
        for n in rig.policies:
            self.assertEqual(rig.policy_file(n, 'scaling_governor'),
                             b'userspace\n', f'policy{n}')
        self.assertEqual(rig.latency_file(1), b'n/a\n')
        self.assertIn('kernel.state', state_files(rig.state))

        r = subprocess.run(rig.daemon_command('--restore-only'),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('restored the cpufreq settings', r.stderr)
        self.assertIn(os.path.join(rig.state, 'kernel.state'), r.stderr)
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

        # A normal start after a crash puts the tree back before it
        # governs: it records the original settings, not the crashed
        # run's, and SIGTERM restores those.
        rig.start_daemon()
        self.assertGoverning(rig)
        rig.stop_daemon(signal.SIGKILL)
        self.assertEqual(rig.policy_file(3, 'scaling_setspeed'),
                         f'{K_FLOOR_KHZ}\n'.encode())
        rig.start_daemon()
        self.assertIn('restored the cpufreq settings that a previous run '
                      'left changed', rig.read_log())
        self.assertEqual(rig.prop('Backend'), 'kernel')
        self.assertGoverning(rig)
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def policy_line(self, text, number):
        """kernel.state `text` with its header and policy `number` only."""
        lines = text.splitlines(keepends=True)
        return lines[0] + ''.join(l for l in lines[1:]
                                  if l.startswith(f'policy{number} '))

    def test_crash_with_an_unwritable_file(self):
        for how in self.unwritable_ways():
            with self.subTest(how):
                rig = self.make_kernel_rig()
                before = rig.snapshot()
                rig.start_daemon()
                self.assertGoverning(rig)
                rig.stop_daemon(signal.SIGKILL)
                with open(os.path.join(rig.state, 'kernel.state')) as f:
                    recorded = f.read()
                left = self.policy_line(recorded, 2)
                self.assertIn('policy2 ondemand', left)
                # policy2 stays on userspace as the crash left it.
                broken = Unwritable(rig.policy_path(2, 'scaling_governor'),
                                    how)
                self.assertLeftAndRefused(rig, broken, 'kernel.state', left)
                self.assertEqual(rig.policy_file(0, 'scaling_governor'),
                                 b'schedutil\n')

                broken.fix()
                self.assertEqual(rig.policy_file(2, 'scaling_governor'),
                                 b'userspace\n')
                r = self.run_daemon(rig, '--restore-only')
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn('restored the cpufreq settings', r.stderr)
                self.assertTreeAsBefore(rig, before)
                self.assertEqual(state_files(rig.state), [])
                # The start records ondemand as policy2's original, not the
                # userspace the crash left.
                rig.start_daemon()
                self.assertGoverning(rig)
                with open(os.path.join(rig.state, 'kernel.state')) as f:
                    self.assertEqual(f.read(), recorded)
                self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0,
                                 rig.read_log())
                self.assertTreeAsBefore(rig, before)
                rig.close()

    def test_stop_that_cannot_put_everything_back(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertGoverning(rig)
        with open(os.path.join(rig.state, 'kernel.state')) as f:
            left = self.policy_line(f.read(), 3)
        broken = Unwritable(rig.policy_path(3, 'scaling_setspeed'),
                            'directory')
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 1, rig.read_log())
        log = rig.read_log()
        path = os.path.join(rig.state, 'kernel.state')
        self.assertTrue(os.path.exists(path), 'kernel.state is gone')
        with open(path) as f:
            self.assertEqual(f.read(), left)
        self.assertEqual(state_files(rig.state), ['kernel.state'])
        self.assertRegex(log, f"writing the saved value '1500000' to "
                         f"'{re.escape(broken.path)}' failed: Is a directory")
        self.assertIn(f"'{path}' now holds what is not back: policy3", log)
        self.assertIn('stopped, but not everything changed was put back: '
                      f"the saved values of '{broken.path}' are not back; "
                      f"'{path}' holds what a restore must still put back",
                      log)

        broken.fix()
        r = self.run_daemon(rig, '--restore-only')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def test_a_failed_write_degrades_its_cpus_naming_the_file(self):
        rig = self.make_kernel_rig()
        rig.start_daemon()
        self.assertGoverning(rig)
        cpu = host_cpu()
        policy = rig.policy_of(cpu)
        broken = Unwritable(rig.policy_path(policy, 'scaling_setspeed'),
                            'directory')
        # A clamp that raises the busy child's CPU makes the daemon write
        # that policy's scaling_setspeed, which cannot be written.
        child = rig.busy_child()
        rig.session().clamp(child.pid, 1024, 1024)
        wanted = re.compile(r"CPU (\d+) degraded: '" +
                            re.escape(broken.path) +
                            r"': the write failed: Is a directory")
        found, _ = wait_until(
            lambda: len(wanted.findall(rig.read_log())) ==
            len(rig.policies[policy]), SETTLE_TIMEOUT)
        self.assertTrue(found, rig.read_log())
        logged = sorted(int(n) for n in wanted.findall(rig.read_log()))
        self.assertEqual(logged, sorted(rig.policies[policy]),
                         'each of its CPUs logged once per change')
        states = {s['cpu']: s for s in rig.cpu_states()}
        self.assertIn(broken.path, states[cpu]['degraded'])
        for other, s in states.items():
            if other not in rig.policies[policy]:
                self.assertEqual(s['degraded'], '', other)
        # The access counts are read about every 100 ms.
        counted, _ = wait_until(
            lambda: rig.stats()['access_errors'] > 0, SETTLE_TIMEOUT)
        self.assertTrue(counted, rig.stats())
        stats = rig.stats()
        self.assertEqual(stats['cpus_degraded'], len(rig.policies[policy]))
        # Once the file takes writes again, the request lands (tried again
        # a deadline later) and the CPUs recover.
        broken.fix()
        recovered, _ = wait_until(
            lambda: all(s['degraded'] == '' for s in rig.cpu_states()),
            SETTLE_TIMEOUT)
        self.assertTrue(recovered, rig.read_log())
        # The tick's lines are written out by the D-Bus thread, within
        # about 100 ms.
        logged, _ = wait_until(
            lambda: f'CPU {cpu} recovered' in rig.read_log(), SETTLE_TIMEOUT)
        self.assertTrue(logged, rig.read_log())
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())

    def test_counters_that_never_move_are_a_firmware_finding(self):
        """The fake tree's feedback counters never move: once a CPU is
        busy, the CPUs of its domain show the firmware finding as their
        degraded reason, the log says so once and the metrics carry it;
        the idle CPUs of the other domains show nothing."""
        rig = self.make_kernel_rig()
        rig.write_config('sanity:\n  stuck_readings: 5\n')
        rig.start_daemon()
        self.assertGoverning(rig)
        policy = rig.policy_of(0)
        rig.proc_stat.set_busy({0})
        finding = ('firmware: the reference counter did not move over 5 '
                   'readings while the CPU was busy')
        # Five readings of a busy CPU: a few ticks on a quiet host, longer
        # when the host is loaded and the fake load comes in bursts.
        found, _ = wait_until(
            lambda: finding in rig.cpu_states()[0]['degraded'],
            4 * SETTLE_TIMEOUT)
        self.assertTrue(found, (rig.cpu_states()[0], rig.read_log()))
        states = {s['cpu']: s for s in rig.cpu_states()}
        for cpu, s in states.items():
            if cpu in rig.policies[policy]:
                self.assertIn(finding, s['degraded'], cpu)
            else:
                self.assertEqual(s['degraded'], '', cpu)
        # The tick's lines are written out within about 100 ms.
        logged, _ = wait_until(lambda: finding in rig.read_log(),
                               SETTLE_TIMEOUT)
        self.assertTrue(logged, rig.read_log())
        r = subprocess.run([CPPCGOVCTL, '--bus-address', rig.address,
                            'metrics'], capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        stuck = re.findall(r'^cppcgov_firmware_finding\{domain="(\d+)",'
                           r'check="counters-stuck"\} (\d)$', r.stdout,
                           re.MULTILINE)
        self.assertEqual(len(stuck), len(rig.policies), r.stdout)
        self.assertEqual([v for _, v in stuck].count('1'), 1, r.stdout)
        # The requests go on: a finding changes nothing the daemon writes.
        self.assertEqual(rig.stats()['cpus_degraded'], 0)
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        # Logged once, counted once the stop has written out every line.
        self.assertEqual(rig.read_log().count(finding), 1, rig.read_log())

    def test_broken_tree_is_refused_untouched(self):
        cpu_dir = 'devices/system/cpu'
        cases = [
            # (what, file under sys, its new text or None to remove it,
            #  what the message must say besides the file's path)
            ('no userspace governor',
             f'{cpu_dir}/cpufreq/policy3/scaling_available_governors',
             'conservative ondemand powersave performance schedutil \n',
             'does not offer the userspace governor'),
            ('another driver', f'{cpu_dir}/cpufreq/policy2/scaling_driver',
             'acpi-cpufreq\n', 'not cppc_cpufreq'),
            ('no highest_perf', f'{cpu_dir}/cpu3/acpi_cppc/highest_perf',
             None, ''),
        ]
        for what, relative, text, message in cases:
            with self.subTest(what):
                rig = self.make_kernel_rig()
                path = os.path.join(rig.sys, relative)
                if text is None:
                    os.remove(path)
                else:
                    rig.write_text(path, text)
                before = rig.snapshot()
                try:
                    r = subprocess.run(rig.daemon_command(),
                                       capture_output=True, text=True,
                                       timeout=START_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.fail(f'cppcgovd still runs after {START_TIMEOUT} s '
                              'on a broken tree')
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn('cannot start: kernel backend', r.stderr)
                self.assertIn(f"'{path}'", r.stderr)
                self.assertIn(message, r.stderr)
                # Nothing changed, not even scaling_setspeed.
                self.assertEqual(rig.snapshot(), before)
                self.assertEqual(state_files(rig.state), [])
                rig.close()
