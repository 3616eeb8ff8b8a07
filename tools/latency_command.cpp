// SPDX-License-Identifier: Apache-2.0
#include "latency_command.hpp"

#include "handle_holder.hpp"

#include <climits>

namespace cppcgov::tools
{

const std::string_view latencyUsage =
    "usage: cppcgovctl latency --us N --pid PID\n"
    "       cppcgovctl latency --us N --cpus LIST\n"
    "       cppcgovctl latency --us N [--] COMMAND [ARG...]\n"
    "\n"
    "Limits how long CPUs may take to wake from idle to N microseconds\n"
    "(0: stay out of idle states altogether) through cppcgovd, which keeps\n"
    "the strictest request per CPU.\n"
    "\n"
    "  --us N              the resume-latency limit in microseconds\n"
    "  --pid PID           the CPUs process PID may run on (its affinity\n"
    "                      when asked); held until it exits\n"
    "  --cpus LIST         these CPUs (a cpulist such as 0-3,8)\n"
    "  COMMAND [ARG...]    the CPUs COMMAND may run on, while it runs;\n"
    "                      cppcgovctl exits with its status. When the\n"
    "                      request is refused the command does not run\n"
    "                      (exit status 1).\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n"
    "\n"
    "With --pid or --cpus, cppcgovctl prints 'handle N' and holds the\n"
    "request until SIGINT, SIGTERM or SIGHUP (or the process's exit), then\n"
    "releases it. The request belongs to cppcgovctl's bus connection: it\n"
    "ends when cppcgovctl exits.\n";

LatencyOptions parseLatencyArgs(std::span<const std::string_view> args)
{
    LatencyOptions o;
    bool latencyGiven = false;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        if (takeHelpOrCommand(args, i, o.help, o.command))
        {
            if (o.help)
            {
                return o;
            }
            break;
        }
        const std::string_view a = args[i];
        if (const auto us = optionValue(args, i, "--us"))
        {
            o.latencyUs = static_cast<std::uint32_t>(
                optionNumber("--us", *us, 0, UINT32_MAX));
            latencyGiven = true;
        }
        else if (const auto pid = optionValue(args, i, "--pid"))
        {
            o.pid = static_cast<std::uint32_t>(
                optionNumber("--pid", *pid, 1, INT_MAX));
        }
        else if (const auto cpus = optionValue(args, i, "--cpus"))
        {
            o.cpus = parseCpuList(*cpus);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unknown option '" + std::string(a) + "'");
        }
    }
    if (!latencyGiven)
    {
        throw UsageError("--us is required");
    }
    const int targets =
        (o.pid ? 1 : 0) + (o.cpus ? 1 : 0) + (o.command.empty() ? 0 : 1);
    if (targets != 1)
    {
        throw UsageError("give one of --pid, --cpus and a command");
    }
    return o;
}

int runLatency(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err)
{
    return runHandleCommand<LatencyOptions>(
        "latency", latencyUsage, "set resume-latency limits", args, bus, out,
        err, parseLatencyArgs,
        [&err, &out](const BusOptions& on, const LatencyOptions& o) {
        cppcgov_request r{};
        r.kind = CPPCGOV_LATENCY;
        r.latency_us = o.latencyUs;
        if (o.pid)
        {
            r.target = CPPCGOV_TARGET_PROCESS;
            r.pid = static_cast<pid_t>(*o.pid);
            return requestAndHold([&r, &on]() { return requestHint(r, on); },
                                  HeldTask{*o.pid, false}, out, err);
        }
        if (o.cpus)
        {
            return requestOnCpusAndHold(r, *o.cpus, on, out, err);
        }
        return runHolding(
            o.command,
            [&r, &on](pid_t pid, int) {
            r.target = CPPCGOV_TARGET_PROCESS;
            r.pid = pid;
            return requestHint(r, on);
            },
            err);
        });
}

} // namespace cppcgov::tools
