// SPDX-License-Identifier: Apache-2.0
// The daemon's counters (GetStatistics) as people read them: durations in
// ns, us, ms or s, the share of ticks skipped, and the counters this
// version does not know by name as they are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cppcgov::tools
{

using Statistics = std::map<std::string, std::uint64_t>;

// `ns` with three significant digits at most in the largest unit that
// keeps it at or above 1: "850 ns", "12.3 us", "32.1 ms", "1.20 s".
[[nodiscard]] std::string formatDuration(std::uint64_t ns);

// For `status`: "label     text" lines (ticks, lateness, writes,
// hint-to-write, accesses), then one line per counter not named in them.
// No lines for an empty map.
[[nodiscard]] std::vector<std::string> statisticsLines(const Statistics& s);

// For `monitor`'s header, in pieces to lay out on as many lines as the
// width needs: "ticks 114599 (30805 skipped)", "late p50 12.0 us p99 80.0
// us max 32.1 ms", "writes 1200 (0 errors)", "hint>write p50 1.10 ms p99
// 2.00 ms"; the pieces whose counters are missing are left out.
[[nodiscard]] std::vector<std::string> statisticsSummary(const Statistics& s);

} // namespace cppcgov::tools
