# SPDX-License-Identifier: Apache-2.0
"""The VM suite's rig: one booted guest with the project's SSDT, the real
cppc_cpufreq and cpufreq_userspace loaded, a private dbus-daemon, and
cppcgovd started, signalled and restored in it; snapshots of what the
kernel shows; the Desired registers read from the host.

Register layout (the SystemMemory SSDTs of this folder): CPU n's block is
at REGISTER_BASE + n * 0x1000, Desired (32-bit) at +0, the reference and
delivered counters (64-bit) at +8 and +0x10; in the autonomous layout
also the 32-bit controls at CONTROL_OFFSETS, given POWER_ON values
before cppc_cpufreq loads. The PCC layouts put Desired, the counters and
Performance Limited in PCCT subspaces (PCC_SUBSPACES, pcc_address).

Paths in the guest: the programs in /usr/bin, the modules in
/lib/modules, the daemon's files in /etc/cppcgov (policy.yaml and
policy.d), its state in /run/cppcgov, the rig's own files (logs, PIDs,
exit statuses) in /run/vm-test, the bus at BUS_ADDRESS. The daemon's
properties and statistics are read with Debian's dbus-send, not through
cppcgovctl.
"""

import json
import re
import shlex
import time

from cppc_model import Caps

REGISTER_BASE = 0x90000000
BUS_ADDRESS = 'unix:path=/run/vm-test/bus'
BUS_NAME = 'org.cppcgov.Governor1'
OBJECT_PATH = '/org/cppcgov/Governor1'
WORK = '/run/vm-test'
STATE_DIR = '/run/cppcgov'
CPU_DIR = '/sys/devices/system/cpu'
POLICY_FILES = ('scaling_governor', 'scaling_min_freq', 'scaling_max_freq',
                'scaling_setspeed')
# cppc_cpufreq's files for the optional controls (Linux 6.16 and later),
# per policy.
KNOB_FILES = ('auto_select', 'auto_act_window',
              'energy_performance_preference_val', 'perf_limited')
# The autonomous layout's control registers (ssdt-autonomous.asl) and the
# values the guest gives them before cppc_cpufreq loads, as a platform's
# reset would: Minimum and Maximum at lowest and highest perf, no
# excursion, autonomous selection off, an activity window of 1000 us
# (significand 10, exponent 2) and a balanced energy preference.
# Where the rig's start loads Linux's cppc_cpufreq from (the guest has
# no modules tree for modprobe).
CPPC_MODULE = '/lib/modules/cppc_cpufreq.ko'
CONTROL_OFFSETS = {'min': 0x18, 'max': 0x1C, 'limited': 0x20,
                   'auto_sel': 0x24, 'window': 0x28, 'epp': 0x2C}
POWER_ON = {'min': 0xA3D, 'max': 0x2000, 'limited': 0, 'auto_sel': 0,
            'window': 10 | 2 << 7, 'epp': 0x80}
CAPS_FILES = ('highest_perf', 'nominal_perf', 'lowest_nonlinear_perf',
              'lowest_perf', 'reference_perf', 'lowest_freq', 'nominal_freq')

BUS_CONFIG = f'''<!DOCTYPE busconfig PUBLIC
 "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>{BUS_ADDRESS}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
'''

# A tick every 500 ms, and a task that runs 20 ms of every 50 (duty_task
# 20 50). Its CPU time, which the guest kernel charges by the tick, grows
# by about 200 ms between two of the daemon's ticks, and by 10 ms (one
# step of /proc's counters) even when a busy host runs the guest's
# virtual CPUs a fifth of the time, so a clamp on it binds at every tick.
# Alone it keeps schedutil at the floor: utilization is busy time scaled
# by the level running (40% x lowest nonlinear / highest), and 1.25 x
# that is below lowest nonlinear on every layout; after a release from
# the ceiling it falls back in a few ticks (x 0.5 a tick).
SAMPLING_PERIOD_US = 500000
DUTY = ('20', '50')


# A word in each CPU's SystemMemory block (in every layout: the block is
# RAM beyond the guest kernel's mem=) that a workload writes to mark an
# instant; the platform logs each new value with its own clock
# (platform/layout.hpp).
MARK_OFFSET = 0x800


def mark_address(cpu):
    return REGISTER_BASE + cpu * 0x1000 + MARK_OFFSET


def desired_address(cpu, pcc=None):
    """CPU `cpu`'s Desired register, guest-physical, in the SystemMemory
    layouts or the PCC layout `pcc`."""
    if pcc:
        return pcc_address(cpu, pcc, 'desired')
    return REGISTER_BASE + cpu * 0x1000


# The PCC layouts (pcct-vm.asl, ssdt-pcc.asl, ssdt-pcc-sockets.asl):
# subspace id -> (shared memory, doorbell), a CPU's registers at these
# offsets into its block of the payload (PCC_BLOCK bytes a CPU in the
# shared layout, each CPU's subspace its own in the sockets layout).
PCC_SUBSPACES = {0: (0x90100000, 0x90200000), 1: (0x90101000, 0x90200008)}
PCC_SIZE = 0x1000
PCC_BLOCK = 0x80
PCC_OFFSETS = {'desired': 0x14, 'reference_counter': 0x20,
               'delivered_counter': 0x28, 'limited': 0x3C}
PCC_WIDTHS = {'desired': 32, 'reference_counter': 64,
              'delivered_counter': 64, 'limited': 32}
PCC_LAYOUTS = ('shared', 'sockets')


def pcc_place(cpu, pcc):
    """(subspace, offset of the CPU's block in its payload) in the PCC
    layout `pcc` (PCC_LAYOUTS)."""
    return (0, cpu * PCC_BLOCK) if pcc == 'shared' else (cpu, 0)


def pcc_address(cpu, pcc, name):
    """The guest-physical address of CPU `cpu`'s register `name`
    (PCC_OFFSETS) in the PCC layout `pcc`."""
    subspace, block = pcc_place(cpu, pcc)
    return PCC_SUBSPACES[subspace][0] + 8 + block + PCC_OFFSETS[name]


def activity_window_us(register):
    """The microseconds an Autonomous Activity Window register holds, as
    the ACPI spec defines it: a 7-bit significand (bits 6:0) times ten to
    a 3-bit exponent (bits 9:7)."""
    return (register & 0x7F) * 10 ** ((register >> 7) & 0x7)


def cpu_list(text):
    """'0 1' or '0-1,3' -> [0, 1] / [0, 1, 3]."""
    cpus = []
    for part in text.replace(',', ' ').split():
        if '-' in part:
            first, last = part.split('-')
            cpus.extend(range(int(first), int(last) + 1))
        else:
            cpus.append(int(part))
    return cpus


class CheckFailure(AssertionError):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailure(message)


class VmRig:
    def __init__(self, guest, cpus, controls=False, pcc=None):
        self.guest = guest
        self.cpus = cpus
        self.pcc = pcc
        self.has_controls = controls
        self.daemon_running = False

    # --- set-up ---------------------------------------------------------

    def setup(self, platform=False):
        """Counters, modules, bus. The counters must be non-zero before
        cppc_cpufreq loads (it reads them when a policy starts); with
        `platform` (platform_rig.py) the platform's reset has made them so
        and given the controls their power-on values."""
        lines = [f'mkdir -p {WORK} /etc/cppcgov/policy.d']
        for cpu in range(0 if platform else self.cpus):
            base = desired_address(cpu)
            lines.append(f'devmem {base + 8:#x} 64 0x100000')
            lines.append(f'devmem {base + 0x10:#x} 64 0x100000')
            if self.has_controls:
                lines += [f'devmem {base + CONTROL_OFFSETS[name]:#x} 32 '
                          f'{value:#x}' for name, value in POWER_ON.items()]
        lines += ['insmod /lib/modules/cpufreq_userspace.ko',
                  f'insmod {CPPC_MODULE}']
        self.guest.sh('\n'.join(lines))
        self.guest.sh(f'cat >/etc/cppcgov/bus.conf <<"EOF"\n{BUS_CONFIG}EOF\n'
                      f'dbus-daemon --config-file=/etc/cppcgov/bus.conf '
                      f'--nofork >{WORK}/dbus.log 2>&1 </dev/null &\n'
                      f'for i in $(seq 100); do [ -S {WORK}/bus ] && exit 0; '
                      f'sleep 0.1; done; cat {WORK}/dbus.log; exit 1')
        self.write_config('kernel')

    def write_config(self, backend, extra='', source=None):
        """policy.yaml: the backend, the rig's tick, and sampling.source
        when given (the daemon's default, auto, otherwise)."""
        sampling = f'  source: {source}\n' if source else ''
        text = (f'sampling:\n  period_us: {SAMPLING_PERIOD_US}\n{sampling}'
                f'backend:\n  type: {backend}\n{extra}')
        self.guest.sh(f'cat >/etc/cppcgov/policy.yaml <<"EOF"\n{text}EOF')

    # --- what the kernel shows -------------------------------------------

    def caps(self):
        """{cpu: Caps} from each CPU's acpi_cppc."""
        return {cpu: Caps.from_sysfs({k: int(v) for k, v in values.items()
                                      if v.strip().isdigit()})
                for cpu, values in self.raw_caps().items()}

    def raw_caps(self):
        """{cpu: {file: text}} of acpi_cppc, as the kernel prints them."""
        out = self.guest.sh(f'cd {CPU_DIR} && grep -H . cpu[0-9]*/acpi_cppc/*'
                            ' 2>/dev/null; true')
        values = {}
        for line in out.splitlines():
            path, _, value = line.partition(':')
            cpu_dir, _, name = path.partition('/acpi_cppc/')
            values.setdefault(int(cpu_dir[3:]), {})[name] = value
        return values

    def policies(self):
        """{policy number: {file: text}} for every cpufreq policy: the
        POLICY_FILES, related_cpus and affected_cpus; a file that cannot
        be read (an inactive policy answers EBUSY) holds 'unreadable'.
        One grep reads them all (the guest's own commands are load); it
        skips what it cannot read."""
        files = POLICY_FILES + ('related_cpus', 'affected_cpus')
        names = ' '.join(f'policy*/{f}' for f in files)
        out = self.guest.sh(
            f'cd {CPU_DIR}/cpufreq || exit 0; for p in policy*; do '
            '[ -d $p ] && echo "@dir $p"; done; '
            f'grep -H "" {names} 2>/dev/null; true')
        result = {}
        for line in out.splitlines():
            if line.startswith('@dir policy'):
                result.setdefault(int(line[len('@dir policy'):]), {})
                continue
            path, _, value = line.partition(':')
            policy, _, name = path.partition('/')
            if policy.startswith('policy') and name:
                result.setdefault(int(policy[6:]), {})[name] = value.strip()
        for values in result.values():
            for name in files:
                values.setdefault(name, 'unreadable')
        return result

    def setspeed(self, number):
        return self.guest.sh(f'cat {CPU_DIR}/cpufreq/policy{number}/'
                             'scaling_setspeed').strip()

    def latencies(self):
        """{cpu: text} of every CPU's pm_qos_resume_latency_us."""
        out = self.guest.sh(f'cd {CPU_DIR} && grep -H "" '
                            'cpu[0-9]*/power/pm_qos_resume_latency_us')
        result = {}
        for line in out.splitlines():
            path, _, value = line.partition(':')
            result[int(path.split('/')[0][3:])] = value.strip()
        return result

    def snapshot(self):
        """Everything the daemon may change and must put back."""
        return {'policies': {n: {f: v[f] for f in POLICY_FILES}
                             for n, v in self.policies().items()},
                'latency': self.latencies()}

    def state_files(self):
        out = self.guest.sh(f'ls {STATE_DIR} 2>/dev/null; true')
        return sorted(n for n in out.split() if n.endswith('.state'))

    def read_state(self, name):
        return self.guest.sh(f'cat {STATE_DIR}/{name}')

    def desired(self, cpu):
        """CPU `cpu`'s Desired register, read by QEMU from outside."""
        return self.guest.read_phys(desired_address(cpu, self.pcc), 4)

    def control(self, cpu, name):
        """CPU `cpu`'s control register `name` (the autonomous layout),
        read by QEMU from outside."""
        return self.guest.read_phys(
            desired_address(cpu) + CONTROL_OFFSETS[name], 4)

    def controls(self, cpu):
        """{name: value} of every control register of CPU `cpu`."""
        return {name: self.control(cpu, name) for name in CONTROL_OFFSETS}

    def set_control(self, cpu, name, value):
        """Writes a control register from inside the guest, as the
        platform would (busybox devmem)."""
        self.guest.sh(f'devmem {desired_address(cpu) + CONTROL_OFFSETS[name]:#x}'
                      f' 32 {value:#x}')

    def knobs(self):
        """{policy number: {file: text}} of KNOB_FILES; a file missing or
        unreadable holds 'missing'."""
        names = ' '.join(f'policy*/{f}' for f in KNOB_FILES)
        out = self.guest.sh(f'cd {CPU_DIR}/cpufreq && grep -H "" {names} '
                            '2>/dev/null; true')
        result = {number: dict.fromkeys(KNOB_FILES, 'missing')
                  for number in self.policies()}
        for line in out.splitlines():
            path, _, value = line.partition(':')
            policy, _, name = path.partition('/')
            if policy.startswith('policy') and name in KNOB_FILES:
                result.setdefault(int(policy[6:]), {})[name] = value.strip()
        return result

    def online(self, cpus, value):
        self.guest.sh('\n'.join(f'echo {int(value)} >{CPU_DIR}/cpu{c}/online'
                                for c in cpus))

    # --- cppcgovd ------------------------------------------------------------

    def daemon_args(self):
        return (f'--config /etc/cppcgov/policy.yaml --config-dir '
                f'/etc/cppcgov/policy.d --state-dir {STATE_DIR} '
                f'--bus-address {BUS_ADDRESS}')

    def start_daemon(self, timeout=60):
        """Starts cppcgovd and waits until it answers on the bus. Returns
        None, or (exit status, log) when it exited instead."""
        self.guest.sh(
            f'rm -f {WORK}/daemon.rc\n'
            f'cat {WORK}/daemon.log >>{WORK}/daemon-all.log 2>/dev/null\n'
            f': >{WORK}/daemon.log\n'
            f'(cppcgovd {self.daemon_args()} >>{WORK}/daemon.log 2>&1 '
            f'</dev/null & echo $! >{WORK}/daemon.pid; wait $!; '
            f'echo $? >{WORK}/daemon.rc) >/dev/null 2>&1 </dev/null &')
        self.daemon_running = True
        out = self.guest.sh(
            f'for i in $(seq {timeout * 10}); do '
            f'if [ -f {WORK}/daemon.rc ]; then echo exited; exit 0; fi; '
            f'if cppcgovctl --bus-address {BUS_ADDRESS} status '
            f'>/dev/null 2>&1; then echo up; exit 0; fi; sleep 0.1; done; '
            'echo timeout', timeout=timeout + 30)
        if 'up' in out:
            return None
        if 'exited' in out:
            self.daemon_running = False
            return int(self.guest.sh(f'cat {WORK}/daemon.rc')), self.log()
        raise CheckFailure(f'cppcgovd did not answer within {timeout} s:\n'
                           f'{self.log()}')

    def log(self):
        """The output of the last cppcgovd started."""
        return self.guest.sh(f'cat {WORK}/daemon.log 2>/dev/null; true')

    def all_logs(self):
        """The output of every cppcgovd started."""
        return self.guest.sh(f'cat {WORK}/daemon-all.log {WORK}/daemon.log '
                             '2>/dev/null; true')

    def stop_daemon(self, signal='TERM', timeout=30):
        """Signals cppcgovd and returns its exit status (128 + the signal
        when the signal killed it)."""
        out = self.guest.sh(
            f'kill -{signal} $(cat {WORK}/daemon.pid); '
            f'for i in $(seq {timeout * 10}); do '
            f'[ -f {WORK}/daemon.rc ] && cat {WORK}/daemon.rc && exit 0; '
            'sleep 0.1; done; echo timeout', timeout=timeout + 30)
        if 'timeout' in out:
            raise CheckFailure(f'cppcgovd did not exit within {timeout} s of '
                               f'SIG{signal}:\n{self.log()}')
        self.daemon_running = False
        return int(out.strip())

    def restore_only(self):
        """cppcgovd --restore-only: (exit status, output)."""
        out = self.guest.sh(f'cppcgovd {self.daemon_args()} --restore-only '
                            '2>&1', check=False, timeout=60)
        return self.guest.last_rc, out

    def status(self):
        return json.loads(self.guest.sh(
            f'cppcgovctl --bus-address {BUS_ADDRESS} status --json'))

    def call(self, interface_method, *args):
        """dbus-send --print-reply to the daemon: its output."""
        words = ' '.join(shlex.quote(a) for a in args)
        return self.guest.sh(
            f'dbus-send --bus={BUS_ADDRESS} --print-reply '
            f'--dest={BUS_NAME} {OBJECT_PATH} {interface_method} {words}')

    def property(self, name):
        """A string property of org.cppcgov.Governor1."""
        out = self.call('org.freedesktop.DBus.Properties.Get',
                        f'string:{BUS_NAME}', f'string:{name}')
        found = re.search(r'variant\s+string "(.*)"\s*$', out, re.M)
        expect(found is not None, f'{name}: no string in the reply:\n{out}')
        return found.group(1)

    def statistics(self):
        """GetStatistics: {name: count}."""
        out = self.call(f'{BUS_NAME}.GetStatistics')
        return {name: int(value) for name, value in re.findall(
            r'string "([^"]*)"\s+uint64 (\d+)', out)}

    # --- tasks and clients ------------------------------------------------

    def spawn(self, name, command):
        """Runs `command` in the background as /run/vm-test/<name>; returns
        its PID."""
        return int(self.guest.sh(
            f'{command} >{WORK}/{name}.out 2>&1 </dev/null & '
            f'echo $! >{WORK}/{name}.pid; echo $!'))

    def duty_task(self, cpu):
        return self.spawn(f'task{cpu}', self.duty_command(cpu))

    @staticmethod
    def duty_command(cpu):
        return f'taskset -c {cpu} duty_task {" ".join(DUTY)}'

    def hint_forking(self, name, cpu, util_min=None, util_max=None):
        """`cppcgovctl hint -- sh -c '<duty_task on cpu> & wait'`, held in
        the background until kill(name) (cppcgovctl passes SIGTERM on to
        the shell, which leaves the task running): the clamp is on the
        shell, which only waits; the task is its child, forked after the
        clamp was granted. Waits for the task to run and returns its PID
        (its name is task<cpu>, as duty_task's)."""
        task = f'{WORK}/task{cpu}.pid'
        script = f'{self.duty_command(cpu)} & echo $! >{task}; wait'
        self.guest.sh(f'rm -f {task}')
        self.spawn(name, f'cppcgovctl --bus-address {BUS_ADDRESS} hint'
                         f'{self.bounds(util_min, util_max)} -- sh -c '
                         f'{shlex.quote(script)}')
        out = self.guest.sh(
            f'for i in $(seq 300); do [ -s {task} ] && cat {task} && exit 0; '
            f'sleep 0.1; done; cat {WORK}/{name}.out; exit 1', check=False,
            timeout=60)
        expect(self.guest.last_rc == 0,
               f'{name}: the forked task did not start within 30 s: {out}')
        return int(out)

    def kill(self, name, signal='TERM'):
        self.guest.sh(f'kill -{signal} $(cat {WORK}/{name}.pid) 2>/dev/null;'
                      ' true')

    def hint(self, name, pid, util_min=None, util_max=None):
        """cppcgovctl hint on `pid`, held in the background until
        kill(name); waits for its handle."""
        self.spawn(name, f'cppcgovctl --bus-address {BUS_ADDRESS} hint'
                         f'{self.bounds(util_min, util_max)} --pid {pid}')
        self.wait_output(name, 'handle')

    @staticmethod
    def bounds(util_min, util_max):
        """cppcgovctl hint's options for the bounds given."""
        text = ''
        if util_min is not None:
            text += f' --min {util_min}'
        if util_max is not None:
            text += f' --max {util_max}'
        return text

    def latency(self, name, latency_us, cpus):
        self.spawn(name, f'cppcgovctl --bus-address {BUS_ADDRESS} latency '
                         f'--us {latency_us} --cpus {cpus}')
        self.wait_output(name, 'handle')

    def wait_output(self, name, word, timeout=30):
        out = self.guest.sh(
            f'for i in $(seq {timeout * 10}); do '
            f'grep -q {shlex.quote(word)} {WORK}/{name}.out && exit 0; '
            f'sleep 0.1; done; cat {WORK}/{name}.out; exit 1',
            check=False, timeout=timeout + 30)
        expect(self.guest.last_rc == 0,
               f'{name} did not print {word!r} within {timeout} s: {out}')

    # --- waiting on registers ---------------------------------------------

    def wait_register(self, cpu, predicate, timeout=20, what='',
                      control=None):
        """Polls CPU `cpu`'s Desired register (or the control register
        named) from the host until predicate(value); returns the value."""
        deadline = time.monotonic() + timeout
        name = control or 'Desired'
        while True:
            value = (self.desired(cpu) if control is None
                     else self.control(cpu, control))
            if predicate(value):
                return value
            if time.monotonic() > deadline:
                raise CheckFailure(f'CPU {cpu} {name} stayed {value} for '
                                   f'{timeout} s, waiting for {what}')
            time.sleep(0.05)

    def hold_register(self, cpu, predicate, seconds=1.0, what=''):
        """The register satisfies predicate(value) for `seconds` (read
        every 50 ms)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            seen = self.desired(cpu)
            expect(predicate(seen), f'CPU {cpu} Desired {seen}, expected it '
                                    f'to stay {what}')
            time.sleep(0.05)

    def cleanup(self):
        """After a failed check: no daemon, no clients, everything the
        daemon changed put back as far as it can be."""
        self.guest.sh(
            f'for f in {WORK}/*.pid; do [ "$f" = {WORK}/daemon.pid ] || '
            'kill -9 $(cat $f) 2>/dev/null; done; '
            f'for c in {CPU_DIR}/cpu[0-9]*/online; do echo 1 >$c; done; '
            'true', check=False)
        if self.daemon_running:
            try:
                self.stop_daemon('KILL')
            except CheckFailure:
                pass
        self.restore_only()

