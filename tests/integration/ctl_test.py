# SPDX-License-Identifier: Apache-2.0
"""The built cppcgovctl as an operator meets it: --version, --help on every
command, a usage error as one line and a pointer to the command's --help
(never the whole help), D-Bus failures as sentences (no daemon, a
permission refused with the group named, a timeout, a daemon killed
mid-call), a CPU set the machine lacks, `status --handle N`, and
check-config running the cppcgovd it is given, and the bash completion
(tools/completion/cppcgovctl) on a few command lines.
"""

import grp
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, CPPCGOVD, NOBODY, SETTLE_TIMEOUT, SOURCE_DIR,
                 host_cpu, wait_until)

# Every command, with arguments that are a usage error for it.
COMMANDS = {
    'status': ['--no-such-option'],
    'hint': ['--no-such-option'],
    'latency': ['--no-such-option'],
    'prefer': ['--no-such-option'],
    'reload': ['--no-such-option'],
    'metrics': ['--no-such-option'],
    'headroom': ['--no-such-option'],
    'monitor': ['--no-such-option'],
    'record': ['--no-such-option'],
    'check-config': ['--no-such-option'],
    'acpi-inspect': ['--no-such-option'],
    'sim-demo': ['--no-such-option'],
    'sim-layouts': ['--no-such-option'],
}

# Usage errors beyond an unknown option, with the problem each names.
USAGE_ERRORS = [
    (['hint', '--min'], '--min needs a value'),
    (['headroom', '--window', '20'],
     "--window: '20' is not a number from 50 to 10000"),
    (['headroom', '--min', '--average'], 'give one of --min and --average'),
    (['headroom', '0', '--pid', '1'], 'give a CPU list or --pid, not both'),
    (['hint', '--min', '2000', '--pid', '1'],
     "--min: '2000' is not a number from 0 to 1024"),
    (['hint', '--min', '1'], 'give either --pid or a command'),
    (['latency', '--cpus', '0'], '--us is required'),
    (['latency', '--us', '5', '--cpus', '0-x'],
     "malformed CPU list '0-x'"),
    (['prefer', 'turbo', '--cpus', '0'],
     "unknown preference 'turbo': give performance or efficiency"),
    (['prefer', '--cpus', '0'], 'give the preference: performance or '
     'efficiency'),
    (['prefer', 'efficiency'], 'give one of --pid and --cpus'),
    (['status', '--handle', 'x'], "--handle: 'x' is not a number"),
    (['monitor', '--count', '0'], "--count: '0' is not a number"),
    (['record', 'trace.json'], '--seconds N is required'),
    (['record', '--seconds', '1', '--interval', '5', 'trace.json'],
     "--interval: '5' is not a number from 10"),
    (['check-config', '--root'], '--root needs a value'),
    (['acpi-inspect', '--tables'], '--tables needs at least one file'),
    (['sim-demo', 'no-such-layout'], "unknown layout 'no-such-layout'"),
    (['sim-layouts', 'x'], "unexpected argument 'x'"),
]


def run(args, timeout=30, env=None):
    """cppcgovctl with `args` (and `env` added to the environment): the
    finished process, its output as text."""
    return subprocess.run([CPPCGOVCTL, *args], capture_output=True,
                          text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})


def project_version():
    with open(os.path.join(SOURCE_DIR, 'meson.build')) as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


class CtlUsageTest(DaemonTest):
    """What needs no daemon: help, version and usage errors."""

    def assertUsageError(self, r, command, problem=None):
        where = f'cppcgovctl {" ".join(r.args[1:])}'
        self.assertEqual(r.returncode, 2, f'{where}: {r.stderr}')
        self.assertEqual(r.stdout, '', where)
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 2, f'{where}: {r.stderr}')
        self.assertTrue(lines[0].startswith('cppcgovctl: '), where)
        if problem is not None:
            self.assertIn(problem, lines[0], where)
        pointer = f'{command} ' if command else ''
        self.assertEqual(lines[1], f"Try 'cppcgovctl {pointer}--help'.",
                         where)

    def test_version(self):
        r = run(['--version'])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f'cppcgovctl {project_version()}\n')

    def test_every_command_has_help(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                for flag in ('--help', '-h'):
                    r = run([command, flag])
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stderr, '')
                    self.assertTrue(r.stdout.startswith(
                        f'usage: cppcgovctl {command}'), r.stdout)

    def test_global_help_lists_every_command(self):
        for args in (['--help'], ['help'], ['-h']):
            r = run(args)
            self.assertEqual(r.returncode, 0, r.stderr)
            for command in COMMANDS:
                self.assertRegex(r.stdout, rf'(?m)^  {re.escape(command)}\b')

    def test_every_command_has_one_line_usage_errors(self):
        for command, bad in COMMANDS.items():
            with self.subTest(command=command):
                self.assertUsageError(run([command, *bad]), command,
                                      f"'{bad[0]}'")
        for args, problem in USAGE_ERRORS:
            with self.subTest(args=args):
                self.assertUsageError(run(args), args[0], problem)

    def test_global_usage_errors(self):
        self.assertUsageError(run([]), '', 'no command given')
        self.assertUsageError(run(['frobnicate']), '',
                              "unknown command 'frobnicate'")
        self.assertUsageError(run(['--frobnicate']), '',
                              "unknown option '--frobnicate'")
        self.assertUsageError(run(['--bus-address']), '',
                              '--bus-address needs a value')


class CtlDaemonTest(DaemonTest):
    """The D-Bus commands against a daemon on a private bus, or none."""

    def ctl(self, rig, command, *args, **kwargs):
        """cppcgovctl COMMAND on the rig's bus, then `args`."""
        return run([command, f'--bus-address={rig.address}', *args],
                   **kwargs)

    def test_no_daemon_is_a_sentence(self):
        rig = self.make_rig()
        expected = ('cppcgovctl: cppcgovd is not running: nothing owns '
                    'org.cppcgov.Governor1 on the bus at '
                    f'{rig.address}\n')
        for args in (['status'], ['status', '--handle', '1'], ['reload'],
                     ['monitor', '--count', '1'],
                     ['latency', '--us', '10', '--cpus', '0'],
                     ['latency', '--us', '10', '--pid', str(os.getpid())],
                     ['hint', '--max', '512', '--pid', str(os.getpid())],
                     ['hint', '--max', '512', '--', 'true']):
            with self.subTest(args=args):
                r = self.ctl(rig, *args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(r.stdout, '')
                self.assertEqual(r.stderr, expected)

    def test_unreachable_bus_is_a_sentence(self):
        r = run(['status', '--bus-address=unix:path=/nonexistent/bus'])
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stderr.startswith(
            'cppcgovctl: cannot connect to the bus at '
            'unix:path=/nonexistent/bus'), r.stderr)

    def test_permission_names_the_group_and_how_to_join(self):
        if os.geteuid() != 0:
            self.skipTest('needs root (runs cppcgovctl as user nobody)')
        rig = self.make_rig()
        ctl, env = rig.copy_ctl()
        rig.start_daemon()
        group = grp.getgrgid(os.getgid()).gr_name
        join = (f'; join it with `usermod -aG {group} USER` and log in '
                'again\n')
        for args, action in (
                (['latency', '--us', '10', '--cpus', '0'],
                 'set resume-latency limits'),
                (['reload'], 'reload the policy'),
                (['hint', '--max', '512', '--pid', str(os.getpid())],
                 "clamp other users' tasks")):
            with self.subTest(args=args):
                r = subprocess.run(
                    ['setpriv', f'--reuid={NOBODY}', f'--regid={NOBODY}',
                     '--clear-groups', '--', ctl, *args,
                     f'--bus-address={rig.address}'],
                    capture_output=True, text=True, timeout=30, env=env)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(
                    r.stderr, f"cppcgovctl: only members of group '{group}' "
                    f'(and root) may {action}{join}')
        self.assertEqual(rig.handles(), [])

    def test_bad_cpu_set_names_the_cpus(self):
        rig = self.make_rig()
        rig.start_daemon()
        last = rig.cpus - 1
        r = self.ctl(rig, 'latency', '--us', '10', '--cpus', '0-99')
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr,
                         f'cppcgovctl: CPUs {rig.cpus}-99 do not exist (this '
                         f'machine has CPUs 0-{last})\n')
        r = self.ctl(rig, 'latency', '--us', '10', '--cpus',
                     f'0,{rig.cpus}')
        self.assertEqual(r.stderr,
                         f'cppcgovctl: CPU {rig.cpus} does not exist (this '
                         f'machine has CPUs 0-{last})\n')
        self.assertEqual(rig.handles(), [])
        self.assertEqual(rig.latency_files(), rig.originals)

    def test_status_handle(self):
        rig = self.make_rig()
        rig.start_daemon()
        r = self.ctl(rig, 'status', '--handle', '7')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, 'cppcgovctl: no live handle 7 (there are '
                         'none) (org.cppcgov.Error.NoSuchHandle)\n')

        session = rig.session()
        owner = session.name()
        latency = session.latency_cpus(100, [0, 1])
        task = rig.busy_child()
        clamp = session.clamp(task.pid, 512, 1024)

        r = self.ctl(rig, 'status', '--handle', str(latency))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('kind      latency\n', r.stdout)
        self.assertIn(f'owner     {owner}\n', r.stdout)
        self.assertIn('latency   100 us\n', r.stdout)

        def active_cpus():
            r = self.ctl(rig, 'status', '--handle', str(clamp), '--json')
            self.assertEqual(r.returncode, 0, r.stderr)
            shown = json.loads(r.stdout)
            self.assertEqual(shown['format'], 'cppcgov-handle')
            self.assertEqual(shown['handle'], clamp)
            self.assertEqual(shown['owner'], owner)
            self.assertEqual(shown['task'], task.pid)
            self.assertEqual((shown['utilMin'], shown['utilMax']),
                             (512, 1024))
            return shown['activeCpus'] == [host_cpu()]

        self.assertTrue(wait_until(active_cpus, SETTLE_TIMEOUT)[0],
                        f'handle {clamp} never showed as active on CPU '
                        f'{host_cpu()}, where its task spins')

        live = ', '.join(str(h) for h in sorted((latency, clamp)))
        r = self.ctl(rig, 'status', '--handle', '999')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, 'cppcgovctl: no live handle 999 (the live '
                         f'handles are {live}) '
                         '(org.cppcgov.Error.NoSuchHandle)\n')

    def test_daemon_gone_while_holding_is_said(self):
        """A hold whose daemon dies: with --pid cppcgovctl says the handle
        is gone and exits 1; with a command, that the command runs on
        without it, and exits with the command's status."""
        rig = self.make_rig()
        daemon = rig.start_daemon()
        task = rig.busy_child()
        holders = []
        for args in (['--pid', str(task.pid)], ['--', 'sleep', '5']):
            holder = rig.spawn([CPPCGOVCTL, 'hint', '--min', '512',
                                f'--bus-address={rig.address}', *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            holders.append(holder)
        self.assertTrue(wait_until(lambda: len(rig.handles()) == 2,
                                   SETTLE_TIMEOUT)[0], rig.handles())
        handles = {h['pid']: h['handle'] for h in rig.handles()}
        daemon.kill()
        daemon.wait(10)
        out, err = holders[0].communicate(timeout=30)
        self.assertEqual(holders[0].returncode, 1, err)
        self.assertEqual(out, f'handle {handles[task.pid]}\n')
        self.assertEqual(err, 'cppcgovctl: cppcgovd left the bus; handle '
                         f'{handles[task.pid]} is gone\n')
        out, err = holders[1].communicate(timeout=30)
        self.assertEqual(holders[1].returncode, 0, err)
        self.assertEqual(out, '')
        [sleeper] = [p for p in handles if p != task.pid]
        self.assertEqual(err, 'cppcgovctl: cppcgovd left the bus; handle '
                         f'{handles[sleeper]} is gone, sleep runs on '
                         'without it\n')

    def test_timeout_is_a_sentence(self):
        rig = self.make_rig()
        daemon = rig.start_daemon()
        daemon.send_signal(signal.SIGSTOP)
        try:
            # sd-bus's method-call timeout, in seconds.
            r = self.ctl(rig, 'status', env={'SYSTEMD_BUS_TIMEOUT': '1'})
        finally:
            daemon.send_signal(signal.SIGCONT)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertTrue(r.stderr.startswith(
            'cppcgovctl: cppcgovd did not answer in time'), r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)

    def test_daemon_gone_mid_call_is_a_sentence(self):
        rig = self.make_rig()
        daemon = rig.start_daemon()
        daemon.send_signal(signal.SIGSTOP)

        def names():
            r = rig.busctl('call', 'org.freedesktop.DBus',
                           '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                           'ListNames')
            return r.stdout.count('":')

        before = names()
        client = subprocess.Popen(
            [CPPCGOVCTL, 'status', f'--bus-address={rig.address}'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Once the client is on the bus its call follows at once and waits
        # in the stopped daemon's queue; then the daemon dies.
        self.assertTrue(wait_until(lambda: names() > before,
                                   SETTLE_TIMEOUT)[0],
                        'cppcgovctl never connected to the bus')
        time.sleep(1.0)
        daemon.kill()
        daemon.wait(10)
        _, err = client.communicate(timeout=30)
        self.assertEqual(client.returncode, 1, err)
        self.assertTrue(err.startswith(
            'cppcgovctl: cppcgovd went away before it answered'), err)


class CheckConfigTest(DaemonTest):
    """check-config runs the cppcgovd that CPPCGOVD names, with the same
    options, and ends with its status."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cppcgov-ctl-')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def fake(self, status):
        path = os.path.join(self.tmp, 'cppcgovd')
        with open(path, 'w') as f:
            f.write('#!/bin/sh\n'
                    'for a in "$@"; do printf "<%s>" "$a"; done\n'
                    'echo\n'
                    'echo "on stderr" >&2\n'
                    f'exit {status}\n')
        os.chmod(path, 0o755)
        return path

    def test_passes_the_options_and_the_status(self):
        for status in (0, 1, 2):
            with self.subTest(status=status):
                r = run(['check-config', '--config', '/etc/x.yaml',
                         '--config-dir=/etc/x.d', '--root', '/r'],
                        env={'CPPCGOVD': self.fake(status)})
                self.assertEqual(r.returncode, status, r.stderr)
                self.assertEqual(r.stdout, '<--check-config><--config>'
                                 '</etc/x.yaml><--config-dir></etc/x.d>'
                                 '<--root></r>\n')
                self.assertEqual(r.stderr, 'on stderr\n')
        r = run(['check-config'], env={'CPPCGOVD': self.fake(0)})
        self.assertEqual(r.stdout, '<--check-config>\n')

    def test_a_missing_cppcgovd_is_said(self):
        missing = os.path.join(self.tmp, 'nowhere', 'cppcgovd')
        r = run(['check-config'], env={'CPPCGOVD': missing})
        self.assertEqual(r.returncode, 127)
        self.assertEqual(r.stderr, f'cppcgovctl: cannot run {missing}: No '
                         'such file or directory (the CPPCGOVD environment '
                         'variable names another cppcgovd)\n')

    def test_the_real_cppcgovd(self):
        """With the built cppcgovd, when it has --check-config: the shipped
        policy passes."""
        helped = subprocess.run([CPPCGOVD, '--help'], capture_output=True,
                                text=True, timeout=30)
        if '--check-config' not in helped.stdout + helped.stderr:
            self.skipTest('this cppcgovd has no --check-config')
        r = run(['check-config', '--config',
                 os.path.join(SOURCE_DIR, 'config', 'policy.yaml'),
                 '--config-dir', self.tmp], env={'CPPCGOVD': CPPCGOVD})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


# What a case's bash runs: bash-completion's library when installed, the
# completion, then _cppcgovctl on the words given as arguments (the whole
# line in $LINE), printing COMPREPLY one a line.
COMPLETE = r'''
if [ -f /usr/share/bash-completion/bash_completion ]; then
    . /usr/share/bash-completion/bash_completion
fi
. "$COMPLETION"
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$LINE
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_cppcgovctl
printf '%s\n' "${COMPREPLY[@]}"
'''


def bash_words(line):
    """`line` split into words as bash gives them to a completion: at
    blanks, and at each run of COMP_WORDBREAKS' '=' and ':', which become
    words of their own. A trailing blank starts an empty word."""
    words = []
    for word in line.split(' '):
        words += [w for w in re.split(r'([=:]+)', word) if w] or ['']
    return words


class CompletionTest(DaemonTest):
    """tools/completion/cppcgovctl, sourced in bash, on command lines."""

    def complete(self, line):
        # The built program in the place of the installed one.
        line = CPPCGOVCTL + line.removeprefix('cppcgovctl')
        words = bash_words(line)
        r = subprocess.run(
            ['bash', '--norc', '--noprofile', '-c', COMPLETE, 'bash', *words],
            capture_output=True, text=True, timeout=30,
            env={**os.environ, 'LINE': line, 'COMPLETION': os.path.join(
                SOURCE_DIR, 'tools', 'completion', 'cppcgovctl')})
        self.assertEqual(r.returncode, 0, r.stderr)
        return [w for w in r.stdout.splitlines() if w]

    def test_commands_and_options(self):
        self.assertEqual(self.complete('cppcgovctl st'), ['status'])
        self.assertEqual(self.complete('cppcgovctl sim-'),
                         ['sim-demo', 'sim-layouts'])
        self.assertEqual(sorted(self.complete('cppcgovctl ')),
                         sorted([*COMMANDS, 'help']))
        self.assertEqual(self.complete('cppcgovctl --v'), ['--version'])
        hint = self.complete('cppcgovctl hint --')
        for option in ('--min', '--max', '--pid', '--thread',
                       '--bus-address', '--help'):
            self.assertIn(option, hint)
        self.assertEqual(self.complete('cppcgovctl latency --c'), ['--cpus'])
        self.assertEqual(sorted(self.complete('cppcgovctl prefer ')),
                         ['efficiency', 'performance'])
        self.assertEqual(self.complete('cppcgovctl prefer performance --c'),
                         ['--cpus'])
        self.assertEqual(self.complete('cppcgovctl status --h'),
                         ['--handle', '--help'])
        # Every option a command's --help names is completed.
        for command in COMMANDS:
            with self.subTest(command=command):
                usage = run([command, '--help']).stdout
                # The usage lines and the option table's first column.
                named = set(re.findall(
                    r'(?m)(?:^usage:.*?|^ +)\[?(--[a-z][a-z-]*)', usage))
                for line in usage.splitlines():
                    if line.startswith('usage:'):
                        named |= set(re.findall(r'(--[a-z][a-z-]*)', line))
                offered = set(self.complete(f'cppcgovctl {command} --'))
                self.assertEqual(named - offered, set(), usage)

    def test_layouts_for_sim_demo(self):
        layouts = [line.split('\t')[0]
                   for line in run(['sim-layouts']).stdout.splitlines()]
        self.assertGreater(len(layouts), 1)
        self.assertEqual(self.complete('cppcgovctl sim-demo '), layouts)
        self.assertEqual(
            self.complete(f'cppcgovctl sim-demo {layouts[0]} '
                          f'{layouts[-1][:2]}'),
            [name for name in layouts if name.startswith(layouts[-1][:2])])

    def test_the_command_hint_runs(self):
        self.assertIn('true', self.complete('cppcgovctl hint --min 5 -- tru'))
        self.assertIn('true', self.complete('cppcgovctl latency --us 5 tru'))

    def test_handles_of_the_running_daemon(self):
        rig = self.make_rig()
        rig.start_daemon()
        session = rig.session()
        handles = sorted(session.latency_cpus(100, [0]) for _ in range(3))
        session.release(handles.pop(1))
        for line in (f'cppcgovctl --bus-address={rig.address} status '
                     '--handle ',
                     f'cppcgovctl status --bus-address {rig.address} '
                     '--handle '):
            with self.subTest(line=line):
                self.assertEqual(self.complete(line),
                                 [str(h) for h in handles])
        # No daemon on the bus: nothing to offer, and nothing said.
        rig.stop_daemon()
        self.assertEqual(self.complete(
            f'cppcgovctl --bus-address={rig.address} status --handle '), [])
