// SPDX-License-Identifier: Apache-2.0
// The offline simulator commands' command lines: `cppcgovctl sim-demo
// [LAYOUT...]` (the demonstration of sim_demo.hpp on each layout) and
// `cppcgovctl sim-layouts` (the layouts, one a line: name, tab, summary).
#pragma once

#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace cppcgov::tools
{

extern const std::string_view simDemoUsage;
extern const std::string_view simLayoutsUsage;

struct SimDemoOptions
{
    std::vector<std::string_view> layouts; // every layout when none given
    bool help = false;
};

// Parses the arguments after "sim-demo": layout names (each one the
// simulator has), "--" before names that start with "-", --help. Throws
// UsageError for an unknown option or layout.
[[nodiscard]] SimDemoOptions parseSimDemoArgs(
    std::span<const std::string_view> args);

// Run the commands. Exit status 0; 1 when a request of the demonstration
// failed; 2 for a usage error.
int runSimDemoCommand(std::span<const std::string_view> args, std::ostream& out,
                      std::ostream& err);
int runSimLayouts(std::span<const std::string_view> args, std::ostream& out,
                  std::ostream& err);

} // namespace cppcgov::tools
