#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
r"""Evaluate processor-device objects with ACPICA's acpiexec and print them
in the normalized form the cppcgov table dumper also prints.

This is the reference side of the ACPI cross-check: the same tables are fed
to this script and to the project's own reader, and the two outputs must be
identical line for line.

Usage:
    acpiexec_eval.py [--acpiexec PATH] TABLE... --devices FILE|-
    acpiexec_eval.py [--acpiexec PATH] TABLE... --discover

TABLE is a binary ACPI table (DSDT/SSDT .aml/.dat). Other tables (APIC, PCCT,
...) may be given and are ignored, so a whole dump directory can be passed.

OUTPUT CONTRACT (version 1)
===========================

One line per evaluated object, devices in input order (``--devices``) or
sorted by path (``--discover``, see below), and for each device the objects
``_UID``, ``_CPC``, ``_PSD`` in that order:

    <device path>.<NAME> = <value>

    \_SB.CPU1._UID = int:0x1
    \_SB.CPU1._CPC = pkg[int:0x17,int:0x3,buf:820c0000200003...007900,...]
    \_SB.CPU1._PSD = pkg[pkg[int:0x5,int:0x0,int:0x1,int:0xfd,int:0x2]]

Paths are absolute, segments separated by '.', with the trailing '_' padding
of each name segment removed, exactly as acpiexec's ``paths`` command prints
them (``\_SB.SYST.C000``, not ``\_SB_.SYST.C000``). Device paths given as
input are normalized the same way (a missing leading '\' is added).

<value> is one of:

    int:0x<hex>        Integer; lower-case hex, no leading zeros (0 is
                       ``int:0x0``). Integers are 64-bit; when the DSDT's
                       header revision is below 2, ACPICA computes with 32
                       bits (0xFFFFFFFF + 1 is 0) and so must the reader.
    buf:<hex>          Buffer; every byte as two lower-case hex digits, no
                       separators (an empty buffer is ``buf:``). A
                       ResourceTemplate () { Register (...) } element is a
                       Buffer holding the Generic Register descriptor
                       (0x82 ...) and the End Tag (0x79 0x00).
    str:"<text>"       String. Bytes 0x20..0x7e are printed as themselves
                       except '"' and '\', which are printed as \" and \\;
                       any other byte is printed as \x<two lower-case hex
                       digits>. acpiexec prints at most 255 characters of a
                       string; a longer one is printed as its first 255
                       characters followed by ``...`` after the closing quote.
    pkg[<v>,<v>,...]   Package; elements in order, comma-separated, no
                       spaces; ``pkg[]`` when empty. Elements are values of
                       this same grammar (nested packages included).
    other:<Type>       Anything else. <Type> is the bracketed type name
                       acpiexec prints, without spaces, except for the two
                       that occur in practice, which carry ACPICA's own
                       names: ``other:Reference`` ("[Object Reference]": a
                       package element naming a Device, Method, Processor,
                       ...) and ``other:Uninitialized`` ("[Null Object]": a
                       package element never given a value, e.g. the tail
                       of ``Package (3) {7}``). Others: ``other:Processor``,
                       ``other:PowerResource``, ``other:UnknownType``.
                       Note: a package element that names a *data* object
                       (Integer, String, Buffer, Package) is resolved by
                       ACPICA to that object's value when the package is
                       built, so it prints as that value, not as a reference.

and, for the object as a whole only:

    absent             No object of that name exists under the device.
    none               The object exists and evaluated without error but
                       returned nothing (a method without Return).
    error:<STATUS>     Evaluation failed; <STATUS> is the ACPICA exception
                       name, e.g. ``error:AE_NOT_FOUND`` (a method referring
                       to a missing name), ``error:AE_TYPE`` (an object
                       that cannot be evaluated, e.g. a Mutex named _CPC),
                       ``error:AE_AML_DIVIDE_BY_ZERO``.

Values are the raw objects: ACPICA's "repair" of predefined-name results
(e.g. converting a String element of _CPC to an Integer, or wrapping a bare
_PSD package) is disabled (acpiexec -dr) unless --repair is given, because
the project's reader must see, and judge, what the firmware really returns.

With --discover the script lists processor devices itself: every Device
whose _HID evaluates to the String "ACPI0007", and every legacy Processor
object. It prints one ``device <path>`` line per device, sorted by path
(byte-wise), then the object lines for those devices in the same order.
The ``device`` lines can be fed back with ``--devices``.

HOW
===

A single acpiexec process is driven through its debugger command loop on
standard input (``-b`` is limited to 1023 characters per invocation, too
short for 256 devices, and every ``evaluate`` command sleeps 10 ms).
The script sends ``paths`` (every namespace node with its type: this
decides ``absent`` and finds devices) and ``all <NAME>`` for each object
name (evaluates every object of that name in one namespace walk, without
the per-command sleep), then ``quit``. Objects the walk did not report are
evaluated individually with ``evaluate`` in a second run. acpiexec runs
with -l (load the namespace only: no _INI/_STA/_REG at start-up; module-
level ``If`` blocks still run while the tables load, so conditional method
definitions are seen), -di, -dr and a short AML loop timeout.

Exit status: 0 on success, 2 on a usage error or when acpiexec fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

DEFAULT_OBJECTS = ("_UID", "_CPC", "_PSD")
PROCESSOR_HID = "ACPI0007"
AML_SIGNATURES = (b"DSDT", b"SSDT")


class EvalError(Exception):
    """acpiexec could not be run or its output could not be understood."""


# --------------------------------------------------------------------------
# Paths


def normalize_path(path):
    """Absolute path with the '_' padding of each segment removed."""
    path = path.strip()
    if path.startswith("\\"):
        path = path[1:]
    segments = []
    for segment in path.split("."):
        if not segment:
            continue
        stripped = segment.upper().rstrip("_")
        segments.append(stripped if stripped else "_")
    return "\\" + ".".join(segments)


def child_path(device, name):
    return device + name if device == "\\" else device + "." + name


# --------------------------------------------------------------------------
# Value formatting


def fmt_int(value):
    return "int:0x%x" % value


def fmt_buf(data):
    return "buf:" + data.hex()


def fmt_str(data, truncated):
    out = []
    for byte in data:
        if byte == 0x22:
            out.append('\\"')
        elif byte == 0x5C:
            out.append("\\\\")
        elif 0x20 <= byte <= 0x7E:
            out.append(chr(byte))
        else:
            out.append("\\x%02x" % byte)
    return 'str:"%s"%s' % ("".join(out), "..." if truncated else "")


_C_ESCAPES = {
    "a": 0x07, "b": 0x08, "f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09,
    "v": 0x0B, "'": 0x27, '"': 0x22, "\\": 0x5C,
}


def decode_acpica_string(text):
    """Undo AcpiUtPrintString's escaping. Returns (bytes, truncated)."""
    if not text.startswith('"'):
        raise EvalError("unexpected string dump: %r" % text)
    out = bytearray()
    i = 1
    while i < len(text):
        c = text[i]
        if c == '"':
            rest = text[i + 1:]
            return bytes(out), rest.startswith("...")
        if c == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e in _C_ESCAPES:
                out.append(_C_ESCAPES[e])
                i += 2
                continue
            m = re.match(r"x([0-9A-Fa-f]+)", text[i + 1:])
            if m:
                # Bytes >= 0x80 are printed sign-extended (\xFFFFFF80).
                out.append(int(m.group(1), 16) & 0xFF)
                i += 1 + len(m.group(0))
                continue
        out.append(ord(c) & 0xFF)
        i += 1
    raise EvalError("unterminated string dump: %r" % text)


# --------------------------------------------------------------------------
# acpiexec object dump parser (AcpiDbDumpExternalObject output)

_RE_INTEGER = re.compile(r"^\s*\[Integer\] = ([0-9A-Fa-f]+)\s*$")
_RE_STRING = re.compile(r"^\s*\[String\] Length ([0-9A-Fa-f]+) = (.*)$")
_RE_BUFFER = re.compile(r"^\s*\[Buffer\] Length ([0-9A-Fa-f]+) =(.*)$")
_RE_PACKAGE = re.compile(r"^\s*\[Package\] Contains (\d+) Elements:\s*$")
_RE_OTHER = re.compile(r"^\s*\[([A-Za-z][A-Za-z ]*)\]")
_OTHER_TYPES = {"Object Reference": "Reference", "Null Object": "Uninitialized"}
_RE_HEXLINE = re.compile(r"^\s*[0-9A-Fa-f]+:((?: [0-9A-Fa-f]{2})+)")


def _hex_bytes(text):
    """Bytes of one AcpiUtDumpBuffer line ("0000: 01 02 ...  // ..")."""
    hexpart = text.split("//", 1)[0]
    m = _RE_HEXLINE.match(hexpart)
    if not m:
        return None
    return bytes(int(tok, 16) for tok in m.group(1).split())


class DumpParser:
    def __init__(self, lines, pos):
        self.lines = lines
        self.pos = pos

    def _next(self):
        if self.pos >= len(self.lines):
            raise EvalError("acpiexec output ended inside an object dump")
        line = self.lines[self.pos]
        self.pos += 1
        return line

    def value(self):
        line = self._next()
        m = _RE_INTEGER.match(line)
        if m:
            return fmt_int(int(m.group(1), 16))
        m = _RE_STRING.match(line)
        if m:
            data, truncated = decode_acpica_string(m.group(2).rstrip("\n"))
            return fmt_str(data, truncated)
        m = _RE_BUFFER.match(line)
        if m:
            return self._buffer(int(m.group(1), 16), m.group(2))
        m = _RE_PACKAGE.match(line)
        if m:
            count = int(m.group(1))
            return "pkg[%s]" % ",".join(self.value() for _ in range(count))
        m = _RE_OTHER.match(line)
        if m:
            label = m.group(1).strip()
            return "other:" + _OTHER_TYPES.get(label, label.replace(" ", ""))
        raise EvalError("cannot parse acpiexec object dump line: %r" % line)

    def _buffer(self, length, rest):
        data = bytearray()
        if length and rest.strip():
            chunk = _hex_bytes(rest)
            if chunk is None:
                raise EvalError("cannot parse buffer dump: %r" % rest)
            data += chunk
        while len(data) < length:
            line = self._next()
            chunk = _hex_bytes(line)
            if chunk is None:
                raise EvalError(
                    "buffer dump has %d of %d bytes; next line: %r"
                    % (len(data), length, line))
            data += chunk
        if len(data) != length:
            raise EvalError("buffer dump has %d bytes, header says %d"
                            % (len(data), length))
        return fmt_buf(bytes(data))


# --------------------------------------------------------------------------
# Running acpiexec


class Acpiexec:
    def __init__(self, program, tables, repair, init, loop_timeout, timeout,
                 log):
        self.program = program
        self.tables = tables
        self.repair = repair
        self.init = init
        self.loop_timeout = loop_timeout
        self.timeout = timeout
        self.log = log

    def run(self, commands):
        argv = [self.program]
        if not self.init:
            argv += ["-l", "-di"]
        if not self.repair:
            argv.append("-dr")
        argv += ["-to", str(self.loop_timeout)]
        argv += self.tables
        script = "".join(c + "\n" for c in commands) + "quit\n"
        try:
            proc = subprocess.run(
                argv, input=script.encode("ascii"), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, timeout=self.timeout, check=False)
        except OSError as exc:
            raise EvalError("cannot run %s: %s" % (self.program, exc))
        except subprocess.TimeoutExpired:
            raise EvalError("%s did not finish within %d s"
                            % (self.program, self.timeout))
        text = proc.stdout.decode("latin-1")
        if self.log:
            with open(self.log, "a", encoding="latin-1") as f:
                f.write("$ %s\n%s%s\n" % (" ".join(argv), script, text))
        if proc.returncode < 0:
            raise EvalError("%s died with signal %d"
                            % (self.program, -proc.returncode))
        lines = text.splitlines()
        self._check_loaded(lines)
        return lines

    def _check_loaded(self, lines):
        loaded = [l for l in lines if re.match(r"Table \[(DSDT|SSDT):", l)]
        if not any(read_signature(t) == b"DSDT" for t in self.tables):
            # acpiexec supplies an empty DSDT of its own when given none.
            loaded = [l for l in loaded if not l.startswith("Table [DSDT: Local")]
        if len(loaded) != len(self.tables):
            tail = "\n".join(lines[-30:])
            raise EvalError("acpiexec loaded %d of %d AML tables:\n%s"
                            % (len(loaded), len(self.tables), tail))


def read_signature(path):
    with open(path, "rb") as f:
        return f.read(4)


# --------------------------------------------------------------------------
# Output parsers for the debugger commands

_RE_PATHS_ENTRY = re.compile(r"^\s*(\d+)\s+([A-Za-z]+)\s+(\S+)\s*$")
_RE_ALL_START = re.compile(r"^Executing all objects with NameSeg: (\S+)")
_RE_ALL_END = re.compile(r"^Evaluated \d+ names in the namespace")
_RE_ALL_RESULT = re.compile(r"^(\\\S+)\s+returned (AE_\w+)\s*$")
_RE_EVAL_OBJECT = re.compile(
    r"^Evaluation of (\S+) returned object \S+, external buffer length")
_RE_EVAL_FAILED = re.compile(r"^Evaluation of (\S+) failed with status (\w+)")
_RE_EVAL_NONE = re.compile(r"^No object was returned from evaluation of (\S+)")


def parse_paths(lines):
    """{path: type} from the output of the ``paths`` command."""
    nodes = {}
    try:
        start = lines.index("ACPI Namespace (from root):")
    except ValueError:
        raise EvalError("acpiexec did not list the namespace ('paths')")
    for line in lines[start + 1:]:
        m = _RE_PATHS_ENTRY.match(line)
        if not m:
            break
        nodes[normalize_path(m.group(3))] = m.group(2)
    return nodes


def parse_all(lines):
    """{object path: value} from ``all <NAME>`` sections."""
    results = {}
    i = 0
    in_section = False
    while i < len(lines):
        line = lines[i]
        i += 1
        if _RE_ALL_START.match(line):
            in_section = True
            continue
        if not in_section:
            continue
        if _RE_ALL_END.match(line):
            in_section = False
            continue
        m = _RE_ALL_RESULT.match(line)
        if not m:
            continue  # interpreter messages printed during evaluation
        path, status = normalize_path(m.group(1)), m.group(2)
        value = None
        if i < len(lines) and _RE_EVAL_OBJECT.match(lines[i]):
            parser = DumpParser(lines, i + 1)
            value = parser.value()
            i = parser.pos
        if status != "AE_OK":
            results[path] = "error:" + status
        else:
            results[path] = value if value is not None else "none"
    return results


def parse_evaluate(lines):
    """{object path: value} from individual ``evaluate`` commands."""
    results = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        m = _RE_EVAL_OBJECT.match(line)
        if m:
            parser = DumpParser(lines, i)
            results[normalize_path(m.group(1))] = parser.value()
            i = parser.pos
            continue
        m = _RE_EVAL_FAILED.match(line)
        if m:
            results[normalize_path(m.group(1))] = "error:" + m.group(2)
            continue
        m = _RE_EVAL_NONE.match(line)
        if m:
            results[normalize_path(m.group(1))] = "none"
            continue
    return results


# --------------------------------------------------------------------------


def read_devices(source):
    stream = sys.stdin if source == "-" else open(source, encoding="utf-8")
    devices = []
    with stream:
        for raw in stream:
            line = raw.strip()
            if not line or line.startswith("#") or " = " in line:
                continue
            if line.startswith("device "):
                line = line[len("device "):]
            devices.append(normalize_path(line))
    return devices


def discover(nodes, hids):
    found = []
    for path, node_type in nodes.items():
        if node_type == "Processor":
            found.append(path)
        elif node_type == "Device":
            if hids.get(child_path(path, "_HID")) == 'str:"%s"' % PROCESSOR_HID:
                found.append(path)
    return sorted(set(found), key=lambda p: p.encode("ascii"))


def evaluate(runner, devices, objects, want_discovery):
    names = list(objects)
    if want_discovery and "_HID" not in names:
        names.append("_HID")
    lines = runner.run(["paths"] + ["all " + n for n in names])
    nodes = parse_paths(lines)
    results = parse_all(lines)

    if want_discovery:
        devices = discover(nodes, results)

    # Objects that exist but were not reported by the namespace walk (for
    # example a Scope-typed node) are evaluated one by one.
    missing = []
    for device in devices:
        for name in objects:
            path = child_path(device, name)
            if path in nodes and path not in results:
                missing.append(path)
    if missing:
        results.update(parse_evaluate(
            runner.run(["evaluate " + p for p in missing])))

    out = []
    if want_discovery:
        out += ["device " + d for d in devices]
    for device in devices:
        if device not in nodes:
            print("acpiexec_eval: warning: %s is not in the namespace" % device,
                  file=sys.stderr)
        for name in objects:
            path = child_path(device, name)
            if path not in nodes:
                value = "absent"
            elif path in results:
                value = results[path]
            else:
                raise EvalError("acpiexec reported nothing for " + path)
            out.append("%s = %s" % (path, value))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Evaluate _UID/_CPC/_PSD of processor devices with "
                    "acpiexec and print them in the normalized form.",
        epilog="See the top of this file for the output format.")
    ap.add_argument("tables", nargs="+", metavar="TABLE",
                    help="binary ACPI tables (DSDT/SSDT; others are ignored)")
    ap.add_argument("--acpiexec", default=None,
                    help="acpiexec binary (default: acpiexec on PATH)")
    sel = ap.add_mutually_exclusive_group(required=True)
    sel.add_argument("--devices", metavar="FILE|-",
                     help="device paths, one per line ('device <path>' "
                          "lines and '#' comments are accepted)")
    sel.add_argument("--discover", action="store_true",
                     help="find processor devices (_HID ACPI0007, legacy "
                          "Processor objects) and evaluate those")
    ap.add_argument("--objects", default=",".join(DEFAULT_OBJECTS),
                    help="comma-separated object names to evaluate "
                         "(default: %(default)s)")
    ap.add_argument("--repair", action="store_true",
                    help="let ACPICA repair predefined-name results, as an "
                         "OS would see them (default: raw values)")
    ap.add_argument("--init", action="store_true",
                    help="run the normal namespace initialization "
                         "(_STA/_INI/_REG) before evaluating")
    ap.add_argument("--loop-timeout", type=int, default=2, metavar="SECONDS",
                    help="AML While-loop timeout (default: %(default)s)")
    ap.add_argument("--timeout", type=int, default=300, metavar="SECONDS",
                    help="limit for each acpiexec run (default: %(default)s)")
    ap.add_argument("--log", metavar="FILE",
                    help="append the raw acpiexec transcripts to FILE")
    args = ap.parse_args(argv)

    objects = [o.strip().upper() for o in args.objects.split(",") if o.strip()]
    for name in objects:
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,3}", name):
            ap.error("not an ACPI name segment: %r" % name)

    program = args.acpiexec or shutil.which("acpiexec")
    if not program:
        print("acpiexec_eval: acpiexec not found (Debian/Ubuntu package "
              "acpica-tools)", file=sys.stderr)
        return 2

    tables = []
    for table in args.tables:
        try:
            signature = read_signature(table)
        except OSError as exc:
            print("acpiexec_eval: %s" % exc, file=sys.stderr)
            return 2
        if signature in AML_SIGNATURES:
            tables.append(os.path.abspath(table))
    if not tables:
        print("acpiexec_eval: no DSDT/SSDT among the tables", file=sys.stderr)
        return 2

    devices = [] if args.discover else read_devices(args.devices)
    runner = Acpiexec(program, tables, args.repair, args.init,
                      args.loop_timeout, args.timeout, args.log)
    try:
        out = evaluate(runner, devices, objects, args.discover)
    except EvalError as exc:
        print("acpiexec_eval: %s" % exc, file=sys.stderr)
        return 2
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
