#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cppcgovd under Debian's real systemd in the arm64 guest, on the real
cppc_cpufreq.

The guest boots Debian 12's arm64 kernel with the per-CPU SSDT (the
kernel's table upgrade) and, as its root file system, the initramfs
rootfs.py makes: the extracted Debian tree with systemd 252 as PID 1,
Debian's dbus as the system bus, journald, and `meson install --destdir`
of the arm64 build: cppcgovd.service, the bus policy and the sysusers.d
file exactly as installed. The unit is not changed: no drop-in, the
daemon on the real sysfs with its whole sandbox. A policy drop-in picks
the kernel backend and the powersave policy. Then:

  modules  the feedback counters made non-zero (the guest writes them
           with devmem, as firmware would have), cppc_cpufreq loaded; the
           governors, limits and speeds of every policy and the CPUs'
           resume latency limits noted
  start    `systemctl start cppcgovd`: cpufreq_userspace, not loaded
           before, loaded by the unit (modprobe@.service); active, on the
           scheduler's events (SamplingSource bpf, read with busctl), no
           effective or permitted capabilities left in any thread (it
           dropped the two it loaded the BPF program with and the one its
           tick's thread was scheduled with) and a bounding set of exactly
           CAP_SYS_NICE, CAP_BPF and CAP_PERFMON, the tick's thread on
           SCHED_DEADLINE and every other one SCHED_OTHER, `cppcgovctl
           status` answered for an
           unprivileged user through Debian's dbus and the installed bus
           policy, every policy on `userspace`, and each CPU's Desired
           register, read from the host through QEMU's monitor, at the
           lowest nonlinear performance the kernel published in
           acpi_cppc/
  reload   the drop-in changed to the performance policy, `systemctl
           reload` (SIGHUP): the same process, still active, and the
           Desired registers at the nominal performance the kernel
           published
  stop     `systemctl stop`: inactive, Result=success (ExecStopPost=,
           `cppcgovd --restore-only`, succeeded too), exit status 0, and
           every policy's governor, limits and speed and every CPU's
           latency limit as they were before the start
  crash    started again, then SIGKILL and at once `systemctl stop` (no
           restart): ExecStopPost= (`cppcgovd --restore-only`) alone put
           everything back as before the first start
  journal  the daemon's start (sampling from bpf), reload and stop lines
           are in the journal

Before the guest boots, `systemd-analyze security --offline=true` on this
machine rates the installed unit: its exposure is printed and must be
EXPOSURE_LIMIT or lower.

By hand, after tools/arm64/build: `meson test -C build-arm64 --suite vm
vm-systemd` (30-45 s on 2 cores; the first run also makes the cached
base image, 1-10 s more). The guest's console, with every command and
its output, is kept in build-arm64/tests/vm/systemd-console.log.

Exit status: 0 passed, 1 failed, 77 skipped (no QEMU, firmware, kernel,
qemu-aarch64-static, cpio or systemd-sysusers; a failure instead when
CI=true).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True

import guest as vm  # noqa: E402
import initrd  # noqa: E402
import rootfs  # noqa: E402
import vm_rig  # noqa: E402

UNIT = "cppcgovd.service"
BUS_POLICY = "org.cppcgov.Governor1.conf"
BUS_POLICY_DIRS = ("/usr/share/dbus-1/system.d", "/etc/dbus-1/system.d")
DROP_IN = "policy.d/50-vm-systemd.yaml"
BUS_NAME = "org.cppcgov.Governor1"
OBJECT_PATH = "/org/cppcgov/Governor1"

CPUS = 2
# The feedback counters' offsets in each CPU's register block (see
# vm_rig.py): reference, delivered.
COUNTERS = (0x08, 0x10)
COUNTER_START = 0x100000

# Commands run by busybox's sh, which prefers its own applets to programs
# of the same name: Debian's are named by their paths.
CMDLINE = "rdinit=/lib/systemd/systemd systemd.show_status=0"
TIMEOUT_STATE = 60
# The unit's capabilities (linux/capability.h): CAP_SYS_NICE 23,
# CAP_PERFMON 38, CAP_BPF 39.
BOUNDING_SET = (1 << 23) | (1 << 38) | (1 << 39)
# /proc/<pid>/task/<tid>/stat's scheduling policy (field 41).
SCHED_OTHER, SCHED_DEADLINE = 0, 6
# The highest exposure `systemd-analyze security` may give the unit.
EXPOSURE_LIMIT = 1.5


def drop_in(policy):
    # A slow tick: the guest's CPUs are emulated.
    return ("backend:\n  type: kernel\n"
            f"policy: {policy}\n"
            "sampling:\n  period_us: 20000\n")


def log(message):
    print(message, flush=True)


class Test:
    def __init__(self, args, guest):
        self.args = args
        self.guest = guest
        # What the kernel shows and the registers read from the host (the
        # rig's set-up is for the busybox guest, not this one).
        self.rig = vm_rig.VmRig(guest, CPUS)
        self.failures = []

    def check(self, condition, message):
        log(("ok: " if condition else "FAILED: ") + message)
        if not condition:
            self.failures.append(message)
        return condition

    def sh(self, command, check=True):
        return self.guest.sh(command, check=check)

    def module_loaded(self, name):
        self.sh(f"grep -q '^{name} ' /proc/modules", check=False)
        return self.guest.last_rc == 0

    def show(self, prop):
        return self.sh(f"systemctl show --property={prop} --value {UNIT}",
                       check=False).strip()

    def wait_state(self, wanted):
        state = ""
        end = time.monotonic() + TIMEOUT_STATE
        while time.monotonic() < end:
            state = self.show("ActiveState")
            if state == wanted or state == "failed":
                break
            time.sleep(0.5)
        return self.check(state == wanted,
                          f"{UNIT} is {wanted} (is {state or 'unknown'})")

    def published(self, name):
        """acpi_cppc/<name> of each CPU, as the kernel published it."""
        caps = self.rig.raw_caps()
        return [int(caps[cpu][name]) for cpu in range(CPUS)]

    def desired(self):
        return [self.rig.desired(cpu) for cpu in range(CPUS)]

    def wait_desired(self, wanted, what):
        end = time.monotonic() + TIMEOUT_STATE
        seen = self.desired()
        while seen != wanted and time.monotonic() < end:
            time.sleep(0.5)
            seen = self.desired()
        self.check(seen == wanted, f"{what}: the Desired registers, read from"
                   f" the host, are {seen} (the kernel's {wanted})")

    def property(self, name):
        """A string property of the daemon, through the system bus."""
        out = self.sh(f"busctl get-property {BUS_NAME} {OBJECT_PATH}"
                      f" {BUS_NAME} {name}", check=False).strip()
        found = re.fullmatch(r's "(.*)"', out)
        return found.group(1) if found else out

    def journal(self):
        return self.sh(f"journalctl --no-pager -b -o cat -u {UNIT}",
                       check=False)

    def diagnostics(self):
        log("---- diagnostics")
        for command in (f"systemctl --no-pager --full status {UNIT}",
                        "systemctl --no-pager --failed",
                        f"journalctl --no-pager -b -u {UNIT}",
                        "journalctl --no-pager -b -u dbus.service",
                        "journalctl --no-pager -b _PID=1 | tail -40",
                        "dmesg | tail -40"):
            try:
                log(f"# {command}")
                log(self.sh(command, check=False))
            except vm.GuestError as e:
                log(f"  {e}")

    def load_driver(self):
        """The feedback counters, then cppc_cpufreq (not the userspace
        governor: the kernel loads it when cppcgovd asks for it)."""
        writes = "; ".join(
            f"devmem {vm_rig.desired_address(cpu) + offset:#x} 64"
            f" {COUNTER_START:#x}"
            for cpu in range(CPUS) for offset in COUNTERS)
        self.sh(writes)
        self.sh("/sbin/modprobe cppc_cpufreq")
        driver = self.sh("cat /sys/devices/system/cpu/cpu*/cpufreq/"
                         "scaling_driver", check=False).split()
        return self.check(driver == ["cppc_cpufreq"] * CPUS,
                          f"cppc_cpufreq drives every CPU ({driver})")

    def scenario(self):
        if not self.load_driver():
            return
        before = self.rig.snapshot()
        log(f"before: {before}")
        floor = self.published("lowest_nonlinear_perf")
        nominal = self.published("nominal_perf")

        # Start: modprobe@.service loads the governor the sandbox cannot.
        self.check(not self.module_loaded("cpufreq_userspace"),
                   "cpufreq_userspace is not loaded before the start")
        start = time.monotonic()
        self.sh(f"systemctl start {UNIT}", check=False)
        if not self.wait_state("active"):
            return
        log(f"started in {time.monotonic() - start:.1f} s")
        self.check(self.module_loaded("cpufreq_userspace"),
                   "the unit had cpufreq_userspace loaded")
        pid = self.show("MainPID")
        source = self.property("SamplingSource")
        self.check(source == "bpf", "it samples the scheduler's events"
                   f" (SamplingSource {source!r},"
                   f" {self.property('SamplingSourceReason')!r})")
        # Loaded, it drops CAP_BPF and CAP_PERFMON, and with its tick's
        # thread scheduled CAP_SYS_NICE, from every thread; the bounding
        # set keeps them (dropping from it needs CAP_SETPCAP, which it
        # never has).
        threads = self.sh(
            f"for t in /proc/{pid}/task/*; do echo \"$(cat $t/comm)|"
            f"$(grep -E '^Cap(Eff|Prm|Bnd):' $t/status | tr '\\n' ' ')|"
            f"$(cat $t/stat)\"; done", check=False)
        seen = {}
        for line in threads.splitlines():
            name, caps_text, stat = line.split("|", 2)
            fields = caps_text.split()
            caps = {fields[i]: int(fields[i + 1], 16)
                    for i in range(0, len(fields) - 1, 2)}
            policy = int(stat[stat.rindex(")") + 2:].split()[38])
            seen.setdefault(name, []).append((policy, caps))
        log("threads (name: scheduling policies): " +
            ", ".join(f"{n}: {[p for p, _ in v]}" for n, v in seen.items()))
        everyone = [c for v in seen.values() for _, c in v]
        self.check(everyone and all(c.get("CapEff:") == 0 and
                                    c.get("CapPrm:") == 0 for c in everyone),
                   "no thread has effective or permitted capabilities")
        self.check(all(c.get("CapBnd:") == BOUNDING_SET for c in everyone),
                   "its bounding set is CAP_SYS_NICE, CAP_BPF and "
                   f"CAP_PERFMON (expected {hex(BOUNDING_SET)})")
        tick = seen.get("cppcgovd-tick", [])
        self.check([p for p, _ in tick] == [SCHED_DEADLINE],
                   "its tick's thread is on SCHED_DEADLINE "
                   f"({[p for p, _ in tick]})")
        others = [p for n, v in seen.items() if n != "cppcgovd-tick"
                  for p, _ in v]
        self.check(others and all(p == SCHED_OTHER for p in others),
                   f"every other thread is SCHED_OTHER ({others})")
        # The bus policy on Debian's dbus: anyone may call.
        status = self.sh("/usr/bin/setpriv --reuid=nobody --regid=nogroup"
                         " --clear-groups"
                         f" {os.path.join(self.args.bindir, 'cppcgovctl')}"
                         " status", check=False)
        self.check(self.guest.last_rc == 0 and "kernel" in status,
                   "an unprivileged user's cppcgovctl status reaches it on"
                   " the system bus")
        governors = self.sh("cat /sys/devices/system/cpu/cpufreq/policy*/"
                            "scaling_governor").split()
        self.check(governors == ["userspace"] * CPUS,
                   f"every policy is on userspace ({governors})")
        self.wait_desired(floor, "powersave")

        # Reload.
        self.sh(f"cat >{self.args.sysconfdir}/cppcgov/{DROP_IN} <<'EOF'\n"
                f"{drop_in('performance')}EOF")
        self.sh(f"systemctl reload {UNIT}", check=False)
        self.check(self.guest.last_rc == 0, "systemctl reload succeeded")
        self.wait_state("active")
        self.check(self.show("MainPID") == pid,
                   f"the same process after the reload (PID {pid})")
        self.wait_desired(nominal, "performance after the reload")

        # Stop.
        self.sh(f"systemctl stop {UNIT}", check=False)
        self.wait_state("inactive")
        result, code = self.show("Result"), self.show("ExecMainStatus")
        # A failed ExecStopPost= (--restore-only) would make the Result
        # exit-code.
        self.check(result == "success" and code == "0",
                   f"it stopped cleanly, ExecStopPost= too (Result={result},"
                   f" status {code})")
        after = self.rig.snapshot()
        self.check(after == before, "every policy's governor, limits and"
                   " speed and every CPU's latency limit are as before the"
                   f" start (after: {after})")

        # A crash: SIGKILL, and at once a stop, which cancels the restart:
        # only ExecStopPost= (--restore-only, in the same sandbox) can
        # put back what the daemon changed.
        self.sh(f"systemctl start {UNIT}", check=False)
        if not self.wait_state("active"):
            return
        self.wait_desired(nominal, "performance after a new start")
        restarts = self.show("NRestarts")
        self.sh(f"systemctl kill --signal=SIGKILL {UNIT}; systemctl stop"
                f" {UNIT}", check=False)
        # Failed: its main process was killed by a signal.
        self.wait_state("failed")
        result = self.show("Result")
        self.check(result == "signal" and self.show("NRestarts") == restarts,
                   f"killed, and not restarted (Result={result}, NRestarts"
                   f" {restarts} -> {self.show('NRestarts')})")
        after = self.rig.snapshot()
        self.check(after == before, "after SIGKILL, ExecStopPost= put"
                   " everything back as before the start (after:"
                   f" {after})")

        journal = self.journal()
        for line in ("started: backend kernel", "policy powersave",
                     "us from bpf (",
                     "configuration reloaded from",
                     "policy performance", "stopping on",
                     "stopped; everything changed was put back"):
            self.check(line in journal, f"the journal has '{line}'")


def install(args, work):
    """The project layer: the arm64 build installed, the bus policy where
    the bus reads it, the policy drop-in."""
    project = os.path.join(work, "project")
    result = subprocess.run(
        [args.meson, "install", "--no-rebuild", "--quiet", "-C",
         args.build_root, "--destdir", project],
        capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        raise RuntimeError("meson install failed (is everything built?): " +
                           result.stdout + result.stderr)
    for path in (os.path.join(args.sbindir, "cppcgovd"),
                 os.path.join(args.unit_dir, UNIT),
                 os.path.join(args.dbus_policy_dir, BUS_POLICY)):
        if not os.path.exists(project + path):
            raise RuntimeError(f"'{path}' is not installed")
    if args.dbus_policy_dir not in BUS_POLICY_DIRS:
        os.makedirs(project + BUS_POLICY_DIRS[-1], exist_ok=True)
        shutil.copy(os.path.join(project + args.dbus_policy_dir, BUS_POLICY),
                    project + BUS_POLICY_DIRS[-1])
    rootfs.write(os.path.join(project + args.sysconfdir, "cppcgov", DROP_IN),
                 drop_in("powersave"))
    return project


def security_exposure(unit):
    """`systemd-analyze security --offline=true` on the unit file, on this
    machine: (exposure, the settings it marks as exposed), or (None, why
    not)."""
    if shutil.which("systemd-analyze") is None:
        return None, "systemd-analyze not found"
    result = subprocess.run(
        ["systemd-analyze", "security", "--no-pager", "--offline=true", unit],
        capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)",
                      result.stdout)
    if not found:
        return None, (f"no exposure in its output (exit {result.returncode}):"
                      f"\n{result.stdout}{result.stderr}")
    exposed = [line.rstrip() for line in result.stdout.splitlines()
               if line.startswith("\u2717")]
    return float(found.group(1)), exposed


def check_security(args, project):
    """The installed unit's exposure, rated by the host's systemd: printed,
    and a failure above EXPOSURE_LIMIT (or, with CI=true, when it cannot
    be rated). Returns the failures."""
    unit = project + os.path.join(args.unit_dir, UNIT)
    exposure, detail = security_exposure(unit)
    if exposure is None:
        log(f"systemd-analyze security not run: {detail}")
        return [detail] if os.environ.get("CI") == "true" else []
    for line in detail:
        log(f"  {line}")
    ok = exposure <= EXPOSURE_LIMIT
    log(f"{'ok' if ok else 'FAILED'}: systemd-analyze security --offline=true"
        f" rates the installed {UNIT} {exposure} (at most {EXPOSURE_LIMIT})")
    return [] if ok else [f"exposure {exposure}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-root", required=True,
                        help="the arm64 build directory")
    parser.add_argument("--meson", required=True)
    parser.add_argument("--sysroot", required=True)
    parser.add_argument("--ssdt", required=True,
                        help="the per-CPU SSDT, compiled")
    parser.add_argument("--bindir", required=True)
    parser.add_argument("--sbindir", required=True)
    parser.add_argument("--sysconfdir", required=True)
    parser.add_argument("--unit-dir", required=True)
    parser.add_argument("--dbus-policy-dir", required=True)
    parser.add_argument("--cache", default=os.environ.get(
        "CPPCGOV_CACHE", os.path.join(os.environ.get(
            "XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "cppcgov")))
    parser.add_argument("--work", required=True,
                        help="a directory for the run's files")
    args = parser.parse_args()

    # meson's timeout and ^C: out through the with block, which ends QEMU.
    def terminate(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        log(f"FAILED: interrupted by {signal.Signals(signum).name}")
        sys.exit(1)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)

    if vm.find_qemu() is None:
        vm.skip_or_fail(f"{vm.QEMU} not found")
    if vm.find_firmware() is None:
        vm.skip_or_fail("no UEFI firmware for arm64 "
                        f"({', '.join(vm.FIRMWARE_PATHS)})")
    # What rootfs.py runs on this machine.
    for tool in ("qemu-aarch64-static", "cpio", "systemd-sysusers"):
        if shutil.which(tool) is None:
            vm.skip_or_fail(f"{tool} not found")
    try:
        kernel = rootfs.kernel_image(args.sysroot)
    except (rootfs.Error, OSError) as e:
        vm.skip_or_fail(str(e))

    started = time.monotonic()
    os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="systemd-test-", dir=args.work)
    # The guest's console, kept after the run.
    console = os.path.join(args.work, "systemd-console.log")
    if os.path.exists(console):
        os.remove(console)
    try:
        project = install(args, work)
        security_failures = check_security(args, project)
        image = os.path.join(work, "initrd")
        with open(args.ssdt, "rb") as f:
            tables = initrd.acpi_upgrade_cpio({"ssdt-percpu": f.read()})
        rootfs.build(args.sysroot, project, args.cache, image,
                     prefix=tables)
        log(f"image made in {time.monotonic() - started:.1f} s")
        with vm.Guest(kernel, image, cpus=CPUS, cmdline_extra=CMDLINE,
                      log_path=console) as guest:
            uptime = guest.sh("cut -d' ' -f1 /proc/uptime").strip()
            log(f"systemd booted in {guest.boot_seconds:.1f} s ({uptime} s"
                " of guest time)")
            test = Test(args, guest)
            try:
                test.scenario()
            except vm.GuestError as e:
                test.check(False, str(e))
            if test.failures:
                test.diagnostics()
    except (vm.GuestError, rootfs.Error, RuntimeError, OSError) as e:
        log(f"FAILED: {e}")
        log(f"the console is in '{console}'")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log(f"whole check in {time.monotonic() - started:.1f} s")
    failures = security_failures + test.failures
    if failures:
        log(f"{len(failures)} check(s) failed")
        return 1
    log("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
