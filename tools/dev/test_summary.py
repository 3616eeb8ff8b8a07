"""Prints the test run's closing line, "N passed, N failed, N skipped".

Counts every GoogleTest case and every other meson test from meson's JUnit
log. A test that meson saw fail without any failing case in that log (a
crash after the cases ran, a timeout) counts as one more failure.
"""

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(logs: Path) -> int:
    passed = failed = skipped = 0
    failing = set()
    for suite in ET.parse(logs / "testlog.junit.xml").getroot():
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
    for line in (logs / "testlog.json").read_text().splitlines():
        record = json.loads(line)
        if record["result"] in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"):
            if record["name"] not in failing:
                failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
