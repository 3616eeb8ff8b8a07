#!/usr/bin/env python3
"""cppcgovd under the real systemd, booted as PID 1 in private namespaces.

The test installs the build (`meson install --destdir` into its own
directory under the build directory, never /tmp), then starts ns_init.sh
under `unshare` in new PID, mount, UTS, IPC, network and cgroup namespaces
(and a cgroup of its own). ns_init.sh lays the install tree over /usr and
/etc (read-only overlays), puts fresh tmpfs on /tmp, /var/tmp, /run,
/var/log and /dev, makes everything else read-only, and execs systemd with
SYSTEMD_UNIT_PATH holding only the units this test writes: stand-in
targets, Debian's own dbus.service/dbus.socket as the system bus, journald,
and the installed cppcgovd.service with a drop-in that adds `--root` to its
command lines, pointing the daemon at a fake sysfs tree (so the machine's
real CPU settings are never touched). A policy drop-in selects the
simulator backend with 4 CPUs. Then, through `nsenter`:

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

and finally SIGKILL to the namespace's PID 1, which takes every process
in it along. The host is left as it was: the mounts lived and died in the
private mount namespace, the cgroup is removed, the directory deleted
(what a run killed before its clean-up leaves, the next run removes).

Exit status: 0 passed, 1 failed, 77 skipped (not root, or a tool or kernel
feature missing). `--keep` keeps the work directory.
"""

import argparse
import contextlib
import ctypes
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77

TARGET = "cppcgov-system-test.target"
UNIT = "cppcgovd.service"
BUS_NAME = "org.cppcgov.Governor1"
OBJECT_PATH = "/org/cppcgov/Governor1"
INTERFACE = "org.cppcgov.Governor1"
BUS_POLICY = "org.cppcgov.Governor1.conf"
BUS_POLICY_DIRS = ("/usr/share/dbus-1/system.d", "/etc/dbus-1/system.d")

SYSTEMD = "/lib/systemd/systemd"
DEBIAN_UNIT_DIR = "/lib/systemd/system"
# The real system bus and journal, copied as they are.
DEBIAN_UNITS = (
    "dbus.service",
    "dbus.socket",
    "systemd-journald.service",
    "systemd-journald.socket",
    "systemd-journald-dev-log.socket",
)
TOOLS = ("unshare", "nsenter", "systemctl", "busctl", "journalctl", "mount",
         "dbus-send", "setpriv")

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

CGROUP_PREFIX = "cppcgov-system-test."
WORK_PREFIX = "work."
HIDDEN_DIRS = ("/tmp", "/var/tmp", "/run", "/var/log", "/dev")
FALLBACK_BASE = "/var/lib/cppcgov-system-test"

TIMEOUT_BOOT = 60
TIMEOUT_COMMAND = 30
TIMEOUT_EXIT = 20

PR_SET_PDEATHSIG = 1


class Skip(Exception):
    pass


class Failure(Exception):
    pass


class Interrupted(BaseException):
    """SIGTERM or SIGINT (meson's timeout, ^C): never swallowed where a
    Failure is."""


def log(message):
    print(message, flush=True)


def deadline_loop(seconds, what, interval=0.1):
    """Yields until `seconds` have passed, then raises Failure(`what`)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        yield
        time.sleep(interval)
    raise Failure(f"timed out after {seconds} s: {what}")


def read_line(pipe, seconds, pending):
    """The next line from `pipe` (a binary pipe of a child), waiting at
    most `seconds`; None at end of file or on timeout. `pending` is a
    bytearray kept between calls for what came after the line."""
    end = time.monotonic() + seconds
    while b"\n" not in pending:
        left = end - time.monotonic()
        if left <= 0 or not select.select([pipe], [], [], left)[0]:
            return None
        chunk = os.read(pipe.fileno(), 4096)
        if not chunk:
            return None
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line.decode("utf-8", "replace")


class Console:
    """A FIFO in the work directory standing in for the namespace's
    /dev/console (systemd's messages before the journal is up) and for
    ns_init.sh's output, copied to console.log as it comes."""

    def __init__(self, work):
        self.fifo = os.path.join(work, "console")
        self.log = os.path.join(work, "console.log")
        os.mkfifo(self.fifo, 0o600)
        self.read_fd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        # Ours, so that the reader never sees end of file while the
        # namespace runs; unshare gets it as stdout and stderr.
        self.write_fd = os.open(self.fifo, os.O_WRONLY)
        self.thread = threading.Thread(target=self._copy, daemon=True)

    def start(self):
        self.thread.start()

    def _copy(self):
        with open(self.log, "wb") as out:
            while True:
                select.select([self.read_fd], [], [], 1.0)
                try:
                    chunk = os.read(self.read_fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                out.write(chunk)
                out.flush()

    def close(self):
        """Once nothing in the namespace runs: the rest, then the end."""
        os.close(self.write_fd)
        if self.thread.is_alive():
            self.thread.join(timeout=TIMEOUT_EXIT)
        os.close(self.read_fd)

    def text(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")


def cgroup2_mount():
    """The host's cgroup2 mount point, or None."""
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            if fields[sep + 1] == "cgroup2":
                return fields[4]
    return None


def own_cgroup2_path():
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            if line.startswith("0::"):
                return line[3:].strip()
    return None


def check_prerequisites(args):
    if os.geteuid() != 0:
        raise Skip("needs root")
    for tool in TOOLS:
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' not found")
    if not os.access(SYSTEMD, os.X_OK):
        raise Skip(f"'{SYSTEMD}' not found")
    for unit in DEBIAN_UNITS:
        if not os.path.exists(os.path.join(DEBIAN_UNIT_DIR, unit)):
            raise Skip(f"'{DEBIAN_UNIT_DIR}/{unit}' not found")
    with open("/proc/filesystems", encoding="utf-8") as f:
        filesystems = f.read().split()
    for fs in ("overlay", "cgroup2", "tmpfs", "devpts"):
        if fs not in filesystems:
            raise Skip(f"the kernel has no {fs} file system")
    if cgroup2_mount() is None or own_cgroup2_path() is None:
        raise Skip("no cgroup2 hierarchy mounted")
    if not os.access(args.daemon, os.X_OK):
        raise Failure(f"'{args.daemon}' is not built")
    # The work directory goes into overlayfs options and unit files.
    if any(c in args.build_root for c in ":,\\ \t\n\"'%"):
        raise Skip(f"build directory '{args.build_root}' has characters the"
                   " mount options and unit files cannot quote")


class Namespace:
    """systemd as PID 1 of new namespaces, and commands run inside."""

    def __init__(self, work, ns_init):
        self.work = work
        self.ns_init = ns_init
        self.unshare = None
        self.pid1 = None
        self.cgroup = None
        self.console = None

    def boot(self, usr_layers, etc_layers):
        parent = os.path.join(cgroup2_mount(), own_cgroup2_path().lstrip("/"))
        remove_stale_cgroups(parent)
        self.cgroup = os.path.join(parent,
                                   f"{CGROUP_PREFIX}{os.getpid()}")
        os.mkdir(self.cgroup)
        procs = os.path.join(self.cgroup, "cgroup.procs")
        libc = ctypes.CDLL(None, use_errno=True)

        def enter_cgroup():
            # Dead with the test: unshare gets SIGKILL when the test dies,
            # and --kill-child passes it on to PID 1.
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            with open(procs, "w", encoding="ascii") as f:
                f.write(str(os.getpid()))

        command = [
            "unshare", "--pid", "--fork", "--kill-child", "--mount",
            "--mount-proc", "--propagation", "private", "--uts", "--ipc",
            "--net", "--cgroup", "bash", self.ns_init, self.work,
            os.path.join(self.work, "units"), TARGET, usr_layers, etc_layers,
        ]
        self.console = Console(self.work)
        self.unshare = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self.console.write_fd,
            stderr=self.console.write_fd, preexec_fn=enter_cgroup,
            # Signals for the test's process group are not for systemd.
            start_new_session=True)
        # Only now: no thread may run while preexec_fn does.
        self.console.start()

        children = f"/proc/{self.unshare.pid}/task/{self.unshare.pid}/children"
        for _ in deadline_loop(TIMEOUT_BOOT, "the namespace's PID 1"):
            if self.unshare.poll() is not None:
                raise Failure("the namespace setup failed")
            with contextlib.suppress(OSError):
                with open(children, encoding="ascii") as f:
                    pids = f.read().split()
                if pids:
                    self.pid1 = int(pids[0])
                    break

        # Up when the manager answers and the start-up jobs are done.
        state = ""
        for _ in deadline_loop(TIMEOUT_BOOT, "systemd's start-up"):
            if self.unshare.poll() is not None:
                raise Failure("systemd exited during start-up")
            result = self.run(["systemctl", "is-system-running"],
                              check=False, quiet=True)
            state = result.stdout.strip()
            if state in ("running", "degraded"):
                break
        log(f"systemd is up ({state}), PID {self.pid1} on the host")
        if state == "degraded":
            self.run(["systemctl", "--no-pager", "--failed"], check=False)

    def command(self, argv):
        return ["nsenter", f"--target={self.pid1}", "--all"] + argv

    def run(self, argv, check=True, quiet=False, timeout=TIMEOUT_COMMAND):
        """Runs `argv` inside; returns the CompletedProcess."""
        if not quiet:
            log("# " + " ".join(argv))
        try:
            result = subprocess.run(
                self.command(argv), stdin=subprocess.DEVNULL,
                capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise Failure(f"timed out after {timeout} s: {' '.join(argv)}") \
                from e
        if not quiet:
            for line in (result.stdout + result.stderr).splitlines():
                log("  " + line)
        if check and result.returncode != 0:
            raise Failure(f"exit status {result.returncode}: {' '.join(argv)}")
        return result

    def spawn(self, argv):
        """Starts `argv` inside, in the background, with pipes."""
        log("# " + " ".join(argv) + " &")
        return subprocess.Popen(self.command(argv), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def shutdown(self):
        """SIGKILL to PID 1, then waits until nothing is left in the
        namespace's cgroup and removes it. Safe to call at any stage."""
        problems = []
        if self.pid1 is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid1, signal.SIGKILL)
        if self.unshare is not None:
            if self.pid1 is None:
                self.unshare.kill()
            try:
                self.unshare.wait(timeout=TIMEOUT_EXIT)
            except subprocess.TimeoutExpired:
                self.unshare.kill()
                self.unshare.wait(timeout=TIMEOUT_EXIT)
                problems.append("unshare did not exit after PID 1's SIGKILL")
        if self.console is not None:
            self.console.close()
        if self.cgroup is not None:
            problems += self._remove_cgroup()
        return problems

    def _remove_cgroup(self):
        problems = []
        try:
            for _ in deadline_loop(TIMEOUT_EXIT, "the namespace's processes"):
                if cgroup_empty(self.cgroup):
                    break
        except Failure as e:
            problems.append(f"{e}; killing what is left")
            with contextlib.suppress(OSError):
                with open(os.path.join(self.cgroup, "cgroup.kill"), "w",
                          encoding="ascii") as f:
                    f.write("1")
            time.sleep(1)
        problems += remove_cgroup_tree(self.cgroup)
        return problems


def cgroup_empty(path):
    with open(os.path.join(path, "cgroup.events"), encoding="ascii") as f:
        return "populated 0" in f.read().splitlines()


def remove_cgroup_tree(path):
    """rmdir of `path` and the cgroups below it, deepest first; returns
    the problems."""
    problems = []
    for dirpath, _, _ in sorted(os.walk(path),
                                key=lambda w: -w[0].count("/")):
        try:
            os.rmdir(dirpath)
        except OSError as e:
            problems.append(f"cannot remove cgroup '{dirpath}': {e}")
    return problems


def remove_stale_cgroups(parent):
    """Removes the empty cgroups of earlier runs that were killed before
    they could (their test process is gone)."""
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if dead_run(name, CGROUP_PREFIX) and cgroup_empty(path):
            log(f"removing the cgroup an earlier run left: '{path}'")
            for problem in remove_cgroup_tree(path):
                log("  " + problem)


def dead_run(name, prefix):
    """Whether `name` is `prefix` + the PID of a process that is gone."""
    pid = name[len(prefix):]
    return (name.startswith(prefix) and pid.isdigit()
            and not os.path.exists(f"/proc/{pid}"))


def remove_stale_work(base):
    """Removes the work directories of earlier runs that were killed
    before they could (nothing can be mounted there: their mounts died
    with their namespaces)."""
    for name in os.listdir(base):
        if dead_run(name, WORK_PREFIX):
            log(f"removing the directory an earlier run left: '{name}'")
            shutil.rmtree(os.path.join(base, name))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def snapshot(root):
    """Every file under `root`: relative path -> (mode, bytes)."""
    files = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = (os.stat(path).st_mode,
                                                      f.read())
    return files


def latency_file(fake_root, cpu):
    return os.path.join(fake_root, f"sys/devices/system/cpu/cpu{cpu}/power/"
                        "pm_qos_resume_latency_us")


class SystemTest:
    def __init__(self, args):
        self.args = args
        self.work = None
        self.ns = None
        self.failures = []

    # ----------------------------------------------------------- set-up

    def install(self):
        """`meson install` into <work>/destdir, plus a layer of the test's
        own files; returns the overlay lowerdir= values for /usr and
        /etc."""
        destdir = os.path.join(self.work, "destdir")
        result = subprocess.run(
            [self.args.meson, "install", "--no-rebuild", "--quiet", "-C",
             self.args.build_root, "--destdir", destdir],
            capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            log(result.stdout + result.stderr)
            raise Failure("meson install failed (is everything built?)")

        policy = os.path.join(self.args.dbus_policy_dir, BUS_POLICY)
        for path in (self.daemon(), self.ctl(), policy, self.unit_file(),
                     os.path.join(self.args.sysconfdir, "cppcgov",
                                  "policy.yaml")):
            if not path.startswith(("/usr/", "/etc/")):
                raise Skip(f"'{path}' is outside /usr and /etc, the only "
                           "trees this test lays over the host's")
            if not os.path.exists(destdir + path):
                raise Failure(f"'{path}' is not installed")

        test_layer = os.path.join(self.work, "test-layer")
        # The simulator, explicitly, and a slower tick on a shared machine.
        write(os.path.join(test_layer + self.args.sysconfdir,
                           "cppcgov/policy.d/50-system-test.yaml"),
              POLICY_DROP_IN)
        # The bus reads policies from these two directories only.
        if os.path.dirname(policy) not in BUS_POLICY_DIRS:
            os.makedirs(test_layer + BUS_POLICY_DIRS[-1])
            shutil.copy(destdir + policy, test_layer + BUS_POLICY_DIRS[-1])

        layers = {}
        for top in ("usr", "etc"):
            lower = [os.path.join(d, top) for d in (test_layer, destdir)
                     if os.path.isdir(os.path.join(d, top))]
            layers[top] = ":".join(lower + ["/" + top]) if lower else ""
        return destdir, layers

    def daemon(self):
        return os.path.join(self.args.sbindir, "cppcgovd")

    def ctl(self):
        return os.path.join(self.args.bindir, "cppcgovctl")

    def unit_file(self):
        return os.path.join(self.args.unit_dir, UNIT)

    def write_units(self, destdir, fake_root):
        units = os.path.join(self.work, "units")
        os.makedirs(units)
        for unit in DEBIAN_UNITS:
            shutil.copy(os.path.join(DEBIAN_UNIT_DIR, unit), units)
        for name, body in STAND_IN_TARGETS.items():
            write(os.path.join(units, name),
                  "[Unit]\nDescription=System test stand-in: "
                  f"{name}\n{body}")
        installed = destdir + self.unit_file()
        shutil.copy(installed, units)

        # The daemon on the fake tree: the unit's own command lines with
        # --root added, and the tree writable in its sandbox.
        dropin = ["[Service]"]
        with open(installed, encoding="utf-8") as f:
            for line in f:
                key, _, command = line.strip().partition("=")
                if key in ("ExecStart", "ExecStopPost"):
                    dropin += [f"{key}=",
                               f"{key}={command} --root {fake_root}"]
        dropin.append(f"ReadWritePaths={fake_root}")
        # Time to look at the tree between a crash and the restart.
        dropin.append("RestartSec=5s")
        if fake_root.startswith(("/home/", "/root/", "/run/user/")):
            dropin.append("ProtectHome=no")
        write(os.path.join(units, UNIT + ".d", "test.conf"),
              "\n".join(dropin) + "\n")

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
            f"exec 3<&0; {self.ctl()} latency --us {REQUEST_US}"
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

    def scenario(self, fake_root):
        before = snapshot(fake_root)

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
        status = self.ns.run(["cat", f"/proc/{pid}/status"], check=False,
                             quiet=True).stdout
        caps = [l.split()[1] for l in status.splitlines()
                if l.startswith(("CapEff:", "CapPrm:", "CapBnd:"))]
        self.check(len(caps) == 3 and all(int(c, 16) == 0 for c in caps),
                   f"it runs without capabilities ({caps})")
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
            destdir, layers = self.install()
            fake_root = self.make_fake_root()
            self.write_units(destdir, fake_root)
            self.ns = Namespace(self.work, self.args.ns_init)
            completed = interrupted = False
            try:
                self.ns.boot(layers["usr"], layers["etc"])
                self.scenario(fake_root)
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
    parser.add_argument("--meson", required=True)
    parser.add_argument("--daemon", required=True,
                        help="the built cppcgovd (checked to exist)")
    parser.add_argument("--bindir", required=True)
    parser.add_argument("--sbindir", required=True)
    parser.add_argument("--sysconfdir", required=True)
    parser.add_argument("--unit-dir", required=True)
    parser.add_argument("--dbus-policy-dir", required=True)
    parser.add_argument("--ns-init", required=True)
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory")
    args = parser.parse_args()

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
