// SPDX-License-Identifier: Apache-2.0
#include "metrics_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"

namespace cppcgov::tools
{

const std::string_view metricsUsage =
    "usage: cppcgovctl metrics [--bus-address ADDR]\n"
    "\n"
    "Prints cppcgovd's metrics in the Prometheus text exposition format:\n"
    "per CPU requested and delivered performance (abstract units and kHz),\n"
    "utilization, clamps, reason and degraded state; per domain; live\n"
    "hints; tick lateness and hint-to-write histograms; counters; the\n"
    "daemon's CPU time and memory. The same text the daemon writes to\n"
    "metrics.directory/cppcgovd.prom for node_exporter's textfile\n"
    "collector.\n"
    "\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

MetricsOptions parseMetricsArgs(std::span<const std::string_view> args)
{
    return parseBusOnlyArgs(args);
}

int runMetrics(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err)
{
    MetricsOptions o;
    if (const auto done = parseCommand("metrics", metricsUsage, args, out, err,
                                       parseMetricsArgs, o))
    {
        return *done;
    }
    return onBus(o.bus, bus, "read the metrics", err, [&](BusClient& client) {
        out << client.governor().GetMetrics();
        return 0;
    });
}

} // namespace cppcgov::tools
