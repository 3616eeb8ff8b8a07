#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
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

This file runs them all. The rigs are in rig.py (the bus, the daemon and
the clients) and kernel_rig.py (the kernel backend's fake tree, snapshots
and unwritable files), the cases' base in daemon_case.py, and the cases by
area in interface_test.py (properties, status, named errors, load),
handles_test.py (clamps and their lifetimes), latency_test.py (latency
requests and their restore), limits_test.py (per connection and per
user), reload_test.py (the configuration and its reload), kernel_test.py
(the kernel backend), pcc_daemon_test.py (the kernel backend on pccfs,
tests/pccfs: PCC-speed accesses, a hung and a failing CPU; PccRig in
pcc_fs.py), trust_test.py (permissions, trust in the bus
driver), ceiling_test.py (a user's ceiling), observe_test.py (the
scheduler's events through BPF, and the fallback to procfs),
fuzz_test.py (bus_fuzz), ctl_test.py (cppcgovctl's help, usage errors,
D-Bus failures as sentences and check-config), metrics_test.py (the
textfile collector's file, cppcgovctl metrics, promtool and
node_exporter), config_check_test.py
(--check-config, a reload that needs a restart, the refusal of backend
auto without CPPC, the log's priority prefix), cpu_info_test.py
(GetCpuInfo and HandleStarted), client_test.py (libcppcgov-client in
applications built through pkg-config), record_test.py (cppcgovctl
record's trace and plot), monitor_test.py (`cppcgovctl monitor` at
192 CPUs in tmux, and --json), headroom_test.py (GetCpuHeadroom,
GetTaskHeadroom and cppcgovctl headroom: load, limits, errors, user
nobody) and energy_test.py (energy preferences and the autonomous
policy).
A case is named as Class.test_name or Class (or module.Class...), as
unittest.main takes them.

Usage: daemon_test.py CPPCGOVD CPPCGOVCTL SESSION_CLIENT BUS_FUZZ SOURCE_DIR
                      [unittest options and test names]

SOURCE_DIR is the source tree, whose config/policy.yaml one case runs
with. Needs dbus-daemon, dbus-send, busctl and util-linux's setpriv,
taskset, unshare and nsenter; exits with 77 (skipped) when one of the
first three is missing. Three cases need root and are skipped otherwise:
the permissions case (it runs a client as user nobody), the ceiling case
(it runs a task and a client as user nobody) and the PID-reuse case (it
runs the daemon in a PID namespace of its own); the read-only mount of the
unwritable-file cases is left out without root. The cases on pccfs need
root, /dev/fuse and the pccfs binary (CPPCGOV_PCCFS, which meson sets) and
are skipped otherwise.
"""

import importlib
import os
import shutil
import signal
import sys
import types
import unittest

# The modules are imported from the source tree: no bytecode left there.
sys.dont_write_bytecode = True

import rig

MODULES = ('interface_test', 'handles_test', 'latency_test', 'limits_test',
           'reload_test', 'config_check_test', 'kernel_test',
           'pcc_daemon_test', 'trust_test', 'ceiling_test', 'observe_test',
           'fuzz_test', 'ctl_test', 'cpu_info_test', 'client_test',
           'record_test', 'metrics_test', 'monitor_test', 'headroom_test',
           'energy_test', 'realtime_test')


def cases():
    """One namespace holding every test module's cases by class name (and
    each module by its name), for unittest.main to load and to look names
    up in. Imports the modules: rig.configure() comes first."""
    namespace = types.ModuleType('cases')
    for name in MODULES:
        module = importlib.import_module(name)
        setattr(namespace, name, module)
        for attr, value in vars(module).items():
            if (isinstance(value, type)
                    and issubclass(value, unittest.TestCase)
                    and value.__module__ == name):
                setattr(namespace, attr, value)
    return namespace


def main():
    if len(sys.argv) < 6:
        sys.stderr.write(__doc__)
        return 2
    rig.configure(*(os.path.abspath(a) for a in sys.argv[1:6]))
    for tool in ('dbus-daemon', 'dbus-send', 'busctl'):
        if shutil.which(tool) is None:
            print(f'{tool} not found: skipping', file=sys.stderr)
            return 77
    # meson ends a test that runs too long with SIGTERM: kill what the
    # running case started, remove its files, and go.
    signal.signal(signal.SIGTERM, rig.terminated)
    program = unittest.main(module=cases(), argv=[sys.argv[0]] + sys.argv[6:],
                            exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
