// SPDX-License-Identifier: Apache-2.0
#include "monitor_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"
#include "signal_watch.hpp"
#include "status_command.hpp"
#include "text_table.hpp"

#include <unistd.h>

#include <array>
#include <deque>

namespace cppcgov::tools
{

const std::string_view monitorUsage =
    "usage: cppcgovctl monitor [--interval MS] [--count N] "
    "[--bus-address ADDR]\n"
    "\n"
    "Shows every CPU's utilization, clamp, requested and delivered\n"
    "performance, the policy's reason and the resume-latency limit, refreshed\n"
    "every interval (in place on a terminal, one block per refresh\n"
    "otherwise), and the HandleEnded and PolicyChanged signals as they\n"
    "arrive. Stops on SIGINT (Ctrl-C), SIGTERM or SIGHUP.\n"
    "\n"
    "  --interval MS       time between refreshes (default 1000)\n"
    "  --count N           stop after N refreshes\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

namespace
{

// The most recent events a terminal view keeps on screen.
constexpr std::size_t recentEvents = 8;

constexpr std::size_t barWidth = 20;

} // namespace

MonitorOptions parseMonitorArgs(std::span<const std::string_view> args)
{
    MonitorOptions o;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
        }
        else if (const auto ms = optionValue(args, i, "--interval"))
        {
            o.intervalMs = static_cast<std::uint32_t>(
                optionNumber("--interval", *ms, 1, 3'600'000));
        }
        else if (const auto n = optionValue(args, i, "--count"))
        {
            o.count = optionNumber("--count", *n, 1, UINT32_MAX);
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unexpected argument '" + std::string(a) + "'");
        }
    }
    return o;
}

std::string utilBar(std::uint16_t util, std::size_t width)
{
    const std::size_t scaled = (std::size_t{util} * width + 512) / 1024;
    const std::size_t filled = std::min(scaled, width);
    return "[" + std::string(filled, '#') + std::string(width - filled, ' ') +
           "]";
}

std::string describeHandleEnded(std::uint64_t handle, std::string_view owner,
                                std::string_view reason)
{
    return "HandleEnded: handle " + std::to_string(handle) + " of " +
           std::string(owner) + " (" + std::string(reason) + ")";
}

std::string describePolicyChanged(std::string_view policy,
                                  std::span<const std::string> files)
{
    std::string s = "PolicyChanged: " + std::string(policy);
    for (std::size_t i = 0; i < files.size(); ++i)
    {
        s += (i == 0 ? " from '" : ", '") + files[i] + "'";
    }
    return s;
}

void printMonitorFrame(const DaemonInfo& daemon,
                       const std::vector<CpuState>& cpus,
                       std::span<const std::string> events, std::ostream& out)
{
    out << "cppcgovd " << daemon.version << "  " << daemon.backend
        << "  policy " << daemon.policy << "  " << daemon.cpuCount
        << " CPUs  period " << daemon.samplingPeriodUs << " us  handles "
        << daemon.clampCount << " clamp, " << daemon.latencyCount
        << " latency\n";
    using Align = TextTable::Align;
    TextTable table(
        {{"CPU", Align::right},
         {"UTIL", Align::right},
         {"", Align::left},
         {"CLAMP", Align::left},
         {"REQUESTED", Align::right},
         {"DELIVERED", Align::right},
         {"REASON", Align::left},
         {"LATENCY", Align::right}});
    for (const CpuState& c : cpus)
    {
        table.addRow(
            {std::to_string(c.cpu), std::to_string(c.util),
             utilBar(c.util, barWidth), formatClamp(c.clampMin, c.clampMax),
             formatPerf(c.requestedPerf), formatPerf(c.deliveredPerf),
             c.degraded.empty() ? c.reason : "degraded",
             formatLatency(c.latencyLimitUs)});
    }
    table.print(out);
    for (const CpuState& c : cpus)
    {
        if (!c.degraded.empty())
        {
            out << "CPU " << c.cpu << " degraded: " << c.degraded << "\n";
        }
    }
    if (!events.empty())
    {
        out << "\nevents:\n";
        for (const std::string& e : events)
        {
            out << "  " << e << "\n";
        }
    }
}

namespace
{

// The refreshes of a parsed command line, on the bus at `address`.
int monitor(const MonitorOptions& o, const std::optional<std::string>& address,
            std::ostream& out, std::ostream& err)
{
    const bool redraw = ::isatty(STDOUT_FILENO) == 1;
    // Declared before the client whose hooks use it.
    std::deque<std::string> recent;
    const auto event = [redraw, &recent, &out](std::string line) {
        if (redraw)
        {
            recent.push_back(std::move(line));
            if (recent.size() > recentEvents)
            {
                recent.pop_front();
            }
        }
        else
        {
            out << line << std::endl;
        }
    };

    BusClient client(address);
    SignalWatch signals({SIGINT, SIGTERM, SIGHUP});
    GovernorProxy& governor = client.governor();
    governor.handleEnded =
        [&event](std::uint64_t handle, const std::string& owner,
                 const std::string& reason) {
        event(describeHandleEnded(handle, owner, reason));
    };
    governor.policyChanged = [&event](const std::string& policy,
                                      const std::vector<std::string>& files) {
        event(describePolicyChanged(policy, files));
    };

    const auto interval = std::chrono::milliseconds(o.intervalMs);
    const std::array<int, 1> fds{signals.fd()};
    auto next = BusClient::Clock::now();
    for (std::uint64_t n = 1;; ++n)
    {
        const DaemonInfo daemon = governor.daemonInfo();
        const std::vector<CpuState> cpus = governor.cpuStates();
        if (redraw)
        {
            out << "\x1b[H\x1b[2J";
        }
        else if (n != 1)
        {
            out << "\n";
        }
        const std::vector<std::string> shown(recent.begin(), recent.end());
        printMonitorFrame(daemon, cpus, shown, out);
        out.flush();
        if (o.count && n >= *o.count)
        {
            return 0;
        }
        // Refreshes keep to the interval's grid, skipping what a slow
        // refresh missed.
        next += interval;
        if (const auto now = BusClient::Clock::now(); next < now)
        {
            next = now + interval;
        }
        while (true)
        {
            const auto ready = client.wait(fds, next, [&client]() {
                return client.lost().has_value();
            });
            if (client.lost())
            {
                err << "cppcgovctl: " << *client.lost() << "\n";
                return 1;
            }
            if (!ready)
            {
                break;
            }
            if (signals.take())
            {
                return 0;
            }
        }
    }
}

} // namespace

int runMonitor(std::span<const std::string_view> args, const BusOptions& bus,
               std::ostream& out, std::ostream& err)
{
    MonitorOptions o;
    if (const auto done = parseCommand("monitor", monitorUsage, args, out, err,
                                       parseMonitorArgs, o))
    {
        return *done;
    }
    const BusOptions& chosen = o.bus.address ? o.bus : bus;
    return withBusErrors(chosen, "read cppcgovd's state", err, [&]() {
        return monitor(o, chosen.address, out, err);
    });
}

} // namespace cppcgov::tools
