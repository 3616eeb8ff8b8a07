// SPDX-License-Identifier: Apache-2.0
// `cppcgovctl metrics`: prints the daemon's metrics in the Prometheus text
// exposition format (GetMetrics), the text it writes for node_exporter's
// textfile collector.
#pragma once

#include "args.hpp"

#include <ostream>
#include <span>
#include <string_view>

namespace cppcgov::tools
{

extern const std::string_view metricsUsage;

using MetricsOptions = BusOnlyOptions;

// Parses the arguments after "metrics". Throws UsageError.
[[nodiscard]] MetricsOptions parseMetricsArgs(
    std::span<const std::string_view> args);

// Runs the command; `bus` as for runStatus. Returns 0 after printing the
// text, 2 for a usage error, 1 for a D-Bus error (said on `err`,
// bus_errors.hpp).
int runMetrics(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err);

} // namespace cppcgov::tools
