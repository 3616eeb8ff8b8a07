// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl monitor`: a live per-CPU view of cppcgovd. On a terminal it
// takes the whole screen: the header (the daemon, its policy, its
// statistics) stays on top of pages of CPU rows grouped by domain
// (monitor_layout.hpp), paged with keys (monitor_keys.hpp), with the most
// recent events under them (monitor_events.hpp). Otherwise it prints one
// block per refresh and each event as it arrives; --json streams one JSON
// object a line for both.
#pragma once

#include "args.hpp"
#include "governor_state.hpp"
#include "monitor_events.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view monitorUsage;

struct MonitorOptions
{
    BusOptions bus;
    std::uint32_t intervalMs = 1000;
    std::optional<std::uint64_t> count; // refreshes; none: until stopped
    std::vector<std::uint32_t> cpus;    // --cpus, sorted; empty: every CPU
    bool json = false;
    bool help = false;
};

// Parses the arguments after "monitor". Throws UsageError.
[[nodiscard]] MonitorOptions parseMonitorArgs(
    std::span<const std::string_view> args);

// One refresh when standard output is not a terminal: the header, every
// CPU row of `cpus` (all when empty) and the degraded CPUs' reasons.
void printMonitorBlock(const GovernorSnapshot& s,
                       std::span<const std::uint32_t> cpus, std::ostream& out);

// One refresh with --json, on one line: {"format": "cppcgov-monitor",
// "version": 1, "type": "refresh", "time": utcTime(time), then the fields
// of `status --json` with "cpus" limited to `cpus` (all when empty)}.
void printRefreshJson(const GovernorSnapshot& s,
                      std::span<const std::uint32_t> cpus,
                      std::chrono::system_clock::time_point time,
                      std::ostream& out);

// Runs the command; `bus` as for runStatus. Returns 0 after --count
// refreshes, on `q` or on SIGINT, SIGTERM or SIGHUP; 1 when cppcgovd or
// the bus went away, or --cpus names CPUs the daemon lacks (said on
// `err`); 2 for a usage error. A D-Bus error is said on `err` as a
// sentence (bus_errors.hpp) and gives 1.
int runMonitor(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
