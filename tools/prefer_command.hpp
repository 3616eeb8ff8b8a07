// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl prefer`: an energy preference ("performance" or
// "efficiency") held through cppcgovd, for the CPUs a running process may
// use (--pid) or for an explicit CPU list (--cpus), until interrupted.
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

extern const std::string_view preferUsage;

struct PreferOptions
{
    BusOptions bus;
    std::string preference;
    std::optional<std::uint32_t> pid;
    std::optional<std::vector<std::uint32_t>> cpus;
    bool help = false;
};

// Parses the arguments after "prefer": the preference, then exactly one of
// --pid and --cpus. Throws UsageError.
[[nodiscard]] PreferOptions parsePreferArgs(
    std::span<const std::string_view> args);

// Runs the command; `bus` as for runStatus. Exit status as for runHint.
int runPrefer(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
