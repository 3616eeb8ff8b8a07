#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What `cppcgovctl acpi-inspect --json` must conclude from each fixture.

usage: inspect_fixtures.py CPPCGOVCTL FIXTURE_DIR [DUMP_DIR]

FIXTURE_DIR holds the compiled fixtures (<name>.aml); DUMP_DIR, when it
exists, the real Orion O6 and Ampere Altra tables, checked too. Every layout class
must be accepted with the access class the plan derives; every malformed
case must refuse exactly the CPUs it breaks, with an error naming the CPU
(number, _UID and path), the entry and the reason. Exit 0 when every case
holds, 1 otherwise (each failure is printed).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

# Fixtures without a MADT number CPUs in namespace order.
NO_MADT = "CPUs are numbered in the order"

CASES = {
    # name: (extra tables, exit status, {path: (status, [substrings])},
    #        {path: {entry: access class}})
    "dsdt-mmio-standalone": (["apic-mmio"], 0, {
        "\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": ("ok", []),
        "\\_SB.CPU3": ("ok", []),
    }, {"\\_SB.CPU0": {"DesiredPerformance": "full-width standalone",
                       "MinimumPerformance": "full-width standalone",
                       "PerformanceLimited": "full-width standalone"}}),
    "dsdt-mmio-shared-domain": ([], 0, {}, {
        "\\_SB.CPU0": {"DesiredPerformance": "full-width alias"},
        "\\_SB.CPU2": {"DesiredPerformance": "full-width alias"}}),
    "dsdt-mmio-packed": ([], 0, {}, {
        "\\_SB.CPU0": {"DesiredPerformance": "shared unit",
                       "MinimumPerformance": "shared unit",
                       "EnergyPerformancePreference": "shared unit"}}),
    "dsdt-pcc": (["pcct-altra-like", "apic-pcc"], 0, {
        "\\_SB.PKG0.C100": ("ok", []), "\\_SB.PKG0.C000": ("ok", []),
        "\\_SB.PKG0.C001": ("ok", []),
    }, {"\\_SB.PKG0.C000": {"DesiredPerformance": "pcc",
                            "DeliveredPerformanceCounter": "pcc"}}),
    "dsdt-cpc-if-false": ([], 0, {
        "\\_SB.CPU0": ("no-cppc", []), "\\_SB.CPU1": ("no-cppc", []),
        "\\_SB.CPU2": ("ok", []),
    }, {}),
    "dsdt-rev2": ([], 0, {"\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": ("ok", [])},
                  {"\\_SB.CPU0": {"LowestFrequency": None}}),
    "dsdt-legacy-processor": ([], 0, {"\\_PR.CPU0": ("ok", []),
                                      "\\_PR.CPU1": ("ok", [])}, {}),
    "dsdt-nested-scope": ([], 0, {
        "\\_SB.SCK0.CL00.CPU0": ("ok", []), "\\_SB.SCK0.CL00.CPU1": ("ok", []),
        "\\_SB.SCK0.CL01.CPU2": ("ok", []), "\\_SB.SCK0.CL01.CPU3": ("ok", []),
    }, {}),
    "dsdt-external-pair": (["ssdt-external-pair"], 0, {
        "\\_SB.CPU0": ("ok", []), "\\_SB.CPU3": ("ok", []),
    }, {}),
    # Malformed: CPU0 of each is a well-formed control.
    "bad-cpc-numentries-revision": ([], 1, {
        "\\_SB.CPU0": ("ok", []),
        "\\_SB.CPU1": ("refused", ["NumEntries 23 does not match revision 2"]),
        "\\_SB.CPU2": ("refused", ["NumEntries 21 does not match revision 3"]),
        "\\_SB.CPU3": ("refused", ["has 21 elements, NumEntries says 23"]),
    }, {}),
    "bad-reg-address-zero": ([], 1, {"\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": (
        "refused", ["DesiredPerformance", "non-NULL register at address 0"])},
        {}),
    "bad-reg-width-over-access": ([], 1, {
        "\\_SB.CPU1": ("refused", ["DesiredPerformance",
                                   "larger than the 32-bit access size"]),
        "\\_SB.CPU2": ("refused", ["DesiredPerformance",
                                   "at offset 24 is larger"]),
    }, {}),
    "bad-reg-unaligned": ([], 1, {"\\_SB.CPU1": (
        "refused", ["DesiredPerformance", "not aligned to its 4-byte"])}, {}),
    "bad-reg-space-cmos": ([], 1, {"\\_SB.CPU1": (
        "refused", ["DesiredPerformance", "unsupported address space 0x5"])},
        {}),
    "bad-reg-systemio-qword": ([], 1, {"\\_SB.CPU1": (
        "refused", ["DesiredPerformance", "SystemIO access size 4"])}, {}),
    "bad-pcc-mixed-subspace": (["pcct-altra-like"], 1, {
        "\\_SB.CPU0": ("ok", []),
        "\\_SB.CPU1": ("refused", ["mismatched PCC ids"]),
    }, {}),
    "bad-reg-overlap": ([], 1, {
        "\\_SB.CPU0": ("ok", []),
        "\\_SB.CPU1": ("refused", ["DesiredPerformance", "MinimumPerformance",
                                   "overlaps"]),
        "\\_SB.CPU2": ("refused", ["MaximumPerformance",
                                   "same field as DesiredPerformance"]),
    }, {}),
    "bad-desired-integer": ([], 1, {"\\_SB.CPU1": (
        "refused", ["DesiredPerformance", "is an Integer"])}, {}),
    "bad-psd-four-entries": ([], 1, {
        "\\_SB.CPU1": ("refused", ["_PSD", "five Integers"]),
        "\\_SB.CPU2": ("refused", ["_PSD", "five Integers"]),
    }, {}),
    "bad-psd-revision": ([], 1, {"\\_SB.CPU1": (
        "refused", ["_PSD revision 1"])}, {}),
    "bad-psd-coordination": ([], 1, {"\\_SB.CPU1": (
        "refused", ["_PSD coordination type 0xfb"])}, {}),
    "bad-psd-domain-mismatch": ([], 0, {
        "\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": ("ok", []),
    }, {}),
    "bad-cpc-string-element": ([], 1, {
        "\\_SB.CPU1": ("refused", ["HighestPerformance is a String"]),
        "\\_SB.CPU2": ("refused", ["LowestFrequency is a String"]),
    }, {}),
    "bad-refperf-above-highest": ([], 0, {
        "\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": ("ok", []),
    }, {}),
    "bad-refperf-zero-hz": ([], 0, {
        "\\_SB.CPU0": ("ok", []), "\\_SB.CPU1": ("ok", []),
    }, {}),
    "bad-cpc-method-dynamic": ([], 1, {
        "\\_SB.CPU0": ("refused", ["_CPC cannot be evaluated",
                                   "starts with Store"]),
        "\\_SB.CPU1": ("refused", ["_CPC cannot be evaluated",
                                   "GCPC is a method"]),
        "\\_SB.CPU2": ("refused", ["_CPC cannot be evaluated", "DerefOf"]),
    }, {}),
}

# The table-only firmware check (firmwareCheck), per fixture and path: its
# status and substrings of its reason. Every fixture not listed must have
# no "finding" at all.
FIRMWARE_CHECKS = {
    "bad-refperf-above-highest": {
        "\\_SB.CPU0": ("ok", ["must count at 2000.0 MHz"]),
        "\\_SB.CPU1": ("finding", ["ReferencePerformance 300",
                                    "above HighestPerformance 250"]),
    },
    "bad-refperf-zero-hz": {
        "\\_SB.CPU0": ("ok", ["must count at 2000.0 MHz"]),
        "\\_SB.CPU1": ("finding", ["ReferencePerformance 50",
                                    "at or below 0 MHz",
                                    "(100, 400 MHz) and (200, 2000 MHz)"]),
    },
    "dsdt-pcc": {"\\_SB.PKG0.C000": ("undecided", ["in registers"])},
    "dsdt-rev2": {"\\_SB.CPU0": ("ok", ["consistent"])},
}


def check_firmware(name, by_path):
    """The firmwareCheck of every CPU against FIRMWARE_CHECKS."""
    problems = []
    want = FIRMWARE_CHECKS.get(name, {})
    for path, cpu in by_path.items():
        got = cpu.get("firmwareCheck", {})
        if got.get("check") != "reference-perf":
            problems.append(f"{path}: firmwareCheck {got}")
            continue
        status, needles = want.get(path, (None, []))
        if status is None:
            if got["status"] == "finding":
                problems.append(f"{path}: unexpected finding {got['reason']}")
            continue
        if got["status"] != status:
            problems.append(f"{path}: firmware check {got['status']}, "
                            f"expected {status} ({got['reason']})")
        for needle in needles:
            if needle not in got["reason"]:
                problems.append(f"{path}: no '{needle}' in {got['reason']}")
    return problems


# Warnings that must appear, per fixture and path.
WARNINGS = {
    "bad-psd-domain-mismatch": {
        "\\_SB.CPU0": "domain 3 is inconsistent",
        "\\_SB.CPU1": "domain 3 is inconsistent",
    },
}


def check(ctl, directory, name, case):
    extra, status, cpus, classes = case
    tables = [f"{directory}/{n}.aml" for n in [name] + extra]
    done = subprocess.run(ctl + ["acpi-inspect", "--json", "--tables"] + tables,
                          capture_output=True, text=True, timeout=60)
    problems = []
    if done.returncode != status:
        problems.append(f"exit status {done.returncode}, expected {status}: "
                        f"{done.stderr.strip()}")
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        return [f"output is not JSON: {e}"]
    by_path = {c["path"]: c for c in report["cpus"] if c["path"]}
    for path, (want, needles) in cpus.items():
        cpu = by_path.get(path)
        if cpu is None:
            problems.append(f"{path}: not a present CPU")
            continue
        if cpu["status"] != want:
            problems.append(f"{path}: status {cpu['status']}, expected {want}"
                            f" ({cpu['errors']})")
        label = f"CPU {cpu['cpu']} (_UID {cpu['uid']:#x}, {path})"
        for needle in needles:
            if not any(needle in e and label in e for e in cpu["errors"]):
                problems.append(f"{path}: no error naming '{label}' and "
                                f"'{needle}' in {cpu['errors']}")
    for path, entries in classes.items():
        cpu = by_path.get(path)
        if cpu is None or "entries" not in cpu:
            problems.append(f"{path}: no descriptor")
            continue
        got = {e["name"]: e for e in cpu["entries"]}
        for entry, access in entries.items():
            if access is None:
                if got[entry]["kind"] != "absent":
                    problems.append(f"{path}: {entry} is {got[entry]}")
            elif got[entry].get("access") != access:
                problems.append(f"{path}: {entry} access "
                                f"{got[entry].get('access')}, expected {access}")
    problems += check_firmware(name, by_path)
    for path, needle in WARNINGS.get(name, {}).items():
        cpu = by_path.get(path, {"warnings": []})
        if not any(needle in w for w in cpu["warnings"]):
            problems.append(f"{path}: no warning with '{needle}'")
    return problems


ORION_DESIRED = ["0x659009c", "0x6590094", "0x6590094", "0x6590094",
                 "0x6590094", "0x65900a0", "0x65900a0", "0x65900a4",
                 "0x65900a4", "0x6590098", "0x6590098", "0x659009c"]


def inspect(ctl, tables):
    done = subprocess.run(ctl + ["acpi-inspect", "--json", "--tables"] + tables,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def entry(cpu, name):
    return next(e for e in cpu["entries"] if e["name"] == name)


def check_orion(ctl, dumps):
    status, r = inspect(ctl, [f"{dumps}/orion-o6-{t}.dat" for t in
                              ("dsdt", "ssdt1", "ssdt2", "apic")])
    problems = [] if status == 0 else [f"exit status {status}"]
    if [c["status"] for c in r["cpus"]] != ["ok"] * 12:
        problems.append(f"statuses {[c['status'] for c in r['cpus']]}")
    # Quiet from the tables alone (the counter's rate is not in them); the
    # rates they imply are named for the run-time check.
    for cpu in r["cpus"]:
        got = cpu["firmwareCheck"]
        rate = "305.2 MHz" if cpu["cpu"] not in (1, 2, 3, 4) else "776.0 MHz"
        if got["status"] != "ok" or rate not in got["reason"]:
            problems.append(f"CPU {cpu['cpu']}: firmware check {got}")
    for cpu, address in zip(r["cpus"], ORION_DESIRED):
        desired = entry(cpu, "DesiredPerformance")
        if (desired["register"]["address"], desired["access"]) != (
                address, "full-width alias"):
            problems.append(f"CPU {cpu['cpu']}: Desired {desired}")
    return problems


def check_altra(ctl, dumps):
    status, r = inspect(ctl, [f"{dumps}/ampere-altra-{t}.dat" for t in
                              ("dsdt", "pcct", "apic")])
    problems = [] if status == 0 else [f"exit status {status}"]
    if len(r["cpus"]) != 32 or any(c["status"] != "ok" for c in r["cpus"]):
        problems.append(f"{len(r['cpus'])} CPUs, not 32 accepted")
    for cpu in r["cpus"]:
        if cpu["firmwareCheck"]["status"] != "undecided":
            problems.append(f"CPU {cpu['cpu']}: firmware check "
                            f"{cpu['firmwareCheck']} (its scale is in PCC)")
        registers = [e for e in cpu.get("entries", [])
                     if e["kind"] == "register"]
        if cpu.get("pccSubspace") != 2 or any(
                e["register"]["space"] != "PCC" or
                e["register"]["accessSize"] != 2 for e in registers):
            problems.append(f"CPU {cpu['cpu']}: not all in PCC subspace 2")
        for name in ("ReferencePerformanceCounter",
                     "DeliveredPerformanceCounter"):
            reg = entry(cpu, name)["register"]
            if reg["bitWidth"] != 64 or int(reg["address"], 16) % 8 != 4:
                problems.append(f"CPU {cpu['cpu']}: {name} {reg}")
    s2 = r["pccSubspaces"][2]
    want = {"type": 2, "baseAddress": "0x807f8108000", "length": "0x4000",
            "doorbellWriteMask": "0x53800140", "nominalLatencyUs": 100,
            "minRequestTurnaroundUs": 110, "maxPeriodicAccessRate": 0}
    for key, value in want.items():
        if s2[key] != value:
            problems.append(f"PCC subspace 2 {key} = {s2[key]}, not {value}")
    if s2["doorbell"]["address"] != "0x100001542010" or \
            s2["platformAck"]["address"] != "0x100001542020":
        problems.append(f"PCC subspace 2 registers {s2}")
    return problems


def check_live_root(ctl, directory):
    """Without --tables: tables and CPU numbering from a /sys under --root."""
    with tempfile.TemporaryDirectory() as root:
        tables = os.path.join(root, "sys/firmware/acpi/tables")
        os.makedirs(tables)
        shutil.copy(f"{directory}/dsdt-mmio-standalone.aml",
                    os.path.join(tables, "DSDT"))
        for cpu, uid in enumerate([3, 0]):
            node = os.path.join(root, f"sys/devices/system/cpu/cpu{cpu}",
                                "firmware_node")
            os.makedirs(node)
            with open(os.path.join(node, "uid"), "w") as f:
                f.write(f"{uid}\n")
        done = subprocess.run(ctl + ["acpi-inspect", "--json", "--root", root],
                              capture_output=True, text=True, timeout=60)
    problems = [] if done.returncode == 0 else [
        f"exit status {done.returncode}: {done.stderr.strip()}"]
    r = json.loads(done.stdout or "{}")
    if r.get("cpuNumbering") != "sysfs":
        problems.append(f"numbered by {r.get('cpuNumbering')}, not sysfs")
    paths = [c["path"] for c in r.get("cpus", [])]
    if paths != ["\\_SB.CPU3", "\\_SB.CPU0"]:
        problems.append(f"CPUs {paths}")
    return problems


def check_cli(ctl, directory):
    """Usage errors, and file names that are not ASCII survive JSON."""
    problems = []
    done = subprocess.run(ctl + ["acpi-inspect", "--tables"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 2:
        problems.append(f"--tables without files: exit {done.returncode}")
    with tempfile.TemporaryDirectory() as tmp:
        odd = os.path.join(tmp, 't\u00e5 "q".aml')
        shutil.copy(f"{directory}/dsdt-rev2.aml", odd)
        status, r = inspect(ctl, [odd])
        if status != 0 or r["tables"][0]["source"] != odd:
            problems.append(f"source {r['tables'][0]['source']!r}, "
                            f"expected {odd!r}")
    return problems


def report(name, problems):
    print(f"{'FAIL' if problems else 'ok  '} {name}")
    for p in problems:
        print(f"     {p}")
    return bool(problems)


def main():
    # The command that runs cppcgovctl: through the cross build's emulator
    # when the build names one (CPPCGOV_EXE_WRAPPER, words split on spaces).
    ctl = os.environ.get("CPPCGOV_EXE_WRAPPER", "").split() + [sys.argv[1]]
    directory = sys.argv[2]
    failed = 0
    for name, case in CASES.items():
        failed += report(name, check(ctl, directory, name, case))
    failed += report("tables and CPU numbering under --root",
                     check_live_root(ctl, directory))
    failed += report("command line and JSON text", check_cli(ctl, directory))
    checked = len(CASES) + 2
    dumps = sys.argv[3] if len(sys.argv) > 3 else None
    if dumps and os.path.isdir(dumps):
        failed += report("orion-o6 (real tables)", check_orion(ctl, dumps))
        failed += report("ampere-altra (real tables)", check_altra(ctl, dumps))
        checked += 2
    else:
        print(f"no real tables at {dumps}: only the fixtures were checked")
    print(f"{checked - failed} of {checked} cases as expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
