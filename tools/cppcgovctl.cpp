// SPDX-License-Identifier: Apache-2.0
// cppcgovctl: the command-line client of cppcgov. The D-Bus commands talk
// to cppcgovd (each in its own *_command file); check-config runs
// `cppcgovd --check-config`; acpi-inspect, sim-demo and sim-layouts work
// offline.
#include "acpi_inspect.hpp"
#include "args.hpp"
#include "check_config_command.hpp"
#include "headroom_command.hpp"
#include "hint_command.hpp"
#include "latency_command.hpp"
#include "metrics_command.hpp"
#include "monitor_command.hpp"
#include "prefer_command.hpp"
#include "record_command.hpp"
#include "reload_command.hpp"
#include "sim_commands.hpp"
#include "status_command.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#ifndef CPPCGOV_VERSION
#error "the build defines CPPCGOV_VERSION (tools/meson.build)"
#endif

namespace
{

constexpr std::string_view usage =
    "usage: cppcgovctl [--bus-address ADDR] COMMAND [ARGS]\n"
    "       cppcgovctl --version | --help\n"
    "\n"
    "commands talking to cppcgovd (COMMAND --help says more):\n"
    "  status [--json] [--handle N]\n"
    "                        the daemon's state, every CPU and live handles\n"
    "  hint [--min N] [--max N] (--pid PID [--thread] | [--] COMMAND...)\n"
    "                        clamp a task's utilization while cppcgovctl runs\n"
    "  latency --us N (--pid PID | --cpus LIST | [--] COMMAND...)\n"
    "                        limit CPUs' resume latency while cppcgovctl runs\n"
    "  prefer performance|efficiency (--pid PID | --cpus LIST)\n"
    "                        prefer performance or efficiency on CPUs\n"
    "                        while cppcgovctl runs (autonomous policy)\n"
    "  reload                make the daemon re-read its policy files\n"
    "  metrics               the daemon's metrics, Prometheus text format\n"
    "  headroom [--window MS] [--min|--average] [--json] [CPULIST|--pid P]\n"
    "                        the CPUs' spare capacity over a recent window\n"
    "  monitor [--interval MS] [--count N] [--cpus LIST] [--json]\n"
    "                        a live per-CPU view and the daemon's signals\n"
    "  record --seconds N [--interval MS] [--cpus LIST] [--png FILE] FILE\n"
    "                        a trace for Perfetto's UI and a PNG plot\n"
    "\n"
    "  --bus-address ADDR    the bus cppcgovd is on (default: the system\n"
    "                        bus); also accepted after a D-Bus command\n"
    "\n"
    "commands without a daemon:\n"
    "  check-config [--config FILE] [--config-dir DIR] [--root DIR]\n"
    "                        check the policy files as cppcgovd reads them\n"
    "  acpi-inspect [--tables FILE...] [--root DIR] [--json]\n"
    "                        show each CPU's _CPC, _PSD, access plan and\n"
    "                        diagnostics from the firmware's ACPI tables\n"
    "  sim-demo [LAYOUT...]  request performance on simulated layouts and\n"
    "                        show each write's cost in register accesses\n"
    "                        (default: every layout)\n"
    "  sim-layouts           list the simulated layouts\n"
    "  help                  show this text\n";

using BusCommand = int (*)(std::span<const std::string_view>,
                           const cppcgov::tools::BusOptions&, std::ostream&,
                           std::ostream&);

// The D-Bus command called `name`, or null.
BusCommand busCommand(std::string_view name)
{
    using namespace cppcgov::tools;
    if (name == "status")
    {
        return runStatus;
    }
    if (name == "hint")
    {
        return runHint;
    }
    if (name == "latency")
    {
        return runLatency;
    }
    if (name == "prefer")
    {
        return runPrefer;
    }
    if (name == "reload")
    {
        return runReload;
    }
    if (name == "monitor")
    {
        return runMonitor;
    }
    if (name == "record")
    {
        return runRecord;
    }
    if (name == "metrics")
    {
        return runMetrics;
    }
    if (name == "headroom")
    {
        return runHeadroom;
    }
    return nullptr;
}

using OfflineCommand = int (*)(std::span<const std::string_view>, std::ostream&,
                               std::ostream&);

// The command without a daemon called `name`, or null.
OfflineCommand offlineCommand(std::string_view name)
{
    using namespace cppcgov::tools;
    if (name == "acpi-inspect")
    {
        return runAcpiInspect;
    }
    if (name == "sim-demo")
    {
        return runSimDemoCommand;
    }
    if (name == "sim-layouts")
    {
        return runSimLayouts;
    }
    if (name == "check-config")
    {
        return runCheckConfig;
    }
    return nullptr;
}

} // namespace

int main(int argc, char** argv)
{
    using cppcgov::tools::reportUsageError;
    std::vector<std::string_view> args(argv + 1, argv + argc);
    // Global options come before the command.
    cppcgov::tools::BusOptions bus;
    std::size_t first = 0;
    try
    {
        while (first < args.size() && args[first].starts_with("--bus-address"))
        {
            if (!cppcgov::tools::takeBusAddress(args, first, bus))
            {
                break;
            }
            ++first;
        }
    }
    catch (const cppcgov::tools::UsageError& e)
    {
        return reportUsageError("", e, std::cerr);
    }
    args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(first));
    if (args.empty())
    {
        return reportUsageError("", "no command given", std::cerr);
    }
    const std::string_view command = args.front();
    const std::vector<std::string_view> rest(args.begin() + 1, args.end());
    try
    {
        if (const BusCommand run = busCommand(command))
        {
            return run(rest, bus, std::cout, std::cerr);
        }
        if (const OfflineCommand run = offlineCommand(command))
        {
            return run(rest, std::cout, std::cerr);
        }
        if (command == "help" || command == "--help" || command == "-h")
        {
            std::cout << usage;
            return EXIT_SUCCESS;
        }
        if (command == "--version")
        {
            std::cout << "cppcgovctl " << CPPCGOV_VERSION << "\n";
            return EXIT_SUCCESS;
        }
        return reportUsageError(
            "",
            (command.starts_with("-") ? "unknown option '"
                                      : "unknown command '") +
                std::string(command) + "'",
            std::cerr);
    }
    catch (const std::exception& e)
    {
        std::cerr << "cppcgovctl: " << command << ": " << e.what() << "\n";
        return EXIT_FAILURE;
    }
}
