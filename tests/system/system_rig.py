# SPDX-License-Identifier: Apache-2.0
"""systemd booted as PID 1 in private namespaces, for cppcgovd's system
test (system_test.py).

Namespace starts ns_init.sh under `unshare` in new PID, mount, UTS, IPC,
network and cgroup namespaces and a cgroup of its own, waits until
systemd is up, runs commands inside through `nsenter`, and at the end
sends SIGKILL to the namespace's PID 1, waits until its cgroup is empty
and removes it. Console stands in for the namespace's /dev/console and
keeps what it printed. check_prerequisites() says whether this machine can
run the test (Skip) or the package to test is missing (Failure under
CI=true, Skip otherwise); the cgroups and
work directories of earlier runs killed before their clean-up are removed
by the next run (remove_stale_cgroups(), remove_stale_work()). Also the
small helpers the test uses: log(), deadline_loop(), read_line(),
write(), snapshot(), entries().
"""

import contextlib
import ctypes
import hashlib
import os
import select
import shutil
import signal
import subprocess
import threading
import time

TARGET = "cppcgov-system-test.target"

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
         "dbus-send", "setpriv", "dpkg", "dpkg-deb", "dpkg-query")

CGROUP_PREFIX = "cppcgov-system-test."
WORK_PREFIX = "work."

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
    if not args.deb:
        message = ("CPPCGOV_DEB is not set: build the package with "
                   "tools/dev/deb and set CPPCGOV_DEB to the .deb it "
                   "prints")
        if os.environ.get("CI") == "true":
            raise Failure(message)
        raise Skip(message)
    if not os.path.isfile(args.deb):
        raise Failure(f"CPPCGOV_DEB: '{args.deb}' is not a file")
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

    def boot(self, overlay_dirs):
        """Boots systemd with writable overlays on `overlay_dirs`
        (relative to /; their upper directories in <work>/upper)."""
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
            os.path.join(self.work, "units"), TARGET, *overlay_dirs,
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

    def path(self, path):
        """`path` as the namespace sees it, from the host (its root
        through /proc); only while PID 1 lives."""
        return f"/proc/{self.pid1}/root{path}"

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



def entries(root):
    """Everything but directories under `root`, without following links:
    relative path -> what it is (a file's mode and digest, a link's
    target, a device's number: overlayfs marks a deletion from the lower
    layer with a character device 0:0)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames
                                 if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if os.path.islink(path):
                what = ("link", os.readlink(path))
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    what = ("file", st.st_mode,
                            hashlib.sha256(f.read()).hexdigest())
            else:
                what = ("node", st.st_mode, st.st_rdev)
            found[os.path.relpath(path, root)] = what
    return found
