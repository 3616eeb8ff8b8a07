// SPDX-License-Identifier: Apache-2.0
#include "daemon/tick_health.hpp"

#include <algorithm>

namespace cppcgov::daemon
{
namespace
{

std::string plural(std::uint64_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "1.5 ms" from nanoseconds, to 0.1 ms.
std::string milliseconds(std::uint64_t ns)
{
    const std::uint64_t tenths = (ns + 50'000) / 100'000;
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) +
           " ms";
}

} // namespace

std::optional<std::string> TickHealth::tick(
    std::uint64_t nowNs, std::uint64_t lateNs, std::uint64_t periodNs,
    std::uint64_t skipped)
{
    skipped_ += skipped;
    if (lateNs > periodNs)
    {
        ++late_;
        worstLateNs_ = std::max(worstLateNs_, lateNs);
    }
    if (skipped_ == 0 && late_ == 0)
    {
        return std::nullopt;
    }
    if (lastLineNs_ && nowNs - *lastLineNs_ < intervalNs_)
    {
        return std::nullopt;
    }
    const std::string since =
        lastLineNs_ ? " since the last such line"
                    : std::string(" (at most one such line every ") +
                          std::to_string(intervalNs_ / 1'000'000'000) + " s)";
    std::string line =
        "the tick falls behind: " + plural(skipped_, "deadline", "deadlines") +
        " skipped and " + plural(late_, "tick", "ticks") +
        " late by more than the sampling period (" + milliseconds(periodNs) +
        ")";
    if (late_ != 0)
    {
        line += ", the worst " + milliseconds(worstLateNs_) + " late";
    }
    line += since + "; the host is too busy for the period, or the "
                    "daemon's CPU time is limited";
    lastLineNs_ = nowNs;
    skipped_ = 0;
    late_ = 0;
    worstLateNs_ = 0;
    return line;
}

} // namespace cppcgov::daemon
