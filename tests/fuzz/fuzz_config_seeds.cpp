// SPDX-License-Identifier: Apache-2.0
// Writes small policy files into a directory, one file each, as the seed
// corpus of fuzz_config (beside the shipped config/policy.yaml): every
// knob, both kinds of override, flow style, anchors, and a few errors.
#include "tests/fuzz/seed_writer.hpp"

#include <array>

namespace
{

constexpr std::array<cppcgov::fuzz::Seed, 9> seeds{{
    {"seed-knobs.yaml",
     "policy: performance\n"
     "schedutil:\n"
     "  headroom: 1.5\n"
     "  rate_limit_up_us: 500\n"
     "  rate_limit_down_us: 20000\n"
     "  floor: lowest\n"
     "  boost: true\n"
     "sampling:\n"
     "  period_us: 2000\n"
     "clients:\n"
     "  max_handles: 16\n"
     "  max_calls_per_second: 50\n"
     "permissions:\n"
     "  group: wheel\n"},
    {"seed-sanity.yaml", "sanity: {follow_window_s: 5, tolerance: 0.2, "
                         "stuck_readings: 10}\n"},
    {"seed-overrides.yaml",
     "overrides:\n"
     "  - cpus: \"0-3,8,10-11\"\n"
     "    policy: powersave\n"
     "  - domain: 2\n"
     "    schedutil:\n"
     "      headroom: 2.0\n"
     "      boost: false\n"},
    {"seed-flow.yaml", "{policy: schedutil, schedutil: {headroom: 1.25, floor: "
                       "lowest_nonlinear}, overrides: [{cpus: '1', policy: "
                       "performance}, {domain: 0}]}\n"},
    {"seed-anchors.yaml", "overrides:\n"
                          "  - &fast {cpus: \"4-7\", policy: performance}\n"
                          "  - *fast\n"},
    {"seed-documents.yaml", "---\npolicy: powersave\n...\n"},
    {"seed-bad_type.yaml", "schedutil:\n  headroom: \"1.5\"\n"},
    {"seed-bad_list.yaml", "overrides:\n  - cpus: \"3-1,,x\"\n    domain: 1\n"},
    {"seed-nested.yaml", "overrides: [[[[{cpus: [[1]]}]]]]\n"},
}};

} // namespace

int main(int argc, char** argv)
{
    return cppcgov::fuzz::writeSeeds(argc, argv, "fuzz_config_seeds", seeds);
}
