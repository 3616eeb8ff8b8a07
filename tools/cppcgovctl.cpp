// SPDX-License-Identifier: Apache-2.0
// cppcgovctl: the command-line client of cppcgov. The D-Bus commands talk
// to cppcgovd (each in its own *_command file); acpi-inspect, sim-demo and
// sim-layouts work offline.
#include "acpi_inspect.hpp"
#include "args.hpp"
#include "bus_client.hpp"
#include "hint_command.hpp"
#include "latency_command.hpp"
#include "lib/sim/layouts.hpp"
#include "monitor_command.hpp"
#include "reload_command.hpp"
#include "sim_demo.hpp"
#include "status_command.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace
{

constexpr std::string_view usage =
    "usage: cppcgovctl [--bus-address ADDR] COMMAND [ARGS]\n"
    "\n"
    "commands talking to cppcgovd (COMMAND --help says more):\n"
    "  status [--json]       the daemon's state, every CPU and live handles\n"
    "  hint [--min N] [--max N] (--pid PID [--thread] | [--] COMMAND...)\n"
    "                        clamp a task's utilization while cppcgovctl runs\n"
    "  latency --us N (--pid PID | --cpus LIST | [--] COMMAND...)\n"
    "                        limit CPUs' resume latency while cppcgovctl runs\n"
    "  reload                make the daemon re-read its policy files\n"
    "  monitor [--interval MS] [--count N]\n"
    "                        a live per-CPU view and the daemon's signals\n"
    "\n"
    "  --bus-address ADDR    the bus cppcgovd is on (default: the system\n"
    "                        bus); also accepted after a D-Bus command\n"
    "\n"
    "offline commands:\n"
    "  acpi-inspect [--tables FILE...] [--root DIR] [--json]\n"
    "                        show each CPU's _CPC, _PSD, access plan and\n"
    "                        diagnostics from the firmware's ACPI tables\n"
    "  sim-demo [LAYOUT...]  request performance on simulated layouts and\n"
    "                        show each write's cost in register accesses\n"
    "                        (default: every layout)\n"
    "  sim-layouts           list the simulated layouts\n"
    "  help                  show this text\n";

int simDemo(const std::vector<std::string_view>& args)
{
    std::vector<std::string_view> layouts = args;
    if (layouts.empty())
    {
        layouts = cppc::sim::layoutNames();
    }
    bool ok = true;
    for (std::size_t i = 0; i < layouts.size(); ++i)
    {
        if (i != 0)
        {
            std::cout << "\n";
        }
        ok = cppcgov::tools::runSimDemo(layouts[i], std::cout) && ok;
    }
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

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
    if (name == "reload")
    {
        return runReload;
    }
    if (name == "monitor")
    {
        return runMonitor;
    }
    return nullptr;
}

} // namespace

int main(int argc, char** argv)
{
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
        std::cerr << "cppcgovctl: " << e.what() << "\n" << usage;
        return 2;
    }
    args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(first));
    if (args.empty())
    {
        std::cerr << usage;
        return 2;
    }
    const std::string_view command = args.front();
    const std::vector<std::string_view> rest(args.begin() + 1, args.end());
    try
    {
        if (const BusCommand run = busCommand(command))
        {
            try
            {
                return run(rest, bus, std::cout, std::cerr);
            }
            catch (const sdbus::Error& e)
            {
                cppcgov::tools::reportBusError(e, std::cerr);
                return EXIT_FAILURE;
            }
        }
        if (command == "acpi-inspect")
        {
            return cppcgov::tools::runAcpiInspect(rest, std::cout, std::cerr);
        }
        if (command == "sim-demo")
        {
            return simDemo(rest);
        }
        if (command == "sim-layouts")
        {
            for (std::string_view name : cppc::sim::layoutNames())
            {
                std::cout << name << "\t" << cppc::sim::makeLayout(name).summary
                          << "\n";
            }
            return EXIT_SUCCESS;
        }
        if (command == "help" || command == "--help" || command == "-h")
        {
            std::cout << usage;
            return EXIT_SUCCESS;
        }
        std::cerr << "cppcgovctl: unknown command '" << command << "'\n"
                  << usage;
        return 2;
    }
    catch (const std::exception& e)
    {
        std::cerr << "cppcgovctl: " << command << ": " << e.what() << "\n";
        return EXIT_FAILURE;
    }
}
