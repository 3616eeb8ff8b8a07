// SPDX-License-Identifier: Apache-2.0
#include "args.hpp"

#include "lib/cpu_list.hpp"

#include <charconv>

namespace cppcgov::tools
{
namespace
{

std::string quote(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

} // namespace

std::optional<std::uint64_t> parseUnsigned(std::string_view text,
                                           std::uint64_t max)
{
    if (text.empty() || text.front() < '0' || text.front() > '9')
    {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end || value > max)
    {
        return std::nullopt;
    }
    return value;
}

std::uint64_t optionNumber(std::string_view option, std::string_view text,
                           std::uint64_t min, std::uint64_t max)
{
    const auto n = parseUnsigned(text, max);
    if (!n || *n < min)
    {
        throw UsageError(std::string(option) + ": " + quote(text) +
                         " is not a number from " + std::to_string(min) +
                         " to " + std::to_string(max));
    }
    return *n;
}

std::optional<std::string_view> optionValue(
    std::span<const std::string_view> args, std::size_t& i,
    std::string_view name)
{
    const std::string_view a = args[i];
    if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=')
    {
        return a.substr(name.size() + 1);
    }
    if (a != name)
    {
        return std::nullopt;
    }
    if (i + 1 >= args.size())
    {
        throw UsageError(std::string(name) + " needs a value");
    }
    return args[++i];
}

std::vector<std::uint32_t> parseCpuList(std::string_view text)
{
    const cppc::CpuListResult list = cppc::parseCpuList(text);
    if (list.error)
    {
        throw UsageError(cppc::describe(list.error, text));
    }
    return cppc::cpuNumbers(list.cpus);
}

bool takeBusAddress(std::span<const std::string_view> args, std::size_t& i,
                    BusOptions& bus)
{
    if (const auto v = optionValue(args, i, "--bus-address"))
    {
        if (v->empty())
        {
            throw UsageError("--bus-address needs an address");
        }
        bus.address = std::string(*v);
        return true;
    }
    return false;
}

BusOnlyOptions parseBusOnlyArgs(std::span<const std::string_view> args)
{
    BusOnlyOptions o;
    for (std::size_t i = 0; i < args.size(); ++i)
    {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h")
        {
            o.help = true;
        }
        else if (!takeBusAddress(args, i, o.bus))
        {
            throw UsageError("unexpected argument '" + std::string(a) + "'");
        }
    }
    return o;
}

int reportUsageError(std::string_view command, std::string_view problem,
                     std::ostream& err)
{
    err << "cppcgovctl: " << problem << "\nTry 'cppcgovctl "
        << (command.empty() ? "" : std::string(command) + " ") << "--help'.\n";
    return 2;
}

int reportUsageError(std::string_view command, const UsageError& e,
                     std::ostream& err)
{
    return reportUsageError(command, e.what(), err);
}

std::optional<std::string> missingCpus(std::span<const std::uint32_t> cpus,
                                       std::uint32_t cpuCount)
{
    cppc::CpuSet missing;
    std::size_t count = 0;
    for (const std::uint32_t cpu : cpus)
    {
        if (cpu >= cpuCount && cpu < cppc::maxCpus && !missing.test(cpu))
        {
            missing.set(cpu);
            ++count;
        }
    }
    if (count == 0)
    {
        return std::nullopt;
    }
    cppc::CpuSet present;
    for (std::uint32_t cpu = 0; cpu < cpuCount && cpu < cppc::maxCpus; ++cpu)
    {
        present.set(cpu);
    }
    const std::string has =
        cpuCount == 0 ? "this machine has no CPUs the daemon governs"
        : cpuCount == 1
            ? "this machine has CPU 0"
            : "this machine has CPUs " + cppc::formatCpuList(present);
    return (count == 1 ? "CPU " : "CPUs ") + cppc::formatCpuList(missing) +
           (count == 1 ? " does not exist (" : " do not exist (") + has + ")";
}

} // namespace cppcgov::tools
