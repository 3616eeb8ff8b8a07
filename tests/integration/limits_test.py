# SPDX-License-Identifier: Apache-2.0
"""The limits on clients: calls per second and handles per connection
(LimitsTest), and across all of one user's connections, so that one
user with 256 connections cannot starve root or another user
(UserLimitsTest).
"""

import os
import sys
import time

from daemon_case import DaemonTest
from rig import NOBODY, OTHER_USER


class LimitsTest(DaemonTest):

    def test_call_rate_limit(self):
        rig = self.make_rig(config='clients:\n  max_calls_per_second: 5\n')
        rig.start_daemon()
        client = rig.session()
        answered, limited, other = map(int, client.ask('burst 40'))
        print(f'\n  burst of 40 at 5 calls/s: {answered} answered, '
              f'{limited} refused', file=sys.stderr)
        self.assertEqual(other, 0)
        self.assertGreaterEqual(answered, 1)
        self.assertGreater(limited, 0)
        self.assertLess(answered, 40)
        # The error is the named one.
        self.assertCallError('org.cppcgov.Error.LimitExceeded', client.ask,
                             'clamp 0 0 0 1024')
        # Other connections are not limited by this one's calls.
        self.assertEqual(rig.handles(), [])
        # The bucket refills.
        time.sleep(1.2)
        client.clamp(0, 0, 1024)
        self.assertDaemonServes(rig)

    def test_handle_limit(self):
        rig = self.make_rig(config='clients:\n  max_handles: 2\n')
        rig.start_daemon()
        client = rig.session()
        first = client.clamp(0, 0, 512)
        client.latency_cpus(100, [1])
        self.assertCallError('org.cppcgov.Error.LimitExceeded', client.clamp,
                             0, 0, 512)
        self.assertCallError('org.cppcgov.Error.LimitExceeded',
                             client.latency_cpus, 100, [0])
        # Another client has its own allowance.
        other = rig.session()
        other.clamp(0, 0, 512)
        client.release(first)
        client.clamp(0, 0, 256)
        self.assertEqual(len(rig.handles()), 3)


class UserLimitsTest(DaemonTest):
    """Limits over all of one user's connections: one unprivileged user
    with 256 connections cannot take more than users.max_handles handles
    nor make more than users.max_calls_per_second calls, and root and
    other users still get theirs."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest('needs root (runs clients as other users)')

    def test_one_user_cannot_take_the_table(self):
        rig = self.make_rig(config='clients:\n'
                                   '  max_handles: 4\n'
                                   '  max_calls_per_second: 100000\n'
                                   'users:\n'
                                   '  max_handles: 32\n'
                                   '  max_calls_per_second: 100000\n')
        rig.start_daemon()
        hog = rig.session(user=NOBODY)
        hog.ask('connect 256')
        held, limited, other = map(int, hog.ask('each-clamp 0 0 512',
                                                timeout=120))
        print(f'\n  256 connections of one user: {held} handles held, '
              f'{limited} refused', file=sys.stderr)
        self.assertEqual(other, 0)
        self.assertEqual(held, 32)
        self.assertEqual(limited, 256)
        self.assertEqual(len(rig.handles()), 32)
        # Root and another user are not starved.
        rig.session().clamp(0, 0, 256)
        rig.session(user=OTHER_USER).clamp(0, 0, 256)
        self.assertEqual(len(rig.handles()), 34)

    def test_one_user_cannot_take_every_call(self):
        rig = self.make_rig(config='clients:\n'
                                   '  max_calls_per_second: 100000\n'
                                   'users:\n'
                                   '  max_calls_per_second: 20\n')
        rig.start_daemon()
        hog = rig.session(user=NOBODY)
        hog.ask('connect 256')
        # The first call of a connection, a read too, asks who it is; from
        # then on its calls count against its user.
        hog.ask('each-list', timeout=120)
        self.assertMostRefused(hog.ask('each-list', timeout=120), 128,
                               'one call on each of 256 connections of one '
                               'user at 20 calls/s')
        # Another user has its own.
        self.assertEqual(rig.session(user=OTHER_USER).ask('burst 5'),
                         ['5', '0', '0'])
