#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cppcgovd from its Debian package under the real systemd, booted as
PID 1 in private namespaces.

The package is the .deb named by CPPCGOV_DEB (tools/dev/deb builds it;
without it the test skips, and fails under CI=true). The test starts
ns_init.sh under `unshare` in new PID, mount, UTS, IPC, network and
cgroup namespaces (and a cgroup of its own). ns_init.sh lays writable
overlays over /usr, /etc, /var/lib/dpkg, /var/lib/systemd and /var/cache
whose upper directories are in the test's work directory (under the
build directory, never /tmp), puts fresh tmpfs on /tmp, /var/tmp, /run,
/var/log and /dev, makes everything else read-only, and execs systemd
with SYSTEMD_UNIT_PATH holding only the units this test writes: stand-in
targets, Debian's own dbus.service/dbus.socket as the system bus,
journald, and a link to the package's cppcgovd.service with a drop-in
that adds `--root` to its command lines, pointing the daemon at a fake
sysfs tree (so the machine's real CPU settings are never touched). Then,
through `nsenter`:

  install  `dpkg -i` (with libcppcgov-client0 from beside it, which
           cppcgovctl links): installed, its files where Debian looks,
           the group made (sysusers), policy.yaml a conffile, the service
           neither started nor enabled; a policy drop-in selects the
           simulator backend with 4 CPUs
  start    `systemctl start`: active, on the bus, the drop-in read, no
           capabilities, watchdog armed
  stop     `cppcgovctl latency` holds a request and the fake attributes
           change; `systemctl stop` (SIGTERM) puts them back, exit 0
  crash    the same, then SIGKILL: ExecStopPost=`cppcgovd --restore-only`
           restores from the state in /run/cppcgov before
           Restart=on-failure brings the daemon back
  bus      the bus policy: an unprivileged user may call (the daemon
           refuses the latency request itself) but not own the name
  reload   `systemctl reload`: PolicyChanged on the bus, still active
  end      `systemctl stop`: the fake tree is byte for byte as before
  purge    `dpkg --purge` while it runs and holds a latency request: it
           is stopped and the fake tree is as before; none of the
           package's paths is left, nor any other file in the overlays
           but dpkg's database, the group files (Debian keeps system
           groups) and man-db's index

and finally SIGKILL to the namespace's PID 1, which takes every process
in it along. The host is left as it was, and the test checks its dpkg
database, group files and the package's paths: the mounts lived and died
in the private mount namespace, the cgroup is removed, the directory
deleted (what a run killed before its clean-up leaves, the next run
removes).

This file holds the scenario and its checks; systemd in the namespaces,
the prerequisites and the clean-up are in system_rig.py.

Exit status: 0 passed, 1 failed, 77 skipped (not root, a tool or kernel
feature missing, no CPPCGOV_DEB, or the package installed on the host).
`--keep` keeps the work directory.
"""

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

# system_rig comes from the source tree: no bytecode left there.
sys.dont_write_bytecode = True

from system_rig import (DEBIAN_UNIT_DIR, DEBIAN_UNITS, TARGET,
                        TIMEOUT_COMMAND, WORK_PREFIX, Failure, Interrupted,
                        Namespace, Skip, check_prerequisites,
                        deadline_loop, entries, log, read_line,
                        remove_stale_work, snapshot, write)

SKIP = 77

PACKAGE = "cppcgov"
# The client library's package, which cppcgovctl links: installed from
# beside the cppcgov .deb when cppcgov depends on it (tools/dev/deb builds
# both into one directory).
LIBRARY_PACKAGE = "libcppcgov-client0"
UNIT = "cppcgovd.service"
BUS_NAME = "org.cppcgov.Governor1"
OBJECT_PATH = "/org/cppcgov/Governor1"
INTERFACE = "org.cppcgov.Governor1"
GROUP = "cppcgov"

# What the package must install, where Debian's programs look (the unit:
# /lib/systemd/system in Debian 12, /usr/lib/systemd/system later).
DAEMON = "/usr/sbin/cppcgovd"
CTL = "/usr/bin/cppcgovctl"
POLICY_FILE = "/etc/cppcgov/policy.yaml"
PACKAGE_FILES = (
    DAEMON,
    CTL,
    POLICY_FILE,
    "/etc/cppcgov/policy.d",
    "/usr/share/dbus-1/system.d/org.cppcgov.Governor1.conf",
    "/usr/lib/sysusers.d/cppcgov.conf",
)
UNIT_PATH = re.compile(r"^/(usr/)?lib/systemd/system/" + re.escape(UNIT) + "$")
WANTS_LINK = "/etc/systemd/system/multi-user.target.wants/" + UNIT
POLICY_DROP_IN_PATH = "/etc/cppcgov/policy.d/50-system-test.yaml"
STATE_DIR = "/run/cppcgov"
POLICY_RC_D = "/usr/sbin/policy-rc.d"

# Writable overlays in the namespace (relative to /): where the package
# installs, dpkg's database, deb-systemd-helper's state, man-db's index.
OVERLAY_DIRS = ("usr", "etc", "var/lib/dpkg", "var/lib/systemd", "var/cache")
# What may differ after the purge: dpkg's database (but not the
# packages' own entries), the group files (the system group stays, as
# Debian keeps system users and groups), man-db's index and ldconfig's
# caches (rebuilt as the client library comes and goes).
PURGE_KEEPS = re.compile(
    r"^(var/lib/dpkg/(?!info/(cppcgov|libcppcgov-client0(:[a-z0-9]+)?)\.)"
    r"|etc/(group|gshadow|\.pwd\.lock)-?$"
    r"|etc/ld\.so\.cache$"
    r"|var/cache/(man|ldconfig)/)")
# The host's files the test must never change.
HOST_FILES = ("/var/lib/dpkg/status", "/etc/group", "/etc/gshadow")

# Stand-ins for the targets units depend on by default.
STAND_IN_TARGETS = {
    "sysinit.target": "",
    "sockets.target": "",
    "paths.target": "",
    "timers.target": "",
    "slices.target": "",
    "local-fs.target": "",
    "swap.target": "",
    "shutdown.target": "DefaultDependencies=no\n",
    "basic.target": (
        "Requires=sysinit.target\n"
        "Wants=sockets.target paths.target timers.target slices.target\n"
        "After=sysinit.target sockets.target paths.target timers.target "
        "slices.target\n"
    ),
    TARGET: (
        "Requires=basic.target\n"
        "Wants=systemd-journald.service dbus.socket\n"
        "After=basic.target systemd-journald.service dbus.socket\n"
    ),
}

# The fake CPUs' latency attributes, as the kernel prints them.
FAKE_LATENCY = {0: "0\n", 1: "0\n", 2: "25\n", 3: "n/a\n"}
# The request the test makes: CPUs 0 and 2 to 10 us.
REQUEST_CPUS = (0, 2)
REQUEST_US = 10

# The test's policy drop-in.
POLICY_DROP_IN = """\
backend:
  type: simulator
  simulator:
    layout: rd-n2
    cpus: 4
sampling:
  period_us: 10000
"""

HIDDEN_DIRS = ("/tmp", "/var/tmp", "/run", "/var/log", "/dev")
FALLBACK_BASE = "/var/lib/cppcgov-system-test"


def latency_file(fake_root, cpu):
    return os.path.join(fake_root, f"sys/devices/system/cpu/cpu{cpu}/power/"
                        "pm_qos_resume_latency_us")


class SystemTest:
    def __init__(self, args):
        self.args = args
        self.work = None
        self.ns = None
        self.failures = []
        self.overlays = []
        self.baseline = {}
        self.package_paths = []
        self.unit_file = None
        self.unit_text = ""

    # ----------------------------------------------------------- set-up

    def read_package(self):
        """Reads the package's file list and its unit from the .deb (on
        the host, into the work directory), checks it installs what the
        test needs where Debian looks, and copies it where the namespace
        sees it (the .deb may be under /tmp). Returns the .debs to install:
        it, and the library's when it depends on that."""
        deb = os.path.join(self.work, os.path.basename(self.args.deb))
        shutil.copy(self.args.deb, deb)
        fsys = os.path.join(self.work, "fsys.tar")
        with open(fsys, "wb") as out:
            result = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb],
                                    stdout=out, stderr=subprocess.PIPE,
                                    timeout=60, check=False)
        if result.returncode != 0:
            raise Failure(f"dpkg-deb cannot read '{self.args.deb}': "
                          + result.stderr.decode("utf-8", "replace"))
        with tarfile.open(fsys) as tar:
            members = {"/" + os.path.normpath(m.name): m
                       for m in tar.getmembers()
                       if os.path.normpath(m.name) != "."}
            units = [p for p in members if UNIT_PATH.match(p)]
            missing = [p for p in PACKAGE_FILES if p not in members]
            if not units:
                missing.append("/lib/systemd/system/" + UNIT)
            if missing:
                raise Failure(f"'{self.args.deb}' lacks {', '.join(missing)}")
            self.unit_file = units[0]
            self.unit_text = tar.extractfile(
                members[self.unit_file]).read().decode("utf-8")
        os.unlink(fsys)
        self.package_paths = sorted(members)
        log(f"package {self.args.deb}: {len(members)} paths, the unit in "
            f"{os.path.dirname(self.unit_file)}")
        return [deb] + self.read_library_package(deb)

    def read_library_package(self, deb):
        """The client library's .deb, from beside the cppcgov .deb, copied
        into the work directory, when cppcgov depends on it (its paths
        join the package's); none when it does not."""
        fields = subprocess.run(["dpkg-deb", "-f", deb, "Depends",
                                 "Version", "Architecture"],
                                capture_output=True, text=True, timeout=60,
                                check=False).stdout
        values = dict(line.split(": ", 1) for line in fields.splitlines()
                      if ": " in line)
        depends = [d.strip().split()[0]
                   for d in values.get("Depends", "").split(",") if d.strip()]
        if LIBRARY_PACKAGE not in depends:
            return []
        version = values.get("Version", "").split(":")[-1]
        name = (f"{LIBRARY_PACKAGE}_{version}_"
                f"{values.get('Architecture', '')}.deb")
        found = os.path.join(os.path.dirname(self.args.deb), name)
        if not os.path.isfile(found):
            raise Failure(f"{PACKAGE} depends on {LIBRARY_PACKAGE} but "
                          f"'{found}' is not there (tools/dev/deb builds it "
                          "beside the cppcgov .deb)")
        library = os.path.join(self.work, name)
        shutil.copy(found, library)
        listing = subprocess.run(["dpkg-deb", "--contents", library],
                                 capture_output=True, text=True, timeout=60,
                                 check=False).stdout
        paths = {"/" + os.path.normpath(line.split()[5].split(" -> ")[0])
                 for line in listing.splitlines() if len(line.split()) >= 6}
        self.package_paths = sorted(set(self.package_paths)
                                    | (paths - {"/."}))
        log(f"package {found}: {len(paths)} paths, installed beside")
        return [library]

    def overlay_dirs(self):
        """The directories dpkg and the package's scripts write (the
        package's trees, dpkg's database, deb-systemd-helper's state,
        man-db's index), each a writable overlay in the namespace."""
        dirs = list(OVERLAY_DIRS)
        if not os.path.islink("/lib"):
            dirs.append("lib")  # a host without merged /usr
        real = os.path.realpath(self.work)
        for d in dirs:
            if real.startswith(f"/{d}/"):
                raise Skip(f"the work directory '{real}' is under /{d}, "
                           "which the test lays an overlay over")
        return dirs

    def host_state(self):
        """What of the host the test must leave alone: dpkg's view of the
        package, its database and the group files, and which of the
        package's paths exist."""
        state = {}
        query = subprocess.run(["dpkg-query", "-W", "-f=${Status}",
                                PACKAGE], capture_output=True, text=True,
                               timeout=60, check=False)
        state["dpkg-query"] = (query.returncode, query.stdout)
        for path in HOST_FILES:
            with contextlib.suppress(OSError), open(path, "rb") as f:
                state[path] = hashlib.sha256(f.read()).hexdigest()
        info = "/var/lib/dpkg/info"
        state[info] = sorted(n for n in os.listdir(info)
                             if n.startswith(PACKAGE + "."))
        state["paths"] = [p for p in self.package_paths
                          if os.path.lexists(p)]
        return state

    def write_units(self, fake_root):
        units = os.path.join(self.work, "units")
        os.makedirs(units)
        for unit in DEBIAN_UNITS:
            shutil.copy(os.path.join(DEBIAN_UNIT_DIR, unit), units)
        for name, body in STAND_IN_TARGETS.items():
            write(os.path.join(units, name),
                  "[Unit]\nDescription=System test stand-in: "
                  f"{name}\n{body}")
        # The package's own unit, once installed: only the test's units
        # are on systemd's search path, so a link to it is.
        os.symlink(self.unit_file, os.path.join(units, UNIT))

        # The daemon on the fake tree: the unit's own command lines with
        # --root added, and the tree writable in its sandbox.
        dropin = ["[Service]"]
        for line in self.unit_text.splitlines():
            key, _, command = line.strip().partition("=")
            if key in ("ExecStart", "ExecStopPost"):
                dropin += [f"{key}=", f"{key}={command} --root {fake_root}"]
        dropin.append(f"ReadWritePaths={fake_root}")
        # Time to look at the tree between a crash and the restart.
        dropin.append("RestartSec=5s")
        if fake_root.startswith(("/home/", "/root/", "/run/user/")):
            dropin.append("ProtectHome=no")
        write(os.path.join(units, UNIT + ".d", "test.conf"),
              "\n".join(dropin) + "\n")
        # The simulator, explicitly, and a slower tick on a shared
        # machine: copied in once the package is installed.
        write(os.path.join(self.work, "policy-drop-in.yaml"), POLICY_DROP_IN)

    def make_fake_root(self):
        fake_root = os.path.join(self.work, "fake-root")
        cpus = os.path.join(fake_root, "sys/devices/system/cpu")
        last = max(FAKE_LATENCY)
        for name in ("online", "possible", "present"):
            write(os.path.join(cpus, name), f"0-{last}\n")
        for cpu, value in FAKE_LATENCY.items():
            write(latency_file(fake_root, cpu), value)
        # The simulated load follows the host's.
        os.symlink("/proc", os.path.join(fake_root, "proc"))
        return fake_root

    # ------------------------------------------------------------ checks

    def check(self, condition, message):
        if condition:
            log(f"ok: {message}")
        else:
            log(f"FAILED: {message}")
            self.failures.append(message)
        return condition

    def show(self, prop):
        return self.ns.run(["systemctl", "show", f"--property={prop}",
                            "--value", UNIT], check=False,
                           quiet=True).stdout.strip()

    def wait_state(self, wanted, restarts=None):
        state = ""
        with contextlib.suppress(Failure):
            for _ in deadline_loop(TIMEOUT_COMMAND, f"{UNIT} {wanted}"):
                state = self.show("ActiveState")
                if state == wanted and (restarts is None
                                        or self.show("NRestarts") == restarts):
                    break
        return self.check(state == wanted,
                          f"{UNIT} is {wanted} (is {state or 'unknown'})")

    def fake_unchanged(self, fake_root, before, when):
        after = snapshot(fake_root)
        changed = sorted(k for k in set(before) | set(after)
                         if before.get(k) != after.get(k))
        for path in changed:
            log(f"  '{path}': {before.get(path)} -> {after.get(path)}")
        return self.check(not changed, f"the fake tree is as it was {when}")

    def hold_latency(self, fake_root, label):
        """`cppcgovctl latency` in the background, holding a request until
        its stdin closes; checks the fake attributes change. Returns the
        client (for release())."""
        cpus = ",".join(str(c) for c in REQUEST_CPUS)
        # Ends with cppcgovctl; SIGTERM to cppcgovctl when stdin closes
        # (fd 3: a background list's stdin would be /dev/null).
        client = self.ns.spawn([
            "sh", "-c",
            f"exec 3<&0; {CTL} latency --us {REQUEST_US}"
            f" --cpus {cpus} & pid=$!;"
            " (read -r _ <&3; kill -TERM $pid) >/dev/null 2>&1 & wait $pid"])
        line = read_line(client.stdout, TIMEOUT_COMMAND, bytearray())
        if not self.check(line is not None and line.startswith("handle "),
                          f"{label}: cppcgovctl latency holds a request"
                          f" ({line})"):
            self.release(client)
            return None
        want = f"{REQUEST_US}\n"
        values = {}
        with contextlib.suppress(Failure):
            for _ in deadline_loop(TIMEOUT_COMMAND, "the latency write"):
                values = {}
                for cpu in REQUEST_CPUS:
                    with open(latency_file(fake_root, cpu),
                              encoding="ascii") as f:
                        values[cpu] = f.read()
                if all(v == want for v in values.values()):
                    break
        self.check(all(v == want for v in values.values()),
                   f"{label}: the fake attributes of CPUs {cpus} say"
                   f" {REQUEST_US} us (read {values})")
        return client

    def release(self, client):
        """Closes the client's stdin and waits for it to end."""
        if client is None:
            return
        with contextlib.suppress(OSError):
            client.stdin.close()
        try:
            client.wait(timeout=TIMEOUT_COMMAND)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()
        err = client.stderr.read().decode("utf-8", "replace").strip()
        if err:
            log("  cppcgovctl: " + err)

    def diagnostics(self):
        log("---- diagnostics")
        for argv in (["systemctl", "--no-pager", "--full", "status", UNIT],
                     ["systemctl", "--no-pager", "--failed"],
                     ["journalctl", "--no-pager", "-b", "-u", UNIT],
                     ["journalctl", "--no-pager", "-b", "-u", "dbus.service"],
                     ["journalctl", "--no-pager", "-b", "_PID=1"]):
            with contextlib.suppress(Failure):
                self.ns.run(argv, check=False)

    # -------------------------------------------------- the package

    def upper(self):
        """What the namespace changed in the overlaid directories."""
        return {d: entries(os.path.join(self.work, "upper", d))
                for d in self.overlays}

    def install_package(self, debs):
        """`dpkg -i` inside (with the library package when there is one):
        installed, its files in place, the group
        made, the policy a conffile, the service neither started nor
        enabled; then the test's policy drop-in."""
        # A container's policy-rc.d (the host's, seen through the
        # overlay) would keep dpkg's scripts from stopping the service:
        # the namespace is a machine without one.
        if os.path.lexists(self.ns.path(POLICY_RC_D)):
            self.ns.run(["rm", POLICY_RC_D])
        self.baseline = self.upper()
        result = self.ns.run(["dpkg", "-i", *debs], check=False, timeout=120)
        status = self.ns.run(["dpkg-query", "-W", "-f=${Status}", PACKAGE],
                             check=False, quiet=True).stdout
        if result.returncode != 0 or status != "install ok installed":
            raise Failure(f"dpkg -i failed (exit status {result.returncode}"
                          f", '{status}'): the package is not installed")
        log(f"ok: dpkg -i installed {PACKAGE}")
        missing = [p for p in PACKAGE_FILES + (self.unit_file,)
                   if not os.path.lexists(self.ns.path(p))]
        self.check(not missing, "the package's files are in place"
                   + (f" (missing: {missing})" if missing else ""))
        conffiles = self.ns.run(["dpkg-query", "-W", "-f=${Conffiles}",
                                 PACKAGE], check=False, quiet=True).stdout
        self.check(f" {POLICY_FILE} " in conffiles,
                   f"{POLICY_FILE} is a conffile")
        group = self.ns.run(["getent", "group", GROUP], check=False,
                            quiet=True)
        self.check(group.returncode == 0,
                   f"the postinst made the group '{GROUP}' (sysusers)")
        self.check(self.show("ActiveState") == "inactive"
                   and not os.path.lexists(self.ns.path(WANTS_LINK)),
                   "the package neither started nor enabled the service")
        self.ns.run(["cp", os.path.join(self.work, "policy-drop-in.yaml"),
                     POLICY_DROP_IN_PATH])
        self.ns.run(["systemctl", "daemon-reload"])
        self.check(self.show("ExecStart").startswith(
            f"{{ path={DAEMON} ;"), f"the unit runs the package's {DAEMON}")

    def purge_package(self, fake_root, before):
        """`dpkg --purge` inside while the daemon runs and holds a latency
        request: stopped, what it changed put back, and nothing of the
        package left, in its paths or anywhere in the overlaid
        directories, but for dpkg's database and the group."""
        self.ns.run(["systemctl", "start", UNIT], check=False)
        client = None
        if self.wait_state("active"):
            client = self.hold_latency(fake_root, "purge")
        result = self.ns.run(["dpkg", "--purge", PACKAGE,
                              *([LIBRARY_PACKAGE] if len(self.debs) > 1
                                else [])], check=False, timeout=120)
        self.release(client)
        self.check(self.show("ActiveState") in ("inactive", ""),
                   "the removal stopped the daemon (ActiveState="
                   f"{self.show('ActiveState')})")
        self.fake_unchanged(fake_root, before, "after the purge")
        query = self.ns.run(["dpkg-query", "-W", "-f=${Status}", PACKAGE],
                            check=False, quiet=True)
        self.check(result.returncode == 0 and query.returncode != 0,
                   f"dpkg --purge removed {PACKAGE} ({query.stdout.strip()})")
        # The host's paths show through: a directory such as /usr/bin
        # stays; one only the package has must go.
        left = [p for p in self.package_paths + [STATE_DIR]
                if os.path.lexists(self.ns.path(p))
                and not os.path.lexists(p)]
        self.check(not left, "none of the package's paths is left"
                   + (f" (left: {left})" if left else ""))
        after = self.upper()
        changed = []
        for d in self.overlays:
            before, now = self.baseline[d], after[d]
            for path in sorted(set(before) | set(now)):
                full = f"{d}/{path}"
                if (before.get(path) != now.get(path)
                        and not PURGE_KEEPS.match(full)):
                    changed.append(full)
        for path in changed:
            log(f"  left behind: /{path}")
        self.check(not changed, "the purge left no file behind in the "
                   "overlaid directories (dpkg's database and the group "
                   "aside)")

    def scenario(self, fake_root, before):

        # Start: active, on the bus, without capabilities.
        self.ns.run(["systemctl", "start", UNIT], check=False)
        if not self.wait_state("active"):
            return
        backend = self.ns.run(["busctl", "--system", "get-property",
                               BUS_NAME, OBJECT_PATH, INTERFACE, "Backend"],
                              check=False)
        self.check(backend.returncode == 0
                   and backend.stdout.startswith('s "simulator:'),
                   "it answers on the system bus, on the simulator")
        count = self.ns.run(["busctl", "--system", "get-property", BUS_NAME,
                             OBJECT_PATH, INTERFACE, "CpuCount"], check=False)
        self.check(count.stdout.strip() == "u 4",
                   "it read the installed policy and the test's drop-in")
        pid = self.show("MainPID")
        # The unit grants CAP_BPF and CAP_PERFMON (bits 39 and 38) for the
        # BPF program and CAP_SYS_NICE (bit 23) for the tick's thread's
        # reservation; the daemon drops all three from every thread at
        # start, loaded or not (on this fake root it does not load).
        listing = self.ns.run(
            ["sh", "-c", f"for t in /proc/{pid}/task/*; do "
             "grep -E '^Cap(Eff|Prm|Bnd):' $t/status | tr '\\n' ' '; "
             "echo; done"], check=False, quiet=True).stdout
        threads = []
        for line in listing.splitlines():
            fields = line.split()
            threads.append({fields[i].rstrip(":"): int(fields[i + 1], 16)
                            for i in range(0, len(fields) - 1, 2)})
        bounding = 1 << 39 | 1 << 38 | 1 << 23
        bare = bool(threads) and all(
            c.get("CapEff") == 0 and c.get("CapPrm") == 0
            and c.get("CapBnd") == bounding for c in threads)
        self.check(bare, "no thread has capabilities; CAP_BPF, CAP_PERFMON "
                   f"and CAP_SYS_NICE only in their bounding set ({threads})")
        self.check(self.show("WatchdogUSec") not in ("", "0", "infinity"),
                   "the watchdog is armed")

        # A latency request reaches the fake tree; SIGTERM puts it back.
        client = self.hold_latency(fake_root, "stop")
        self.ns.run(["systemctl", "stop", UNIT], check=False)
        self.wait_state("inactive")
        self.release(client)
        self.check(self.show("Result") == "success"
                   and self.show("ExecMainStatus") == "0",
                   "it stopped cleanly (Result="
                   f"{self.show('Result')}, status "
                   f"{self.show('ExecMainStatus')})")
        self.fake_unchanged(fake_root, before, "after the stop")

        # After SIGKILL, ExecStopPost's --restore-only puts it back from
        # the state in /run/cppcgov (checked while the restart waits), and
        # Restart=on-failure brings the daemon back.
        self.ns.run(["systemctl", "start", UNIT], check=False)
        if not self.wait_state("active"):
            return
        client = self.hold_latency(fake_root, "crash")
        self.ns.run(["systemctl", "kill", "--signal=SIGKILL", UNIT],
                    check=False)
        self.release(client)
        sub = ""
        with contextlib.suppress(Failure):
            for _ in deadline_loop(TIMEOUT_COMMAND, "the restart's wait"):
                sub = self.show("SubState")
                if sub == "auto-restart":
                    break
        if self.check(sub == "auto-restart",
                      f"it waits to restart after the crash ({sub})"):
            self.fake_unchanged(fake_root, before,
                                "after SIGKILL and --restore-only")
            post = self.show("ExecStopPost")
            if not self.check(re.search(r"code=exited ; status=0\b", post)
                              is not None, "ExecStopPost= succeeded"):
                log(f"  {post}")
        self.wait_state("active", restarts="1")
        self.check(self.show("NRestarts") == "1",
                   f"restarted after the crash (NRestarts="
                   f"{self.show('NRestarts')})")

        # The bus policy lets anyone call (the daemon decides) but only
        # root own the name.
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup",
                  "--clear-groups", "dbus-send", "--system", "--print-reply"]
        version = self.ns.run(nobody + [
            f"--dest={BUS_NAME}", OBJECT_PATH,
            "org.freedesktop.DBus.Properties.Get", f"string:{INTERFACE}",
            "string:Version"], check=False)
        self.check(version.returncode == 0,
                   "an unprivileged user reads properties")
        refused = self.ns.run(nobody + [
            f"--dest={BUS_NAME}", OBJECT_PATH, f"{INTERFACE}.SetLatencyCpus",
            "array:uint32:0", f"uint32:{REQUEST_US}"], check=False)
        self.check("org.cppcgov.Error.NotPermitted" in refused.stderr,
                   "an unprivileged user's latency request reaches the "
                   "daemon, which refuses it")
        owner = self.ns.run(nobody + [
            "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.RequestName", f"string:{BUS_NAME}",
            "uint32:0"], check=False)
        self.check("org.freedesktop.DBus.Error.AccessDenied" in owner.stderr,
                   "an unprivileged user may not own the name")

        # Reload: PolicyChanged on the bus, still active.
        monitor = self.ns.spawn([
            "timeout", str(2 * TIMEOUT_COMMAND), "busctl", "--system",
            "monitor", "--match",
            f"type='signal',sender='{BUS_NAME}',member='PolicyChanged'"])
        time.sleep(1)
        self.ns.run(["systemctl", "reload", UNIT], check=False)
        seen = False
        pending = bytearray()
        end = time.monotonic() + TIMEOUT_COMMAND
        while not seen and time.monotonic() < end:
            # busctl monitor prints each message over several lines.
            line = read_line(monitor.stdout, end - time.monotonic(), pending)
            if line is None:
                break
            seen = "PolicyChanged" in line
        monitor.kill()
        monitor.wait()
        self.check(seen, "reload emitted PolicyChanged")
        self.wait_state("active")

        # Stop: everything as it was.
        self.ns.run(["systemctl", "stop", UNIT], check=False)
        self.wait_state("inactive")
        self.fake_unchanged(fake_root, before, "at the end")

    def run(self):
        base = os.path.join(self.args.build_root, "tests", "system")
        # The namespace gets fresh tmpfs mounts on these, which would hide
        # a work directory under them (a build tree in /tmp).
        real = os.path.realpath(base)
        if any(real == d or real.startswith(d + "/") for d in HIDDEN_DIRS):
            base = FALLBACK_BASE
        os.makedirs(base, exist_ok=True)
        remove_stale_work(base)
        self.work = os.path.join(base, f"{WORK_PREFIX}{os.getpid()}")
        os.mkdir(self.work)
        try:
            self.debs = self.read_package()
            if self.host_state()["dpkg-query"][1] == "install ok installed":
                raise Skip(f"{PACKAGE} is installed on this machine: the "
                           "test installs it over the host's files")
            self.overlays = self.overlay_dirs()
            host_before = self.host_state()
            fake_root = self.make_fake_root()
            self.write_units(fake_root)
            self.ns = Namespace(self.work, self.args.ns_init)
            completed = interrupted = False
            try:
                self.ns.boot(self.overlays)
                self.install_package(self.debs)
                before = snapshot(fake_root)
                self.scenario(fake_root, before)
                self.purge_package(fake_root, before)
                completed = True
            except Interrupted:
                # Clean up at once: meson's SIGKILL follows soon.
                interrupted = True
                raise
            finally:
                failed = not completed or self.failures
                if failed and not interrupted and self.ns.pid1 is not None:
                    self.diagnostics()
                for problem in self.ns.shutdown():
                    self.failures.append(problem)
                    log(f"FAILED: {problem}")
                if (failed or self.failures) and self.ns.console is not None:
                    log("---- console of the namespace")
                    for line in self.ns.console.text().splitlines()[-100:]:
                        log("  " + line)
                if not interrupted:
                    host_after = self.host_state()
                    for key in host_before:
                        if host_before[key] != host_after[key]:
                            log(f"  {key}: {host_before[key]} -> "
                                f"{host_after[key]}")
                    self.check(host_before == host_after,
                               "the host's dpkg database, group files and "
                               "the package's paths are as they were")
        finally:
            self.remove_work()

    def remove_work(self):
        # Never delete through a mount: there must be none on the host.
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounted = [line.split()[4] for line in f
                       if line.split()[4].startswith(self.work)]
        if mounted:
            log(f"FAILED: mounts left on the host: {mounted}; keeping "
                f"'{self.work}'")
            self.failures.append("mounts left on the host")
        elif self.args.keep:
            log(f"kept '{self.work}'")
        else:
            shutil.rmtree(self.work)
            if os.path.dirname(self.work) == FALLBACK_BASE:
                try:
                    os.rmdir(FALLBACK_BASE)
                except OSError:
                    pass  # another run's directory is still there


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-root", required=True)
    parser.add_argument("--ns-init", required=True)
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory")
    args = parser.parse_args()
    # The package to test: tools/dev/deb prints its path.
    args.deb = os.environ.get("CPPCGOV_DEB", "")
    if args.deb:
        args.deb = os.path.abspath(args.deb)

    # meson's timeout and ^C end the test through the same clean-up.
    def terminate(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)

    test = SystemTest(args)
    try:
        check_prerequisites(args)
        test.run()
    except Skip as e:
        log(f"SKIP: {e}")
        return SKIP
    except Failure as e:
        log(f"FAILED: {e}")
        return 1
    except Interrupted as e:
        log(f"FAILED: interrupted by {e}")
        return 1
    if test.failures:
        log(f"{len(test.failures)} check(s) failed")
        return 1
    log("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())