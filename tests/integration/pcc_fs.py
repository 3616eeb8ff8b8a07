# SPDX-License-Identifier: Apache-2.0
"""pccfs (tests/pccfs) from Python, and the daemon's rig on it.

PccFs starts the pccfs binary on a mount point, waits until it is mounted
(it writes "ready" to the pipe passed as --ready-fd), sends control
commands (control()), reads its statistics (stats()), and stops it
(stop()): SIGTERM, which makes pccfs answer whatever it still holds and
unmount; when that does not end it in time, SIGKILL, then a lazy unmount
of what is left. PccRig is a KernelRig whose <root>/sys is served by
pccfs instead of plain files: every access to the kernel backend's files
costs what a PCC mailbox costs, and a CPU's accesses can be held or made
to fail.

The binary is the one the build made: CPPCGOV_PCCFS in the environment
(meson sets it), else tests/pccfs/pccfs under CPPCGOV_BUILD_DIR.
unavailable() says why pccfs cannot run here, for the skips.
"""

import grp
import os
import select
import signal
import subprocess
import time

from kernel_rig import KernelRig, kernel_cpus
from rig import START_TIMEOUT, Rig

# How long a stop may take before the kill and the lazy unmount.
STOP_TIMEOUT = 5.0


def pccfs_binary():
    binary = os.environ.get('CPPCGOV_PCCFS', '')
    if not binary and os.environ.get('CPPCGOV_BUILD_DIR'):
        binary = os.path.join(os.environ['CPPCGOV_BUILD_DIR'],
                              'tests/pccfs/pccfs')
    return binary


def unavailable():
    """Why pccfs cannot run here (None when it can)."""
    binary = pccfs_binary()
    if not binary or not os.access(binary, os.X_OK):
        return ('pccfs was not built (libfuse3-dev missing when the build '
                'was configured?)')
    if not os.path.exists('/dev/fuse'):
        return '/dev/fuse does not exist'
    if os.geteuid() != 0:
        return 'pccfs mounts with mount(2), which needs root'
    return None


def parse_stats(text):
    """pccfs/stats' "key value" lines as a dict, numbers as ints."""
    stats = {}
    for line in text.splitlines():
        key, _, value = line.partition(' ')
        stats[key] = int(value) if value.isdigit() else value
    return stats


class PccFs:
    """One pccfs process serving `cpus` CPUs on `mountpoint` (an existing,
    empty directory) until stop()."""

    def __init__(self, mountpoint, cpus, cpus_per_policy=1, latency_us=100,
                 turnaround_us=110):
        self.mountpoint = mountpoint
        self.cpus = cpus
        self.cpus_per_policy = cpus_per_policy
        self.latency_us = latency_us
        self.turnaround_us = turnaround_us
        self.stopped_cleanly = None
        self.stderr_path = mountpoint.rstrip('/') + '.pccfs.log'
        read_end, write_end = os.pipe()
        try:
            with open(self.stderr_path, 'wb') as err:
                # SIGTERM when the test process dies: pccfs then unmounts.
                self.proc = subprocess.Popen(
                    ['setpriv', '--pdeathsig', 'TERM', '--', pccfs_binary(),
                     '--cpus', str(cpus),
                     '--cpus-per-policy', str(cpus_per_policy),
                     '--latency-us', str(latency_us),
                     '--turnaround-us', str(turnaround_us),
                     '--ready-fd', str(write_end), mountpoint],
                    pass_fds=(write_end,), stdin=subprocess.DEVNULL,
                    stdout=err, stderr=err)
            os.close(write_end)
            write_end = -1
            self._wait_ready(read_end)
        finally:
            if write_end >= 0:
                os.close(write_end)
            os.close(read_end)

    def _wait_ready(self, read_end):
        ready, _, _ = select.select([read_end], [], [], START_TIMEOUT)
        line = os.read(read_end, 64) if ready else b''
        if line != b'ready\n' or not os.path.ismount(self.mountpoint):
            self.stop()
            raise AssertionError(
                f'pccfs did not mount {self.mountpoint!r} within '
                f'{START_TIMEOUT} s:\n{self.log()}')

    def log(self):
        try:
            with open(self.stderr_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def path(self, relative):
        return os.path.join(self.mountpoint, relative)

    def policy_path(self, number, name):
        return self.path(f'devices/system/cpu/cpufreq/policy{number}/{name}')

    def cpu_path(self, cpu, name):
        return self.path(f'devices/system/cpu/cpu{cpu}/{name}')

    def control(self, command):
        """Sends one command ("hang 3", "clear", ...) in one write."""
        fd = os.open(self.path('pccfs/control'), os.O_WRONLY)
        try:
            os.write(fd, command.encode() + b'\n')
        finally:
            os.close(fd)

    def stats(self):
        with open(self.path('pccfs/stats')) as f:
            return parse_stats(f.read())

    def wait_stat(self, key, predicate, timeout=START_TIMEOUT):
        """Waits until predicate(stats()[key]); returns the last stats
        read, or raises AssertionError when `timeout` passes first."""
        deadline = time.monotonic() + timeout
        while True:
            stats = self.stats()
            if predicate(stats[key]):
                return stats
            if time.monotonic() > deadline:
                raise AssertionError(f'pccfs stat {key} is {stats[key]} '
                                     f'after {timeout} s')
            time.sleep(0.005)

    def stop(self):
        """Stops pccfs; returns True when it went on SIGTERM and left
        nothing mounted, False when it had to be killed or unmounted."""
        if self.stopped_cleanly is not None:
            return self.stopped_cleanly
        clean = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                clean = False
                self.proc.kill()
                self.proc.wait()
        clean = clean and self.proc.returncode == 0
        if os.path.ismount(self.mountpoint):
            clean = False
            subprocess.run(['umount', '--lazy', self.mountpoint],
                           capture_output=True)
        self.stopped_cleanly = clean
        return clean


class PccRig(KernelRig):
    """A KernelRig whose <root>/sys is pccfs's: cpufreq policies of
    `cpus_per_policy` CPUs (policyM named after its first CPU), every one
    under schedutil over its whole range before the daemon starts, and a
    proc/stat that advances like KernelRig's. close() stops the daemon and
    the other children before pccfs, then pccfs, then the rest. `access`
    is the policy file's backend.access settings ({name: value}), when
    given."""

    def __init__(self, case, cpus=None, cpus_per_policy=1, latency_us=100,
                 turnaround_us=110, access=None):
        cpus = cpus if cpus is not None else kernel_cpus()
        self.pcc_options = dict(cpus_per_policy=cpus_per_policy,
                                latency_us=latency_us,
                                turnaround_us=turnaround_us)
        self.pccfs = None
        self.access = access or {}
        self.policies = {first: list(range(first,
                                           min(first + cpus_per_policy,
                                               cpus)))
                         for first in range(0, cpus, cpus_per_policy)}
        Rig.__init__(self, case, cpus=cpus, proc_stat_cpus=cpus)
        self.sys = os.path.join(self.root, 'sys')

    def _make_root(self):
        sys_dir = os.path.join(self.root, 'sys')
        os.makedirs(sys_dir)
        self.pccfs = PccFs(sys_dir, self.cpus, **self.pcc_options)
        return {cpu: b'0\n' for cpu in range(self.cpus)}

    def write_config(self, extra):
        group = grp.getgrgid(os.getgid()).gr_name
        access = ''.join(f'    {name}: {value}\n'
                         for name, value in self.access.items())
        self.write_text(self.config, 'backend:\n'
                        '  type: auto\n'
                        + ('  access:\n' + access if access else '') +
                        'permissions:\n'
                        f'  group: {group}\n' + extra)

    def expected_khz(self, number, khz):
        """`khz` clamped into policy `number`'s limits now, from the rig's
        stats: they answer even while the policy's files are held or
        fail."""
        stats = self.pccfs.stats()
        return min(max(khz, stats[f'policy{number}.min_khz']),
                   stats[f'policy{number}.max_khz'])

    def close(self):
        if self.pccfs is not None:
            for proc in self.children:
                if proc.poll() is None:
                    proc.kill()
            for proc in self.children:
                try:
                    proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pass
            self.pccfs.stop()
        super().close()
