# SPDX-License-Identifier: Apache-2.0
"""Energy-preference hints and the autonomous policy: preferences on CPU
sets and on tasks, listed with their kind, ending on release, on the
client's disconnect and on the task's exit; a preference that is not
"performance" or "efficiency" refused with a named error
(EnergyPreferenceTest). The autonomous policy on the simulator: refused at
start and at Reload, naming the domain and the backend, on a layout
without autonomous selection (rd-n2); end to end on the layout with
every control (neoverse) (AutonomousTest), and end to end on the kernel backend's fake tree with
the CPPC knobs: auto_select on, the EPP from the configuration and from
the hints, selection off when a reload leaves autonomous, and the tree as
before after the stop (KernelAutonomousTest). The unprivileged cases are
in trust_test.py.
"""

import signal
import subprocess

from daemon_case import DaemonTest
from kernel_rig import KernelRig, kernel_view
from rig import SETTLE_TIMEOUT, START_TIMEOUT, wait_until


class EnergyPreferenceTest(DaemonTest):

    def test_preferences_end_with_their_handles(self):
        rig = self.make_rig()
        rig.start_daemon()
        a = rig.session()
        b = rig.session()
        ha = a.prefer_cpus('performance', [0, 1])
        hb = b.prefer_cpus('efficiency', [1])
        kinds = {h['handle']: (h['kind'], h['pid'], h['min'], h['max'],
                               h['latency'])
                 for h in rig.handles()}
        self.assertEqual(kinds, {ha: ('energy-performance', 0, 0, 0, 0),
                                 hb: ('energy-efficiency', 0, 0, 0, 0)})
        self.assertEqual(rig.prop('EnergyPreferenceCount'), 2)
        self.assertEqual(rig.prop('LatencyCount'), 0)
        # Released by its owner.
        a.release(ha)
        self.assertEqual(rig.handle_ids(), {hb})
        # The client leaves: its handle ends.
        b.kill()
        self.assertTrue(wait_until(lambda: rig.handle_ids() == set(),
                                   SETTLE_TIMEOUT)[0])
        self.assertEqual(rig.prop('EnergyPreferenceCount'), 0)

    def test_preference_for_a_task_ends_with_it(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        child = rig.busy_child()
        handle = client.prefer(child.pid, 'efficiency')
        listed = {h['handle']: (h['kind'], h['pid']) for h in rig.handles()}
        self.assertEqual(listed, {handle: ('energy-efficiency', child.pid)})
        child.kill()
        child.wait()
        self.assertEqual(client.wait_ended(handle, 10)[2], 'task-exited')
        self.assertEqual(rig.handle_ids(), set())
        # The caller's own process (pid 0).
        own = client.prefer(0, 'performance')
        self.assertEqual([h['pid'] for h in rig.handles()
                          if h['handle'] == own], [client.pid()])

    def test_invalid_preferences_are_refused(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        invalid = 'org.cppcgov.Error.InvalidArgument'
        message = self.assertCallError(invalid, client.prefer_cpus, 'turbo',
                                       [0])
        self.assertIn("preference 'turbo' is not one of: performance, "
                      "efficiency", message)
        self.assertCallError(invalid, client.prefer, 0, 'Performance')
        self.assertCallError(invalid, client.prefer_cpus, 'performance',
                             [rig.cpus])
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('EnergyPreferenceCount'), 0)


def write_layout_config(rig, layout, extra):
    """The rig's policy file with simulator layout `layout`."""
    rig.write_config(extra)
    with open(rig.config) as f:
        text = f.read()
    rig.write_text(rig.config,
                   text.replace('layout: rd-n2\n', f'layout: {layout}\n'))


def simulator_offers_autonomous(rig, layout='rd-n2'):
    """Whether cppcgovd starts with policy autonomous on this rig's
    simulator with `layout`: (True, None), or (False, its stderr)."""
    write_layout_config(rig, layout, 'policy: autonomous\n')
    try:
        r = subprocess.run(rig.daemon_command(), capture_output=True,
                           text=True, timeout=2)
    except subprocess.TimeoutExpired:
        return True, None  # it ran: started
    return r.returncode == 0, r.stderr


class AutonomousTest(DaemonTest):

    def test_refused_where_the_simulator_lacks_it(self):
        rig = self.make_rig()
        offers, stderr = simulator_offers_autonomous(rig)
        if offers:
            self.skipTest('the simulator offers autonomous selection: '
                          'nothing to refuse')
        self.assertIn('cannot start: domain 0 (CPUs ', stderr)
        self.assertIn("policy autonomous needs CPPC autonomous selection, "
                      "which backend 'simulator:rd-n2' does not offer",
                      stderr)
        # At Reload: refused, and the daemon keeps its policy.
        rig.write_config('')
        rig.start_daemon()
        client = rig.session()
        rig.write_config('overrides:\n  - cpus: "1"\n'
                         '    policy: autonomous\n')
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       client.ask, 'reload')
        self.assertIn('policy autonomous needs CPPC autonomous selection',
                      message)
        self.assertIn('simulator:rd-n2', message)
        self.assertEqual(rig.prop('Policy'), 'schedutil')

    def test_end_to_end_on_the_simulator(self):
        # The layout with every CPPC control, autonomous selection too.
        rig = self.make_rig()
        offers, stderr = simulator_offers_autonomous(rig, 'neoverse')
        if not offers:
            self.skipTest('the simulator offers no autonomous selection '
                          '(Control::autonomous) on layout neoverse: the '
                          'autonomous policy cannot run end to end on it: '
                          + (stderr or ''))
        write_layout_config(rig, 'neoverse', 'policy: autonomous\n')
        rig.start_daemon()
        self.assertEqual(rig.prop('Policy'), 'autonomous')
        self.assertTrue(wait_until(
            lambda: all(c['reason'] in ('autonomous', 'desired-excursion',
                                        'minimum-excursion')
                        for c in rig.cpu_states()), START_TIMEOUT)[0],
            rig.cpu_states())
        # Every control written, and the rest of each request shown: the
        # configuration's preference (128 by default), selection on, the
        # bounds within the CPU's performance range.
        self.assertEqual(rig.prop('Controls'),
                         ['desired', 'min', 'max', 'epp', 'autonomous',
                          'activity-window'])
        caps = {c[0]: (c[4], c[7]) for c in rig.call('GetCpuInfo')[0]}
        controls = rig.cpu_controls()
        self.assertEqual(sorted(controls), sorted(caps))
        for cpu, c in controls.items():
            lowest, highest = caps[cpu]
            self.assertTrue(lowest <= c['min'] <= c['max'] <= highest,
                            (cpu, c, caps[cpu]))
            self.assertEqual((c['epp'], c['autonomous']), (128, True),
                             (cpu, c))
        client = rig.session()
        handle = client.prefer_cpus('performance', [0])
        self.assertIn(handle, rig.handle_ids())
        # A performance preference on CPU 0 moves its EPP to 0 alone.
        self.assertTrue(wait_until(
            lambda: rig.cpu_controls()[0]['epp'] == 0, SETTLE_TIMEOUT)[0],
            rig.cpu_controls())
        self.assertEqual({cpu for cpu, c in rig.cpu_controls().items()
                          if c['epp'] != 128}, {0})


class KernelAutonomousTest(DaemonTest):
    """The autonomous policy end to end on the kernel backend over a fake
    cpufreq tree with auto_select and energy_performance_preference_val."""

    def test_autonomous_with_preferences_and_restore(self):
        rig = KernelRig(self, knobs=True)
        self.rig = rig
        before = kernel_view(rig.snapshot())
        rig.write_config('policy: autonomous\n'
                         'autonomous:\n'
                         '  energy_preference: 100\n'
                         '  energy_preference_efficiency: 200\n')
        rig.start_daemon()
        self.assertEqual(rig.prop('Policy'), 'autonomous')

        def knobs(name):
            return {n: rig.policy_file(n, name) for n in rig.policies}

        def settle(name, wanted):
            wait_until(lambda: knobs(name) == wanted, SETTLE_TIMEOUT)
            self.assertEqual(knobs(name), wanted, rig.read_log())

        settle('auto_select', {n: b'1\n' for n in rig.policies})
        settle('energy_performance_preference_val',
               {n: b'100\n' for n in rig.policies})
        first = min(rig.policies)
        cpus = rig.policies[first]
        client = rig.session()
        # Efficiency, then performance on the same CPUs: performance wins.
        low = client.prefer_cpus('efficiency', cpus)
        settle('energy_performance_preference_val',
               {n: b'200\n' if n == first else b'100\n'
                for n in rig.policies})
        high = client.prefer_cpus('performance', cpus[:1])
        settle('energy_performance_preference_val',
               {n: b'0\n' if n == first else b'100\n'
                for n in rig.policies})
        # What GetCpuControls shows agrees with the files, CPU by CPU.
        self.assertEqual(rig.prop('Controls'),
                         ['desired', 'epp', 'autonomous', 'activity-window'])
        controls = rig.cpu_controls()
        for n, members in rig.policies.items():
            for cpu in members:
                self.assertEqual(
                    (controls[cpu]['epp'], controls[cpu]['autonomous']),
                    (0 if n == first else 100, True), (n, cpu, controls))
        client.release(high)
        client.release(low)
        settle('energy_performance_preference_val',
               {n: b'100\n' for n in rig.policies})
        # Away from autonomous on reload: selection off at once.
        rig.write_config('policy: schedutil\n')
        client.ask('reload')
        settle('auto_select', {n: b'0\n' for n in rig.policies})
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertEqual(kernel_view(rig.snapshot()), before)
