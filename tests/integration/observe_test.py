# SPDX-License-Identifier: Apache-2.0
"""The scheduler's events as the daemon's source (sampling.source, BPF):
the daemon on / (the live scheduler; the simulator as its machine, so
nothing of the host is written), a hint followed into the children its
task forks, the unhinted-task rule exact per tick, and the fallback to
procfs saying why (root only; the BPF cases also need BTF).
"""

import os
import shlex
import signal
import unittest

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, SETTLE_TIMEOUT, START_TIMEOUT, host_cpu,
                 wait_until)

BTF = '/sys/kernel/btf/vmlinux'

# How many GetCpuStates answers a case looks at, one tick apart or more.
SAMPLES = 40


def spin_on(cpu):
    """A shell loop pinned to host CPU `cpu`."""
    return ['taskset', '--cpu-list', str(cpu), 'sh', '-c',
            'while :; do :; done']


@unittest.skipUnless(os.geteuid() == 0, 'loading BPF needs root')
class ObserveFallbackTest(DaemonTest):
    """Where the scheduler's events are not used, the daemon says so."""

    def test_procfs_when_configured(self):
        rig = self.make_rig(config='sampling:\n  source: procfs\n')
        rig.daemon_root = '/'
        rig.start_daemon()
        self.assertEqual(rig.prop('SamplingSource'), 'procfs')
        self.assertEqual(rig.prop('SamplingSourceReason'),
                         'sampling.source is procfs')

    def test_procfs_on_a_fake_root(self):
        rig = self.make_rig()
        rig.start_daemon()
        self.assertEqual(rig.prop('SamplingSource'), 'procfs')
        self.assertIn('not /', rig.prop('SamplingSourceReason'))
        rig.stop_daemon()
        self.assertIn('load and task placement come from procfs',
                      rig.read_log())

    def test_without_the_capabilities_it_falls_back_and_says_why(self):
        """Root without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN: the program
        cannot load; auto falls back to procfs naming the capabilities,
        and a required bpf refuses to start."""
        rig = self.make_rig()
        rig.daemon_root = '/'
        no_caps = ['setpriv', '--bounding-set=-all', '--inh-caps=-all']
        rig.start_daemon(wrapper=no_caps)
        self.assertEqual(rig.prop('SamplingSource'), 'procfs')
        reason = rig.prop('SamplingSourceReason')
        self.assertIn('CAP_BPF', reason)
        rig.stop_daemon()
        self.assertIn('CAP_BPF', rig.read_log())

        rig.write_config('sampling:\n  source: bpf\n')
        with open(rig.log_path, 'ab') as log:
            daemon = rig.spawn(no_caps + rig.daemon_command(), stdout=log,
                               stderr=log)
        self.assertEqual(daemon.wait(timeout=START_TIMEOUT), 1)
        self.assertIn('sampling.source is bpf, but', rig.read_log())


@unittest.skipUnless(os.geteuid() == 0 and os.path.exists(BTF),
                     'the BPF program needs root and BTF')
class ObserveBpfTest(DaemonTest):
    """The daemon on the live scheduler's events."""

    def live_rig(self, config=''):
        rig = self.make_rig(config=config)
        rig.daemon_root = '/'
        rig.start_daemon()
        self.assertEqual(rig.prop('SamplingSource'), 'bpf',
                         rig.prop('SamplingSourceReason'))
        return rig

    def ctl(self, rig, command, *args):
        return [CPPCGOVCTL, command, f'--bus-address={rig.address}', *args]

    def hold(self, rig, command, *args):
        """cppcgovctl `command` holding its handle, in a process group of
        its own that the case's end kills whole (its command's children
        included)."""
        holder = rig.spawn(self.ctl(rig, command, *args),
                           start_new_session=True)

        def kill_group():
            try:
                os.killpg(holder.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.addCleanup(kill_group)
        return holder

    def states_of(self, rig, cpu, count=SAMPLES):
        """`count` answers of GetCpuStates for `cpu`."""
        return [rig.cpu_states()[cpu] for _ in range(count)]

    def test_bpf_is_the_default_where_it_loads(self):
        rig = self.live_rig()
        # The counts are read about every 100 ms.
        ok, _ = wait_until(lambda: rig.stats()['sched_events'] > 0,
                           SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.stats())
        rig.stop_daemon()
        self.assertIn('from bpf', rig.read_log())

    def test_a_hint_follows_the_children_its_task_forks(self):
        """`hint --min 1024 -- sh -c '...'` hints the shell; the shell's
        child spinning on host_cpu() carries it there (uclamp's
        inheritance), while the shell itself only waits."""
        rig = self.live_rig()
        cpu = host_cpu()
        spin = shlex.join(spin_on(cpu))
        holder = self.hold(rig, 'hint', '--min', '1024', '--', 'sh', '-c',
                           f'{spin} & wait')
        state, _ = wait_until(
            lambda: (lambda s: s if s['clamp_min'] == 1024 else None)(
                rig.cpu_states()[cpu]), SETTLE_TIMEOUT)
        self.assertTrue(state, f'the child never raised CPU {cpu}: '
                        f'{rig.cpu_states()[cpu]}')
        self.assertEqual(len(state['handles']), 1, state)
        handle = state['handles'][0]['handle']
        # The hinted task is the shell, cppcgovctl's child, not the
        # spinner that runs there.
        with open(f"/proc/{state['handles'][0]['pid']}/stat") as f:
            fields = f.read().rsplit(')', 1)[1].split()
        self.assertEqual(int(fields[1]), holder.pid)
        # Held while the child runs...
        self.assertTrue(all(s['clamp_min'] == 1024
                            for s in self.states_of(rig, cpu)))
        # ...and gone with the hint.
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=START_TIMEOUT)
        ok, _ = wait_until(
            lambda: handle not in rig.handle_ids()
            and rig.cpu_states()[cpu]['clamp_min'] == 0, SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.cpu_states()[cpu])

    def test_an_unhinted_task_lifts_the_ceiling_in_every_tick(self):
        """A hinted spinner under util_max 0 alone on its CPU: the ceiling
        binds (in the ticks where nothing else was runnable there: the
        kernel's own threads, or a loaded machine's work, lift it for
        their tick, as uclamp would). An unhinted spinner beside it is
        runnable all the time: every tick lifts it. Stopped, the ceiling
        binds again."""
        rig = self.live_rig()
        cpu = host_cpu()
        self.hold(rig, 'hint', '--max', '0', '--', *spin_on(cpu))
        ok, _ = wait_until(lambda: rig.cpu_states()[cpu]['clamp_max'] == 0,
                           SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.cpu_states()[cpu])

        other = rig.spawn(spin_on(cpu))
        ok, _ = wait_until(
            lambda: rig.cpu_states()[cpu]['clamp_max'] == 1024,
            SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.cpu_states()[cpu])
        before = rig.stats()
        states = self.states_of(rig, cpu)
        after = rig.stats()
        observer = {k: (before[k], after[k])
                    for k in before if k.startswith('sched')}
        self.assertTrue(all(s['clamp_max'] == 1024 for s in states),
                        ([s['clamp_max'] for s in states], observer))

        other.kill()
        other.wait()
        ok, _ = wait_until(lambda: rig.cpu_states()[cpu]['clamp_max'] == 0,
                           SETTLE_TIMEOUT)
        self.assertTrue(ok, rig.cpu_states()[cpu])
