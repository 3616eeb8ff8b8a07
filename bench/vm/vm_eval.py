# SPDX-License-Identifier: Apache-2.0
"""bench/vm: cppcgovd against the kernel's own governors, closed loop, on
the CPPC platform behind Debian's arm64 kernel under QEMU (README.md).

  vm_eval.py --replot DIR
  vm_eval.py --build-root BUILD_ARM64 [--runs 5] [--loads 10,30,50,70,90]
             [--arms a,b,...] [--workloads server,periodic,burst,shared,idle]
             [--curve vf|linear] [--layout memory|pcc] [--request-ms 1]
             [--seconds 5] [--out DIR] [--smoke]

One boot of a platform layout (the backports kernel: the one Debian kernel
with CONFIG_UCLAMP_TASK, 2 CPUs): `memory`, ssdt-autonomous (SystemMemory
registers with every optional control), or `pcc`, ssdt-pcc (every register
behind one PCC mailbox, as on the Ampere Altra; no autonomous arm, as the
layout has no Autonomous Selection Enable). Under each arm
(ARMS) every workload runs in the guest (vm_workload.cpp); the arms take
turns run by run, so that a drift of the host lands on all of them. The
platform gives the energy (its power curve, --curve) and counts the
changes of Desired and the doorbells rung. Prints a table per workload
(medians over the runs, and their spread), writes the tables as text,
every run's figures as JSON (vm_eval.json) and, per workload, energy
against latency as PNG (python3-matplotlib) into --out.

--smoke: one run of one load level, short, every arm; checks that the
numbers are sane (requests served, energy above zero, a burst marked and,
where the platform does not choose, reaching highest), not that any arm
wins. Exits 1 when they are not.
"""

import argparse
import json
import os
import random
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tests', 'vm'))

import boot_disk  # noqa: E402
import guest as guest_module  # noqa: E402
import platform_rig  # noqa: E402
import vm_test  # noqa: E402
from vm_rig import (BUS_ADDRESS, CPU_DIR, WORK, CheckFailure,  # noqa: E402
                    VmRig, mark_address)

# name: (the governor of cppc_cpufreq's policies, cppcgovd's policy or
# None, how the latency-critical threads are hinted: None, 'hint'
# (libcppcgov-client) or 'uclamp' (sched_setattr)). cppcgovd-period is
# cppcgovd with its tick at the period always (sampling.idle_period_us and
# steady_period_us 0), not the shipped default: what the tick's long
# sleeps save, side by side.
ARMS = {
    'performance': ('performance', None, None),
    'schedutil': ('schedutil', None, None),
    'schedutil-uclamp': ('schedutil', None, 'uclamp'),
    'cppcgovd': ('schedutil', 'schedutil', None),
    'cppcgovd-period': ('schedutil', 'schedutil', None),
    'cppcgovd-hints': ('schedutil', 'schedutil', 'hint'),
    'cppcgovd-autonomous': ('schedutil', 'autonomous', None),
}
WORKLOADS = ('server', 'periodic', 'burst', 'shared', 'idle')
# The hint the latency-critical threads take (util_min 512, as
# bench/policy_eval's periodic row).
HINT_MIN = 512
# A request: --request-ms of work at highest performance (1 ms by
# default). The periodic task: 500 us at nominal every 2 ms.
PERIODIC_US = 500
PERIOD_US = 2000
# The shared CPU: a batch task capped at util_max SHARED_CAP in the hinted
# arms beside the periodic task, unhinted. Its variants: (name, a batch
# task and with which cap, the periodic task beside it); the smoke runs
# the first alone.
SHARED_CAP = 300
SHARED_VARIANTS = (('capped', 'capped', True), ('uncapped', 'uncapped', True),
                   ('periodic-alone', None, True),
                   ('batch-alone', 'capped', False))
# A window breaks the SLO when its p99 is above SLO_FACTOR x the p99 of
# `performance` at the same load (the median over its runs).
SLO_FACTOR = 1.5


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--build-root')
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--loads', default='10,30,50,70,90')
    parser.add_argument('--arms', default=None)
    parser.add_argument('--workloads', default=','.join(WORKLOADS))
    parser.add_argument('--curve', choices=('vf', 'linear'), default='vf')
    parser.add_argument('--layout', choices=('memory', 'pcc'),
                        default='memory')
    parser.add_argument('--request-ms', type=float, default=1.0)
    parser.add_argument('--seconds', type=int, default=5)
    parser.add_argument('--out', default=None)
    parser.add_argument('--smoke', action='store_true')
    parser.add_argument('--replot', metavar='DIR',
                        help='no run: the tables and plots again from '
                        'DIR/vm_eval.json, into DIR')
    args = parser.parse_args()
    if args.replot:
        return args
    if not args.build_root:
        parser.error('--build-root is needed (but with --replot)')
    if args.smoke:
        args.runs, args.loads, args.seconds = 1, '50', 2
    if not 0 < args.request_ms <= 100:
        parser.error(f'--request-ms: {args.request_ms} is not in (0, 100]')
    args.loads = [int(v) for v in args.loads.split(',')]
    args.arms = (args.arms.split(',') if args.arms else
                 [a for a in ARMS if args.layout == 'memory' or
                  ARMS[a][1] != 'autonomous'])
    args.workloads = args.workloads.split(',')
    for arm in args.arms:
        if arm not in ARMS:
            parser.error(f'--arms: {arm!r} is not one of {", ".join(ARMS)}')
        if args.layout == 'pcc' and ARMS[arm][1] == 'autonomous':
            parser.error(f'--arms: {arm} needs Autonomous Selection Enable, '
                         'which the pcc layout has not')
    for w in args.workloads:
        if w not in WORKLOADS:
            parser.error(f'--workloads: {w!r} is not one of '
                         f'{", ".join(WORKLOADS)}')
    args.out = args.out or os.path.join(args.build_root, 'bench', 'vm')
    return args


def guest_options(build, layout):
    """vm_test's guest options for the platform layout `layout` (memory or
    pcc), from the arm64 build tree `build` (tools/arm64/build)."""
    with open(os.path.join(build, 'sysroot.ini'), encoding='utf-8') as f:
        sysroot = re.search(r"sysroot = '([^']*)'", f.read()).group(1)
    top = os.path.join(HERE, '..', '..')
    vm = os.path.join(build, 'tests', 'vm')
    pcc = layout == 'pcc'
    args = argparse.Namespace(
        layout='eval',
        aml=os.path.join(vm, 'ssdt-pcc.aml' if pcc else
                         'ssdt-autonomous.aml'),
        sysroot=sysroot, cppcgovd=os.path.join(build, 'daemon', 'cppcgovd'),
        cppcgovctl=os.path.join(build, 'tools', 'cppcgovctl'),
        duty_task=os.path.join(vm, 'duty_task'), observer_test=None,
        work=os.path.join(build, 'bench', 'vm'), cpus=2,
        kernel_from=os.path.join(top, 'tools', 'arm64',
                                 'backports-kernel.sh'),
        controls=not pcc,
        platform=os.path.join(vm, 'platform', 'cppc_platform'),
        fixed_loop=os.path.join(vm, 'fixed_loop'),
        pcc='shared' if pcc else None,
        pcct=os.path.join(vm, 'pcct-vm.aml') if pcc else None,
        boot_app=os.path.join(vm, 'efi', 'BOOTAA64.EFI') if pcc else None,
        extra_programs={'/usr/bin/vm_workload':
                        os.path.join(build, 'bench', 'vm', 'vm_workload')})
    for path in (args.aml, args.cppcgovd, args.platform,
                 args.extra_programs['/usr/bin/vm_workload']) + \
            ((args.pcct, args.boot_app) if pcc else ()):
        if not os.path.exists(path):
            raise SystemExit(f'vm_eval: {path} is missing: build the arm64 '
                             'tree first (tools/arm64/build)')
    return args


class Bench:
    def __init__(self, guest, rig, platform, caps, args):
        self.guest = guest
        self.rig = rig
        self.platform = platform
        self.caps = caps
        self.args = args
        self.marks = 0

    # --- arms ---------------------------------------------------------------

    def governor(self, name):
        self.guest.sh(f'for p in {CPU_DIR}/cpufreq/policy*; do '
                      f'echo {name} >$p/scaling_governor; done')

    def enter(self, arm):
        governor, policy, _ = ARMS[arm]
        self.governor(governor)
        if policy:
            sampling = ('sampling:\n  idle_period_us: 0\n'
                        '  steady_period_us: 0\n'
                        if arm == 'cppcgovd-period' else '')
            self.guest.sh('cat >/etc/cppcgov/policy.yaml <<"EOF"\n'
                          f'policy: {policy}\n{sampling}'
                          'backend:\n  type: kernel\nEOF')
            failed = self.rig.start_daemon()
            if failed:
                raise CheckFailure(f'{arm}: cppcgovd exited {failed[0]}:\n'
                                   f'{failed[1]}')
        time.sleep(1)  # let the previous arm's levels settle
        self.cost = None
        if policy:
            self.cost_from = self.daemon_reading()

    def leave(self, arm):
        if ARMS[arm][1]:
            self.cost = self.daemon_cost(self.cost_from)
            rc = self.rig.stop_daemon()
            if rc != 0:
                raise CheckFailure(f'{arm}: cppcgovd exited {rc} at its stop')

    @staticmethod
    def hint_option(arm, util_min=HINT_MIN, util_max=1024):
        how = ARMS[arm][2]
        if how is None:
            return ''
        return f' --{how} {util_min}:{util_max}'

    # --- measuring ---------------------------------------------------------

    def daemon_reading(self):
        """cppcgovd's CPU time (s, every thread, from the guest kernel's
        /proc), that of its tick thread and of its access workers, its
        tick counters and the guest's clock."""
        hz = 100  # USER_HZ, the unit of /proc's times on arm64
        out = self.guest.sh(
            f'p=$(cat {WORK}/daemon.pid); cat /proc/$p/stat; '
            'for t in /proc/$p/task/*; do echo "$(cat $t/comm)|$(cat '
            '$t/stat)"; done; cat /proc/uptime')
        lines = out.splitlines()

        def cpu_s(stat):
            # The fields after the command's closing parenthesis: utime
            # and stime are the 12th and 13th of them.
            after = stat[stat.rindex(')') + 2:].split()
            return (int(after[11]) + int(after[12])) / hz
        threads = {}
        for line in lines[1:-1]:
            name, _, stat = line.partition('|')
            threads[name] = threads.get(name, 0) + cpu_s(stat)
        stats = self.rig.status().get('statistics', {})
        return {'cpu_s': cpu_s(lines[0]),
                'tick_s': threads.get('cppcgovd-tick', 0),
                'access_s': threads.get('cppcgov-access', 0),
                'uptime_s': float(lines[-1].split()[0]),
                'ticks': stats.get('ticks', 0),
                'idle_sleeps': stats.get('tick_idle_sleeps', 0),
                'steady_sleeps': stats.get('tick_steady_sleeps', 0)}

    def daemon_cost(self, before):
        """What cppcgovd cost since `before` (daemon_reading()): its CPU
        time as a share of one virtual CPU, its ticks, idle sleeps and
        steady sleeps a second."""
        now = self.daemon_reading()
        seconds = max(1e-6, now['uptime_s'] - before['uptime_s'])
        return {'cpu_pct': 100 * (now['cpu_s'] - before['cpu_s']) / seconds,
                'tick_pct': 100 * (now['tick_s'] - before['tick_s']) / seconds,
                'access_pct': 100 * (now['access_s'] - before['access_s']) /
                seconds,
                'ticks_s': (now['ticks'] - before['ticks']) / seconds,
                'idle_sleeps_s': (now['idle_sleeps'] -
                                  before['idle_sleeps']) / seconds,
                'steady_sleeps_s': (now['steady_sleeps'] -
                                    before['steady_sleeps']) / seconds}

    def counted(self, command, timeout):
        """Runs `command` in the guest: (its JSON, the platform's energy
        in joules, its changes of Desired and doorbells rung over it, per
        second)."""
        before = self.platform.stats()
        began = time.monotonic()
        out = self.guest.sh(f'export DBUS_SYSTEM_BUS_ADDRESS={BUS_ADDRESS}; '
                            f'{command}',
                            timeout=timeout)
        seconds = time.monotonic() - began
        after = self.platform.stats()
        energy = after['energy_j'] - before['energy_j']
        writes = sum(a['desired_changes'] - b['desired_changes']
                     for a, b in zip(after['cpus'], before['cpus']))
        bells = sum(a['doorbells'] - b['doorbells']
                    for a, b in zip(after['subspaces'], before['subspaces']))
        return json.loads(out), energy, {'writes_s': writes / seconds,
                                         'doorbells_s': bells / seconds}

    def calibrate(self):
        """Loops a millisecond at highest (under performance), and the
        server's throughput there (requests a second, saturated)."""
        self.governor('performance')
        time.sleep(1)
        loops = json.loads(self.guest.sh(
            'taskset -c 0 vm_workload calibrate 2000'))['loops_per_ms']
        self.loops_per_ms = loops
        self.request_loops = int(loops * self.args.request_ms)
        done = json.loads(self.guest.sh(
            f'vm_workload server --rate 0 --work {self.request_loops} '
            f'--seconds {self.args.seconds}', timeout=120))
        self.throughput = done['requests'] / done['seconds']
        print(f'calibration: {loops:.0f} loops/ms at highest; a request '
              f'{self.request_loops} loops; saturated {self.throughput:.0f} '
              'requests/s', flush=True)

    def server(self, arm, load, run):
        rate = max(1, int(self.throughput * load / 100))
        out, energy, counts = self.counted(
            f'vm_workload server --rate {rate} --work {self.request_loops} '
            f'--seconds {self.args.seconds} --seed {run + 1}'
            f'{self.hint_option(arm)}', timeout=self.args.seconds * 10 + 60)
        return {'p50_us': out['p50_us'], 'p99_us': out['p99_us'],
                'windows': out['window_p99_us'], 'requests': out['requests'],
                'energy_j': energy, **counts}

    def periodic_command(self, hint=''):
        """The periodic task on CPU 0 for --seconds: PERIODIC_US of work at
        nominal every PERIOD_US."""
        caps = self.caps[0]
        loops = int(self.loops_per_ms * PERIODIC_US / 1000 * caps.nominal /
                    caps.highest)
        return (f'taskset -c 0 vm_workload periodic --work {loops} '
                f'--period-us {PERIOD_US} --seconds {self.args.seconds}{hint}')

    def periodic(self, arm, run):
        out, energy, counts = self.counted(
            self.periodic_command(self.hint_option(arm)),
            timeout=self.args.seconds * 10 + 60)
        return {'misses': out['misses'], 'periods': out['periods'],
                'p99_us': out['p99_us'], 'energy_j': energy, **counts}

    def burst(self, arm, run):
        """From 2 s of idle, a burst on CPU 0: the platform's time from the
        burst's mark until it delivers highest there (ms)."""
        self.marks += 1
        value = self.marks
        _, energy, counts = self.counted(
            f'taskset -c 0 vm_workload burst --mark {mark_address(0):#x} '
            f'--ms 600 --value {value}', timeout=120)
        marked, reach = self.reach_ms(0, value)
        return {'reach_ms': reach, 'marked': marked, 'energy_j': energy,
                **counts}

    def idle(self, arm, run):
        """Nothing of the bench's runs for --seconds: the energy, the
        writes and (cppcgovd's arms) the daemon's own cost."""
        before = self.daemon_reading() if ARMS[arm][1] else None
        _, energy, counts = self.counted(
            f'sleep {self.args.seconds}; echo {{}}',
            timeout=self.args.seconds + 60)
        cost = self.daemon_cost(before) if before else {}
        return {'energy_j': energy, **counts,
                'cpu_pct': cost.get('cpu_pct'),
                'ticks_s': cost.get('ticks_s'),
                'idle_sleeps_s': cost.get('idle_sleeps_s'),
                'steady_sleeps_s': cost.get('steady_sleeps_s')}

    def shared(self, arm, variant):
        """On CPU 0 for the same wall time in every variant: the batch
        task (capped at util_max SHARED_CAP where the arm hints, or not
        capped) or nothing, beside the periodic task without a hint or
        not: the periodic task's figures, the batch's loops and CPU 0's
        energy."""
        name, batch, periodic = variant
        seconds = self.args.seconds
        cap = (self.hint_option(arm, util_min=0, util_max=SHARED_CAP)
               if batch == 'capped' else '')
        out = '/tmp/vm-eval-shared'
        first = (f'taskset -c 0 vm_workload batch --seconds {seconds + 1}'
                 f'{cap} >{out}-batch' if batch else
                 f'sleep {seconds + 1}; echo null >{out}-batch')
        second = (f'{self.periodic_command()} >{out}-periodic' if periodic
                  else f'echo null >{out}-periodic')
        before = self.platform.stats()['cpus'][0]['energy_j']
        out_json, _, counts = self.counted(
            f'({first}) & ({second}); wait; echo "{{\\"batch\\": '
            f'$(cat {out}-batch), \\"periodic\\": $(cat {out}-periodic)}}"',
            timeout=seconds * 10 + 60)
        energy = self.platform.stats()['cpus'][0]['energy_j'] - before
        got = out_json['periodic'] or {}
        return {'variant': name, 'p99_us': got.get('p99_us'),
                'misses': got.get('misses'), 'periods': got.get('periods'),
                'loops': (out_json['batch'] or {}).get('loops'),
                'energy_j': energy, **counts}

    def reach_ms(self, cpu, value):
        """From the platform's log: (whether it logged CPU `cpu`'s mark
        `value`, ms from that mark to the CPU's first delivered level at
        highest: 0 when it was there already, None when it never got
        there)."""
        highest = self.caps[cpu].highest
        marked = None
        level = None
        with open(self.platform_log, encoding='utf-8') as f:
            for line in f:
                w = line.split()
                if len(w) < 6 or w[2] != 'cpu' or int(w[3]) != cpu:
                    continue
                at = int(w[0]) / 1000
                if w[4] == 'delivered':
                    level = int(w[5])
                    if marked is not None and level >= highest:
                        return True, at - marked
                elif w[4] == 'mark' and int(w[5]) == value:
                    marked = at
                    if level is not None and level >= highest:
                        return True, 0.0
        return marked is not None, None

def median_spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return 'n/a'
    m = statistics.median(values)
    return f'{m:.4g} ({min(values):.4g}-{max(values):.4g})'


def cells_of(rows, columns):
    """For each (key, width) of `columns` the median and spread of that
    key over `rows`, right-aligned in its width."""
    return ' '.join(f'{median_spread([r[key] for r in rows]):>{width}}'
                    for key, width in columns)


def cells(arm, rows, columns):
    """A table's line: the arm, then cells_of(rows, columns)."""
    return f'{arm:<20} ' + cells_of(rows, columns)


def report(args, results, slo):
    """The tables, printed and written to args.out/vm_eval.txt: every
    workload's writes (changes of Desired) a second and, on the pcc
    layout, its doorbells a second."""
    lines = [f'layout {args.layout}, curve {args.curve}, {args.seconds} s '
             'a measurement', '']
    bells = (('doorbells_s', 14),) if args.layout == 'pcc' else ()
    bells_head = f' {"doorbells/s":>14}' if bells else ''
    rates = (('writes_s', 18),) + bells
    if 'server' in args.workloads:
        lines.append(f'request server ({args.request_ms} ms of work at '
                     f'highest a request; SLO: {SLO_FACTOR} x '
                     'performance\'s p99 at the same load)')
        lines.append(f'{"load":>5} {"arm":<20} {"p50 us":>22} '
                     f'{"p99 us":>22} {"SLO-breaking windows":>22} '
                     f'{"energy J":>22} {"writes/s":>18}' + bells_head)
        for load in args.loads:
            for arm in args.arms:
                rows = results.get(('server', arm, load), [])
                broken = [sum(1 for w in r['windows'] if w > slo[load]) /
                          max(1, len(r['windows'])) for r in rows]
                lines.append(
                    f'{load:>4}% {arm:<20} '
                    f'{median_spread([r["p50_us"] for r in rows]):>22} '
                    f'{median_spread([r["p99_us"] for r in rows]):>22} '
                    f'{median_spread(broken):>22} '
                    f'{median_spread([r["energy_j"] for r in rows]):>22} ' +
                    cells_of(rows, rates))
        lines.append('')
    if 'periodic' in args.workloads:
        lines.append(f'periodic ({PERIODIC_US} us at nominal every '
                     f'{PERIOD_US} us; hinted arms: util_min {HINT_MIN})')
        lines.append(f'{"arm":<20} {"misses":>20} {"p99 us":>22} '
                     f'{"energy J":>22} {"writes/s":>18}' + bells_head)
        for arm in args.arms:
            rows = results.get(('periodic', arm, 0), [])
            lines.append(cells(arm, rows, (('misses', 20), ('p99_us', 22),
                                           ('energy_j', 22)) + rates))
        lines.append('')
    if 'burst' in args.workloads:
        lines.append('burst from idle (ms from the first instruction to '
                     'highest delivered, the platform\'s clock)')
        lines.append(f'{"arm":<20} {"to highest ms":>22} {"energy J":>22} '
                     f'{"writes/s":>18}' + bells_head)
        for arm in args.arms:
            rows = results.get(('burst', arm, 0), [])
            lines.append(cells(arm, rows, (('reach_ms', 22),
                                           ('energy_j', 22)) + rates))
    if 'shared' in args.workloads:
        lines.extend(shared_table(args, results, rates))
    if 'idle' in args.workloads:
        lines.extend(['', f'idle ({args.seconds} s with nothing of the '
                      'bench\'s running; cppcgovd\'s CPU as % of one '
                      'virtual CPU)',
                      f'{"arm":<20} {"energy J":>22} {"writes/s":>18}' +
                      bells_head + f' {"cppcgovd CPU %":>22} {"ticks/s":>22}'])
        for arm in args.arms:
            rows = results.get(('idle', arm, 0), [])
            lines.append(cells(arm, rows, (('energy_j', 22),) + rates +
                               (('cpu_pct', 22), ('ticks_s', 22))))
    daemon_arms = [a for a in args.arms if ('daemon', a, 0) in results]
    if daemon_arms:
        lines.extend(['', 'cppcgovd\'s own cost over each arm\'s workloads '
                      '(the guest kernel\'s /proc; % of one virtual CPU: '
                      'every thread, the tick\'s, the access workers\')',
                      f'{"arm":<20} {"CPU %":>22} {"tick thread %":>22} '
                      f'{"access workers %":>22} {"ticks/s":>22} '
                      f'{"idle sleeps/s":>22} {"steady sleeps/s":>22}'])
        for arm in daemon_arms:
            rows = [{'tick_pct': None, 'access_pct': None, **r}
                    for r in results[('daemon', arm, 0)]]
            lines.append(cells(arm, rows,
                               (('cpu_pct', 22), ('tick_pct', 22),
                                ('access_pct', 22), ('ticks_s', 22),
                                ('idle_sleeps_s', 22),
                                ('steady_sleeps_s', 22))))
    text = '\n'.join(lines)
    print(text, flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'vm_eval.txt'), 'w',
              encoding='utf-8') as f:
        f.write(text + '\n')
    # Every run's figures, for another look without another run.
    with open(os.path.join(args.out, 'vm_eval.json'), 'w',
              encoding='utf-8') as f:
        json.dump({'layout': args.layout, 'curve': args.curve,
                   'request_ms': args.request_ms, 'seconds': args.seconds,
                   'slo_us': slo,
                   'results': [{'workload': w, 'arm': a, 'point': p,
                                'runs': rows}
                               for (w, a, p), rows in results.items()]},
                  f, indent=1)
    plot(args, results)


def shared_table(args, results, rates):
    """The shared CPU's table: the unhinted periodic task's p99 beside the
    capped batch against beside the uncapped one, the batch's energy a
    billion loops beside the periodic task (CPU 0's energy less the
    periodic task's alone, in the same run) against capped alone, and the
    `rates` (cells_of's columns) of the capped variant."""
    lines = ['', f'shared CPU 0 (a batch task, capped at util_max '
             f'{SHARED_CAP} in the hinted arms, beside the periodic task '
             'without a hint; CPU 0\'s energy a billion batch loops)',
             f'{"arm":<20} {"p99 us capped":>22} {"p99 us uncapped":>22} '
             f'{"p99 ratio":>8} {"misses capped":>16} '
             f'{"J/Gloop shared":>22} {"J/Gloop alone":>22} '
             f'{"J ratio":>8}' + ''.join(f' {k[:-2] + "/s":>{w}}'
                                         for k, w in rates)]

    def rows(arm, variant):
        return results.get(('shared', arm, variant), [])

    def per_run(arm):
        """(p99 ratio, shared J/Gloop, alone J/Gloop) of each run."""
        out = []
        for capped, uncapped, alone, batch in zip(
                rows(arm, 'capped'), rows(arm, 'uncapped'),
                rows(arm, 'periodic-alone'), rows(arm, 'batch-alone')):
            ratio = (capped['p99_us'] / uncapped['p99_us']
                     if capped['p99_us'] and uncapped['p99_us'] else None)
            shared = ((capped['energy_j'] - alone['energy_j']) /
                      capped['loops'] * 1e9 if capped['loops'] else None)
            single = (batch['energy_j'] / batch['loops'] * 1e9
                      if batch['loops'] else None)
            out.append((ratio, shared, single))
        return out

    for arm in args.arms:
        runs = per_run(arm)
        j_ratio = [s / a for _, s, a in runs if s and a]
        lines.append(
            f'{arm:<20} '
            f'{median_spread([r["p99_us"] for r in rows(arm, "capped")]):>22} '
            f'{median_spread([r["p99_us"] for r in rows(arm, "uncapped")]):>22} '
            f'{median_spread([r[0] for r in runs]):>8} '
            f'{median_spread([r["misses"] for r in rows(arm, "capped")]):>16} '
            f'{median_spread([r[1] for r in runs]):>22} '
            f'{median_spread([r[2] for r in runs]):>22} '
            f'{median_spread(j_ratio):>8} ' +
            cells_of(rows(arm, 'capped'), rates))
    return lines


def plot(args, results):
    """One PNG a workload in args.out: energy against the workload's
    latency, a line (the server's loads) or a point a arm; idle, energy a
    arm. Nothing without python3-matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('no python3-matplotlib: no plot')
        return

    def median(rows, key):
        values = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(values) if values else None

    # workload: (the latency's key and label, the results' keys to plot)
    figures = {
        'server': ('p99_us', 'p99 latency (us)',
                   [('server', load) for load in args.loads]),
        'periodic': ('p99_us', 'p99 of a period\'s end (us)',
                     [('periodic', 0)]),
        'burst': ('reach_ms', 'ms from the burst to highest delivered',
                  [('burst', 0)]),
        'shared': ('p99_us', 'the unhinted task\'s p99 beside the capped '
                   'batch (us)', [('shared', 'capped')]),
    }
    for workload in args.workloads:
        figure, axes = plt.subplots(figsize=(7, 5))
        if workload == 'idle':
            arms = [a for a in args.arms if results.get(('idle', a, 0))]
            axes.bar(arms, [median(results[('idle', a, 0)], 'energy_j')
                            for a in arms])
            axes.tick_params(axis='x', labelrotation=30)
            axes.set_ylabel(f'platform energy (J, {args.curve} curve)')
        else:
            key, label, points = figures[workload]
            for arm in args.arms:
                xy = [(median(rows, key), median(rows, 'energy_j'))
                      for rows in (results.get((w, arm, v), [])
                                   for w, v in points) if rows]
                xy = [p for p in xy if None not in p]
                if xy:
                    axes.plot([p[0] for p in xy], [p[1] for p in xy],
                              marker='o', label=arm)
            if workload == 'server':
                axes.set_xscale('log')
            axes.set_xlabel(label)
            axes.set_ylabel(f'platform energy (J, {args.curve} curve)')
            axes.legend()
        axes.set_title(f'{workload}, layout {args.layout}' +
                       (f', loads {args.loads} %'
                        if workload == 'server' else ''))
        figure.tight_layout()
        path = os.path.join(args.out, f'vm_eval-{workload}.png')
        figure.savefig(path, dpi=100)
        plt.close(figure)
        print(f'plot: {path}')


def sane(args, results):
    """The smoke's checks: numbers that could be right, from every arm."""
    problems = []
    for (workload, arm, load), rows in results.items():
        if workload == 'daemon':
            continue
        for r in rows:
            if r['energy_j'] <= 0:
                problems.append(f'{workload} {arm}: energy {r["energy_j"]}')
            if workload == 'idle' and ARMS[arm][1] and \
                    not r['ticks_s']:
                problems.append(f'{workload} {arm}: no tick counted')
            # Idle, the tick sleeps long, unless told to keep its period.
            if workload == 'idle' and ARMS[arm][1] and \
                    bool(r['idle_sleeps_s']) == (arm == 'cppcgovd-period'):
                problems.append(f'{workload} {arm}: idle sleeps a second '
                                f'{r["idle_sleeps_s"]}')
            if workload == 'server' and r['requests'] <= 0:
                problems.append(f'{workload} {arm}: no request served')
            if workload == 'periodic' and r['periods'] <= 0:
                problems.append(f'{workload} {arm}: no period')
            if workload == 'burst' and not r['marked']:
                problems.append(f'{workload} {arm}: the platform saw no '
                                'mark')
            # Under autonomous selection the platform's own rule decides,
            # and may not reach highest within the burst (22-685 ms).
            if workload == 'burst' and r['reach_ms'] is None and \
                    ARMS[arm][1] != 'autonomous':
                problems.append(f'{workload} {arm}: never reached highest')
            if workload == 'shared':
                _, batch, periodic = next(v for v in SHARED_VARIANTS
                                          if v[0] == load)
                if periodic and not r['periods']:
                    problems.append(f'{workload} {arm} {load}: no period')
                if batch and not r['loops']:
                    problems.append(f'{workload} {arm} {load}: no batch '
                                    'loop')
    for arm in args.arms:
        for workload in args.workloads:
            if not any(k[0] == workload and k[1] == arm for k in results):
                problems.append(f'{workload} {arm}: no result')
        if ARMS[arm][1]:
            for r in results.get(('daemon', arm, 0), [None]):
                if r is None or not 0 < r['cpu_pct'] < 200 or \
                        r['ticks_s'] <= 0:
                    problems.append(f'{arm}: cppcgovd\'s cost {r}')
                elif arm == 'cppcgovd-period' and r['steady_sleeps_s']:
                    problems.append(f'{arm}: steady sleeps at the period '
                                    f'always: {r}')
    return problems


def evaluate(args, guest):
    pcc = 'shared' if args.layout == 'pcc' else None
    rig = VmRig(guest, 2, controls=pcc is None, pcc=pcc)
    layout = platform_rig.layout_text(rig.raw_caps(), pcc is None, pcc)
    log = os.path.join(args.work, 'eval-platform.log')
    if os.path.exists(log):
        os.remove(log)
    with platform_rig.Platform(args.platform_program, guest, layout,
                               args.work, 'eval') as platform:
        platform.command(f'curve {args.curve}')
        rig.setup(platform=True)
        bench = Bench(guest, rig, platform, rig.caps(), args)
        bench.platform_log = log
        bench.calibrate()
        results = {}
        order = random.Random(1)
        for run in range(args.runs):
            arms = list(args.arms)
            order.shuffle(arms)
            for arm in arms:
                bench.enter(arm)
                try:
                    if 'server' in args.workloads:
                        for load in args.loads:
                            results.setdefault(('server', arm, load), []) \
                                .append(bench.server(arm, load, run))
                    if 'periodic' in args.workloads:
                        results.setdefault(('periodic', arm, 0), []) \
                            .append(bench.periodic(arm, run))
                    if 'burst' in args.workloads:
                        results.setdefault(('burst', arm, 0), []) \
                            .append(bench.burst(arm, run))
                    if 'idle' in args.workloads:
                        results.setdefault(('idle', arm, 0), []) \
                            .append(bench.idle(arm, run))
                    if 'shared' in args.workloads:
                        for variant in SHARED_VARIANTS[
                                :1 if args.smoke else None]:
                            results.setdefault(
                                ('shared', arm, variant[0]), []).append(
                                bench.shared(arm, variant))
                finally:
                    bench.leave(arm)
                if bench.cost:
                    results.setdefault(('daemon', arm, 0), []).append(
                        bench.cost)
                print(f'run {run + 1}/{args.runs}: {arm} done', flush=True)
        # The SLO of each load: from performance when it ran, else from
        # the best p99 of any arm there.
        slo = {}
        for load in args.loads:
            ref = results.get(('server', 'performance', load)) or \
                [r for a in args.arms for r in
                 results.get(('server', a, load), [])]
            slo[load] = SLO_FACTOR * statistics.median(
                r['p99_us'] for r in ref) if ref else float('inf')
        report(args, results, slo)
    return results


def replot(folder):
    """The tables and plots of an earlier run, from its vm_eval.json in
    `folder`, written there again."""
    with open(os.path.join(folder, 'vm_eval.json'), encoding='utf-8') as f:
        saved = json.load(f)
    results = {}
    for entry in saved['results']:
        results[(entry['workload'], entry['arm'], entry['point'])] = \
            entry['runs']
    keys = list(results)
    args = argparse.Namespace(
        layout=saved['layout'], curve=saved['curve'],
        request_ms=saved['request_ms'], seconds=saved['seconds'],
        out=folder,
        arms=list(dict.fromkeys(k[1] for k in keys if k[0] != 'daemon')),
        workloads=[w for w in WORKLOADS if any(k[0] == w for k in keys)],
        loads=sorted({k[2] for k in keys if k[0] == 'server'}))
    report(args, results, {int(k): v for k, v in saved['slo_us'].items()})
    return 0


def main():
    args = parse_args()
    if args.replot:
        return replot(args.replot)
    options = guest_options(args.build_root, args.layout)
    missing = boot_disk.missing_tools() if args.layout == 'pcc' else None
    if missing:
        raise SystemExit('vm_eval: the pcc layout boots from a disk that '
                         'needs ' + missing)
    args.work = options.work
    args.platform_program = options.platform
    os.makedirs(args.work, exist_ok=True)
    started = time.monotonic()
    with vm_test.boot(options) as guest:
        print(f'eval: {guest.sh("uname -r").strip()}, booted in '
              f'{guest.boot_seconds:.1f} s', flush=True)
        try:
            results = evaluate(args, guest)
        except guest_module.GuestError as e:
            print(f'vm_eval: the guest failed: {e}')
            return 1
    print(f'vm_eval: {time.monotonic() - started:.0f} s in all')
    if args.smoke:
        problems = sane(args, results)
        for p in problems:
            print(f'vm_eval smoke: {p}')
        return 1 if problems else 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
