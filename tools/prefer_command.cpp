// SPDX-License-Identifier: Apache-2.0
#include "prefer_command.hpp"

#include "handle_holder.hpp"

#include <climits>

namespace cppcgov::tools
{

const std::string_view preferUsage =
    "usage: cppcgovctl prefer performance|efficiency --pid PID\n"
    "       cppcgovctl prefer performance|efficiency --cpus LIST\n"
    "\n"
    "Asks cppcgovd to prefer performance or energy efficiency on CPUs: the\n"
    "domains under the autonomous policy write the energy-performance\n"
    "preference the configuration gives for it (autonomous.\n"
    "energy_preference_performance or _efficiency); the strongest request\n"
    "on a domain's CPUs wins (performance beats efficiency).\n"
    "\n"
    "  --pid PID           the CPUs process PID may run on (its affinity\n"
    "                      when asked); held until it exits. Another\n"
    "                      user's process needs root or cppcgovd's group\n"
    "  --cpus LIST         these CPUs (a cpulist such as 0-3,8; root or\n"
    "                      cppcgovd's group)\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n"
    "\n"
    "cppcgovctl prints 'handle N' and holds the request until SIGINT,\n"
    "SIGTERM or SIGHUP (or the process's exit), then releases it. The\n"
    "request belongs to cppcgovctl's bus connection: it ends when\n"
    "cppcgovctl exits.\n";

PreferOptions parsePreferArgs(std::span<const std::string_view> args)
{
    PreferOptions o;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
            return o;
        }
        if (const auto pid = optionValue(args, i, "--pid"))
        {
            o.pid = static_cast<std::uint32_t>(
                optionNumber("--pid", *pid, 1, INT_MAX));
        }
        else if (const auto cpus = optionValue(args, i, "--cpus"))
        {
            o.cpus = parseCpuList(*cpus);
        }
        else if (!a.starts_with("-") && o.preference.empty())
        {
            if (a != "performance" && a != "efficiency")
            {
                throw UsageError("unknown preference '" + std::string(a) +
                                 "': give performance or efficiency");
            }
            o.preference = std::string(a);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unknown argument '" + std::string(a) + "'");
        }
    }
    if (o.preference.empty())
    {
        throw UsageError("give the preference: performance or efficiency");
    }
    if ((o.pid ? 1 : 0) + (o.cpus ? 1 : 0) != 1)
    {
        throw UsageError("give one of --pid and --cpus");
    }
    return o;
}

int runPrefer(std::span<const std::string_view> args, const BusOptions& bus,
              std::ostream& out, std::ostream& err)
{
    return runHandleCommand<PreferOptions>(
        "prefer", preferUsage, "set energy preferences", args, bus, out, err,
        parsePreferArgs,
        [&err, &out](const BusOptions& on, const PreferOptions& o) {
        cppcgov_request r{};
        r.kind = CPPCGOV_ENERGY;
        r.preference = o.preference.c_str();
        if (o.pid)
        {
            r.target = CPPCGOV_TARGET_PROCESS;
            r.pid = static_cast<pid_t>(*o.pid);
            return requestAndHold([&r, &on]() { return requestHint(r, on); },
                                  HeldTask{*o.pid, false}, out, err);
        }
        return requestOnCpusAndHold(r, *o.cpus, on, out, err);
        });
}

} // namespace cppcgov::tools
