// SPDX-License-Identifier: Apache-2.0
#include "reload_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"

namespace cppcgov::tools
{

const std::string_view reloadUsage =
    "usage: cppcgovctl reload [--bus-address ADDR]\n"
    "\n"
    "Makes cppcgovd re-read its policy files and prints the files it read,\n"
    "one a line. When a file has an error, nothing changes: the errors\n"
    "('<file>':<line>:<column>: <key>: <problem>) are printed and the exit\n"
    "status is 1. What the files change that only a restart applies (the\n"
    "backend) is said on stderr after the files: the rest is applied.\n"
    "Needs root or the configured group.\n"
    "\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

ReloadOptions parseReloadArgs(std::span<const std::string_view> args)
{
    return parseBusOnlyArgs(args);
}

int runReload(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err)
{
    ReloadOptions o;
    if (const auto done = parseCommand("reload", reloadUsage, args, out, err,
                                       parseReloadArgs, o))
    {
        return *done;
    }
    return onBus(o.bus, bus, "reload the policy", err, [&](BusClient& client) {
        for (const std::string& file : client.governor().Reload())
        {
            out << file << "\n";
        }
        // Set before the reply was sent.
        const std::string pending = client.governor().PendingRestart();
        if (!pending.empty())
        {
            err << "cppcgovctl: reload: not applied: " << pending << "\n";
        }
        return 0;
    });
}

} // namespace cppcgov::tools
