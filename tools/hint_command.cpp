// SPDX-License-Identifier: Apache-2.0
#include "hint_command.hpp"

#include "handle_holder.hpp"

#include <climits>

namespace cppcgov::tools
{

const std::string_view hintUsage =
    "usage: cppcgovctl hint [--min N] [--max N] --pid PID [--thread]\n"
    "       cppcgovctl hint [--min N] [--max N] [--] COMMAND [ARG...]\n"
    "\n"
    "Clamps a task's utilization to [min, max] (0..1024, the kernel's\n"
    "uclamp scale) through cppcgovd: while the task runs on a CPU, that\n"
    "CPU's utilization counts as at least min and at most max.\n"
    "\n"
    "  --min N             the lower bound (default 0)\n"
    "  --max N             the upper bound (default 1024)\n"
    "  --pid PID           clamp this running process (with --thread: this\n"
    "                      thread); prints 'handle N', then holds the clamp\n"
    "                      until the task exits or cppcgovctl gets SIGINT,\n"
    "                      SIGTERM or SIGHUP, and releases it\n"
    "  --thread            PID is a thread id: clamp that thread alone\n"
    "  COMMAND [ARG...]    run COMMAND clamped from its start; cppcgovctl\n"
    "                      exits with its status. When the clamp is refused\n"
    "                      the command does not run (exit status 1).\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n"
    "\n"
    "The clamp belongs to cppcgovctl's bus connection: it ends when\n"
    "cppcgovctl exits, so cppcgovctl stays running for as long as the clamp\n"
    "should last. cppcgovd also ends it when the task exits.\n";

HintOptions parseHintArgs(std::span<const std::string_view> args)
{
    HintOptions o;
    bool bounds = false;
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
        if (a == "--thread")
        {
            o.thread = true;
        }
        else if (const auto min = optionValue(args, i, "--min"))
        {
            o.utilMin = static_cast<std::uint16_t>(
                optionNumber("--min", *min, 0, 1024));
            bounds = true;
        }
        else if (const auto max = optionValue(args, i, "--max"))
        {
            o.utilMax = static_cast<std::uint16_t>(
                optionNumber("--max", *max, 0, 1024));
            bounds = true;
        }
        else if (const auto pid = optionValue(args, i, "--pid"))
        {
            o.pid = static_cast<std::uint32_t>(
                optionNumber("--pid", *pid, 1, INT_MAX));
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unknown option '" + std::string(a) + "'");
        }
    }
    if (!bounds)
    {
        throw UsageError("give --min, --max or both");
    }
    if (o.utilMin > o.utilMax)
    {
        throw UsageError("--min " + std::to_string(o.utilMin) +
                         " is above --max " + std::to_string(o.utilMax));
    }
    if (o.pid.has_value() == !o.command.empty())
    {
        throw UsageError("give either --pid or a command");
    }
    if (o.thread && !o.pid)
    {
        throw UsageError("--thread needs --pid");
    }
    return o;
}

int runHint(std::span<const std::string_view> args, const BusOptions& bus,
            std::ostream& out, std::ostream& err)
{
    return runHandleCommand<HintOptions>(
        "hint", hintUsage, "clamp other users' tasks", args, bus, out, err,
        parseHintArgs,
        [&err, &out](const BusOptions& on, const HintOptions& o) {
        cppcgov_request r{};
        r.kind = CPPCGOV_CLAMP;
        r.util_min = o.utilMin;
        r.util_max = o.utilMax;
        if (o.pid)
        {
            r.target = o.thread ? CPPCGOV_TARGET_THREAD
                                : CPPCGOV_TARGET_PROCESS;
            r.pid = static_cast<pid_t>(*o.pid);
            return requestAndHold([&r, &on]() { return requestHint(r, on); },
                                  HeldTask{*o.pid, o.thread}, out, err);
        }
        return runHolding(
            o.command,
            [&r, &on](pid_t, int pidfd) {
            r.target = CPPCGOV_TARGET_PIDFD;
            r.pidfd = pidfd;
            return requestHint(r, on);
            },
            err);
        });
}

} // namespace cppcgov::tools
