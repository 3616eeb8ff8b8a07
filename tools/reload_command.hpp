// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl reload`: asks cppcgovd to re-read its policy files and lists
// the files it read; a file with an error changes nothing and is reported
// with the daemon's InvalidConfig message.
#pragma once

#include "args.hpp"

#include <ostream>
#include <span>
#include <string_view>

namespace cppcgov::tools
{

extern const std::string_view reloadUsage;

using ReloadOptions = BusOnlyOptions;

// Parses the arguments after "reload". Throws UsageError.
[[nodiscard]] ReloadOptions parseReloadArgs(
    std::span<const std::string_view> args);

// Runs the command; `bus` as for runStatus. Returns 0 after printing the
// files read, one a line, or 2 for a usage error; a D-Bus error (such as
// org.cppcgov.Error.InvalidConfig) is said on `err` (bus_errors.hpp) and
// gives 1.
int runReload(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
