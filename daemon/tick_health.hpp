// SPDX-License-Identifier: Apache-2.0
// The tick's health for the log: deadlines skipped and ticks late by more
// than a sampling period are counted, and a warning says how many at most
// once per interval (a minute in the daemon), so that a loaded host shows
// in the journal without a line per tick. No I/O, no clock: time is a
// parameter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cppcgov::daemon
{

class TickHealth
{
  public:
    explicit TickHealth(std::uint64_t intervalNs) : intervalNs_(intervalNs) {}

    // One tick at `nowNs`: it started `lateNs` after its deadline, the
    // period is `periodNs`, and it skipped `skipped` deadlines. Returns
    // the warning to log now, if any: the first trouble at once, then at
    // most one line per interval, counting what happened since the last.
    [[nodiscard]] std::optional<std::string> tick(
        std::uint64_t nowNs, std::uint64_t lateNs, std::uint64_t periodNs,
        std::uint64_t skipped);

  private:
    std::uint64_t intervalNs_;
    std::optional<std::uint64_t> lastLineNs_;
    std::uint64_t skipped_ = 0;
    std::uint64_t late_ = 0;
    std::uint64_t worstLateNs_ = 0;
};

} // namespace cppcgov::daemon
