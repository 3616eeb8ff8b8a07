# SPDX-License-Identifier: Apache-2.0
"""The daemon's own handling of its configuration: `cppcgovd
--check-config` (every error, warnings, exit status, usage errors), a
reload whose files change what needs a restart (the rest applied, the
PendingRestart property and the log saying so), warnings at start for
drop-ins not read and overrides naming CPUs the machine lacks, the refusal
of `backend: auto` without CPPC (StartupTest), and plain log lines unless
stderr is the journal (LogTest).
"""

import grp
import os
import subprocess

from daemon_case import DaemonTest
from rig import CPPCGOVCTL, CPPCGOVD, START_TIMEOUT

RESTART = 'backend changes need a restart (systemctl restart cppcgovd)'


def group():
    return grp.getgrgid(os.getgid()).gr_name


class CheckConfigTest(DaemonTest):

    def check(self, rig, *extra):
        return subprocess.run(
            [CPPCGOVD, '--check-config', '--config', rig.config,
             '--config-dir', rig.config_dir, '--root', rig.root, *extra],
            capture_output=True, text=True, timeout=START_TIMEOUT)

    def test_every_error_and_warning(self):
        rig = self.make_rig(cpus=4)
        rig.write_config('schedutil:\n'
                         '  headroom: 0.5\n'
                         '  boots: true\n'
                         'overrides:\n'
                         '  - cpus: 1\n'
                         '  - cpus: 8-9\n'
                         '  - domain: 999\n'
                         '  - cpus: 2-1\n')
        rig.write_text(os.path.join(rig.config_dir, '60-site.yml'), '')
        rig.write_text(os.path.join(rig.config_dir, '10-site.yaml'),
                       'policy: fastest\n')
        r = self.check(rig)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        # The rig's file starts with 7 lines of its own.
        c = rig.config
        drop_in = os.path.join(rig.config_dir, '10-site.yaml')
        expected = [
            f'error: {c}:9:13: schedutil.headroom: ',
            f'error: {c}:10:3: schedutil.boots: unknown key',
            f'error: {c}:15:11: overrides[3].cpus: ',
            f'error: {drop_in}:1:9: policy: expected one of',
            f"warning: '{rig.config_dir}/60-site.yml': not read",
            f'warning: {c}:13: overrides: CPUs 8-9 do not exist (this '
            'machine has CPUs 0-3)',
            f'warning: {c}:14: overrides: domain 999 does not exist',
            '2 files read: 4 errors, 3 warnings',
        ]
        self.assertEqual(len(lines), len(expected), r.stdout)
        for line, start in zip(lines, expected):
            self.assertTrue(line.startswith(start), f'{line!r} vs {start!r}')
        self.assertEqual(r.stderr, '')

    def test_warnings_alone_pass_and_nothing_is_touched(self):
        rig = self.make_rig(cpus=4)
        rig.write_text(os.path.join(rig.config_dir, 'x.yaml~'), '')
        before = rig.latency_files()
        r = self.check(rig)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("x.yaml~': not read", r.stdout)
        self.assertTrue(r.stdout.endswith('1 file read: 0 errors, '
                                          '1 warning\n'), r.stdout)
        self.assertEqual(rig.latency_files(), before)
        self.assertEqual(os.listdir(rig.state), [])

    def test_usage_errors(self):
        for args in (['--frobnicate'], ['--log-level', 'loud'],
                     ['--check-config', '--bus-address', 'x'], ['--config']):
            with self.subTest(args=args):
                r = subprocess.run([CPPCGOVD, *args], capture_output=True,
                                   text=True, timeout=START_TIMEOUT)
                self.assertEqual(r.returncode, 2)
                lines = r.stderr.splitlines()
                self.assertEqual(len(lines), 2, r.stderr)
                self.assertTrue(lines[0].startswith('cppcgovd: '), lines[0])
                self.assertEqual(lines[1], "Try 'cppcgovd --help' for more "
                                 "information.")
                self.assertEqual(r.stdout, '')

    def test_version(self):
        r = subprocess.run([CPPCGOVD, '--version'], capture_output=True,
                           text=True, timeout=START_TIMEOUT)
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r'^cppcgovd \d+\.\d+\.\d+\n$')


class RestartTest(DaemonTest):

    def test_reload_applies_the_rest_and_says_what_needs_a_restart(self):
        rig = self.make_rig(cpus=4)
        rig.start_daemon()
        self.assertEqual(rig.prop('PendingRestart'), '')
        backend = rig.prop('Backend')
        rig.write_text(rig.config, 'backend:\n  type: kernel\n'
                       f'permissions:\n  group: {group()}\n'
                       'sampling:\n  period_us: 2000\n')
        reply = rig.dbus_send('Reload')
        self.assertIn(rig.config, reply)
        self.assertEqual(rig.prop('SamplingPeriodUs'), 2000)
        self.assertEqual(rig.prop('Backend'), backend)
        self.assertEqual(rig.prop('PendingRestart'), RESTART)
        self.assertIn(f'not applied: {RESTART}', rig.read_log())
        # Still pending on the next reload: nothing restarted. The client
        # says so after the files it read, and succeeds.
        r = subprocess.run([CPPCGOVCTL, f'--bus-address={rig.address}',
                            'reload'], capture_output=True, text=True,
                           timeout=START_TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(rig.config, r.stdout)
        self.assertEqual(r.stderr,
                         f'cppcgovctl: reload: not applied: {RESTART}\n')
        self.assertEqual(rig.prop('PendingRestart'), RESTART)
        # The files back as the daemon runs: nothing waits any more.
        rig.write_config('')
        rig.dbus_send('Reload')
        self.assertEqual(rig.prop('PendingRestart'), '')
        self.assertDaemonServes(rig)

    def test_warnings_at_start_and_on_reload(self):
        rig = self.make_rig(cpus=4, config='overrides:\n  - cpus: 100-200\n')
        rig.write_text(os.path.join(rig.config_dir, '60-site.yml'), '')
        rig.start_daemon()
        absent = ('overrides: CPUs 100-200 do not exist (this machine has '
                  'CPUs 0-3)')
        yml = f"'{rig.config_dir}/60-site.yml': not read"
        log = rig.read_log()
        self.assertEqual(log.count(absent), 1, log)
        self.assertEqual(log.count(yml), 1, log)
        rig.dbus_send('Reload')
        log = rig.read_log()
        self.assertEqual(log.count(absent), 2, log)
        self.assertEqual(log.count(yml), 2, log)


class StartupTest(DaemonTest):

    def test_auto_without_cppc_refuses(self):
        rig = self.make_rig(cpus=4)
        rig.write_text(rig.config, 'backend:\n  type: auto\n')
        r = self.run_daemon(rig)
        self.assertEqual(r.returncode, 1, r.stderr)
        probe = os.path.join(rig.root, 'sys/devices/system/cpu/cpu0/'
                             'acpi_cppc')
        self.assertIn(f"looked for '{probe}'", r.stderr)
        self.assertIn('set backend: simulator to run the simulator on '
                      'purpose', r.stderr)
        self.assertNotIn('started', r.stderr)
        self.assertEqual(os.listdir(rig.state), ['lock'])


class LogTest(DaemonTest):

    def refusal(self, journal_stream=None):
        """The stderr of a start that refuses (backend auto without CPPC),
        written into a pipe of this process's making; JOURNAL_STREAM is
        journal_stream(fstat of the pipe) when given, else unset."""
        rig = self.make_rig(cpus=4)
        rig.write_text(rig.config, 'backend:\n  type: auto\n')
        read_end, write_end = os.pipe()
        env = {k: v for k, v in os.environ.items() if k != 'JOURNAL_STREAM'}
        if journal_stream:
            env['JOURNAL_STREAM'] = journal_stream(os.fstat(write_end))
        try:
            r = subprocess.run(rig.daemon_command(), stderr=write_end,
                               stdout=subprocess.DEVNULL, env=env,
                               timeout=START_TIMEOUT)
        finally:
            os.close(write_end)
        with os.fdopen(read_end) as f:
            text = f.read()
        self.assertEqual(r.returncode, 1, text)
        rig.close()
        return text

    def test_plain_lines_in_a_pipe(self):
        text = self.refusal()
        self.assertIn('cannot start: ', text)
        for line in text.splitlines():
            self.assertFalse(line.startswith('<'), line)

    def test_priority_prefix_only_when_stderr_is_the_journal(self):
        text = self.refusal(lambda st: f'{st.st_dev}:{st.st_ino}')
        self.assertTrue(text.startswith('<3>cannot start: '), text)
        # A stream that is not stderr's: plain.
        text = self.refusal(lambda st: f'{st.st_dev}:{st.st_ino + 1}')
        self.assertTrue(text.startswith('cannot start: '), text)
