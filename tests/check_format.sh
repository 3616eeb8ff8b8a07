#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when any C++ file in the source tree differs from clang-format's
# output with the project's .clang-format.
set -euo pipefail
cd "$1"
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' 2>/dev/null ||
    find . -name '*.[ch]pp' -not -path './build*')
[ ${#files[@]} -gt 0 ] || { echo "no C++ files found"; exit 1; }
clang-format --style=file --dry-run --Werror "${files[@]}"
echo "${#files[@]} files formatted"
