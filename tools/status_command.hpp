// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl status`: cppcgovd's properties, its per-CPU state and its
// live handles, as text tables or as a stable JSON object (--json,
// documented in tools/README.md). Also the cell formatting that `monitor`
// shares.
#pragma once

#include "args.hpp"
#include "governor_state.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace cppcgov::tools
{

extern const std::string_view statusUsage;

struct StatusOptions
{
    BusOptions bus;
    bool json = false;
    bool help = false;
};

// Parses the arguments after "status". Throws UsageError.
[[nodiscard]] StatusOptions parseStatusArgs(
    std::span<const std::string_view> args);

// "512..1024".
[[nodiscard]] std::string formatClamp(std::uint16_t min, std::uint16_t max);

// "50 us", or "-" for no limit.
[[nodiscard]] std::string formatLatency(
    const std::optional<std::uint32_t>& limitUs);

// The performance value, or "-" for 0 (unknown).
[[nodiscard]] std::string formatPerf(std::uint32_t perf);

// The text form: properties, the per-CPU table, the handle table.
void printStatusText(const GovernorSnapshot& s, std::ostream& out);

// The JSON form ("format": "cppcgov-status", "version": 1).
void printStatusJson(const GovernorSnapshot& s, std::ostream& out);

// Runs the command. `bus` is the global bus choice, which the command's
// own --bus-address overrides. Returns the exit status (0, or 2 for a
// usage error); D-Bus errors propagate as sdbus::Error.
int runStatus(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
