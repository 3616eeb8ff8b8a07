// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl hint`: a utilization clamp on a task, like util-linux's
// uclampset, held through cppcgovd: on a running process or thread
// (--pid), or on a command that cppcgovctl starts and that runs clamped
// from its first instruction.
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

extern const std::string_view hintUsage;

struct HintOptions
{
    BusOptions bus;
    std::uint16_t utilMin = 0;
    std::uint16_t utilMax = 1024;
    bool thread = false;
    std::optional<std::uint32_t> pid;
    std::vector<std::string> command; // empty with --pid
    bool help = false;
};

// Parses the arguments after "hint". Needs --min or --max (or both), and
// exactly one of --pid and a command; --thread only with --pid. Throws
// UsageError.
[[nodiscard]] HintOptions parseHintArgs(std::span<const std::string_view> args);

// Runs the command; `bus` as for runStatus. Returns the exit status: with
// a command, the command's; with --pid, 0 once the hold ends; 1 when the
// clamp was refused (said on `err`); 2 for a usage error.
int runHint(std::span<const std::string_view> args, const BusOptions& bus,
            std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
