# SPDX-License-Identifier: Apache-2.0
"""The kernel backend's rig, and the trees the restore cases compare and
break.

KernelRig is a Rig whose fake root is a machine the kernel backend
accepts: per-CPU acpi_cppc capabilities and feedback counters, cpufreq
policies driven by cppc_cpufreq (kernel_policies(), with the settings of
kernel_policy_settings(), and if asked the CPPC knobs of Linux 6.16 as
K_KNOBS), the resume-latency files and an advancing proc/stat. tree_snapshot() takes a whole tree for comparing before and
after, kernel_view() shows a snapshot as sysfs would. Unwritable makes
one file refuse the write back: a directory in its place, or, as root, a
read-only bind mount in a private mount namespace
(can_mount_privately()).
"""

import grp
import os
import shutil
import subprocess

from rig import SETTLE_TIMEOUT, Rig, host_cpu, wait_until

# --- the kernel backend on a fake sysfs tree ------------------------------
#
# Every CPU of the fake machine has the same CPPC capabilities, chosen so
# that cppc_cpufreq's conversion (the line through (lowest_perf,
# lowest_freq) and (nominal_perf, nominal_freq)) is perf x 10 000 kHz both
# ways: the kHz the daemon writes to scaling_setspeed for the floor
# (lowest_nonlinear) and the ceiling without boost (nominal) are exact.
K_HIGHEST = 300
K_NOMINAL = 250
K_LOWEST_NONLINEAR = 100
K_LOWEST = 50
K_LOWEST_MHZ = 500
K_NOMINAL_MHZ = 2500
K_FLOOR_KHZ = 1000000
K_NOMINAL_KHZ = 2500000
K_MIN_KHZ = 500000  # cpuinfo_min_freq: lowest_perf's kHz
K_GOVERNORS = 'conservative ondemand userspace powersave performance ' \
              'schedutil \n'


# The knobs of cppc_cpufreq (Linux 6.16) as firmware that starts in
# autonomous mode leaves them, for KernelRig(knobs=True).
K_KNOBS = (('auto_select', '1\n'), ('auto_act_window', '1000\n'),
           ('energy_performance_preference_val', '128\n'))


def kernel_cpus():
    """How many CPUs the fake kernel machine has: at least 4, and enough
    that every host CPU maps to one (the kernel backend's CPU n is host
    CPU n)."""
    return max(4, host_cpu() + 1)


def kernel_policies(cpus):
    """{policy number: [CPUs]}: policy0 covers CPUs 0 and 1 (a shared
    domain, where a clamp on CPU 1 must win over an idle CPU 0), policy2
    and policy3 one CPU each, further CPUs go in pairs."""
    groups = {0: [0, 1], 2: [2], 3: [3]}
    for first in range(4, cpus, 2):
        groups[first] = list(range(first, min(first + 2, cpus)))
    return groups


def kernel_policy_settings(number):
    """What policy `number` holds before the daemon starts: (governor,
    scaling_setspeed, scaling_min_freq, scaling_max_freq). policy2 has
    limits narrowed by an administrator, policy3 is already under
    userspace with a set speed of its own (which must come back)."""
    if number == 2:
        return 'ondemand', '<unsupported>', 800000, 2000000
    if number == 3:
        return 'userspace', '1500000', K_MIN_KHZ, K_NOMINAL_KHZ
    return 'schedutil', '<unsupported>', K_MIN_KHZ, K_NOMINAL_KHZ


def tree_snapshot(top):
    """Everything under `top`, by relative path: ('dir', mode),
    ('link', target) or ('file', mode, bytes)."""
    snapshot = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top)
            st = os.lstat(path)
            if os.path.islink(path):
                snapshot[rel] = ('link', os.readlink(path))
            elif os.path.isdir(path):
                snapshot[rel] = ('dir', st.st_mode)
            else:
                with open(path, 'rb') as f:
                    snapshot[rel] = ('file', st.st_mode, f.read())
    return snapshot


def kernel_view(snapshot):
    """`snapshot` as sysfs would show it: the kernel computes
    scaling_setspeed on each read, "<unsupported>" unless the policy's
    governor is userspace, whereas a plain file keeps what was last
    written to it. Everything else is compared byte for byte."""
    view = dict(snapshot)
    for path, entry in snapshot.items():
        if os.path.basename(path) != 'scaling_setspeed' or \
                entry[0] != 'file':
            continue
        governor = snapshot.get(os.path.join(os.path.dirname(path),
                                             'scaling_governor'))
        if governor is None or governor[2] != b'userspace\n':
            view[path] = ('file', entry[1], b'<unsupported>\n')
    return view


def can_mount_privately():
    """Whether this process may make mounts in a mount namespace of its
    own (root, with unshare and mount at hand)."""
    if os.geteuid() != 0 or shutil.which('unshare') is None:
        return False
    r = subprocess.run(['unshare', '--mount', 'true'], capture_output=True)
    return r.returncode == 0


class Unwritable:
    """One file made to refuse every write, root's too, in one of two ways:
    'directory' puts a directory in its place (EISDIR, for anyone);
    'read-only mount' bind-mounts it read-only (EROFS) in a private mount
    namespace that only the commands passed through wrap() see (root
    only). fix() takes the cause away; the file then holds what it held."""

    HOW = ('directory', 'read-only mount')
    ERROR = {'directory': 'Is a directory',
             'read-only mount': 'Read-only file system'}

    def __init__(self, path, how):
        self.path = path
        self.how = how
        self.fixed = False
        with open(path, 'rb') as f:
            self.text = f.read()
        if how == 'directory':
            os.remove(path)
            os.mkdir(path)

    def wrap(self, command):
        if self.how != 'read-only mount' or self.fixed:
            return list(command)
        script = ('mount --bind "$0" "$0" && '
                  'mount -o remount,bind,ro "$0" "$0" && exec "$@"')
        return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                script, self.path, *command]

    def fix(self):
        if self.how == 'directory':
            os.rmdir(self.path)
            with open(self.path, 'wb') as f:
                f.write(self.text)
        self.fixed = True


class KernelRig(Rig):
    """A rig whose fake root is a machine the kernel backend accepts: per
    CPU acpi_cppc capabilities and feedback counters, cpufreq policies
    driven by cppc_cpufreq (kernel_policies()), the resume-latency files,
    and a proc/stat whose counters advance (all CPUs idle). The policy
    file asks for `backend: {type: auto}`, which must pick the kernel
    backend because cpu0/acpi_cppc exists. With `knobs`, every policy has
    K_KNOBS too."""

    def __init__(self, case, knobs=False):
        self.knobs = knobs
        cpus = kernel_cpus()
        self.policies = kernel_policies(cpus)
        super().__init__(case, cpus=cpus, proc_stat_cpus=cpus)
        self.sys = os.path.join(self.root, 'sys')

    def _make_root(self):
        originals = super()._make_root()
        cpu_dir = os.path.join(self.root, 'sys/devices/system/cpu')
        for number, cpus in kernel_policies(self.cpus).items():
            governor, setspeed, min_khz, max_khz = \
                kernel_policy_settings(number)
            policy = os.path.join(cpu_dir, 'cpufreq', f'policy{number}')
            os.makedirs(policy)
            listed = ' '.join(map(str, cpus)) + '\n'
            for name, value in (
                    ('affected_cpus', listed),
                    ('related_cpus', listed),
                    ('scaling_driver', 'cppc_cpufreq\n'),
                    ('scaling_available_governors', K_GOVERNORS),
                    ('scaling_governor', governor + '\n'),
                    ('scaling_setspeed', setspeed + '\n'),
                    ('cpuinfo_min_freq', f'{K_MIN_KHZ}\n'),
                    ('cpuinfo_max_freq', f'{K_NOMINAL_KHZ}\n'),
                    ('cpuinfo_transition_latency', '10000\n'),
                    ('scaling_min_freq', f'{min_khz}\n'),
                    ('scaling_max_freq', f'{max_khz}\n'),
                    ('scaling_cur_freq', f'{max_khz}\n'),
                    *(K_KNOBS if self.knobs else ())):
                self.write_text(os.path.join(policy, name), value)
            for cpu in cpus:
                os.symlink(f'../cpufreq/policy{number}',
                           os.path.join(cpu_dir, f'cpu{cpu}', 'cpufreq'))
        for cpu in range(self.cpus):
            cppc = os.path.join(cpu_dir, f'cpu{cpu}', 'acpi_cppc')
            os.makedirs(cppc)
            for name, value in (
                    ('highest_perf', K_HIGHEST),
                    ('nominal_perf', K_NOMINAL),
                    ('lowest_nonlinear_perf', K_LOWEST_NONLINEAR),
                    ('lowest_perf', K_LOWEST),
                    ('guaranteed_perf', K_NOMINAL),
                    ('reference_perf', K_NOMINAL),
                    ('lowest_freq', K_LOWEST_MHZ),
                    ('nominal_freq', K_NOMINAL_MHZ),
                    ('feedback_ctrs', f'ref:{1000 * cpu} del:{2000 * cpu}'),
                    ('wraparound_time', 18446744073709551615)):
                self.write_text(os.path.join(cppc, name), f'{value}\n')
        return originals

    def write_config(self, extra):
        group = grp.getgrgid(os.getgid()).gr_name
        # Plain files answer at once: only a loaded machine could make an
        # access pass its deadline here, and these cases are not about that
        # (pcc_daemon_test's are).
        self.write_text(self.config, 'backend:\n'
                        '  type: auto\n'
                        '  access:\n'
                        '    deadline_us: 2000000\n'
                        'permissions:\n'
                        f'  group: {group}\n' + extra)

    def policy_path(self, number, name):
        return os.path.join(self.sys, 'devices/system/cpu/cpufreq',
                            f'policy{number}', name)

    def policy_file(self, number, name):
        with open(self.policy_path(number, name), 'rb') as f:
            return f.read()

    def policy_of(self, cpu):
        return next(n for n, cpus in self.policies.items() if cpu in cpus)

    def expected_khz(self, number, khz):
        """`khz` clamped into policy `number`'s limits, as the backend (and
        the kernel) clamp a request."""
        _, _, min_khz, max_khz = kernel_policy_settings(number)
        return min(max(khz, min_khz), max_khz)

    def snapshot(self):
        return tree_snapshot(self.sys)

    def setspeeds(self):
        return {n: self.policy_file(n, 'scaling_setspeed')
                for n in self.policies}

    def wait_setspeeds(self, wanted, timeout=SETTLE_TIMEOUT):
        """Waits until every policy's scaling_setspeed holds wanted[policy]
        (kHz); returns the last values read, as bytes."""
        text = {n: f'{khz}\n'.encode() for n, khz in wanted.items()}
        last = {}

        def reached():
            last.update(self.setspeeds())
            return last == text

        wait_until(reached, timeout)
        return last
