// SPDX-License-Identifier: Apache-2.0
#include "sim_commands.hpp"

#include "args.hpp"
#include "lib/sim/layouts.hpp"
#include "sim_demo.hpp"

#include <algorithm>
#include <string>

namespace cppcgov::tools
{

const std::string_view simDemoUsage =
    "usage: cppcgovctl sim-demo [LAYOUT...]\n"
    "\n"
    "Requests performance on simulated CPPC layouts (no hardware, no\n"
    "daemon) and shows, per CPU, the access class the plan chose and what\n"
    "one request cost in register accesses, against a conservative\n"
    "implementation. Without LAYOUT, every layout; `cppcgovctl sim-layouts`\n"
    "lists them.\n";

const std::string_view simLayoutsUsage =
    "usage: cppcgovctl sim-layouts\n"
    "\n"
    "Lists the simulated layouts that sim-demo and `backend: simulator`\n"
    "take, one a line: the name, a tab, what it models.\n";

SimDemoOptions parseSimDemoArgs(std::span<const std::string_view> args)
{
    SimDemoOptions o;
    const std::vector<std::string_view> known = cppc::sim::layoutNames();
    bool names = false;
    for (const std::string_view a : args)
    {
        if (!names && (a == "--help" || a == "-h"))
        {
            o.help = true;
            return o;
        }
        if (!names && a == "--")
        {
            names = true;
            continue;
        }
        if (!names && a.starts_with("-"))
        {
            throw UsageError("unknown option '" + std::string(a) + "'");
        }
        if (std::find(known.begin(), known.end(), a) == known.end())
        {
            throw UsageError("unknown layout '" + std::string(a) +
                             "' (`cppcgovctl sim-layouts` lists them)");
        }
        o.layouts.push_back(a);
    }
    if (o.layouts.empty())
    {
        o.layouts = known;
    }
    return o;
}

int runSimDemoCommand(std::span<const std::string_view> args, std::ostream& out,
                      std::ostream& err)
{
    SimDemoOptions o;
    if (const auto done = parseCommand("sim-demo", simDemoUsage, args, out, err,
                                       parseSimDemoArgs, o))
    {
        return *done;
    }
    bool ok = true;
    for (std::size_t i = 0; i < o.layouts.size(); ++i)
    {
        if (i != 0)
        {
            out << "\n";
        }
        ok = runSimDemo(o.layouts[i], out) && ok;
    }
    return ok ? 0 : 1;
}

int runSimLayouts(std::span<const std::string_view> args, std::ostream& out,
                  std::ostream& err)
{
    if (!args.empty())
    {
        if (args.front() == "--help" || args.front() == "-h")
        {
            out << simLayoutsUsage;
            return 0;
        }
        return reportUsageError(
            "sim-layouts",
            "unexpected argument '" + std::string(args.front()) + "'", err);
    }
    for (const std::string_view name : cppc::sim::layoutNames())
    {
        out << name << "\t" << cppc::sim::makeLayout(name).summary << "\n";
    }
    return 0;
}

} // namespace cppcgov::tools
