# SPDX-License-Identifier: Apache-2.0
"""cppcgovctl record: the trace of a recording that saw a clamp and a
latency request come and go and a reload parses, holds a counter track of
every CPU with the values GetCpuStates gave, each hint's begin and end in
order near the times the test saw them (both on CLOCK_MONOTONIC) and the
PolicyChanged; its PNG decodes (signature, chunk CRCs, IHDR size, rows
that inflate) and is not blank; SIGINT mid-recording still leaves both
files complete, with a busy CPU's util as GetCpuStates said it; a FILE
that cannot be written is refused naming it.
"""

import json
import os
import signal
import struct
import subprocess
import time
import zlib

from daemon_case import DaemonTest
from rig import (CPPCGOVCTL, RD_N2_FLOOR, RD_N2_NOMINAL, SETTLE_TIMEOUT,
                 START_TIMEOUT, host_cpu, wait_until)


def now_us():
    return time.monotonic_ns() // 1000


def read_png(path):
    """(width, height, rows) of an 8-bit RGB PNG file, checking its
    signature and every chunk's CRC; rows is the inflated image data."""
    with open(path, 'rb') as f:
        data = f.read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', data[:8]
    at, chunks, idat = 8, [], b''
    while at < len(data):
        length, kind = struct.unpack('>I4s', data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        crc, = struct.unpack('>I', data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body), f'bad CRC of {kind}'
        chunks.append(kind)
        if kind == b'IDAT':
            idat += body
        at += 12 + length
    assert chunks[0] == b'IHDR' and chunks[-1] == b'IEND', chunks
    with open(path, 'rb') as f:
        ihdr = f.read()[16:29]
    width, height, depth, colour = struct.unpack('>IIBB', ihdr[:10])
    assert (depth, colour) == (8, 2), (depth, colour)
    rows = zlib.decompress(idat)
    assert len(rows) == height * (1 + width * 3), (len(rows), width, height)
    return width, height, rows


class RecordTest(DaemonTest):

    def start_recording(self, rig, path, *args):
        """Starts cppcgovctl record on `path`; returns it once it writes
        (its temporary file is there) and has taken a sample or two."""
        proc = rig.spawn([CPPCGOVCTL, 'record', f'--bus-address={rig.address}',
                          *args, path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        directory, name = os.path.split(path)

        def writing():
            if proc.poll() is not None:
                raise AssertionError(f'record exited: {proc.communicate()}')
            return any(f.startswith(name + '.') and not f.endswith('.png')
                       for f in os.listdir(directory))

        self.assertTrue(wait_until(writing, START_TIMEOUT)[0])
        time.sleep(0.3)
        return proc

    def finished(self, proc, timeout=30):
        out, err = proc.communicate(timeout=timeout)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(err, '')
        return out

    def assertPlot(self, path):
        width, height, rows = read_png(path)
        self.assertEqual(width, 960)
        self.assertGreater(height, 100)
        stride = 1 + width * 3
        colours = {rows[y * stride + 1 + x * 3:y * stride + 4 + x * 3]
                   for y in range(0, height, 2) for x in range(0, width, 2)}
        self.assertGreater(len(colours), 4, 'the plot is blank')
        return rows, width

    def test_records_a_clamp_and_a_latency_request(self):
        rig = self.make_rig()
        rig.start_daemon()
        cpu = host_cpu()
        child = rig.busy_child()
        client = rig.session()
        owner = client.name()
        path = os.path.join(rig.tmp, 'trace.json')
        started_us = now_us()
        recorder = self.start_recording(rig, path, '--seconds', '6')

        clamp_us = now_us()
        clamp = client.clamp(child.pid, 1024, 1024)
        latency_us = now_us()
        latency = client.latency_cpus(100, [0])
        seen = {c: set() for c in range(rig.cpus)}
        raised = wait_until(
            lambda: rig.cpu_states()[cpu]['requested'] == RD_N2_NOMINAL,
            SETTLE_TIMEOUT)[0]
        self.assertTrue(raised)
        for _ in range(5):
            for s in rig.cpu_states():
                seen[s['cpu']].add(s['util'])
            time.sleep(0.05)
        released_us = now_us()
        client.release(clamp)
        client.wait_ended(clamp, 5)
        latency_released_us = now_us()
        client.release(latency)
        # A reload of the same files: PolicyChanged.
        rig.dbus_send('Reload')
        client.wait_policy(10)
        reloaded_us = now_us()
        out = self.finished(recorder)
        ended_us = now_us()
        self.assertRegex(out, r'recorded \d+ samples of \d+ CPUs over 6\.\d s')
        self.assertIn(f"wrote '{path}'", out)

        with open(path) as f:
            trace = json.load(f)
        self.assertEqual(trace['displayTimeUnit'], 'ms')
        events = trace['traceEvents']
        meta = [e for e in events if e['ph'] == 'M']
        self.assertIn({'name': 'process_name', 'ph': 'M', 'pid': 1,
                       'tid': 1, 'ts': 0, 'args': {'name': 'cppcgovd'}},
                      meta)
        tracks = {e['args']['name'] for e in meta
                  if e['name'] == 'thread_name'}
        self.assertEqual(tracks, {f'CPU {c}' for c in range(rig.cpus)})
        for e in events:
            if e['ph'] != 'M':
                self.assertGreaterEqual(e['ts'], started_us)
                self.assertLessEqual(e['ts'], ended_us)

        def series(c, what):
            """Counter track 'CPU c what', as Perfetto names it."""
            return [(e['ts'], e['args'][what]) for e in events
                    if e['ph'] == 'C' and e['name'] == f'CPU {c}'
                    and what in e['args']]

        for c in range(rig.cpus):
            util = series(c, 'util')
            self.assertGreater(len(util), 0, f'no util track of CPU {c}')
            self.assertGreater(len(series(c, 'requested perf')), 0)
            for _, v in util:
                self.assertTrue(0 <= v <= 1024, v)
            # What GetCpuStates said while the recording ran is in it.
            self.assertTrue(seen[c] & {v for _, v in util},
                            f'CPU {c}: the trace has {util}, GetCpuStates '
                            f'said {seen[c]}')
        requested = [v for _, v in series(cpu, 'requested perf')]
        self.assertIn(RD_N2_NOMINAL, requested)
        self.assertEqual(requested[-1], RD_N2_FLOOR)

        def hint(handle):
            return [e for e in events
                    if e['ph'] in 'be' and e.get('cat') == 'hint'
                    and e['id'] == handle]

        begin, end = hint(clamp)
        self.assertEqual((begin['ph'], end['ph']), ('b', 'e'))
        self.assertEqual(begin['args'], {
            'handle': clamp, 'kind': 'clamp', 'owner': owner,
            'task': child.pid, 'util_min': 1024, 'util_max': 1024})
        self.assertEqual(end['args'], {'reason': 'released'})
        self.assertEqual(begin['name'], end['name'])
        # Near the times the test saw (a signal's way through two buses
        # on a loaded machine).
        self.assertLess(abs(begin['ts'] - clamp_us), 500_000)
        self.assertLess(abs(end['ts'] - released_us), 500_000)
        self.assertLess(begin['ts'], end['ts'])
        begin, end = hint(latency)
        self.assertEqual(begin['args'], {
            'handle': latency, 'kind': 'latency', 'owner': owner,
            'task': 0, 'latency_us': 100})
        self.assertLess(abs(begin['ts'] - latency_us), 500_000)
        self.assertLess(abs(end['ts'] - latency_released_us), 500_000)
        self.assertLess(begin['ts'], end['ts'])

        changed = [e for e in events if e['ph'] == 'i'
                   and e['name'] == 'PolicyChanged schedutil']
        self.assertEqual(len(changed), 1, changed)
        self.assertEqual(changed[0]['s'], 'g')
        self.assertEqual(changed[0]['args']['policy'], 'schedutil')
        self.assertIn(rig.config, changed[0]['args']['files'])
        self.assertLess(abs(changed[0]['ts'] - reloaded_us), 500_000)

        # The plot: strips with the clamp's colour in the hint lane.
        rows, width = self.assertPlot(os.path.join(rig.tmp, 'trace.png'))
        self.assertIn(bytes((117, 107, 177)), rows)
        self.assertEqual(sorted(os.listdir(rig.tmp)).count('trace.png'), 1)
        self.assertEqual([f for f in os.listdir(rig.tmp)
                          if f.startswith('trace.json.')], [])

    def test_sigint_still_writes_complete_files(self):
        # Simulated CPUs 1 and 3 as busy as host CPU 1 of a fake
        # proc/stat, 0 and 2 idle.
        rig = self.make_rig(cpus=4, proc_stat_cpus=2)
        rig.start_daemon()
        rig.proc_stat.set_busy({1})
        self.assertIsNotNone(self.wait_requested(rig, 1, RD_N2_NOMINAL,
                                                 SETTLE_TIMEOUT)[0])
        path = os.path.join(rig.tmp, 'long.json')
        png = os.path.join(rig.tmp, 'plot.png')
        recorder = self.start_recording(rig, path, '--seconds', '600',
                                        '--interval', '20', '--cpus', '1-2',
                                        '--png', png)
        seen = {1: set(), 2: set()}
        for _ in range(10):
            states = rig.cpu_states()
            for c in seen:
                seen[c].add(states[c]['util'])
            time.sleep(0.05)
        recorder.send_signal(signal.SIGINT)
        out = self.finished(recorder, timeout=10)
        self.assertIn('ended by SIGINT', out)
        with open(path) as f:
            trace = json.load(f)
        names = {f'{e["name"]} {key}' for e in trace['traceEvents']
                 if e['ph'] == 'C' for key in e['args']}
        self.assertIn('CPU 1 util', names)
        self.assertIn('CPU 2 util', names)
        self.assertNotIn('CPU 0 util', names)
        util = {c: {e['args']['util'] for e in trace['traceEvents']
                    if e['ph'] == 'C' and e['name'] == f'CPU {c}'
                    and 'util' in e['args']} for c in seen}
        self.assertGreater(max(util[1]), 512, util)
        self.assertEqual(util[2], {0}, util)
        for c in seen:
            self.assertTrue(seen[c] & util[c],
                            f'CPU {c}: the trace has {util[c]}, '
                            f'GetCpuStates said {seen[c]}')
        self.assertEqual(trace['otherData']['interval_us'], '20000')
        self.assertPlot(png)
        self.assertFalse(os.path.exists(os.path.join(rig.tmp, 'long.png')))
        self.assertEqual(sorted(os.listdir(rig.tmp)).count('long.json'), 1)

    def test_unwritable_file_is_named(self):
        rig = self.make_rig()
        rig.start_daemon()
        missing = os.path.join(rig.tmp, 'no-such-dir', 'trace.json')
        directory = os.path.join(rig.tmp, 'a-directory')
        os.mkdir(directory)
        good = os.path.join(rig.tmp, 'good.json')
        for args, named, why in (
                ([missing], missing, 'No such file or directory'),
                ([directory], directory, 'Is a directory'),
                (['--png', missing, good], missing,
                 'No such file or directory')):
            with self.subTest(args=args):
                r = subprocess.run(
                    [CPPCGOVCTL, 'record', '--seconds', '1',
                     f'--bus-address={rig.address}', *args],
                    capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(r.stderr.strip(),
                                 f"cppcgovctl: record: cannot write "
                                 f"'{named}': {why}")
        # Nothing was left behind.
        self.assertEqual(sorted(os.listdir(rig.tmp)).count('good.json'), 0)
        self.assertEqual([f for f in os.listdir(rig.tmp)
                          if f.startswith('good.json')], [])
