// SPDX-License-Identifier: Apache-2.0
#include "headroom_command.hpp"

#include "bus_client.hpp"
#include "bus_errors.hpp"
#include "json_writer.hpp"
#include "lib/cpu_list.hpp"

#include <climits>
#include <iomanip>
#include <sstream>

namespace cppcgov::tools
{
namespace
{

std::string percent(double value)
{
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << value << "%";
    return s.str();
}

std::string cpuListOf(const std::vector<std::pair<std::uint32_t, double>>& c)
{
    cppc::CpuSet set;
    for (const auto& [cpu, headroom] : c)
    {
        if (cpu < cppc::maxCpus)
        {
            set.set(cpu);
        }
    }
    return cppc::formatCpuList(set);
}

} // namespace

const std::string_view headroomUsage =
    "usage: cppcgovctl headroom [--window MS] [--min | --average] [--json]\n"
    "                           [CPULIST | --pid PID]\n"
    "\n"
    "Prints how much of the CPUs' capacity was spare over the last MS\n"
    "milliseconds, as cppcgovd's ticks saw their utilization: for the set\n"
    "(weighted by each CPU's capacity) and for each CPU, in percent (0: no\n"
    "capacity spare). A daemon may be asked once a second per connection.\n"
    "\n"
    "  CPULIST             these CPUs (a cpulist such as 0-3,8; default:\n"
    "                      every CPU)\n"
    "  --pid PID           the CPUs task PID may run on (its affinity)\n"
    "  --window MS         the window, 50 to 10000 ms (default 1000)\n"
    "  --min               the lowest moment over the window\n"
    "  --average           the mean over the window (the default)\n"
    "  --json              machine-readable output (see tools/README.md)\n"
    "  --bus-address ADDR  the bus cppcgovd is on (default: the system bus)\n";

HeadroomOptions parseHeadroomArgs(std::span<const std::string_view> args)
{
    HeadroomOptions o;
    bool calculationGiven = false;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
            return o;
        }
        if (a == "--json")
        {
            o.json = true;
        }
        else if (a == "--min" || a == "--average")
        {
            if (calculationGiven)
            {
                throw UsageError("give one of --min and --average");
            }
            calculationGiven = true;
            o.calculation = a.substr(2);
        }
        else if (const auto w = optionValue(args, i, "--window"))
        {
            o.windowMs = static_cast<std::uint32_t>(
                optionNumber("--window", *w, 50, 10'000));
        }
        else if (const auto pid = optionValue(args, i, "--pid"))
        {
            o.pid = static_cast<std::uint32_t>(
                optionNumber("--pid", *pid, 1, INT_MAX));
        }
        else if (takeBusAddress(args, i, o.bus))
        {}
        else if (!a.starts_with("-") && !o.cpus)
        {
            o.cpus = parseCpuList(a);
        }
        else if (!a.starts_with("-"))
        {
            throw UsageError("give one CPU list");
        }
        else
        {
            throw UsageError("unknown option '" + std::string(a) + "'");
        }
    }
    if (o.cpus && o.pid)
    {
        throw UsageError("give a CPU list or --pid, not both");
    }
    if (o.cpus && o.cpus->empty())
    {
        throw UsageError("the CPU list is empty");
    }
    return o;
}

void printHeadroom(const HeadroomOptions& o, const HeadroomAnswer& a,
                   std::ostream& out)
{
    if (o.json)
    {
        JsonWriter json(out, 2);
        json.beginObject();
        json.field("calculation", o.calculation);
        json.field("window_ms", std::uint64_t{o.windowMs});
        json.field("covered_ms", std::uint64_t{a.coveredMs});
        if (o.pid)
        {
            json.field("pid", std::uint64_t{*o.pid});
        }
        json.key("headroom");
        json.number(a.headroom, 2);
        json.key("cpus");
        json.beginArray();
        for (const auto& [cpu, headroom] : a.cpus)
        {
            json.beginObject();
            json.field("cpu", std::uint64_t{cpu});
            json.key("headroom");
            json.number(headroom, 2);
            json.endObject();
        }
        json.endArray();
        json.endObject();
        out << "\n";
        return;
    }
    out << "headroom " << percent(a.headroom) << " (" << o.calculation
        << " over " << o.windowMs << " ms";
    if (a.coveredMs < o.windowMs)
    {
        out << "; the daemon's history covers " << a.coveredMs << " ms";
    }
    out << ") of CPUs " << cpuListOf(a.cpus);
    if (o.pid)
    {
        out << ", where task " << *o.pid << " may run";
    }
    out << "\n";
    out << "cpu   headroom\n";
    for (const auto& [cpu, headroom] : a.cpus)
    {
        out << std::left << std::setw(6) << cpu << std::right << std::setw(6)
            << percent(headroom) << "\n";
    }
}

int runHeadroom(std::span<const std::string_view> args, const BusOptions& bus,
                std::ostream& out, std::ostream& err)
{
    HeadroomOptions o;
    if (const auto done = parseCommand("headroom", headroomUsage, args, out,
                                       err, parseHeadroomArgs, o))
    {
        return *done;
    }
    return onBus(o.bus, bus, "read the headroom", err, [&](BusClient& client) {
        auto& governor = client.governor();
        std::tuple<double, std::vector<sdbus::Struct<std::uint32_t, double>>,
                   std::uint32_t>
            reply;
        if (o.pid)
        {
            reply = governor.GetTaskHeadroom(*o.pid, o.windowMs, o.calculation);
        }
        else
        {
            std::vector<std::uint32_t> cpus;
            if (o.cpus)
            {
                // Named here: the daemon's refusal names only the first.
                if (const auto missing =
                        missingCpus(*o.cpus, governor.CpuCount()))
                {
                    err << "cppcgovctl: " << *missing << "\n";
                    return 1;
                }
                cpus = *o.cpus;
            }
            else
            {
                for (std::uint32_t cpu = 0; cpu < governor.CpuCount(); ++cpu)
                {
                    cpus.push_back(cpu);
                }
            }
            reply = governor.GetCpuHeadroom(cpus, o.windowMs, o.calculation);
        }
        HeadroomAnswer a;
        a.headroom = std::get<0>(reply);
        for (const auto& c : std::get<1>(reply))
        {
            a.cpus.emplace_back(c.get<0>(), c.get<1>());
        }
        a.coveredMs = std::get<2>(reply);
        printHeadroom(o, a, out);
        return 0;
    });
}

} // namespace cppcgov::tools
