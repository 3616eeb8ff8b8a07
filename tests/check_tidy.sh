#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy with the project's .clang-tidy over every source file of
# the project that the build compiles (its compile_commands.json), headers
# through them; fails on any finding (the config makes every check an
# error). Usage: check_tidy.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
runner=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
if [ -z "$runner" ]; then
    echo "run-clang-tidy not found"
    exit 77
fi
# Only the project's own sources, not what meson generates in the build.
pattern="^$src/(daemon|lib|policies|tools|bench|tests)/.*\\.cpp\$"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$runner" -p "$build" -quiet -j "$(nproc)" "$pattern" >"$log" 2>&1 || status=$?
# clang-tidy's own chatter ("N warnings generated", suppressed counts) is
# noise; the findings are the lines naming a check, without the colours
# run-clang-tidy adds (escape codes have no place in a test log).
sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E "(error|warning): .*\[[a-z]" |
    sort -u || true
if [ "$status" -ne 0 ]; then
    echo "clang-tidy found problems (see above)"
    exit 1
fi
echo "clang-tidy: no findings in $(grep -c '"file"' "$build/compile_commands.json") compiled files"
