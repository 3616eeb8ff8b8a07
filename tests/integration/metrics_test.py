# SPDX-License-Identifier: Apache-2.0
"""The metrics: the textfile collector's file (written every interval,
replaced atomically, the directory vanishing and coming back, removed at
stop), `cppcgovctl metrics`, both checked by `promtool check metrics`
(Debian's prometheus), values against GetCpuStates and ListHandles, and
Debian's prometheus-node-exporter reading the directory and serving the
series (TextfileTest). promtool and node_exporter are skipped when
absent, and fail the case when CI=true.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, START_TIMEOUT, SETTLE_TIMEOUT, host_cpu,
                 wait_until)

NODE_EXPORTER = 'prometheus-node-exporter'
# The family the renderer writes last: a file that ends with its sample is
# whole.
LAST_FAMILY = 'cppcgov_process_resident_memory_bytes'


def tool(case, name):
    """The path of `name`, or skips the case (fails it under CI=true)."""
    path = shutil.which(name)
    if path is None:
        message = (f'{name} is not installed (Debian: prometheus / '
                   'prometheus-node-exporter)')
        if os.environ.get('CI') == 'true':
            case.fail(message + ' (CI=true: failing instead of skipping)')
        case.skipTest(message)
    return path


def samples(text):
    """{(name, frozenset of label pairs): value} of an exposition text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)',
                         line)
        if m is None:
            raise AssertionError(f'not a sample line: {line!r}')
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="'
                                      r'((?:[^"\\]|\\.)*)"', m[2] or ''))
        out[(m[1], labels)] = float(m[3])
    return out


def value(parsed, name, **labels):
    return parsed.get((name, frozenset(labels.items())))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class TextfileTest(DaemonTest):

    def promtool_check(self, promtool, text, what):
        r = subprocess.run([promtool, 'check', 'metrics'], input=text,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0,
                         f'promtool check metrics on {what}: {r.stdout}'
                         f'{r.stderr}')

    def make_metrics_rig(self, interval_s=1):
        rig = self.make_rig()
        # Under the fake root, as the daemon takes it (--root).
        directory = os.path.join(rig.root, 'textfile')
        os.makedirs(directory)
        rig.write_config('metrics:\n  directory: /textfile\n'
                         f'  interval_s: {interval_s}\n')
        return rig, directory, os.path.join(directory, 'cppcgovd.prom')

    def test_textfile_replaced_checked_and_removed(self):
        promtool = tool(self, 'promtool')
        rig, directory, path = self.make_metrics_rig()
        rig.start_daemon()
        self.assertTrue(wait_until(lambda: os.path.exists(path),
                                   START_TIMEOUT)[0],
                        f'{path} did not appear')
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o644)

        # A reader polling the file sees whole files only, through several
        # replacements (each a new inode: renamed over, never rewritten).
        seen = {'reads': 0, 'inodes': set(), 'partial': []}

        def poll():
            deadline = time.monotonic() + 3.5
            while time.monotonic() < deadline:
                try:
                    with open(path) as f:
                        inode = os.fstat(f.fileno()).st_ino
                        text = f.read()
                except FileNotFoundError:
                    seen['partial'].append('(missing)')
                    continue
                seen['reads'] += 1
                seen['inodes'].add(inode)
                lines = text.splitlines()
                if (not text.startswith('# HELP cppcgov_info ') or
                        not text.endswith('\n') or
                        not lines[-1].startswith(LAST_FAMILY + ' ')):
                    seen['partial'].append(text[-200:])
        reader = threading.Thread(target=poll)
        reader.start()
        reader.join()
        print(f"\n  textfile: {seen['reads']} reads, "
              f"{len(seen['inodes'])} files seen", file=sys.stderr)
        self.assertEqual(seen['partial'], [])
        self.assertGreaterEqual(len(seen["inodes"]), 2)
        # No temporary file left beside it.
        self.assertEqual(os.listdir(directory), ['cppcgovd.prom'])
        with open(path) as f:
            self.promtool_check(promtool, f.read(), path)

        # cppcgovctl metrics, and what the renderer did not compute: a
        # clamp on a busy task shows in the hint count and in its CPU's
        # clamp series, as GetCpuStates and ListHandles say.
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        handle = client.clamp(child.pid, 512, 1024)

        def clamped():
            return rig.cpu_states()[cpu]['clamp_min'] == 512
        self.assertTrue(wait_until(clamped, SETTLE_TIMEOUT)[0],
                        rig.cpu_states()[cpu])
        r = subprocess.run([CPPCGOVCTL, '--bus-address', rig.address,
                            'metrics'], capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.promtool_check(promtool, r.stdout, 'cppcgovctl metrics')
        parsed = samples(r.stdout)
        states = rig.cpu_states()
        self.assertEqual(value(parsed, 'cppcgov_hints', kind='clamp'),
                         len([h for h in rig.handles()
                              if h['kind'] == 'clamp']))
        self.assertEqual(value(parsed, 'cppcgov_hints', kind='clamp'), 1)
        self.assertEqual(value(parsed, 'cppcgov_cpu_clamp_min_ratio',
                               cpu=str(cpu)),
                         states[cpu]['clamp_min'] / 1024)
        self.assertEqual(value(parsed, 'cppcgov_cpu_reason', cpu=str(cpu),
                               reason=states[cpu]['reason']), 1)
        self.assertEqual(
            len([k for k in parsed if k[0] == 'cppcgov_cpu_requested_perf']),
            len(states))
        for s in states:
            if s['cpu'] != cpu:
                self.assertEqual(value(parsed, 'cppcgov_cpu_requested_perf',
                                       cpu=str(s['cpu'])), s['requested'])
        # kHz on the line through GetCpuInfo's two points, and a domain
        # series per domain GetCpuInfo names, counting its CPUs.
        info = rig.call('GetCpuInfo')[0]
        domains = {}
        for c in info:
            cpu_n, domain = c[0], c[1]
            lowest, nominal, lowest_khz, nominal_khz = c[4], c[6], c[8], c[9]
            domains[domain] = domains.get(domain, 0) + 1
            if cpu_n == cpu:
                continue
            requested = states[cpu_n]['requested']
            expected = round(lowest_khz + (requested - lowest) *
                             (nominal_khz - lowest_khz) / (nominal - lowest))
            self.assertEqual(value(parsed, 'cppcgov_cpu_requested_khz',
                                   cpu=str(cpu_n)), expected, c)
        for domain, count in domains.items():
            self.assertEqual(value(parsed, 'cppcgov_domain_cpus',
                                   domain=str(domain)), count)
        self.assertEqual(
            len([k for k in parsed if k[0] == 'cppcgov_domain_cpus']),
            len(domains))
        self.assertEqual(value(parsed, 'cppcgov_info',
                               version=rig.prop('Version'),
                               backend=rig.prop('Backend'),
                               policy=rig.prop('Policy')), 1)
        self.assertEqual(value(parsed, 'cppcgov_sampling_source',
                               source=rig.prop('SamplingSource')), 1)
        # The counters only grow between two reads of GetStatistics.
        ticks = value(parsed, 'cppcgov_ticks_total')
        self.assertLessEqual(ticks, rig.stats()['ticks'])
        self.assertGreater(ticks, 0)
        self.assertEqual(value(parsed, 'cppcgov_tick_lateness_seconds_bucket',
                               le='+Inf'),
                         value(parsed, 'cppcgov_tick_lateness_seconds_count'))
        client.release(handle)

        # The directory vanishes: logged once, the daemon goes on; it comes
        # back: logged, and the file is there again.
        shutil.rmtree(directory)
        warned = f"metrics: cannot write '{path}'"
        self.assertTrue(wait_until(lambda: warned in rig.read_log(),
                                   SETTLE_TIMEOUT)[0], rig.read_log())
        time.sleep(2.5)
        self.assertEqual(rig.read_log().count(warned), 1, rig.read_log())
        self.assertDaemonServes(rig)
        os.makedirs(directory)
        self.assertTrue(wait_until(lambda: os.path.exists(path),
                                   SETTLE_TIMEOUT)[0], rig.read_log())
        self.assertIn(f"metrics: writing '{path}' again", rig.read_log())

        self.assertEqual(rig.stop_daemon(), 0, rig.read_log())
        self.assertFalse(os.path.exists(path), 'the file outlived the daemon')
        self.assertEqual(os.listdir(directory), [])

    def test_interval_0_writes_no_file(self):
        rig, directory, path = self.make_metrics_rig(interval_s=0)
        rig.start_daemon()
        # GetMetrics still answers.
        r = subprocess.run([CPPCGOVCTL, '--bus-address', rig.address,
                            'metrics'], capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('# TYPE cppcgov_ticks_total counter\n', r.stdout)
        self.assertEqual(os.listdir(directory), [])

    def test_node_exporter_serves_the_file(self):
        exporter = tool(self, NODE_EXPORTER)
        rig, directory, path = self.make_metrics_rig()
        rig.start_daemon()
        self.assertTrue(wait_until(lambda: os.path.exists(path),
                                   START_TIMEOUT)[0])
        port = free_port()
        log = open(os.path.join(rig.tmp, 'node_exporter.log'), 'wb')
        self.addCleanup(log.close)
        rig.spawn([exporter, f'--web.listen-address=127.0.0.1:{port}',
                   '--collector.disable-defaults', '--collector.textfile',
                   f'--collector.textfile.directory={directory}'],
                  stdout=log, stderr=log)
        url = f'http://127.0.0.1:{port}/metrics'
        scraped = {}

        # Until a file written after the first tick is served (the first
        # one is written as the daemon starts).
        def scrape():
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    scraped['text'] = reply.read().decode()
            except OSError:
                return False
            ticks = value(samples(scraped['text']), 'cppcgov_ticks_total')
            return ticks is not None and ticks > 0
        self.assertTrue(wait_until(scrape, START_TIMEOUT, 0.1)[0],
                        f'node_exporter did not serve cppcgov_ticks_total '
                        f'above 0 on {url}: {scraped.get("text", "")[-2000:]}')
        parsed = samples(scraped['text'])
        self.assertEqual(value(parsed, 'node_textfile_scrape_error'), 0,
                         scraped['text'][-2000:])
        self.assertEqual(value(parsed, 'cppcgov_info',
                               version=rig.prop('Version'),
                               backend=rig.prop('Backend'),
                               policy=rig.prop('Policy')), 1)
        self.assertIsNotNone(value(parsed, 'cppcgov_cpu_requested_perf',
                                   cpu='0'))
        self.assertIsNotNone(value(parsed, 'node_textfile_mtime_seconds',
                                   file=path) or
                             value(parsed, 'node_textfile_mtime_seconds',
                                   file='cppcgovd.prom'))
