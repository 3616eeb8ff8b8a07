// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl monitor`: a live per-CPU view of cppcgovd. On a terminal it
// redraws in place every interval; otherwise it prints one block per
// interval. HandleEnded and PolicyChanged signals are shown as they
// arrive.
#pragma once

#include "args.hpp"
#include "governor_state.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
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
    bool help = false;
};

// Parses the arguments after "monitor". Throws UsageError.
[[nodiscard]] MonitorOptions parseMonitorArgs(
    std::span<const std::string_view> args);

// "[#####               ]": `util` (0..1024, more is shown full) as a bar
// of `width` cells, rounded to the nearest cell.
[[nodiscard]] std::string utilBar(std::uint16_t util, std::size_t width);

// One line for a signal of the interface.
[[nodiscard]] std::string describeHandleEnded(
    std::uint64_t handle, std::string_view owner, std::string_view reason);
[[nodiscard]] std::string describePolicyChanged(
    std::string_view policy, std::span<const std::string> files);

// One refresh: a summary line, the per-CPU table and, when there are any,
// the recent events.
void printMonitorFrame(const DaemonInfo& daemon,
                       const std::vector<CpuState>& cpus,
                       std::span<const std::string> events, std::ostream& out);

// Runs the command; `bus` as for runStatus. Redraws in place when standard
// output is a terminal. Returns 0 after --count refreshes or on SIGINT,
// SIGTERM or SIGHUP, 1 when cppcgovd or the bus went away (said on `err`),
// 2 for a usage error; a D-Bus error is said on `err` as a sentence
// (bus_errors.hpp) and gives 1.
int runMonitor(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
