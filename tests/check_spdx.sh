#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a file of the source tree lacks the project's SPDX licence
# identifier in its first lines: every source, build, script and
# configuration file; documentation (*.md) and the firmware-table fixtures'
# binary or data files are exempt.
set -euo pipefail
cd "$1"
tag='SPDX-License-Identifier: Apache-2.0'  # (or an OR expression with it)
missing=0
count=0
while IFS= read -r file; do
    case $file in
    *.md | LICENSE | debian/copyright | debian/changelog | debian/compat | \
        debian/source/format | debian/*.install | debian/*.docs | \
        debian/*.manpages | debian/*.links | debian/*.dirs | \
        debian/*.lintian-overrides | debian/clean | debian/not-installed)
        continue
        ;;
    tests/acpi/fixtures/*) [[ $file == *.asl ]] || continue ;;
    esac
    [ -f "$file" ] || continue
    count=$((count + 1))
    # Apache-2.0 alone, or in an expression (the BPF program: GPL-2.0-only
    # OR Apache-2.0, as the kernel wants a GPL-compatible licence there).
    if ! head -n 5 "$file" | grep -qE "SPDX-License-Identifier: (.* OR )?Apache-2\.0"; then
        echo "$file: no '$tag' in its first lines"
        missing=$((missing + 1))
    fi
done < <(git ls-files --cached --others --exclude-standard)
[ "$count" -gt 0 ] || { echo "no files found"; exit 1; }
if [ "$missing" -gt 0 ]; then
    echo "$missing of $count files lack the licence identifier"
    exit 1
fi
echo "$count files carry the licence identifier"
