// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl headroom`: the spare capacity of CPUs over a recent window
// (GetCpuHeadroom), or of the CPUs a task may run on (GetTaskHeadroom),
// as the minimum or the average, for the set and per CPU.
#pragma once

#include "args.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view headroomUsage;

struct HeadroomOptions
{
    BusOptions bus;
    std::uint32_t windowMs = 1000;
    std::string calculation = "average";
    // The CPUs asked for (nothing: every CPU), or the task's.
    std::optional<std::vector<std::uint32_t>> cpus;
    std::optional<std::uint32_t> pid;
    bool json = false;
    bool help = false;
};

// Parses the arguments after "headroom": at most one of a CPU list and
// --pid, at most one of --min and --average. Throws UsageError.
[[nodiscard]] HeadroomOptions parseHeadroomArgs(
    std::span<const std::string_view> args);

// What the daemon answered.
struct HeadroomAnswer
{
    double headroom = 0;
    std::vector<std::pair<std::uint32_t, double>> cpus;
    std::uint32_t coveredMs = 0;
};

// Writes `a` as asked by `o`: text, or JSON with --json (tools/README.md).
void printHeadroom(const HeadroomOptions& o, const HeadroomAnswer& a,
                   std::ostream& out);

// Runs the command; `bus` as for runStatus. Returns 0 after printing, 2
// for a usage error, 1 for a D-Bus error (said on `err`, bus_errors.hpp).
int runHeadroom(std::span<const std::string_view> args, const BusOptions& bus,
                std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
