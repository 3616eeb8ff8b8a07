// SPDX-License-Identifier: Apache-2.0
// The daemon's own CPU time (getrusage) and resident memory
// (/proc/self/statm), for the metrics. Reads procfs, which answers from
// memory: fine on the loop.
#pragma once

#include <cstdint>

namespace cppcgov::daemon
{

struct ProcessUsage
{
    // User and system time, seconds.
    double cpuSeconds = 0;
    // 0 when /proc/self/statm cannot be read.
    std::uint64_t residentBytes = 0;
};

// Throws only std::bad_alloc.
[[nodiscard]] ProcessUsage processUsage();

} // namespace cppcgov::daemon
