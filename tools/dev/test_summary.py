# SPDX-License-Identifier: Apache-2.0
"""Prints the test runs' closing line, "N passed, N failed, N skipped".

Takes one or more meson-logs directories (each meaning its testlog.*
files) or log bases (DIR/NAME for the files of a `meson test --logbase
NAME` run) and sums them. Counts every
GoogleTest case and every other meson test from meson's JUnit log. A test
that meson saw fail without any failing case in that log (a crash after the
cases ran, a timeout) counts as one more failure, and so does a directory
without a test log (the run stopped before its tests).
"""

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def parse_junit(junit: Path) -> ET.Element:
    """The log's root element. A test's output may carry characters XML
    1.0 does not allow (escape codes, other control characters), which
    meson writes as they are: they are dropped before parsing."""
    text = junit.read_bytes().decode("utf-8", errors="replace")
    text = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f]", "", text)
    return ET.fromstring(text)


def count(logs: Path) -> tuple[int, int, int]:
    """Returns (passed, failed, skipped) for one meson-logs directory or
    log base."""
    base = "testlog"
    if not logs.is_dir():
        logs, base = logs.parent, logs.name
    junit = logs / f"{base}.junit.xml"
    records = logs / f"{base}.json"
    if not junit.is_file() or not records.is_file():
        print(f"{logs / base}: no test log, counted as one failure",
              file=sys.stderr)
        return 0, 1, 0
    passed = failed = skipped = 0
    failing = set()
    for suite in parse_junit(junit):
        tests = int(suite.get("tests", 0))
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skip = int(suite.get("skipped", 0)) + int(suite.get("disabled", 0))
        passed += tests - bad - skip
        failed += bad
        skipped += skip
        # GoogleTest suites: "<project>.<meson test>.<gtest suite>"; other
        # tests are cases of the suite named after the project.
        project, _, rest = suite.get("name", "").partition(".")
        if rest and bad:
            failing.add(rest.rpartition(".")[0])
        for case in suite:
            if case.find("failure") is not None or case.find("error") is not None:
                failing.add(case.get("name", ""))
    for line in records.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            # A log this script cannot read proves nothing passed.
            print(f"unreadable line in {records}: {line[:80]}",
                  file=sys.stderr)
            failed += 1
            continue
        if record["result"] in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"):
            if record["name"] not in failing:
                failed += 1
    return passed, failed, skipped


def main(dirs: list[Path]) -> int:
    passed = failed = skipped = 0
    for logs in dirs:
        p, f, s = count(logs)
        passed += p
        failed += f
        skipped += s
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_summary.py MESON_LOGS_DIR|LOG_BASE...")
    sys.exit(main([Path(a) for a in sys.argv[1:]]))
