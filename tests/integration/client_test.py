# SPDX-License-Identifier: Apache-2.0
"""libcppcgov-client as an application uses it: the example program
(tools/client/example/clamp_self.c) and a probe (PROBE below) compiled
with the system's cc and `pkg-config --cflags --libs cppcgov-client`
against the build's uninstalled pkg-config file (build/meson-uninstalled),
run against the rig's daemon through DBUS_SYSTEM_BUS_ADDRESS. The clamp
shows in ListHandles and GetCpuStates while the example works, and ends
(HandleEnded, ListHandles empty) when it exits and when it is killed with
SIGKILL; a refused clamp names the D-Bus error; a hint that the daemon
ends is seen ended through the library's event-loop calls; a forked child
can neither use nor release its parent's hint, but keeps it alive while
it holds the socket.
PythonExampleTest runs the README's python3-dbus example (section
"Applications") the same way.

Needs cc and pkg-config (skipped without them, a failure with CI=true)
and the build tree (CPPCGOV_BUILD_ROOT, which meson sets); the Python
example needs python3-dbus.
"""

import errno
import grp
import os
import re
import shutil
import signal
import subprocess
import sys

from daemon_case import DaemonTest
from rig import (HANDLE_GONE_LIMIT, NOBODY, SETTLE_TIMEOUT, SOURCE_DIR,
                 LineReader, host_cpu, wait_until)

# A second application: clamps (or bounds the latency of) what its
# arguments say, prints "handle N" or "error CODE NAME | DESCRIPTION", then
# waits, servicing the connection through get_fd/get_events/process, until
# the daemon ends the hint, and prints "ended REASON". "fork-latency CPU"
# forks instead (see forked() below).
PROBE = r'''
#define _GNU_SOURCE
#include <cppcgov/client.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A first child tries the hint (-ECHILD) and frees it, which must not end
 * it; a second child keeps the socket while the parent exits without
 * freeing, and itself exits once a line comes on stdin. */
static int forked(cppcgov_hint *hint)
{
    pid_t first = fork();
    if (first == 0) {
        printf("child %d\n", cppcgov_hint_process(hint));
        cppcgov_hint_free(hint);
        fflush(stdout);
        _exit(0);
    }
    waitpid(first, NULL, 0);
    printf("live %d\n", cppcgov_hint_process(hint));
    fflush(stdout);
    if (fork() == 0) {
        char line[8];
        if (fgets(line, sizeof(line), stdin) == NULL)
            _exit(1);
        _exit(0);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    cppcgov_hint *hint = NULL;
    cppcgov_error error;
    int r;
    if (argc == 3 && strcmp(argv[1], "clamp") == 0)
        r = cppcgov_clamp_task(atoi(argv[2]), 0, 256, 768, &hint, &error);
    else if (argc == 3 && strcmp(argv[1], "latency-cpu") == 0) {
        const uint32_t cpu = (uint32_t)atoi(argv[2]);
        r = cppcgov_latency_cpus(&cpu, 1, 20, &hint, &error);
    } else if (argc == 3 && strcmp(argv[1], "fork-latency") == 0) {
        const uint32_t cpu = (uint32_t)atoi(argv[2]);
        r = cppcgov_latency_cpus(&cpu, 1, 20, &hint, &error);
    } else
        return 2;
    if (r < 0) {
        printf("error %d %s | %s\n", r, error.name, error.description);
        return 1;
    }
    printf("handle %llu\n", (unsigned long long)cppcgov_hint_get_handle(hint));
    fflush(stdout);
    if (strcmp(argv[1], "fork-latency") == 0)
        return forked(hint);
    while (cppcgov_hint_process(hint) > 0) {
        struct pollfd p = {cppcgov_hint_get_fd(hint),
                           (short)cppcgov_hint_get_events(hint), 0};
        if (poll(&p, 1, -1) < 0)
            return 3;
    }
    printf("ended %s\n", cppcgov_hint_get_end_reason(hint));
    cppcgov_hint_free(hint);
    return 0;
}
'''


def build_root():
    return os.environ.get('CPPCGOV_BUILD_ROOT', '')


def skip_or_fail(case, what):
    """Skips `case` for `what` missing, or fails it when CI=true."""
    if os.environ.get('CI') == 'true':
        case.fail(f'{what} not found (CI=true)')
    case.skipTest(f'{what} not found')


def start_hinting(case, rig, command, user=None):
    """Runs `command` with the rig's bus as its system bus; returns the
    process, its line reader and the handle it printed first."""
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address)
    proc = rig.spawn(command, user, stdout=subprocess.PIPE, text=True,
                     env=env)
    out = LineReader(proc.stdout)
    line = out.readline(20)
    m = re.fullmatch(r'handle (\d+)', line or '')
    case.assertIsNotNone(m, f'{command[0]} printed {line!r}')
    return proc, out, int(m.group(1))


class ClientLibraryTest(DaemonTest):

    def setUp(self):
        missing = [t for t in ('cc', 'pkg-config') if shutil.which(t) is None]
        uninstalled = os.path.join(build_root(), 'meson-uninstalled')
        if not os.path.isdir(uninstalled):
            missing.append(uninstalled)
        if missing:
            skip_or_fail(self, ', '.join(missing))
        self.pkg_env = dict(os.environ, PKG_CONFIG_PATH=uninstalled)

    def compile(self, rig, source, name):
        """Compiles C `source` (a path) into the rig's directory as an
        application would, with the library beside it (found through
        $ORIGIN, so that user nobody can run it too)."""
        flags = subprocess.run(
            ['pkg-config', '--cflags', '--libs', 'cppcgov-client'],
            capture_output=True, text=True, env=self.pkg_env, check=True)
        self.assertIn('-lcppcgov-client', flags.stdout)
        program = os.path.join(rig.tmp, name)
        r = subprocess.run(['cc', '-Wall', '-Werror', '-o', program, source,
                            *flags.stdout.split(), '-Wl,-rpath,$ORIGIN'],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        for d in re.findall(r'-L(\S+)', flags.stdout):
            lib = os.path.join(d, 'libcppcgov-client.so.0')
            if os.path.exists(lib):
                shutil.copy(lib, rig.tmp)
        os.chmod(program, 0o755)
        return program

    def example(self, rig):
        return self.compile(
            rig, os.path.join(SOURCE_DIR, 'tools', 'client', 'example',
                              'clamp_self.c'), 'clamp_self')

    def probe(self, rig):
        source = os.path.join(rig.tmp, 'probe.c')
        with open(source, 'w') as f:
            f.write(PROBE)
        return self.compile(rig, source, 'probe')

    def start(self, rig, command, user=None):
        return start_hinting(self, rig, command, user)

    def assertClampShows(self, rig, proc, handle):
        self.assertEqual(rig.handles(), [{
            'handle': handle, 'kind': 'clamp',
            'owner': rig.handles()[0]['owner'], 'pid': proc.pid,
            'min': 512, 'max': 1024, 'latency': 0}])
        cpu = host_cpu()

        def shown():
            return any(h['handle'] == handle and h['pid'] == proc.pid
                       for h in rig.cpu_states()[cpu]['handles'])

        self.assertTrue(wait_until(shown, SETTLE_TIMEOUT)[0],
                        f'handle {handle} never showed on CPU {cpu}, where '
                        'the example works')

    def start_example(self, seconds):
        """The example working for `seconds` on host_cpu(), its clamp
        seen: the rig, a session watching, the process, its output and
        the handle."""
        rig = self.make_rig()
        rig.start_daemon()
        program = self.example(rig)
        session = rig.session()
        proc, out, handle = self.start(
            rig, ['taskset', '--cpu-list', str(host_cpu()), program,
                  str(seconds)])
        self.assertClampShows(rig, proc, handle)
        return rig, session, proc, out, handle

    def test_example_clamps_itself_until_it_exits(self):
        rig, session, proc, out, handle = self.start_example(3)
        self.assertEqual(out.readline(20), 'done')
        self.assertEqual(proc.wait(20), 0)
        self.assertEqual(session.wait_ended(handle, 10)[2], 'released')
        self.assertEqual(rig.handles(), [])

    def test_killed_example_loses_its_clamp(self):
        rig, session, proc, _, handle = self.start_example(60)
        session.ask(f'kill {proc.pid} {int(signal.SIGKILL)}')
        ended = session.wait_ended(handle, 10)
        self.assertIn(ended[2], ('client-left', 'task-exited'))
        self.assertEndedSoon('SIGKILLed application', ended)
        self.assertTrue(wait_until(lambda: rig.handles() == [],
                                   HANDLE_GONE_LIMIT)[0], rig.handles())

    def test_refused_clamp_names_the_error(self):
        if os.geteuid() != 0:
            self.skipTest('needs root (runs the probe as user nobody)')
        rig = self.make_rig()
        rig.start_daemon()
        program = self.probe(rig)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address)
        # Another user's task: this test's own process, run by root.
        r = subprocess.run(
            ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
             '--clear-groups', '--', program, 'clamp', str(os.getpid())],
            capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        m = re.fullmatch(r'error (-\d+) (\S+) \| (.*)\n', r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(int(m.group(1)), -1)  # -EPERM
        self.assertEqual(m.group(2), 'org.cppcgov.Error.NotPermitted')
        self.assertEqual(m.group(3), 'org.cppcgov.Error.NotPermitted: '
                         f'process {os.getpid()} belongs to another user; '
                         'clamping it needs root or membership of group '
                         f"'{grp.getgrgid(os.getgid()).gr_name}' "
                         '(permissions.group)')
        self.assertEqual(rig.handles(), [])

    def test_no_daemon_names_the_error(self):
        rig = self.make_rig()
        program = self.probe(rig)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address)
        r = subprocess.run([program, 'clamp', str(os.getpid())],
                           capture_output=True, text=True, timeout=30,
                           env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r'^error -\d+ org\.freedesktop\.DBus\.'
                         r'Error\.ServiceUnknown \| org\.freedesktop\.DBus\.'
                         r'Error\.ServiceUnknown: ')

    def test_a_forked_child_keeps_the_socket_but_not_the_hint(self):
        rig = self.make_rig()
        rig.start_daemon()
        program = self.probe(rig)
        session = rig.session()
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address)
        proc = rig.spawn([program, 'fork-latency', '0'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
        out = LineReader(proc.stdout)
        handle = int(out.readline(20).split()[1])
        # The child may not use it (-ECHILD), and its free released
        # nothing: the parent still sees the hint live.
        self.assertEqual(out.readline(20), f'child {-errno.ECHILD}')
        self.assertEqual(out.readline(20), 'live 1')
        # The parent exited without freeing it; the second child holds the
        # socket, and the hint with it.
        self.assertEqual(proc.wait(20), 0)
        self.assertEqual(rig.handle_ids(), {handle})
        proc.stdin.write('go\n')
        proc.stdin.flush()
        self.assertEqual(session.wait_ended(handle, 10)[2], 'client-left')
        self.assertEqual(rig.handles(), [])

    def test_event_loop_sees_the_daemon_end_the_hint(self):
        rig = self.make_rig()
        rig.start_daemon()
        program = self.probe(rig)
        # The task exits: the daemon ends the clamp.
        task = rig.busy_child()
        proc, out, handle = self.start(rig, [program, 'clamp',
                                             str(task.pid)])
        task.kill()
        task.wait(10)
        self.assertEqual(out.readline(20), 'ended task-exited')
        self.assertEqual(proc.wait(10), 0)
        # The daemon stops: its HandleEnded comes first.
        proc, out, handle = self.start(rig, [program, 'latency-cpu', '0'])
        self.assertEqual(rig.handle_ids(), {handle})
        rig.stop_daemon()
        self.assertIn(out.readline(20), ('ended daemon-stopped',
                                         'ended daemon-left'))
        self.assertEqual(proc.wait(10), 0)


class PythonExampleTest(DaemonTest):

    def example(self):
        """The README's python3-dbus example and an interpreter that has
        the module."""
        with open(os.path.join(SOURCE_DIR, 'README.md')) as f:
            readme = f.read()
        section = readme[readme.index('\n## Applications\n'):]
        m = re.search(r'```python\n(.*?)```', section, re.S)
        self.assertIsNotNone(m, 'no Python example under Applications')
        for python in (sys.executable, '/usr/bin/python3'):
            if subprocess.run([python, '-c', 'import dbus'],
                              capture_output=True).returncode == 0:
                return m.group(1), python
        skip_or_fail(self, 'python3-dbus')

    def test_readme_example_clamps_itself_until_it_exits(self):
        code, python = self.example()
        rig = self.make_rig()
        rig.start_daemon()
        script = os.path.join(rig.tmp, 'clamp_self.py')
        with open(script, 'w') as f:
            f.write(code)
        session = rig.session()
        proc, _, handle = start_hinting(self, rig, [python, script])
        self.assertEqual(rig.handles(), [{
            'handle': handle, 'kind': 'clamp',
            'owner': rig.handles()[0]['owner'], 'pid': proc.pid,
            'min': 512, 'max': 1024, 'latency': 0}])
        self.assertEqual(proc.wait(20), 0)
        self.assertEqual(session.wait_ended(handle, 10)[2], 'released')
        self.assertEqual(rig.handles(), [])
