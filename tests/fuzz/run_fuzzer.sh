#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer target for a bounded time, as a meson test.
#
# usage: run_fuzzer.sh FUZZER SEED_WRITER FIXTURE_DIR [PATTERN...]
#
# The seeds are the synthetic tables SEED_WRITER writes plus, when
# FIXTURE_DIR exists, links to the real dumps there matching the PATTERNs.
# New inputs go to a temporary corpus that is removed afterwards; inputs
# that crash are kept as fuzz-artifacts/<target>-crash-* beside FUZZER.
# CPPCGOV_FUZZ_SECONDS sets the run time (default 20); CPPCGOV_FUZZ_MAX_LEN,
# when set, caps the input size (larger seeds are truncated to it).
# With CPPCGOV_FUZZ_REPLAY=1, FUZZER is the target linked with
# replay_main.cpp and runs once over the seeds instead. CPPCGOV_EXE_WRAPPER,
# when set, is the command (words split on spaces) that runs the built
# programs: the cross build's emulator.
set -euo pipefail
read -r -a wrapper <<<"${CPPCGOV_EXE_WRAPPER:-}"

fuzzer=$1
seeder=$2
fixtures=$3
shift 3
name=$(basename "$fuzzer")
seconds=${CPPCGOV_FUZZ_SECONDS:-20}

work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/seeds"
"${wrapper[@]}" "$seeder" "$work/seeds"
if [ -d "$fixtures" ]; then
    shopt -s nullglob
    for pattern in "$@"; do
        for f in "$fixtures"/$pattern; do
            ln -s "$(realpath "$f")" "$work/seeds/"
        done
    done
else
    echo "$name: no real tables at $fixtures, synthetic seeds only"
fi
if [ "${CPPCGOV_FUZZ_REPLAY:-}" = 1 ]; then
    echo "$name: $(ls "$work/seeds" | wc -l) seeds, each run once"
    "${wrapper[@]}" "$fuzzer" "$work/seeds"
    exit
fi
echo "$name: $(ls "$work/seeds" | wc -l) seeds, ${seconds}s"

artifacts=$(dirname "$fuzzer")/fuzz-artifacts
mkdir -p "$artifacts"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
status=0
# libFuzzer's own exit status for a crash is 77, which meson reads as a
# skipped test: make every finding a failure.
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -error_exitcode=1 -timeout_exitcode=1 \
    ${CPPCGOV_FUZZ_MAX_LEN:+-max_len="$CPPCGOV_FUZZ_MAX_LEN"} \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" \
    "$work/corpus" "$work/seeds" >"$work/log" 2>&1 || status=$?
cat "$work/log"
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
echo "$name: ${runs:-?} executions, $(ls "$work/corpus" | wc -l) inputs kept in the corpus, exit status $status"
exit "$status"
