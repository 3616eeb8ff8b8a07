# SPDX-License-Identifier: Apache-2.0
"""The daemon on the kernel backend over pccfs (PccRig): every access to
the cpufreq and acpi_cppc files costs a PCC doorbell. It governs and
lands a clamp on the rig; with one CPU's accesses held (hang) that CPU is
degraded within two deadlines while D-Bus and the other CPUs go on, and
SIGTERM still exits within 5 s with everything else put back and the
hung policy kept for --restore-only; with one CPU's accesses failing that
CPU is degraded with the error and recovers once they succeed again.
Everything is checked against the rig (its files and its stats), not
against what the daemon says it did. Skipped when pccfs cannot run here
(not built, no /dev/fuse, not root).
"""

import os
import signal
import time
import unittest

from daemon_case import DaemonTest
from kernel_rig import K_FLOOR_KHZ, K_NOMINAL, K_NOMINAL_KHZ
from pcc_fs import PccRig, unavailable
from rig import SETTLE_TIMEOUT, state_files, wait_until

# Long enough that an access the loaded machine merely delays is not
# taken for a hung one; two of them bound when a hang shows.
DEADLINE_US = 20000
DEADLINE = DEADLINE_US / 1e6
# SIGTERM with an access hung: the daemon exits within this.
STOP_LIMIT = 5.0


class PccDaemonTest(DaemonTest):
    """cppcgovd on PccRig, with accesses that take a PCC doorbell, that
    never answer, and that fail."""

    def make_pcc_rig(self, access=None):
        """The rig, with the policy file's backend.access settings
        `access` (default: a deadline of DEADLINE_US)."""
        why = unavailable()
        if why:
            self.skipTest(why)
        self.rig = PccRig(self, access=(access if access is not None
                                        else {'deadline_us': DEADLINE_US}))
        return self.rig

    def host_cpus(self, count):
        """`count` host CPUs this process may use (the kernel backend's
        CPU n is host CPU n), highest first; skips when there are fewer."""
        cpus = sorted(os.sched_getaffinity(0), reverse=True)
        if len(cpus) < count:
            self.skipTest(f'needs {count} host CPUs, has {len(cpus)}')
        return cpus[:count]

    def busy_on(self, rig, cpu):
        """A process spinning on host CPU `cpu`, returned once it runs
        there only (taskset has set its affinity and become sh), so that a
        clamp on it raises that CPU and no other."""
        proc = rig.spawn(['taskset', '--cpu-list', str(cpu), 'sh', '-c',
                          'while :; do :; done'])

        def pinned():
            try:
                with open(f'/proc/{proc.pid}/comm') as f:
                    return f.read().strip() == 'sh'
            except OSError:
                return False

        if not wait_until(pinned, SETTLE_TIMEOUT)[0]:
            raise AssertionError(f'the busy child never ran on CPU {cpu}')
        return proc

    def degraded(self, rig):
        """{cpu: reason} of the CPUs GetCpuStates shows degraded."""
        return {s['cpu']: s['degraded'] for s in rig.cpu_states()
                if s['degraded']}

    def degraded_lines(self, rig, cpu):
        """The log's lines saying `cpu` is degraded."""
        return [line for line in rig.read_log().splitlines()
                if f'CPU {cpu} degraded: ' in line]

    def wait_rig_speed(self, rig, policy, khz, timeout=SETTLE_TIMEOUT):
        """Waits until the rig has `khz` in force on `policy`."""
        key = f'policy{policy}.setspeed_khz'
        stats = rig.pccfs.wait_stat(key, lambda v: v == khz, timeout)
        return stats[key]

    def wait_rig_speeds(self, rig, wanted, timeout=SETTLE_TIMEOUT):
        """Waits until the rig has wanted[policy] kHz in force on every
        policy named; asserts it did."""
        last = {}

        def reached():
            stats = rig.pccfs.stats()
            last.update({n: stats[f'policy{n}.setspeed_khz'] for n in wanted})
            return last == wanted

        wait_until(reached, timeout)
        self.assertEqual(last, wanted)

    def found(self, rig, policies):
        """What the rig's files of `policies` hold: (governor, setspeed,
        min, max) each."""
        return {n: tuple(rig.policy_file(n, name) for name in (
            'scaling_governor', 'scaling_setspeed', 'scaling_min_freq',
            'scaling_max_freq')) for n in policies}

    def start_governing(self, rig):
        """Starts the daemon and waits until the rig has every policy
        under userspace at the floor (all CPUs idle); returns the
        policies' files as found before."""
        before = self.found(rig, rig.policies)
        rig.start_daemon()
        self.wait_rig_speeds(rig, {n: rig.expected_khz(n, K_FLOOR_KHZ)
                                   for n in rig.policies})
        stats = rig.pccfs.stats()
        for n in rig.policies:
            self.assertEqual(stats[f'policy{n}.governor'], 'userspace')
        return before

    def wait_degraded(self, rig, cpu, since):
        """Waits until GetCpuStates shows `cpu` degraded; returns the
        reason. Fails when a poll that began more than two deadlines after
        `since` (when the access was seen at the rig, or later) still
        showed it fine: the daemon was then provably late."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            asked = time.monotonic()
            reason = self.degraded(rig).get(cpu)
            if reason:
                print(f'\n  CPU {cpu} shown degraded '
                      f'{time.monotonic() - since:.3f} s after its access '
                      'was seen at the rig', flush=True)
                return reason
            self.assertLess(asked - since, 2 * DEADLINE,
                            f'CPU {cpu} not degraded {asked - since:.3f} s '
                            'after its access was held')
            self.assertLess(time.monotonic(), deadline)

    def test_governs_on_pcc_speed_sysfs(self):
        # The default access settings: worker threads, and a deadline of
        # 5 ms (the rig has no PCCT to derive one from).
        rig = self.make_pcc_rig(access={})
        (cpu,) = self.host_cpus(1)
        before = self.start_governing(rig)
        child = self.busy_on(rig, cpu)
        handle = rig.session().clamp(child.pid, 1024, 1024)
        policy = rig.policy_of(cpu)
        self.wait_rig_speeds(rig, {
            n: rig.expected_khz(n, K_NOMINAL_KHZ if n == policy
                                else K_FLOOR_KHZ) for n in rig.policies})
        stats = rig.pccfs.stats()
        # An access the loaded machine delays past 5 ms may degrade a CPU
        # for a moment; none stays so, and none failed.
        self.assertTrue(wait_until(lambda: not self.degraded(rig),
                                   SETTLE_TIMEOUT)[0], self.degraded(rig))
        self.assertEqual(rig.stats()['access_errors'], 0)
        states = rig.cpu_states()
        self.assertIn(handle, [h['handle'] for h in states[cpu]['handles']])
        print(f"\n  doorbells: {stats['write_doorbells']} write, "
              f"{stats['read_doorbells']} read; {stats['writes']} writes "
              'landed', flush=True)

        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertEqual(self.found(rig, rig.policies), before)
        self.assertEqual(state_files(rig.state), [])

    # Every read of feedback_ctrs on PCC takes a doorbell (here at least
    # 110 us). The counters are latched at one instant, as a PCC read
    # latches them, so the kernel machine takes reads of up to 1 ms; the
    # delivered performance it publishes must then be what the rig's
    # counters say, which follow what landed.
    def test_delivered_performance_follows_what_landed(self):
        rig = self.make_pcc_rig()
        (cpu,) = self.host_cpus(1)
        self.start_governing(rig)
        child = self.busy_on(rig, cpu)
        rig.session().clamp(child.pid, 1024, 1024)
        self.wait_rig_speed(rig, rig.policy_of(cpu), K_NOMINAL_KHZ)
        # The rig's counters then run at nominal (250) performance.
        self.assertTrue(wait_until(
            lambda: rig.cpu_states()[cpu]['delivered'] == K_NOMINAL,
            SETTLE_TIMEOUT)[0], rig.cpu_states()[cpu])

    def test_a_hung_cpu_costs_that_cpu_only(self):
        rig = self.make_pcc_rig()
        hung, other = self.host_cpus(2)
        hung_policy, other_policy = rig.policy_of(hung), rig.policy_of(other)
        before = self.start_governing(rig)
        client = rig.session()

        rig.pccfs.control(f'hang {hung}')
        client.clamp(self.busy_on(rig, hung).pid, 1024, 1024)
        stats = rig.pccfs.wait_stat('held', lambda n: n > 0)
        reason = self.wait_degraded(rig, hung, time.monotonic())
        files = (f'{rig.sys}/devices/system/cpu/cpu{hung}/',
                 f'{rig.sys}/devices/system/cpu/cpufreq/policy{hung_policy}/')
        self.assertTrue(any(f"'{f}" in reason for f in files), reason)
        # The held write has not landed.
        self.assertEqual(stats[f'policy{hung_policy}.setspeed_khz'],
                         rig.expected_khz(hung_policy, K_FLOOR_KHZ))

        # D-Bus answers, and another CPU's clamp lands on the rig.
        self.assertIn('cpus_degraded', rig.stats())
        client.clamp(self.busy_on(rig, other).pid, 1024, 1024)
        self.wait_rig_speed(rig, other_policy, K_NOMINAL_KHZ)
        # Only the hung CPU stays degraded (another's access that a loaded
        # machine delays past the deadline degrades it for a moment).
        self.assertTrue(wait_until(lambda: list(self.degraded(rig)) == [hung],
                                   SETTLE_TIMEOUT)[0], self.degraded(rig))
        # Logged (the tick's lines are written out within about 100 ms).
        self.assertTrue(wait_until(lambda: self.degraded_lines(rig, hung),
                                   SETTLE_TIMEOUT)[0], rig.read_log())

        # A bounded stop: everything else back, the hung policy kept.
        start = time.monotonic()
        self.assertEqual(rig.stop_daemon(signal.SIGTERM, STOP_LIMIT), 1,
                         rig.read_log())
        print(f'\n  SIGTERM with CPU {hung} hung: exited after '
              f'{time.monotonic() - start:.2f} s', flush=True)
        # Logged once per change (an access of each file passing its
        # deadline), not once per tick: by now many ticks have gone by, and
        # the stop has written out every line the tick logged.
        said = self.degraded_lines(rig, hung)
        self.assertEqual(len(said), len(set(said)), said)
        self.assertTrue(all(any(f"'{f}" in line for f in files)
                            for line in said), said)
        others = [n for n in rig.policies if n != hung_policy]
        self.assertEqual(self.found(rig, others),
                         {n: before[n] for n in others})
        self.assertEqual(state_files(rig.state), ['kernel.state'])
        with open(os.path.join(rig.state, 'kernel.state')) as f:
            kept = f.read()
        self.assertRegex(kept, f'(?m)^policy{hung_policy} ')
        for n in others:
            self.assertNotRegex(kept, f'(?m)^policy{n} ')

        rig.pccfs.control(f'release {hung}')
        r = self.run_daemon(rig, '--restore-only')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.found(rig, rig.policies), before)
        self.assertEqual(state_files(rig.state), [])

    def test_a_failing_cpu_is_degraded_until_it_recovers(self):
        rig = self.make_pcc_rig()
        (cpu,) = self.host_cpus(1)
        policy = rig.policy_of(cpu)
        before = self.start_governing(rig)

        rig.pccfs.control(f'fail {cpu}')
        rig.session().clamp(self.busy_on(rig, cpu).pid, 1024, 1024)
        rig.pccfs.wait_stat('failed', lambda n: n > 0)
        reason = self.wait_degraded(rig, cpu, time.monotonic())
        self.assertIn('Input/output error', reason)
        self.assertEqual(rig.pccfs.stats()[f'policy{policy}.setspeed_khz'],
                         rig.expected_khz(policy, K_FLOOR_KHZ))

        rig.pccfs.control(f'clear {cpu}')
        self.wait_rig_speed(rig, policy, K_NOMINAL_KHZ)
        self.assertTrue(wait_until(lambda: not self.degraded(rig),
                                   SETTLE_TIMEOUT)[0], self.degraded(rig))
        self.assertTrue(wait_until(
            lambda: f'CPU {cpu} recovered' in rig.read_log(),
            SETTLE_TIMEOUT)[0], rig.read_log())

        # Failing again soon after: shown at once, but not logged again
        # (at most one degradation line per CPU every 10 s), so a CPU that
        # flaps cannot fill the journal. The clock starts at the first
        # access that fails (the rig's load is idle, so the CPU's counters
        # are read every 100 ms, not every 10: the kernel backend puts off
        # an idle CPU's reads).
        failed = rig.pccfs.stats()['failed']
        rig.pccfs.control(f'fail {cpu}')
        rig.pccfs.wait_stat('failed', lambda n: n > failed)
        self.wait_degraded(rig, cpu, time.monotonic())
        rig.pccfs.control(f'clear {cpu}')
        self.assertTrue(wait_until(lambda: not self.degraded(rig),
                                   SETTLE_TIMEOUT)[0], self.degraded(rig))

        # Counted once the stop has written out every line the tick logged.
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        log = rig.read_log()
        self.assertEqual(log.count(f'CPU {cpu} degraded:'), 1, log)
        self.assertEqual(log.count(f'CPU {cpu} recovered'), 1, log)
        self.assertEqual(self.found(rig, rig.policies), before)
        self.assertEqual(state_files(rig.state), [])
