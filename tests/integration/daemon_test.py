#!/usr/bin/env python3
"""cppcgovd's integration tests: the real daemon on a private dbus-daemon.

Each case starts its own dbus-daemon (a session-type bus listening on a
socket in the case's temporary directory), its own fake root (the
resume-latency files under sys/devices/system/cpu, and proc/stat when the
case sets the load) and state directory, and its own cppcgovd on the
simulated rd-n2 machine. The daemon is driven the way users drive it:
busctl for reading state, dbus-send where the D-Bus error name matters,
cppcgovctl for holding a clamp, and session_client (tests/integration/
session_client.cpp) where one connection must hold handles, make many
calls or wait for signals. Everything a case starts is killed when it
ends, however it ends. KernelBackendTest runs the daemon on the kernel
backend instead, over a fake cpufreq and acpi_cppc tree (KernelRig), and
compares the whole tree before and after. LatencyRestoreTest and
KernelBackendTest's unwritable-file cases make one file refuse the write
back (Unwritable: a directory in its place, and, as root, a read-only bind
mount in a private mount namespace) and check that --restore-only and a
stop exit 1 and keep exactly what is left in the state file, that a start
refuses over it, and that once the file is fixed --restore-only finishes
the job and the daemon starts. BusFuzzTest lets bus_fuzz
(tests/integration/bus_fuzz.cpp) loose on the daemon: a seeded random
stream of good and bad calls, every one of which must be answered, with
the handles it holds checked at the end.

Usage: daemon_test.py CPPCGOVD CPPCGOVCTL SESSION_CLIENT BUS_FUZZ SOURCE_DIR
                      [unittest options and test names]

SOURCE_DIR is the source tree, whose config/policy.yaml one case runs
with. Needs dbus-daemon, dbus-send, busctl and util-linux's setpriv,
taskset, unshare and nsenter; exits with 77 (skipped) when one of the
first three is missing. Three cases need root and are skipped otherwise:
the permissions case (it runs a client as user nobody), the ceiling case
(it runs a task and a client as user nobody) and the PID-reuse case (it
runs the daemon in a PID namespace of its own); the read-only mount of the
unwritable-file cases is left out without root.
"""

import grp
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

CPPCGOVD = ''
CPPCGOVCTL = ''
SESSION_CLIENT = ''
BUS_FUZZ = ''
SOURCE_DIR = ''

NAME = 'org.cppcgov.Governor1'
PATH = '/org/cppcgov/Governor1'
IFACE = 'org.cppcgov.Governor1'

# The rd-n2 layout's capabilities (lib/sim/layouts.cpp): what schedutil asks
# for an idle CPU (the floor, lowest_nonlinear) and for a CPU clamped to
# util_min 1024 without boost (the ceiling, nominal).
RD_N2_FLOOR = 1000
RD_N2_NOMINAL = 2600

# Time budgets. The daemon reacts within a tick or two (1 ms each); these
# leave room for a loaded 2-CPU machine shared with compilers.
START_TIMEOUT = 15.0
CLAMP_RAISE_LIMIT = 0.5
HANDLE_GONE_LIMIT = 1.0
SETTLE_TIMEOUT = 3.0

# user nobody, for the permissions case.
NOBODY = 65534
# Another unprivileged user: dbus-daemon refuses a UID the user database
# does not know.
OTHER_USER = 1  # daemon

# The rigs not yet closed, for the SIGTERM handler.
LIVE_RIGS = []


def as_user(user, groups=()):
    """The prefix running a command as `user` (None: as the caller), with
    the supplementary `groups` only, that dies with the test process. The
    tests start their children through it rather than with preexec_fn,
    which is not safe with threads."""
    prefix = ['setpriv', '--pdeathsig', 'KILL']
    if user is not None:
        prefix += [f'--reuid={user}', f'--regid={user}']
        prefix += ([f'--groups={",".join(map(str, groups))}'] if groups
                   else ['--clear-groups'])
    return prefix + ['--']


def state_files(state_dir):
    """The crash-recovery files in the daemon's state directory (its lock
    file stays there by design)."""
    return sorted(f for f in os.listdir(state_dir) if f != "lock")


def host_cpu():
    """The host CPU the busy children are pinned to: the highest one this
    process may use."""
    return max(os.sched_getaffinity(0))


def sim_cpus():
    """How many CPUs the simulated machine gets: at least 4, and enough
    that every host CPU maps to one (a hinted task counts on the simulated
    CPU with its host CPU's number)."""
    return max(4, host_cpu() + 1)


class CallError(Exception):
    """A D-Bus call answered with an error."""

    def __init__(self, name, message):
        super().__init__(f'{name}: {message}')
        self.name = name
        self.message = message


def wait_until(predicate, timeout, interval=0.01):
    """Calls predicate until it returns something true; returns (value,
    seconds waited), or (None, seconds) when `timeout` passed first."""
    start = time.monotonic()
    while True:
        value = predicate()
        elapsed = time.monotonic() - start
        if value:
            return value, elapsed
        if elapsed > timeout:
            return None, elapsed
        time.sleep(interval)


class LineReader:
    """Lines of a child's output, with a timeout on each read."""

    def __init__(self, stream):
        self._lines = queue.Queue()
        thread = threading.Thread(target=self._pump, args=(stream,),
                                  daemon=True)
        thread.start()

    def _pump(self, stream):
        for line in stream:
            self._lines.put(line.rstrip('\n'))
        self._lines.put(None)

    def readline(self, timeout):
        """The next line; None at the end of the output; raises
        queue.Empty after `timeout` seconds."""
        return self._lines.get(timeout=timeout)


class Session:
    """A running session_client: one bus connection the test drives."""

    def __init__(self, rig, user=None, groups=()):
        self.proc = rig.spawn([rig.session_client, rig.address], user, groups,
                              stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        self._out = LineReader(self.proc.stdout)

    def ask(self, line, timeout=20.0):
        """Sends one command; returns the answer's words after 'ok', or
        raises CallError for an 'error' answer."""
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()
        try:
            answer = self._out.readline(timeout)
        except queue.Empty:
            raise AssertionError(f'session_client did not answer {line!r} '
                                 f'within {timeout} s') from None
        if answer is None:
            raise AssertionError(f'session_client exited on {line!r} '
                                 f'(status {self.proc.wait()})')
        words = answer.split(' ')
        if words[0] == 'ok':
            return words[1:]
        if words[0] == 'error' and len(words) >= 2:
            raise CallError(words[1], ' '.join(words[2:]))
        raise AssertionError(f'session_client answered {answer!r}')

    def name(self):
        return self.ask('name')[0]

    def pid(self):
        return int(self.ask('pid')[0])

    def clamp(self, pid, util_min, util_max, thread=False):
        return int(self.ask(f'clamp {pid} {int(thread)} {util_min} '
                            f'{util_max}')[0])

    def latency_cpus(self, latency_us, cpus):
        return int(self.ask(f'latency-cpus {latency_us} '
                            + ' '.join(str(c) for c in cpus))[0])

    def latency(self, pid, latency_us):
        return int(self.ask(f'latency {pid} {latency_us}')[0])

    def release(self, handle):
        self.ask(f'release {handle}')

    def wait_ended(self, handle, timeout_s):
        """Waits for HandleEnded naming `handle`: (microseconds from the
        session's last `kill` to the signal, owner, reason, microseconds
        from that kill to the killed task's exit or -1)."""
        us, owner, reason, exit_us = self.ask(
            f'wait-ended {handle} {int(timeout_s * 1000)}',
            timeout=timeout_s + 10)
        return int(us), owner, reason, int(exit_us)

    def wait_policy(self, timeout_s):
        """The next PolicyChanged: (policy, [files])."""
        words = self.ask(f'wait-policy {int(timeout_s * 1000)}',
                         timeout=timeout_s + 10)
        return words[0], (words[1].split(',') if len(words) > 1 else [])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Rig:
    """One case's bus, fake root, state directory and daemon, torn down by
    close() (registered as the case's cleanup before anything starts)."""

    def __init__(self, case, cpus=None, config=None, proc_stat_cpus=None):
        self.case = case
        self.cpus = cpus if cpus is not None else sim_cpus()
        self.children = []
        self.daemon = None
        self.daemon_log = ''
        self.tmp = tempfile.mkdtemp(prefix='cppcgov-it-')
        case.addCleanup(self.close)
        LIVE_RIGS.append(self)
        # Readable by user nobody, who must reach the bus socket and the
        # client program in the permissions case.
        os.chmod(self.tmp, 0o755)
        self.root = os.path.join(self.tmp, 'root')
        self.state = os.path.join(self.tmp, 'state')
        self.config = os.path.join(self.tmp, 'policy.yaml')
        self.config_dir = os.path.join(self.tmp, 'policy.d')
        self.log_path = os.path.join(self.tmp, 'cppcgovd.log')
        os.makedirs(self.state)
        os.makedirs(self.config_dir)
        self.session_client = os.path.join(self.tmp, 'session_client')
        shutil.copy(SESSION_CLIENT, self.session_client)
        os.chmod(self.session_client, 0o755)
        self.originals = self._make_root()
        if proc_stat_cpus:
            self.proc_stat = ProcStat(self, proc_stat_cpus)
        self.write_config(config if config is not None else '')
        self._start_bus()

    # --- setting up -------------------------------------------------------

    def _make_root(self):
        """Creates each simulated CPU's pm_qos_resume_latency_us with a
        varied original value; returns {cpu: original bytes}."""
        values = [b'0\n', b'n/a\n', b'200\n', b'0\n']
        originals = {}
        for cpu in range(self.cpus):
            power = os.path.join(self.root, 'sys/devices/system/cpu',
                                 f'cpu{cpu}', 'power')
            os.makedirs(power)
            originals[cpu] = values[cpu % len(values)]
            with open(os.path.join(power, 'pm_qos_resume_latency_us'),
                      'wb') as f:
                f.write(originals[cpu])
        return originals

    def latency_file(self, cpu):
        with open(os.path.join(self.root, 'sys/devices/system/cpu',
                               f'cpu{cpu}', 'power',
                               'pm_qos_resume_latency_us'), 'rb') as f:
            return f.read()

    def latency_files(self):
        return {cpu: self.latency_file(cpu) for cpu in range(self.cpus)}

    def write_text(self, path, text):
        with open(path, 'w') as f:
            f.write(text)

    def write_config(self, extra):
        """The policy file: the simulator with self.cpus CPUs, the
        caller's primary group as permissions.group (so that the test user
        may set latency requests without being root), then `extra`."""
        group = grp.getgrgid(os.getgid()).gr_name
        text = ('backend:\n'
                '  type: simulator\n'
                '  simulator:\n'
                '    layout: rd-n2\n'
                f'    cpus: {self.cpus}\n'
                'permissions:\n'
                f'  group: {group}\n' + extra)
        with open(self.config, 'w') as f:
            f.write(text)

    def spawn(self, command, user=None, groups=(), **kwargs):
        """Starts a child (as `user` when given) that close() kills."""
        proc = subprocess.Popen(as_user(user, groups) + command, **kwargs)
        self.children.append(proc)
        return proc

    def bus_config(self, socket):
        """The bus's configuration: a session-type bus on `socket` that
        lets everyone do everything, with room for a user's 256
        connections and more."""
        return f'''<!DOCTYPE busconfig PUBLIC
 "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_connections_per_user">4096</limit>
  <limit name="max_completed_connections">8192</limit>
</busconfig>
'''

    def _start_bus(self):
        conf = os.path.join(self.tmp, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(self.bus_config(os.path.join(self.tmp, 'bus')))
        self.bus = self.spawn(['dbus-daemon', f'--config-file={conf}',
                               '--nofork', '--print-address=1'],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
        try:
            self.address = LineReader(self.bus.stdout).readline(
                START_TIMEOUT)
        except queue.Empty:
            self.address = None
        if not self.address:
            raise AssertionError('dbus-daemon did not print its address')

    def daemon_command(self, *extra):
        return [CPPCGOVD, '--config', self.config, '--config-dir',
                self.config_dir, '--root', self.root, '--state-dir',
                self.state, '--bus-address', self.address, *extra]

    def start_daemon(self, wrapper=()):
        """Starts cppcgovd (under `wrapper`, a command prefix, when given)
        and waits until it owns its bus name."""
        with open(self.log_path, 'ab') as log:
            self.daemon = self.spawn([*wrapper, *self.daemon_command()],
                                     stdout=log, stderr=log)

        def ready():
            if self.daemon.poll() is not None:
                raise AssertionError(
                    f'cppcgovd exited with status {self.daemon.returncode}'
                    f' while starting:\n{self.read_log()}')
            r = self.busctl('call', 'org.freedesktop.DBus',
                            '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                            'NameHasOwner', 's', NAME)
            return r.returncode == 0 and r.stdout.strip() == 'b true'

        if not wait_until(ready, START_TIMEOUT, 0.02)[0]:
            raise AssertionError('cppcgovd did not own its bus name within '
                                 f'{START_TIMEOUT} s:\n{self.read_log()}')
        return self.daemon

    def stop_daemon(self, sig=signal.SIGTERM, timeout=10.0):
        """Sends `sig` to the daemon and returns its exit status."""
        self.daemon.send_signal(sig)
        try:
            return self.daemon.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'cppcgovd did not stop within {timeout} s '
                                 f'of signal {sig}') from None

    def read_log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def busy_child(self, user=None):
        """A process spinning on host_cpu() (as `user` when given, once it
        runs as that user: setpriv starts as the caller)."""
        proc = self.spawn(['taskset', '--cpu-list', str(host_cpu()), 'sh',
                           '-c', 'while :; do :; done'], user)
        if user is not None:
            def runs_as_user():
                try:
                    return os.stat(f'/proc/{proc.pid}').st_uid == user
                except OSError:
                    return False
            if not wait_until(runs_as_user, START_TIMEOUT)[0]:
                raise AssertionError(f'the busy child never ran as {user}')
        return proc

    def session(self, user=None, groups=()):
        return Session(self, user, groups)

    def close(self):
        if self not in LIVE_RIGS:
            return
        LIVE_RIGS.remove(self)
        self.daemon_log = self.read_log()
        for proc in reversed(self.children):
            if proc.poll() is None:
                proc.kill()
        for proc in reversed(self.children):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        if getattr(self, 'proc_stat', None):
            self.proc_stat.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- talking to the daemon --------------------------------------------

    def busctl(self, *args, timeout=20):
        return subprocess.run(['busctl', f'--address={self.address}', *args],
                              capture_output=True, text=True,
                              timeout=timeout)

    def call(self, method, signature='', *args):
        """busctl call; returns the reply's values (JSON), or raises
        CallError (busctl prints only the message: the name is 'busctl')."""
        r = self.busctl('--json=short', 'call', NAME, PATH, IFACE, method,
                        *([signature, *map(str, args)] if signature else []))
        if r.returncode != 0:
            raise CallError('busctl', r.stderr.strip())
        return json.loads(r.stdout)['data']

    def prop(self, name):
        r = self.busctl('--json=short', 'get-property', NAME, PATH, IFACE,
                        name)
        if r.returncode != 0:
            raise CallError('busctl', r.stderr.strip())
        return json.loads(r.stdout)['data']

    def cpu_states(self):
        states = []
        for s in self.call('GetCpuStates')[0]:
            states.append({
                'cpu': s[0], 'util': s[1], 'clamp_min': s[2],
                'clamp_max': s[3], 'requested': s[4], 'delivered': s[5],
                'reason': s[6], 'latency': s[7],
                'handles': [{'handle': h[0], 'owner': h[1], 'pid': h[2],
                             'min': h[3], 'max': h[4]} for h in s[8]]})
        return states

    def handles(self):
        return [{'handle': h[0], 'kind': h[1], 'owner': h[2], 'pid': h[3],
                 'min': h[4], 'max': h[5], 'latency': h[6]}
                for h in self.call('ListHandles')[0]]

    def handle_ids(self):
        return {h['handle'] for h in self.handles()}

    def stats(self):
        return self.call('GetStatistics')[0]

    def dbus_send(self, method, *args):
        """dbus-send --print-reply; returns the reply's text, or raises
        CallError with the D-Bus error name."""
        r = subprocess.run(['dbus-send', f'--bus={self.address}',
                            '--print-reply', f'--dest={NAME}', PATH,
                            f'{IFACE}.{method}', *args],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            m = re.match(r'Error (\S+): (.*)', r.stderr.strip(), re.S)
            if not m:
                raise AssertionError(f'dbus-send failed: {r.stderr}')
            raise CallError(m.group(1), m.group(2))
        return r.stdout


class SystemPolicyRig(Rig):
    """A Rig whose bus runs as the system bus does: the distribution's
    system.conf (its <policy> rules intact) with a private listen address,
    neither <user>, <fork> nor <pidfile>, and the shipped policy file of
    the daemon's name included."""

    SYSTEM_CONF = '/usr/share/dbus-1/system.conf'

    def bus_config(self, socket):
        with open(self.SYSTEM_CONF) as f:
            text = f.read()
        # What would make this bus the machine's: its user, daemon mode,
        # pid file, socket and the machine's policy directories.
        for pattern in (r'<user>[^<]*</user>', r'<fork\s*/>',
                        r'<pidfile>[^<]*</pidfile>', r'<listen>[^<]*</listen>',
                        r'<includedir>[^<]*</includedir>', r'<syslog\s*/>'):
            text = re.sub(pattern, '', text)
        shipped = os.path.join(SOURCE_DIR, 'systemd',
                               'org.cppcgov.Governor1.conf')
        return text.replace(
            '</busconfig>',
            f'  <listen>unix:path={socket}</listen>\n'
            f'  <include>{shipped}</include>\n</busconfig>')


class ProcStat:
    """A fake <root>/proc/stat whose CPUs' counters a thread advances: a
    busy CPU gains user time, an idle one idle time. The file is rewritten
    in place at a fixed length (cppcgovd keeps it open and rereads it), with
    zero-padded numbers."""

    TICK = 1  # USER_HZ ticks added per update to every CPU

    def __init__(self, rig, cpus):
        self.path = os.path.join(rig.root, 'proc', 'stat')
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.cpus = cpus
        self.busy = set()
        self.user = [0] * cpus
        self.idle = [0] * cpus
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        with open(self.path, 'wb') as f:
            f.write(self._text())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _text(self):
        def line(name, user, idle):
            return f'{name} {user:012d} 000000000000 000000000000 ' \
                   f'{idle:012d} 000000000000 000000000000 000000000000 ' \
                   '000000000000 000000000000 000000000000\n'
        text = line('cpu', sum(self.user), sum(self.idle))
        for cpu in range(self.cpus):
            text += line(f'cpu{cpu}', self.user[cpu], self.idle[cpu])
        return (text + 'intr 0\n').encode()

    def set_busy(self, cpus):
        with self.lock:
            self.busy = set(cpus)

    def _run(self):
        fd = os.open(self.path, os.O_WRONLY)
        try:
            while not self.stopping.wait(0.005):
                with self.lock:
                    for cpu in range(self.cpus):
                        if cpu in self.busy:
                            self.user[cpu] += self.TICK
                        else:
                            self.idle[cpu] += self.TICK
                    text = self._text()
                os.pwrite(fd, text, 0)
        finally:
            os.close(fd)

    def stop(self):
        self.stopping.set()
        self.thread.join(5)


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
    backend because cpu0/acpi_cppc exists."""

    def __init__(self, case):
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
                    ('scaling_cur_freq', f'{max_khz}\n')):
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
        self.write_text(self.config, 'backend:\n'
                        '  type: auto\n'
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
        self.assertRegex(r.stderr, f"<3>writing the saved value '[^']*' to "
                         f"'{re.escape(broken.path)}' failed: "
                         f"{Unwritable.ERROR[broken.how]}")
        self.assertIn(f"<5>'{path}' now holds what is not back", r.stderr)
        self.assertIn("<3>a previous run's changes are not all put back",
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


class PropertiesTest(DaemonTest):

    def test_properties(self):
        rig = self.make_rig()
        rig.start_daemon()
        self.assertEqual(rig.prop('Backend'), 'simulator:rd-n2')
        self.assertEqual(rig.prop('CpuCount'), rig.cpus)
        self.assertEqual(rig.prop('Policy'), 'schedutil')
        self.assertEqual(rig.prop('SamplingPeriodUs'), 1000)
        self.assertEqual(rig.prop('ClampCount'), 0)
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertNotEqual(rig.prop('Version'), '')
        # Idle (no proc/stat): every CPU at the floor (once the first ticks
        # have run), no latency limit.
        def all_at_floor():
            states = rig.cpu_states()
            return states if all(s['requested'] == RD_N2_FLOOR
                                 for s in states) else None

        states, _ = wait_until(all_at_floor, SETTLE_TIMEOUT)
        self.assertIsNotNone(states, rig.cpu_states())
        self.assertEqual([s['cpu'] for s in states], list(range(rig.cpus)))
        for s in states:
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['latency'], -1, s)
            self.assertEqual(s['handles'], [], s)
        stats = rig.stats()
        for key in ('ticks', 'ticks_early', 'ticks_skipped',
                    'tick_late_p50_ns', 'tick_late_p99_ns',
                    'tick_late_max_ns', 'writes', 'write_errors',
                    'hint_to_write_p50_ns', 'hint_to_write_p99_ns'):
            self.assertIn(key, stats)
        self.assertGreater(stats['ticks'], 0)
        self.assertEqual(stats['ticks_early'], 0)
        self.assertEqual(stats['write_errors'], 0)
        self.assertEqual(rig.handles(), [])

    def test_status_command(self):
        """cppcgovctl status --json shows what the properties say."""
        rig = self.make_rig()
        rig.start_daemon()
        r = subprocess.run([CPPCGOVCTL, 'status', '--json',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        status = json.loads(r.stdout)
        self.assertEqual(status.get('format'), 'cppcgov-status')
        text = json.dumps(status)
        self.assertIn('simulator:rd-n2', text)
        self.assertIn('schedutil', text)


class ShippedConfigTest(DaemonTest):

    def test_shipped_policy_with_drop_ins(self):
        """The shipped config/policy.yaml as it is, with drop-ins: the
        backend `auto` finds no acpi_cppc under the fake root and takes the
        simulator with rd-n2's own 16 CPUs; drop-ins apply in name order
        and dot files are skipped."""
        rig = self.make_rig(cpus=16)
        shutil.copy(os.path.join(SOURCE_DIR, 'config', 'policy.yaml'),
                    rig.config)
        drop_ins = [os.path.join(rig.config_dir, name)
                    for name in ('05-test.yaml', '10-site.yaml',
                                 '20-rack.yaml')]
        # Reload needs root or the group: the caller's primary group.
        group = grp.getgrgid(os.getgid()).gr_name
        rig.write_text(drop_ins[0], f'permissions:\n  group: {group}\n')
        rig.write_text(drop_ins[1], 'policy: powersave\n'
                       'sampling:\n  period_us: 2000\n')
        rig.write_text(drop_ins[2], 'policy: performance\n')
        rig.write_text(os.path.join(rig.config_dir, '.30-hidden.yaml'),
                       'policy: schedutil\n')
        rig.start_daemon()
        self.assertEqual(rig.prop('Backend'), 'simulator:rd-n2')
        self.assertEqual(rig.prop('CpuCount'), 16)
        self.assertEqual(rig.prop('Policy'), 'performance')
        self.assertEqual(rig.prop('SamplingPeriodUs'), 2000)
        reply = rig.dbus_send('Reload')
        files = re.findall(r'string "([^"]*)"', reply)
        self.assertEqual(files, [rig.config] + drop_ins)


class ClampTest(DaemonTest):

    def test_clamp_raises_and_release_lowers(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        owner = client.name()

        handle = client.clamp(child.pid, 1024, 1024)
        raised, states = self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                             CLAMP_RAISE_LIMIT)
        self.assertIsNotNone(raised, f'CPU {cpu} did not reach nominal '
                             f'within {CLAMP_RAISE_LIMIT} s: {states[cpu]}')
        print(f'\n  clamp -> CPU {cpu} at nominal in GetCpuStates: '
              f'{raised * 1000:.0f} ms', file=sys.stderr)
        s = states[cpu]
        self.assertEqual(s['clamp_min'], 1024, s)
        # 1024 x headroom is above nominal: the ceiling caps the clamp.
        self.assertIn(s['reason'], ('clamp-min', 'ceiling'), s)
        self.assertIn({'handle': handle, 'owner': owner, 'pid': child.pid,
                       'min': 1024, 'max': 1024}, s['handles'])
        # The other CPUs stay idle at the floor.
        for other in states:
            if other['cpu'] != cpu:
                self.assertEqual(other['requested'], RD_N2_FLOOR, other)
                self.assertEqual(other['handles'], [], other)
        self.assertEqual(rig.handles(), [{
            'handle': handle, 'kind': 'clamp', 'owner': owner,
            'pid': child.pid, 'min': 1024, 'max': 1024, 'latency': 0}])
        self.assertEqual(rig.prop('ClampCount'), 1)

        client.release(handle)
        self.assertEqual(client.wait_ended(handle, 5)[1:3],
                         (owner, 'released'))
        lowered, states = self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                              SETTLE_TIMEOUT)
        self.assertIsNotNone(lowered, f'CPU {cpu} stayed raised after the '
                             f'release: {states[cpu]}')
        self.assertEqual(states[cpu]['handles'], [])
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)
        # The clamp's first write was timed.
        self.assertGreater(rig.stats()['hint_to_write_p50_ns'], 0)

    def test_killed_client_loses_its_clamp(self):
        rig = self.make_rig()
        rig.start_daemon()
        child = rig.busy_child()
        holder = rig.spawn([CPPCGOVCTL, 'hint', '--min', '1024', '--max',
                            '1024', '--pid', str(child.pid),
                            f'--bus-address={rig.address}'],
                           stdout=subprocess.PIPE, text=True)
        line = LineReader(holder.stdout).readline(20)
        m = re.fullmatch(r'handle (\d+)', line or '')
        self.assertIsNotNone(m, f'cppcgovctl hint printed {line!r}')
        handle = int(m.group(1))
        listed = [h for h in rig.handles() if h['handle'] == handle]
        self.assertEqual(len(listed), 1)
        owner = listed[0]['owner']
        self.assertEqual((listed[0]['kind'], listed[0]['pid']),
                         ('clamp', child.pid))

        watcher = rig.session()
        watcher.ask(f'kill {holder.pid} {int(signal.SIGKILL)}')
        ended = watcher.wait_ended(handle, 10)
        self.assertEqual(ended[1:3], (owner, 'client-left'))
        self.assertEndedSoon('SIGKILLed client', ended)
        self.assertNotIn(handle, rig.handle_ids())
        self.assertEqual(rig.prop('ClampCount'), 0)

    def test_exited_task_loses_its_clamp(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        owner = client.name()
        handle = client.clamp(child.pid, 1024, 1024)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                                 SETTLE_TIMEOUT)[0])

        client.ask(f'kill {child.pid} {int(signal.SIGKILL)}')
        ended = client.wait_ended(handle, 10)
        child.wait()
        self.assertEqual(ended[1:3], (owner, 'task-exited'))
        self.assertEndedSoon('SIGKILLed task', ended)
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                                 SETTLE_TIMEOUT)[0])

        # A new busy process on the same CPU is not clamped: nothing is
        # listed, and its CPU stays at the floor for a while.
        newcomer = rig.busy_child()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            s = rig.cpu_states()[cpu]
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['handles'], [], s)
        self.assertEqual(rig.handles(), [])
        self.assertIsNone(newcomer.poll())
        # Clamping a task that has exited is refused.
        self.assertCallError('org.cppcgov.Error.NoSuchTask', client.clamp,
                             child.pid, 1024, 1024)


@unittest.skipUnless(os.geteuid() == 0, 'needs root for a PID namespace')
class PidReuseTest(DaemonTest):
    """The daemon runs as PID 1 of a PID namespace of its own, where the
    test can choose the next PID (kernel.ns_last_pid is per namespace), so
    that a new process really gets the number of a clamped one that
    exited."""

    def in_namespace(self, rig, script, *args):
        """Runs `sh -c script` inside the daemon's PID and mount
        namespaces; returns the Popen (stdout is a pipe)."""
        with open(f'/proc/{rig.daemon.pid}/task/{rig.daemon.pid}/'
                  'children') as f:
            daemon = int(f.read().split()[0])
        return rig.spawn(['nsenter', f'--target={daemon}', '--pid',
                          '--mount', '--', 'sh', '-c', script, 'sh',
                          *map(str, args)],
                         stdout=subprocess.PIPE, text=True)

    def busy_in_namespace(self, rig, next_pid=None):
        """A busy process pinned to host_cpu() in the namespace (with
        PID next_pid when given); returns its PID there."""
        script = ('[ -z "$2" ] || echo $(($2 - 1)) > '
                  '/proc/sys/kernel/ns_last_pid || exit 1\n'
                  'taskset --cpu-list "$1" sh -c "while :; do :; done" &\n'
                  'echo $!\n'
                  'wait\n')
        proc = self.in_namespace(rig, script, host_cpu(),
                                 next_pid if next_pid else '')
        line = LineReader(proc.stdout).readline(20)
        self.assertTrue(line and line.isdigit(), f'printed {line!r}')
        return int(line)

    def test_reused_pid_is_not_clamped(self):
        rig = self.make_rig()
        rig.start_daemon(['unshare', '--pid', '--mount-proc',
                          '--kill-child'])
        cpu = host_cpu()
        pid = self.busy_in_namespace(rig)
        client = rig.session()
        handle = client.clamp(pid, 1024, 1024)
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_NOMINAL,
                                                 SETTLE_TIMEOUT)[0])
        killer = self.in_namespace(rig, 'kill -KILL "$1"', pid)
        self.assertEqual(killer.wait(20), 0)
        self.assertEqual(client.wait_ended(handle, 10)[2], 'task-exited')
        self.assertIsNotNone(self.wait_requested(rig, cpu, RD_N2_FLOOR,
                                                 SETTLE_TIMEOUT)[0])

        newcomer = self.busy_in_namespace(rig, next_pid=pid)
        self.assertEqual(newcomer, pid, 'the namespace did not reuse the PID')
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            s = rig.cpu_states()[cpu]
            self.assertEqual(s['requested'], RD_N2_FLOOR, s)
            self.assertEqual(s['handles'], [], s)
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.prop('ClampCount'), 0)


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


class BadArgumentsTest(DaemonTest):

    def test_named_errors(self):
        rig = self.make_rig()
        rig.start_daemon()
        child = rig.busy_child()
        dead = subprocess.Popen(['true'])
        dead.wait()

        def set_clamp(pid, util_min, util_max, thread='false'):
            return rig.dbus_send('SetClamp', f'uint32:{pid}',
                                 f'boolean:{thread}', f'uint16:{util_min}',
                                 f'uint16:{util_max}')

        invalid = 'org.cppcgov.Error.InvalidArgument'
        self.assertCallError(invalid, set_clamp, child.pid, 2000, 2000)
        self.assertCallError(invalid, set_clamp, child.pid, 0, 1025)
        self.assertCallError(invalid, set_clamp, child.pid, 600, 500)
        self.assertCallError('org.cppcgov.Error.NoSuchTask', set_clamp,
                             999999999, 0, 1024)
        self.assertCallError('org.cppcgov.Error.NoSuchTask', set_clamp,
                             dead.pid, 0, 1024)
        self.assertCallError('org.cppcgov.Error.NoSuchHandle',
                             rig.dbus_send, 'Release', 'uint64:987654321')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             'array:uint32:', 'uint32:0')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             f'array:uint32:{rig.cpus}', 'uint32:0')
        self.assertCallError(invalid, rig.dbus_send, 'SetLatencyCpus',
                             'array:uint32:0', 'uint32:4000000000')
        self.assertCallError('org.cppcgov.Error.NoSuchTask', rig.dbus_send,
                             'SetLatency', f'uint32:{dead.pid}', 'uint32:0')
        # Someone else's handle is no handle of the caller's.
        other = rig.session()
        handle = other.clamp(child.pid, 0, 512)
        self.assertCallError('org.cppcgov.Error.NoSuchHandle', rig.dbus_send,
                             'Release', f'uint64:{handle}')
        self.assertIn(handle, rig.handle_ids())

        # Wrong signatures: an error, and the daemon goes on.
        r = rig.busctl('call', NAME, PATH, IFACE, 'SetClamp', 's', 'hello')
        self.assertNotEqual(r.returncode, 0)
        self.assertNotEqual(r.stderr.strip(), '')
        with self.assertRaises(CallError) as caught:
            rig.dbus_send('SetClamp', 'string:hello')
        self.assertTrue(caught.exception.name.startswith(
            'org.freedesktop.DBus.Error.'), caught.exception.name)
        with self.assertRaises(CallError):
            rig.dbus_send('SetLatencyCpus', 'uint32:0', 'array:uint32:0')
        with self.assertRaises(CallError):
            rig.dbus_send('NoSuchMethod')
        self.assertDaemonServes(rig)
        self.assertEqual(rig.handle_ids(), {handle})
        # Nothing was left behind by the refused calls.
        self.assertEqual(rig.prop('LatencyCount'), 0)
        self.assertEqual(rig.latency_files(), rig.originals)


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


class ReloadTest(DaemonTest):

    def test_reload(self):
        rig = self.make_rig()
        rig.start_daemon()
        watcher = rig.session()
        watcher.name()  # subscribed before anything is reloaded

        # A typo in a key: refused, with the place named.
        rig.write_config('clients:\n  max_calls_per_sekond: 100\n')
        with open(rig.config) as f:
            line = 1 + [n for n, text in enumerate(f)
                        if 'sekond' in text][0]
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertIn(f"'{rig.config}':{line}:3", message)
        self.assertIn('max_calls_per_sekond', message)
        self.assertEqual(rig.prop('Policy'), 'schedutil')
        self.assertDaemonServes(rig)
        # A YAML syntax error too.
        rig.write_config('policy: [performance\n')
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertRegex(message, re.escape(f"'{rig.config}'") + r':\d+:\d+')
        self.assertEqual(rig.prop('Policy'), 'schedutil')

        rig.write_config('policy: performance\n')
        reply = rig.dbus_send('Reload')
        self.assertIn(f'"{rig.config}"', reply)
        self.assertEqual(rig.prop('Policy'), 'performance')
        policy, files = watcher.wait_policy(10)
        self.assertEqual(policy, 'performance')
        self.assertIn(rig.config, files)
        # performance asks for nominal on every CPU.
        for cpu in range(rig.cpus):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_NOMINAL, SETTLE_TIMEOUT)[0], f'CPU {cpu}')

        # SIGHUP reloads as well, and keeps the policy on a bad file.
        rig.write_config('policy: powersave\n')
        rig.daemon.send_signal(signal.SIGHUP)
        self.assertEqual(watcher.wait_policy(10)[0], 'powersave')
        self.assertEqual(rig.prop('Policy'), 'powersave')
        rig.write_config('policy: fastest\n')
        rig.daemon.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(
            lambda: 'keeping the running one' in rig.read_log(), 10)[0])
        self.assertEqual(rig.prop('Policy'), 'powersave')
        self.assertDaemonServes(rig)

    def test_reload_command(self):
        """cppcgovctl reload lists the files read, and reports a bad file
        with the daemon's message."""
        rig = self.make_rig()
        rig.start_daemon()
        rig.write_config('policy: performance\n')
        r = subprocess.run([CPPCGOVCTL, 'reload',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(rig.config, r.stdout)
        self.assertEqual(rig.prop('Policy'), 'performance')
        rig.write_config('policy: [\n')
        r = subprocess.run([CPPCGOVCTL, 'reload',
                            f'--bus-address={rig.address}'],
                           capture_output=True, text=True, timeout=20)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('org.cppcgov.Error.InvalidConfig', r.stderr)
        self.assertIn(f"'{rig.config}'", r.stderr)
        self.assertEqual(rig.prop('Policy'), 'performance')

    def test_fifo_drop_in_is_refused_without_blocking(self):
        """A FIFO named like a drop-in, which nothing ever writes to: the
        reload refuses it by its kind at once, keeps the running policy,
        and the daemon goes on answering."""
        rig = self.make_rig(config='policy: powersave\n')
        rig.start_daemon()
        self.assertEqual(rig.prop('Policy'), 'powersave')
        rig.write_config('policy: performance\n')
        fifo = os.path.join(rig.config_dir, '60-x.yaml')
        os.mkfifo(fifo)
        refusal = f"'{fifo}': a FIFO, not a regular file"

        rig.daemon.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: refusal in rig.read_log(),
                                   SETTLE_TIMEOUT)[0],
                        'no refusal of the FIFO in the log')
        self.assertIn('keeping the running one', rig.read_log())
        started = time.monotonic()
        self.assertEqual(rig.prop('Policy'), 'powersave')
        self.assertLess(time.monotonic() - started, SETTLE_TIMEOUT)
        self.assertDaemonServes(rig)
        # The Reload method says the same, as an error.
        message = self.assertCallError('org.cppcgov.Error.InvalidConfig',
                                       rig.dbus_send, 'Reload')
        self.assertIn(refusal, message)
        self.assertEqual(rig.prop('Policy'), 'powersave')
        # Once it is gone, the files load.
        os.remove(fifo)
        rig.dbus_send('Reload')
        self.assertEqual(rig.prop('Policy'), 'performance')

    def test_fifo_at_start_up_is_refused(self):
        """A FIFO as the main file or as a drop-in: cppcgovd exits at once
        with the refusal instead of waiting for a writer."""
        for what in ('drop-in', 'main file'):
            with self.subTest(what):
                rig = self.make_rig()
                if what == 'drop-in':
                    fifo = os.path.join(rig.config_dir, '60-x.yaml')
                else:
                    fifo = rig.config
                    os.remove(fifo)
                os.mkfifo(fifo)
                try:
                    r = subprocess.run(rig.daemon_command(),
                                       capture_output=True, text=True,
                                       timeout=START_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.fail(f'cppcgovd still runs after {START_TIMEOUT} s '
                              f'with a FIFO as {what}')
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(
                    f"cannot start: '{fifo}': a FIFO, not a regular file",
                    r.stderr)
                rig.close()


class LoadTest(DaemonTest):

    def test_load_follows_proc_stat(self):
        """Simulated CPU n is as busy as host CPU n mod (host CPUs) in
        <root>/proc/stat: with 2 host CPUs and host CPU 1 busy, simulated
        CPUs 1 and 3 climb to nominal and 0 and 2 stay at the floor."""
        rig = self.make_rig(cpus=4, proc_stat_cpus=2)
        rig.start_daemon()
        rig.proc_stat.set_busy({1})
        for cpu in (1, 3):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_NOMINAL, SETTLE_TIMEOUT)[0], f'CPU {cpu}')
        states = rig.cpu_states()
        for cpu in (0, 2):
            self.assertEqual(states[cpu]['requested'], RD_N2_FLOOR,
                             states[cpu])
        self.assertGreater(states[1]['util'], 512, states[1])
        rig.proc_stat.set_busy(set())
        for cpu in (1, 3):
            self.assertIsNotNone(self.wait_requested(
                rig, cpu, RD_N2_FLOOR, SETTLE_TIMEOUT)[0], f'CPU {cpu}')


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


class KernelBackendTest(DaemonTest):
    """The daemon on the kernel backend (KernelRig): it switches every
    cpufreq policy to userspace and writes scaling_setspeed, and puts the
    whole tree back as it found it on SIGTERM, after a crash with
    --restore-only or at the next start, and when it refuses to start."""

    def make_kernel_rig(self):
        self.rig = KernelRig(self)
        return self.rig

    def assertTreeAsBefore(self, rig, before):
        """The sys tree, as sysfs would show it, is as in `before`."""
        after = kernel_view(rig.snapshot())
        before = kernel_view(before)
        changed = sorted(p for p in set(before) | set(after)
                         if before.get(p) != after.get(p))
        self.assertEqual(changed, [], 'changed under sys: ' + ', '.join(
            f'{p}: {before.get(p)!r} -> {after.get(p)!r}'
            for p in changed[:10]))

    def assertGoverning(self, rig):
        """Every policy is under userspace at the floor's kHz (all CPUs are
        idle), and the daemon has recorded what it changed."""
        for n in rig.policies:
            self.assertEqual(rig.policy_file(n, 'scaling_governor'),
                             b'userspace\n', f'policy{n}')
        idle = {n: rig.expected_khz(n, K_FLOOR_KHZ) for n in rig.policies}
        self.assertEqual(rig.wait_setspeeds(idle),
                         {n: f'{khz}\n'.encode() for n, khz in idle.items()})
        self.assertIn('kernel.state', state_files(rig.state))

    def test_governs_and_sigterm_restores_the_tree(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertEqual(rig.prop('Backend'), 'kernel')
        self.assertEqual(rig.prop('CpuCount'), rig.cpus)
        self.assertGoverning(rig)
        states = rig.cpu_states()
        self.assertEqual([s['requested'] for s in states],
                         [K_LOWEST_NONLINEAR] * rig.cpus, states)

        # A clamp on a busy task raises its CPU's policy to nominal, and
        # only that one (policy0's CPUs share it: an idle CPU 0 does not
        # hold a clamped CPU 1 down).
        cpu = host_cpu()
        raised_policy = rig.policy_of(cpu)
        child = rig.busy_child()
        client = rig.session()
        handle = client.clamp(child.pid, 1024, 1024)
        wanted = {n: rig.expected_khz(n, K_NOMINAL_KHZ if n == raised_policy
                                      else K_FLOOR_KHZ)
                  for n in rig.policies}
        self.assertNotEqual(wanted[raised_policy],
                            rig.expected_khz(raised_policy, K_FLOOR_KHZ))
        self.assertEqual(rig.wait_setspeeds(wanted),
                         {n: f'{khz}\n'.encode() for n, khz in wanted.items()},
                         f'clamp on host CPU {cpu}')
        states = rig.cpu_states()
        for c in rig.policies[raised_policy]:
            self.assertEqual(states[c]['requested'], K_NOMINAL, states[c])
        self.assertIn(handle, [h['handle'] for h in states[cpu]['handles']])
        # A resume-latency request too: the restore covers those files.
        client.latency_cpus(0, [0])
        self.assertEqual(rig.latency_file(0), b'n/a\n')
        self.assertNotEqual(kernel_view(rig.snapshot()), kernel_view(before))

        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def test_crash_is_undone(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertGoverning(rig)
        client = rig.session()
        client.latency_cpus(0, [1])
        rig.stop_daemon(signal.SIGKILL)
        client.kill()
        # The crash left the tree changed, and the record of it.
        for n in rig.policies:
            self.assertEqual(rig.policy_file(n, 'scaling_governor'),
                             b'userspace\n', f'policy{n}')
        self.assertEqual(rig.latency_file(1), b'n/a\n')
        self.assertIn('kernel.state', state_files(rig.state))

        r = subprocess.run(rig.daemon_command('--restore-only'),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('restored the cpufreq settings', r.stderr)
        self.assertIn(os.path.join(rig.state, 'kernel.state'), r.stderr)
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

        # A normal start after a crash puts the tree back before it
        # governs: it records the original settings, not the crashed
        # run's, and SIGTERM restores those.
        rig.start_daemon()
        self.assertGoverning(rig)
        rig.stop_daemon(signal.SIGKILL)
        self.assertEqual(rig.policy_file(3, 'scaling_setspeed'),
                         f'{K_FLOOR_KHZ}\n'.encode())
        rig.start_daemon()
        self.assertIn('restored the cpufreq settings that a previous run '
                      'left changed', rig.read_log())
        self.assertEqual(rig.prop('Backend'), 'kernel')
        self.assertGoverning(rig)
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0, rig.read_log())
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def policy_line(self, text, number):
        """kernel.state `text` with its header and policy `number` only."""
        lines = text.splitlines(keepends=True)
        return lines[0] + ''.join(l for l in lines[1:]
                                  if l.startswith(f'policy{number} '))

    def test_crash_with_an_unwritable_file(self):
        for how in self.unwritable_ways():
            with self.subTest(how):
                rig = self.make_kernel_rig()
                before = rig.snapshot()
                rig.start_daemon()
                self.assertGoverning(rig)
                rig.stop_daemon(signal.SIGKILL)
                with open(os.path.join(rig.state, 'kernel.state')) as f:
                    recorded = f.read()
                left = self.policy_line(recorded, 2)
                self.assertIn('policy2 ondemand', left)
                # policy2 stays on userspace as the crash left it.
                broken = Unwritable(rig.policy_path(2, 'scaling_governor'),
                                    how)
                self.assertLeftAndRefused(rig, broken, 'kernel.state', left)
                self.assertEqual(rig.policy_file(0, 'scaling_governor'),
                                 b'schedutil\n')

                broken.fix()
                self.assertEqual(rig.policy_file(2, 'scaling_governor'),
                                 b'userspace\n')
                r = self.run_daemon(rig, '--restore-only')
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn('restored the cpufreq settings', r.stderr)
                self.assertTreeAsBefore(rig, before)
                self.assertEqual(state_files(rig.state), [])
                # The start records ondemand as policy2's original, not the
                # userspace the crash left.
                rig.start_daemon()
                self.assertGoverning(rig)
                with open(os.path.join(rig.state, 'kernel.state')) as f:
                    self.assertEqual(f.read(), recorded)
                self.assertEqual(rig.stop_daemon(signal.SIGTERM), 0,
                                 rig.read_log())
                self.assertTreeAsBefore(rig, before)
                rig.close()

    def test_stop_that_cannot_put_everything_back(self):
        rig = self.make_kernel_rig()
        before = rig.snapshot()
        rig.start_daemon()
        self.assertGoverning(rig)
        with open(os.path.join(rig.state, 'kernel.state')) as f:
            left = self.policy_line(f.read(), 3)
        broken = Unwritable(rig.policy_path(3, 'scaling_setspeed'),
                            'directory')
        self.assertEqual(rig.stop_daemon(signal.SIGTERM), 1, rig.read_log())
        log = rig.read_log()
        path = os.path.join(rig.state, 'kernel.state')
        self.assertTrue(os.path.exists(path), 'kernel.state is gone')
        with open(path) as f:
            self.assertEqual(f.read(), left)
        self.assertEqual(state_files(rig.state), ['kernel.state'])
        self.assertRegex(log, f"<3>writing the saved value '1500000' to "
                         f"'{re.escape(broken.path)}' failed: Is a directory")
        self.assertIn(f"<5>'{path}' now holds what is not back: policy3", log)
        self.assertIn('<3>stopped, but not everything changed was put back: '
                      f"the saved values of '{broken.path}' are not back; "
                      f"'{path}' holds what a restore must still put back",
                      log)

        broken.fix()
        r = self.run_daemon(rig, '--restore-only')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTreeAsBefore(rig, before)
        self.assertEqual(state_files(rig.state), [])

    def test_broken_tree_is_refused_untouched(self):
        cpu_dir = 'devices/system/cpu'
        cases = [
            # (what, file under sys, its new text or None to remove it,
            #  what the message must say besides the file's path)
            ('no userspace governor',
             f'{cpu_dir}/cpufreq/policy3/scaling_available_governors',
             'conservative ondemand powersave performance schedutil \n',
             'does not offer the userspace governor'),
            ('another driver', f'{cpu_dir}/cpufreq/policy2/scaling_driver',
             'acpi-cpufreq\n', 'not cppc_cpufreq'),
            ('no highest_perf', f'{cpu_dir}/cpu3/acpi_cppc/highest_perf',
             None, ''),
        ]
        for what, relative, text, message in cases:
            with self.subTest(what):
                rig = self.make_kernel_rig()
                path = os.path.join(rig.sys, relative)
                if text is None:
                    os.remove(path)
                else:
                    rig.write_text(path, text)
                before = rig.snapshot()
                try:
                    r = subprocess.run(rig.daemon_command(),
                                       capture_output=True, text=True,
                                       timeout=START_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.fail(f'cppcgovd still runs after {START_TIMEOUT} s '
                              'on a broken tree')
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn('cannot start: kernel backend', r.stderr)
                self.assertIn(f"'{path}'", r.stderr)
                self.assertIn(message, r.stderr)
                # Nothing changed, not even scaling_setspeed.
                self.assertEqual(rig.snapshot(), before)
                self.assertEqual(state_files(rig.state), [])
                rig.close()


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
        self.assertEqual(rig.latency_files(), rig.originals)
        self.assertEqual(rig.handles(), [])

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
        ctl = os.path.join(rig.tmp, 'cppcgovctl')
        shutil.copy(CPPCGOVCTL, ctl)
        os.chmod(ctl, 0o755)
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
                           stdout=subprocess.PIPE, text=True)
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


def _terminated(signum, frame):
    for rig in list(LIVE_RIGS):
        rig.close()
    sys.stderr.write('daemon_test.py: terminated\n')
    os._exit(1)


def main():
    global CPPCGOVD, CPPCGOVCTL, SESSION_CLIENT, BUS_FUZZ, SOURCE_DIR
    if len(sys.argv) < 6:
        sys.stderr.write(__doc__)
        return 2
    CPPCGOVD, CPPCGOVCTL, SESSION_CLIENT, BUS_FUZZ, SOURCE_DIR = (
        os.path.abspath(a) for a in sys.argv[1:6])
    for tool in ('dbus-daemon', 'dbus-send', 'busctl'):
        if shutil.which(tool) is None:
            print(f'{tool} not found: skipping', file=sys.stderr)
            return 77
    # meson ends a test that runs too long with SIGTERM: kill what the
    # running case started, remove its files, and go.
    signal.signal(signal.SIGTERM, _terminated)
    program = unittest.main(argv=[sys.argv[0]] + sys.argv[6:], exit=False,
                            verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
