#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pccfs's own tests (tests/pccfs): the tree answers like cppc_cpufreq's
sysfs, a PCC access is never faster than the model says (only lower
bounds on time: a loaded machine may always be slower), concurrent writes
share doorbells, a read is a doorbell of its own and waits for a batch,
hang holds an access until release (or until its process dies), fail
answers EIO, the counters follow the set speed, and a stop with an access
held still answers it and unmounts.

Usage: pccfs_test.py [unittest options and test names], with the binary
in CPPCGOV_PCCFS (meson sets it). Exits 77 (skipped) when pccfs cannot
run here: not built, no /dev/fuse, or not root.
"""

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.dont_write_bytecode = True

from pcc_fs import PccFs, unavailable  # noqa: E402

JOIN_TIMEOUT = 10.0


class Access(threading.Thread):
    """One pwrite (data given) or pread of `path` at offset 0 in a thread
    of its own; records when it started and ended and what it got."""

    def __init__(self, path, data=None):
        super().__init__(daemon=True)
        self.path = path
        self.data = data
        self.error = None
        self.result = None
        self.started_at = None
        self.ended_at = None

    def run(self):
        fd = os.open(self.path, os.O_RDONLY if self.data is None
                     else os.O_WRONLY)
        try:
            self.started_at = time.monotonic()
            if self.data is None:
                self.result = os.pread(fd, 4096, 0)
            else:
                self.result = os.pwrite(fd, self.data, 0)
        except OSError as e:
            self.error = e
        finally:
            self.ended_at = time.monotonic()
            os.close(fd)

    def finish(self):
        self.join(JOIN_TIMEOUT)
        if self.is_alive():
            raise AssertionError(f'the access to {self.path!r} has not '
                                 f'returned after {JOIN_TIMEOUT} s')
        return self


class PccFsTest(unittest.TestCase):

    def start(self, cpus=4, latency_us=100, turnaround_us=110, **kwargs):
        tmp = tempfile.mkdtemp(prefix='pccfs-test-')
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        mountpoint = os.path.join(tmp, 'sys')
        os.mkdir(mountpoint)
        fs = PccFs(mountpoint, cpus, latency_us=latency_us,
                   turnaround_us=turnaround_us, **kwargs)
        self.addCleanup(fs.stop)
        return fs

    def cost(self, fs):
        """One doorbell, in seconds."""
        return max(fs.latency_us, fs.turnaround_us) / 1e6

    def write(self, fs, policy, name, text):
        fd = os.open(fs.policy_path(policy, name), os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def read(self, path):
        with open(path) as f:
            return f.read()

    def userspace(self, fs, *policies):
        for n in policies:
            self.write(fs, n, 'scaling_governor', 'userspace\n')

    def counters(self, fs, cpu):
        text = self.read(fs.cpu_path(cpu, 'acpi_cppc/feedback_ctrs'))
        ref, dele = text.split()
        self.assertTrue(ref.startswith('ref:') and dele.startswith('del:'),
                        text)
        return int(ref[4:]), int(dele[4:])

    def test_the_tree_answers_like_cppc_cpufreq(self):
        fs = self.start(cpus=4, cpus_per_policy=2, latency_us=0,
                        turnaround_us=0)
        cppc = {name: self.read(fs.cpu_path(3, f'acpi_cppc/{name}'))
                for name in ('highest_perf', 'nominal_perf',
                             'lowest_nonlinear_perf', 'lowest_perf',
                             'reference_perf', 'lowest_freq', 'nominal_freq')}
        self.assertEqual(cppc, {'highest_perf': '300\n',
                                'nominal_perf': '250\n',
                                'lowest_nonlinear_perf': '100\n',
                                'lowest_perf': '50\n',
                                'reference_perf': '250\n',
                                'lowest_freq': '500\n',
                                'nominal_freq': '2500\n'})
        self.assertEqual(os.readlink(fs.cpu_path(3, 'cpufreq')),
                         '../cpufreq/policy2')
        self.assertEqual(self.read(fs.policy_path(2, 'related_cpus')),
                         '2 3\n')
        self.assertEqual(self.read(fs.policy_path(2, 'scaling_setspeed')),
                         '<unsupported>\n')
        # Set speed only under userspace, governors only those listed.
        with self.assertRaises(OSError) as caught:
            self.write(fs, 2, 'scaling_setspeed', '1000000\n')
        self.assertEqual(caught.exception.errno, errno.EINVAL)
        with self.assertRaises(OSError) as caught:
            self.write(fs, 2, 'scaling_governor', 'turbo\n')
        self.assertEqual(caught.exception.errno, errno.EINVAL)
        self.userspace(fs, 2)
        # Clamped into the limits, the limits into cpuinfo's range.
        for written, shown in (('1200000', '1200000'), ('9999999', '2500000'),
                               ('1', '500000')):
            self.write(fs, 2, 'scaling_setspeed', written + '\n')
            self.assertEqual(self.read(fs.policy_path(2, 'scaling_setspeed')),
                             shown + '\n')
        self.write(fs, 2, 'scaling_max_freq', '9000000\n')
        self.assertEqual(self.read(fs.policy_path(2, 'scaling_max_freq')),
                         '2500000\n')
        self.write(fs, 2, 'scaling_max_freq', '2000000\n')
        self.write(fs, 2, 'scaling_setspeed', '2400000\n')
        self.assertEqual(fs.stats()['policy2.setspeed_khz'], 2000000)
        self.assertEqual(fs.stats()['policy2.governor'], 'userspace')
        # Read-only files refuse a writer as kernfs does.
        with self.assertRaises(OSError) as caught:
            os.open(fs.policy_path(2, 'cpuinfo_max_freq'), os.O_WRONLY)
        self.assertEqual(caught.exception.errno, errno.EACCES)

    def test_a_lone_write_costs_a_doorbell(self):
        fs = self.start(latency_us=3000, turnaround_us=2000)
        self.userspace(fs, 1)
        access = Access(fs.policy_path(1, 'scaling_setspeed'), b'1200000\n')
        access.start()
        access.finish()
        self.assertIsNone(access.error)
        self.assertGreaterEqual(access.ended_at - access.started_at,
                                self.cost(fs))
        stats = fs.stats()
        self.assertEqual((stats['write_doorbells'], stats['writes'],
                          stats['policy1.writes'],
                          stats['policy1.setspeed_khz']),
                         (1, 1, 1, 1200000))

    def test_concurrent_writes_share_doorbells(self):
        # A turnaround long enough that threads started together on a busy
        # machine still arrive within it.
        cpus = 8
        fs = self.start(cpus=cpus, latency_us=1000, turnaround_us=200000)
        self.userspace(fs, *range(cpus))
        before = fs.stats()
        accesses = [Access(fs.policy_path(n, 'scaling_setspeed'),
                           f'{(n + 6) * 100000}\n'.encode())
                    for n in range(cpus)]
        for a in accesses:
            a.start()
        for a in accesses:
            self.assertIsNone(a.finish().error)
        stats = fs.stats()
        doorbells = stats['write_doorbells'] - before['write_doorbells']
        writes = stats['writes'] - before['writes']
        print(f'\n  {writes} concurrent writes in {doorbells} doorbells',
              file=sys.stderr)
        self.assertEqual(writes, cpus)
        self.assertLess(doorbells, writes)
        for n in range(cpus):
            self.assertEqual(stats[f'policy{n}.setspeed_khz'],
                             (n + 6) * 100000)

    def test_a_read_is_a_doorbell_of_its_own(self):
        fs = self.start(latency_us=20000, turnaround_us=10000)
        cost = self.cost(fs)
        fd = os.open(fs.cpu_path(2, 'acpi_cppc/feedback_ctrs'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        before = fs.stats()['read_doorbells']
        for _ in range(3):
            start = time.monotonic()
            self.assertTrue(os.pread(fd, 64, 0).startswith(b'ref:'))
            self.assertGreaterEqual(time.monotonic() - start, cost)
        self.assertEqual(fs.stats()['read_doorbells'] - before, 3)

        # A read waits for the batch scheduled before it, and a write for
        # the read before it. The first access is held, then released:
        # "release" schedules it before its write returns, so the second
        # one surely arrives after it, however loaded the machine.
        self.userspace(fs, 1)
        for first, second, cpu in (
                (Access(fs.policy_path(1, 'scaling_setspeed'), b'1300000\n'),
                 Access(fs.cpu_path(2, 'acpi_cppc/feedback_ctrs')), 1),
                (Access(fs.cpu_path(2, 'acpi_cppc/feedback_ctrs')),
                 Access(fs.policy_path(1, 'scaling_setspeed'), b'1400000\n'),
                 2)):
            fs.control(f'hang {cpu}')
            first.start()
            fs.wait_stat('held', lambda n: n == 1)
            released = time.monotonic()
            fs.control(f'release {cpu}')
            second.start()
            second.finish()
            self.assertIsNone(first.finish().error)
            self.assertIsNone(second.error)
            self.assertGreaterEqual(second.ended_at - released, 2 * cost)
        self.assertEqual(fs.stats()['policy1.setspeed_khz'], 1400000)

    def test_hang_holds_an_access_until_release(self):
        fs = self.start()
        self.userspace(fs, 1, 2)
        held = Access(fs.policy_path(1, 'scaling_setspeed'), b'1100000\n')
        fs.control('hang 1')
        held.start()
        stats = fs.wait_stat('held', lambda n: n == 1)
        self.assertTrue(held.is_alive())
        self.assertEqual(stats['policy1.writes'], 0)
        # Other CPUs go on.
        self.write(fs, 2, 'scaling_setspeed', '1700000\n')
        self.assertEqual(fs.stats()['policy2.setspeed_khz'], 1700000)
        fs.control('release 1')
        self.assertIsNone(held.finish().error)
        stats = fs.stats()
        self.assertEqual((stats['held'], stats['policy1.setspeed_khz']),
                         (0, 1100000))

    def test_a_held_access_of_a_killed_process_is_answered(self):
        fs = self.start()
        self.userspace(fs, 3)
        fs.control('hang 3')
        writer = subprocess.Popen(
            [sys.executable, '-c',
             'import sys; open(sys.argv[1], "w").write("1000000\\n")',
             fs.policy_path(3, 'scaling_setspeed')])
        self.addCleanup(writer.wait)
        fs.wait_stat('held', lambda n: n == 1)
        writer.kill()
        # The kernel interrupts the request; the rig answers it, so the
        # process can die.
        writer.wait(JOIN_TIMEOUT)
        stats = fs.stats()
        self.assertEqual((stats['held'], stats['interrupted'],
                          stats['policy3.writes']), (0, 1, 0))

    def test_fail_answers_eio_until_cleared(self):
        fs = self.start(latency_us=2000, turnaround_us=2000)
        self.userspace(fs, 1, 2)
        fs.control('fail 1')
        write = Access(fs.policy_path(1, 'scaling_setspeed'), b'1200000\n')
        write.start()
        write.finish()
        self.assertEqual(getattr(write.error, 'errno', None), errno.EIO)
        self.assertGreaterEqual(write.ended_at - write.started_at,
                                self.cost(fs))
        with self.assertRaises(OSError) as caught:
            self.read(fs.cpu_path(1, 'acpi_cppc/feedback_ctrs'))
        self.assertEqual(caught.exception.errno, errno.EIO)
        self.write(fs, 2, 'scaling_setspeed', '1200000\n')
        fs.control('clear 1')
        self.write(fs, 1, 'scaling_setspeed', '1300000\n')
        stats = fs.stats()
        self.assertEqual((stats['policy1.setspeed_khz'],
                          stats['policy2.setspeed_khz'], stats['failed']),
                         (1300000, 1200000, 2))
        # Unknown commands and CPUs are refused.
        for bad in ('hang', 'hang 4', 'stall 1', 'fail -1'):
            with self.assertRaises(OSError, msg=bad) as caught:
                fs.control(bad)
            self.assertEqual(caught.exception.errno, errno.EINVAL)

    def test_the_counters_follow_the_set_speed(self):
        fs = self.start()
        self.userspace(fs, 2)
        for khz in (1000000, 2500000, 1500000, 500000):
            self.write(fs, 2, 'scaling_setspeed', f'{khz}\n')
            ref0, del0 = self.counters(fs, 2)
            # At least 10 ms of reference counts (100 per us).
            while True:
                ref1, del1 = self.counters(fs, 2)
                if ref1 - ref0 >= 1000000:
                    break
            ratio = (del1 - del0) / (ref1 - ref0)
            self.assertAlmostEqual(ratio, khz / 2500000, delta=0.001,
                                   msg=f'{khz} kHz')

    def test_a_stop_with_an_access_held_answers_it_and_unmounts(self):
        fs = self.start()
        self.userspace(fs, 1)
        fs.control('hang 1')
        held = Access(fs.policy_path(1, 'scaling_setspeed'), b'1100000\n')
        held.start()
        fs.wait_stat('held', lambda n: n == 1)
        self.assertTrue(fs.stop(), fs.log())
        self.assertFalse(os.path.ismount(fs.mountpoint))
        self.assertIsNotNone(held.finish().error)


def main():
    why = unavailable()
    if why:
        print(f'pccfs_test.py: skipped: {why}', file=sys.stderr)
        return 77
    program = unittest.main(argv=sys.argv, exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
