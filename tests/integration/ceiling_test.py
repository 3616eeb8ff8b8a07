# SPDX-License-Identifier: Apache-2.0
"""A user's ceiling binds only that user's work: an unprivileged task
under `cppcgovctl hint --max 0` sharing a CPU with root's unhinted busy
task does not lower that CPU (root only).
"""

import os
import re
import subprocess
import time
import unittest

from daemon_case import DaemonTest
from rig import (NOBODY, RD_N2_NOMINAL, SETTLE_TIMEOUT, LineReader, host_cpu,
                 wait_until)


@unittest.skipUnless(os.geteuid() == 0, 'needs root to run a task as '
                     'another user')
class CeilingTest(DaemonTest):
    """A user's util_max binds only that user's work. The load is the
    host's own /proc/stat (the fake root links it), so the simulated CPU
    host_cpu() is as busy as the host CPU the busy tasks are pinned to, and
    whatever else runs there (a loaded machine's work, like root's task,
    has no hint) only adds to what lifts the ceiling."""

    def test_util_max_does_not_cap_another_users_work(self):
        """User nobody's busy task under `hint --max 0` shares a CPU with
        root's busy task, which has no hint: the CPU stays at nominal, as
        the kernel's uclamp (the max over the runnable tasks) would keep it,
        rather than falling to the floor."""
        rig = self.make_rig()
        os.makedirs(os.path.join(rig.root, 'proc'))
        os.symlink('/proc/stat', os.path.join(rig.root, 'proc', 'stat'))
        ctl, env = rig.copy_ctl()
        rig.start_daemon()
        cpu = host_cpu()
        rig.busy_child()
        nobody_task = rig.busy_child(user=NOBODY)
        self.assertIsNotNone(self.wait_requested(
            rig, cpu, RD_N2_NOMINAL, SETTLE_TIMEOUT)[0],
            f'CPU {cpu} did not climb to nominal under two busy tasks')

        holder = rig.spawn([ctl, 'hint', '--max', '0', '--pid',
                            str(nobody_task.pid),
                            f'--bus-address={rig.address}'], NOBODY,
                           stdout=subprocess.PIPE, text=True, env=env)
        line = LineReader(holder.stdout).readline(20)
        m = re.fullmatch(r'handle (\d+)', line or '')
        self.assertIsNotNone(m, f'cppcgovctl hint printed {line!r}')
        handle = int(m.group(1))

        def hinted(state):
            return handle in [h['handle'] for h in state['handles']]

        on_cpu, _ = wait_until(lambda: hinted(rig.cpu_states()[cpu]),
                               SETTLE_TIMEOUT)
        self.assertTrue(on_cpu, f'the hint never showed on CPU {cpu}')
        # The hint is in force all along, and the ceiling lifted all along.
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            s = rig.cpu_states()[cpu]
            self.assertTrue(hinted(s), s)
            self.assertEqual(s['requested'], RD_N2_NOMINAL, s)
            self.assertEqual(s['clamp_max'], 1024, s)
        self.assertIsNone(holder.poll(), 'cppcgovctl hint exited')
