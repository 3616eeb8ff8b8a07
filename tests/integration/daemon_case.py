# SPDX-License-Identifier: Apache-2.0
"""DaemonTest, the base of every integration case: it prints the daemon's
log when a case fails, makes the case's Rig, and holds the assertions the
cases share (a named D-Bus error, a tally of calls refused for a limit,
how soon a handle ended after a kill, a restore that leaves a state file
and a start that refuses over it) and the waits (a CPU's requested
performance).
"""

import os
import re
import subprocess
import sys
import unittest

from kernel_rig import Unwritable, can_mount_privately, tree_snapshot
from rig import (HANDLE_GONE_LIMIT, START_TIMEOUT, CallError, Rig,
                 state_files, wait_until)


class DaemonTest(unittest.TestCase):
    """Base: prints the daemon's log when a case fails."""

    rig = None

    def run(self, result=None):
        result = result if result is not None else self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        super().run(result)
        if len(result.failures) + len(result.errors) > before and self.rig:
            sys.stderr.write(f'\n--- cppcgovd log of {self.id()} ---\n'
                             f'{self.rig.daemon_log}--- end of log ---\n')
        return result

    def make_rig(self, **kwargs):
        self.rig = Rig(self, **kwargs)
        return self.rig

    def assertCallError(self, name, call, *args):
        """Asserts that call(*args) raises CallError `name`; returns its
        message."""
        with self.assertRaises(CallError) as caught:
            call(*args)
        self.assertEqual(caught.exception.name, name, caught.exception.message)
        return caught.exception.message

    def assertMostRefused(self, tally, most, what):
        """Asserts that a session_client tally (answered, limit-exceeded,
        other errors) has fewer than `most` calls answered and the rest
        refused for a limit; prints it as `what`."""
        answered, limited, other = map(int, tally)
        print(f'\n  {what}: {answered} answered, {limited} refused',
              file=sys.stderr)
        self.assertEqual(other, 0)
        self.assertLess(answered, most)
        self.assertGreater(limited, 0)

    def assertEndedSoon(self, what, ended):
        """Prints how long after a kill the handle ended, and asserts that
        the daemon took at most HANDLE_GONE_LIMIT from the killed process's
        exit (from the kill when the exit was not seen)."""
        us, _, _, exit_us = ended
        print(f'\n  {what}: exited {exit_us / 1000:.1f} ms after the kill, '
              f'HandleEnded after {us / 1000:.1f} ms', file=sys.stderr)
        self.assertLess(us - max(exit_us, 0), HANDLE_GONE_LIMIT * 1e6)

    def unwritable_ways(self):
        """The ways of Unwritable this process can use."""
        return [how for how in Unwritable.HOW
                if how != 'read-only mount' or can_mount_privately()]

    def run_daemon(self, rig, *extra, wrap=None):
        """Runs cppcgovd to its end (--restore-only, or a start that must
        refuse), through `wrap` when given; returns the completed
        process."""
        command = rig.daemon_command(*extra)
        try:
            return subprocess.run(wrap(command) if wrap else command,
                                  capture_output=True, text=True,
                                  timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail(f'cppcgovd {" ".join(extra)} still runs after '
                      f'{START_TIMEOUT} s')

    def assertLeftAndRefused(self, rig, broken, state, left):
        """With `broken` (an Unwritable) in the way: --restore-only exits 1
        naming the file, the step and the error, and leaves the state file
        `state` holding exactly `left`; a normal start refuses with a
        message saying what is left and how to fix it, and changes
        nothing."""
        path = os.path.join(rig.state, state)
        r = self.run_daemon(rig, '--restore-only', wrap=broken.wrap)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertTrue(os.path.exists(path), f'{state} is gone')
        with open(path) as f:
            self.assertEqual(f.read(), left)
        self.assertEqual(state_files(rig.state), [state])
        self.assertRegex(r.stderr, f"writing the saved value '[^']*' to "
                         f"'{re.escape(broken.path)}' failed: "
                         f"{Unwritable.ERROR[broken.how]}")
        self.assertIn(f"'{path}' now holds what is not back", r.stderr)
        self.assertIn("a previous run's changes are not all put back",
                      r.stderr)

        sys_tree = os.path.join(rig.root, 'sys')
        before = tree_snapshot(sys_tree)
        r = self.run_daemon(rig, wrap=broken.wrap)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn('not starting over what a previous run left changed',
                      r.stderr)
        self.assertIn(f"the saved values of '{broken.path}' are not back",
                      r.stderr)
        self.assertIn(f"'{path}' holds what a restore must still put back",
                      r.stderr)
        self.assertIn("run 'cppcgovd --restore-only'", r.stderr)
        self.assertEqual(tree_snapshot(sys_tree), before)
        with open(path) as f:
            self.assertEqual(f.read(), left)

    def assertDaemonServes(self, rig):
        self.assertIsNone(rig.daemon.poll(), 'cppcgovd exited')
        self.assertTrue(rig.prop('Backend').startswith('simulator:'))

    def wait_requested(self, rig, cpu, perf, timeout):
        """Seconds until the requested perf of `cpu` is `perf` (None when
        `timeout` passes first), and the last states read."""
        last = {}

        def reached():
            last['states'] = rig.cpu_states()
            return last['states'][cpu]['requested'] == perf

        _, elapsed = wait_until(reached, timeout)
        ok = last['states'][cpu]['requested'] == perf
        return (elapsed if ok else None), last['states']
