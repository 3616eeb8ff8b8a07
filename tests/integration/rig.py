# SPDX-License-Identifier: Apache-2.0
"""The rigs of cppcgovd's integration tests: the real daemon on a private
dbus-daemon.

Rig is one case's bus (a session-type dbus-daemon listening on a socket in
the case's temporary directory), its fake root (the resume-latency files
under sys/devices/system/cpu, and proc/stat when the case sets the load:
ProcStat) and state directory, and its own cppcgovd on the simulated
rd-n2 machine; SystemPolicyRig is the same on a bus that runs the
distribution's system.conf with the shipped bus policy. The daemon is
driven the way users drive it: busctl for reading state (Rig.call,
Rig.prop), dbus-send where the D-Bus error name matters (Rig.dbus_send),
and session_client (tests/integration/session_client.cpp; Session) where
one connection must hold handles, make many calls or wait for signals.
Children start through as_user(), which can drop to another user. A rig
kills everything it started in close(), registered as the case's cleanup
before anything starts, however the case ends; terminated() closes the
rigs still open when SIGTERM comes.

configure() sets the programs under test and the source tree. The test
modules take them with `from rig import ...`, so it runs before they are
imported (daemon_test.py does).
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

# The programs under test and the source tree: configure() sets them.
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

    def prefer(self, pid, preference):
        return int(self.ask(f'prefer {pid} {preference}')[0])

    def prefer_cpus(self, preference, cpus):
        return int(self.ask(f'prefer-cpus {preference} '
                            + ' '.join(str(c) for c in cpus))[0])

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

    def started(self):
        """Every HandleStarted this connection received: {handle: (kind,
        owner, task, util_min, util_max, latency_us)}."""
        out = {}
        for word in self.ask('started'):
            h, kind, owner, task, lo, hi, lat = word.split(',')
            out[int(h)] = (kind, owner, int(task), int(lo), int(hi), int(lat))
        return out

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
        # What the daemon gets as --root: the fake root, or / for a case
        # that observes the live scheduler (sampling.source, BPF).
        self.daemon_root = self.root
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
                self.config_dir, '--root', self.daemon_root, '--state-dir',
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

        # Before taskset pins it, it may run anywhere, and a hint for it
        # would count on every CPU.
        def pinned():
            try:
                return os.sched_getaffinity(proc.pid) == {host_cpu()}
            except OSError:
                return False
        if not wait_until(pinned, START_TIMEOUT)[0]:
            raise AssertionError('the busy child was never pinned to CPU '
                                 f'{host_cpu()}')
        if user is not None:
            def runs_as_user():
                try:
                    return os.stat(f'/proc/{proc.pid}').st_uid == user
                except OSError:
                    return False
            if not wait_until(runs_as_user, START_TIMEOUT)[0]:
                raise AssertionError(f'the busy child never ran as {user}')
        return proc

    def copy_ctl(self):
        """cppcgovctl copied into the case's directory, which user nobody
        can reach where the build tree may not be, with the shared
        libcppcgov-client it links (found with ldd): returns the copy's
        path and an environment that finds the library beside it."""
        ctl = os.path.join(self.tmp, 'cppcgovctl')
        shutil.copy(CPPCGOVCTL, ctl)
        os.chmod(ctl, 0o755)
        linked = subprocess.run(['ldd', CPPCGOVCTL], capture_output=True,
                                text=True, check=True).stdout
        m = re.search(r'libcppcgov-client\.so\.0 => (\S+)', linked)
        if m:
            shutil.copy(m.group(1), self.tmp)
        return ctl, dict(os.environ, LD_LIBRARY_PATH=self.tmp)

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
                             'min': h[3], 'max': h[4]} for h in s[8]],
                'degraded': s[9]})
        return states

    def cpu_controls(self):
        """GetCpuControls by CPU: the rest of each CPU's last request."""
        return {c[0]: {'min': c[1], 'max': c[2],
                       'epp': None if c[3] < 0 else c[3],
                       'autonomous': c[4],
                       'window_us': None if c[5] == 0 else c[5]}
                for c in self.call('GetCpuControls')[0]}

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


def configure(cppcgovd, cppcgovctl, session_client, bus_fuzz, source_dir):
    """Sets the programs under test and the source tree, for the rigs and
    for the test modules imported after."""
    global CPPCGOVD, CPPCGOVCTL, SESSION_CLIENT, BUS_FUZZ, SOURCE_DIR
    CPPCGOVD, CPPCGOVCTL, SESSION_CLIENT, BUS_FUZZ, SOURCE_DIR = (
        cppcgovd, cppcgovctl, session_client, bus_fuzz, source_dir)


def terminated(signum, frame):
    """The SIGTERM handler: kills what the running case started, removes
    its files, and exits."""
    for rig in list(LIVE_RIGS):
        rig.close()
    sys.stderr.write('daemon_test.py: terminated\n')
    os._exit(1)
