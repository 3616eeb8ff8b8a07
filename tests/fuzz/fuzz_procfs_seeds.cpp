// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fuzz_procfs into a directory: /proc/stat texts
// and task stat lines as the kernel prints them, and a few malformed ones.
#include "tests/fuzz/seed_writer.hpp"

#include <array>

namespace
{

constexpr std::array<cppcgov::fuzz::Seed, 6> seeds{{
    {"stat-2cpus", "cpu  100 2 30 4000 5 0 1 0 0 0\n"
                   "cpu0 50 1 15 2000 2 0 1 0 0 0\n"
                   "cpu1 50 1 15 2000 3 0 0 0 0 0\n"
                   "intr 12345 0 0\n"
                   "ctxt 999\n"},
    {"stat-offline", "cpu  10 0 0 10 0 0 0 0\n"
                     "cpu0 5 0 0 5 0 0 0 0\n"
                     "cpu3 5 0 0 5 0 0 0 0\n"},
    {"stat-short", "cpu  1 2 3\ncpu0 1 2 3\n"},
    {"task-stat",
     "4242 (busy loop) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 13 0 0 20 0 "
     "1 0 123456 10000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 "
     "17 1 0 0 0 0 0\n"},
    {"task-stat-parens",
     "7 (x) S 1 (y) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 99 0 0 0 0 0 0 0 "
     "0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"},
    {"garbage", "cpu0 x y z\n)()( R\n"},
}};

} // namespace

int main(int argc, char** argv)
{
    return cppcgov::fuzz::writeSeeds(argc, argv, "fuzz_procfs_seeds", seeds);
}
