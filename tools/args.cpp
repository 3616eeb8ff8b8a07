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

int reportUsageError(std::string_view command, const UsageError& e,
                     std::string_view usage, std::ostream& err)
{
    err << "cppcgovctl " << command << ": " << e.what() << "\n" << usage;
    return 2;
}

} // namespace cppcgov::tools
