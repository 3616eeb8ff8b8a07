// cppcgovctl: the command-line client of cppcgov.
#include "acpi_inspect.hpp"
#include "lib/sim/layouts.hpp"
#include "sim_demo.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace
{

constexpr std::string_view usage =
    "usage: cppcgovctl COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
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

} // namespace

int main(int argc, char** argv)
{
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty())
    {
        std::cerr << usage;
        return 2;
    }
    const std::string_view command = args.front();
    const std::vector<std::string_view> rest(args.begin() + 1, args.end());
    try
    {
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
