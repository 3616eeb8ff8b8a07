// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fuzz_state into a directory: each state file as
// the daemon writes it, and a few malformed ones.
#include "tests/fuzz/seed_writer.hpp"

#include <array>

namespace
{

constexpr std::array<cppcgov::fuzz::Seed, 6> seeds{{
    {"kernel", "cppcgov-cpufreq-state 1\n"
               "policy0 schedutil 1000000 2600000 -\n"
               "policy4 userspace 800000 3000000 1500000 auto_select=0 "
               "auto_act_window=1000 energy_performance_preference_val=128\n"},
    {"registers", "cppcgov-registers-state 2\n"
                  "cpu0 DesiredPerformance 0x100000a8 0 32 42\n"
                  "cpu0 MinimumPerformance 0x100000ac 0 8 10\n"
                  "cpu1 EnergyPerformancePreference 0x100001ac 16 8 128\n"
                  "cpu1 AutonomousActivityWindow 0x100001b0 8 10 356\n"},
    {"latency", "cppcgov-latency-state 1\ncpu0 n/a\ncpu3 20\n"},
    {"empty-registers", "cppcgov-registers-state 2\n"},
    {"twice", "cppcgov-registers-state 2\n"
              "cpu0 DesiredPerformance 0x10 0 32 1\n"
              "cpu0 DesiredPerformance 0x10 0 32 2\n"},
    {"unterminated", "cppcgov-latency-state 1\ncpu0 5"},
}};

} // namespace

int main(int argc, char** argv)
{
    return cppcgov::fuzz::writeSeeds(argc, argv, "fuzz_state_seeds", seeds);
}
