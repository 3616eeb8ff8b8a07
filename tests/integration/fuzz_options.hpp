// SPDX-License-Identifier: Apache-2.0
// bus_fuzz's command line: the bus to test on, the seed of the random
// stream and how long it runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cppcgov::test::fuzz
{

struct Options
{
    std::string address;
    std::uint64_t seed = 0;
    double seconds = 10.0;
    std::optional<std::uint64_t> calls;
    std::uint64_t checkEvery = 100;
    bool verbose = false;
};

// The options of `argv`: --bus-address ADDRESS (required), --seed N
// (default: from the random device and the clock), --seconds N or
// --calls N, --check-every N, --verbose. Nothing on a usage error (an
// unknown option, a missing or bad value, no address).
std::optional<Options> parseOptions(int argc, char** argv);

} // namespace cppcgov::test::fuzz
