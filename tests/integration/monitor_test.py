# SPDX-License-Identifier: Apache-2.0
"""`cppcgovctl monitor` at 192 simulated CPUs (the rd-n2 layout, which
scales), the way an operator meets it: in a 100x30 tmux pane (a private
tmux server; send-keys, capture-pane) every page holds the header and the
column names and no line is wider than the pane, the pages together show
every CPU once, `--cpus` keeps the CPUs listed, a clamp the case adds shows
as a HandleStarted event and in its CPU's HANDLES cell, its end as
HandleEnded, a resize redraws to the new size, and `q` quits with status 0
leaving the terminal's settings as they were and the alternate screen.
`--json` is read line by line: each line one object, the refreshes with
192 CPUs, the clamp's events, and no terminal escapes. Needs tmux (skipped
without it, failed with CI=true). StatusHealthTest: `status` and `status
--json` with an override: the policy line names the default and the CPUs
that differ, each CPU's row its own policy and its MHz, the JSON the
statistics and each CPU's domain, policy and kHz.
"""

import json
import os
import re
import shutil
import subprocess
import time

from daemon_case import DaemonTest
from rig import CPPCGOVCTL, SETTLE_TIMEOUT, LineReader, host_cpu, wait_until

CPUS = 192
WIDTH = 100
HEIGHT = 30
# How long a pane may take to show what a key or the daemon changed: a
# refresh every 200 ms on a loaded machine.
SHOW_TIMEOUT = 15.0
INTERVAL_MS = 200


class Tmux:
    """A private tmux server with one pane running sh, WIDTH x HEIGHT and no
    status line, killed by close()."""

    def __init__(self, case, tmp):
        self.socket = f'cppcgov-monitor-{os.getpid()}-{id(self)}'
        self.tmp = tmp
        case.addCleanup(self.close)
        self.tmux('-f', '/dev/null', 'new-session', '-d', '-x', str(WIDTH),
                  '-y', str(HEIGHT), 'env', '-i', f'PATH={os.environ["PATH"]}',
                  'TERM=screen', 'PS1=$ ', 'sh')
        self.tmux('set-option', '-g', 'status', 'off')

    def tmux(self, *args):
        r = subprocess.run(['tmux', '-L', self.socket, *args],
                           capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise AssertionError(f'tmux {" ".join(args)}: {r.stderr}')
        return r.stdout

    def display(self, fmt):
        return self.tmux('display-message', '-p', '-t', '0', fmt).strip()

    def size(self):
        return (int(self.display('#{pane_width}')),
                int(self.display('#{pane_height}')))

    def keys(self, *keys):
        self.tmux('send-keys', '-t', '0', *keys)

    def type(self, line):
        self.tmux('send-keys', '-t', '0', '-l', line)
        self.keys('Enter')

    def lines(self):
        """The pane's lines as shown (capture-pane drops trailing
        blanks), without the blank lines under the last."""
        lines = self.tmux('capture-pane', '-p', '-t', '0').split('\n')
        while lines and lines[-1] == '':
            lines.pop()
        return lines

    def wait(self, predicate, what, timeout=SHOW_TIMEOUT):
        """The pane's lines once predicate(lines) holds; fails naming
        `what` and showing the pane when `timeout` passes first."""
        last = {}

        def shown():
            last['lines'] = self.lines()
            return predicate(last['lines'])

        if not wait_until(shown, timeout, 0.05)[0]:
            raise AssertionError(f'the pane never showed {what}:\n'
                                 + '\n'.join(last['lines']))
        return last['lines']

    def close(self):
        subprocess.run(['tmux', '-L', self.socket, 'kill-server'],
                       capture_output=True, timeout=20)


def ctl(rig, *args):
    """cppcgovctl `args` on the rig's bus, to its end: the finished
    process, its output as text."""
    return subprocess.run([CPPCGOVCTL, *args, f'--bus-address={rig.address}'],
                          capture_output=True, text=True, timeout=60)


def footer(lines):
    """(page, pages) of the monitor's footer line, or None."""
    for line in lines:
        m = re.match(r'page (\d+)/(\d+)  CPUs ', line)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def table(lines):
    """{cpu: its row's cells} of the rows between the column names and
    the footer."""
    rows = {}
    inside = False
    for line in lines:
        if line.startswith('CPU  DOM'):
            inside = True
        elif line.startswith('page '):
            break
        elif inside:
            cells = line.split()
            rows[int(cells[0])] = cells
    return rows


class MonitorTest(DaemonTest):

    def setUp(self):
        if shutil.which('tmux') is None:
            if os.environ.get('CI') == 'true':
                self.fail('tmux is missing (CI=true: failing instead of '
                          'skipping)')
            self.skipTest('needs tmux')

    def start(self):
        rig = self.make_rig(cpus=CPUS)
        rig.start_daemon()
        return rig

    def monitor_line(self, rig, *args):
        """A shell line that records the terminal's settings, runs the
        monitor, then records its exit status and the settings again."""
        t = rig.tmp
        return (f'stty -g > {t}/stty-before; {CPPCGOVCTL} monitor '
                f'--bus-address={rig.address} --interval {INTERVAL_MS} '
                f'{" ".join(args)}; echo $? > {t}/status; '
                f'stty -g > {t}/stty-after')

    def assertQuits(self, rig, pane):
        """Sends q; asserts status 0, the settings back as they were and
        the alternate screen left."""
        status = os.path.join(rig.tmp, 'status')
        after = os.path.join(rig.tmp, 'stty-after')
        pane.keys('q')
        self.assertTrue(wait_until(
            lambda: os.path.exists(after) and os.path.getsize(after) > 0,
            SHOW_TIMEOUT)[0], 'the monitor did not quit on q:\n'
            + '\n'.join(pane.lines()))
        with open(status) as f:
            self.assertEqual(f.read().strip(), '0')
        with open(os.path.join(rig.tmp, 'stty-before')) as f:
            before = f.read()
        with open(after) as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(pane.display('#{alternate_on}'), '0')
        os.unlink(status)
        os.unlink(after)

    def assertPage(self, lines, width, height):
        self.assertLessEqual(len(lines), height, '\n'.join(lines))
        for line in lines:
            self.assertLessEqual(len(line), width, line)
        self.assertTrue(lines[0].startswith('cppcgovd '), lines[0])
        self.assertTrue(lines[1].startswith('policy schedutil'), lines[1])
        self.assertTrue(any(line.startswith('CPU  DOM  POLICY')
                            for line in lines), '\n'.join(lines))

    def test_pages_show_every_cpu_under_the_header(self):
        rig = self.start()
        pane = Tmux(self, rig.tmp)
        self.assertEqual(pane.size(), (WIDTH, HEIGHT))
        pane.type(self.monitor_line(rig))
        lines = pane.wait(footer, 'the first page')
        page, pages = footer(lines)
        self.assertEqual(page, 1)
        self.assertGreater(pages, 1)
        seen = {}
        for n in range(1, pages + 1):
            lines = pane.wait(lambda ls, n=n: footer(ls) == (n, pages),
                              f'page {n}/{pages}')
            self.assertPage(lines, WIDTH, HEIGHT)
            rows = table(lines)
            self.assertTrue(rows, '\n'.join(lines))
            for cpu, cells in rows.items():
                self.assertNotIn(cpu, seen, f'CPU {cpu} on two pages')
                seen[cpu] = cells
            pane.keys('n')
        self.assertEqual(sorted(seen), list(range(CPUS)))
        # Each CPU is its own domain on rd-n2, runs the default policy and
        # is idle at the floor: 1000 units.
        for cpu, cells in seen.items():
            self.assertEqual(cells[2], 'schedutil', cells)
            self.assertIn('1000', cells, cells)
        # n after the last page comes back to the first.
        pane.wait(lambda ls: footer(ls) == (1, pages), 'page 1 again')

        # A smaller window: the monitor redraws to it.
        pane.tmux('resize-window', '-t', '0', '-x', '80', '-y', '24')
        lines = pane.wait(lambda ls: footer(ls) and footer(ls)[1] > pages,
                          'more pages after the resize')
        self.assertPage(lines, 80, 24)
        self.assertQuits(rig, pane)

    def test_filter_clamp_events_and_quit(self):
        rig = self.start()
        pane = Tmux(self, rig.tmp)
        cpu = host_cpu()
        pane.type(self.monitor_line(rig, '--cpus', f'{cpu},100-102'))
        lines = pane.wait(footer, 'the first page')
        self.assertEqual(footer(lines), (1, 1))
        listed = sorted({cpu, 100, 101, 102})
        self.assertEqual(sorted(table(lines)), listed)
        self.assertIn(f'({len(listed)} of {CPUS} shown)', '\n'.join(lines))

        child = rig.busy_child()
        client = rig.session()
        owner = client.name()
        handle = client.clamp(child.pid, 1024, 1024)
        started = f'HandleStarted: handle {handle} clamp 1024..1024 of {owner}'
        lines = pane.wait(lambda ls: any(started in line for line in ls)
                          and table(ls).get(cpu, [''])[-1] == str(handle),
                          f'the clamp {handle} as an event and on CPU {cpu}')
        event = next(line for line in lines if started in line)
        self.assertRegex(event, r'^\d\d:\d\d:\d\d\.\d{3} HandleStarted: ')
        self.assertPage(lines, WIDTH, HEIGHT)

        client.release(handle)
        ended = f'HandleEnded: handle {handle} of {owner} (released)'
        pane.wait(lambda ls: any(ended in line for line in ls)
                  and table(ls).get(cpu, [''])[-1] == '-',
                  f'the end of clamp {handle}')
        self.assertQuits(rig, pane)

    def test_json_streams_refreshes_and_events(self):
        rig = self.start()
        monitor = rig.spawn([CPPCGOVCTL, 'monitor', '--json', '--interval',
                             str(INTERVAL_MS), f'--bus-address={rig.address}'],
                            stdout=subprocess.PIPE, text=True)
        out = LineReader(monitor.stdout)
        raw = []

        def read_until(predicate, what):
            end = time.monotonic() + SHOW_TIMEOUT
            while time.monotonic() < end:
                line = out.readline(SHOW_TIMEOUT)
                self.assertIsNotNone(line, 'the monitor ended')
                raw.append(line)
                obj = json.loads(line)
                self.assertEqual(obj['format'], 'cppcgov-monitor')
                self.assertEqual(obj['version'], 1)
                if predicate(obj):
                    return obj
            self.fail(f'no {what} within {SHOW_TIMEOUT} s')

        refresh = read_until(lambda o: o['type'] == 'refresh', 'refresh')
        self.assertEqual([c['cpu'] for c in refresh['cpus']],
                         list(range(CPUS)))
        self.assertEqual(refresh['daemon']['cpuCount'], CPUS)
        self.assertIn('ticks', refresh['statistics'])
        first = refresh['cpus'][0]
        self.assertEqual(first['policy'], 'schedutil')
        self.assertEqual(first['domain'], 0)

        child = rig.busy_child()
        client = rig.session()
        handle = client.clamp(child.pid, 0, 512)
        started = read_until(lambda o: o['type'] == 'event'
                             and o['event'] == 'HandleStarted',
                             'HandleStarted')
        self.assertEqual((started['handle'], started['kind'],
                          started['task'], started['utilMax']),
                         (handle, 'clamp', child.pid, 512))
        client.release(handle)
        ended = read_until(lambda o: o['type'] == 'event'
                           and o['event'] == 'HandleEnded', 'HandleEnded')
        self.assertEqual((ended['handle'], ended['reason']),
                         (handle, 'released'))
        monitor.terminate()
        self.assertEqual(monitor.wait(SETTLE_TIMEOUT), 0)
        self.assertFalse(any('\x1b' in line for line in raw))

    def test_not_a_terminal_prints_blocks_without_escapes(self):
        rig = self.start()
        r = ctl(rig, 'monitor', '--count', '2', '--interval', str(INTERVAL_MS))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn('\x1b', r.stdout)
        blocks = r.stdout.split('\n\n')
        self.assertEqual(len(blocks), 2, r.stdout)
        for block in blocks:
            lines = block.splitlines()
            self.assertTrue(lines[0].startswith('cppcgovd '), lines[0])
            self.assertEqual(sorted(table(lines)), list(range(CPUS)))
        r = ctl(rig, 'monitor', '--cpus', '190-199')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, 'cppcgovctl: CPUs 192-199 do not exist '
                         f'(this machine has CPUs 0-{CPUS - 1})\n')


class StatusHealthTest(DaemonTest):

    def test_statistics_policies_and_frequencies(self):
        rig = self.make_rig(cpus=8, config='overrides:\n'
                            '  - cpus: "1-2"\n'
                            '    policy: powersave\n')
        rig.start_daemon()
        r = ctl(rig, 'status', '--json')
        self.assertEqual(r.returncode, 0, r.stderr)
        status = json.loads(r.stdout)
        self.assertEqual(status['daemon']['policy'], 'schedutil')
        for name in ('ticks', 'ticks_skipped', 'tick_late_p99_ns', 'writes',
                     'write_errors'):
            self.assertIn(name, status['statistics'])
        for c in status['cpus']:
            self.assertEqual(c['policy'],
                             'powersave' if c['cpu'] in (1, 2)
                             else 'schedutil', c)
            self.assertEqual(c['domain'], c['cpu'], c)
            # On the line through (lowest, lowestKhz) and (nominal,
            # nominalKhz), to the kHz.
            khz = c['lowestKhz'] + (
                (c['requestedPerf'] - c['lowestPerf'])
                * (c['nominalKhz'] - c['lowestKhz'])
                / (c['nominalPerf'] - c['lowestPerf']))
            self.assertGreater(c['nominalKhz'], c['lowestKhz'], c)
            self.assertLessEqual(abs(c['requestedKhz'] - khz), 1, c)

        r = ctl(rig, 'status')
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertIn('policy    schedutil (the default; CPUs 1-2 differ: '
                      '1-2 powersave)', lines)
        self.assertTrue(any(line.startswith('ticks ') for line in lines),
                        r.stdout)
        rows = {}
        start = next(i for i, line in enumerate(lines)
                     if line.startswith('CPU  DOMAIN'))
        for line in lines[start + 1:]:
            if not line:
                break
            cells = line.split()
            rows[int(cells[0])] = cells
        self.assertEqual(sorted(rows), list(range(8)))
        for c in status['cpus']:
            cells = rows[c['cpu']]
            self.assertEqual(cells[2], c['policy'], cells)
            # REQUESTED then its MHz (the state may have moved between the
            # two reads: an idle CPU stays at its floor).
            mhz = (c['requestedKhz'] + 500) // 1000
            self.assertEqual(cells[6], str(mhz), cells)
