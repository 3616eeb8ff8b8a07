# SPDX-License-Identifier: Apache-2.0
"""bus_fuzz (tests/integration/bus_fuzz.cpp) let loose on the daemon: a
seeded random stream of good and bad calls, every one of which must be
answered, with the handles it holds checked at the end; with limits out
of the way and with the shipped ones.
"""

import os
import signal
import subprocess
import sys

from daemon_case import DaemonTest
from rig import BUS_FUZZ


class BusFuzzTest(DaemonTest):
    """bus_fuzz against the daemon: a random stream of well-formed and
    malformed calls (wrong signatures, paths, interfaces, made-up methods,
    boundary values, fds of every kind). Every call must get an answer
    within 5 s, the daemon must keep serving, the handles it lists must be
    the ones the client holds, and SIGTERM must still put everything back.
    The seed is printed; BUS_FUZZ_SEED=N repeats a run."""

    def fuzz(self, config, seconds):
        seed = int(os.environ.get('BUS_FUZZ_SEED',
                                  str(int.from_bytes(os.urandom(4), 'little'))))
        print(f'\n  bus_fuzz --seed {seed} --seconds {seconds}',
              file=sys.stderr)
        rig = self.make_rig(cpus=4, config=config)
        rig.start_daemon()
        r = subprocess.run([BUS_FUZZ, '--bus-address', rig.address,
                            '--seed', str(seed), '--seconds', str(seconds)],
                           capture_output=True, text=True,
                           timeout=seconds + 60)
        self.assertEqual(r.returncode, 0,
                         r.stdout + r.stderr + rig.read_log())
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertEqual(rig.latency_files(), rig.originals)

    def test_generous_limits(self):
        # Limits out of the way, so that most calls reach the handlers.
        self.fuzz('clients:\n'
                  '  max_handles: 4096\n'
                  '  max_calls_per_second: 100000\n', 8)

    def test_default_limits(self):
        # The shipped limits: most calls are refused for the rate.
        self.fuzz('', 2)
