#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a built man page (each argument) does not render cleanly:
# anything `man --warnings` writes on standard error is a failure. Skips
# (exit 77) when there are no pages (the build found no scdoc) or no man,
# unless CI=true, where that is a failure too.
set -euo pipefail

skip() {
    if [ "${CI:-}" = true ]; then
        echo "$1 (a failure under CI=true)"
        exit 1
    fi
    echo "$1: skipping"
    exit 77
}

[ $# -gt 0 ] || skip "no man pages were built (scdoc not found)"
command -v man >/dev/null || skip "man not found"

failed=0
for page in "$@"; do
    if [ ! -s "$page" ]; then
        echo "$page: missing or empty"
        failed=1
        continue
    fi
    warnings=$(man --warnings -l -E UTF-8 "$page" 2>&1 >/dev/null || true)
    if [ -n "$warnings" ]; then
        echo "$page: man --warnings says:"
        printf '%s\n' "$warnings"
        failed=1
    else
        echo "$page: clean"
    fi
done
exit "$failed"
