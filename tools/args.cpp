#include "args.hpp"

#include <algorithm>
#include <charconv>

namespace cppcgov::tools
{
namespace
{

std::string quote(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

// One CPU number of a cpulist item.
std::uint32_t cpuNumber(std::string_view text)
{
    if (text.empty() ||
        text.find_first_not_of("0123456789") != std::string_view::npos)
    {
        throw UsageError(quote(text) + " is not a CPU number");
    }
    const auto n = parseUnsigned(text, cpuListLimit - 1);
    if (!n)
    {
        throw UsageError("CPU " + std::string(text) + " is above " +
                         std::to_string(cpuListLimit - 1));
    }
    return static_cast<std::uint32_t>(*n);
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
    if (text.empty())
    {
        throw UsageError("the CPU list is empty");
    }
    std::vector<bool> set(cpuListLimit, false);
    std::size_t start = 0;
    while (true)
    {
        const std::size_t comma = text.find(',', start);
        const std::string_view item = text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos
                                                   : comma - start);
        if (item.empty())
        {
            throw UsageError(
                "the CPU list " + quote(text) + " has an empty item");
        }
        const std::size_t dash = item.find('-');
        const std::uint32_t low = cpuNumber(item.substr(0, dash));
        const std::uint32_t high = dash == std::string_view::npos
                                       ? low
                                       : cpuNumber(item.substr(dash + 1));
        if (high < low)
        {
            throw UsageError(
                "the range " + quote(item) + " ends before it starts");
        }
        for (std::uint32_t cpu = low; cpu <= high; ++cpu)
        {
            set[cpu] = true;
        }
        if (comma == std::string_view::npos)
        {
            break;
        }
        start = comma + 1;
    }
    std::vector<std::uint32_t> cpus;
    for (std::uint32_t cpu = 0; cpu < cpuListLimit; ++cpu)
    {
        if (set[cpu])
        {
            cpus.push_back(cpu);
        }
    }
    return cpus;
}

std::string formatCpuList(std::span<const std::uint32_t> cpus)
{
    std::string out;
    std::size_t i = 0;
    while (i < cpus.size())
    {
        std::size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
        {
            ++j;
        }
        if (!out.empty())
        {
            out += ',';
        }
        out += std::to_string(cpus[i]);
        if (j != i)
        {
            out += '-' + std::to_string(cpus[j]);
        }
        i = j + 1;
    }
    return out;
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

int reportUsageError(std::string_view command, const UsageError& e,
                     std::string_view usage, std::ostream& err)
{
    err << "cppcgovctl " << command << ": " << e.what() << "\n" << usage;
    return 2;
}

} // namespace cppcgov::tools
