#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Instructions per write-path call, counted with callgrind.
#
#   bench/icount.sh [BUILD_DIR] [CALLS]
#
# For every variant write_path_icount knows, runs it twice under
# valgrind --tool=callgrind, with CALLS and 2*CALLS requests, collecting
# only inside the variant's entry function (the floor store, or setPerf()
# and everything it calls). The difference of the two totals divided by
# CALLS is the instruction count of one call, free of start-up and of the
# loop around the calls. Prints each variant's count and its ratio to the
# floor, then the conservative/optimised ratio per access class.
#
# BUILD_DIR defaults to build/; CALLS to 100000.
set -eu

build=${1:-build}
calls=${2:-100000}
bin=$build/bench/write_path_icount

if [ ! -x "$bin" ]; then
    echo "icount.sh: $bin not found (configure with -Dbenchmarks=enabled" \
        "and build)" >&2
    exit 1
fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "icount.sh: valgrind not found" >&2
    exit 1
fi
case $calls in
    '' | *[!0-9]* | 0)
        echo "icount.sh: CALLS must be a positive integer" >&2
        exit 2
        ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# count VARIANT PATTERN CALLS: the collected instruction total.
count() {
    if ! valgrind --tool=callgrind --collect-atstart=no \
        --toggle-collect="$2" --callgrind-out-file="$tmp/out" \
        "$bin" "$1" "$3" >"$tmp/log" 2>&1; then
        echo "icount.sh: $1 failed under callgrind:" >&2
        cat "$tmp/log" >&2
        exit 1
    fi
    total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' \
        "$tmp/out" | head -n 1)
    echo "${total:-0}"
}

"$bin" --list >"$tmp/variants"
: >"$tmp/results"
while read -r name group pattern; do
    once=$(count "$name" "$pattern" "$calls")
    twice=$(count "$name" "$pattern" $((calls * 2)))
    echo "$name $group $once $twice" >>"$tmp/results"
done <"$tmp/variants"

awk -v calls="$calls" '
{
    name[NR] = $1
    group[NR] = $2
    per[$1] = ($4 - $3) / calls
    if ($2 != "floor" && !($2 in seen)) {
        seen[$2] = 1
        groups[++ngroups] = $2
    }
}
END {
    printf "Instructions per call (callgrind, %d vs %d calls)\n\n", calls, 2 * calls
    printf "%-22s %12s %9s\n", "variant", "instr/call", "x floor"
    floor = per["floor"]
    for (i = 1; i <= NR; i++) {
        n = name[i]
        x = "-"
        if (floor > 0)
            x = sprintf("%.2f", per[n] / floor)
        printf "%-22s %12.1f %9s\n", n, per[n], x
    }
    printf "\n%-22s %10s %11s %10s\n", "class", "opt", "cons", "cons/opt"
    for (i = 1; i <= ngroups; i++) {
        g = groups[i]
        o = per["opt/" g]
        c = per["cons/" g]
        x = "-"
        if (o > 0)
            x = sprintf("%.2f", c / o)
        printf "%-22s %10.1f %11.1f %10s\n", g, o, c, x
    }
    o = per["opt/standalone"]
    c = per["cons/standalone"]
    if (o > 0) {
        r = c / o
        verdict = "does not hold"
        if (r >= 3)
            verdict = "holds"
        printf "\nTarget: opt/standalone at least 3x fewer instructions than"
        printf " cons/standalone: %s (%.2fx)\n", verdict, r
    }
}' "$tmp/results"
