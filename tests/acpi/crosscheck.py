#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cross-checks the project's AML reader against ACPICA's acpiexec.

usage: crosscheck.py --dump AML_DUMP --eval ACPIEXEC_EVAL [--acpiexec PATH]
                     [--allow-static-error] TABLE...

Runs both on the same tables (acpiexec_eval.py with --discover) and
compares their lines. They must be identical, with two exceptions: an
"error:" line matches any other "error:" line (ACPICA reports its status,
the reader its reason), and with --allow-static-error a reader "error:"
may stand where acpiexec, which runs methods, found a value (for tables
whose objects can only be known by running AML). Exit 0 on agreement,
1 on any difference, 77 (skip) when a table file does not exist.
"""

import argparse
import os
import subprocess
import sys


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"crosscheck: {' '.join(cmd[:3])} failed "
                         f"({done.returncode})")
    return done.stdout.splitlines()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", required=True)
    parser.add_argument("--eval", required=True)
    parser.add_argument("--acpiexec")
    parser.add_argument("--allow-static-error", action="store_true")
    parser.add_argument("tables", nargs="+")
    args = parser.parse_args()

    missing = [t for t in args.tables if not os.path.exists(t)]
    if missing:
        print(f"crosscheck: skipped, no {missing[0]}")
        return 77

    # Through the cross build's emulator when the build names one
    # (CPPCGOV_EXE_WRAPPER, words split on spaces).
    wrapper = os.environ.get("CPPCGOV_EXE_WRAPPER", "").split()
    ours = run(wrapper + [args.dump] + args.tables)
    reference_cmd = [sys.executable, args.eval]
    if args.acpiexec:
        reference_cmd += ["--acpiexec", args.acpiexec]
    theirs = run(reference_cmd + args.tables + ["--discover"])

    differences = 0
    static_errors = 0
    if len(ours) != len(theirs):
        print(f"line counts differ: reader {len(ours)}, acpiexec {len(theirs)}")
        differences += 1
    for mine, ref in zip(ours, theirs):
        if mine == ref:
            continue
        key_mine, _, value_mine = mine.partition(" = ")
        key_ref, _, value_ref = ref.partition(" = ")
        if key_mine == key_ref and value_mine.startswith("error:"):
            if value_ref.startswith("error:") or args.allow_static_error:
                static_errors += 1
                continue
        differences += 1
        print(f"reader:   {mine}")
        print(f"acpiexec: {ref}")
    devices = sum(1 for line in theirs if line.startswith("device "))
    print(f"{devices} processor devices, {len(theirs) - devices} objects; "
          f"{differences} differences, {static_errors} accepted static "
          "evaluation errors")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
