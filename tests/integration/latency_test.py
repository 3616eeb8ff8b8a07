# SPDX-License-Identifier: Apache-2.0
"""Resume-latency requests: for CPU sets and for tasks, what the files
hold while they run and after, a failed write-back logged at once, a
second instance that undoes nothing, SIGTERM and crash restore, and a
crash restore where one file refuses the write back (LatencyRestoreTest:
the state file keeps exactly what is not back, a start refuses over it,
and once the file is fixed --restore-only finishes the job).
"""

import os
import signal
import subprocess

from daemon_case import DaemonTest
from kernel_rig import Unwritable
from rig import SETTLE_TIMEOUT, host_cpu, state_files, wait_until


class LatencyTest(DaemonTest):

    def test_latency_requests(self):
        rig = self.make_rig()
        rig.start_daemon()
        a = rig.session()
        b = rig.session()
        ha = a.latency_cpus(0, [0])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        self.assertEqual(rig.cpu_states()[0]['latency'], 0)
        hb = b.latency_cpus(50, [0])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        self.assertEqual(rig.prop('LatencyCount'), 2)
        kinds = {h['handle']: (h['kind'], h['pid'], h['latency'], h['min'],
                               h['max'])
                 for h in rig.handles()}
        # A latency request clamps nothing: its utilMin and utilMax are 0.
        self.assertEqual(kinds, {ha: ('latency', 0, 0, 0, 0),
                                 hb: ('latency', 0, 50, 0, 0)})
        # The other CPUs are untouched.
        for cpu in range(1, rig.cpus):
            self.assertEqual(rig.latency_file(cpu), rig.originals[cpu])

        a.kill()
        self.assertEqual(b.wait_ended(ha, 10)[2], 'client-left')
        self.assertEqual(rig.latency_file(0), b'50\n')
        self.assertEqual(rig.cpu_states()[0]['latency'], 50)
        b.kill()
        self.assertTrue(wait_until(lambda: hb not in rig.handle_ids(),
                                   SETTLE_TIMEOUT)[0])
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertEqual(rig.cpu_states()[0]['latency'], -1)

    def test_failed_write_back_is_logged_at_once(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        handle = client.latency_cpus(100, [1])
        path = os.path.join(rig.root, 'sys/devices/system/cpu/cpu1/power',
                            'pm_qos_resume_latency_us')
        # A directory where the file was: writing the value back fails.
        os.rename(path, path + '.away')
        os.mkdir(path)
        client.release(handle)
        # Logged before the reply, naming the CPU and the file.
        lines = [line for line in rig.read_log().splitlines()
                 if f'latency handle {handle}' in line]
        self.assertEqual(len(lines), 1, rig.read_log())
        self.assertIn('cpu1', lines[0])
        self.assertIn(path, lines[0])
        # Stopping tries again, and succeeds once the file is back.
        os.rmdir(path)
        os.rename(path + '.away', path)
        self.assertEqual(rig.stop_daemon(), 0, rig.read_log())
        self.assertEqual(rig.latency_files(), rig.originals)

    def test_latency_for_a_task_ends_with_it(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()  # its affinity: host_cpu() alone
        client = rig.session()
        handle = client.latency(child.pid, 20)
        self.assertEqual(rig.latency_file(cpu), b'20\n')
        for other in range(rig.cpus):
            if other != cpu:
                self.assertEqual(rig.latency_file(other),
                                 rig.originals[other])
        client.ask(f'kill {child.pid} {int(signal.SIGKILL)}')
        self.assertEqual(client.wait_ended(handle, 10)[2], 'task-exited')
        self.assertEqual(rig.latency_files(), rig.originals)

    def test_sigterm_restores_latency_files(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        client.latency_cpus(0, [0, 2])
        client.latency_cpus(75, [1])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        self.assertEqual(rig.latency_file(1), b'75\n')
        self.assertEqual(rig.latency_file(2), b'n/a\n')
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(state_files(rig.state), [])

    def test_second_instance_does_not_undo_the_first(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        client.latency_cpus(0, [0])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        for extra in (('--restore-only',), ()):
            r = subprocess.run(rig.daemon_command(*extra),
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn('another cppcgovd holds', r.stderr)
            self.assertEqual(rig.latency_file(0), b'n/a\n')
            self.assertNotEqual(state_files(rig.state), [])
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertEqual(rig.latency_files(), rig.originals)

    def test_crash_restore(self):
        rig = self.make_rig()
        rig.start_daemon()
        client = rig.session()
        client.latency_cpus(0, [0, 2])
        self.assertEqual(rig.latency_file(2), b'n/a\n')
        rig.stop_daemon(signal.SIGKILL)
        client.kill()
        self.assertEqual(rig.latency_file(2), b'n/a\n')
        self.assertNotEqual(state_files(rig.state), [])

        r = subprocess.run(rig.daemon_command('--restore-only'),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(state_files(rig.state), [])
        # Nothing left to do: a second run is a no-op.
        r = subprocess.run(rig.daemon_command('--restore-only'),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(rig.latency_files(), rig.originals)

        # A normal start after a crash puts the files back before it
        # serves.
        rig.start_daemon()
        client = rig.session()
        client.latency_cpus(10, [1, 3])
        self.assertEqual(rig.latency_file(3), b'10\n')
        rig.stop_daemon(signal.SIGKILL)
        client.kill()
        self.assertEqual(rig.latency_file(3), b'10\n')
        rig.start_daemon()
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0)
        self.assertEqual(rig.latency_files(), rig.originals)


class LatencyRestoreTest(DaemonTest):
    """A crashed run's resume latencies when one file refuses the write
    back: the state file keeps exactly that CPU, the daemon does not start
    over it, and once the file is fixed --restore-only finishes the job."""

    def test_crash_with_an_unwritable_file(self):
        for how in self.unwritable_ways():
            with self.subTest(how):
                rig = self.make_rig()
                rig.start_daemon()
                client = rig.session()
                client.latency_cpus(0, [0, 1, 2])
                rig.stop_daemon(signal.SIGKILL)
                client.kill()
                broken = Unwritable(os.path.join(
                    rig.root, 'sys/devices/system/cpu/cpu2/power',
                    'pm_qos_resume_latency_us'), how)
                self.assertLeftAndRefused(
                    rig, broken, 'latency.state',
                    'cppcgov-latency-state 1\n'
                    f'cpu2 {rig.originals[2].decode().strip()}\n')
                self.assertEqual(rig.latency_file(0), rig.originals[0])
                self.assertEqual(rig.latency_file(1), rig.originals[1])

                broken.fix()
                r = self.run_daemon(rig, '--restore-only')
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn('restored the resume latencies', r.stderr)
                self.assertEqual(rig.latency_files(), rig.originals)
                self.assertEqual(state_files(rig.state), [])
                rig.start_daemon()
                self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0,
                                 rig.read_log())
                self.assertEqual(rig.latency_files(), rig.originals)
                rig.close()
