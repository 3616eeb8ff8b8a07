// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl latency`: a resume-latency limit held through cppcgovd, for
// the CPUs a running process may use (--pid), for an explicit CPU list
// (--cpus), or for the CPUs of a command that cppcgovctl starts, while it
// runs.
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

extern const std::string_view latencyUsage;

struct LatencyOptions
{
    BusOptions bus;
    std::uint32_t latencyUs = 0;
    std::optional<std::uint32_t> pid;
    std::optional<std::vector<std::uint32_t>> cpus;
    std::vector<std::string> command;
    bool help = false;
};

// Parses the arguments after "latency". Needs --us and exactly one of
// --pid, --cpus and a command. Throws UsageError.
[[nodiscard]] LatencyOptions parseLatencyArgs(
    std::span<const std::string_view> args);

// Runs the command; `bus` as for runStatus. Exit status as for runHint.
int runLatency(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
