// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fuzz_cpu_list into a directory: CPU lists as
// people write them and as sysfs prints them, and a few malformed ones.
#include "tests/fuzz/seed_writer.hpp"

#include <array>

namespace
{

constexpr std::array<cppcgov::fuzz::Seed, 9> seeds{{
    {"written", "0-3,8,10-11"},
    {"spaces", " 1 , 4095 "},
    {"related_cpus", "0 1 2 3"},
    {"online", "0-63,128-191"},
    {"all", "0-4095"},
    {"above", "0-4096"},
    {"backwards", "7-2"},
    {"empty_item", "1,,2"},
    {"huge", "99999999999999999999"},
}};

} // namespace

int main(int argc, char** argv)
{
    return cppcgov::fuzz::writeSeeds(argc, argv, "fuzz_cpu_list_seeds", seeds);
}
