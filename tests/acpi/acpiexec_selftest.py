#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of acpiexec_eval.py, the reference side of the ACPI cross-check.

Runs acpiexec_eval.py on the project's compiled ASL fixtures and, when the
directory exists, on the real firmware dumps, and checks that the results
are what the fixtures' header comments and the dumps' README state.

    acpiexec_selftest.py --eval acpiexec_eval.py [--acpiexec PATH]
                         [--firmware-dir DIR | --no-firmware] FIXTURE.aml...

Exit status: 0 pass, 1 failure, 77 skip (acpiexec or the fixtures are
missing, or - unless --no-firmware - the firmware dumps are absent; the
fixture checks still run first and a failure there is reported as such).
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import time

SKIP = 77


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# --------------------------------------------------------------------------
# Parsing the normalized lines back (only as much as the checks need)


def split_top(text):
    """Split 'a,b,pkg[c,d],e' at top-level commas."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if text:
        items.append(text[start:])
    return items


def pkg(value):
    check(value.startswith("pkg[") and value.endswith("]"),
          "not a package: %s" % value[:80])
    return split_top(value[4:-1])


def integer(value):
    check(value.startswith("int:0x"), "not an integer: %s" % value[:80])
    return int(value[6:], 16)


def register(value):
    """(space, bit width, bit offset, access size, address) of a Register()."""
    check(value.startswith("buf:"), "not a buffer: %s" % value[:80])
    data = bytes.fromhex(value[4:])
    check(len(data) == 17 and data[0] == 0x82 and data[1:3] == b"\x0c\x00"
          and data[15:17] == b"\x79\x00",
          "not a Generic Register descriptor + End Tag: %s" % value)
    space, width, offset, access = data[3], data[4], data[5], data[6]
    address = int.from_bytes(data[7:15], "little")
    return space, width, offset, access, address


NULL_REGISTER = (0, 0, 0, 0, 0)
SYSTEM_MEMORY, FFH, PCC = 0x00, 0x7F, 0x0A


class Result:
    def __init__(self, lines):
        self.devices = [l[len("device "):] for l in lines
                        if l.startswith("device ")]
        self.values = {}
        for line in lines:
            if " = " in line:
                path, value = line.split(" = ", 1)
                self.values[path] = value

    def __getitem__(self, path):
        check(path in self.values, "no line for %s" % path)
        return self.values[path]


class Evaluator:
    def __init__(self, script, acpiexec):
        self.script = script
        self.acpiexec = acpiexec

    def run(self, tables, discover=True, devices=None, extra=()):
        argv = [sys.executable, self.script, "--acpiexec", self.acpiexec]
        argv += list(tables)
        argv += ["--discover"] if discover else ["--devices", "-"]
        argv += list(extra)
        stdin = "".join(d + "\n" for d in devices or [])
        start = time.monotonic()
        proc = subprocess.run(argv, input=stdin.encode(), capture_output=True,
                              check=False)
        elapsed = time.monotonic() - start
        if proc.returncode != 0:
            raise Failure("%s exited %d:\n%s" % (" ".join(argv), proc.returncode,
                                                 proc.stderr.decode(errors="replace")))
        lines = proc.stdout.decode().splitlines()
        return Result(lines), lines, elapsed


# --------------------------------------------------------------------------
# Fixture checks


def fixture_checks(ev, fx):
    def need(*names):
        missing = [n for n in names if n not in fx]
        check(not missing, "fixture(s) not given: %s" % ", ".join(missing))
        return [fx[n] for n in names]

    # Shared Desired word per domain: exact alias across CPUs.
    r, lines, _ = ev.run(need("dsdt-mmio-shared-domain"))
    check(r.devices == ["\\_SB.CPU%d" % n for n in range(4)], "devices: %s" % r.devices)
    check(lines[4] == "\\_SB.CPU0._UID = int:0x0", "first object line: %r" % lines[4])
    desired = {n: pkg(r["\\_SB.CPU%d._CPC" % n])[7] for n in range(4)}
    check(desired[0] == desired[3] and desired[1] == desired[2]
          and desired[0] != desired[1], "domain aliasing: %s" % desired)
    check(register(desired[0]) == (SYSTEM_MEMORY, 32, 0, 3, 0x2A200010),
          "CPU0 Desired: %s" % (register(desired[0]),))
    check(r["\\_SB.CPU1._PSD"] == "pkg[pkg[int:0x5,int:0x0,int:0x9,int:0xfd,int:0x2]]",
          "CPU1 _PSD: %s" % r["\\_SB.CPU1._PSD"])

    # PCC, conditional method _CPC returning a named package.
    r, _, _ = ev.run(need("dsdt-pcc"))
    uids = [0x0, 0x1, 0x100, 0x101, 0x200, 0x201]
    check(r.devices == ["\\_SB.PKG0.C%03X" % u for u in uids], "devices: %s" % r.devices)
    for k, uid in enumerate(uids):
        dev = r.devices[k]
        check(integer(r[dev + "._UID"]) == uid, "%s _UID" % dev)
        cpc = pkg(r[dev + "._CPC"])
        check(len(cpc) == 23 and integer(cpc[0]) == 23 and integer(cpc[1]) == 3,
              "%s _CPC header" % dev)
        check(register(cpc[7]) == (PCC, 32, 0, 2, k * 0x40 + 0x14),
              "%s Desired: %s" % (dev, register(cpc[7])))
        check(register(cpc[8]) == NULL_REGISTER, "%s Min should be NULL" % dev)

    # If predicate false: no _CPC.
    r, _, _ = ev.run(need("dsdt-cpc-if-false"))
    check(r["\\_SB.CPU0._CPC"] == "absent" and r["\\_SB.CPU1._CPC"] == "absent",
          "CPU0/CPU1 _CPC should be absent")
    check(register(pkg(r["\\_SB.CPU2._CPC"])[7])[4] == 0x2A400020, "CPU2 _CPC")

    # External pair: cross-table references, and the DSDT alone.
    dsdt, ssdt = need("dsdt-external-pair", "ssdt-external-pair")
    r, _, _ = ev.run([dsdt, ssdt])
    for n in range(4):
        cpc = pkg(r["\\_SB.CPU%d._CPC" % n])
        check(cpc[2] == "int:0xfa", "CPU%d Highest: %s" % (n, cpc[2]))
        check(register(cpc[7])[4] == 0x2A700000 + 4 * n, "CPU%d Desired" % n)
    r, _, _ = ev.run([dsdt])
    check(r["\\_SB.CPU0._CPC"] == "absent", "DSDT alone: CPU0._CPC")
    check(r["\\_SB.CPU3._CPC"] == "error:AE_NOT_FOUND",
          "DSDT alone: CPU3._CPC = %s" % r["\\_SB.CPU3._CPC"])

    # Legacy Processor objects are discovered; they have no _UID.
    r, _, _ = ev.run(need("dsdt-legacy-processor"))
    check(r.devices == ["\\_PR.CPU0", "\\_PR.CPU1"], "devices: %s" % r.devices)
    check(r["\\_PR.CPU0._UID"] == "absent", "legacy _UID")

    # Nested scopes: full paths; containers are not processors.
    r, _, _ = ev.run(need("dsdt-nested-scope"))
    check(r.devices == ["\\_SB.SCK0.CL00.CPU0", "\\_SB.SCK0.CL00.CPU1",
                        "\\_SB.SCK0.CL01.CPU2", "\\_SB.SCK0.CL01.CPU3"],
          "devices: %s" % r.devices)
    check(integer(pkg(pkg(r["\\_SB.SCK0.CL00.CPU1._PSD"])[0])[2]) == 0x10,
          "CPU1 _PSD from the later Scope ()")

    # Raw values: the String element is not repaired into an Integer.
    path = need("bad-cpc-string-element")[0]
    r, _, _ = ev.run([path])
    check(pkg(r["\\_SB.CPU1._CPC"])[2] == 'str:"0xFA"', "CPU1 element 2 raw")
    check(pkg(r["\\_SB.CPU2._CPC"])[21] == 'str:"400"', "CPU2 element 21 raw")
    r, _, _ = ev.run([path], extra=["--repair"])
    check(pkg(r["\\_SB.CPU1._CPC"])[2] == "int:0xfa", "CPU1 element 2 repaired")

    # Methods the interpreter runs (a static reader cannot).
    r, _, _ = ev.run(need("bad-cpc-method-dynamic"))
    for n in range(3):
        cpc = pkg(r["\\_SB.CPU%d._CPC" % n])
        check(register(cpc[7])[4] == 0x2A500000 + 0x100 * n, "dynamic CPU%d" % n)

    # Short _PSD packages are passed through as they are.
    r, _, _ = ev.run(need("bad-psd-four-entries"))
    check(r["\\_SB.CPU1._PSD"] == "pkg[pkg[int:0x4,int:0x0,int:0x1,int:0xfd]]",
          "CPU1 _PSD: %s" % r["\\_SB.CPU1._PSD"])
    check(r["\\_SB.CPU2._PSD"] == "pkg[pkg[int:0x5,int:0x0,int:0x2,int:0xfd]]",
          "CPU2 _PSD: %s" % r["\\_SB.CPU2._PSD"])

    # --devices: input order, padded names, missing devices; round trip.
    path = need("dsdt-mmio-standalone")[0]
    r, lines, _ = ev.run([path])
    devices = ["\\_SB.CPU3", "_SB_.CPU1", "\\_SB.NONE"]
    r2, lines2, _ = ev.run([path], discover=False, devices=devices)
    check([l.split(" = ")[0] for l in lines2] ==
          ["\\_SB.CPU3._UID", "\\_SB.CPU3._CPC", "\\_SB.CPU3._PSD",
           "\\_SB.CPU1._UID", "\\_SB.CPU1._CPC", "\\_SB.CPU1._PSD",
           "\\_SB.NONE._UID", "\\_SB.NONE._CPC", "\\_SB.NONE._PSD"],
          "--devices order: %s" % lines2)
    check(r2["\\_SB.NONE._CPC"] == "absent", "missing device")
    r3, lines3, _ = ev.run([path], discover=False, devices=lines)
    check(lines3 == lines[len(r.devices):], "discover -> --devices round trip")

    # Every fixture evaluates (tables that are not DSDT/SSDT are skipped).
    for name, path in sorted(fx.items()):
        if name.startswith("ssdt-") or not name.startswith(("dsdt-", "bad-")):
            continue
        tables = [path] + ([fx["ssdt-external-pair"]] if name == "dsdt-external-pair" else [])
        r, _, _ = ev.run(tables + [fx[n] for n in ("apic-mmio", "pcct-altra-like") if n in fx])
        check(r.devices, "%s: no processor devices found" % name)


# --------------------------------------------------------------------------
# Firmware dump checks (facts from ../shared/fixtures/acpi/README.md)


def madt_gicc_uids(path):
    """[(uid, enabled)] of the GICC entries of a MADT."""
    data = open(path, "rb").read()
    out, offset = [], 44
    while offset + 2 <= len(data):
        kind, length = data[offset], data[offset + 1]
        check(length > 0, "MADT entry of length 0")
        if kind == 0x0B:
            uid, flags = struct.unpack_from("<II", data, offset + 8)
            out.append((uid, bool(flags & 1)))
        offset += length
    return out


def orion_checks(ev, d):
    tables = [os.path.join(d, f) for f in
              ("orion-o6-dsdt.dat", "orion-o6-ssdt1.dat", "orion-o6-ssdt2.dat")]
    r, lines, elapsed = ev.run(tables)
    names = ["CPU%X" % n for n in range(12)]
    check(r.devices == ["\\_SB." + n for n in names], "Orion devices: %s" % r.devices)
    domain_word = {2: 0x6590094, 3: 0x6590098, 4: 0x659009C, 5: 0x65900A0, 6: 0x65900A4}
    domain_of = {0: 4, 1: 2, 2: 2, 3: 2, 4: 2, 5: 5, 6: 5, 7: 6, 8: 6, 9: 3, 10: 3, 11: 4}
    members = {}
    for n, dom in domain_of.items():
        members.setdefault(dom, []).append(n)
    for n, name in enumerate(names):
        dev = "\\_SB." + name
        check(integer(r[dev + "._UID"]) == n, "%s _UID" % dev)
        cpc = pkg(r[dev + "._CPC"])
        check(len(cpc) == 23 and integer(cpc[0]) == 23 and integer(cpc[1]) == 3,
              "%s _CPC header" % dev)
        for i in (2, 3, 4, 5, 12, 17, 20, 21, 22):
            integer(cpc[i])
        check(register(cpc[7]) == (SYSTEM_MEMORY, 32, 0, 3, domain_word[domain_of[n]]),
              "%s Desired: %s" % (dev, register(cpc[7])))
        check(register(cpc[13]) == (FFH, 64, 0, 4, 1)
              and register(cpc[14]) == (FFH, 64, 0, 4, 0), "%s AMU counters" % dev)
        for i in (6, 8, 9, 15):
            check(register(cpc[i]) == NULL_REGISTER, "%s element %d not NULL" % (dev, i))
        check(integer(cpc[12]) == 0 and integer(cpc[17]) == 0, "%s CtrWrap/AutoSel" % dev)
        check(integer(cpc[20]) == 1000 and integer(cpc[21]) == 800
              and 1801 <= integer(cpc[22]) <= 2500, "%s frequencies" % dev)
        psd = [integer(v) for v in pkg(pkg(r[dev + "._PSD"])[0])]
        dom = domain_of[n]
        check(psd == [5, 0, dom, 0xFD, len(members[dom])], "%s _PSD %s" % (dev, psd))
    cpc0 = [integer(v) for v in pkg(r["\\_SB.CPU0._CPC"])[2:6]]
    check(cpc0 == [0x2000, 0x2000, 0xA3D, 0xA3D], "CPU0 performance levels %s" % cpc0)
    gicc = madt_gicc_uids(os.path.join(d, "orion-o6-apic.dat"))
    check(sorted(u for u, en in gicc if en) == list(range(12)), "Orion MADT UIDs")
    return elapsed, lines


def altra_checks(ev, d):
    r, lines, elapsed = ev.run([os.path.join(d, "ampere-altra-dsdt.dat")])
    check(len(r.devices) == 256 and all(p.startswith("\\_SB.SYST.C") for p in r.devices),
          "Altra: %d devices" % len(r.devices))
    uid_of = {}
    subspaces_of = {}
    for dev in r.devices:
        uid = integer(r[dev + "._UID"])
        check(uid not in uid_of.values(), "duplicate _UID 0x%x" % uid)
        uid_of[dev] = uid
        cpc = pkg(r[dev + "._CPC"])
        check(len(cpc) == 23 and integer(cpc[0]) == 23 and integer(cpc[1]) == 3,
              "%s _CPC header" % dev)
        regs = [register(v) for v in cpc[2:]]
        check(all(x[0] == PCC or x == NULL_REGISTER for x in regs),
              "%s: a register outside PCC" % dev)
        subspaces_of[dev] = {x[3] for x in regs if x[0] == PCC}
        desired = register(cpc[7])
        check(desired[1] == 32 and desired[4] & 0x7F == 0x14,
              "%s Desired %s" % (dev, desired))
        check(register(cpc[13])[1] == 64 and register(cpc[13])[4] & 0x7F == 0x2C
              and register(cpc[14])[4] & 0x7F == 0x34, "%s counters" % dev)
        psd = [integer(v) for v in pkg(pkg(r[dev + "._PSD"])[0])]
        check(psd[:2] == [5, 0] and psd[3:] == [0xFD, 2], "%s _PSD %s" % (dev, psd))
    check(len({integer(pkg(pkg(r[d + "._PSD"])[0])[2]) for d in r.devices}) == 256,
          "Altra _PSD domains are not unique per CPU")
    first = r["\\_SB.SYST.C000._CPC"]
    check(register(pkg(first)[7]) == (PCC, 32, 0, 2, 0x14), "C000 Desired")

    gicc = madt_gicc_uids(os.path.join(d, "ampere-altra-apic.dat"))
    enabled = [u for u, en in gicc if en]
    check(len(enabled) == 32, "Altra MADT: %d enabled GICC" % len(enabled))
    by_uid = {u: dev for dev, u in uid_of.items()}
    present = []
    for uid in enabled:
        check(uid in by_uid, "MADT UID 0x%x has no processor device" % uid)
        present.append(by_uid[uid])
    for dev in present:
        check(subspaces_of[dev] == {2}, "%s (a present CPU) uses subspaces %s"
              % (dev, sorted(subspaces_of[dev])))
    mixed = sorted(d for d, s in subspaces_of.items() if len(s) > 1)
    print("  Altra: %d devices mix PCC subspaces within one _CPC (%s..%s), "
          "none of them in the MADT" % (len(mixed), mixed[0] if mixed else "-",
                                        mixed[-1] if mixed else "-"))
    check(not set(mixed) & set(present), "a present CPU mixes subspaces")
    return elapsed, lines


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fixtures", nargs="*", help="compiled fixtures (<name>.aml)")
    ap.add_argument("--eval", required=True, help="path of acpiexec_eval.py")
    ap.add_argument("--acpiexec", default=None)
    fw = ap.add_mutually_exclusive_group()
    fw.add_argument("--firmware-dir", default=None)
    fw.add_argument("--no-firmware", action="store_true")
    args = ap.parse_args()

    acpiexec = args.acpiexec or shutil.which("acpiexec")
    if not acpiexec or not os.access(acpiexec, os.X_OK):
        print("SKIP: acpiexec not found (install acpica-tools)")
        return SKIP
    if not args.fixtures:
        print("SKIP: no compiled fixtures (iasl not found at configure time)")
        return SKIP
    ev = Evaluator(args.eval, acpiexec)
    fx = {os.path.basename(p).rsplit(".", 1)[0]: p for p in args.fixtures}

    try:
        start = time.monotonic()
        fixture_checks(ev, fx)
        print("fixtures: OK (%d compiled fixtures, %.1f s)"
              % (len(fx), time.monotonic() - start))
        if args.no_firmware:
            return 0
        d = args.firmware_dir
        if not d or not os.path.isdir(d):
            print("SKIP: firmware dumps not found at %s "
                  "(fixture checks passed)" % d)
            return SKIP
        for name, fn in (("Orion O6", orion_checks), ("Ampere Altra", altra_checks)):
            elapsed, lines = fn(ev, d)
            print("%s: OK (acpiexec_eval.py took %.2f s)" % (name, elapsed))
            for line in lines[:1] + [l for l in lines if " = " in l][:3]:
                print("  " + (line if len(line) <= 160 else line[:157] + "..."))
    except Failure as exc:
        print("FAIL: %s" % exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
