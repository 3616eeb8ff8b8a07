# SPDX-License-Identifier: Apache-2.0
"""Permissions and trust, as root running clients as other users: what
an unprivileged client may and may not do, group membership taken from
the caller's own credentials (PermissionsTest), and a NameOwnerChanged
forged by another connection, unicast or broadcast on a bus with the
distribution's system policy, that ends no handle and resets no limit
(BusDriverTrustTest).
"""

import os
import unittest

from daemon_case import DaemonTest
from rig import NOBODY, SystemPolicyRig


@unittest.skipUnless(os.geteuid() == 0, 'needs root to run a client as '
                     'another user')
class PermissionsTest(DaemonTest):

    def test_unprivileged_client(self):
        rig = self.make_rig()
        rig.start_daemon()
        nobody = rig.session(user=NOBODY)
        nobody.name()
        root_task = rig.busy_child()
        own_task = rig.busy_child(user=NOBODY)

        denied = 'org.cppcgov.Error.NotPermitted'
        self.assertCallError(denied, nobody.latency_cpus, 0, [0])
        self.assertCallError(denied, nobody.latency, 0, 0)
        message = self.assertCallError(denied, nobody.clamp, root_task.pid,
                                       0, 512)
        self.assertIn(f'process {root_task.pid} belongs to another user',
                      message)
        self.assertCallError(denied, nobody.ask, 'reload')
        message = self.assertCallError(denied, nobody.prefer, root_task.pid,
                                       'performance')
        self.assertIn(f'process {root_task.pid} belongs to another user',
                      message)
        self.assertCallError(denied, nobody.prefer_cpus, 'efficiency', [0])
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(rig.handles(), [])
        # Its own task: allowed, as a clamp is.
        preferred = nobody.prefer(own_task.pid, 'efficiency')
        self.assertIn(preferred, rig.handle_ids())
        nobody.release(preferred)

        mine = nobody.clamp(own_task.pid, 0, 512)
        itself = nobody.clamp(0, 0, 256)
        listed = {h['handle']: h['pid'] for h in rig.handles()}
        self.assertEqual(listed, {mine: own_task.pid, itself: nobody.pid()})
        # Reading is open to all.
        nobody.ask('burst 1')

    def test_group_membership_is_the_callers_own(self):
        # permissions.group is the test's primary group. A process of user
        # nobody that holds it as a supplementary group is a member, as the
        # bus driver reports its groups, whatever the user database says of
        # nobody; the same user without it is not.
        rig = self.make_rig()
        rig.start_daemon()
        member = rig.session(user=NOBODY, groups=(os.getgid(),))
        member.latency_cpus(100, [0])
        other = rig.session(user=NOBODY)
        self.assertCallError('org.cppcgov.Error.NotPermitted',
                             other.latency_cpus, 100, [0])


class BusDriverTrustTest(DaemonTest):
    """Only the bus driver says who left the bus: a NameOwnerChanged forged
    by another connection, sent to the daemon or to all, changes nothing.
    Runs on a bus with the distribution's system policy and the shipped
    policy file, the attacker as user nobody."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest('needs root (runs a client as user nobody)')
        if not os.path.exists(SystemPolicyRig.SYSTEM_CONF):
            self.skipTest(f'no {SystemPolicyRig.SYSTEM_CONF}')

    def test_forged_name_owner_changed_ends_nothing(self):
        self.rig = rig = SystemPolicyRig(self)
        rig.start_daemon()
        owner = rig.session()
        name = owner.name()
        clamp = owner.clamp(0, 0, 512)
        latency = owner.latency_cpus(100, [1])
        written = rig.latency_file(1)
        self.assertNotEqual(written, rig.originals[1])
        attacker = rig.session(user=NOBODY)
        mine = attacker.clamp(rig.busy_child(user=NOBODY).pid, 0, 256)
        for victim in (name, attacker.name()):
            for mode in ('unicast', 'broadcast'):
                attacker.ask(f'spoof {victim} {mode}')
        self.assertEqual(rig.handle_ids(), {clamp, latency, mine})
        self.assertEqual(rig.latency_file(1), written)
        # The daemon still ends a client's handles when it does leave.
        attacker_name = attacker.name()
        attacker.kill()
        self.assertEqual(owner.wait_ended(mine, 5.0)[1:3],
                         (attacker_name, 'client-left'))
        self.assertEqual(rig.handle_ids(), {clamp, latency})

    def test_forged_name_owner_changed_keeps_the_rate_limit(self):
        self.rig = rig = SystemPolicyRig(
            self, config='clients:\n  max_calls_per_second: 1\n')
        rig.start_daemon()
        attacker = rig.session(user=NOBODY)
        self.assertMostRefused(attacker.ask('spoof-burst 40'), 10,
                               '40 calls at 1 call/s, each after a forged '
                               'NameOwnerChanged')
